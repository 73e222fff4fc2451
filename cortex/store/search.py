"""The search engine: records and episode passages in two tantivy indexes beside the SQLite index.

    <home>/index/search/records/    one document per record: key (its id), scope, status, type, body
    <home>/index/search/passages/   one document per passage: key (its id, session:anchor), project,
                                    session, body

`body` holds Cortex's own terms (store/terms.py: stemmed, identifiers kept whole, stopwords dropped),
one whitespace-separated token each, so the engine sees exactly the words the SQLite postings see; it
keeps term frequencies, not positions (no phrase queries are ever asked).  A query is the OR of its
terms scored by Okapi BM25 (k1 1.2, b 0.75, idf log(1 + (N - n + 0.5) / (n + 0.5))), with the filters
(scope, status, type, project) as zero-scored conditions; tantivy answers the best k with block-max
WAND, so a query of common words over a million passages reads a fraction of their postings (measured in
docs/benchmarks.md, "The search engine").  Why tantivy and not SQLite FTS5: the same document.

The SQLite index stays the truth of what exists; this engine is derived from it and kept in step through
an outbox: every writer of a record row or a passage row adds, in the same SQLite transaction, a row to
`search_outbox` (put: the document's fields; delete: none), and `flush` applies the outbox to the
engine in order, commits it, then deletes the applied rows.  A kill between the two commits applies the
same operations again, which gives the same documents (a put deletes its key first).  So nothing a
writer committed is ever missing from search for longer than until the next flush, and readers see
either the engine's last commit or the one before (tantivy swaps its meta file atomically).

An engine folder that is missing, unreadable, or built for another schema is rebuilt from the records'
rows and the episode files (store/indexer.py `rebuild_search`); meanwhile readers fall back to the
SQLite postings for records and find no passages (`cortex doctor` says so).
"""
import json
import os

KINDS = ("records", "passages")
SCHEMA_VERSION = "3"  # 2: the filter fields are stored too (Reader.top filters wide ones on the hits); 3: a passage
                      # a turn (episodes.passages): rebuilt from the episodes
WIDE_FILTER = 0.5          # filters that at least this share of documents pass are checked on the hits
WRITER_HEAP = 48_000_000   # bytes of the writer's indexing arena (tantivy's minimum is 15 MB a thread)
FLUSH_BATCH = 5000         # outbox rows read at a time


class SearchUnavailable(Exception):
    """The engine cannot be used here (tantivy missing, the folder missing or unreadable)."""


def root_of(index_db: str) -> str:
    """The engine's folder for an index file: <home>/index/search."""
    return os.path.join(os.path.dirname(os.path.abspath(index_db)), "search")


def folder(index_db: str, kind: str) -> str:
    return os.path.join(root_of(index_db), kind)


def _tantivy():
    try:
        import tantivy
    except ImportError as e:  # an install without the dependency: search degrades, doctor says why
        raise SearchUnavailable("the tantivy package is not importable (%s); reinstall Cortex: "
                                "pip install --force-reinstall cortex-memory" % e)
    return tantivy


# -- schema ------------------------------------------------------------------------------------------

FILTERS = {"records": ("scope", "status", "type"), "passages": ("project", "session")}


def schema(kind: str):
    tantivy = _tantivy()
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("key", stored=True, tokenizer_name="raw", index_option="basic")
    for name in FILTERS[kind]:
        sb.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
    return sb.build()


def _stamp_path(path: str) -> str:
    return os.path.join(path, "cortex-search.json")


def _read_stamp(path: str) -> dict:
    try:
        with open(_stamp_path(path), encoding="utf-8") as f:
            got = json.load(f)
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def usable(index_db: str, kind: str) -> bool:
    """Whether the engine folder of `kind` exists, was built for this schema and holds a complete build."""
    path = folder(index_db, kind)
    stamp = _read_stamp(path)
    return stamp.get("schema") == SCHEMA_VERSION and stamp.get("kind") == kind and bool(stamp.get("complete")) \
        and os.path.exists(os.path.join(path, "meta.json"))


# -- reading -------------------------------------------------------------------------------------------

