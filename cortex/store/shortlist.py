"""The shortlist: each scope's active records pre-ranked by the normalizer, in the same transaction as
the rows, so session start reads a few hundred candidates instead of the whole scope."""
import json
import time

from cortex.model.rank import order
from cortex.store.index import Index


CANDIDATE_COLUMNS = "id, type, status, confidence, pinned, priority, times, tokens"
INCREMENTAL_FROM = 5000      # active records in a scope above which a small change re-ranks only the old list
FULL_EVERY_SECONDS = 3600.0  # ... as long as the scope was fully re-ranked less than this long ago


def _candidate_recs(rows) -> list:
    loads = json.loads
    return [{"id": r[0], "type": r[1], "status": r[2], "confidence": r[3], "pinned": bool(r[4]), "priority": r[5],
             "times": loads(r[6] or "[]"), "tokens": r[7]} for r in rows]


def compute_candidates(idx: Index, cfg: dict, scope_id: str, now: float = None):
    """Pre-rank a scope's active records so session start reads a short list, not the whole scope."""
    now = time.time() if now is None else now
    rows = idx.con.execute("SELECT %s FROM records WHERE scope_id=? AND status='active'" % CANDIDATE_COLUMNS,
                           (scope_id,)).fetchall()
    _store_candidates(idx, cfg, scope_id, _candidate_recs(rows), now)
    idx.con.execute("INSERT OR REPLACE INTO candidates_ranked VALUES(?, ?, ?)", (scope_id, now, len(rows)))
    idx.con.execute("DELETE FROM unranked WHERE scope_id=?", (scope_id,))


def unranked_scopes(con) -> set:
    """The scopes holding records written since their shortlist was ranked (a run that stopped before
    its ranking: a full disk, a kill)."""
    import sqlite3
    try:
        return {r[0] for r in con.execute("SELECT DISTINCT scope_id FROM unranked")}
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):  # an index from before the table, read before a writer added it
            return set()
        raise


def refresh_candidates(idx: Index, cfg: dict, scope_id: str, changed_ids, now: float = None):
    """compute_candidates, made cheap for a big scope after a small change: when the scope has more than
    INCREMENTAL_FROM active records and was fully ranked less than FULL_EVERY_SECONDS ago, only the old
    candidates and the changed records are re-ranked (the records outside the list did not change, and an
    hour of decay does not carry one past hundreds of others into the few dozen the block shows).
    Otherwise, and at least hourly, the whole scope is ranked again.  (rank.order counts the active days
    of the records it is given; here those are the candidates', as at session start.)  The records
    written since the scope was last ranked (table `unranked`) join the changed ones."""
    now = time.time() if now is None else now
    con = idx.con
    row = con.execute("SELECT full_at, active FROM candidates_ranked WHERE scope_id=?", (scope_id,)).fetchone()
    if (row is None or not (0 <= now - float(row[0]) < FULL_EVERY_SECONDS)
            or int(row[1] or 0) <= INCREMENTAL_FROM):  # the scope's size at its last full ranking
        return compute_candidates(idx, cfg, scope_id, now)
    pool = {r[0] for r in con.execute("SELECT id FROM candidates WHERE scope_id=?", (scope_id,))}
    pool.update(changed_ids)
    # every record written since the last ranking, this run's and those of a run that stopped before ranking
    pool.update(r[0] for r in con.execute("SELECT id FROM unranked WHERE scope_id=?", (scope_id,)))
    pool = sorted(pool)
    rows = []
    for i in range(0, len(pool), 500):  # by id (primary key seeks), then the scope and status are checked here
        chunk = pool[i:i + 500]
        rows += [r[:-1] for r in con.execute("SELECT %s, scope_id FROM records WHERE id IN (%s)"
                                             % (CANDIDATE_COLUMNS, ",".join("?" * len(chunk))), chunk)
                 if r[-1] == scope_id and r[2] == "active"]
    _store_candidates(idx, cfg, scope_id, _candidate_recs(rows), now)
    con.execute("DELETE FROM unranked WHERE scope_id=?", (scope_id,))


def _store_candidates(idx: Index, cfg: dict, scope_id: str, recs: list, now: float):
    ranked = order(recs, now, cfg)
    limit = int(cfg["session_start"]["candidates_per_scope"])
    keep = [r["id"] for r in ranked[:limit]]
    # the newest plan of the scope is always a candidate: it is what "where you left off" shows
    # (the 3 newest plans or progress notes: 3 per type from the records_light index, merged)
    newest = []
    for rtype in ("plan", "progress"):
        newest += idx.con.execute("SELECT updated, id FROM records WHERE scope_id=? AND status='active' AND type=? "
                                  "ORDER BY updated DESC LIMIT 3", (scope_id, rtype)).fetchall()
    extra = [rid for _, rid in sorted(newest, key=lambda r: (r[0] or ""), reverse=True)[:3]]
    for rid in extra:
        if rid not in keep:
            keep.append(rid)
    idx.set_candidates(scope_id, keep)
