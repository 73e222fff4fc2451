"""The benchmark suite and the fast paths it drove: no timed assertions here, only that the bench runs and
prints its table, that the fast paths give exactly what the slow ones give (record reading, the schema
check, the parallel rebuild, incremental candidates, BM25 scores == rank_bm25), and that the LoCoMo
scorer computes recall correctly on a small made-up conversation."""
from __future__ import annotations

import io
import json
import math
import os
import random
import sqlite3
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cortex.bench import run as bench, locomo

from cortex.store import frontmatter, indexer, records, shortlist

from cortex.core import schemas
from cortex.core.home import Home
from cortex.store.index import bm25_scores, index_text
from cortex.store.terms import tokenize

from cortex_testkit import REPO, db_rows

LOCOMO_DATA = Path(locomo.DEFAULT_DATA)


def _home_with(tmp_path, n, name="home", seed=7) -> dict:
    proj = tmp_path / "proj"
    proj.mkdir(exist_ok=True)
    return bench.build_home(str(tmp_path / name), n, str(proj), seed=seed)


# -- the benchmark runs and prints its rows ------------------------------------------------------------------

def test_bench_at_a_tiny_size_prints_every_row(tmp_path, monkeypatch):
    out, log = io.StringIO(), io.StringIO()
    json_path = tmp_path / "rows.json"
    rows = bench.run_bench(sizes=(50,), runs=1, warmup=0, reindex_runs=1, throughput_runs=1, copies=1, pending=5,
                           transcript_mb=0.2, out=out, log=log, json_path=str(json_path))
    text = out.getvalue()
    for name in ("python3 -c pass", "cortex-stop", "cortex-pre-compact", "cortex-session-start", "cortex-prompt",
                 "cortex recall", "cortex-normalize (idle)", "cortex-normalize throughput", "cortex reindex",
                 "rank-bm25: load pickle + query", "sqlite postings: bm25_scores"):
        assert any(line.startswith(name) for line in text.splitlines()), (name, text)
    assert "median ms" in text and "ratio" in text and "peak MB" in text and "target" in text
    assert "its scores equal the SQLite path's: True" in text
    # every measured process exited 0, and the figures are numbers
    for r in rows:
        if not r.skipped:
            assert r.codes <= {0}, (r.name, r.codes)
            s = r.stats()
            assert s["median_ms"] > 0 and (s["peak_mb"] is None or s["peak_mb"] > 1)
    tp = [r for r in rows if r.name == "cortex-normalize throughput"][0]
    assert tp.value > 0
    saved = json.loads(json_path.read_text())
    assert {r["case"] for r in saved["rows"]} >= {"cortex-stop", "cortex reindex"}


def test_bench_command_line_documents_its_options():
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "cortex.bench", "--help"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 0
    for opt in ("--sizes", "--runs", "--reindex-runs", "--copies", "--pending", "--transcript-mb", "--cases",
                "--keep", "--json", "--locomo", "--data", "--passages"):
        assert opt in p.stdout


def test_bench_with_passages_measures_the_search_cases_in_a_home_with_episodes(tmp_path):
    out, log = io.StringIO(), io.StringIO()
    rows = bench.run_bench(sizes=(50,), runs=1, warmup=0, out=out, log=log, passages=300,
                           cases=("session-start", "prompt", "recall"))
    assert [r.name for r in rows] == ["python3 -c pass", "cortex-session-start", "cortex-prompt", "cortex recall",
                                      "cortex recall --no-use"]
    for r in rows[1:]:
        assert not r.skipped and r.codes == {0} and r.passages == 300, (r.name, r.note)
    assert "50 + 300 passages" in out.getvalue()
    assert bench.PASSAGE_TARGETS["cortex-prompt"] == ("ratio", 4.0)
    assert rows[2].target == ("ratio", 4.0) and rows[3].target == ("ratio", 5.0)


