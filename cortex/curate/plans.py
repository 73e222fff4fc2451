"""Plans across sessions: the latest plan of a piece of work replaces the earlier ones.

A plan record comes from TodoWrite, update_plan, write_todos or a compaction summary's pending tasks; each
session has one (key `plan:<session>`, following the session's newest list).  Across sessions:

  same work   two plans are the same work when at least half of the smaller plan's items match an item of
              the other (an item matches when the Dice similarity of their index terms is >= ITEM_MATCH, so
              "[>] Add rate limiting" and "[x] Add rate limiting to the API" match);
  replaces    the newer plan (by its latest provenance time) supersedes every earlier active plan of the same
              work in the scope: status superseded, `superseded_by` the newer one;
  retires     a plan whose items are all completed leaves the block (render.select: "plan finished") and
              takes the plans it replaced with it, since they are superseded; the "next step" todo a
              compaction summary left (`todo:<session>:next`) is retired with its session's plan once that
              plan is finished or replaced.

Runs in the normalizer after each plan is written; nothing here is on the session-start path.
"""
import os

ITEM_MATCH = 0.6
NEXT_STEP_PREFIX = "Next step (at compaction):"


def _terms(text: str) -> frozenset:
    from cortex.store.terms import tokenize
    return frozenset(tokenize(text or ""))


def _dice(a, b) -> float:
    return 2.0 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


def same_work(a: list, b: list) -> bool:
    """True when at least half of the smaller plan's items match an item of the other."""
    ta = [_terms(i.get("text")) for i in a or ()]
    tb = [_terms(i.get("text")) for i in b or ()]
    ta, tb = [t for t in ta if t], [t for t in tb if t]
    if not ta or not tb:
        return False
    small, big = (ta, tb) if len(ta) <= len(tb) else (tb, ta)
    matched = sum(1 for t in small if any(_dice(t, u) >= ITEM_MATCH for u in big))
    return matched * 2 >= len(small)


def finished(rec: dict) -> bool:
    plan = rec.get("plan") or []
    return bool(plan) and all(i.get("status") == "completed" for i in plan)


def _latest(rec: dict) -> str:
    return max([p.get("at") or "" for p in rec.get("provenance") or ()] + [rec.get("updated") or ""])


def _active_ids(cons, scope_id: str, rtype: str) -> set:
    """Active records of a type in a scope: those this run wrote, and those in the index."""
    ids = set(cons.fresh.get((scope_id, rtype), {}))
    if os.path.exists(cons.home.index_db):
        from cortex.store.index import connect
        import sqlite3
        con = connect(cons.home.index_db, readonly=True)
        try:
            ids |= {r[0] for r in con.execute("SELECT id FROM records WHERE scope_id=? AND type=? AND status='active'",
                                              (scope_id, rtype))}
        except sqlite3.OperationalError:
            pass  # an index a killed run left without its tables: the run rebuilds it; this run's records are in fresh
        finally:
            con.close()
    return ids


def _retire(by: str):
    def change(r):
        if r.get("status") != "active":
            return False
        r["status"] = "superseded"
        r["superseded_by"] = sorted(set(r.get("superseded_by") or ()) | {by})
        return True
    return change


def _link(field: str, rid: str):
    def change(r):
        links = list(r.get(field) or ())
        if rid in links or rid == r["id"]:
            return False
        r[field] = sorted(links + [rid])
        return True
    return change


def settle(cons, store, rec: dict) -> list:
    """After a plan record was written: retire the earlier plans of the same work (or this one, when a newer
    plan of the same work is already there), and the summary's next-step todo of every retired or finished
    plan's sessions.  Returns the ids retired."""
    if rec.get("type") != "plan" or rec.get("status") != "active":
        return []
    retired, mine = [], _latest(rec)
    newer = None
    for rid in sorted(_active_ids(cons, rec["scope_id"], "plan") - {rec["id"]}):
        other = store.get(rid)
        if not other or other.get("status") != "active" or not same_work(rec.get("plan"), other.get("plan")):
            continue
        if _latest(other) <= mine:
            store.update(rid, _retire(rec["id"]))
            retired.append(rid)
        elif newer is None or _latest(other) > _latest(newer):
            newer = other
    if retired:
        for rid in retired:
            store.update(rec["id"], _link("supersedes", rid))
    if newer is not None:  # read out of order: a later session's plan of the same work is already stored
        store.update(rec["id"], _retire(newer["id"]))
        store.update(newer["id"], _link("supersedes", rec["id"]))
        retired.append(rec["id"])
    sessions = set()
    for rid in retired:
        r = store.get(rid)
        sessions |= set(p.get("session") for p in (r or {}).get("provenance") or ())
    if finished(rec) or rec["id"] in retired:
        sessions |= set(p.get("session") for p in rec.get("provenance") or ())
    sessions.discard(None)
    if sessions:
        for tid in sorted(_active_ids(cons, rec["scope_id"], "todo")):
            todo = store.get(tid)
            if (todo and todo.get("status") == "active" and (todo.get("text") or "").startswith(NEXT_STEP_PREFIX)
                    and sessions & {p.get("session") for p in todo.get("provenance") or ()}):
                store.update(tid, _retire(rec["id"]))
                retired.append(tid)
    return retired

