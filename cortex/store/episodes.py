"""Episodes: what was said in a session, kept as one readable Markdown file beside the records.

    $CORTEX_HOME/episodes/<project>/<session>.md

Front matter (JSON-valued YAML, checked against schemas/episode.schema.json on write), then one
heading per turn:

    ---
    session: "9f0c…"
    client: "claude-code"
    project: "cortex-1a2b3c4d"
    first: "2026-05-11T11:26:55Z"
    last: "2026-05-11T12:02:10Z"
    transcript: "/home/me/.claude/projects/…/9f0c….jsonl"
    turns: 12
    read_to: 48211
    ---

    ## Turn 1 — user — 2026-05-11T11:26:55Z

    the prompt, as typed

    ## Turn 2 — assistant — 2026-05-11T11:27:03Z

    the assistant's prose
    - edited cortex/store/index.py
    - ran pytest -q → exit 1 / E   AssertionError: 3 != 4

What goes in: the user's prompts, the assistant's prose, and one short line per tool action.  What
never does: thinking, injected context (CLAUDE.md / AGENTS.md, system reminders, hook output, Cortex's own
<cortex-memory> block), subagent (sidechain) entries, raw tool output.  Every text is redacted with
`redact.clean` (private spans, then secrets) before anything is cut.

The file is the episode's only store: the normalizer parses the turns kept so far, appends the
window's turns and writes the whole rendering again (temp, fsync, rename), so the bytes are a function
of the turns alone.  `read_to` is the transcript position the turns cover.  The cursor of the transcript,
saved after the episode, keeps the episode's size as it saw it ([turns, characters of the last]); a run
killed between the two reads the window again and first takes the file back to that size, so a rerun
writes the same bytes wherever its windows fall.  Body lines that start with `#` or `\\` are
written with a leading backslash (Markdown shows them as they were; no body line makes a heading).
"""
import json
import os
import re

HEADING = re.compile(r"^## Turn (\d+) — (user|assistant) — (\S*)$")
PASSAGE_TURN_CHARS = 2000  # what the index reads of each turn of a passage
FRONT_KEYS = ("session", "client", "project", "first", "last", "transcript", "turns", "read_to", "window", "archived")
FORGOTTEN = "[forgotten: removed by `cortex forget --hard`]"
CORTEX_MARK = "<cortex-memory"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, limit: int = 120) -> str:
    s = _SAFE.sub("-", text or "").strip("-.")[:limit]
    return s or "session"


def episode_path(home, project: str, session: str) -> str:
    return os.path.join(home.path("episodes"), safe_name(project or "unknown"), safe_name(session) + ".md")


def episode_file(home, stored: str):
    """The episode file in THIS home an index row's path names: a relative path (what the index keeps, so a
    moved or copied home still finds its episodes) joined to the home; an absolute one keeps its last three
    parts, episodes/<project>/<session>.md.  None for anything else."""
    if not isinstance(stored, str) or not stored or "\x00" in stored:
        return None
    parts = stored.replace("\\", "/").split("/")[-3:]
    if len(parts) != 3 or parts[0] != "episodes" or ".." in parts or not parts[2].endswith(".md"):
        return None
    return home.path(*parts)


def iter_paths(root: str):
    """Every episode file under episodes/, sorted."""
    if not os.path.isdir(root):
        return
    for proj in sorted(os.listdir(root)):
        folder = os.path.join(root, proj)
        if proj.startswith(".") or not os.path.isdir(folder) or os.path.islink(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".md") and not name.startswith("."):
                yield os.path.join(folder, name)


# -- turns from entries ----------------------------------------------------------------------------

def _clean(text: str) -> str:
    """Redacted, and writable as UTF-8 (a lone surrogate, half an emoji, becomes U+FFFD as in records)."""
    from cortex.model.redact import clean
    return _utf8(clean(text or "")[0])


def _utf8(s: str) -> str:
    return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _cut(text: str, n: int) -> str:
    text = text.strip()
    return text if len(text) <= n else text[:n - 1].rstrip() + "…"