def test_bench_passages_bulk_reindex_equals_incremental_updates(tmp_path):
    """The bench's episodes, indexed by `cortex reindex`'s bulk step (indexer.reindex_passages), give the
    passage rows and the search engine's documents the normalizer's incremental updates give from the same
    files (for each of a sample of terms, the same passages hold it)."""
    import shutil
    from cortex.bench import passages as bp
    from cortex.store import episodes
    info = _home_with(tmp_path, 200)
    home = Home(info["home"])
    got = bp.write_episodes(home, 1234, info["project"], index=False)
    assert got["passages"] is None and 45 <= got["sessions"] <= 100  # 12-28 turns a session, a passage a turn
    paths = list(episodes.iter_paths(home.episodes))
    assert len(paths) == got["sessions"]
    assert {os.path.basename(os.path.dirname(p)) for p in paths} == {info["project"], bp.OTHER_PROJECT}
    n = 0
    for p in paths:
        front, turns = episodes.read(p)
        assert schemas.validate("episode", front) == []
        n += len(episodes.passages(turns))
    assert n == 1234
    shutil.copytree(info["home"], str(tmp_path / "copy"))
    other = Home(str(tmp_path / "copy"))
    # a copied episode file (the same session twice) is replaced, as an incremental update replaces it
    dup = paths[0] + ".copy.md"
    shutil.copyfile(paths[0], dup)
    shutil.copyfile(paths[0], os.path.join(other.episodes, os.path.relpath(dup, home.episodes)))
    assert bp.index_passages(home) == 1234  # cortex reindex's step, in bulk
    # what the normalizer's incremental updates give from the same files
    for p in sorted(episodes.iter_paths(other.episodes)):
        front, turns = episodes.read(p)
        indexer.update_passages(other, front, turns, p)
    import sqlite3
    for con_path in (home.index_db, other.index_db):
        con = sqlite3.connect(con_path)
        assert con.execute("SELECT COUNT(*) FROM passages").fetchone()[0] == 1234
        con.close()

    from cortex.store import search
    from cortex.store.terms import tokenize
    sample = sorted(set(tokenize(" ".join(episodes.read(p)[1][0]["text"] for p in paths[:40]))))
    assert len(sample) > 30

    def content(db):
        con = sqlite3.connect(db)
        try:
            rows = sorted(con.execute("SELECT id, session, anchor, project, client, at, first_turn, last_turn, path "
                                      "FROM passages"))
        finally:
            con.close()
        reader = search.Reader(db, "passages")
        return rows, reader.num_docs(), {t: sorted(k for _, k in reader.top([t], 10 ** 6)) for t in sample}
    assert content(home.index_db) == content(other.index_db)
    # the same generator gives the same episodes
    again = Home(str(tmp_path / "again"))
    again.ensure()
    now = 1.8e9
    bp.write_episodes(again, 50, "p", now=now, index=False)
    first = {os.path.basename(p): open(p, "rb").read() for p in episodes.iter_paths(again.episodes)}
    shutil.rmtree(again.episodes)
    bp.write_episodes(again, 50, "p", now=now, index=False)
    assert first == {os.path.basename(p): open(p, "rb").read() for p in episodes.iter_paths(again.episodes)}


def test_build_home_makes_distinct_valid_records(tmp_path):
    info = _home_with(tmp_path, 300)
    assert info["records"] == 300
    paths = list(records.iter_paths(os.path.join(info["home"], "records")))
    recs = [records.read(p) for p in paths]
    assert len({r["text"] for r in recs}) == 300
    from cortex.core.schemas import validate
    assert all(validate("record", r) == [] for r in recs)
    assert {r["scope"] for r in recs} == {"L0", "L1"}


def test_dump_fast_writes_exactly_what_records_dump_writes():
    rng = random.Random(3)
    vocab = bench.vocabulary()
    for i in range(400):
        rec = bench.bench_record(rng, i, "proj-1a2b3c4d", "personal", 1.7e9, vocab)
        assert bench.dump_fast(rec) == records.dump(rec)


# -- fast record reading == YAML ---------------------------------------------------------------------------

