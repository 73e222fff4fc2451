"""Keeping the index in step with the record files (normalizer side; may import heavy things)."""
import os
import sys
import time

from cortex.store import records as records_mod
from cortex.store.index import POSTINGS_DDL, Index, has_postings_dl
from cortex.core.schemas import validate  # answers valid records without importing jsonschema
from cortex.store.records import read as read_record
from cortex.store.shortlist import compute_candidates, refresh_candidates


def _note_stemmer(idx):
    """Terms made with one stemmer do not match queries made with another: record which one built them."""
    from cortex.store.terms import stemmer_name
    idx.con.execute("INSERT OR REPLACE INTO meta VALUES('stemmer', ?)", (stemmer_name(),))


def stemmer_mismatch(home) -> str:
    """A one-line warning when the index was built with another stemmer than the one loaded now."""
    from cortex.store.index import connect, read_meta
    from cortex.store.terms import stemmer_name
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


def _writer(home, flush: bool, idx):
    """(the writer to use, whether this call owns it): `idx`, a writer the caller keeps open (the normalizer,
    one for its run: committed here, not closed), taken as if opened now; else a new one."""
    if idx is None:
        return Index(home.index_db, flush_search=flush), True
    idx.stats_changed = False  # what finish() asks: did this call change postings or lengths
    return idx, False