def turn_text(turn: dict) -> str:
    """A turn's body: prose paragraphs apart by a blank line, consecutive tool lines together."""
    out = []
    for p in turn["parts"]:
        if out and not (p.startswith("- ") and out[-1].startswith("- ")):
            out.append("")
        out.append(p)
    return "\n".join(out)


# -- the file ---------------------------------------------------------------------------------------

def _escape(body: str) -> str:
    return "\n".join("\\" + ln if ln.startswith(("#", "\\")) else ln for ln in body.split("\n"))


def _unescape(body: str) -> str:
    return "\n".join(ln[1:] if ln.startswith("\\") else ln for ln in body.split("\n"))


def render(front: dict, turns: list) -> str:
    lines = ["---"]
    for k in FRONT_KEYS:
        if k in front and front[k] is not None:
            lines.append("%s: %s" % (k, json.dumps(front[k], ensure_ascii=False)))
    lines.append("---")
    for i, t in enumerate(turns, 1):
        body = t["text"] if "text" in t else turn_text(t)
        lines += ["", "## Turn %d — %s — %s" % (i, t["role"], t["at"] or "-"), "", _escape(body)]
    return _utf8("\n".join(lines) + "\n")


def parse(text: str):
    """(front matter dict, turns) of an episode file's text; turns carry their number `n` and `text`."""
    if not text.startswith("---\n"):
        raise ValueError("no front matter")
    end = text.find("\n---\n", 3)
    if end < 0:
        end = text.find("\n---", 3)
        if end < 0 or text[end + 4:].strip():
            raise ValueError("front matter not closed")
    front = {}
    for line in text[4:end].split("\n"):
        if not line.strip():
            continue
        k, sep, v = line.partition(": ")
        if not sep:
            raise ValueError("bad front matter line %r" % line[:80])
        front[k] = json.loads(v)
    turns = []
    cur = None
    body = []
    for line in text[end + 5:].split("\n"):
        m = HEADING.match(line)
        if m:
            if cur is not None:
                cur["text"] = _unescape("\n".join(body).strip("\n"))
                turns.append(cur)
            cur = {"n": int(m.group(1)), "role": m.group(2), "at": "" if m.group(3) == "-" else m.group(3)}
            body = []
        elif cur is not None:
            body.append(line)
    if cur is not None:
        cur["text"] = _unescape("\n".join(body).strip("\n"))
        turns.append(cur)
    return front, turns


def read(path: str):
    with open(path, encoding="utf-8", newline="") as f:
        return parse(f.read())


def write(path: str, front: dict, turns: list):
    """Validate the front matter and write the rendering atomically (temp, fsync, rename)."""
    from cortex.core.fsutil import atomic_write_text
    from cortex.core.schemas import validate
    problems = validate("episode", front)
    if problems:
        raise ValueError("episode %s: %s" % (path, problems[0]))
    atomic_write_text(path, render(front, turns))


def _join(a: str, b: str) -> str:
    """Two pieces of one assistant turn: tool lines stay together, anything else apart by a blank line."""
    if not a:
        return b
    tight = a.rsplit("\n", 1)[-1].startswith("- ") and b.startswith("- ")
    return a + ("\n" if tight else "\n\n") + b


