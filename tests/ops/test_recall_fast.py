"""recall's pruned search returns exactly what scoring every hit returns: same hits, same order, same
scores.  The reference here scores every hit of the query (BM25 of the search engine over every record,
filters, every ranking part) and sorts them all; recall asks the engine for the best few with the
filters in the query and stops reading as soon as no other hit can show.  The same holds for the
fallback on the SQLite postings, used while the engine's folder is being rebuilt."""
import json
import os
import sqlite3

import pytest

from cortex.model import rank
from cortex.ops import recall as R
from cortex.bench.run import build_home
from cortex.core.home import Home
from cortex.store import search
from cortex.store.index import bm25_scores, connect, descending
from cortex.store.indexer import rebuild_records_search
from cortex.store.terms import query_terms

NOW = 2e9
QUERIES = ["why did we drop the Redis cache for session tokens", "parser cursor", "SQLite",
           "lock the queue worker", "config schema migration fixture", "cache cache cache token",
           "session session", "zzzunknownword cache", "tokens tokens redis"]


def bench_home(base, n) -> Home:
    (base / "proj").mkdir()
    old = os.environ.get("CORTEX_HOME")
    info = build_home(str(base / "home"), n, str(base / "proj"))
    if old is None:
        os.environ.pop("CORTEX_HOME", None)
    else:
        os.environ["CORTEX_HOME"] = old
    return Home(info["home"])


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    base = tmp_path_factory.mktemp("recall-fast")
    h = bench_home(base, 2000)
    # some variety for the filters: archived and superseded records, a few pinned, and records of a
    # third scope (seen only with --scope all)
    con = sqlite3.connect(h.index_db)
    ids = [r[0] for r in con.execute("SELECT id FROM records ORDER BY id")]
    con.executemany("UPDATE records SET status='archived' WHERE id=?", [(i,) for i in ids[::7]])
    con.executemany("UPDATE records SET status='superseded' WHERE id=?", [(i,) for i in ids[3::11]])
    con.executemany("UPDATE records SET pinned=1 WHERE id=?", [(i,) for i in ids[5::13]])
    con.executemany("UPDATE records SET scope='L0', scope_id='other-0000' WHERE id=?", [(i,) for i in ids[2::17]])
    con.commit()
    con.close()
    rebuild_records_search(h)  # the engine mirrors the rows changed by hand above
    return h, str(base / "proj")


def every_score(h, terms) -> dict:
    """{id: bm25} of every record holding a query term: the engine asked for all of them (recall's engine
    search asks for the best few), or the postings when the engine's folder is gone."""
    if not search.usable(h.index_db, "records"):
        con = connect(h.index_db, readonly=True)
        try:
            return bm25_scores(con, terms)
        finally:
            con.close()
    return {key: s for s, key in search.Reader(h.index_db, "records").top(terms, 10 ** 7)}


def reference(h, query, cwd, k=10, scope=None, types=None, include_archived=False, depth=None):
    """[(id, score)] of recall by scoring every hit among the best `depth` by BM25 (R.RERANK_DEPTH, or k when
    more) that pass the filters: no pruning."""
    from cortex.ops import manage
    project, domain, cfg = manage.resolve_project(h, cwd, None)
    scope_ids = manage.where(project["id"], domain, scope)
    scores = every_score(h, query_terms(query))
    con = connect(h.index_db, readonly=True)
    try:
        recs = []
        for rid in scores:
            row = con.execute("SELECT %s FROM records WHERE id=?" % ", ".join(R.COLUMNS), (rid,)).fetchone()
            rec = dict(zip(R.COLUMNS, row))
            if scope_ids is not None and rec["scope_id"] not in scope_ids:
                continue
            if types and rec["type"] not in types:
                continue
            if rec["status"] != "active" and not include_archived:
                continue
            rec["times"] = json.loads(rec["times"] or "[]")
            rec["pinned"] = bool(rec["pinned"])
            recs.append(rec)
        days = R._active_days(con, [project["id"], domain])
    finally:
        con.close()
    if not recs:
        return []
    depth = max(R.RERANK_DEPTH if depth is None else depth, k)
    recs = sorted(recs, key=lambda r: (-scores[r["id"]], r["id"]))[:depth]
    top = max(scores[r["id"]] for r in recs)
    out = []
    for rec in recs:
        tier = (0 if rec["scope"] == "L0" and rec["scope_id"] == project["id"]
                else 1 if rec["scope"] == "L1" and rec["scope_id"] == domain else 2)
        tier = (tier, rec["status"] == "superseded")  # superseded ones after the current ones of the group
        s = R.score(scores[rec["id"]], top, rank.parts(rec, NOW, cfg, days))
        out.append((tier, -s["score"], rec["id"]))
    out.sort()
    return [(rid, round(-neg, 4)) for _, neg, rid in out[:k]]


def got(h, query, cwd, **kw):
    res = R.recall(h, query, cwd=cwd, record_use=False, now=NOW, **kw)
    return [(x["id"], x["score"]) for x in res["hits"]]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("k", [1, 5, 40])
def test_pruned_recall_equals_full_scoring(home, query, k):
    h, cwd = home
    fast = got(h, query, cwd, k=k)
    assert fast == reference(h, query, cwd, k=k)
    if "zzz" not in query or "cache" in query:
        assert len(fast) == k


