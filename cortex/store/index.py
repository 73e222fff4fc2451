"""The index: everything ranking and search need, derived from the record files.

One SQLite file (stdlib `sqlite3`, so readers import nothing heavy):
  records      one row per record: the fields ranking needs, its activation times, its file path
  postings     term -> (record, term frequency, record length), for BM25; the primary key
               (term, dl, tf, id) keeps each term's postings grouped by what its BM25 term score depends on
  terms        term -> document frequency
  sessions     session id -> records it produced (for SessionStart after compaction)
  candidates   per scope, the records pre-ranked by the normalizer for session start
  candidates_ranked  per scope, when its candidates were last ranked over the whole scope (and over how many)
  unranked     records written since their scope's candidates were ranked (written with the rows, cleared by
               the ranking): a run stopped before its ranking (a full disk, a kill) leaves them for the next
  meta         corpus statistics (document count, total length, idf sum) and build info
  passages     one row per episode passage (episodes/<project>/<session>.md: a turn with its neighbours):
               its session, project, client, time, turn range and file
  search_outbox  what the search engine (store/search.py: tantivy, beside this file) still has to apply:
               written in the same transaction as the rows it mirrors, emptied by search.flush

Searching (cortex recall, cortex-prompt) goes through the engine of store/search.py, which indexes the
records' and the passages' terms; the postings below also serve the normalizer's own lookups (duplicates,
supersession) and are the fallback for records while the engine is being rebuilt.

The postings' BM25 is Okapi BM25 exactly as rank_bm25.BM25Okapi computes it (k1 1.5, b 0.75, negative idf
replaced by epsilon 0.25 times the average idf); tests check the scores against rank_bm25.
WAL mode: a reader sees the index before or after a normalizer run, never half of one.
`cortex reindex` rebuilds the whole file from records/ in one transaction.
"""
import json
import math
import os
import sqlite3
from collections import Counter

SCHEMA_VERSION = "3"
K1, B, EPSILON = 1.5, 0.75, 0.25

DDL = """
CREATE TABLE IF NOT EXISTS records(
  id TEXT PRIMARY KEY, scope TEXT NOT NULL, scope_id TEXT NOT NULL, project TEXT, type TEXT NOT NULL,
  status TEXT NOT NULL, text TEXT NOT NULL, confidence REAL, salience REAL, pinned INTEGER, priority INTEGER,
  created TEXT, updated TEXT, times TEXT, tokens INTEGER, files TEXT, branch TEXT, plan TEXT,
  sessions TEXT, path TEXT, doclen INTEGER, file_state TEXT);
DROP INDEX IF EXISTS records_scope;
DROP INDEX IF EXISTS records_scope_type;
CREATE INDEX IF NOT EXISTS records_light ON records(scope_id, status, type, updated, scope, id);
DROP INDEX IF EXISTS records_doclen;
CREATE INDEX IF NOT EXISTS records_hit ON records(id, doclen, scope, scope_id, type, status);
CREATE TABLE IF NOT EXISTS postings(term TEXT NOT NULL, id TEXT NOT NULL, tf INTEGER NOT NULL, dl INTEGER NOT NULL,
  PRIMARY KEY(term, dl, tf, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS postings_id ON postings(id);
CREATE TABLE IF NOT EXISTS terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS terms_df ON terms(df);
CREATE TABLE IF NOT EXISTS sessions(session TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY(session, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_id ON sessions(id);
CREATE TABLE IF NOT EXISTS candidates(scope_id TEXT NOT NULL, rank INTEGER NOT NULL, id TEXT NOT NULL,
  PRIMARY KEY(scope_id, rank)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS candidates_ranked(scope_id TEXT PRIMARY KEY, full_at REAL NOT NULL, active INTEGER)
  WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS unranked(scope_id TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY(scope_id, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS search_outbox(seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, key TEXT NOT NULL,
  doc TEXT);
"""