def append(home, *, session: str, client: str, project: str, transcript: str, new_turns: list, start: int,
           end: int, base=None):
    """Add one window's turns (transcript positions start..end; [{"role", "at", "parts"}], as
    ingest.episode_step.turns_from_entries makes them) to the session's episode.

    Returns (path, front matter, all turns, number of the first turn that changed), or None when nothing
    changed.  Turns carry `n` and `text`.  Idempotent: `base` is the episode as the transcript's cursor
    last saw it, [turns, characters of the last turn] (the normalizer keeps it in the cursor, which is
    saved after the episode): a file that holds more (a run killed after writing the episode and before
    saving its cursor) is first taken back to it, so the rerun writes the same bytes, wherever its
    windows fall."""
    path = episode_path(home, project, session)
    front, old = {}, []
    if os.path.exists(path):
        try:
            front, old = read(path)
        except (OSError, ValueError, UnicodeDecodeError):
            front, old = {}, []  # unreadable: rewritten from what this read gives
    turns = [{"role": t["role"], "at": t["at"], "text": t["text"]} for t in old]
    old_front = front
    rolled_back = False
    if front:
        if start <= 0:
            turns, rolled_back = [], bool(old)  # read from the start again (the first window, or a replaced file)
        elif base is not None:
            n, chars = int(base[0]), int(base[1])
            if len(turns) > n or (n and turns and len(turns[n - 1]["text"]) != chars):
                turns = turns[:n]
                if turns:
                    turns[-1]["text"] = turns[-1]["text"][:chars]
                rolled_back = True
        elif start < int(front.get("read_to", 0)):
            return None  # a cursor from before these checkpoints, inside what the file already holds
    new = [{"role": t["role"], "at": t["at"], "text": turn_text(t)} for t in new_turns]
    new = [t for t in new if t["text"]]
    if not new and not rolled_back:
        return None
    # (taken back to the cursor's checkpoint, the file is written even when this read brings no turn: the
    # next window continues from there)
    first_changed = max(len(turns), 1) if rolled_back else len(turns) + 1
    for t in new:
        if turns and t["role"] == "assistant" and turns[-1]["role"] == "assistant":
            turns[-1]["text"] = _join(turns[-1]["text"], t["text"])
            first_changed = min(first_changed, len(turns))
        else:
            turns.append(t)
    ats = [t["at"] for t in turns if t["at"]]
    front = {"session": session, "client": client, "project": project,
             "first": min(ats) if ats else "", "last": max(ats) if ats else "",
             "transcript": _clean(transcript or ""), "turns": len(turns), "read_to": int(end),
             "archived": (old_front or {}).get("archived")}
    write(path, front, turns)
    out = [{"n": i, "role": t["role"], "at": t["at"], "text": t["text"]} for i, t in enumerate(turns, 1)]
    return path, front, out, first_changed


def rewrite(path: str, front: dict, turns: list):
    """Write parsed turns (with `text`) back, as forget and archive do."""
    write(path, front, [{"role": t["role"], "at": t["at"], "text": t["text"]} for t in turns])


def forget_text(path: str, texts: list, share: float = 0.8) -> int:
    """Blank the turns of an episode that hold a forgotten record's words (at least `share` of the
    terms of one of `texts`): `forget --hard` of a record leaves its text in no episode either.
    Returns how many turns were blanked."""
    from cortex.store.terms import tokenize
    wanted = [set(tokenize(t)) for t in texts if t]
    wanted = [w for w in wanted if w]
    if not wanted:
        return 0
    front, turns = read(path)
    n = 0
    for t in turns:
        have = set(tokenize(t["text"]))
        if t["text"] != FORGOTTEN and any(len(w & have) >= share * len(w) for w in wanted):
            t["text"] = FORGOTTEN
            n += 1
    if n:
        rewrite(path, front, turns)
    return n


# -- passages ---------------------------------------------------------------------------------------

def passages(turns: list, since: int = 1) -> list:
    """The passages of these turns (numbered from 1): one per turn, its anchor, holding the turn before it,
    the anchor and the turn after it, so a terse answer carries the question that names its subject and a
    question the answer that settles it; the anchor's own text is counted twice, so the passage ranks
    for what its anchor says more than for its neighbours (LoCoMo R@10 72.4 -> 74.2 over prompts alone
    as anchors, docs/benchmarks.md).  Only passages that hold a turn >= since.
    [{"anchor", "first", "last", "at", "text", "parts"}]: `parts` [(turn index, its text as cut)] are the
    pieces `text` joins, so a caller can analyse each turn once for the passages holding it."""
    out = []
    n = len(turns)
    for i, t in enumerate(turns):
        first, last = max(i - 1, 0), min(i + 1, n - 1)
        if last + 1 < since:
            continue
        parts = [(j, _cut(turns[j]["text"], PASSAGE_TURN_CHARS)) for j in range(first, last + 1)]
        parts.append(parts[i - first])
        out.append({"anchor": i + 1, "first": first + 1, "last": last + 1, "at": t["at"],
                    "text": "\n".join(text for _, text in parts), "parts": parts})
    return out


def passage_id(session: str, anchor: int) -> str:
    return "%s:%d" % (session, anchor)