@pytest.mark.parametrize("kw", [dict(scope="project"), dict(scope="domain"), dict(scope="all"),
                                dict(types=["decision"]), dict(types=["gotcha", "fix"]),
                                dict(include_archived=True), dict(scope="all", include_archived=True, k=25),
                                dict(scope="domain", types=["preference"]), dict(k=100000)])
@pytest.mark.parametrize("query", ["why did we drop the Redis cache for session tokens", "lock the queue worker",
                                   "session"])
def test_pruned_recall_equals_full_scoring_with_filters(home, query, kw):
    h, cwd = home
    kw = dict(kw)
    k = kw.pop("k", 10)
    assert got(h, query, cwd, k=k, **kw) == reference(h, query, cwd, k=k, **kw)


def test_k_larger_than_the_hits_returns_every_hit(home):
    h, cwd = home
    every = reference(h, "SQLite", cwd, k=100000)
    assert 0 < len(every) < 100000
    assert got(h, "SQLite", cwd, k=100000) == every


def test_a_query_of_unknown_words_finds_nothing(home):
    h, cwd = home
    assert got(h, "zzzunknownword qqqnothing", cwd) == []


def test_ties_are_broken_by_id_as_in_full_scoring(tmp_path):
    """Records with the same text score the same BM25; rank parts equal too when their times are equal,
    so only the id orders them, and pruning must keep the ones with the smallest ids."""
    base = tmp_path
    h = bench_home(base, 300)
    con = sqlite3.connect(h.index_db)
    # make many records identical for ranking: same times, type, confidence
    con.execute("UPDATE records SET times='[1900000000.0]', type='decision', confidence=0.9, pinned=0, priority=0")
    con.commit()
    con.close()
    rebuild_records_search(h)
    for k in (1, 3, 10, 50):
        for q in ("cache", "session token"):
            assert got(h, q, str(base / "proj"), k=k) == reference(h, q, str(base / "proj"), k=k)


def test_descending_yields_every_hit_best_first():
    scores = {"r%03d" % i: float((i * 37) % 101) / 7.0 for i in range(300)}
    scores["r999"] = 0.0
    out = list(descending(scores))
    assert sorted(out, reverse=True) == out
    assert sorted(rid for _, rid in out) == sorted(scores)
    assert list(descending({})) == []


@pytest.fixture()
def engine_gone(home):
    """The records folder of the engine taken away for one test (as while it is rebuilt), then restored."""
    import shutil
    h, _ = home
    path = search.folder(h.index_db, "records")
    shutil.move(path, path + ".away")
    try:
        yield
    finally:
        shutil.move(path + ".away", path)


@pytest.mark.parametrize("kw", [dict(), dict(scope="all", include_archived=True, k=25), dict(types=["decision"]),
                                dict(k=1)])
@pytest.mark.parametrize("query", ["why did we drop the Redis cache for session tokens", "session"])
def test_without_the_engine_recall_ranks_by_the_postings(home, engine_gone, query, kw):
    h, cwd = home
    assert not search.usable(h.index_db, "records")
    kw = dict(kw)
    k = kw.pop("k", 10)
    fast = got(h, query, cwd, k=k, **kw)
    assert fast and fast == reference(h, query, cwd, k=k, **kw)


def test_cortex_recall_builds_a_light_parser_that_parses_the_same(home):
    import subprocess
    import sys
    from cortex.cli import main as cli
    argv = ["recall", "session", "tokens", "--scope", "all", "--type", "fix", "-k", "3", "--no-use", "--json"]
    assert vars(cli.build_parser("recall").parse_args(argv)) == vars(cli.build_parser().parse_args(argv))
    h, cwd = home
    for args in (argv[:-1], argv[:-2]):  # without a use, and with one (the three hits' files are rewritten)
        code = ("import sys, io, contextlib; from cortex.cli.main import main\n"
                "with contextlib.redirect_stdout(io.StringIO()) as out: rc = main(%r)\n"
                "print(rc, sorted(m for m in ('cortex.bench.run', 'cortex.install.hooks', 'cortex.install.schedule', 'yaml', "
                "'cortex.model.redact') if m in sys.modules), out.getvalue().count('\"id\"'))" % (args + ["--cwd", cwd,
                                                                                                     "--json"],))
        env = dict(os.environ, CORTEX_HOME=h.root)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
        assert out.split() == ["0", "[]", "3"], args


@pytest.mark.parametrize("depth", [1, 30, 200])
@pytest.mark.parametrize("query", ["session", "cache cache cache token", "why did we drop the Redis cache for session tokens"])
def test_the_ranking_parts_reorder_only_the_best_hits_by_bm25(home, monkeypatch, query, depth):
    """With common words thousands of records match about equally well; the ranking parts reorder the best
    RERANK_DEPTH of them by BM25 (or k, when more), not all."""
    h, cwd = home
    monkeypatch.setattr(R, "RERANK_DEPTH", depth)
    for k in (1, 10):
        assert got(h, query, cwd, k=k, kind="record") == reference(h, query, cwd, k=k, depth=depth)