class Reader:
    """One kind's engine opened for searching (cheap: tantivy maps the segment files)."""

    def __init__(self, index_db: str, kind: str, path: str = None):
        """`path`: a folder of the engine's own (the benchmarks), instead of the home's."""
        if path is None and not usable(index_db, kind):
            raise SearchUnavailable("the %s search index in %s is missing or incomplete; the next "
                                    "`cortex-normalize` run rebuilds it (or run `cortex reindex`)"
                                    % (kind, folder(index_db, kind)))
        tantivy = _tantivy()
        self.kind = kind
        self.path = path or folder(index_db, kind)
        last = None
        for _ in range(3):  # a writer's commit may remove the files of the meta this read: read it again
            try:
                self.index = tantivy.Index.open(self.path)
                self.searcher = self.index.searcher()
                break
            except BaseException as e:  # tantivy raises ValueError, or a PanicException (a BaseException)
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                last = e
        else:
            raise SearchUnavailable("the %s search index in %s cannot be read (%s: %s); run `cortex reindex`"
                                    % (kind, self.path, type(last).__name__, last))
        self.schema = self.index.schema

    def num_docs(self) -> int:
        return int(self.searcher.num_docs)

    def vocabulary(self) -> list:
        """Every term of the bodies in the engine's term dictionaries, those of deleted documents not yet
        merged away included (what `forget --hard` must leave none of), or None when this tantivy cannot
        list them (before 0.27)."""
        if not hasattr(self.searcher, "terms_with_prefix"):
            return None
        return sorted(t for t, _ in self.searcher.terms_with_prefix("body", ""))

    def query(self, terms: list, filters: dict = None):
        """The OR of the terms (a term given twice counts twice, as in rank_bm25), and each filter
        {field: [values]} as a condition that adds nothing to the score."""
        tantivy = _tantivy()
        counts = {}
        for t in terms:
            if t and not any(c.isspace() for c in t):
                counts[t] = counts.get(t, 0) + 1
        if not counts:
            return None
        should = []
        for t, n in counts.items():
            q = tantivy.Query.term_query(self.schema, "body", t)
            should.append((tantivy.Occur.Should, q if n == 1 else tantivy.Query.boost_query(q, float(n))))
        q = tantivy.Query.boolean_query(should)
        must = [(tantivy.Occur.Must, q)]
        for name, values in sorted((filters or {}).items()):
            values = sorted({str(v) for v in values if v is not None})
            if not values:
                return None  # nothing can pass an empty filter
            cond = tantivy.Query.term_set_query(self.schema, name, values)
            must.append((tantivy.Occur.Must, tantivy.Query.const_score_query(cond, 0.0)))
        return tantivy.Query.boolean_query(must) if len(must) > 1 else q

    def top(self, terms: list, n: int, filters: dict = None) -> list:
        """[(score, key)] of the best n documents that pass the filters, best first, ties by key.

        A filter most documents pass (the project of a home that holds one project, status active) is
        cheaper checked on the hits than in the query, where it keeps tantivy from skipping blocks (a
        third of the time of a passage search at a million passages): then the best few more than n are
        asked for without it and filtered here; if fewer than n pass, the filtered query runs."""
        if n < 1:
            return []
        filters = {k: v for k, v in (filters or {}).items() if v is not None}
        if filters and self.share(filters) >= WIDE_FILTER:
            m = int(n / self.share(filters) * 1.25) + 16
            res = self._search(self.query(terms), m)
            if res is not None:
                wanted = {k: {str(x) for x in v} for k, v in filters.items()}
                passed = [h for h in res if all(h[2].get(k) in vals for k, vals in wanted.items())]
                if len(passed) >= n or len(res) < m:  # every hit scoring as much as the n-th that passes was read
                    return [(s, key) for s, key, _ in passed[:n]]
        res = self._search(self.query(terms, filters), n)
        return [(s, key) for s, key, _ in (res or [])[:n]]

    def share(self, filters: dict) -> float:
        """The share of documents that pass the filters, taken as independent (deleted ones counted)."""
        total = max(self.num_docs(), 1)
        share = 1.0
        for name, values in filters.items():
            share *= min(1.0, sum(self.searcher.doc_freq(name, str(v)) for v in set(values)) / total)
        return share

    def _search(self, q, n: int):
        """[(score, key, {filter field: value})] of the best n for a query, best first, ties by key (tantivy
        orders ties by its own document order: the n-th score's ties are all read, then ordered by key)."""
        if q is None:
            return None
        m = int(n) + 16
        while True:
            res = self.searcher.search(q, m).hits
            if len(res) < m or len(res) <= n or res[-1][0] != res[n - 1][0]:
                break
            m *= 4
        if len(res) > n:  # only the n-th score's ties are needed beyond the first n
            res = [h for h in res if h[0] >= res[n - 1][0]]
        out = []
        for score, addr in res:
            doc = self.searcher.doc(addr).to_dict()
            out.append((float(score), doc["key"][0], {k: v[0] for k, v in doc.items() if k != "key" and v}))
        out.sort(key=lambda h: (-h[0], h[1]))
        return out


