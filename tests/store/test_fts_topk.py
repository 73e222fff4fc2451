"""The narrowed passage search (store.fts_topk) returns what the plain FTS5 query returns: the same rows,
the same scores to the bit, in the same order (score, then rowid), whatever the query, the limit and the
project filter; and it is actually used (a test that always fell back to the plain query would prove
nothing)."""
import math
import random
import sqlite3

import pytest

from cortex.store import fts_topk
from cortex.store.index import Index, connect, fts_term, passage_scores, put_passages


def _zipf_words(n=400):
    words = ["w%d" % i for i in range(n)]
    weights = [1.0 / (i + 1) ** 0.9 for i in range(n)]
    return words, weights


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """6,000 passages in 600 sessions of two projects: Zipf words with session topics, long and short
    passages, and exact copies (ties)."""
    path = str(tmp_path_factory.mktemp("fts") / "cortex.sqlite")
    rng = random.Random(11)
    words, weights = _zipf_words()
    idx = Index(path)
    con = idx.con
    con.execute("BEGIN")
    copies = []
    for s in range(600):
        topic = rng.sample(words[20:], 25)
        rows = []
        for a in range(1, 11):
            if copies and rng.random() < 0.03:
                terms = rng.choice(copies)  # an exact copy of an earlier passage: a tie on score
            else:
                n = rng.choice((8, 60, 90, 120, 120, 160, 200))
                terms = [rng.choice(topic) if rng.random() < 0.4 else w
                         for w in rng.choices(words, weights=weights, k=n)]
                if rng.random() < 0.05:
                    terms += ["src/auth/tokenstore.ts", "データ"]  # terms FTS5 holds as hex
                copies.append(terms)
            rows.append((a, "proj-a" if s % 4 else "proj-b", "claude-code", "2026-01-01T00:00:00Z", a, a + 1,
                         "episodes/p/s%d.md" % s, terms))
        put_passages(con, "s%d" % s, rows)
    con.execute("COMMIT")
    idx.close()
    return path


def _queries(n=120, seed=5):
    rng = random.Random(seed)
    words, weights = _zipf_words()
    out = [["w0", "w1", "w2", "w3", "w50"], ["w1", "w7", "w7", "w300"], ["w399", "w2"], ["w5", "zzz", "w60"],
           ["src/auth/tokenstore.ts", "w1", "w4"], ["データ", "w0"]]
    for _ in range(n):
        k = rng.randint(2, 9)
        kind = rng.random()
        if kind < 0.25:  # common words only
            out.append(rng.choices(words[:40], k=k))
        elif kind < 0.5:  # drawn as the text is
            out.append(rng.choices(words, weights=weights, k=k))
        else:  # common words and one or two rarer ones, as the bench's prompt has
            q = rng.choices(words[:30], k=k) + rng.sample(words[60:400], rng.randint(1, 2))
            rng.shuffle(q)
            out.append(q)
    return out


def _both(con, terms, projects, limit, monkeypatch, min_score=None):
    used = []
    real = fts_topk.narrowed

    def spy(*a, **kw):
        got = real(*a, **kw)
        used.append(got is not None)
        return got
    monkeypatch.setattr(fts_topk, "MIN_ROWS", 0)
    monkeypatch.setattr(fts_topk, "narrowed", spy)
    fast = passage_scores(con, terms, projects, limit, min_score)
    monkeypatch.setattr(fts_topk, "MIN_ROWS", 10 ** 12)
    plain = passage_scores(con, terms, projects, limit, min_score)
    if min_score is not None:
        assert plain == [r for r in passage_scores(con, terms, projects, limit) if r[0] >= min_score]
    return fast, plain, any(used)


@pytest.mark.parametrize("limit", [1, 5, 20, 50])
@pytest.mark.parametrize("projects", [None, {"proj-a"}, {"proj-b"}, {"proj-a", "proj-b"}, {"nothing"}])
def test_narrowed_search_returns_exactly_the_plain_query(db, monkeypatch, limit, projects):
    con = connect(db, readonly=True)
    narrowed = 0
    try:
        for terms in _queries(40 if limit != 20 else 80):
            fast, plain, used = _both(con, terms, projects, limit, monkeypatch)
            assert fast == plain, terms  # rows, scores (floats compared exactly) and order
            narrowed += used
    finally:
        con.close()
    if projects != {"nothing"} and limit <= 20:
        assert narrowed >= 3  # the narrow expression was used and proved, not only the fallback