def _real_records(tmp_path):
    """Records made from every bundled real transcript by the whole loop (plans, files, file states...)."""
    from cortex.capture import hook as capture
    from cortex.ingest import run as normalize
    home = Home(str(tmp_path / "real-home")).ensure()
    sessions, _ = bench.replay_sessions(str(tmp_path / "client"), 1)
    for client, path, sid, cwd in sessions:
        payload = {"session_id": sid, "transcript_path": path, "cwd": cwd or os.path.dirname(path),
                   "hook_event_name": "Stop"}
        capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), client, home))
    normalize.run(home)
    return [Path(p).read_text(encoding="utf-8") for p in records.iter_paths(home.records)]


def test_fast_parse_equals_yaml_on_real_and_bench_records(tmp_path):
    texts = _real_records(tmp_path)
    assert len(texts) > 10
    rng = random.Random(5)
    texts += [records.dump(bench.bench_record(rng, i, "p-1", "personal", 1.7e9, bench.vocabulary()))
              for i in range(200)]
    fast = 0
    for text in texts:
        got = frontmatter.fast_parse(text)
        if got is not None:
            fast += 1
            assert got == records.parse(text)
    assert fast >= len(texts) * 0.8  # the fast path is the common path


_ODD = ["yes", "No", "ON", "off", "null", "Null", "~", "true", "False", "y", "n", "1", "01", "0x1f", "1e3", "1.5",
        "-2", ".inf", "2024-01-02", "2024-01-02T03:04:05Z", "12:30", "a: b", "a #b", "#x", "- x", "[x]", "{x}",
        "x, y", "'q'", '"dq"', "it's", "tab\there", "line\nbreak", " lead", "trail ", "", "é", "日本", "a/b.c",
        "/abs/path.py", "@at", "`tick`", "&amp", "*star", "!bang", "%pct", "|pipe", ">gt", "?q", "L12", "s3"]
_text = st.one_of(st.sampled_from(_ODD), st.text(alphabet=string.printable + "éü日", max_size=30))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(_text, max_size=3), branch=st.one_of(st.none(), _text), session=st.one_of(st.none(), _text),
       ref=st.one_of(st.none(), _text), plan=st.lists(st.tuples(_text, st.sampled_from(["pending", "completed"])),
                                                       max_size=2),
       conf=st.one_of(st.floats(0, 1), st.integers(0, 1)), prio=st.integers(-3, 3), text=_text,
       extra=st.dictionaries(st.sampled_from(["related", "redactions", "merged_into", "archived_at", "on", "yes",
                                              "null", "x1"]),
                             st.one_of(st.none(), st.integers(0, 9), _text, st.lists(_text, max_size=2)), max_size=2))
def test_fast_parse_is_never_wrong(files, branch, session, ref, plan, conf, prio, text, extra):
    """Whatever the field values, fast_parse gives what records.parse gives, or declines (None)."""
    at = "2026-01-02T03:04:05.678Z"
    rec = {"id": "r0123456789abcdef", "scope": "L0", "scope_id": "proj-1", "project": "proj-1", "type": "plan",
           "status": "active", "confidence": conf, "salience": 0.5, "pinned": False, "priority": prio,
           "created": at, "updated": at, "seen": [at], "used": [], "tokens": 3, "branch": branch,
           "files": files, "plan": [{"text": t, "status": s} for t, s in plan],
           "provenance": [{"client": "c", "session": session, "transcript": None, "ref": ref, "layer": "tag",
                           "at": at}],
           "text": (text.strip() or "x")}
    rec.update(extra)
    dumped = records.dump(rec)
    got = frontmatter.fast_parse(dumped)
    if got is not None:
        assert got == records.parse(dumped)


