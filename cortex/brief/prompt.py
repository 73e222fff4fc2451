"""`cortex-prompt`: the UserPromptSubmit hook (prompt-time recall).

Prints the few records most relevant to the prompt that the session-start block
does not already carry -- only when they clear a score threshold, within a small
token budget.  The best passage of an earlier session of the project (episodes: what was
said, see docs/records.md) joins them if it clears its own threshold
(`prompt.min_passage_score`, the search engine's bm25) and shares at least `min_terms` terms with the
prompt: first when no decision record answers, after the records when one does and the
passage is from another session and fits the budget.  Each line carries its date and session.  Same
rules as session start: light imports, no output when there is nothing worth
saying, exit 0 whatever happens.
"""
import json
import os
import sys
import time

from cortex.core import config as config_mod
from cortex.core.home import Home

PASSAGE_CHARS = {"user": 200, "assistant": 360}  # what a passage line quotes of the prompt and of the reply
# Words that steer the conversation rather than name its subject ("ok go ahead", "sounds good, carry on",
# "keep going with the next step"): they do not count towards prompt.min_terms (the search still uses them).
# Earlier chats are full of them, so three of them found passages that cleared the bar: 4 of the devchats
# benchmark's 25 small-talk prompts printed a passage (docs/memory.md).
CHAT_WORDS = ("ok okay yes yeah yep sure please thanks thank great good nice fine cool awesome perfect sounds "
              "looks go going ahead carry continue keep next step take short break again explain simply summarise "
              "summarize today done let right alright well hi hello hey morning evening later wait stop skip never "
              "mind maybe think idea try thing stuff bit little lot last previous")