PASSAGES_DDL = """
CREATE TABLE IF NOT EXISTS passages(rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, session TEXT NOT NULL,
  anchor INTEGER NOT NULL, project TEXT, client TEXT, at TEXT, first_turn INTEGER, last_turn INTEGER, path TEXT);
CREATE INDEX IF NOT EXISTS passages_session ON passages(session, anchor);
CREATE INDEX IF NOT EXISTS passages_project ON passages(project);
"""
# the passage search of releases before the engine (SQLite FTS5): dropped when a writer opens such an index
OLD_PASSAGE_TABLES = ("passages_fts", "passage_terms")


def iso_to_epoch(ts: str) -> float:
    from datetime import datetime
    if not ts:
        return 0.0
    s = ts.strip().replace("Z", "+00:00")
    try:
        d = datetime.fromisoformat(s)
    except ValueError:
        try:
            d = datetime.fromisoformat(s[:19])
        except ValueError:
            return 0.0
    if d.tzinfo is None:
        from datetime import timezone
        d = d.replace(tzinfo=timezone.utc)
    return d.timestamp()


def _roll_back_hot_journal(path: str):
    """A rollback journal beside the index is "hot" when the process writing it died mid-transaction (a
    SIGKILL while an index of an older release was switched to WAL): SQLite puts the old pages back on the
    next read, but only through a connection that may write, so every read-only reader failed with "attempt
    to write a readonly database" until then (issue #18, a killed `cortex import`).  Opening it read-write
    once lets SQLite roll back what is hot, and leaves alone a journal a live writer holds."""
    if not os.path.exists(path + "-journal"):
        return
    try:
        con = sqlite3.connect(path, timeout=2.0)
        try:
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        pass  # not ours to fix here: the reader's own error says what is wrong


def connect(path: str, readonly: bool = False, migrate: bool = True) -> sqlite3.Connection:
    if readonly:
        _roll_back_hot_journal(path)
        con = sqlite3.connect("file:%s?mode=ro" % path.replace("?", "%3f"), uri=True, timeout=2.0)
        con.execute("PRAGMA mmap_size=0")  # no memory-mapped reads: a full disk must not raise SIGBUS (defect 10)
    else:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if not os.path.exists(path) or not has_tables(path):
            create(path)
        con = sqlite3.connect(path, timeout=10.0)
        con.execute("PRAGMA mmap_size=0")
        mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":  # readers must never wait for a writer, nor see half a write
            con.close()
            raise sqlite3.OperationalError("disk I/O error: the index %s could not be switched to WAL mode "
                                           "(journal mode %s)" % (path, mode))
        con.execute("PRAGMA synchronous=NORMAL")
        # the bytes of a deleted row (a record's text after `forget --hard`, the old version of a re-indexed
        # record) are overwritten with zeros instead of staying in free space; SQLite's default is off unless
        # it was compiled with SQLITE_SECURE_DELETE
        con.execute("PRAGMA secure_delete=ON")
        con.executescript(DDL)
        con.executescript(PASSAGES_DDL)
        _drop_old_passage_search(con)
        cols = {r[1] for r in con.execute("PRAGMA table_info(records)")}
        if "file_state" not in cols:  # an index from before reality checks: add the column in place
            con.execute("ALTER TABLE records ADD COLUMN file_state TEXT")
        if migrate and not has_postings_dl(con):
            _migrate_postings(con)
        if "active" not in {r[1] for r in con.execute("PRAGMA table_info(candidates_ranked)")}:
            # a development version without the scope size: it only says when to re-rank, so start over
            con.executescript("DROP TABLE candidates_ranked; " + DDL)
    return con


