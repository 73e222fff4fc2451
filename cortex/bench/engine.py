"""Which engine holds episode passages: tantivy (the engine since issue #14's scale work), SQLite FTS5
bm25(), or Cortex's own postings tables?

    python -m cortex.bench.engine [--passages N] [--engines tantivy,fts5,postings] [--dir DIR]

Synthetic passages (a Zipf vocabulary of 50,000 words, 40-160 tokens each, a fixed seed) are loaded into
a fresh SQLite file per engine, the way each would be filled in bulk (`cortex reindex`): FTS5 gets one row
per passage (the terms as Cortex's tokenizer would give them, space-separated), the postings tables get
(term, dl, tf, id) rows in key order and the terms' document frequencies, as index.Index holds them.
Then 200 queries of 3-8 words (drawn like the text without its 300 most frequent words, as Cortex's
query terms carry no stopwords) are scored: FTS5 by
`ORDER BY rank LIMIT 50`, postings by `index.bm25_scores` and a top-50 sort, tantivy by
`store.search.Reader.top(terms, 50)` (what recall and the prompt call).  Reports build seconds, size on
disk and query milliseconds (median, p95), each query in this process with a warm page cache.  Results
are in docs/benchmarks.md.
"""
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time


def corpus(n: int, seed: int = 7, vocab: int = 50000):
    rnd = random.Random(seed)
    words = ["w%x" % i for i in range(vocab)]
    weights = [1.0 / (i + 1) ** 1.07 for i in range(vocab)]
    cum, s = [], 0.0
    for w in weights:
        s += w
        cum.append(s)
    import bisect

    def draw(k):
        return [words[min(bisect.bisect(cum, rnd.random() * s), vocab - 1)] for _ in range(k)]
    for i in range(n):
        yield i, draw(rnd.randint(40, 160))
    corpus.queries = queries(seed)


def queries(seed: int = 7, vocab: int = 50000, stop: int = 300):
    """200 queries of 3-8 words drawn like the text but without its `stop` most frequent words (Cortex's
    query terms have no stopwords)."""
    import bisect
    rnd = random.Random(seed + 1)
    weights = [0.0 if i < stop else 1.0 / (i + 1) ** 1.07 for i in range(vocab)]
    cum, s = [], 0.0
    for w in weights:
        s += w
        cum.append(s)
    return [["w%x" % min(bisect.bisect(cum, rnd.random() * s), vocab - 1) for _ in range(rnd.randint(3, 8))]
            for _ in range(200)]


def build_fts5(path: str, n: int) -> float:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE VIRTUAL TABLE passages_fts USING fts5(body, tokenize='ascii', detail=full)")
    t0 = time.time()
    con.execute("BEGIN")
    batch = []
    for i, toks in corpus(n):
        batch.append((i + 1, " ".join(toks)))
        if len(batch) >= 5000:
            con.executemany("INSERT INTO passages_fts(rowid, body) VALUES(?,?)", batch)
            batch = []
    con.executemany("INSERT INTO passages_fts(rowid, body) VALUES(?,?)", batch)
    con.execute("COMMIT")
    con.execute("INSERT INTO passages_fts(passages_fts) VALUES('optimize')")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return time.time() - t0


def build_postings(path: str, n: int) -> float:
    from collections import Counter
    from cortex.store.index import Index
    idx = Index(path)
    con = idx.con
    t0 = time.time()
    con.execute("BEGIN")
    con.execute("DROP INDEX IF EXISTS postings_id")
    rows, recs = [], []
    for i, toks in corpus(n):
        rid = "p%07d" % i
        tf = Counter(toks)
        rows.extend((t, len(toks), c, rid) for t, c in tf.items())
        recs.append((rid, "L0", "x", "x", "episode", "active", "", 0.5, 0.5, 0, 0, None, None, "[]", 0, "[]",
                     None, None, "[]", None, len(toks), None))
        if len(rows) > 500000:
            con.executemany("INSERT INTO postings(term, dl, tf, id) VALUES(?,?,?,?)", rows)
            con.executemany("INSERT INTO records VALUES(%s)" % ",".join("?" * 22), recs)
            rows, recs = [], []
    con.executemany("INSERT INTO postings(term, dl, tf, id) VALUES(?,?,?,?)", rows)
    con.executemany("INSERT INTO records VALUES(%s)" % ",".join("?" * 22), recs)
    con.execute("INSERT INTO terms SELECT term, COUNT(*) FROM postings GROUP BY term")
    con.execute("CREATE INDEX postings_id ON postings(id)")
    idx.stats_changed = True
    idx.finish()
    con.execute("COMMIT")
    idx.truncate_wal()
    idx.close()
    return time.time() - t0


def query_fts5(path: str, queries) -> list:
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    out = []
    for q in queries:
        expr = " OR ".join('"%s"' % t for t in sorted(set(q)))
        t0 = time.perf_counter()
        con.execute("SELECT rowid, bm25(passages_fts) FROM passages_fts WHERE passages_fts MATCH ? "
                    "ORDER BY rank LIMIT 50", (expr,)).fetchall()
        out.append((time.perf_counter() - t0) * 1000)
    con.close()
    return out


def query_postings(path: str, queries) -> list:
    from cortex.store.index import bm25_scores
    import heapq
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    out = []
    for q in queries:
        t0 = time.perf_counter()
        s = bm25_scores(con, q)
        heapq.nlargest(50, s.items(), key=lambda kv: kv[1])
        out.append((time.perf_counter() - t0) * 1000)
    con.close()
    return out


def build_tantivy(path: str, n: int) -> float:
    from cortex.store import search
    os.makedirs(path, exist_ok=True)
    t0 = time.time()
    w = search.Writer(None, "passages", path=path)
    for i, words in corpus(n):
        w.add("p%d" % i, {"project": "p", "session": "s%d" % (i // 10)}, " ".join(words))
    w.commit()
    w.close(wait_merges=True)
    return time.time() - t0


def query_tantivy(path: str, queries) -> list:
    from cortex.store import search
    reader = search.Reader(None, "passages", path=path)
    out = []
    for q in queries:
        t0 = time.perf_counter()
        reader.top(q, 50)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def size(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m cortex.bench.engine")
    ap.add_argument("--passages", type=int, default=100000)
    ap.add_argument("--engines", default="tantivy,fts5,postings")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--reuse", action="store_true", help="query the files a previous run built (no build)")
    args = ap.parse_args(argv)
    folder = args.dir or tempfile.mkdtemp(prefix="cortex-engine-")
    os.makedirs(folder, exist_ok=True)
    results = {}
    for engine in args.engines.split(","):
        path = os.path.join(folder, "%s-%d%s" % (engine, args.passages, "" if engine == "tantivy" else ".sqlite"))
        secs = None
        if not args.reuse:
            import shutil
            shutil.rmtree(path, ignore_errors=True) if engine == "tantivy" else None
            for p in (path, path + "-wal", path + "-shm"):
                if os.path.isfile(p):
                    os.unlink(p)
            build = {"fts5": build_fts5, "tantivy": build_tantivy}.get(engine, build_postings)
            secs = round(build(path, args.passages), 1)
        qs = {"fts5": query_fts5, "tantivy": query_tantivy}.get(engine, query_postings)(path, queries())
        qs.sort()
        results[engine] = {"passages": args.passages, "build_s": secs, "size_mb": round(size(path) / 1e6, 1),
                           "query_ms_median": round(statistics.median(qs), 1),
                           "query_ms_p95": round(qs[int(len(qs) * 0.95)], 1)}
        print(json.dumps({engine: results[engine]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