def test_the_plain_query_orders_ties_by_rowid(db):
    con = connect(db, readonly=True)
    try:
        rows = passage_scores(con, ["w0", "w1", "w2"], None, 5000)
        keys = [(-s, con.execute("SELECT rid FROM passages WHERE id=?", (r["id"],)).fetchone()[0]) for s, r in rows]
        assert keys == sorted(keys)
        assert len({s for s, _ in rows}) < len(rows)  # the fixture does have ties
    finally:
        con.close()


def test_totals_and_score_are_what_fts5_uses(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        n, tokens = fts_topk.fts_totals(con)
        assert n == con.execute("SELECT count(*) FROM passages_fts").fetchone()[0] == 6000
        assert tokens == sum(len(b.split()) for (b,) in con.execute("SELECT body FROM passages_fts"))
        phrases = ['"%s"' % fts_term(t) for t in ["w3", "w1", "w77", "src/auth/tokenstore.ts"]]
        hits = [con.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?", (p,)).fetchone()[0]
                for p in phrases]
        idfs = [fts_topk.idf(n, h) for h in hits]
        rows = con.execute("SELECT rowid, -bm25(passages_fts), body FROM passages_fts WHERE passages_fts MATCH ? "
                           "ORDER BY rank LIMIT 200", (" OR ".join(phrases),)).fetchall()
        toks = [p.strip('"') for p in phrases]
        for _, s, body in rows:
            assert math.isclose(fts_topk.score(body, toks, idfs, tokens / n), s, rel_tol=1e-12)
    finally:
        con.close()


def test_varints_read_sqlite_varints():
    def enc(v):  # SQLite's varint encoding
        if v > 0x00FFFFFFFFFFFFFF:
            out = [v & 0xFF]
            v >>= 8
            for _ in range(8):
                out.append((v & 0x7F) | 0x80)
                v >>= 7
            return bytes(reversed(out))
        out = [v & 0x7F]
        v >>= 7
        while v:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        return bytes(reversed(out))
    values = [0, 1, 127, 128, 300, 16383, 16384, 10 ** 6, 2 ** 35 + 7, 2 ** 56 - 1, 2 ** 56, 2 ** 64 - 1]
    from cortex.store.fts_topk import varints
    assert varints(b"".join(enc(v) for v in values), len(values)) == values


def test_best_cut_keeps_every_group_above_the_need():
    ubs, shares = [0.1, 2.0, 0.8, 0.1, 2.5, 0.9, 4.4], [0.6, 0.3, 0.4, 0.6, 0.25, 0.4, 0.1]
    groups, share = fts_topk.best_cut(ubs, shares, 3.0)
    assert groups[0][0] == 0 and groups[-1][1] == len(ubs)
    assert all(a[1] == b[0] for a, b in zip(groups, groups[1:]))
    assert all(sum(ubs[a:b]) > 3.0 for a, b in groups) and len(groups) >= 2 and 0 < share < 1
    assert fts_topk.best_cut(ubs, shares, sum(ubs) - 0.01) is None  # only the whole query clears it


def test_on_a_bench_home_the_narrowed_search_is_the_plain_query(tmp_path, monkeypatch):
    """The bench's episodes (sessions on topics, the words of real transcripts) and queries like the
    bench's: the case the narrowing is for."""
    from cortex.bench import run as bench
    from cortex.bench.corpus import vocabulary
    from cortex.store.terms import query_terms
    proj = tmp_path / "proj"
    proj.mkdir()
    info = bench.build_home(str(tmp_path / "home"), 300, str(proj), passages=8000)
    rng = random.Random(3)
    words, cum = vocabulary()
    queries = [bench.PROMPT, bench.QUERY, "fix the parser test in the worker config", "validate the schema migration"]
    queries += [" ".join(rng.choices(words[:300], k=rng.randint(3, 10))) for _ in range(60)]
    con = connect(info["home"] + "/index/cortex.sqlite", readonly=True)
    narrowed = 0
    try:
        for q in queries:
            for limit, projects in ((20, {info["project"]}), (50, {info["project"]}), (50, None)):
                fast, plain, used = _both(con, query_terms(q), projects, limit, monkeypatch)
                assert fast == plain, q
                narrowed += used
    finally:
        con.close()
    assert narrowed >= 5
    # the recall query's first two phrases (drop, redis) are taken the other way round: redis alone is a group
    exprs = []
    real = fts_topk.narrowed

    def spy(con, phrases, limit, run, probe, min_score=None):
        return real(con, phrases, limit, lambda expr, only=None: exprs.append(expr) or run(expr, only), probe,
                    min_score)
    monkeypatch.setattr(fts_topk, "MIN_ROWS", 0)
    monkeypatch.setattr(fts_topk, "narrowed", spy)
    con = connect(info["home"] + "/index/cortex.sqlite", readonly=True)
    try:
        fast = passage_scores(con, query_terms(bench.QUERY), {info["project"]}, 10)
        monkeypatch.setattr(fts_topk, "MIN_ROWS", 10 ** 12)
        assert fast == passage_scores(con, query_terms(bench.QUERY), {info["project"]}, 10)
    finally:
        con.close()
    assert exprs and exprs[0].startswith('("redi") AND ("drop"'), exprs


@pytest.mark.parametrize("seed", range(6))
def test_minimal_sets_hold_every_row_that_can_reach_the_floor(seed):
    import itertools
    rng = random.Random(seed)
    ubs = [rng.choice((2.2e-6, 0.3, 0.9, 1.7, 2.5, 4.4)) * rng.uniform(0.8, 1.2) for _ in range(rng.randint(3, 10))]
    floor = rng.uniform(0.3, 0.9) * sum(ubs)
    got = fts_topk.minimal_sets(ubs, floor)
    if got is None:
        return
    sets, below = got
    heavy = sorted(sorted(range(len(ubs)), key=lambda i: (-ubs[i], i))[:fts_topk.HEAVY])
    light = sum(ubs) - sum(ubs[i] for i in heavy)
    worst = 0.0
    for r in range(len(heavy) + 1):
        for held in itertools.combinations(heavy, r):
            bound = light + sum(ubs[i] for i in held)  # a row holding these heavy phrases scores below this
            if any(set(s) <= set(held) for s in sets):
                continue
            assert bound < floor
            worst = max(worst, bound)
    assert math.isclose(below, worst, rel_tol=1e-12, abs_tol=1e-12) and below < floor
    for s in sets:  # minimal: without any of its phrases a set no longer reaches the floor
        assert light + sum(ubs[i] for i in s) >= floor * (1 - 1e-9) - 1e-12
        assert all(light + sum(ubs[i] for i in s) - ubs[j] < floor for j in s)


def _vocab(path):
    con = sqlite3.connect(path)
    try:
        con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, passages_fts, row)")
        return dict(con.execute("SELECT term, doc FROM temp.v"))
    finally:
        con.close()


