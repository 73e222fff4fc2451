"""The search engine (cortex/store/search.py): tantivy beside the SQLite index, kept in step through the
outbox; its BM25, its filters, ties, the fallback while it is rebuilt, and hard deletes."""
import json
import math
import os
import shutil
import sqlite3
import time

import pytest

import cortex_testkit as testkit
from cortex.store import search
from cortex.store.index import Index, connect, passage_scores, record_hits
from cortex.store.indexer import rebuild_search
from cortex.store.terms import tokenize

DAY = 86400.0


def _rec(rid, text, scope_id="proj-1", status="active", rtype="decision"):
    return {"id": rid, "scope": "L0", "scope_id": scope_id, "project": scope_id, "type": rtype, "status": status,
            "text": text, "confidence": 0.8, "created": "2026-11-01T00:00:00Z", "updated": "2026-11-01T00:00:00Z",
            "seen": ["2026-11-01T00:00:00Z"]}


@pytest.fixture()
def home(tmp_path):
    h = testkit.make_home(tmp_path / "home")
    idx = Index(h.index_db)
    idx.commit()
    idx.close()
    rebuild_search(h)  # the empty engine folders, as a new home's first normalizer run makes them
    return h


def _put(home, recs):
    idx = Index(home.index_db)
    try:
        for rec in recs:
            idx.upsert(rec, os.path.join(home.records, "L0", rec["scope_id"], rec["id"] + ".md"), tokenize)
        idx.finish()
        idx.commit()
    finally:
        idx.close()


def _hits(home, words, n=10, **filters):
    con = connect(home.index_db, readonly=True)
    try:
        return record_hits(con, tokenize(words), n, **filters)
    finally:
        con.close()


def test_scores_are_okapi_bm25_with_lucene_idf(home):
    """Short documents (tantivy keeps lengths up to 40 exactly): the engine's scores equal Okapi BM25 with
    k1 1.2, b 0.75 and idf log(1 + (N - n + 0.5) / (n + 0.5)), computed here from the records' terms."""
    texts = ["redis cache for session tokens", "postgres over sqlite for the queue", "session cookie expiry rules",
             "cache warming before the tests run", "drop redis redis from the session cache layer",
             "token bucket rate limiter", "the parser keeps failing on nested quotes"]
    _put(home, [_rec("r%02d" % i, t) for i, t in enumerate(texts)])
    docs = {"r%02d" % i: tokenize("decision " + t) for i, t in enumerate(texts)}  # index_text: type, text
    avgdl = sum(len(d) for d in docs.values()) / len(docs)
    query = tokenize("why did we drop the redis session cache")

    def okapi(doc):
        s = 0.0
        for t in dict.fromkeys(query):
            n = sum(1 for d in docs.values() if t in d)
            tf = doc.count(t)
            if not tf:
                continue
            idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
            s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(doc) / avgdl))
        return s
    got = dict((rid, s) for s, rid in _hits(home, "why did we drop the redis session cache"))
    want = {rid: okapi(d) for rid, d in docs.items() if okapi(d) > 0}
    assert set(got) == set(want)
    for rid in want:
        assert got[rid] == pytest.approx(want[rid], rel=1e-5)


def test_filters_add_nothing_to_the_score_and_ties_go_by_key(home):
    _put(home, [_rec("r-b", "same words here"), _rec("r-a", "same words here"),
                _rec("r-c", "same words here", scope_id="proj-2"), _rec("r-d", "same words here", status="archived")])
    every = _hits(home, "same words", statuses=None)
    assert [rid for _, rid in every] == ["r-a", "r-b", "r-c", "r-d"]  # equal scores: by key
    assert len({s for s, _ in every}) == 1
    mine = _hits(home, "same words", scopes={"proj-1"})
    assert mine == [(every[0][0], "r-a"), (every[0][0], "r-b")]
    assert _hits(home, "same words", scopes={"proj-2"}) == [(every[0][0], "r-c")]
    assert _hits(home, "same words", scopes=set()) == []
    assert _hits(home, "same words", n=1) == [(every[0][0], "r-a")]


def test_a_writer_s_rows_reach_the_engine_through_the_outbox_on_commit(home):
    _put(home, [_rec("r1", "quartz xylophone tuning")])
    con = sqlite3.connect(home.index_db)
    assert con.execute("SELECT COUNT(*) FROM search_outbox").fetchone()[0] == 0  # applied and emptied
    con.close()
    assert [rid for _, rid in _hits(home, "xylophone")] == ["r1"]
    # a status change that leaves the words alone still reaches the engine (its filter)
    _put(home, [_rec("r1", "quartz xylophone tuning", status="archived")])
    assert _hits(home, "xylophone") == []
    assert [rid for _, rid in _hits(home, "xylophone", statuses=["archived"])] == ["r1"]
    idx = Index(home.index_db)
    idx.delete("r1")
    idx.commit()
    idx.close()
    assert _hits(home, "xylophone", statuses=None) == []