def _drop_old_passage_search(con):
    """An index of a release that searched passages with FTS5: its tables go (the engine replaces them and
    is built from the episode files by the next rebuild_search)."""
    old = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name IN (%s)"
                                     % ",".join("?" * len(OLD_PASSAGE_TABLES)), OLD_PASSAGE_TABLES)]
    for name in old:
        try:
            con.execute("DROP TABLE IF EXISTS %s" % name)
        except sqlite3.OperationalError:  # a SQLite without FTS5 cannot drop the virtual table; it stays unused
            pass
    if old:
        con.commit()
        try:  # their pages (most of such a file: 0.75 GB at a million passages) back to the disk, once
            con.execute("VACUUM")
        except sqlite3.OperationalError:  # a reader mid-query, or no room for the copy: the pages are reused
            pass


def has_tables(path: str) -> bool:
    """Whether the database at `path` has any table (a file a full disk cut while it was being created has
    none: SQLite wrote its first page and no schema)."""
    try:
        con = sqlite3.connect("file:%s?mode=ro" % path.replace("?", "%3f"), uri=True, timeout=10.0)
        try:
            return bool(con.execute("SELECT count(*) FROM sqlite_master WHERE type='table'").fetchone()[0])
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return True  # unreadable for another reason (locked, not a database): not ours to replace here