def test_read_record_reads_and_fails_like_records_read(tmp_path):
    rec = bench.bench_record(random.Random(1), 1, "p-1", "personal", 1.7e9)
    good = records.dump(rec)
    cases = {"plain.md": good.encode(), "crlf.md": good.replace("\n", "\r\n").encode(),
             "cr.md": good.replace("\n", "\r").encode(), "latin1.md": good.replace("case", "caf\xe9").encode("latin-1"),
             "nofront.md": b"just text\n", "unclosed.md": b"---\nid: x\n", "badyaml.md": b"---\nid: [x\n---\nt\n",
             "list.md": b"---\n- a\n---\nt\n", "empty.md": b""}
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        try:
            want = ("ok", records.read(str(p)))
        except (records.RecordError, OSError) as e:
            want = ("error", type(e), str(e))
        try:
            got = ("ok", records.read(str(p)))
        except (records.RecordError, OSError) as e:
            got = ("error", type(e), str(e))
        assert got == want, name


# -- the schema check is sound ------------------------------------------------------------------------------

_any = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                              st.text(max_size=5), st.sampled_from(["L0", "active", "pending", "keyword",
                                                                    "r0123456789abcdef", "proj-1"])),
                    lambda c: st.one_of(st.lists(c, max_size=2), st.dictionaries(st.text(max_size=3), c, max_size=2)),
                    max_leaves=4)
_FIELDS = ["id", "scope", "scope_id", "project", "type", "text", "confidence", "salience", "pinned", "priority",
           "status", "created", "seen", "used", "tokens", "files", "branch", "plan", "provenance", "related",
           "file_state", "redactions", "merged_into", "unknown_key"]


@settings(max_examples=400, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(_FIELDS), _any, max_size=3),
       drop=st.lists(st.sampled_from(_FIELDS), max_size=2))
def test_fast_schema_check_never_accepts_what_jsonschema_rejects(changes, drop):
    from cortex.core.schemas import jsonschema_problems as validate  # jsonschema alone: the reference
    at = "2026-01-02T03:04:05Z"
    rec = {"id": "r0123456789abcdef", "scope": "L0", "scope_id": "proj-1", "project": "proj-1", "type": "plan",
           "status": "active", "confidence": 0.5, "salience": 0.5, "pinned": False, "priority": 0, "created": at,
           "updated": at, "seen": [at], "used": [], "tokens": 3, "branch": None, "files": ["a.py"],
           "plan": [{"text": "x", "status": "pending"}],
           "provenance": [{"client": "c", "session": "s", "layer": "tag", "at": at}], "text": "x"}
    assert schemas.fast_check("record")(rec) and validate("record", rec) == []
    rec.update(changes)
    for k in drop:
        rec.pop(k, None)
    if schemas.fast_check("record")(rec):
        assert validate("record", rec) == []
    assert schemas.validate("record", rec) == validate("record", rec)


# -- the rebuild: parallel == serial, duplicates and broken files as before -----------------------------------

def _tables(db):
    out = {t: sorted(db_rows(db, t)) for t in ("records", "postings", "terms", "sessions", "candidates")}
    meta = dict(db_rows(db, "meta"))
    meta.pop("built_at", None)
    meta["idf_sum"] = round(float(meta["idf_sum"]), 9)
    out["meta"] = meta
    return out


def test_parallel_reindex_builds_the_same_index_as_one_process(tmp_path, monkeypatch):
    from cortex.core import config
    monkeypatch.setattr(indexer, "REINDEX_CHUNK", 40)
    info = _home_with(tmp_path, 400)
    home = Home(info["home"])
    # a broken file and the same record id in a second scope folder (the later file wins)
    paths = list(records.iter_paths(home.records))
    Path(paths[3]).write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    twin = records.read(paths[10])
    twin_path = Path(home.records) / "L1" / "zzz-other" / (twin["id"] + ".md")
    twin_path.parent.mkdir(parents=True)
    twin_path.write_text(records.dump(dict(twin, scope="L1", scope_id="zzz-other", text="a twin record")),
                         encoding="utf-8")
    cfg = config.load(home, fast=False)
    res1 = indexer.reindex(home, cfg, workers=1)
    one = _tables(home.index_db)
    res2 = indexer.reindex(home, cfg, workers=2)
    two = _tables(home.index_db)
    assert res1 == res2 and res1["records"] == 400 and len(res1["unreadable"]) == 1
    assert one == two
    rows = {r[0]: r for r in db_rows(home.index_db, "records")}
    assert rows[twin["id"]][2] == "zzz-other"  # the later path (L1 after L0) won, as upsert would
    # and the same as the old one-record-at-a-time path builds
    from cortex.store.index import Index
    idx = Index(home.index_db)
    try:
        for t in ("records", "postings", "terms", "sessions", "candidates", "meta"):
            idx.con.execute("DELETE FROM %s" % t)
        for p in records.iter_paths(home.records):
            try:
                rec = records.read(p)
            except records.RecordError:
                continue
            idx.upsert(rec, p, tokenize)
        idx.finish()
        idx.commit()
    finally:
        idx.close()
    old = _tables(home.index_db)
    for t in ("records", "postings", "terms", "sessions"):
        assert old[t] == one[t], t
    assert old["meta"]["N"] == one["meta"]["N"] and old["meta"]["idf_sum"] == one["meta"]["idf_sum"]