def test_the_normalizer_defers_its_flush_and_a_kill_before_it_loses_nothing(home):
    """Rows written without a flush (the normalizer's windows) stay in the outbox until one, and a flush
    killed after the engine's commit but before the outbox delete applies the same operations again."""
    idx = Index(home.index_db, flush_search=False)
    idx.upsert(_rec("r1", "marimba glockenspiel"), os.path.join(home.records, "L0", "proj-1", "r1.md"), tokenize)
    idx.finish()
    idx.commit()
    idx.close()
    assert _hits(home, "marimba") == []  # not yet in the engine
    con = connect(home.index_db)
    before = con.execute("SELECT seq, kind, key, doc FROM search_outbox").fetchall()
    assert len(before) == 1
    search.flush(con, home.index_db)
    assert [rid for _, rid in _hits(home, "marimba")] == ["r1"]
    # the kill: the rows come back as if their delete had not committed; applying them again changes nothing
    con.executemany("INSERT INTO search_outbox(seq, kind, key, doc) VALUES(?,?,?,?)", before)
    con.commit()
    search.flush(con, home.index_db)
    con.close()
    assert [rid for _, rid in _hits(home, "marimba", statuses=None)] == ["r1"]
    assert search.Reader(home.index_db, "records").num_docs() == 1


def test_without_the_engine_records_fall_back_to_the_postings_and_the_normalizer_rebuilds_it(home):
    from cortex.core.config import load
    from cortex.ingest import run as norm
    _put(home, [_rec("r1", "ocarina kazoo"), _rec("r2", "kazoo banjo")])
    shutil.rmtree(search.folder(home.index_db, "records"))
    assert not search.usable(home.index_db, "records")
    assert search.open_reader(home.index_db, "records") is None
    got = _hits(home, "ocarina kazoo")
    assert [rid for _, rid in got] == ["r1", "r2"]  # rank_bm25's scores from the postings
    assert not norm.nothing_to_do(home)  # an unusable engine is work for the next run
    norm.run(home)
    assert search.usable(home.index_db, "records")
    assert [rid for _, rid in _hits(home, "ocarina kazoo")] == ["r1", "r2"]
    assert load(home)  # (the home still loads its config)


def test_a_rebuild_killed_halfway_leaves_the_engine_to_be_rebuilt_not_stale(home, monkeypatch):
    from cortex.store import indexer
    _put(home, [_rec("r1", "theremin")])

    def boom(*a, **k):
        raise KeyboardInterrupt("killed")
    monkeypatch.setattr(search.Builder, "install", boom)
    with pytest.raises(KeyboardInterrupt):
        indexer.rebuild_records_search(home)
    monkeypatch.undo()
    assert not search.usable(home.index_db, "records")  # marked before the build: readers fall back
    assert not os.path.exists(search.folder(home.index_db, "records") + ".new")  # the half build is gone
    assert [rid for _, rid in _hits(home, "theremin")] == ["r1"]
    rebuild_search(home)
    assert search.usable(home.index_db, "records")


def test_deleted_documents_keep_their_terms_until_forget_hard_rebuilds(tmp_path, monkeypatch):
    """tantivy marks a deleted document and keeps its terms in the segment's dictionary until a merge (a
    segment whose documents are all deleted goes at once: here both sessions are indexed by one run, into
    one segment); a plain delete (an archive, a retention prune) may leave them, `forget --hard` must not."""
    from cortex.ops import manage
    home, project, root = testkit.project_env(tmp_path, monkeypatch)
    t = time.time() - 2 * DAY
    testkit.Chat(root, project, "s-keep", t).turns(
        ("user", "Fix the flaky upload test in uploads/test_retry.py"),
        ("assistant", "[MEMORY: decision] Retry uploads three times with jitter because the storage API is flaky."),
    ).stop(home)
    testkit.Chat(root, project, "s-forget", t + 3600).turns(
        ("user", "Note the vendor codename quasarnimbus for the billing export"),
        ("assistant", "[MEMORY: learned] The billing export vendor is codenamed quasarnimbus internally."),
    ).stop(home, run=True)

    def vocab():
        words = set()
        for kind in search.KINDS:
            words |= set(search.Reader(home.index_db, kind).vocabulary())
        return words
    if search.Reader(home.index_db, "passages").vocabulary() is None:
        pytest.skip("this tantivy (before 0.27, for Python 3.9 and 3.10) cannot list its terms")
    assert "quasarnimbus" in vocab()
    # a plain delete of the passages keeps the terms in the engine's dictionary (what a hard delete must fix)
    idx = Index(home.index_db)
    from cortex.store.index import delete_passages
    delete_passages(idx.con, session="s-forget")
    idx.commit()
    idx.close()
    con = connect(home.index_db, readonly=True)
    assert passage_scores(con, ["quasarnimbus"]) == []
    con.close()
    assert "quasarnimbus" in search.Reader(home.index_db, "passages").vocabulary()
    manage.forget_episodes(home, ["s-forget"], hard=True)
    from cortex.store import records
    targets = [(r, p) for r, p in ((records.read(p), p) for p in records.iter_paths(home.records))
               if "quasarnimbus" in r["text"]]
    assert targets
    manage.forget(home, targets, hard=True)
    assert "quasarnimbus" not in vocab()
    assert "jitter" in vocab()  # the other session's words stay