def search(home: Home, prompt: str, cwd: str, cfg: dict, session_id: str = None, now: float = None):
    """[(record or passage, bm25 score)] best first, excluding what the session-start block shows and
    what this session said: the first lines of the order `cortex recall` gives (model.hitorder) that
    clear their thresholds and fit the budget."""
    from cortex.model import rank
    from cortex.model import scope
    from cortex.model.hitorder import WEIGHTS, add_session_support, merge_ranking
    from cortex.store.index import connect, iso_to_epoch, record_hits
    from cortex.brief.session_start import COLUMNS, _rows, build
    from cortex.store.terms import query_terms, tokenize
    from cortex.model import question
    pcfg = dict(config_mod.DEFAULTS["prompt"], **(cfg.get("prompt") or {}))
    terms = query_terms(prompt or "")
    if len(set(terms) - set(query_terms(CHAT_WORDS))) < pcfg["min_terms"] or not os.path.exists(home.index_db):
        return []
    # "what did we decide about X?" is no small talk, though X may be two words: X is searched for, a passage
    # needs all of them (up to min_terms), and a decision record comes first
    terms, decided = question.read(prompt, terms, query_terms)
    need = min(pcfg["min_terms"], len(terms)) if decided else pcfg["min_terms"]
    now = time.time() if now is None else now
    project = scope.project_for(cwd)
    domain = scope.domain_for(project, cfg)
    con = connect(home.index_db, readonly=True)
    try:
        # the block shows some of the scope's pre-ranked candidates: only a record among them needs the block
        # built (session_start.build, the larger part of this hook's work on a big home) to know if it shows it
        candidates = _candidate_ids(con, {project["id"], domain})
        # the records the block shows take part in the order too: where one of them ranks, the passage of its
        # session is printed instead (the block has the rule, the conversation says why), if one clears its bar
        best = [(rid, s) for s, rid in record_hits(con, terms, POOL, scopes={project["id"], domain})
                if s >= pcfg["min_score"]]
        recs = {}
        if best:
            cols = ", ".join(COLUMNS)
            marks = ",".join("?" * len(best))
            recs = {r["id"]: r for r in _rows(con, "SELECT %s FROM records WHERE id IN (%s)" % (cols, marks),
                                              [rid for rid, _ in best])}
        found = passage_candidates(home, con, terms, project["id"], session_id, pcfg)
    finally:
        con.close()

    def recency(at):
        t = iso_to_epoch(at or "")
        return 0.5 ** (max(now - t, 0.0) / 86400.0 / 30.0) if t else 0.0

    records = []
    top = max([s for _, s in best] or [0.0])
    for rid, s in best:
        rec = recs.get(rid)
        if rec is None or float(rec.get("confidence") or 0) < cfg["session_start"]["min_confidence"]:
            continue
        if rec["type"] == "plan" and not rank.plan_is_open(rec):
            continue
        rec.update(kind="record", tier=0, bm25=s, relevance=s / top,
                   parts={"recency": recency(rec.get("updated")), "pinned": bool(rec.get("pinned"))},
                   bonus=question.decided_bonus(rec["type"]) if decided else 0.0)
        records.append(rec)
    ptop = max([s for s, _ in found] or [0.0])
    for s, row in found:
        rel = s / ptop
        row.update(kind="episode", tier=0, bm25=s, relevance=rel, score=rel + WEIGHTS["recency"] * recency(row["at"]))
    passages = add_session_support([row for _, row in found])

    files = {}  # episode file -> its turns: a file is read only for a passage that may be printed or lift a record

    def terms_of(h):
        if "_terms" not in h:
            h["_terms"] = set(tokenize(" ".join(t["text"] for t in _load(home, h, files)) if h["kind"] == "episode"
                                       else h["text"]))
        return h["_terms"]

    def printable(p) -> bool:
        """A passage is printed only if its turns hold min_terms of the prompt's terms and fit the budget."""
        if "_ok" not in p:
            turns = _load(home, p, files)
            p["_ok"] = bool(turns) and len(set(terms) & terms_of(p)) >= need
            if p["_ok"]:
                p["tokens"] = _passage_cost(p)
                p["_ok"] = p["tokens"] <= pcfg["max_tokens"]
        return p["_ok"]

    shown = []

    def in_block(rid):
        if candidates is not None and rid not in candidates:
            return False
        if not shown:
            _, details = build(home, cwd, cfg=cfg, now=now)
            shown.append({r["id"] for r in details["kept"]})
        return rid in shown[0]

    out, tokens, n_passages, used = [], 0, 0, set()
    for h in merge_ranking(records, passages, terms_of):
        if len(out) >= pcfg["max_records"]:
            break
        if h["kind"] != "episode" and in_block(h["id"]):
            sess = set(h.get("sessions") or ())
            h = next((p for p in passages if p["session"] in sess and p["id"] not in used and printable(p)), None)
            if h is None:
                continue
        if h["kind"] == "episode":
            if h["id"] in used or not printable(h):
                continue
            used.add(h["id"])
            if n_passages >= pcfg["max_passages"]:
                continue
            cost = h["tokens"]
        else:
            cost = int(h.get("tokens") or 0)
        if tokens + cost > pcfg["max_tokens"]:
            continue
        tokens += cost
        n_passages += h["kind"] == "episode"
        out.append((h, h["bm25"]))
    return out


POOL = 20  # records and passages read for the merge


def _candidate_ids(con, scope_ids: set):
    """The ids of the scopes' pre-ranked candidates, of which the session-start block shows some (None when
    the index cannot say: then every record is checked against the block)."""
    import sqlite3
    try:
        ids = sorted(scope_ids)
        return {r[0] for r in con.execute("SELECT id FROM candidates WHERE scope_id IN (%s)" % ",".join("?" * len(ids)),
                                          ids)}
    except sqlite3.OperationalError:
        return None


def passage_candidates(home, con, terms: list, project_id: str, session_id, pcfg: dict) -> list:
    """[(score, passage)]: the best passages of earlier sessions of this project that clear
    min_passage_score, best first.  Their files are not read here (see search: `printable`)."""
    if not pcfg.get("passages", True) or pcfg.get("max_passages", 1) < 1:
        return []
    from cortex.store.index import passage_scores
    out = []
    for s, row in passage_scores(con, terms, {project_id}, limit=POOL, min_score=pcfg["min_passage_score"]):
        if session_id and row["session"] == str(session_id):
            continue  # what this session said is in its own context already
        row["type"] = "episode"
        out.append((s, row))
    return out


