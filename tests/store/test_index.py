"""The SQLite index: BM25 exactly as rank_bm25 computes it, kept in step incrementally, and rebuilt from the
record files alone by `cortex reindex`."""
from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

from cortex.store import index as index_mod, records
from cortex.store.index import bm25_scores, index_text
from cortex.store.terms import tokenize
from cortex_testkit import (TRANSCRIPTS, all_records, append_turns, copy_fixture, db_rows, drop_event,
                      hook_payload, make_home, normalize, run_bin, tree_bytes)

TABLES = ("records", "postings", "terms", "sessions")


def build_corpus_home(base: Path):
    """A home filled from the real fixtures, in several runs, so the index went through incremental updates,
    merges and replacements (not only one build)."""
    h = make_home(base / "home")
    client = base / "client"
    batches = [["cc-1.0.98", "cc-2.0.64", "cc-2.1.4"], ["cc-2.0.76", "cc-2.1.39"]]
    batches.append(["codex-0.125", "codex-0.77", "codex-0.104-compacted", "gemini"])
    for batch in batches:
        for name in batch:
            client_name = TRANSCRIPTS[name][2]
            path = copy_fixture(name, client)
            drop_event(h, hook_payload(path, client_name), client=client_name)
        assert normalize(h)["failed"] == 0
    # the same session of 1.0.108 in two halves: its plan and progress records are rewritten in place
    src = copy_fixture("cc-1.0.108", base / "src")
    data = src.read_bytes()
    lines = data.split(b"\n")
    half = b"\n".join(lines[: len(lines) // 3]) + b"\n"
    t = base / "client" / "growing" / src.name
    t.parent.mkdir(parents=True)
    t.write_bytes(half)
    payload = hook_payload(src)
    payload["transcript_path"] = str(t)
    drop_event(h, payload)
    normalize(h)
    with open(t, "ab") as f:
        f.write(data[len(half):])
    drop_event(h, payload)
    normalize(h)
    # and two explicit memories in a later session of the 1.0.98 project, one of them seen again
    t2 = copy_fixture("cc-1.0.98", base / "later")
    things = ["the parser", "session start", "the Glob tool", "sqlite index", "postgres mirror", "the router",
              "the CLAUDE.md loader", "the build", "the worker pool", "the plan view"]
    when = ["before the first request", "after a deploy", "on every restart", "when tests run", "in CI"]
    memories = [("assistant", "[MEMORY: learned] The cache of %s must be warmed %s (%d)." % (a, b, i))
                for i, (a, b) in enumerate((a, b) for a in things for b in when[:3])]
    append_turns(t2, [("assistant", "[MEMORY: decision] Keep CLAUDE.md short: commands first, architecture second."),
                      ("assistant", "[MEMORY: gotcha] The Glob tool returns nothing in an empty repository.")]
                 + memories)
    p2 = hook_payload(t2, session_id="later-session")
    drop_event(h, p2)
    normalize(h)
    return h


@pytest.fixture(scope="module")
def corpus_home(tmp_path_factory):
    return build_corpus_home(tmp_path_factory.mktemp("corpus"))


def rank_bm25_scores(home, query_terms):
    recs = all_records(home)
    ids = [r["id"] for r in recs]
    corpus = [tokenize(index_text(r)) for r in recs]
    bm = BM25Okapi(corpus)
    return dict(zip(ids, bm.get_scores(query_terms))), corpus


QUERIES = ["CLAUDE.md", "mix test failed", "plan progress", "progress progress changed", "sqlite postgres cache",
           "zzzunseenterm", "hello.py delete js", "transcript tail supervisor", "summary current work",
           "compaction threshold verification", "changed asked", "Glob empty repository", "what we learned"]


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_scores_equal_rank_bm25(corpus_home, query):
    terms = tokenize(query)
    expected, _ = rank_bm25_scores(corpus_home, terms)
    con = sqlite3.connect(corpus_home.index_db)
    try:
        got = bm25_scores(con, terms)
    finally:
        con.close()
    assert set(got) <= set(expected)
    for rid, want in expected.items():
        have = got.get(rid, 0.0)
        assert math.isclose(have, want, rel_tol=1e-9, abs_tol=1e-12), (rid, have, want)
    if query != "zzzunseenterm":
        assert any(v > 0 for v in got.values())


def test_the_corpus_exercises_every_bm25_branch(corpus_home):
    """Guard for the test above: the corpus has a term whose idf is negative (epsilon branch) and the
    queries hit it, and repeated query terms count twice."""
    recs = all_records(corpus_home)
    n = len(recs)
    assert n >= 20
    con = sqlite3.connect(corpus_home.index_db)
    try:
        dfs = dict(con.execute("SELECT term, df FROM terms"))
        meta = index_mod.read_meta(con)
        negative = [t for t, df in dfs.items() if df > n / 2]
        assert negative, "no term with a negative idf in the corpus"
        query_terms = {t for q in QUERIES for t in tokenize(q)}
        assert query_terms & set(negative)
        one = bm25_scores(con, [negative[0]])
        two = bm25_scores(con, [negative[0], negative[0]])
        assert one and all(math.isclose(two[k], 2 * one[k]) for k in one)
        # a filter keeps only the asked ids, with the same scores
        some = set(sorted(one)[:2])
        assert bm25_scores(con, [negative[0]], ids_filter=some) == {k: one[k] for k in some}
    finally:
        con.close()
    assert int(meta["N"]) == n
    corpus = [tokenize(index_text(r)) for r in recs]
    assert int(meta["total_len"]) == sum(len(c) for c in corpus)
    assert int(meta["vocab"]) == len({t for c in corpus for t in c})


def test_index_rows_match_the_record_files(corpus_home):
    recs = {r["id"]: r for r in all_records(corpus_home)}
    rows = db_rows(corpus_home.index_db, "records")
    assert {r[0] for r in rows} == set(recs)
    cols = [d[1] for d in sqlite3.connect(corpus_home.index_db).execute("PRAGMA table_info(records)")]
    for row in rows:
        row = dict(zip(cols, row))
        rec = recs[row["id"]]
        assert row["text"] == rec["text"] and row["type"] == rec["type"] and row["scope_id"] == rec["scope_id"]
        assert corpus_home.record_file(row["path"]) == records.record_path(corpus_home.records, rec)
        assert row["doclen"] == len(tokenize(index_text(rec)))
        assert json.loads(row["times"]) == index_mod.activation_times(rec)
        assert row["tokens"] == rec["tokens"]
        assert set(json.loads(row["sessions"])) == {p["session"] for p in rec["provenance"]}
    # postings hold exactly the term frequencies of each record
    post = {}
    for term, rid, tf, dl in db_rows(corpus_home.index_db, "postings"):
        post.setdefault(rid, {})[term] = tf
        assert dl == len(tokenize(index_text(recs[rid])))  # each posting carries its record's length
    from collections import Counter
    for rid, rec in recs.items():
        assert post.get(rid, {}) == dict(Counter(tokenize(index_text(rec))))


# --------------------------------------------------------------------------- reindex

def _tables(db):
    out = {t: sorted(db_rows(db, t)) for t in TABLES}
    meta = dict(db_rows(db, "meta"))
    meta.pop("built_at", None)
    meta["idf_sum"] = round(float(meta["idf_sum"]), 9)
    out["meta"] = meta
    out["candidates"] = sorted((s, rid) for s, _, rid in db_rows(db, "candidates"))
    return out


def test_reindex_rebuilds_the_same_index_from_records_alone(corpus_home, tmp_path):
    h = make_home(tmp_path / "home")
    shutil.copytree(corpus_home.root, h.root)
    incremental = _tables(h.index_db)
    # rebuild from a home that has nothing but the record files (and the same path)
    for sub in ("index", "state", "inbox", "logs"):
        shutil.rmtree(h.path(sub))
    records_before = tree_bytes(h.records)
    proc = run_bin("cortex", "reindex", home=h)
    assert proc.returncode == 0, proc.stderr
    assert b"reindexed %d records" % len(records_before) in proc.stdout
    rebuilt = _tables(h.index_db)
    # the paths stored in the index are the copied home's
    for name in ("records",):
        incremental[name] = sorted(tuple(c.replace(corpus_home.root, h.root) if isinstance(c, str) else c for c in row)
                                   for row in incremental[name])
    assert rebuilt == incremental
    assert tree_bytes(h.records) == records_before  # reindex never writes records
    # a second reindex gives the same again
    assert run_bin("cortex", "reindex", home=h).returncode == 0
    assert _tables(h.index_db) == rebuilt


@pytest.mark.parametrize("breakage", ["yaml", "schema", "name", "utf8"])
def test_reindex_skips_and_reports_a_bad_record_file_without_touching_it(corpus_home, tmp_path, breakage):
    h = make_home(tmp_path / "home")
    shutil.copytree(corpus_home.root, h.root)
    good = all_records(h)
    victim = good[0]
    path = Path(records.record_path(h.records, victim))
    text = path.read_text()
    if breakage == "yaml":
        bad = text.replace("type: ", "type: [", 1)
    elif breakage == "schema":
        bad = text.replace("type: %s" % victim["type"], "type: opinion", 1)
    elif breakage == "name":
        shutil.move(path, path.with_name("r0000000000000000.md"))
        path = path.with_name("r0000000000000000.md")
        bad = text
    else:
        bad = text.replace("---\n", "---\n# \udcff\n", 1)
    data = bad.encode("utf-8", "surrogateescape")
    path.write_bytes(data)
    proc = run_bin("cortex", "reindex", home=h)
    assert proc.returncode == 1
    assert str(path).encode() in proc.stderr and b"skipped" in proc.stderr
    assert path.read_bytes() == data
    ids = {r[0] for r in db_rows(h.index_db, "records")}
    assert ids == {r["id"] for r in good} - {victim["id"]}
    proc = run_bin("cortex", "reindex", "--json", home=h)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["records"] == len(good) - 1
    assert [u["path"] for u in report["unreadable"]] == [str(path)]


def test_reindex_drops_records_whose_files_were_deleted(corpus_home, tmp_path):
    h = make_home(tmp_path / "home")
    shutil.copytree(corpus_home.root, h.root)
    recs = all_records(h)
    gone = recs[-1]
    os.unlink(records.record_path(h.records, gone))
    assert run_bin("cortex", "reindex", home=h).returncode == 0
    assert gone["id"] not in {r[0] for r in db_rows(h.index_db, "records")}
    assert gone["id"] not in {r[1] for r in db_rows(h.index_db, "postings")}
    assert gone["id"] not in {r[1] for r in db_rows(h.index_db, "sessions")}


def test_forget_hard_leaves_no_trace_of_the_text_in_the_index_file(home, tmp_path, monkeypatch):
    """secure_delete: a deleted record's text is overwritten in the SQLite file (and its WAL), not left in
    free space, also where SQLite is built with secure_delete off by default (emulated here: the probe
    shows such a connection leaves the text of a deleted row in the file)."""
    from cortex.ops import manage
    real_connect = sqlite3.connect

    def off_by_default(*args, **kwargs):
        con = real_connect(*args, **kwargs)
        con.execute("PRAGMA secure_delete=OFF")
        return con

    monkeypatch.setattr(sqlite3, "connect", off_by_default)
    marker = b"zorblaxquuxmarker"

    def raw_bytes(db) -> bytes:  # after a checkpoint, so free pages of the file are what is compared
        con = real_connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        return _raw_index_bytes(db)

    probe = str(tmp_path / "probe.sqlite")
    con = sqlite3.connect(probe)
    con.executescript("CREATE TABLE t(x TEXT); INSERT INTO t VALUES('the %s text'); DELETE FROM t;" % marker.decode())
    con.close()
    assert marker in raw_bytes(probe)

    home.ensure()
    cwd = str(tmp_path / "proj")
    for text in ("We chose SQLite over Postgres because it needs no server", "The importer skips blank rows",
                 "The Zorblaxquuxmarker cache is flushed before each migration", "Exports need the UTF-8 BOM"):
        made = manage.remember(home, text, cwd=cwd)
        if "Zorblax" in text:
            rid = made["record"]["id"]
    assert marker in raw_bytes(home.index_db)
    con = index_mod.connect(home.index_db)
    assert con.execute("PRAGMA secure_delete").fetchone()[0] == 1  # every writer's connection
    con.close()
    res = manage.forget(home, [manage.load(home, rid)], hard=True)
    assert [r["action"] for r in res] == ["deleted"]
    assert marker not in raw_bytes(home.index_db)


def test_forget_hard_scrubs_the_wal_while_another_process_holds_the_index_open(home, tmp_path):
    """A session-start or `--watch` run may hold the index open while `forget --hard` runs: SQLite then keeps
    the WAL (no last-close checkpoint), whose older frames still hold the record's text.  forget --hard
    checkpoints and truncates it, so neither file holds the text even before the other connection closes."""
    from cortex.ops import manage
    marker = b"zorblaxquuxmarker"
    home.ensure()
    cwd = str(tmp_path / "proj")
    made = manage.remember(home, "The Zorblaxquuxmarker cache is flushed before each migration", cwd=cwd)
    rid = made["record"]["id"]
    other = sqlite3.connect(home.index_db)  # open, idle: holds the WAL
    other.execute("SELECT count(*) FROM records").fetchone()
    try:
        for text in ("We chose SQLite over Postgres because it needs no server", "Exports need the UTF-8 BOM"):
            manage.remember(home, text, cwd=cwd)

        assert marker in _raw_index_bytes(home.index_db)
        manage.forget(home, [manage.load(home, rid)], hard=True)
        assert marker not in _raw_index_bytes(home.index_db)
        assert other.execute("SELECT count(*) FROM records WHERE id=?", (rid,)).fetchone()[0] == 0
    finally:
        other.close()


def test_forget_hard_with_a_reader_mid_query_deletes_logs_and_the_advised_reindex_empties_the_wal(home, tmp_path):
    """A reader inside a read transaction blocks the truncation: the delete still lands, the log says what
    happened and what to do, and doing it (`cortex reindex`) empties the WAL, even while another process
    still holds the index open."""
    import json
    from cortex.core import config
    from cortex.store import indexer
    from cortex.ops import manage
    home.ensure()
    manage.remember(home, "We chose SQLite over Postgres because it needs no server", cwd=str(tmp_path))
    holder = sqlite3.connect(home.index_db)  # open and idle for the whole test: SQLite keeps the WAL
    holder.execute("SELECT count(*) FROM records").fetchone()
    try:
        made = manage.remember(home, "The Zorblaxquuxmarker cache is flushed before each migration", cwd=str(tmp_path))
        reader = sqlite3.connect(home.index_db)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM records").fetchone()  # a read transaction stays open
        try:
            res = manage.forget(home, [manage.load(home, made["record"]["id"])], hard=True)
        finally:
            reader.close()
        assert [r["action"] for r in res] == ["deleted"]
        assert holder.execute("SELECT count(*) FROM records WHERE id=?", (made["record"]["id"],)).fetchone()[0] == 0
        lines = [json.loads(x) for x in open(home.log_file, encoding="utf-8")]
        warned = [x for x in lines if x.get("event") == "wal_not_truncated"]
        assert warned and "cortex reindex" in warned[0]["error"]
        assert b"zorblaxquuxmarker" in _raw_index_bytes(home.index_db)  # what the warning is about
        indexer.reindex(home, config.load(home, fast=False))
        assert b"zorblaxquuxmarker" not in _raw_index_bytes(home.index_db)
    finally:
        holder.close()


def _raw_index_bytes(db) -> bytes:
    """The index file and its WAL as they are on disk, without checkpointing first, lower-cased."""
    data = b""
    for p in (db, db + "-wal"):
        if os.path.exists(p):
            with open(p, "rb") as f:
                data += f.read()
    return data.lower()


def test_index_file_is_private(corpus_home):
    assert (os.stat(corpus_home.index_db).st_mode & 0o777) == 0o600


# --------------------------------------------------------------------------- older indexes

def _to_old_postings(db):
    """Turn an index's postings back into the form before the grouped postings: (term, id, tf), keyed by
    (term, id), without the record length."""
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE old_p(term TEXT NOT NULL, id TEXT NOT NULL, tf INTEGER NOT NULL, "
                      "PRIMARY KEY(term, id)) WITHOUT ROWID; INSERT INTO old_p SELECT term, id, tf FROM postings; "
                      "DROP TABLE postings; ALTER TABLE old_p RENAME TO postings; "
                      "CREATE INDEX postings_id ON postings(id);")
    con.commit()
    con.close()


def test_an_older_index_is_searched_the_same_and_migrated_by_the_next_writer(corpus_home, tmp_path):
    h = make_home(tmp_path / "home")
    shutil.copytree(corpus_home.root, h.root)
    before = _tables(h.index_db)
    queries = [tokenize(q) for q in QUERIES if tokenize(q)]
    con = index_mod.connect(h.index_db, readonly=True)
    want = [bm25_scores(con, q) for q in queries]
    con.close()
    _to_old_postings(h.index_db)
    con = index_mod.connect(h.index_db, readonly=True)
    assert not index_mod.has_postings_dl(con)
    assert [bm25_scores(con, q) for q in queries] == want  # read through the old path, same scores
    con.close()
    index_mod.Index(h.index_db).close()  # a writer migrates the postings in place
    con = index_mod.connect(h.index_db, readonly=True)
    assert index_mod.has_postings_dl(con)
    assert [bm25_scores(con, q) for q in queries] == want
    con.close()
    assert _tables(h.index_db) == before


def test_reindex_rebuilds_an_older_index_in_the_current_form(corpus_home, tmp_path):
    h = make_home(tmp_path / "home")
    shutil.copytree(corpus_home.root, h.root)
    assert run_bin("cortex", "reindex", home=h).returncode == 0
    fresh = _tables(h.index_db)
    _to_old_postings(h.index_db)
    assert run_bin("cortex", "reindex", home=h).returncode == 0
    con = index_mod.connect(h.index_db, readonly=True)
    assert index_mod.has_postings_dl(con)
    con.close()
    assert _tables(h.index_db) == fresh


def test_an_upsert_that_keeps_the_words_leaves_postings_and_statistics_as_a_full_count_gives(corpus_home, tmp_path):
    """A use or a status change rewrites the record row but not its postings, and finish() then keeps the
    corpus statistics; a change of words recounts them.  Either way the tables equal a rebuild's."""
    h = make_home(tmp_path / "home")
    shutil.copytree(corpus_home.root, h.root)
    recs = all_records(h)
    idx = index_mod.Index(h.index_db)
    try:
        a = dict(recs[0], status="archived", used=["2026-01-01T00:00:00Z"])
        idx.upsert(a, records.record_path(h.records, a), tokenize)
        assert not idx.stats_changed
        b = dict(recs[1], text=recs[1]["text"] + " zzzbrandnewword")
        idx.upsert(b, records.record_path(h.records, b), tokenize)
        assert idx.stats_changed
        idx.finish()
        idx.commit()
    finally:
        idx.close()
    incremental = _tables(h.index_db)
    con = sqlite3.connect(h.index_db)
    assert con.execute("SELECT df FROM terms WHERE term='zzzbrandnewword'").fetchone() == (1,)
    assert con.execute("SELECT status FROM records WHERE id=?", (a["id"],)).fetchone() == ("archived",)
    con.close()
    # the same changes counted from scratch
    idx = index_mod.Index(h.index_db)
    try:
        idx.stats_changed = True
        idx.finish()
        idx.commit()
    finally:
        idx.close()
    assert _tables(h.index_db) == incremental
