"""Keeping the index in step with the record files (normalizer side; may import heavy things)."""
import json
import os
import time

from . import records as records_mod
from .index import Index, activation_times


def _row_view(rec: dict) -> dict:
    """The fields ranking reads, as session start gets them from the index."""
    return {"id": rec["id"], "type": rec["type"], "status": rec.get("status", "active"),
            "confidence": rec.get("confidence", 0.5), "pinned": rec.get("pinned", False),
            "priority": rec.get("priority", 0), "times": activation_times(rec), "tokens": rec.get("tokens", 0)}


def compute_candidates(idx: Index, cfg: dict, scope_id: str, now: float = None):
    """Pre-rank a scope's active records so session start reads a short list, not the whole scope."""
    from .rank import order
    now = time.time() if now is None else now
    rows = idx.con.execute("SELECT id, type, status, confidence, pinned, priority, times, tokens FROM records "
                           "WHERE scope_id=? AND status='active'", (scope_id,)).fetchall()
    recs = [{"id": r[0], "type": r[1], "status": r[2], "confidence": r[3], "pinned": bool(r[4]), "priority": r[5],
             "times": json.loads(r[6] or "[]"), "tokens": r[7]} for r in rows]
    ranked = order(recs, now, cfg)
    limit = int(cfg["session_start"]["candidates_per_scope"])
    keep = [r["id"] for r in ranked[:limit]]
    # the newest plan of the scope is always a candidate: it is what "where you left off" shows
    extra = [r[0] for r in idx.con.execute(
        "SELECT id FROM records WHERE scope_id=? AND status='active' AND type IN ('plan','progress') "
        "ORDER BY updated DESC LIMIT 3", (scope_id,))]
    for rid in extra:
        if rid not in keep:
            keep.append(rid)
    idx.set_candidates(scope_id, keep)


def _note_stemmer(idx):
    """Terms made with one stemmer do not match queries made with another: record which one built them."""
    from .textproc import stemmer_name
    idx.con.execute("INSERT OR REPLACE INTO meta VALUES('stemmer', ?)", (stemmer_name(),))


def stemmer_mismatch(home) -> str:
    """A one-line warning when the index was built with another stemmer than the one loaded now."""
    from .index import connect, read_meta
    from .textproc import stemmer_name
    if not os.path.exists(home.index_db):
        return ""
    con = connect(home.index_db, readonly=True)
    try:
        built = read_meta(con).get("stemmer")
    finally:
        con.close()
    now = stemmer_name()
    if built and built != now:
        return "the index was built with stemmer %s but %s is loaded; run `cortex reindex`" % (built, now)
    return ""


def update_index(home, cfg, changed_ids, touched_scopes):
    from .textproc import tokenize
    idx = Index(home.index_db)
    try:
        store = records_mod.RecordStore(home.records)
        for rid in sorted(changed_ids):
            paths = list(store.find_paths(rid))
            if not paths:
                idx.delete(rid)
                continue
            rec = records_mod.read(paths[0])
            idx.upsert(rec, paths[0], tokenize)
        idx.finish(built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        _note_stemmer(idx)
        for scope_id in sorted(touched_scopes):
            compute_candidates(idx, cfg, scope_id)
        idx.commit()
    finally:
        idx.close()


def reindex(home, cfg, progress=None, log=None) -> dict:
    """Rebuild the index from records/ alone, in one transaction (readers see old or new, never half).
    Unreadable record files are reported and skipped, never rewritten."""
    from .textproc import tokenize
    from .schemas import validate
    paths = list(records_mod.iter_paths(home.records))
    idx = Index(home.index_db)
    bad = []
    scopes = set()
    try:
        con = idx.con
        for table in ("records", "postings", "terms", "sessions", "candidates", "meta"):
            con.execute("DELETE FROM %s" % table)
        for i, path in enumerate(paths):
            try:
                rec = records_mod.read(path)
                problems = validate("record", rec)
                if problems:
                    raise records_mod.RecordError("%s: %s" % (path, problems[0]))
                if os.path.splitext(os.path.basename(path))[0] != rec["id"]:
                    raise records_mod.RecordError("%s: file name does not match its id %s" % (path, rec["id"]))
            except (records_mod.RecordError, OSError, UnicodeDecodeError) as e:
                bad.append((path, str(e)))
                if log:
                    log.warning("record_unreadable", path=path, error=str(e))
                continue
            idx.upsert(rec, path, tokenize)
            scopes.add(rec["scope_id"])
            if progress and (i % 500 == 0 or i == len(paths) - 1):
                progress(i + 1, len(paths))
        idx.finish(built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        _note_stemmer(idx)
        for scope_id in sorted(scopes):
            compute_candidates(idx, cfg, scope_id)
        idx.commit()
    finally:
        idx.close()
    return {"records": len(paths) - len(bad), "unreadable": bad}