def content(index_db: str) -> dict:
    """What the engine holds, comparable between homes (the reliability tests compare a killed and rerun
    home with a clean one): per kind, the number of documents and, for each term of its dictionary that a
    live document holds, the keys of those documents; None for a kind whose folder is not usable.  The
    engine keeps no bodies, and a deleted document's terms stay in its dictionary until a merge, so terms
    held by no live document are left out.  Reads every term's postings: for tests and small homes."""
    out = {}
    for kind in KINDS:
        if not usable(index_db, kind):
            out[kind] = None
            continue
        reader = Reader(index_db, kind)
        terms = {}
        for t in reader.vocabulary() or []:
            keys = sorted(k for _, k in reader.top([t], 10 ** 7))
            if keys:
                terms[t] = keys
        out[kind] = {"docs": reader.num_docs(), "terms": terms}
    return out


def open_reader(index_db: str, kind: str, log=None):
    """A Reader, or None when the engine cannot be used (logged once per call with what to do)."""
    try:
        return Reader(index_db, kind)
    except SearchUnavailable as e:
        if log is not None:
            log.warning("search_unavailable", kind=kind, error=str(e))
        return None


# -- the outbox (writers) --------------------------------------------------------------------------------

# the table `search_outbox(seq, kind, key, doc)` is in store/index.py's schema

def queue_put(con, kind: str, key: str, fields: dict, body_terms: list):
    """In the caller's transaction: the document `key` of `kind` is to be (re)written with these filter
    fields and terms."""
    doc = dict({k: fields.get(k) for k in FILTERS[kind]}, body=" ".join(filter(None, body_terms)))
    con.execute("INSERT INTO search_outbox(kind, key, doc) VALUES(?,?,?)", (kind, key, json.dumps(doc)))


def queue_delete(con, kind: str, keys):
    con.executemany("INSERT INTO search_outbox(kind, key, doc) VALUES(?,?,NULL)", [(kind, k) for k in keys])


def pending(con) -> int:
    """Outbox rows not yet applied to the engine."""
    import sqlite3
    try:
        return con.execute("SELECT COUNT(*) FROM search_outbox").fetchone()[0]
    except sqlite3.Error:
        return 0


class Writer:
    """The engine's writer for one kind, in its folder; `commit` makes what was added visible."""

    def __init__(self, index_db: str, kind: str, heap: int = WRITER_HEAP, path: str = None):
        tantivy = _tantivy()
        self.kind = kind
        self.path = path or folder(index_db, kind)
        if path is None and not usable(index_db, kind):
            raise SearchUnavailable("the %s search index needs a rebuild" % kind)
        self.index = tantivy.Index.open(self.path) if path is None else tantivy.Index(schema(kind), path=self.path)
        self.tantivy = tantivy
        self.writer = self.index.writer(heap_size=heap, num_threads=1)
        self.changed = False

    def _doc(self, key: str, fields: dict, body: str):
        doc = self.tantivy.Document()
        doc.add_text("key", key)
        for name in FILTERS[self.kind]:
            value = fields.get(name)
            if value is not None:
                doc.add_text(name, str(value))
        doc.add_text("body", body or "")
        return doc

    def put(self, key: str, fields: dict, body: str):
        """Write the document `key`, replacing any earlier one."""
        self.delete(key)
        self.add(key, fields, body)

    def add(self, key: str, fields: dict, body: str):
        """A document known to be new (a rebuild): no delete first."""
        self.writer.add_document(self._doc(key, fields, body))
        self.changed = True

    def delete(self, key: str):
        if hasattr(self.writer, "delete_documents_by_term"):
            self.writer.delete_documents_by_term("key", key)
        else:  # tantivy-py before 0.27
            self.writer.delete_documents("key", key)
        self.changed = True

    def commit(self):
        if self.changed:
            self.writer.commit()
            self.changed = False

    def close(self, wait_merges: bool = False):
        """Let go of the writer (its lock).  `wait_merges`: finish the segment merges the commits started
        (the normalizer does; a person's command leaves them to the next run)."""
        w, self.writer = self.writer, None
        if w is None:
            return
        try:
            if wait_merges:
                w.wait_merging_threads()
            else:
                w.garbage_collect_files()
        except BaseException as e:  # a merge that failed leaves its segments as they were
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
        del w


