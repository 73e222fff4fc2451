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
  passages_fts SQLite FTS5 over the passages' terms (Cortex's tokenizer, one FTS5 token per term), scored
               by FTS5's bm25(); chosen over the postings tables for scale (docs/benchmarks.md)
  passage_terms  FTS5 token -> how many passages hold it (FTS5 keeps no such count; store.fts_topk needs it to
               bound scores), valid while meta's `passage_terms` stamp equals FTS5's own row and token totals

BM25 is Okapi BM25 exactly as rank_bm25.BM25Okapi computes it (k1 1.5, b 0.75, negative idf
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
"""


PASSAGES_DDL = """
CREATE TABLE IF NOT EXISTS passages(rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, session TEXT NOT NULL,
  anchor INTEGER NOT NULL, project TEXT, client TEXT, at TEXT, first_turn INTEGER, last_turn INTEGER, path TEXT);
CREATE INDEX IF NOT EXISTS passages_session ON passages(session, anchor);
CREATE INDEX IF NOT EXISTS passages_project ON passages(project);
CREATE TABLE IF NOT EXISTS passage_terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""
FTS_DDL = "CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(body, tokenize='ascii')"


def fts_term(term: str) -> str:
    """One Cortex term as one FTS5 token: plain ASCII letters and digits as they are, anything else
    (paths, dotted names, versions, other scripts) as its UTF-8 hex behind a marker, so FTS5's ascii
    tokenizer never splits or folds it."""
    if term.isascii() and term.isalnum():
        return term
    return "zx" + term.encode("utf-8", "surrogatepass").hex()


def has_fts(con) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE name='passages_fts'").fetchone() is not None


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


def connect(path: str, readonly: bool = False, migrate: bool = True) -> sqlite3.Connection:
    if readonly:
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
        try:
            con.execute(FTS_DDL)
        except sqlite3.OperationalError:  # a SQLite built without FTS5: records only (doctor says so)
            pass
        cols = {r[1] for r in con.execute("PRAGMA table_info(records)")}
        if "file_state" not in cols:  # an index from before reality checks: add the column in place
            con.execute("ALTER TABLE records ADD COLUMN file_state TEXT")
        if migrate and not has_postings_dl(con):
            _migrate_postings(con)
        if "active" not in {r[1] for r in con.execute("PRAGMA table_info(candidates_ranked)")}:
            # a development version without the scope size: it only says when to re-rank, so start over
            con.executescript("DROP TABLE candidates_ranked; " + DDL)
        if migrate and has_fts(con):
            from cortex.store.fts_topk import terms_stamp
            if terms_stamp(con) is None:
                _count_passage_terms(con)
    return con


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
    plain error (its event was quarantined).  `connect` switches the file to WAL when it opens it."""
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
        finally:
            con.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        for suffix in ("-wal", "-shm"):
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
    def __init__(self, path: str, migrate: bool = True):
        self.path = path
        self.root = os.path.dirname(os.path.dirname(os.path.abspath(path)))  # the home: <home>/index/cortex.sqlite
        self.con = connect(path, migrate=migrate)
        self.stats_changed = False  # whether postings or lengths changed since opening (finish recomputes)

    def close(self):
        self.con.close()

    def truncate_wal(self) -> bool:
        """Checkpoint the WAL into the file and empty it, so the text of deleted rows is left in neither
        (while another process holds the index open SQLite keeps the WAL, and its older frames hold the
        old pages).  False when a reader mid-query blocked it: the last process to close the index then
        does it.  Waits at most 2 s for readers, whose queries take milliseconds."""
        self.con.execute("PRAGMA busy_timeout=2000")
        return self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0

    def _remove(self, rec_id: str, postings: bool = True):
        old = self.con.execute("SELECT scope_id FROM records WHERE id=?", (rec_id,)).fetchone()
        if old is not None:  # its scope's shortlist may hold it: ranked again
            self.con.execute("INSERT OR IGNORE INTO unranked VALUES(?,?)", (old[0], rec_id))
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
        self._remove(rec["id"], postings=not same)
        sessions = record_sessions(rec)
        self.con.execute(INSERT_RECORD, record_row(rec, relative_path(self.root, path), len(toks), sessions))
        self.con.execute("INSERT OR IGNORE INTO unranked VALUES(?,?)", (rec["scope_id"], rec["id"]))
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


def put_passages(con, session: str, rows: list, since: int = 1):
    """Replace the passages of this session that hold a turn >= since by `rows`
    [(anchor, project, client, at, first, last, path, terms)].  No commit."""
    fts = has_fts(con)
    count = [Counter(), 0, 0]  # passage_terms' changes: [held, rows, tokens], the drops' and the adds' together
    old = [r[0] for r in con.execute("SELECT rid FROM passages WHERE session=? AND last_turn>=?", (session, since))]
    _drop_passages(con, old, fts, count)
    for anchor, project, client, at, first, last, path, terms in rows:
        pid = "%s:%d" % (session, anchor)
        gone = [r[0] for r in con.execute("SELECT rid FROM passages WHERE id=?", (pid,))]
        _drop_passages(con, gone, fts, count)
        cur = con.execute("INSERT INTO passages(id, session, anchor, project, client, at, first_turn, last_turn, path) "
                          "VALUES(?,?,?,?,?,?,?,?,?)", (pid, session, anchor, project, client, at, first, last, path))
        if fts:
            body = " ".join(fts_term(t) for t in terms)
            con.execute("INSERT INTO passages_fts(rowid, body) VALUES(?,?)", (cur.lastrowid, body))
            words = body.lower().split()
            count[0].update(set(words))
            count[1] += 1
            count[2] += len(words)
    if count[1] or count[2] or any(count[0].values()):
        _add_passage_terms(con, *count)


BIG_DROP = 2000  # passages deleted at once above which passage_terms is counted again whole (next writer)


def _drop_passages(con, rids: list, fts: bool, count: list = None):
    """Delete these passages; their terms come off passage_terms (added to `count`, [held, rows, tokens],
    when given: the caller applies it)."""
    if fts and len(rids) > BIG_DROP:
        drop_terms_stamp(con)  # recounted from FTS5 by the next writer's connect (store.index.connect)
    elif fts and rids:
        mine = count is None
        count = [Counter(), 0, 0] if mine else count
        for i in range(0, len(rids), 500):
            chunk = rids[i:i + 500]
            for (body,) in con.execute("SELECT body FROM passages_fts WHERE rowid IN (%s)" % ",".join("?" * len(chunk)),
                                       chunk):
                words = (body or "").lower().split()
                count[0].subtract(set(words))
                count[1] -= 1
                count[2] -= len(words)
        if mine and count[1]:
            _add_passage_terms(con, *count)
    for i in range(0, len(rids), 500):
        chunk = rids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        if fts:
            con.execute("DELETE FROM passages_fts WHERE rowid IN (%s)" % marks, chunk)
        con.execute("DELETE FROM passages WHERE rid IN (%s)" % marks, chunk)


# -- passage_terms: how many passages hold each FTS5 token ------------------------------------------------
#
# Kept by every writer of passages in the same transaction (put_passages, _drop_passages, reindex), with a
# stamp in meta: the (rows, tokens) totals of passages_fts the counts belong to.  A reader uses the counts
# only when the stamp equals FTS5's own totals (its averages record): a writer that did not keep them (an
# older Cortex) leaves a stamp that no longer matches, and readers count in FTS5 instead, until the next
# writer's connect recounts the table.

def drop_terms_stamp(con):
    """passage_terms no longer counts anything valid (readers count in FTS5; the next writer recounts it)."""
    from cortex.store.fts_topk import TERMS_STAMP
    con.execute("DELETE FROM meta WHERE key=?", (TERMS_STAMP,))


def _add_passage_terms(con, held: Counter, rows: int, tokens: int):
    """Add these counts (negative for deleted passages) and totals to passage_terms and its stamp; nothing
    when the table has no valid stamp (it is counted whole by the next writer's connect)."""
    from cortex.store.fts_topk import TERMS_STAMP, terms_stamp
    stamp = terms_stamp(con)
    if stamp is None:
        return
    held = [(t, d) for t, d in held.items() if d]
    con.executemany("INSERT INTO passage_terms(term, df) VALUES(?,?) ON CONFLICT(term) DO UPDATE SET df=df+excluded.df",
                    held)
    con.executemany("DELETE FROM passage_terms WHERE term=? AND df<=0", [(t,) for t, d in held if d < 0])
    con.execute("INSERT OR REPLACE INTO meta VALUES(?,?)", (TERMS_STAMP, "%d %d" % (stamp[0] + rows, stamp[1] + tokens)))


def set_passage_terms(con, rows: int = None, tokens: int = None):
    """Count passage_terms whole from FTS5 (its fts5vocab table, which sees this transaction's own
    changes) and stamp it with these totals, or, not given, FTS5's committed ones.  No commit."""
    from cortex.store.fts_topk import TERMS_STAMP, fts_totals
    con.execute("DELETE FROM passage_terms")
    con.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.passage_vocab USING fts5vocab(main, passages_fts, row)")
    con.execute("INSERT INTO passage_terms(term, df) SELECT term, doc FROM temp.passage_vocab")
    if rows is None:
        rows, tokens = fts_totals(con) or (0, 0)
    con.execute("INSERT OR REPLACE INTO meta VALUES(?,?)", (TERMS_STAMP, "%d %d" % (rows, tokens)))


def _count_passage_terms(con):
    """An index without valid passage_terms (from before them, or after a large delete): count them, in one
    transaction (seconds for a million passages; once)."""
    from cortex.store.fts_topk import terms_stamp
    con.execute("BEGIN IMMEDIATE")
    try:
        if terms_stamp(con) is None:  # another writer may have done it while this one waited
            set_passage_terms(con)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def delete_passages(con, session: str = None, project: str = None) -> int:
    """Remove the passages of a session (or of every session of a project).  No commit."""
    where, arg = ("session=?", session) if session is not None else ("project=?", project)
    rids = [r[0] for r in con.execute("SELECT rid FROM passages WHERE %s" % where, (arg,))]
    _drop_passages(con, rids, has_fts(con))
    return len(rids)


def scrub_passages(con):
    """After a hard delete: merge the FTS5 index into one segment, so the terms of deleted passages are in
    no segment any more (FTS5 deletes only add delete markers; this SQLite has no secure-delete option for
    FTS5).  Rewrites the whole FTS5 index: seconds for a million passages; forget --hard and reset only."""
    if has_fts(con):
        con.execute("INSERT INTO passages_fts(passages_fts) VALUES('optimize')")


PASSAGE_COLUMNS = ("id", "session", "anchor", "project", "client", "at", "first_turn", "last_turn", "path")


def passage_scores(con, terms: list, projects=None, limit: int = 50, min_score: float = None) -> list:
    """[(bm25, passage row dict)] of the best `limit` passages holding a query term, best first (ties by
    rowid), by FTS5's bm25() (k1 1.2, b 0.75; sign turned so higher is better); only these projects when
    given, only those scoring min_score or more when given.  On a large table the same rows come from a
    narrower FTS5 expression when that can be shown to give them (store.fts_topk): a query of common words
    then scores a fraction of the passages."""
    if not terms or not has_fts(con):
        return []
    phrases = ['"%s"' % fts_term(t) for t in dict.fromkeys(terms)]
    cols = ", ".join("p." + c for c in PASSAGE_COLUMNS)
    where, args = "", []
    if projects is not None:
        projects = sorted(projects)
        if not projects:
            return []
        where = " AND p.project IN (%s)" % ",".join("?" * len(projects))
        args = projects
    # (CROSS JOIN: FTS5 drives the join; a lookup of passages_fts by rowid would run the query once a row)
    sql = ("SELECT -bm25(passages_fts) AS s, %s FROM passages_fts CROSS JOIN passages p ON p.rid=passages_fts.rowid "
           "WHERE passages_fts MATCH ?%s%s ORDER BY s DESC, p.rid LIMIT ?")
    only_sql = " AND p.rid IN (SELECT rowid FROM passages_fts WHERE passages_fts MATCH ?)"

    def run(expr, only=None):
        try:
            return con.execute(sql % (cols, only_sql if only else "", where),
                               [expr] + ([only] if only else []) + args + [int(limit)]).fetchall()
        except sqlite3.OperationalError:
            return None

    def probe(expr, n):
        return con.execute("SELECT passages_fts.rowid, passages_fts.body FROM passages_fts CROSS JOIN passages p ON "
                           "p.rid=passages_fts.rowid WHERE passages_fts MATCH ?%s ORDER BY bm25(passages_fts) LIMIT ?"
                           % where, [expr] + args + [int(n)]).fetchall()

    rows = None
    if len(phrases) > 1 and limit > 0:
        from cortex.store.fts_topk import narrowed
        try:
            rows = narrowed(con, phrases, int(limit), run, probe, min_score)
        except sqlite3.OperationalError:
            rows = None
    if rows is None:
        rows = run(" OR ".join(phrases)) or []
    return [(r[0], dict(zip(PASSAGE_COLUMNS, r[1:]))) for r in rows if min_score is None or r[0] >= min_score]


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
