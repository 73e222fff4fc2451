"""`cortex recall`: search memory by words, best first, and count each hit as a use.

Score of a record that holds at least one query term (BM25 over `textproc.query_terms(QUERY)`, read
from the index):

    relevance  = bm25 / max bm25 among the hits that pass the filters        (0..1]
    activation = 1 / (1 + e^-B)      B = the ACT-R activation of rank.parts   (0..1)
    score      = relevance + 0.2·activation + 0.1·recency + 0.1·confidence + 0.1·pinned

so relevance leads and the ranking parts (how often and how lately a record was met, how sure the
extraction was, whether a person pinned it) separate hits of similar relevance.  Hits of the project
come first, then hits of its domain (then, with --scope all, other scopes), each group by score.
Archived and superseded records are hidden unless `include_archived`.

Recall is a use: each returned record gets the current UTC time appended to its `used` list (which
raises its activation) and its index row refreshed; an archived record that is returned is restored
to active.
"""
import json
import math
import os
import re
import time

from . import manage
from .manage import CortexError

WEIGHTS = {"activation": 0.2, "recency": 0.1, "confidence": 0.1, "pinned": 0.1}
COLUMNS = ("id", "scope", "scope_id", "project", "type", "status", "text", "confidence", "pinned", "priority",
           "created", "updated", "times", "tokens", "files", "branch", "path")
SNIPPET_CHARS = 110


def _active_days(con, scope_ids) -> list:
    """The days the project and its domain were worked on (decay counts these, not calendar days)."""
    import json
    from .consolidate import active_days
    rows = con.execute("SELECT r.times FROM candidates c JOIN records r ON r.id=c.id WHERE c.scope_id IN (%s)"
                       % ",".join("?" * len(scope_ids)), list(scope_ids)).fetchall()
    return active_days([{"times": json.loads(t or "[]")} for (t,) in rows])


def score(bm25: float, max_bm25: float, parts: dict, weights=WEIGHTS) -> dict:
    rel = bm25 / max_bm25 if max_bm25 > 0 else 0.0
    b = parts["activation"]
    act = 1.0 / (1.0 + math.exp(-max(min(b, 50.0), -50.0)))
    total = (rel + weights["activation"] * act + weights["recency"] * parts["recency"]
             + weights["confidence"] * parts["confidence"] + (weights["pinned"] if parts["pinned"] else 0.0))
    return {"score": total, "relevance": rel, "activation_norm": act}


def snippet(text: str, words, width: int = SNIPPET_CHARS) -> str:
    """The text on one line, cut to `width` around the first query word it contains."""
    flat = re.sub(r"\s+", " ", text or "").strip()
    if len(flat) <= width:
        return flat
    low = flat.lower()
    pos = -1
    for w in words:
        if len(w) >= 2:
            i = low.find(w.lower())
            if i >= 0 and (pos < 0 or i < pos):
                pos = i
    start = 0 if pos < width // 3 else pos - width // 3
    end = start + width
    if end > len(flat):
        end, start = len(flat), max(len(flat) - width, 0)
    out = flat[start:end].strip()
    return ("…" if start > 0 else "") + out + ("…" if end < len(flat) else "")


def _rows(con, ids):
    out = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for row in con.execute("SELECT %s FROM records WHERE id IN (%s)" % (", ".join(COLUMNS), ",".join("?" * len(chunk))),
                               chunk):
            rec = dict(zip(COLUMNS, row))
            rec["times"] = json.loads(rec["times"] or "[]")
            rec["files"] = json.loads(rec["files"] or "[]")
            rec["pinned"] = bool(rec["pinned"])
            out[rec["id"]] = rec
    return out


def _light_rows(con, ids):
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        yield from con.execute("SELECT id, scope, scope_id, type, status FROM records WHERE id IN (%s)"
                               % ",".join("?" * len(chunk)), chunk)


def _could_reach_top(light, k: int, max_bm25: float) -> set:
    """Ids that could still be among the first k.  The ranking parts add at most sum(WEIGHTS) to a
    hit's relevance, so within a tier a hit whose relevance is more than that below the k-th best
    relevance can never overtake it; tiers after the one that fills k hits never show.  Reading full
    rows only for these gives the same hits in the same order, far faster on common words."""
    margin = sum(WEIGHTS.values())
    by_tier = {}
    for tier, b, rid in light:
        by_tier.setdefault(tier, []).append((b / max_bm25 if max_bm25 > 0 else 0.0, rid))
    keep, need = set(), k
    for tier in sorted(by_tier):
        if need <= 0:
            break
        rels = sorted(by_tier[tier], reverse=True)
        floor = rels[min(need, len(rels)) - 1][0] - margin
        keep.update(rid for rel, rid in rels if rel >= floor)
        need -= len(rels)
    return keep