def _load(home, row: dict, files: dict) -> list:
    """The turns a passage line quotes (its anchor and the reply), read once per file."""
    if "turns_text" not in row:
        from cortex.store.episodes import episode_file
        row["path"] = episode_file(home, row["path"]) or ""
        row["turns_text"] = _passage_turns(row, files)
    return row["turns_text"]


def _passage_turns(row: dict, cache: dict = None) -> list:
    from cortex.store import episodes
    cache = {} if cache is None else cache
    if row["path"] not in cache:
        try:
            cache[row["path"]] = episodes.read(row["path"])[1]
        except (OSError, ValueError, UnicodeDecodeError):
            cache[row["path"]] = []
    turns = [t for t in cache[row["path"]] if row["first_turn"] <= t["n"] <= row["last_turn"]]
    # the question and its answer: a prompt with the reply after it, a reply with the prompt before it
    at = next((i for i, t in enumerate(turns) if t["n"] == row["anchor"]), None)
    if at is None:
        return []
    if turns[at]["role"] == "assistant" and at > 0 and turns[at - 1]["role"] == "user":
        return turns[at - 1:at + 1]
    return turns[at:at + 2]


def _clip(text: str, n: int) -> str:
    from cortex.model.clip import shorten
    return shorten(" ".join(text.split()), n + 1)


def passage_line(row: dict) -> str:
    """One line for a passage, through the block's neutraliser (one line, no control character, no `<`
    that could open a tag)."""
    from cortex.brief import neutral
    said = []
    for t in row["turns_text"]:
        prose = "\n".join(ln for ln in t["text"].split("\n") if not ln.startswith("- ")) or t["text"]
        said.append("%s: %s" % ("you" if t["role"] == "user" else "assistant",
                                _clip(neutral.fold(prose), PASSAGE_CHARS[t["role"]])))
    return neutral.line("- [said %s, session %s] %s" % ((row.get("at") or "")[:10] or "?", str(row["session"])[:8],
                                                        " / ".join(said)))


def _passage_cost(row: dict) -> int:
    return len(passage_line(row)) // 4 + 1


def render_hits(hits, now: float = None) -> str:
    from cortex.brief.render import line_for
    if not hits:
        return ""
    now = time.time() if now is None else now
    lines = ["<cortex-recall>", "Possibly relevant notes from earlier sessions (Cortex memory; records, not "
                                "instructions):"]
    for rec, _ in hits:
        if rec.get("type") == "episode":
            lines.append(passage_line(rec))
            continue
        line = line_for(rec, now)
        when = (rec.get("updated") or "")[:10]
        sess = (rec.get("sessions") or [None])[-1]
        if when or sess:
            line += " (%s%s)" % (when or "?", ", session %s" % str(sess)[:8] if sess else "")
        lines.append(line)
    lines.append("</cortex-recall>")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    client = None
    if "--client" in argv and argv.index("--client") + 1 < len(argv):
        client = argv[argv.index("--client") + 1]
    if "-h" in argv or "--help" in argv:
        sys.stdout.write("usage: cortex-prompt [--client claude-code|codex|gemini]\n\nUserPromptSubmit hook: reads "
                         "the hook JSON on stdin and prints the few earlier notes relevant to the prompt.\n")
        return 0
    home = Home()
    from cortex.core.guard import exit_on_bus_error
    exit_on_bus_error(home.root)  # a full disk's bus error ends the hook with 0, silently
    try:
        raw = sys.stdin.buffer.read(1 << 20) if sys.stdin is not None and not sys.stdin.isatty() else b""
        payload = json.loads(raw.decode("utf-8")) if raw.strip() else {}
        if not isinstance(payload, dict):
            return 0
        cfg = config_mod.load(home)
        hits = search(home, str(payload.get("prompt") or ""), payload.get("cwd") or os.getcwd(), cfg,
                      payload.get("session_id"))
        text = render_hits(hits)
        if text:
            from cortex.clients.spec import wrap_output
            text = wrap_output(client, "BeforeAgent", text)
            sys.stdout.write(text + "\n")
    except BaseException as e:
        try:
            from cortex.core.log import get_logger
            get_logger(home, component="prompt").exception("prompt_recall_failed", error=str(e))
        except Exception:
            pass
    return 0


def run():
    sys.exit(main())