def test_incremental_candidates_equal_a_full_ranking(tmp_path, monkeypatch):
    from cortex.core import config
    from cortex.store.index import Index
    info = _home_with(tmp_path, 300)
    home = Home(info["home"])
    cfg = json.loads(json.dumps(config.load(home, fast=False)))
    cfg["session_start"]["candidates_per_scope"] = 25
    monkeypatch.setattr(shortlist, "INCREMENTAL_FROM", 10)
    now = 1.8e9
    scope_id = info["project"]
    idx = Index(home.index_db)
    try:
        shortlist.compute_candidates(idx, cfg, scope_id, now=now)
        ids = [r[0] for r in idx.con.execute("SELECT id FROM records WHERE scope_id=? ORDER BY id", (scope_id,))]
        # a record far down the list is pinned, one candidate is archived
        cands = [r[0] for r in idx.con.execute("SELECT id FROM candidates WHERE scope_id=? ORDER BY rank", (scope_id,))]
        low = [i for i in ids if i not in cands][0]
        idx.con.execute("UPDATE records SET pinned=1 WHERE id=?", (low,))
        idx.con.execute("UPDATE records SET status='archived' WHERE id=?", (cands[0],))
        shortlist.refresh_candidates(idx, cfg, scope_id, {low, cands[0]}, now=now + 60)
        inc = [r[0] for r in idx.con.execute("SELECT id FROM candidates WHERE scope_id=? ORDER BY rank", (scope_id,))]
        shortlist.compute_candidates(idx, cfg, scope_id, now=now + 60)
        full = [r[0] for r in idx.con.execute("SELECT id FROM candidates WHERE scope_id=? ORDER BY rank", (scope_id,))]
    finally:
        idx.close()
    assert inc[0] == low and cands[0] not in inc
    assert inc[:24] == full[:24]  # the last place is the one the archived record left (filled at the next full pass)


# -- BM25: the SQLite postings path == rank_bm25 ----------------------------------------------------------------

@pytest.mark.parametrize("query", ["session token cache", "why did we drop the Redis cache", "sqlite postgres lock",
                                   "cortex/index_parser_1.py", "zzznothing", "session session index",
                                   "the tests failed after changing the migration"])
def test_bm25_fast_path_equals_rank_bm25(tmp_path_factory, query):
    from rank_bm25 import BM25Okapi
    root = tmp_path_factory.getbasetemp() / "bm25-home"
    if not (root / "home" / "index" / "cortex.sqlite").exists():
        root.mkdir(exist_ok=True)
        _home_with(root, 600)
    home = Home(str(root / "home"))
    recs = [records.read(p) for p in records.iter_paths(home.records)]
    bm = BM25Okapi([tokenize(index_text(r)) for r in recs])
    terms = tokenize(query)
    want = dict(zip([r["id"] for r in recs], bm.get_scores(terms)))
    con = sqlite3.connect(home.index_db)
    try:
        got = bm25_scores(con, terms)
        some = set(sorted(want)[::3])
        filtered = bm25_scores(con, terms, ids_filter=some)
    finally:
        con.close()
    assert set(got) == {k for k, v in want.items() if v != 0} or query == "zzznothing"
    for rid, v in want.items():
        assert math.isclose(got.get(rid, 0.0), v, rel_tol=1e-12, abs_tol=1e-12), (rid, got.get(rid), v)
    assert filtered == {k: v for k, v in got.items() if k in some}
    if query != "zzznothing":
        assert got


