"""`cortex-session-start`: the SessionStart hook.  Reads, ranks, caps, prints.

Hot path: imports only the standard library's light modules and reads the index
the normalizer prepared (pre-ranked candidates, stored token counts).  Prints the
block for Claude Code and Codex as plain text, or the JSON form for Gemini
(`--client gemini`), prints nothing when there is nothing to say, and exits 0
whatever happens (errors go to the log).
"""
import json
import os
import sys
import time

from cortex.core import config as config_mod
from cortex.core.home import Home

COLUMNS = ("id", "scope", "scope_id", "type", "status", "text", "confidence", "pinned", "priority", "times",
           "tokens", "files", "branch", "plan", "sessions", "updated", "file_state")


def _rows(con, sql, args):
    out = [dict(zip(COLUMNS, row)) for row in con.execute(sql, args)]
    # each JSON column of all the rows in one json.loads (one C call, not one a value: ~3 ms of 800 rows)
    for k, empty in (("times", "[]"), ("files", "[]"), ("sessions", "[]"), ("plan", "null"), ("file_state", "null")):
        for rec, value in zip(out, json.loads("[%s]" % ",".join(rec[k] or empty for rec in out))):
            rec[k] = value
    for rec in out:
        rec["pinned"] = bool(rec["pinned"])
    return out


def gather(home: Home, cwd: str, cfg: dict, session_id: str = None, source: str = None):
    """(project, domain, candidate records) for a working directory."""
    from cortex.model import scope
    from cortex.store.index import connect
    project = scope.project_for(cwd)
    domain = scope.domain_for(project, cfg)
    if not os.path.exists(home.index_db):
        return project, domain, []
    con = connect(home.index_db, readonly=True)
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name='candidates'").fetchone():
            # a file a full disk cut before its schema (issue #18, defect 9): logged, no block
            raise RuntimeError("the index has no tables (a full disk?); the next cortex-normalize rebuilds it")
        cols = ", ".join("r." + c for c in COLUMNS)
        recs = _rows(con, "SELECT %s FROM candidates c JOIN records r ON r.id=c.id "
                          "WHERE c.scope_id IN (?, ?) AND r.scope_id IN (?, ?)" % cols,
                     (project["id"], domain, project["id"], domain))
        if source == "compact" and session_id:
            have = {r["id"] for r in recs}
            recs += [r for r in _rows(con, "SELECT %s FROM sessions s JOIN records r ON r.id=s.id "
                                           "WHERE s.session=? AND r.scope_id IN (?, ?) AND r.status='active'" % cols,
                                      (session_id, project["id"], domain)) if r["id"] not in have]
    finally:
        con.close()
    return project, domain, recs


def build(home: Home, cwd: str, session_id: str = None, source: str = None, now: float = None, cfg: dict = None):
    """The block text ('' when there is nothing to say) and the details of the choice."""
    from cortex.brief import render
    from cortex.model import rank
    from cortex.model import freshness as reality
    cfg = cfg or config_mod.load(home)
    now = time.time() if now is None else now
    project, domain, recs = gather(home, cwd, cfg, session_id, source)
    ordered = rank.order(recs, now, cfg, boost_session=session_id if source == "compact" else None)
    branch = reality.current_branch(cwd)
    budget = {"stats": 0}
    kept, left = render.select(ordered, cfg, now, check=lambda rec: reality.check(rec, branch, budget))
    if not kept:
        return "", {"project": project, "domain": domain, "kept": [], "left": left}
    text, dropped = render.render(kept, project["id"], cfg, now, left)
    left += [(r, "character cap") for r in dropped]
    kept = [r for r in kept if r not in dropped]
    return text, {"project": project, "domain": domain, "kept": kept, "left": left}


def format_output(text: str, client: str) -> str:
    if not text:
        return ""
    from cortex.clients.spec import wrap_output
    out = wrap_output(client, "SessionStart", text)
    return out if out != text else text + "\n"  # a JSON envelope is one line as it is


def parse_args(argv):
    opts = {"cwd": None, "client": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--cwd", "--client") and i + 1 < len(argv):
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        if a.startswith("--cwd=") or a.startswith("--client="):
            k, v = a[2:].split("=", 1)
            opts[k] = v
        elif a in ("-h", "--help"):
            opts["help"] = True
        i += 1
    return opts


USAGE = """usage: cortex-session-start [--cwd DIR] [--client claude-code|codex|gemini]

SessionStart hook: reads the hook JSON on stdin (or uses --cwd), prints the memory block for
that project. Plain text for Claude Code and Codex, JSON for Gemini. Always exits 0.
"""


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    if opts.get("help"):
        sys.stdout.write(USAGE)
        return 0
    home = Home()
    from cortex.core.guard import exit_on_bus_error
    exit_on_bus_error(home.root)  # a full disk's bus error ends the hook with 0, silently
    try:
        payload = {}
        if not opts["cwd"] and sys.stdin is not None and not sys.stdin.isatty():
            raw = sys.stdin.buffer.read(1 << 20)
            try:
                payload = json.loads(raw.decode("utf-8")) if raw.strip() else {}
            except ValueError:
                payload = {}
            if not isinstance(payload, dict):
                payload = {}
        cwd = opts["cwd"] or payload.get("cwd") or os.getcwd()
        client = opts["client"] or ("gemini" if "timestamp" in payload and "source" in payload
                                    and "permission_mode" not in payload and "model" not in payload else None)
        text, _ = build(home, cwd, payload.get("session_id"), payload.get("source"))
        out = format_output(text, client)
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
    except BaseException as e:  # never break the session: log, print nothing
        try:
            from cortex.core.log import get_logger
            get_logger(home, component="session_start").exception("session_start_failed", error=str(e))
        except Exception:
            pass
    return 0


def run():
    sys.exit(main())