class Builder(Writer):
    """A new engine folder for one kind, filled beside the one in use (<kind>.new) and swapped in by
    `install`: readers keep the old one until then, and a build that dies leaves the old one in place."""

    def __init__(self, index_db: str, kind: str, heap: int = WRITER_HEAP):
        import shutil
        self.final = folder(index_db, kind)
        path = self.final + ".new"
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path, mode=0o700, exist_ok=True)
        super().__init__(index_db, kind, heap=heap, path=path)

    def install(self):
        """Commit, mark the build complete, and put it where readers look."""
        import shutil
        self.commit()
        self.close(wait_merges=True)
        _write_stamp(self.path, self.kind, complete=True)
        old = self.final + ".old"
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(self.final):
            os.replace(self.final, old)
        os.replace(self.path, self.final)
        shutil.rmtree(old, ignore_errors=True)  # a reader that opened it keeps its mapped files until it ends

    def abandon(self):
        import shutil
        try:
            self.close()
        finally:
            shutil.rmtree(self.path, ignore_errors=True)


def mark_incomplete(index_db: str, kind: str):
    """Before the sources of `kind` are rebuilt: the folder in use is no longer to be trusted (readers fall
    back, writers rebuild it) until a build installs a complete one."""
    path = folder(index_db, kind)
    if os.path.isdir(path):
        _write_stamp(path, kind, complete=False)


def _write_stamp(path: str, kind: str, complete: bool):
    from cortex.core.fsutil import atomic_write_text
    atomic_write_text(_stamp_path(path), json.dumps({"schema": SCHEMA_VERSION, "kind": kind,
                                                     "complete": bool(complete)}) + "\n")


def flush(con, index_db: str, wait_merges: bool = False) -> dict:
    """Apply the outbox to the engine, in order, and delete the rows applied.  Returns {kind: operations}.
    A kind whose engine needs a rebuild is skipped here (its rows stay; `indexer.rebuild_search` builds
    it from the sources and clears them).  The caller holds the run lock; `con` is a writer connection."""
    done = {}
    writers = {}
    last = 0
    try:
        while True:
            rows = con.execute("SELECT seq, kind, key, doc FROM search_outbox WHERE seq>? ORDER BY seq LIMIT ?",
                               (last, FLUSH_BATCH)).fetchall()
            if not rows:
                break
            for seq, kind, key, doc in rows:
                last = seq
                if kind not in KINDS:
                    continue
                if kind not in writers:
                    writers[kind] = Writer(index_db, kind) if usable(index_db, kind) else None
                w = writers[kind]
                if w is None:
                    continue
                if doc is None:
                    w.delete(key)
                else:
                    d = json.loads(doc)
                    w.put(key, d, d.get("body") or "")
                done[kind] = done.get(kind, 0) + 1
        for kind, w in writers.items():
            if w is not None:
                w.commit()
        if last:
            skipped = [k for k, w in writers.items() if w is None]
            if skipped:
                con.execute("DELETE FROM search_outbox WHERE seq<=? AND kind NOT IN (%s)" % ",".join("?" * len(skipped)),
                            [last] + skipped)
            else:
                con.execute("DELETE FROM search_outbox WHERE seq<=?", (last,))
            con.commit()
    finally:
        for w in writers.values():
            if w is not None:
                w.close(wait_merges=wait_merges)
    return done