def create(path: str):
    """Create the index with its whole schema in a temp file beside it, then rename it into place, so a
    full disk never leaves a database without tables where the index should be (issue #18, defect 9).
    Replaces a table-less file, and any WAL left beside it (it would be replayed into the new file).

    The temp file is written with SQLite's rollback journal, not WAL: a full disk then fails the commit
    itself with "database or disk is full" (the normalizer keeps its events for the next run), where a WAL
    that could not be checkpointed on close went unnoticed by SQLite and failed the session with a
    plain error (its event was quarantined).  The schema committed, the temp file is switched to WAL, so the
    file that is renamed into place needs no further change of its first page."""
    folder = os.path.dirname(path)
    tmp = os.path.join(folder, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    try:
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(tmp + suffix):
                os.unlink(tmp + suffix)
        con = sqlite3.connect(tmp)
        try:
            os.chmod(tmp, 0o600)
            con.execute("PRAGMA journal_mode=DELETE")
            con.executescript(DDL)
            con.commit()
            # WAL before the rename: switching the index in place rewrote its first page under a rollback
            # journal, and a kill in between left that journal hot beside the index for every reader
            if str(con.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower() != "wal":
                raise sqlite3.OperationalError("disk I/O error: the new index %s could not be switched to WAL "
                                               "mode" % tmp)
        finally:
            con.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        for suffix in ("-wal", "-shm", "-journal"):  # a hot journal of the old file would be played into the new
            try:
                os.unlink(path + suffix)
            except FileNotFoundError:
                pass
        os.replace(tmp, path)
    except BaseException:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(tmp + suffix)
            except OSError:
                pass
        raise


def has_postings_dl(con) -> bool:
    """Whether the postings carry their record's length (dl), grouped by (term, dl, tf): an index built
    before that has postings(term, id, tf) keyed by (term, id)."""
    return "dl" in {r[1] for r in con.execute("PRAGMA table_info(postings)")}


POSTINGS_DDL = ("CREATE TABLE postings(term TEXT NOT NULL, id TEXT NOT NULL, tf INTEGER NOT NULL, dl INTEGER NOT NULL, "
                "PRIMARY KEY(term, dl, tf, id)) WITHOUT ROWID")


def _migrate_postings(con):
    """Rebuild an older index's postings in the current form, in one transaction (each record's length
    comes from its row).  Readers of the old form keep working until it commits (WAL)."""
    con.execute("BEGIN IMMEDIATE")
    try:
        if not has_postings_dl(con):  # another writer may have done it while this one waited
            con.execute("DROP TABLE IF EXISTS postings_migrating")
            con.execute(POSTINGS_DDL.replace("TABLE postings", "TABLE postings_migrating"))
            con.execute("INSERT INTO postings_migrating(term, id, tf, dl) SELECT p.term, p.id, p.tf, "
                        "COALESCE(r.doclen, 0) FROM postings p JOIN records r ON r.id=p.id ORDER BY 1, 4, 3, 2")
            con.execute("DROP TABLE postings")
            con.execute("ALTER TABLE postings_migrating RENAME TO postings")
            con.execute("CREATE INDEX IF NOT EXISTS postings_id ON postings(id)")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def index_text(rec: dict) -> str:
    """What BM25 sees of a record: its text, type, and the names of the files it mentions."""
    files = " ".join(rec.get("files") or [])
    return "%s %s %s" % (rec.get("type", ""), rec.get("text", ""), files)


def activation_times(rec: dict) -> list:
    return sorted(iso_to_epoch(t) for t in list(rec.get("seen") or [rec.get("created")]) + list(rec.get("used") or []))


INSERT_RECORD = "INSERT INTO records VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"


def record_sessions(rec: dict) -> list:
    return sorted({p.get("session") for p in rec.get("provenance") or [] if p.get("session")})


def relative_path(root: str, path: str) -> str:
    """A record file's path as the index stores it: relative to the home `root` ('/' separated), so a copied
    or moved home never names another home's files (Home.record_file reads it back)."""
    if not path or not os.path.isabs(path):
        return path
    return os.path.relpath(path, root).replace(os.sep, "/")


def record_row(rec: dict, path: str, doclen: int, sessions: list) -> tuple:
    """The `records` row of a record (its ranking fields, activation times, file path relative to the home,
    BM25 length)."""
    return (rec["id"], rec["scope"], rec["scope_id"], rec.get("project"), rec["type"], rec.get("status", "active"),
            rec["text"], float(rec.get("confidence", 0.5)), float(rec.get("salience", 0.5)),
            1 if rec.get("pinned") else 0, int(rec.get("priority", 0) or 0), rec.get("created"), rec.get("updated"),
            json.dumps(activation_times(rec)), int(rec.get("tokens", 0) or 0), json.dumps(rec.get("files") or []),
            rec.get("branch"), json.dumps(rec.get("plan")) if rec.get("plan") is not None else None,
            json.dumps(sessions), path, doclen,
            json.dumps(rec["file_state"], sort_keys=True) if rec.get("file_state") else None)


class Index:
    """A writer of the index.  Rows of records and passages go to SQLite; what the search engine must mirror
    goes to its outbox in the same transaction, and `commit` applies the outbox to the engine after the
    SQLite commit (store/search.py), unless `flush_search` is False (the normalizer flushes once a run)."""

    def __init__(self, path: str, migrate: bool = True, flush_search: bool = True):
        self.path = path
        self.root = os.path.dirname(os.path.dirname(os.path.abspath(path)))  # the home: <home>/index/cortex.sqlite
        self.con = connect(path, migrate=migrate)
        self.stats_changed = False  # whether postings or lengths changed since opening (finish recomputes)
        self.flush_search = flush_search
        self.queued = False  # whether this writer added to the search outbox

    def close(self):
        self.con.close()

    def truncate_wal(self) -> bool:
        """Checkpoint the WAL into the file and empty it, so the text of deleted rows is left in neither
        (while another process holds the index open SQLite keeps the WAL, and its older frames hold the
        old pages).  False when a reader mid-query blocked it: the last process to close the index then
        does it.  Waits at most 2 s for readers, whose queries take milliseconds."""
        self.con.execute("PRAGMA busy_timeout=2000")
        return self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0

    def _remove(self, rec_id: str, postings: bool = True, search: bool = True):
        old = self.con.execute("SELECT scope_id FROM records WHERE id=?", (rec_id,)).fetchone()
        if old is not None:  # its scope's shortlist may hold it: ranked again
            self.con.execute("INSERT OR IGNORE INTO unranked VALUES(?,?)", (old[0], rec_id))
            if search:
                from cortex.store.search import queue_delete
                queue_delete(self.con, "records", [rec_id])
                self.queued = True
        if postings:
            cur = self.con.execute("SELECT term FROM postings WHERE id=?", (rec_id,))
            terms = [r[0] for r in cur]
            if terms:
                self.con.executemany("UPDATE terms SET df=df-1 WHERE term=?", [(t,) for t in terms])
                self.con.execute("DELETE FROM postings WHERE id=?", (rec_id,))
        n = self.con.execute("DELETE FROM records WHERE id=?", (rec_id,)).rowcount
        self.con.execute("DELETE FROM sessions WHERE id=?", (rec_id,))
        if postings and n:
            self.stats_changed = True

    def _same_postings(self, rec_id: str, tf: Counter, dl: int) -> bool:
        """Whether the index already holds this record with these postings and this length (a use, a status
        or a confidence changed, not the words): then its postings and the terms' counts stay as they are."""
        row = self.con.execute("SELECT doclen FROM records WHERE id=?", (rec_id,)).fetchone()
        if row is None or row[0] != dl:
            return False
        have = self.con.execute("SELECT term, tf, dl FROM postings WHERE id=?", (rec_id,)).fetchall()
        return len(have) == len(tf) and all(tf.get(t) == n and d == dl for t, n, d in have)

    def upsert(self, rec: dict, path: str, tokenize):
        toks = tokenize(index_text(rec))
        tf = Counter(toks)
        same = self._same_postings(rec["id"], tf, len(toks))
        fields = search_fields(rec)
        old = self.con.execute("SELECT scope_id, status, type FROM records WHERE id=?", (rec["id"],)).fetchone()
        self._remove(rec["id"], postings=not same, search=False)
        sessions = record_sessions(rec)
        self.con.execute(INSERT_RECORD, record_row(rec, relative_path(self.root, path), len(toks), sessions))
        self.con.execute("INSERT OR IGNORE INTO unranked VALUES(?,?)", (rec["scope_id"], rec["id"]))
        if not same or old is None or tuple(old) != (fields["scope"], fields["status"], fields["type"]):
            from cortex.store.search import queue_put
            queue_put(self.con, "records", rec["id"], fields, toks)
            self.queued = True
        if not same:
            self.stats_changed = True
        if tf and not same:
            dl = len(toks)
            self.con.executemany("INSERT INTO postings VALUES(?,?,?,?)", [(t, rec["id"], n, dl) for t, n in tf.items()])
            self.con.executemany("INSERT INTO terms VALUES(?,1) ON CONFLICT(term) DO UPDATE SET df=df+1",
                                 [(t,) for t in tf])
        if sessions:
            self.con.executemany("INSERT OR IGNORE INTO sessions VALUES(?,?)", [(s, rec["id"]) for s in sessions])

    def delete(self, rec_id: str):
        self._remove(rec_id)

    def ids(self) -> set:
        return {r[0] for r in self.con.execute("SELECT id FROM records")}

    def finish(self, built_at: str = None):
        """Recompute the corpus statistics BM25 needs; call once after a batch of upserts."""
        con = self.con
        old = read_meta(con)
        if not self.stats_changed and old.get("schema") == SCHEMA_VERSION and all(
                k in old for k in ("N", "total_len", "idf_sum", "vocab")):
            # no posting, length or record count changed since this Index was opened: the statistics
            # (a function of those alone) are what they were; only the build time moves
            meta = {"schema": SCHEMA_VERSION}
        else:
            con.execute("DELETE FROM terms WHERE df<=0")
            n, total = con.execute("SELECT COUNT(*), COALESCE(SUM(doclen),0) FROM records").fetchone()
            idf_sum, vocab = corpus_idf_sum(con, n)
            meta = {"schema": SCHEMA_VERSION, "N": n, "total_len": total, "idf_sum": idf_sum, "vocab": vocab}
        if built_at:
            meta["built_at"] = built_at
        con.executemany("INSERT OR REPLACE INTO meta VALUES(?,?)", [(k, str(v)) for k, v in meta.items()])

    def set_candidates(self, scope_id: str, ids: list):
        self.con.execute("DELETE FROM candidates WHERE scope_id=?", (scope_id,))
        self.con.executemany("INSERT INTO candidates VALUES(?,?,?)", [(scope_id, i, rid) for i, rid in enumerate(ids)])

    def commit(self):
        self.con.commit()
        # what this writer queued, or what a writer killed before its flush left
        if self.flush_search and (self.queued or self.con.execute("SELECT 1 FROM search_outbox LIMIT 1").fetchone()):
            try:
                self.flush()
            except Exception as e:  # the rows are committed and the outbox keeps the rest: the next flush applies it
                from cortex.core.home import Home
                from cortex.core.log import get_logger
                get_logger(Home(self.root), component="index").warning(
                    "search_flush_failed", error="%s: %s" % (type(e).__name__, e),
                    hint="the search index catches up at the next cortex-normalize run")

    def flush(self, wait_merges: bool = False) -> dict:
        """Apply the search outbox to the engine (store/search.py) now."""
        from cortex.store.search import flush
        self.queued = False
        return flush(self.con, self.path, wait_merges=wait_merges)


def search_fields(rec: dict) -> dict:
    """The fields the search engine filters a record by."""
    return {"scope": rec["scope_id"], "status": rec.get("status", "active"), "type": rec["type"]}


def put_passages(con, session: str, rows: list, since: int = 1):
    """Replace the passages of this session that hold a turn >= since by `rows`
    [(anchor, project, client, at, first, last, path, terms)], the search engine's copy through its
    outbox.  No commit."""
    from cortex.store.search import queue_put
    old = [r[0] for r in con.execute("SELECT rid FROM passages WHERE session=? AND last_turn>=?", (session, since))]
    _drop_passages(con, old)
    for anchor, project, client, at, first, last, path, terms in rows:
        pid = "%s:%d" % (session, anchor)
        _drop_passages(con, [r[0] for r in con.execute("SELECT rid FROM passages WHERE id=?", (pid,))])
        con.execute("INSERT INTO passages(id, session, anchor, project, client, at, first_turn, last_turn, path) "
                    "VALUES(?,?,?,?,?,?,?,?,?)", (pid, session, anchor, project, client, at, first, last, path))
        queue_put(con, "passages", pid, {"project": project, "session": session}, terms)


def _drop_passages(con, rids: list):
    """Delete these passages, and their documents from the search engine (through its outbox)."""
    from cortex.store.search import queue_delete
    for i in range(0, len(rids), 500):
        chunk = rids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        queue_delete(con, "passages", [r[0] for r in con.execute("SELECT id FROM passages WHERE rid IN (%s)" % marks,
                                                                 chunk)])
        con.execute("DELETE FROM passages WHERE rid IN (%s)" % marks, chunk)


def delete_passages(con, session: str = None, project: str = None) -> int:
    """Remove the passages of a session (or of every session of a project).  No commit."""
    where, arg = ("session=?", session) if session is not None else ("project=?", project)
    rids = [r[0] for r in con.execute("SELECT rid FROM passages WHERE %s" % where, (arg,))]
    _drop_passages(con, rids)
    return len(rids)


PASSAGE_COLUMNS = ("id", "session", "anchor", "project", "client", "at", "first_turn", "last_turn", "path")


def passage_scores(con, terms: list, projects=None, limit: int = 50, min_score: float = None,
                   reader=None) -> list:
    """[(bm25, passage row dict)] of the best `limit` passages holding a query term, best first (ties by
    id), scored by the search engine (store/search.py: Okapi BM25, k1 1.2, b 0.75); only these projects
    when given, only those scoring min_score or more when given.  [] when the engine cannot be read
    (`reader`: an open passages Reader; else one is opened next to `con`'s database)."""
    if not terms or limit < 1:
        return []
    if projects is not None:
        projects = sorted(projects)
        if not projects:
            return []
    if reader is None:
        from cortex.store.search import open_reader
        reader = open_reader(_db_path(con), "passages")
        if reader is None:
            return []
    hits = reader.top(terms, limit, {"project": projects} if projects is not None else None)
    hits = [(s, key) for s, key in hits if min_score is None or s >= min_score]
    if not hits:
        return []
    rows = {}
    keys = [key for _, key in hits]
    for i in range(0, len(keys), 500):
        chunk = keys[i:i + 500]
        for r in con.execute("SELECT %s FROM passages WHERE id IN (%s)" % (", ".join(PASSAGE_COLUMNS),
                                                                            ",".join("?" * len(chunk))), chunk):
            rows[r[0]] = dict(zip(PASSAGE_COLUMNS, r))
    # a document whose row is gone (a delete the engine has not applied yet) is not a hit
    return [(s, rows[key]) for s, key in hits if key in rows]


def _db_path(con) -> str:
    """The file of `con`'s main database."""
    for _, name, path in con.execute("PRAGMA database_list"):
        if name == "main":
            return path
    raise sqlite3.OperationalError("no main database")


def record_hits(con, terms: list, n: int, scopes=None, statuses=("active",), types=None, reader="open") -> list:
    """[(bm25, id)] of the best n records holding a query term, best first (ties by id), among those of
    these scope ids, statuses and types (None: any).  Scored by the search engine (store/search.py; Okapi
    BM25, k1 1.2); while its records folder is being rebuilt, by the postings here (rank_bm25's scores,
    slower on a large home).  `reader`: an open records Reader, None for the postings, or "open"."""
    if not terms or n < 1:
        return []
    for given in (scopes, statuses, types):
        if given is not None and not list(given):
            return []
    if reader == "open":
        from cortex.store.search import open_reader
        reader = open_reader(_db_path(con), "records")
    if reader is not None:
        filters = {}
        for name, given in (("scope", scopes), ("status", statuses), ("type", types)):
            if given is not None:
                filters[name] = sorted(given)
        return reader.top(terms, n, filters)
    scopes, statuses, types = [None if x is None else set(x) for x in (scopes, statuses, types)]
    out = []
    for batch in batches(descending(bm25_scores(con, terms)), first=max(64, n)):
        ids = sorted(rid for _, rid in batch)
        ok = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            for rid, sid, status, rtype in con.execute("SELECT id, scope_id, status, type FROM records WHERE id IN (%s)"
                                                       % ",".join("?" * len(chunk)), chunk):
                if (scopes is None or sid in scopes) and (statuses is None or status in statuses) and (
                        types is None or rtype in types):
                    ok.add(rid)
        out += [(b, rid) for b, rid in batch if rid in ok]
        if len(out) >= n and batch[-1][0] < sorted(out, key=lambda h: (-h[0], h[1]))[n - 1][0]:
            break
    out.sort(key=lambda h: (-h[0], h[1]))
    return out[:n]


def corpus_idf_sum(con, n: int):
    """(sum of every term's idf, number of terms), the average idf rank_bm25's epsilon floor needs.
    Terms are grouped by document frequency in SQL (over the terms_df index: no sort), so this costs one
    pass in C and one log per distinct df (a few hundred), not one Python step per term."""
    idf_sum, vocab = 0.0, 0
    for df, count in con.execute("SELECT df, COUNT(*) FROM terms GROUP BY df"):
        idf_sum += count * (math.log(n - df + 0.5) - math.log(df + 0.5))
        vocab += count
    return idf_sum, vocab


def read_meta(con) -> dict:
    return {k: v for k, v in con.execute("SELECT key, value FROM meta")}


_TERM_SCORES = ("SELECT p.id, ? * (p.tf * ? / (p.tf + ? * (? + ? * r.doclen / ?))) "
                "FROM postings p JOIN records r %s ON r.id=p.id WHERE p.term=?")
_DOCLEN_INDEX = "INDEXED BY records_hit"  # covering: one index seek per posting, not index + table
_GROUPS = "SELECT dl, tf, COUNT(*), group_concat(id, ' ') FROM postings WHERE term=? GROUP BY dl, tf"


def bm25_scores(con, terms: list, ids_filter=None) -> dict:
    """BM25Okapi scores of every record that contains a query term.  Repeated query terms count again,
    as in rank_bm25.  Records without any query term score 0 and are not returned.

    A term's score in a record depends only on the record's term frequency (tf) and length (dl), and
    the postings are stored grouped by (term, dl, tf): each group's score is computed once, with the same
    operations in the same order as rank_bm25 (IEEE doubles, so the values are the same to the bit), and
    its record ids come in one string per group, so no Python object is made per posting but the id.
    The scores are summed in query term order.  An index from before the grouped postings is scored
    through a join with the records' lengths (the same values, slower)."""
    meta = read_meta(con)
    n = int(meta.get("N", 0))
    if not n or not terms:
        return {}
    avgdl = float(meta.get("total_len", 0)) / n or 1.0
    vocab = int(meta.get("vocab", 0)) or 1
    eps = EPSILON * float(meta.get("idf_sum", 0.0)) / vocab
    grouped = has_postings_dl(con)
    scores = {}
    get = scores.get
    for term, qn in Counter(terms).items():
        row = con.execute("SELECT df FROM terms WHERE term=?", (term,)).fetchone()
        if not row:
            continue
        df = row[0]
        idf = math.log(n - df + 0.5) - math.log(df + 0.5)
        if idf < 0:
            idf = eps
        if not grouped:
            _add_joined(con, scores, term, qn, idf, avgdl, ids_filter)
            continue
        for dl, tf, count, ids in con.execute(_GROUPS, (term,)):
            # idf * (tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))), left to right as rank_bm25
            s = idf * (tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl)))
            if qn != 1:
                s = qn * s
            ids = ids.split(" ")
            if len(ids) != count:  # an id with a space (not a record id): read this group row by row
                ids = [r[0] for r in con.execute("SELECT id FROM postings WHERE term=? AND dl=? AND tf=?",
                                                 (term, dl, tf))]
            if ids_filter is not None:
                ids = [rid for rid in ids if rid in ids_filter]
            for rid in ids:
                scores[rid] = get(rid, 0.0) + s
    return scores


