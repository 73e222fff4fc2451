"""The normalizer's episode step: one transcript window's turns into the session's episode and its passages.

Called once per window, after the window's records are stored and before its cursor is saved (so a run
killed before the cursor save reads the window again and episodes.append rewrites the same bytes).
"""
import os
import re

from cortex.ingest.adapters import base as B
from cortex.store.episodes import CORTEX_MARK, _clean, _cut

ENTRY_CHARS = 20000      # one prompt or reply paragraph kept in the file (after redaction)
COMMAND_CHARS = 160      # a tool line's command / path / error
PLAN_TOOLS = ("TodoWrite", "update_plan", "write_todos")


def _one_line(text: str, n: int = COMMAND_CHARS) -> str:
    return _cut(" ".join(_clean(text).split()), n)


def _rel(path: str, cwd) -> str:
    if cwd and path.startswith(cwd.rstrip("/\\") + os.sep):
        return path[len(cwd.rstrip("/\\")) + 1:]
    return path


_ERRORISH = re.compile(r"error|fail|exception|traceback|not found|denied|fatal|panic|cannot|refused", re.I)


def _first_error_line(output: str) -> str:
    text = _clean(output[:200000])
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if _ERRORISH.search(ln):
            return _cut(" ".join(ln.split()), COMMAND_CHARS)
    return _cut(" ".join(lines[0].split()), COMMAND_CHARS) if lines else ""


_VERBS = {"edit": "edited", "write": "wrote", "read": "read", "search": "searched"}


def tool_line(call, result=None, cwd=None) -> str:
    """One short line for a tool action: `edited PATH`, `ran COMMAND → exit N / first error line`, ..."""
    act = call.action or B.OTHER
    if act == B.SHELL:
        cmd = _one_line(call.text)
        failed = result is not None and (result.is_error or result.exit_code not in (None, 0))
        if not cmd and not failed:
            return ""  # no command to name (a poll of a running one): nothing worth a line
        line = "ran " + (cmd or "a command")
        if result is not None:
            if result.exit_code is not None:
                line += " → exit %d" % result.exit_code
            elif failed:
                line += " → failed"
            if failed:
                err = _first_error_line(result.text or "")
                if err:
                    line += " / " + err
        return line
    if act in (B.EDIT, B.WRITE, B.READ) and call.files:
        names = [_one_line(_rel(f, cwd)) for f in call.files[:3]]
        more = " (+%d more)" % (len(call.files) - 3) if len(call.files) > 3 else ""
        return "%s %s%s" % (_VERBS[act], ", ".join(names), more)
    if act == B.SEARCH:
        return "searched " + (_one_line(call.text, 100) or call.tool or "")
    if act == B.TASK:
        return "delegated " + (_one_line(call.text, 100) or "a task")
    line = "used " + _one_line(call.tool or "a tool", 60)
    if result is not None and result.is_error:
        line += " → failed"
    return line


def turns_from_entries(entries, cwd=None, fallback_time: str = "") -> list:
    """The turns of these entries: [{"role", "at", "parts"}] where parts are prose paragraphs and tool
    lines ("- ..."), in order.  Consecutive assistant entries make one turn; each prompt is one turn."""
    results = {}
    for e in entries:
        if e.kind == B.TOOL_RESULT and e.call_id and not e.sidechain:
            results[e.call_id] = e
    turns = []
    last_at = fallback_time or ""
    for e in entries:
        at = e.ts or last_at
        last_at = at
        if e.sidechain or e.kind in (B.INJECTED, B.THINKING) or CORTEX_MARK in (e.text or ""):
            continue
        if e.kind == B.USER:
            text = _cut(_clean(e.text), ENTRY_CHARS)
            if text:
                turns.append({"role": "user", "at": at, "parts": [text]})
            continue
        if e.kind == B.ASSISTANT:
            part = _cut(_clean(e.text), ENTRY_CHARS)
        elif e.kind == B.TOOL_CALL:
            if (e.tool or "") in PLAN_TOOLS:
                continue  # the plan is kept as a plan record, not as a line per update
            line = tool_line(e, results.get(e.call_id) if e.call_id else None, cwd)
            part = "- " + line if line else ""
        else:
            continue
        if not part.strip("- "):
            continue
        if turns and turns[-1]["role"] == "assistant":
            turns[-1]["parts"].append(part)
        else:
            turns.append({"role": "assistant", "at": at, "parts": [part]})
    return turns




def record_window(home, cfg: dict, log, ctx, res, start: int, client: str, base=None, writer=None):
    """Append the window's turns to episodes/<project>/<session>.md and index the changed passages.
    `base` is the episode's size the transcript's cursor saw ([turns, characters of the last turn]).
    `writer`: a function that gives the index writer to use (the normalizer keeps one open a run).
    Returns the size after this window, for the cursor (None when nothing changed or episodes are off)."""
    conf = cfg.get("episodes") or {}
    if not conf.get("enabled", True) or not ctx.session:
        return None
    from cortex.store import episodes
    from cortex.store.indexer import update_passages
    got = episodes.append(home, session=str(ctx.session), client=client, project=ctx.project,
                          transcript=ctx.transcript, start=int(start), end=int(res.cursor),
                          new_turns=turns_from_entries(res.entries, ctx.cwd, ctx.fallback_time or ""), base=base)
    if got is None:
        return None
    path, front, turns, since = got
    if not front.get("archived"):  # an archived episode (forget --session) stays out of search
        # the normalizer flushes the search engine once a run
        update_passages(home, front, turns, path, since, flush=False, idx=writer() if writer else None)
    return [len(turns), len(turns[-1]["text"]) if turns else 0]


def prune(home, cfg: dict, log=None, now: float = None) -> int:
    """Delete the episodes whose last turn is older than episodes.retention_days (0: keep forever), with
    their passages.  Only files not modified for that long are read (the file's time is its last write)."""
    import time
    from cortex.store import episodes
    from cortex.store.index import delete_passages, iso_to_epoch
    days = int((cfg.get("episodes") or {}).get("retention_days", 365) or 0)
    if days <= 0:
        return 0
    now = time.time() if now is None else now
    cutoff = now - days * 86400.0
    gone = []
    for p in episodes.iter_paths(home.episodes):
        try:
            if os.lstat(p).st_mtime >= cutoff:
                continue
            front, _ = episodes.read(p)
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        last = iso_to_epoch(front.get("last") or "") or os.lstat(p).st_mtime
        if last < cutoff:
            gone.append((p, front.get("session")))
    if not gone:
        return 0
    from cortex.store.index import Index
    idx = Index(home.index_db)
    try:
        for p, session in gone:
            if session:
                delete_passages(idx.con, session=session)
        idx.commit()
        for p, _ in gone:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
            if log:
                log.info("episode_expired", path=os.path.relpath(p, home.root))
        idx.truncate_wal()
    finally:
        idx.close()
    return len(gone)


def forget_paths(home, session: str = None, project: str = None) -> list:
    """The episode files of a session (any project) or of every session of a project."""
    from cortex.store import episodes
    out = []
    for p in episodes.iter_paths(home.episodes):
        if project is not None and os.path.basename(os.path.dirname(p)) == episodes.safe_name(project):
            out.append(p)
        elif session is not None and os.path.basename(p) == episodes.safe_name(session) + ".md":
            out.append(p)
    return out