def recall(home, query: str, scope: str = None, types=None, k: int = 10, cwd: str = None,
           include_archived: bool = False, record_use: bool = True, cfg=None, now: float = None) -> dict:
    """Search memory.  Returns {query, terms, project, domain, scope, hits, used_at, note}."""
    from . import rank, render
    from .index import bm25_scores
    from .records import TYPES
    from .textproc import query_terms
    now = time.time() if now is None else now
    types = [t for t in (types or []) if t]
    for t in types:
        if t not in TYPES:
            raise CortexError("unknown type %r" % t, "use one of: %s" % ", ".join(TYPES))
    if k < 1:
        raise CortexError("-k must be at least 1")
    terms = query_terms(query or "")
    if not terms:
        raise CortexError("the query %r has no searchable words (only stopwords or punctuation)" % (query or ""),
                          "use more specific words")
    project, domain, cfg = manage.resolve_project(home, cwd, cfg)
    scope_ids = manage.where(project["id"], domain, scope)
    out = {"query": query, "terms": terms, "project": project["id"], "domain": domain,
           "scope": scope or "project+domain", "hits": [], "used_at": None, "note": None}
    if not os.path.exists(home.index_db):
        from .records import iter_paths
        if next(iter_paths(home.records), None):
            raise CortexError("there is no index in %s" % home.root, "run `cortex reindex`")
        return out
    from .index import connect
    con = connect(home.index_db, readonly=True)
    try:
        scores = bm25_scores(con, terms)
        light = []
        for rid, sc, sid, rtype, status in _light_rows(con, sorted(scores)):
            if scope_ids is not None and sid not in scope_ids:
                continue
            if types and rtype not in types:
                continue
            if status != "active" and not include_archived:
                continue
            tier = 0 if sc == "L0" and sid == project["id"] else 1 if sc == "L1" and sid == domain else 2
            light.append((tier, scores[rid], rid))
        if not light:
            return out
        max_bm25 = max(b for _, b, _ in light)
        rows = _rows(con, sorted(_could_reach_top(light, k, max_bm25)))
        days = _active_days(con, [project["id"], domain])
    finally:
        con.close()
    hits = list(rows.values())
    words = re.findall(r"\w+", query)
    for rec in hits:
        p = rank.parts(rec, now, cfg, days)
        s = score(scores[rec["id"]], max_bm25, p)
        rec.update(bm25=scores[rec["id"]], parts=p, **s)
        rec["tier"] = (0 if rec["scope"] == "L0" and rec["scope_id"] == project["id"]
                       else 1 if rec["scope"] == "L1" and rec["scope_id"] == domain else 2)
    hits.sort(key=lambda r: (r["tier"], -r["score"], r["id"]))
    hits = hits[:k]
    for rec in hits:
        last = max(rec["times"]) if rec["times"] else 0.0
        p = rec["parts"]
        out["hits"].append({
            "id": rec["id"], "type": rec["type"], "status": rec["status"], "scope": rec["scope"],
            "scope_id": rec["scope_id"], "where": ("project", "domain", "other")[rec["tier"]],
            "age": render.age(last, now) if last else None,
            "last_touched": manage.now_iso(last) if last else None,
            "confidence": rec["confidence"], "effective_confidence": round(p["confidence"], 4),
            "pinned": rec["pinned"], "priority": int(rec["priority"] or 0),
            "score": round(rec["score"], 4), "bm25": round(rec["bm25"], 4), "relevance": round(rec["relevance"], 4),
            "activation": round(p["activation"], 4), "recency": round(p["recency"], 4),
            "snippet": snippet(rec["text"], words), "text": rec["text"], "path": rec["path"], "restored": False})
    if record_use:
        at = manage.now_iso(now)
        try:
            manage.mark_used(home, [h["id"] for h in out["hits"]], at=at, restore=True, cfg=cfg)
            out["used_at"] = at
            for h in out["hits"]:
                if h["status"] == "archived":
                    h["status"], h["restored"] = "active", True
        except CortexError as e:
            out["note"] = "uses not recorded: %s" % e
    return out