def _terms(path):
    from cortex.store.fts_topk import fts_totals, terms_stamp
    con = sqlite3.connect(path)
    try:
        return dict(con.execute("SELECT term, df FROM passage_terms")), terms_stamp(con), fts_totals(con)
    finally:
        con.close()


def test_writers_keep_passage_terms_equal_to_what_fts5_counts(tmp_path):
    """put_passages (new, extended and replaced passages), delete_passages (a session, a project; a large
    delete leaves the counts to the next writer), reindex_passages and an index from before the table:
    passage_terms always equals FTS5's own counts, and its stamp FTS5's totals, or it has no stamp."""
    from cortex.core.home import Home
    from cortex.store import episodes, indexer
    from cortex.store.index import delete_passages
    path = str(tmp_path / "cortex.sqlite")
    rng = random.Random(2)
    words, weights = _zipf_words(60)

    def rows(n, first=1, project="p"):
        return [(a, project, "claude-code", "t", a, a + 1, "episodes/p/s.md",
                 rng.choices(words, weights=weights, k=rng.randint(0, 30)) + (["v2.1", "データ"] if a % 3 else []))
                for a in range(first, first + n)]

    def check(stamped=True):
        got, stamp, totals = _terms(path)
        if stamped:
            assert got == _vocab(path) and stamp == totals
        else:
            assert stamp is None

    for step in range(40):
        idx = Index(path)
        con = idx.con
        con.execute("BEGIN")
        session = "s%d" % rng.randint(0, 12)
        kind = rng.random()
        if kind < 0.6:
            put_passages(con, session, rows(rng.randint(1, 6), rng.randint(1, 4), rng.choice("pq")),
                         since=rng.randint(1, 5))
        elif kind < 0.8:
            delete_passages(con, session=session)
        else:
            delete_passages(con, project=rng.choice("pq"))
        con.execute("COMMIT")
        idx.close()
        check()
    # a large delete: no stamp until the next writer counts the table again
    idx = Index(path)
    idx.con.execute("BEGIN")
    for s in range(30):
        put_passages(idx.con, "big%d" % s, rows(100))
    idx.con.execute("COMMIT")
    idx.con.execute("BEGIN")
    delete_passages(idx.con, project="p")
    put_passages(idx.con, "after", rows(3))
    idx.con.execute("COMMIT")
    idx.close()
    check(stamped=False)
    Index(path).close()
    check()
    # an index from before the table: counted at the next writer's connect
    con = sqlite3.connect(path)
    con.execute("DROP TABLE passage_terms")
    con.execute("DELETE FROM meta WHERE key='passage_terms'")
    con.commit()
    con.close()
    Index(path).close()
    check()
    # cortex reindex
    home = Home(str(tmp_path / "home")).ensure()
    turns = [{"n": i + 1, "role": ("user", "assistant")[i % 2], "at": "2026-01-01T00:00:%02dZ" % i,
              "text": " ".join(rng.choices(words, k=12))} for i in range(20)]
    for s in range(5):
        front = {"session": "r%d" % s, "client": "claude-code", "project": "p", "first": "", "last": "",
                 "transcript": "", "turns": 20, "read_to": 1}
        episodes.write(episodes.episode_path(home, "p", "r%d" % s), front, turns)
    indexer.reindex_passages(home)
    path = home.index_db
    check()