def update_index(home, cfg, changed_ids, touched_scopes, scrub: bool = False, flush: bool = True, idx=None):
    """Refresh the rows of these records and re-rank these scopes; scrub after a hard delete
    (Index.truncate_wal).  `flush`: apply the search outbox now (the normalizer does it once a run).
    `idx`: a writer kept open by the caller (see _writer)."""
    from cortex.store.terms import tokenize
    idx, own = _writer(home, flush, idx)
    try:
        store = records_mod.RecordStore(home.records)
        for rid in sorted(changed_ids):
            paths = list(store.find_paths(rid))
            if not paths:
                idx.delete(rid)
                continue
            rec = read_record(paths[0])
            idx.upsert(rec, paths[0], tokenize)
        idx.finish(built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        _note_stemmer(idx)
        now = time.time()
        for scope_id in sorted(touched_scopes):
            refresh_candidates(idx, cfg, scope_id, changed_ids, now)
        idx.commit()
        if scrub:  # the engine keeps a deleted document's terms until its segment is merged: built anew
            rebuild_records_search(home)
        if scrub and not idx.truncate_wal():
            from cortex.core.log import get_logger
            get_logger(home, component="index").warning(
                "wal_not_truncated", error="a reader held the index while records were deleted, so their text "
                "stays in index/cortex.sqlite-wal until the last process using the index exits; run "
                "`cortex reindex` then to empty it")
    finally:
        if own:
            idx.close()


# -- episode passages ------------------------------------------------------------------------------

def passage_rows(front: dict, turns: list, path: str, since: int = 1) -> list:
    """The index rows of an episode's passages that hold a turn >= since."""
    from cortex.store import episodes
    from cortex.store.terms import tokenize
    rel = "episodes/%s/%s" % (os.path.basename(os.path.dirname(path)), os.path.basename(path))  # relative to the home
    analysed = {}  # turn index -> its terms: a turn is in up to three passages, and the analyser works per
                   # whitespace-separated token, so a passage's terms are its turns' terms in order

    def terms(p):
        out = []
        for j, text in p["parts"]:
            if j not in analysed:
                analysed[j] = tokenize(text)
            out += analysed[j]
        return out
    return [(p["anchor"], front.get("project"), front.get("client"), p["at"], p["first"], p["last"], rel, terms(p))
            for p in episodes.passages(turns, since)]


def update_passages(home, front: dict, turns: list, path: str, since: int = 1, flush: bool = True, idx=None):
    """Index the passages of an episode that changed (those holding a turn >= since).  `idx`: a writer
    kept open by the caller (see _writer)."""
    from cortex.store.index import put_passages
    rows = passage_rows(front, turns, path, since)
    idx, own = _writer(home, flush, idx)
    try:
        put_passages(idx.con, front["session"], rows, since)
        idx.commit()
    finally:
        if own:
            idx.close()


def reindex_passages(home, log=None, batch: int = 20000) -> dict:
    """Rebuild the passages from episodes/ alone: their rows (one transaction) and the search engine's
    passages folder (built beside the one in use, swapped in after the rows commit).  Unreadable files are
    reported.  The table is emptied first, so rows go in with `executemany` in batches (rowids 1..n in file
    order); a session met twice (a copied episode file) is replaced as an incremental update would."""
    from cortex.store import episodes
    from cortex.store.search import Builder, mark_incomplete
    mark_incomplete(home.index_db, "passages")  # a rebuild that dies leaves it to be built again, not stale
    idx = Index(home.index_db, flush_search=False)
    builder = Builder(home.index_db, "passages")
    n, bad = 0, []
    try:
        con = idx.con
        con.execute("BEGIN IMMEDIATE")
        con.execute("DELETE FROM passages")
        con.execute("DELETE FROM search_outbox WHERE kind='passages'")
        rows, seen = [], {}  # session -> its passages' ids, for a session met twice

        def flush():
            con.executemany("INSERT INTO passages(rid, id, session, anchor, project, client, at, first_turn, "
                            "last_turn, path) VALUES(?,?,?,?,?,?,?,?,?,?)", rows)
            del rows[:]

        for path in episodes.iter_paths(home.episodes):
            try:
                front, turns = episodes.read(path)
                if not front.get("session"):
                    raise ValueError("no session in its front matter")
            except (OSError, ValueError, UnicodeDecodeError) as e:
                bad.append((path, str(e)))
                if log:
                    log.warning("episode_unreadable", path=path, error=str(e))
                continue
            if front.get("archived"):
                continue  # forget --session: kept on disk, out of search
            sid = front["session"]
            found = passage_rows(front, turns, path)
            if sid in seen:  # the later file of the session replaces the earlier one's passages
                flush()
                con.execute("DELETE FROM passages WHERE session=?", (sid,))
                for pid in seen[sid]:
                    builder.delete(pid)
            seen[sid] = []
            for anchor, project, client, at, first, last, rel, terms in found:
                n += 1
                pid = "%s:%d" % (sid, anchor)
                rows.append((n, pid, sid, anchor, project, client, at, first, last, rel))
                builder.add(pid, {"project": project, "session": sid}, " ".join(terms))
                seen[sid].append(pid)
            if len(rows) >= batch:
                flush()
        flush()
        count = con.execute("SELECT COUNT(*) FROM passages").fetchone()[0]
        builder.commit()
        con.execute("COMMIT")
        builder.install()
        idx.truncate_wal()
    except BaseException:
        try:
            idx.con.rollback()
        except Exception:
            pass
        builder.abandon()
        raise
    finally:
        idx.close()
    return {"passages": count, "unreadable": bad}


def rebuild_records_search(home, log=None) -> int:
    """Build the search engine's records folder from the index's rows (the text, type and files BM25 sees:
    index.index_text), swapped in when complete; the records' outbox rows it covers are dropped."""
    import json
    from cortex.store.index import connect, index_text, search_fields
    from cortex.store.search import Builder, mark_incomplete
    from cortex.store.terms import tokenize
    mark_incomplete(home.index_db, "records")
    builder = Builder(home.index_db, "records")
    con = connect(home.index_db)
    n = 0
    try:
        last = con.execute("SELECT COALESCE(MAX(seq), 0) FROM search_outbox").fetchone()[0]
        for rid, scope_id, status, rtype, text, files in con.execute(
                "SELECT id, scope_id, status, type, text, files FROM records"):
            rec = {"id": rid, "scope_id": scope_id, "status": status, "type": rtype, "text": text,
                   "files": json.loads(files or "[]")}
            builder.add(rid, search_fields(rec), " ".join(tokenize(index_text(rec))))
            n += 1
        builder.install()
        con.execute("DELETE FROM search_outbox WHERE kind='records' AND seq<=?", (last,))
        con.commit()
    except BaseException:
        builder.abandon()
        raise
    finally:
        con.close()
    if log:
        log.info("search_rebuilt", kind="records", documents=n)
    return n


def purge_passages_search(home, log=None) -> int:
    """After a hard delete of passages: the engine's passages folder built anew from the episode files, so
    the deleted passages' terms are in no segment (tantivy keeps them until the segment is merged)."""
    return rebuild_search(home, log, kinds=["passages"]).get("passages", 0)


def rebuild_search(home, log=None, kinds=None) -> dict:
    """Build the engine folders that are missing, incomplete or of another schema (or these `kinds`) from
    the sources: records from the index's rows, passages from the episode files.  The caller holds the run
    lock.  Returns {kind: documents}."""
    from cortex.store.search import KINDS, usable
    done = {}
    for kind in (KINDS if kinds is None else kinds):
        if kinds is None and usable(home.index_db, kind):
            continue
        if log:
            log.info("search_rebuilding", kind=kind)
        if kind == "records":
            done[kind] = rebuild_records_search(home, log)
        else:
            done[kind] = reindex_passages(home, log)["passages"]
    return done


# -- full rebuild ----------------------------------------------------------------------------------
#
# A rebuild reads every record file, which is most of its cost, so that part runs in worker processes
# (chunks of REINDEX_CHUNK files).  Each worker appends what it reads to its own scratch SQLite file
# (the staging file: rows, postings, sessions, each tagged with the file's sequence number), then
# sorts its postings (an index on term, dl, tf, id), in parallel with the others.  The main process only
# learns ids, scopes and errors; at the end it attaches the staging files and copies them into the
# index in one transaction: records in file order, postings as one merge of the sorted staging
# files (SQLite's MERGE of UNION ALL, no sort), document frequencies with one GROUP BY, then the
# secondary indexes.  Without workers, this process does the same through its own staging file.

REINDEX_CHUNK = 250
PARALLEL_FROM = 4000  # record files; below this one process is faster than starting workers
_RECORD_COLS = ("id, scope, scope_id, project, type, status, text, confidence, salience, pinned, priority, created, "
                "updated, times, tokens, files, branch, plan, sessions, path, doclen, file_state")
_STAGE = {"path": None, "con": None}


def _stage_con(stage_dir: str):
    """This process's staging file in stage_dir (opened once per process and rebuild)."""
    import sqlite3
    path = os.path.join(stage_dir, "stage-%d.sqlite" % os.getpid())
    if _STAGE["path"] != path:
        _close_stage()
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("CREATE TABLE IF NOT EXISTS st_records(seq INTEGER, %s)" % _RECORD_COLS)
        con.execute("CREATE TABLE IF NOT EXISTS st_postings(term TEXT, id TEXT, tf INTEGER, dl INTEGER, seq INTEGER)")
        con.execute("CREATE TABLE IF NOT EXISTS st_sessions(session TEXT, id TEXT, seq INTEGER)")
        _STAGE.update(path=path, con=con)
    return _STAGE["con"]


def _close_stage():
    if _STAGE["con"] is not None:
        try:
            _STAGE["con"].close()
        except Exception:
            pass
    _STAGE.update(path=None, con=None)


def _stage_chunk(job) -> list:
    """Read, check and analyse one chunk of record files into this process's staging file.
    job = (stage_dir, sequence number of the first file, paths).  Returns the chunk's items in file
    order: ("ok", seq, id, scope_id) or ("bad", seq, path, error)."""
    from collections import Counter
    from cortex.store.index import index_text, record_row, record_sessions, relative_path
    from cortex.store.terms import tokenize
    stage_dir, seq, paths = job
    root = os.path.dirname(os.path.dirname(os.path.abspath(stage_dir)))  # <home>/index/.reindex-*
    rows, postings, sess, items = [], [], [], []
    for path in paths:
        try:
            rec = read_record(path)
            problems = validate("record", rec)
            if problems:
                raise records_mod.RecordError("%s: %s" % (path, problems[0]))
            if os.path.splitext(os.path.basename(path))[0] != rec["id"]:
                raise records_mod.RecordError("%s: file name does not match its id %s" % (path, rec["id"]))
        except (records_mod.RecordError, OSError, UnicodeDecodeError) as e:
            items.append(("bad", seq, path, str(e)))
            seq += 1
            continue
        toks = tokenize(index_text(rec))
        sessions = record_sessions(rec)
        rid = rec["id"]
        rows.append((seq,) + record_row(rec, relative_path(root, path), len(toks), sessions))
        dl = len(toks)
        postings.extend([(t, rid, n, dl, seq) for t, n in Counter(toks).items()])
        sess.extend([(x, rid, seq) for x in sessions])
        items.append(("ok", seq, rid, rec["scope_id"]))
        seq += 1
    con = _stage_con(stage_dir)
    con.execute("BEGIN")
    con.executemany("INSERT INTO st_records VALUES(%s)" % ",".join("?" * 23), rows)
    con.executemany("INSERT INTO st_postings VALUES(?,?,?,?,?)", postings)
    con.executemany("INSERT INTO st_sessions VALUES(?,?,?)", sess)
    con.execute("COMMIT")
    return items


def _sort_stage(path: str) -> str:
    """Index a staging file's postings by (term, dl, tf, id), so the main process can merge them without a sort."""
    import sqlite3
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA cache_size=-32768")
        con.execute("CREATE INDEX IF NOT EXISTS st_order ON st_postings(term, dl, tf, id)")
    finally:
        con.close()
    return path


def _workers(n_paths: int, workers) -> int:
    if workers is None:
        env = os.environ.get("CORTEX_REINDEX_WORKERS", "").strip()
        if env.isdigit():
            workers = int(env)
        else:
            workers = min(os.cpu_count() or 1, 4) if n_paths >= PARALLEL_FROM else 1
    return max(1, int(workers))


class _Stager:
    """Runs _stage_chunk over the chunks (in worker processes when workers > 1: they start here, before
    the caller opens the index, so no SQLite handle is inherited), then _sort_stage over the staging
    files.  If workers cannot be started, this process does the work itself."""

    def __init__(self, paths: list, workers: int, stage_dir: str):
        self.stage_dir = stage_dir
        self.jobs = [(stage_dir, i, paths[i:i + REINDEX_CHUNK]) for i in range(0, len(paths), REINDEX_CHUNK)]
        self.pool, self.results = None, None
        if workers > 1 and len(self.jobs) > 1:
            try:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor
                methods = multiprocessing.get_all_start_methods()
                ctx = multiprocessing.get_context("fork" if "fork" in methods and sys.platform.startswith("linux")
                                                  else "spawn")
                self.pool = ProcessPoolExecutor(max_workers=min(workers, len(self.jobs)), mp_context=ctx)
                self.results = self.pool.map(_stage_chunk, self.jobs)
            except (ImportError, OSError, ValueError, RuntimeError):
                self.close()

    def chunks(self):
        """Each chunk's items, in file order."""
        if self.results is not None:
            yield from self.results
        else:
            for job in self.jobs:
                yield _stage_chunk(job)
            _close_stage()

    def sorted_files(self) -> list:
        import glob
        files = sorted(glob.glob(os.path.join(self.stage_dir, "stage-*.sqlite")))
        if self.pool is not None and len(files) > 1:
            return list(self.pool.map(_sort_stage, files))
        return [_sort_stage(f) for f in files]

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool, self.results = None, None


def reindex(home, cfg, progress=None, log=None, workers=None, wait: float = 60.0) -> dict:
    """Rebuild the index from records/ while holding the run lock (waiting up to `wait` seconds for a
    normalizer run): a normalizer writing records during the rebuild would leave files without rows."""
    from cortex.core.lock import locked
    from cortex.store import journal
    with locked(home, wait=wait):
        journal.replay(home, cfg, log=log)  # staging folders of a killed rebuild, intents of killed commands
        return _reindex(home, cfg, progress=progress, log=log, workers=workers)


def _reindex(home, cfg, progress=None, log=None, workers=None) -> dict:
    """Rebuild the index from records/ alone, in one transaction (readers see old or new, never half).
    Unreadable record files are reported and skipped, never rewritten.  A record id found in two files
    is indexed from the later one (in file order), as one upsert after another would.

    Built for size (see the comment above): the files are read in worker processes (`workers`,
    default up to 4 when there are at least PARALLEL_FROM files, one process below that; the
    environment variable CORTEX_REINDEX_WORKERS overrides), each staging and sorting what it read;
    the index is filled from the staging files with a few INSERT ... SELECT statements, and the
    postings(id), terms(df) and sessions(id) indexes are built once at the end."""
    import shutil
    import tempfile
    paths = list(records_mod.iter_paths(home.records))
    os.makedirs(os.path.dirname(home.index_db), mode=0o700, exist_ok=True)
    stage_dir = tempfile.mkdtemp(prefix=".reindex-", dir=os.path.dirname(home.index_db))
    stager = _Stager(paths, _workers(len(paths), workers), stage_dir)
    bad, scopes, losers = [], set(), []
    idx = None
    try:
        seen = {}
        done = 0
        for items in stager.chunks():
            for item in items:
                if item[0] == "bad":
                    bad.append((item[2], item[3]))
                    if log:
                        log.warning("record_unreadable", path=item[2], error=item[3])
                    continue
                _, seq, rid, scope_id = item
                if rid in seen:  # the same id in two files: the later file wins, as upsert would have it
                    losers.append((rid, seen[rid]))
                seen[rid] = seq
                scopes.add(scope_id)
            before = done
            done += len(items)
            if progress and (done // 500 != before // 500 or done == len(paths)):
                progress(done, len(paths))
        files = stager.sorted_files()
        stager.close()
        idx = Index(home.index_db, migrate=False)  # an older index's postings are rebuilt below, not migrated
        con = idx.con
        con.execute("PRAGMA cache_size=-65536")  # 64 MiB for this rebuild's connection
        names = []
        for i, f in enumerate(files):
            con.execute("ATTACH DATABASE ? AS stage%d" % i, (f,))
            names.append("stage%d" % i)
        from cortex.store.search import mark_incomplete
        mark_incomplete(home.index_db, "records")  # rebuilt from the new rows below
        con.execute("BEGIN IMMEDIATE")
        con.execute("DELETE FROM main.search_outbox WHERE kind='records'")
        for name in ("postings_id", "terms_df", "sessions_id", "records_hit"):
            con.execute("DROP INDEX IF EXISTS %s" % name)
        if not has_postings_dl(con):
            con.execute("DROP TABLE main.postings")
            con.execute(POSTINGS_DDL)
        for table in ("records", "postings", "terms", "sessions", "candidates", "candidates_ranked", "meta",
                      "unranked"):
            con.execute("DELETE FROM main.%s" % table)
        for rid, seq in losers:
            for name in names:
                for table in ("st_records", "st_postings", "st_sessions"):
                    con.execute("DELETE FROM %s.%s WHERE id=? AND seq=?" % (name, table), (rid, seq))
        if names:
            def union(table, cols):
                return " UNION ALL ".join("SELECT %s FROM %s.%s" % (cols, n, table) for n in names)
            con.execute("INSERT INTO main.records(%s) SELECT %s FROM (%s) ORDER BY seq"
                        % (_RECORD_COLS, _RECORD_COLS, union("st_records", "seq, " + _RECORD_COLS)))
            con.execute("INSERT INTO main.postings(term, dl, tf, id) %s ORDER BY 1, 2, 3, 4"
                        % union("st_postings", "term, dl, tf, id"))
            con.execute("INSERT OR IGNORE INTO main.sessions(session, id) %s" % union("st_sessions", "session, id"))
        con.execute("INSERT INTO main.terms SELECT term, COUNT(*) FROM main.postings GROUP BY term")
        con.execute("CREATE INDEX IF NOT EXISTS main.postings_id ON postings(id)")
        con.execute("CREATE INDEX IF NOT EXISTS main.terms_df ON terms(df)")
        con.execute("CREATE INDEX IF NOT EXISTS main.sessions_id ON sessions(id)")
        con.execute("CREATE INDEX IF NOT EXISTS main.records_hit ON records(id, doclen, scope, scope_id, type, status)")
        idx.stats_changed = True  # filled above without upserts: finish must count everything
        idx.finish(built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        _note_stemmer(idx)
        now = time.time()
        for scope_id in sorted(scopes):
            compute_candidates(idx, cfg, scope_id, now=now)
        idx.commit()
        for name in names:
            con.execute("DETACH DATABASE %s" % name)
        # the rebuild deleted every old row: its WAL (the size of the index) holds their text; and
        # `wal_not_truncated` above sends people here
        idx.truncate_wal()
    except BaseException:
        if idx is not None:
            try:
                idx.con.rollback()
            except Exception:
                pass
        raise
    finally:
        stager.close()
        _close_stage()
        if idx is not None:
            idx.close()
        shutil.rmtree(stage_dir, ignore_errors=True)
    rebuild_records_search(home, log)
    ep = reindex_passages(home, log)  # episodes/: their passages, from the files alone
    return {"records": len(paths) - len(bad), "unreadable": bad + ep["unreadable"], "passages": ep["passages"]}