# -- LoCoMo ------------------------------------------------------------------------------------------------------

def synthetic_conversation() -> dict:
    """Two sessions, in the LoCoMo JSON shape; questions whose evidence is known to be findable or not."""
    s1 = [("Ann", "I adopted a grey kitten named Pixel yesterday."),
          ("Bob", "Congrats! I started learning the cello this spring."),
          ("Ann", "Pixel already broke my favourite lamp."),
          ("Bob", "Haha, kittens do that.")]
    s2 = [("Ann", "We went hiking on Mount Rainier with my sister."),
          ("Bob", "My cello teacher moved to Boston, so lessons are online now."),
          ("Ann", "Sounds tough. Did you sell the old piano?"),
          ("Bob", "Yes, a neighbour bought the piano last week.")]
    conv = {"speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_2_date_time": "10:00 am on 20 June, 2023"}
    for n, sess in ((1, s1), (2, s2)):
        conv["session_%d" % n] = [{"speaker": sp, "dia_id": "D%d:%d" % (n, i + 1), "text": tx}
                                  for i, (sp, tx) in enumerate(sess)]
    conv["session_1"][2]["blip_caption"] = "a photo of a broken lamp"
    qa = [{"question": "What is the name of the kitten Ann adopted?", "answer": "Pixel", "evidence": ["D1:1"],
           "category": 4},
          {"question": "Where did Bob's cello teacher move to?", "answer": "Boston", "evidence": ["D2:2"],
           "category": 4},
          # two evidence turns, only one holds the question's words
          {"question": "Who bought the piano?", "answer": "a neighbour", "evidence": ["D2:4", "D1:4"], "category": 1},
          # nothing in the conversation shares a word with it
          {"question": "zebra quantum xylophone?", "answer": "-", "evidence": ["D1:2"], "category": 5},
          # malformed ids as the dataset has them, and one without evidence (not counted)
          {"question": "Which mountain did Ann go hiking on with her sister?", "answer": "Rainier", "evidence": ["D:2:01"], "category": 2},
          {"question": "No evidence here?", "answer": "-", "evidence": [], "category": 3}]
    return {"sample_id": "synthetic-1", "conversation": conv, "qa": qa}


def test_locomo_reads_the_json_shape():
    conv = synthetic_conversation()
    turns = locomo.turns_of(conv)
    assert [t["dia_id"] for t in turns] == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3", "D2:4"]
    assert turns[0]["date"] == "2023-05-08T13:56:00Z" and turns[4]["date"] == "2023-06-20T10:00:00Z"
    assert turns[2]["caption"] == "a photo of a broken lamp"
    qs = locomo.questions_of(conv, turns)
    assert len(qs) == 5 and qs[4]["evidence"] == ["D2:1"]
    assert locomo.norm_evidence(["D8:6; D9:17", "D30:05", "D", "D99:1"], {"D8:6", "D9:17", "D30:5"}) == \
        ["D8:6", "D9:17", "D30:5"]


def test_locomo_scoring_has_the_known_answer():
    assert locomo.score_question(["D1", "D2", "D3"], ["D2", "D9"]) == {
        "recall@5": 0.5, "hit@5": 1.0, "recall@10": 0.5, "hit@10": 1.0}
    ranking = ["x%d" % i for i in range(5)] + ["D7"] + ["y%d" % i for i in range(4)] + ["D8"]
    assert locomo.score_question(ranking, ["D7", "D8"]) == {"recall@5": 0.0, "hit@5": 0.0, "recall@10": 0.5,
                                                            "hit@10": 1.0}
    assert locomo.fuse([["a", "b"], ["b", "c"]], 3) == ["b", "a", "c"]