def test_counts_of_a_writer_that_did_not_keep_them_are_not_used(db, tmp_path, monkeypatch):
    """A writer that changes passages_fts without passage_terms (an older Cortex): the stamp no longer
    matches FTS5's totals, so the search counts in FTS5, and still returns the plain query's rows."""
    import shutil
    from cortex.store.fts_topk import fts_totals, stored_hits
    path = str(tmp_path / "copy.sqlite")
    shutil.copy(db, path)
    con = sqlite3.connect(path)
    assert stored_hits(con, ["w1"], fts_totals(con)) is not None
    con.execute("INSERT INTO passages(id, session, anchor, project) VALUES('x:1', 'x', 1, 'proj-a')")
    con.execute("INSERT INTO passages_fts(rowid, body) VALUES(last_insert_rowid(), 'w1 w1 w2 w7 w300')")
    con.commit()
    assert stored_hits(con, ["w1"], fts_totals(con)) is None
    con.close()
    con = connect(path, readonly=True)
    try:
        for terms in _queries(30):
            fast, plain, _ = _both(con, terms, {"proj-a"}, 20, monkeypatch)
            assert fast == plain
    finally:
        con.close()


@pytest.mark.parametrize("min_score", [0.5, 3.0, 6.0, 9.0, 40.0])
def test_with_a_minimum_score_the_rows_are_the_plain_querys_that_reach_it(db, monkeypatch, min_score):
    con = connect(db, readonly=True)
    narrowed = 0
    try:
        for terms in _queries(60, seed=min_score):
            for projects, limit in ((None, 20), ({"proj-a"}, 5)):
                fast, plain, used = _both(con, terms, projects, limit, monkeypatch, min_score)
                assert fast == plain, terms
                narrowed += used
    finally:
        con.close()
    assert narrowed >= 3
