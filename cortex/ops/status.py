"""What is in a Cortex home: inbox counts, last run, records per scope and type."""
import json
import os
import time

from cortex.inbox import maildir as inbox
def status(home) -> dict:
    from cortex.store import tokencount as tokens
    info = {"home": home.root, "inbox": {}, "oldest_pending_age_s": None, "last_run": None, "records": {},
            "index": None, "failed": [], "token_counting": tokens.method()}
    for state in ("pending", "claimed", "done", "failed"):
        names = [n for n in inbox.list_names(home, state) if not n.endswith(".reason.txt")]
        info["inbox"][state] = len(names)
        if state == "pending" and names:
            try:
                oldest = min(os.path.getmtime(os.path.join(home.inbox_dir(state), n)) for n in names)
                info["oldest_pending_age_s"] = int(time.time() - oldest)
            except OSError:
                pass
        if state == "failed":
            for n in names[-20:]:
                try:
                    with open(os.path.join(home.inbox_dir("failed"), n + ".reason.txt"), encoding="utf-8") as f:
                        reason = f.readline().strip()
                except OSError:
                    reason = "(no reason file)"
                info["failed"].append({"event": n, "reason": reason})
    try:
        with open(home.path("state", "last_run.json"), encoding="utf-8") as f:
            info["last_run"] = json.load(f)
    except (OSError, ValueError):
        pass
    from cortex.store import episodes
    paths = list(episodes.iter_paths(home.episodes))
    info["episodes"] = {"files": len(paths), "bytes": sum(os.path.getsize(p) for p in paths), "passages": 0}
    if os.path.exists(home.index_db):
        from cortex.store.index import connect, read_meta
        con = connect(home.index_db, readonly=True)
        try:
            for scope, scope_id, rtype, status_, n in con.execute(
                    "SELECT scope, scope_id, type, status, COUNT(*) FROM records GROUP BY 1,2,3,4"):
                info["records"].setdefault("%s/%s" % (scope, scope_id), {}).setdefault(status_, {})[rtype] = n
            info["index"] = read_meta(con)
            info["conflicts"] = _conflicts(con, home)
            try:
                info["episodes"]["passages"] = con.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
            except Exception:  # an index from before episodes
                pass
            from cortex.store import search
            info["search"] = {"waiting": search.pending(con)}
        finally:
            con.close()
        for kind in search.KINDS:  # documents in each folder of the engine (None: to be built)
            reader = search.open_reader(home.index_db, kind)
            info["search"][kind] = reader.num_docs() if reader is not None else None
    return info


def _conflicts(con, home) -> list:
    """Pairs of active records that contradict each other (a decision and a later rejection of it)."""
    from cortex.store.records import read
    out = []
    rows = con.execute("SELECT id, path, text FROM records WHERE status='active' AND type='rejected'").fetchall()
    for rid, path, text in rows:
        try:
            rec = read(home.record_file(path))
        except Exception:
            continue
        for other in rec.get("conflicts_with") or []:
            out.append({"rejected": rid, "decision": other, "text": text[:120]})
    return out


def format_status(info: dict) -> str:
    lines = ["home      %s" % info["home"]]
    ib = info["inbox"]
    lines.append("inbox     pending %d  claimed %d  done %d  failed %d" % (
        ib.get("pending", 0), ib.get("claimed", 0), ib.get("done", 0), ib.get("failed", 0)))
    if info["oldest_pending_age_s"] is not None:
        lines.append("          oldest pending event: %ds old" % info["oldest_pending_age_s"])
    lr = info["last_run"]
    lines.append("last run  %s" % ("%s, %s ms, %s events" % (lr.get("finished_at"), lr.get("duration_ms"), lr.get("events"))
                                   if lr else "never"))
    if info["index"]:
        lines.append("index     %s records, built %s" % (info["index"].get("N"), info["index"].get("built_at")))
    ep = info.get("episodes") or {}
    lines.append("episodes  %d session(s), %d KB, %d passage(s) indexed" % (
        ep.get("files", 0), ep.get("bytes", 0) // 1024, ep.get("passages", 0)))
    se = info.get("search")
    if se:
        lines.append("search    %s%s" % (", ".join("%s %s" % (k, "to be built" if se.get(k) is None else se[k])
                                                  for k in ("records", "passages")),
                                       "; %d change(s) waiting for cortex-normalize" % se["waiting"]
                                       if se.get("waiting") else ""))
    lines.append("tokens    %s" % info.get("token_counting"))
    for scope, by_status in sorted(info["records"].items()):
        active = by_status.get("active", {})
        lines.append("records   %-40s %s" % (scope, " ".join("%s:%d" % kv for kv in sorted(active.items()))))
    for c in info.get("conflicts") or []:
        lines.append("conflict  %s rejects what %s decided: %s" % (c["rejected"], c["decision"], c["text"]))
    for f in info["failed"]:
        lines.append("failed    %s: %s" % (f["event"], f["reason"]))
    return "\n".join(lines)