@pytest.mark.parametrize("variant", ["rank-bm25 raw turns", "recall: turn", "recall: speaker+date",
                                     "recall: +context"])
def test_locomo_recall_on_a_synthetic_conversation(variant):
    res = locomo.evaluate([synthetic_conversation()], [variant])
    s = res[variant]
    assert res["_info"] == dict(res["_info"], conversations=1, turns=8, questions=5)
    cats = s["categories"]
    assert cats[4]["n"] == 2 and cats[4]["recall@5"] == 1.0  # kitten -> D1:1, cello teacher -> D2:2
    assert cats[1]["recall@10"] == 0.5 and cats[1]["hit@10"] == 1.0  # piano: D2:4 found, D1:4 has no shared word
    assert cats[5]["recall@10"] == 0.0  # no shared word at all
    assert cats[2]["hit@10"] == 1.0  # the repaired id D2:1 is found
    assert math.isclose(s["all"]["recall@10"], (1 + 1 + 0.5 + 0 + 1) / 5)
    assert "R@10" in locomo.format_results(res)


@pytest.mark.skipif(not LOCOMO_DATA.is_file(), reason="LoCoMo data not present at %s" % LOCOMO_DATA)
def test_locomo_on_one_real_conversation():
    res = locomo.evaluate(locomo.load(str(LOCOMO_DATA)), ["rank-bm25 raw turns", "recall: +context"],
                          conversations=1)
    for v in ("rank-bm25 raw turns", "recall: +context"):
        for k in ("recall@5", "recall@10", "hit@10"):
            assert 0.0 <= res[v]["all"][k] <= 1.0
    assert res["_info"]["questions"] > 100


# -- plain scalars without YAML ------------------------------------------------------------------------

def test_plain_scalars_are_read_as_yaml_reads_them_without_importing_it():
    import yaml
    firsts = {k for k in yaml.resolver.Resolver.yaml_implicit_resolvers if k}
    assert firsts <= frontmatter._RESOLVER_FIRST  # every character a YAML implicit rule starts with is sent on
    samples = ["", "0", "-0", "00", "007", "12", "-12", "+12", "1.5", "-1.5", "1.", ".5", "1.5e3", "1_000", "0x1F",
               "1:30", "2024-01-01", "true", "True", "yes", "No", "on", "OFF", "null", "Null", "~", "<<", "=", "nan",
               ".inf", "fix", "active", "onion", "yesterday", "nullable", "r27ac4201b3aa1c9b", "1-2.3", "--5", "0.93"]
    rnd = random.Random(5)
    alpha = "0123456789.-+_:eExabTtFfNnOoYy~<=!&* rz"
    samples += ["".join(rnd.choice(alpha) for _ in range(rnd.randint(1, 6))) for _ in range(5000)]
    for s in samples:
        got, want = frontmatter._plain_value(s), frontmatter._plain_value_yaml(s)
        assert got is want or (got == want and type(got) is type(want)), s


def test_reading_a_bench_record_does_not_import_yaml(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "r.md"
    rec = {"id": "r0123456789abcdef", "scope": "L0", "scope_id": "p-1", "project": "p-1", "type": "fix",
           "text": "Fixed the cache token; true story", "confidence": 0.93, "salience": 0.5, "pinned": False,
           "status": "active", "created": "2026-01-01T00:00:00Z", "updated": "2026-01-01T00:00:00Z",
           "provenance": [{"client": "cli", "session": None, "transcript": None, "ref": None, "layer": "manual",
                           "at": "2026-01-01T00:00:00Z"}], "tokens": 9, "priority": 0, "used": ["2026-01-02T00:00:00Z"]}
    path.write_text(records.dump(rec))
    code = ("import sys; from cortex.store.records import read; r = read(%r); "
            "print(r == %r, 'yaml' in sys.modules)" % (str(path), records.parse(records.dump(rec))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False"]
