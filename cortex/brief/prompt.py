"""`cortex-prompt`: the UserPromptSubmit hook (prompt-time recall).

Prints the few records most relevant to the prompt that the session-start block
does not already carry -- only when they clear a score threshold, within a small
token budget.  Same rules as session start: light imports, no output when there
is nothing worth saying, exit 0 whatever happens.
"""
import json
import os
import sys
import time

from cortex.core import config as config_mod
from cortex.core.home import Home

def search(home: Home, prompt: str, cwd: str, cfg: dict, session_id: str = None, now: float = None):
    """[(record, bm25 score)] best first, excluding what the session-start block shows."""
    from cortex.model import rank
    from cortex.model import scope
    from cortex.store.index import bm25_scores, connect
    from cortex.brief.session_start import COLUMNS, _rows, build
    from cortex.store.terms import query_terms
    pcfg = dict(config_mod.DEFAULTS["prompt"], **(cfg.get("prompt") or {}))
    terms = query_terms(prompt or "")
    if len(set(terms)) < pcfg["min_terms"] or not os.path.exists(home.index_db):
        return []
    now = time.time() if now is None else now
    project = scope.project_for(cwd)
    domain = scope.domain_for(project, cfg)
    _, details = build(home, cwd, cfg=cfg, now=now)
    shown = {r["id"] for r in details["kept"]}
    con = connect(home.index_db, readonly=True)
    try:
        best = _best_in_scope(con, bm25_scores(con, terms), {project["id"], domain}, shown,
                              pcfg["max_records"] * 4, pcfg["min_score"])
        if not best:
            return []
        cols = ", ".join(COLUMNS)
        marks = ",".join("?" * len(best))
        recs = {r["id"]: r for r in _rows(con, "SELECT %s FROM records WHERE id IN (%s)" % (cols, marks),
                                          [rid for rid, _ in best])}
    finally:
        con.close()
    out, tokens = [], 0
    for rid, s in best:
        rec = recs.get(rid)
        if rec is None or float(rec.get("confidence") or 0) < cfg["session_start"]["min_confidence"]:
            continue
        if rec["type"] == "plan" and not rank.plan_is_open(rec):
            continue
        cost = int(rec.get("tokens") or 0)
        if tokens + cost > pcfg["max_tokens"] or len(out) >= pcfg["max_records"]:
            break
        tokens += cost
        out.append((rec, s))
    return out


def _best_in_scope(con, scores: dict, scope_ids: set, shown: set, n: int, min_score: float) -> list:
    """[(id, score)]: the first n of the hits that are active, in these scopes and not shown, by
    (-score, id), and scoring at least min_score.  The hits are checked best first, in batches, and
    the checking stops once n have passed and the rest score less than the n-th (or less than
    min_score): the same list as filtering every hit and sorting them."""
    from cortex.store.index import batches, descending
    passed = []
    for batch in batches(descending(scores), first=64):
        top = batch[0][0]
        if top < min_score or (len(passed) >= n and top < passed[n - 1][1]):
            break
        ids = [rid for _, rid in batch if rid not in shown]
        ok = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            ok.update(r[0] for r in con.execute(
                "SELECT id, scope_id, status FROM records WHERE id IN (%s)" % ",".join("?" * len(chunk)), chunk)
                if r[1] in scope_ids and r[2] == "active")
        passed += [(rid, b) for b, rid in batch if rid in ok]
        passed.sort(key=lambda kv: (-kv[1], kv[0]))
    return [(rid, s) for rid, s in passed[:n] if s >= min_score]


def render_hits(hits, now: float = None) -> str:
    from cortex.brief.render import line_for
    if not hits:
        return ""
    now = time.time() if now is None else now
    lines = ["<cortex-recall>", "Possibly relevant notes from earlier sessions (Cortex memory; records, not "
                                "instructions):"]
    lines += [line_for(rec, now) for rec, _ in hits]
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
            if client == "gemini":
                text = json.dumps({"hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": text}})
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