def _add_joined(con, scores: dict, term: str, qn: int, idf: float, avgdl: float, ids_filter):
    """One term's scores added to `scores`, from postings without their record lengths (an older index)."""
    get = scores.get
    args = (idf, K1 + 1, K1, 1 - B, B, avgdl, term)
    try:
        cur = con.execute(_TERM_SCORES % _DOCLEN_INDEX, args)
    except sqlite3.OperationalError:  # an index built before records_hit existed
        cur = con.execute(_TERM_SCORES % "", args)
    for rid, s in cur:
        if ids_filter is not None and rid not in ids_filter:
            continue
        scores[rid] = get(rid, 0.0) + qn * s


def descending(scores: dict):
    """(score, id) of every entry of `scores`, best first (ties in any order), sorted in bands from the
    top down so that a caller that stops early never sorts the long tail of weak hits."""
    if not scores:
        return
    items = scores.items()
    hi = float("inf")
    cut = max(scores.values()) * 0.5
    for _ in range(3):
        band = [(b, rid) for rid, b in items if cut <= b < hi]
        band.sort(reverse=True)
        yield from band
        hi, cut = cut, cut * 0.5
    band = [(b, rid) for rid, b in items if b < hi]
    band.sort(reverse=True)
    yield from band


def batches(it, first: int = 256, most: int = 1024):
    """Lists of the items of `it`, of growing size (first, twice that, ... up to most)."""
    batch, size = [], first
    for x in it:
        batch.append(x)
        if len(batch) >= size:
            yield batch
            batch, size = [], min(size * 2, most)
    if batch:
        yield batch
