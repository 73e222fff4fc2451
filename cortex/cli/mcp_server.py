"""`cortex mcp`: Cortex's memory as MCP tools, over stdio (optional extra: pip install 'cortex-memory[mcp]').

The session-start block stays the main path: it already carries the best of memory into every session.
These tools are for what the block lacks, mid-session: search -> timeline -> get, plus remember and
forget.  Each tool is one library call, the same the CLI makes (cortex.ops.recall, cortex.ops.manage),
so the server holds no state of its own.  The project is the server's working directory (clients start
MCP servers in the project), or CLAUDE_PROJECT_DIR / GEMINI_PROJECT_DIR when the client sets one.

Errors a person could fix come back as tool errors with the CLI's one-line message and hint.
"""
import os

from cortex.core.errors import CortexError
from cortex.core.home import Home

INSTRUCTIONS = (
    "Cortex keeps decisions, rejected approaches, plans, gotchas and fixes from earlier coding sessions in this "
    "project. The best of it is already in the <cortex-memory> block at the start of the session: read that "
    "first. Call `search` when the user asks what was decided or tried before, when you are about to change "
    "code whose history may matter (a rule for a function, a workaround, a config choice), or when an error "
    "looks familiar. Then `timeline` for what happened around a hit and `get` for whole records. Use "
    "`remember` for a decision or gotcha worth keeping, `forget` for a memory the user says is wrong.")


def _cwd() -> str:
    for var in ("CORTEX_PROJECT_DIR", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        if os.environ.get(var):
            return os.environ[var]
    return os.getcwd()


def _line(hit: dict) -> dict:
    return {"id": hit["id"], "type": hit["type"], "status": hit["status"], "age": hit.get("age"),
            "when": hit.get("last_touched"), "text": (hit.get("snippet") or hit["text"])[:300]}


def search(query: str, k: int = 8, type: str = "") -> dict:
    from cortex.ops.recall import recall
    res = recall(Home(), query, types=[type] if type else None, k=max(1, min(int(k), 30)), cwd=_cwd(),
                 record_use=True)
    return {"project": res["project"], "hits": [_line(h) for h in res["hits"]]}


def get(ids: list) -> dict:
    from cortex.ops import manage
    out = []
    for ref in list(ids)[:20]:
        try:
            rec = manage.show(Home(), ref)
        except CortexError as e:
            out.append({"id": ref, "error": str(e)})
            continue
        out.append({k: rec.get(k) for k in ("id", "type", "status", "text", "files", "plan", "branch", "created",
                                            "updated", "confidence", "pinned", "supersedes", "superseded_by",
                                            "related", "provenance") if rec.get(k) not in (None, [], "")})
    return {"records": out}


def timeline(id: str, before: int = 5, after: int = 5) -> dict:
    """The records made in the same session(s) as the given one, in time order, around it (for a record
    written by hand, with no session, the records of its project around its time)."""
    from cortex.ops import manage
    home = Home()
    rec = manage.show(home, id)
    sessions = sorted({p.get("session") for p in rec.get("provenance") or () if p.get("session")})
    seen, rows = set(), []
    for s in sessions:
        for other in manage.session_records(home, s):
            if other["id"] in seen:
                continue
            seen.add(other["id"])
            rows.append(other)
    if not rows:
        rows = [r for r, _ in manage.project_records(home, rec["scope_id"])] if rec.get("scope") == "L0" else [rec]
    rows.sort(key=lambda r: (r.get("created") or "", r["id"]))
    at = next((i for i, r in enumerate(rows) if r["id"] == rec["id"]), 0)
    window = rows[max(0, at - max(0, int(before))): at + max(0, int(after)) + 1]
    return {"sessions": sessions, "records": [{"id": r["id"], "type": r["type"], "status": r.get("status"),
                                               "when": r.get("created"), "text": (r.get("text") or "")[:300],
                                               "this": r["id"] == rec["id"]} for r in window]}


def remember(text: str, type: str = "learned") -> dict:
    from cortex.ops import manage
    res = manage.remember(Home(), text, rtype=type, cwd=_cwd())
    rec = res["record"]
    return {"id": rec["id"], "type": rec["type"], "scope_id": rec.get("scope_id"), "action": res["action"]}


def forget(id: str) -> dict:
    from cortex.ops import manage
    home = Home()
    targets, _how = manage.find_targets(home, id, cwd=_cwd())
    if len(targets) != 1:
        raise CortexError("%r names %d records" % (id, len(targets)), "pass one record id from `search`")
    return {"forgotten": manage.forget(home, targets)}


TOOLS = (
    (search, "Search Cortex's memory of earlier sessions in this project (decisions, rejected approaches, "
             "plans, gotchas, fixes). Use it when the user asks what was decided or tried before, or before "
             "changing code whose history may matter. Returns ids and one-line texts, best first; the "
             "session-start block already shows the top memories, so search for what it lacks. `type` "
             "narrows to one record type (decision, rejected, plan, todo, gotcha, fix, learned, preference)."),
    (timeline, "What happened around a search hit: the records made in the same session(s), in time order, "
               "`before` and `after` the given id. Use it after `search` to see the context of a decision."),
    (get, "The whole records for these ids (text, files, plan, links to what they supersede or are superseded "
          "by, provenance: which session and transcript). Use it after `search` when one line is not enough."),
    (remember, "Keep one sentence for future sessions of this project: a decision, a rejected approach with its "
               "reason, a gotcha, a preference. `type` is one of decision, rejected, gotcha, learned, "
               "preference, todo, fix."),
    (forget, "Archive one memory the user says is wrong or obsolete (by id from `search`); it leaves the "
             "session-start block and search, and stays on disk."),
)


def build_server():
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    server = MCPServer(name="cortex", instructions=INSTRUCTIONS)
    for fn, description in TOOLS:
        server.tool(name=fn.__name__, description=description)(_as_tool(fn, ToolError))
    return server


def _as_tool(fn, tool_error):
    import functools

    @functools.wraps(fn)
    def tool(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except CortexError as e:
            raise tool_error("%s%s" % (e, "; " + e.hint if e.hint else ""))
    return tool


def main(argv=None) -> int:
    try:
        server = build_server()
    except ImportError:
        raise CortexError("the MCP server needs the mcp package", "pip install 'cortex-memory[mcp]'")
    server.run("stdio")
    return 0
