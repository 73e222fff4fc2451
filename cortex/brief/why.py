"""`cortex why`: the session-start block of a project, and why each record is in it or not.

`session_start.build` gives the block, the records kept (best first) and the candidates left out with
a reason (count cap, token cap, character cap, low confidence, plan finished, older plan).  Records
that never became candidates are added from the index: archived or superseded ones (their status is
the reason) and active ones the normalizer did not pre-rank (beyond `candidates_per_scope`).  Every
record carries its score and the parts of it (`rank.parts`): activation, recency, type weight,
confidence, pinned, priority.
"""
import os
import time

from cortex.core.clock import now_iso
NOT_CANDIDATE = "not pre-ranked (beyond session_start.candidates_per_scope)"


def _entry(rec: dict, now: float, cfg: dict, days=None) -> dict:
    from cortex.model import rank
    p = rec.get("_parts") or rank.parts(rec, now, cfg, days)
    times = rec.get("times") or []
    return {"id": rec["id"], "type": rec["type"], "status": rec.get("status", "active"),
            "scope": rec.get("scope"), "scope_id": rec.get("scope_id"),
            "score": round(p["score"], 4), "activation": round(p["activation"], 4),
            "recency": round(p["recency"], 4), "type_weight": p["type_weight"], "confidence": round(p["confidence"], 4),
            "stored_confidence": float(rec.get("confidence") or 0),
            "pinned": p["pinned"], "priority": int(rec.get("priority") or 0), "tokens": int(rec.get("tokens") or 0),
            "last_touched": now_iso(max(times)) if times else None, "text": rec.get("text", "")}


def _others(home, scope_ids, have: set) -> list:
    """Records of these scopes that were not candidates for the block, from the index."""
    from cortex.store.index import connect
    from cortex.brief.session_start import COLUMNS, _rows
    if not os.path.exists(home.index_db):
        return []
    con = connect(home.index_db, readonly=True)
    try:
        recs = _rows(con, "SELECT %s FROM records WHERE scope_id IN (%s)"
                     % (", ".join(COLUMNS), ",".join("?" * len(scope_ids))), list(scope_ids))
    finally:
        con.close()
    out = []
    for rec in recs:
        if rec["id"] in have:
            continue
        out.append((rec, rec["status"] if rec["status"] != "active" else NOT_CANDIDATE))
    return out


def why(home, cwd: str = None, cfg=None, now: float = None) -> dict:
    """{project, domain, block, chars, tokens, kept: [...], left: [...]} for the project of cwd."""
    from cortex.brief import render, session_start
    now = time.time() if now is None else now
    if cfg is None:
        from cortex.core import config
        cfg = config.load(home)
    cwd = os.path.abspath(cwd or os.getcwd())
    text, details = session_start.build(home, cwd, now=now, cfg=cfg)
    project, domain = details["project"], details["domain"]
    from cortex.model.decay import active_days
    days = active_days(list(details["kept"]) + [r for r, _ in details["left"]])
    kept = []
    for rec in details["kept"]:
        e = _entry(rec, now, cfg, days)
        e["line"] = render.line_for(rec, now)
        e["section"] = "resume" if rec.get("_resume") else render.SECTION_OF.get(rec["type"], "knowledge")
        kept.append(e)
    left = []
    have = {r["id"] for r in details["kept"]} | {r["id"] for r, _ in details["left"]}
    for rec, reason in list(details["left"]) + _others(home, [project["id"], domain], have):
        e = _entry(rec, now, cfg, days)
        e["reason"] = reason
        left.append(e)
    return {"project": project["id"], "project_root": project.get("root"), "domain": domain, "block": text,
            "chars": len(text), "tokens": sum(e["tokens"] for e in kept) if text else 0,
            "limits": {k: cfg["session_start"][k] for k in ("max_records", "max_tokens", "max_chars", "min_confidence")},
            "weights": {k: cfg["ranking"][k] for k in ("activation_weight", "recency_weight", "confidence_weight")},
            "kept": kept, "left": left}


def reasons(left: list) -> dict:
    """How many records were left out for each reason."""
    out = {}
    for e in left:
        out[e["reason"]] = out.get(e["reason"], 0) + 1
    return out