def test_doctor_and_status_say_what_the_engine_holds_and_what_is_missing(home):
    from cortex.ops import doctor, status
    _put(home, [_rec("r1", "bassoon"), _rec("r2", "oboe")])
    check = doctor.check_search(home)
    assert check["status"] == "ok" and "records 2" in check["summary"] and "passages 0" in check["summary"]
    info = status.status(home)
    assert info["search"] == {"waiting": 0, "records": 2, "passages": 0}
    assert "search    records 2, passages 0" in status.format_status(info)
    shutil.rmtree(search.folder(home.index_db, "passages"))
    check = doctor.check_search(home)
    assert check["status"] == "warn" and any("passages" in d for d in check["details"])
    assert "cortex-normalize" in check["fix"]
    info = status.status(home)
    assert "passages to be built" in status.format_status(info)


def test_an_index_of_the_fts5_release_is_migrated_and_its_passages_searched(tmp_path, monkeypatch):
    """An index written by the release that searched passages with SQLite FTS5: its tables are dropped by the
    next writer and the engine is built from the episode files by the next normalizer run."""
    home, project, root = testkit.project_env(tmp_path, monkeypatch)
    testkit.Chat(root, project, "s-old", time.time() - DAY).turns(
        ("user", "Why does the harpsichord renderer drop frames?"),
        ("assistant", "The harpsichord renderer blocks on font loading; preload the fonts."),
    ).stop(home, run=True)
    shutil.rmtree(search.root_of(home.index_db))  # as the old release left it: no engine folder ...
    con = sqlite3.connect(home.index_db)  # ... and its FTS5 tables
    con.execute("CREATE VIRTUAL TABLE passages_fts USING fts5(body, tokenize='ascii')")
    con.execute("CREATE TABLE passage_terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID")
    con.execute("INSERT INTO passages_fts(rowid, body) VALUES(1, 'harpsichord render')")
    con.commit()
    con.close()
    from cortex.ingest import run as norm
    assert not norm.nothing_to_do(home)
    norm.run(home)
    con = connect(home.index_db, readonly=True)
    try:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        assert not {"passages_fts", "passage_terms"} & names
        found = passage_scores(con, tokenize("harpsichord renderer frames"))
    finally:
        con.close()
    assert {row["session"] for _, row in found} == {"s-old"} and len(found) == 2  # a passage a turn
    assert norm.nothing_to_do(home)


@pytest.mark.parametrize("n", [1, 5, 40, 400])
def test_a_filter_most_documents_pass_is_checked_on_the_hits_with_the_same_result(home, monkeypatch, n):
    """Reader.top checks a wide filter (most documents pass it) on the hits of the unfiltered query, and
    falls back to the filtered query when too few pass: the same hits as the filtered query, ties by key."""
    words = ["harp", "lute", "lyre", "zither", "sitar"]
    recs = []
    for i in range(300):
        text = " ".join(words[(i + j) % 5] for j in range(1 + i % 4)) + " note%d" % (i % 7)
        recs.append(_rec("r%03d" % i, text, scope_id="proj-1" if i % 10 else "proj-2",
                         status="active" if i % 13 else "archived"))
    _put(home, recs)
    reader = search.Reader(home.index_db, "records")
    for filters in ({"scope": ["proj-1"]}, {"scope": ["proj-1"], "status": ["active"]}, {"scope": ["proj-2"]},
                    {"status": ["archived"]}, {"scope": ["proj-1", "proj-2"]}):
        for query in (["harp"], ["harp", "zither", "note3"], ["note5"]):
            wide = reader.top(query, n, filters)
            monkeypatch.setattr(search, "WIDE_FILTER", 2.0)  # never wide: always the filtered query
            narrow = reader.top(query, n, filters)
            monkeypatch.undo()
            assert wide == narrow, (filters, query)
            assert wide == sorted(wide, key=lambda h: (-h[0], h[1]))


def test_a_flush_that_fails_keeps_the_outbox_and_a_full_disk_is_taken_for_one(home, monkeypatch):
    """A person's command whose flush fails (a full disk) still commits its rows; the outbox keeps what the
    engine has not applied, the log says so, and the next flush applies it.  tantivy's message for a full
    disk counts as one (the normalizer then stops and keeps its events)."""
    from cortex.ingest.run import out_of_space
    err = ValueError("An IO error occurred: 'No space left on device (os error 28)'")
    assert out_of_space(err)

    def full(*a, **k):
        raise err
    monkeypatch.setattr(search.Writer, "commit", full)
    _put(home, [_rec("r1", "vibraphone")])
    monkeypatch.undo()
    con = connect(home.index_db, readonly=True)
    try:
        assert con.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 1
        assert search.pending(con) == 1
    finally:
        con.close()
    assert _hits(home, "vibraphone") == []
    logged = [json.loads(x) for x in open(home.log_file, encoding="utf-8")]
    assert any(e["event"] == "search_flush_failed" and "No space" in e["error"] for e in logged)
    _put(home, [_rec("r2", "celesta")])  # the next writer's commit applies both
    assert [rid for _, rid in _hits(home, "vibraphone")] == ["r1"]
