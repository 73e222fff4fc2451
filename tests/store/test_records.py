"""Records: the Markdown + YAML files, the one writer (RecordStore.upsert), ids, merging, broken files, secrets."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cortex.store import records
from cortex.store.records import RecordError, RecordStore, make_id, normalize_text
from cortex.core.schemas import validate
from cortex_testkit import (all_records, append_turns, copy_fixture, db_rows, drop_event, hook_payload, log_lines,
                      normalize, tree_bytes)

FAKE_KEY = "sk-ant-api03-" + "Zq8xW2vB7nM4kL9pR3tY6uI1oE5aS0dF" * 3 + "-AbCdEf"


def cand(text="We chose SQLite over Postgres because it needs no server", session="s1", at="2025-01-01T10:00:00Z",
         rtype="decision", scope_id="proj-1234abcd", **kw):
    c = {"scope": "L0", "scope_id": scope_id, "project": scope_id, "type": rtype, "text": text, "confidence": 0.7,
         "salience": 0.6, "files": [], "branch": None,
         "provenance": {"client": "claude-code", "session": session, "transcript": "/t/%s.jsonl" % session,
                        "ref": "L10", "layer": "keyword", "at": at}}
    c.update(kw)
    return c


@pytest.fixture
def store(tmp_path):
    return RecordStore(str(tmp_path / "records"))


def files_of(store) -> list:
    return list(records.iter_paths(store.root))


# --------------------------------------------------------------------------- the file format

def full_record():
    return {
        "id": "r0123456789abcdef", "scope": "L0", "scope_id": "proj-1234abcd", "project": "proj-1234abcd",
        "type": "plan", "status": "active", "confidence": 0.9, "salience": 0.9, "pinned": True, "priority": 2,
        "created": "2025-01-01T10:00:00Z", "updated": "2025-01-02T11:00:00.123Z",
        "seen": ["2025-01-01T10:00:00Z", "2025-01-02T11:00:00.123Z"], "used": ["2025-01-03T00:00:00Z"],
        "tokens": 42, "branch": "feature/x: y", "files": ["src/a b.py", "docs/«ü».md"],
        "plan": [{"text": "Write: the tests", "status": "completed"}, {"text": "- ship it #1", "status": "pending"}],
        "provenance": [{"client": "claude-code", "session": "s1", "transcript": "/t/s1.jsonl", "ref": "L3",
                        "layer": "structural", "at": "2025-01-01T10:00:00Z"}],
        "text": "[x] Write: the tests; [ ] - ship it #1\n\n---\nsecond paragraph: with `code` and 日本語",
    }


def test_dump_parse_round_trip():
    rec = full_record()
    assert validate("record", rec) == []
    text = records.dump(rec)
    assert text.startswith("---\nid: r0123456789abcdef\n")
    assert records.parse(text) == rec
    # field order is the documented one, text is the body
    keys = [line.split(":")[0] for line in text.split("\n---\n")[0].splitlines()[1:] if line and line[0] not in " -"]
    assert keys == [k for k in records.FIELD_ORDER if k in rec]
    assert text.rstrip("\n").endswith("second paragraph: with `code` and 日本語")


_texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"), min_size=1,
                 max_size=120).map(str.strip).filter(bool)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_texts, item=_texts, files=st.lists(_texts, max_size=3), branch=st.one_of(st.none(), _texts))
def test_dump_parse_round_trip_any_text(text, item, files, branch):
    rec = dict(full_record(), text=text, plan=[{"text": item, "status": "in_progress"}], files=files, branch=branch)
    assert records.parse(records.dump(rec)) == rec


@pytest.mark.parametrize("bad,why", [
    ("no front matter\n", "no YAML front matter"),
    ("---\nid: r1\ntext without a closing line\n", "not closed"),
    ("---\nid: [unclosed\n---\nbody\n", "invalid YAML"),
    ("---\n- a list\n---\nbody\n", "must be a mapping"),
])
def test_parse_errors_say_what_is_wrong(bad, why):
    with pytest.raises(RecordError, match=why):
        records.parse(bad, "x.md")


def test_unquoted_yaml_timestamps_are_read_back_as_strings():
    text = records.dump(full_record()).replace("created: '2025-01-01T10:00:00Z'", "created: 2025-01-01T10:00:00Z")
    assert "created: 2025-01-01T10:00:00Z\n" in text
    assert isinstance(records.parse(text)["created"], str)


def test_carriage_returns_survive_the_file(store):
    rec, _ = store.upsert(cand(text="step one\r\nstep two", rtype="learned"))
    assert records.read(store.path_of(rec))["text"] == rec["text"]
    assert store.upsert(cand(text="step one\r\nstep two", rtype="learned"))[1] == "unchanged"


# --------------------------------------------------------------------------- ids

def test_ids_are_deterministic_and_follow_identity():
    a = make_id("proj-1", "decision", normalize_text("Use `SQLite`, not Postgres."))
    assert a == make_id("proj-1", "decision", normalize_text("use sqlite not postgres"))
    assert a == make_id("proj-1", "decision", normalize_text("  USE  **SQLite**   not \"Postgres\" ... "))
    assert a != make_id("proj-2", "decision", normalize_text("use sqlite not postgres"))
    assert a != make_id("proj-1", "rejected", normalize_text("use sqlite not postgres"))
    assert a != make_id("proj-1", "decision", normalize_text("use sqlite not mysql"))
    assert len(a) == 17 and a.startswith("r") and int(a[1:], 16) >= 0


def test_same_candidate_in_two_stores_gets_the_same_id_and_bytes(tmp_path):
    s1, s2 = RecordStore(str(tmp_path / "a")), RecordStore(str(tmp_path / "b"))
    r1, _ = s1.upsert(cand())
    r2, _ = s2.upsert(cand(text="we chose sqlite over postgres because it needs no server."))
    assert r1["id"] == r2["id"]
    r3, _ = s2.upsert(cand(key="plan:s1", rtype="plan", text="[ ] a"))
    assert r3["id"] == make_id("proj-1234abcd", "plan", "plan:s1")
    assert Path(s1.path_of(r1)).read_bytes() != b""
    s3 = RecordStore(str(tmp_path / "c"))
    s3.upsert(cand())
    assert tree_bytes(s1.root) == tree_bytes(s3.root)


# --------------------------------------------------------------------------- upsert: create, merge, unchanged

def test_new_candidate_creates_one_valid_file(store):
    rec, action = store.upsert(cand(files=["b.py", "a.py", "b.py"]))
    assert action == "created"
    (path,) = files_of(store)
    assert path == os.path.join(store.root, "L0", "proj-1234abcd", rec["id"] + ".md")
    on_disk = records.read(path)
    assert on_disk == rec
    assert validate("record", on_disk) == []
    assert on_disk["files"] == ["a.py", "b.py"]
    assert on_disk["seen"] == ["2025-01-01T10:00:00Z"] and on_disk["used"] == []
    assert on_disk["created"] == on_disk["updated"] == "2025-01-01T10:00:00Z"
    assert on_disk["tokens"] > records.LINE_OVERHEAD_TOKENS
    assert store.changed == {rec["id"]}


def test_seen_again_in_a_later_session_is_merged(store):
    first, _ = store.upsert(cand(session="s1", at="2025-01-01T10:00:00Z", confidence=0.6, files=["a.py"]))
    rec, action = store.upsert(cand(text="We chose SQLite over Postgres because it needs no server.", session="s2",
                                    at="2025-01-05T09:00:00Z", confidence=0.8, files=["b.py"]))
    assert action == "merged"
    assert len(files_of(store)) == 1
    on_disk = records.read(store.path_of(first))
    assert on_disk["id"] == first["id"]
    assert [p["session"] for p in on_disk["provenance"]] == ["s1", "s2"]
    assert on_disk["seen"] == ["2025-01-01T10:00:00Z", "2025-01-05T09:00:00Z"]
    assert on_disk["created"] == "2025-01-01T10:00:00Z" and on_disk["updated"] == "2025-01-05T09:00:00Z"
    assert on_disk["confidence"] == 0.8
    assert on_disk["files"] == ["a.py", "b.py"]
    assert on_disk["text"] == first["text"]  # not a replace record: the first wording stays
    # an older session showing up late is merged in time order
    store.upsert(cand(session="s0", at="2024-12-31T00:00:00Z"))
    on_disk = records.read(store.path_of(first))
    assert [p["session"] for p in on_disk["provenance"]] == ["s0", "s1", "s2"]
    assert on_disk["seen"][0] == "2024-12-31T00:00:00Z"
    assert on_disk["updated"] == "2025-01-05T09:00:00Z"


def test_same_session_again_changes_nothing(store):
    rec, _ = store.upsert(cand())
    path = store.path_of(rec)
    before = Path(path).read_bytes()
    mtime = os.stat(path).st_mtime_ns
    store.changed.clear()
    again, action = store.upsert(cand())
    assert action == "unchanged"
    assert Path(path).read_bytes() == before
    assert os.stat(path).st_mtime_ns == mtime  # not even rewritten
    assert store.changed == set()


def test_replace_records_follow_the_newest_state_of_their_session(store):
    plan = dict(rtype="plan", key="plan:s1", replace=True)
    a, _ = store.upsert(cand(text="[>] step one; [ ] step two", at="2025-01-01T10:00:00Z",
                             plan=[{"text": "step one", "status": "in_progress"},
                                   {"text": "step two", "status": "pending"}], **plan))
    b, action = store.upsert(cand(text="[x] step one; [>] step two", at="2025-01-01T11:00:00Z",
                                  plan=[{"text": "step one", "status": "completed"},
                                        {"text": "step two", "status": "in_progress"}], **plan))
    assert action == "merged" and a["id"] == b["id"]
    on_disk = records.read(store.path_of(a))
    assert on_disk["text"] == "[x] step one; [>] step two"
    assert on_disk["plan"][0]["status"] == "completed"
    assert len(on_disk["provenance"]) == 1 and on_disk["provenance"][0]["at"] == "2025-01-01T11:00:00Z"
    # an older snapshot of the same session does not win
    _, action = store.upsert(cand(text="[ ] step one", at="2025-01-01T09:00:00Z",
                                  plan=[{"text": "step one", "status": "pending"}], **plan))
    assert action == "unchanged"
    assert records.read(store.path_of(a))["text"] == "[x] step one; [>] step two"


def test_archived_record_seen_again_is_active(store):
    rec, _ = store.upsert(cand())
    path = store.path_of(rec)
    r = records.read(path)
    r["status"] = "archived"
    Path(path).write_text(records.dump(r))
    rec2, action = store.upsert(cand(session="s9", at="2025-02-01T00:00:00Z"))
    assert action == "merged" and records.read(path)["status"] == "active"


# --------------------------------------------------------------------------- broken files

@pytest.mark.parametrize("broken", [
    "---\nid: r1\ntype: [decision\n---\nhand edit went wrong\n",
    "just some notes, no front matter\n",
    b"---\nid: \xff\xfe\n---\nnot utf-8\n",
])
def test_a_hand_broken_record_is_never_overwritten_and_is_reported(store, broken):
    rec, _ = store.upsert(cand())
    path = store.path_of(rec)
    data = broken if isinstance(broken, bytes) else broken.encode()
    Path(path).write_bytes(data)
    got, action = store.upsert(cand(session="s2", at="2025-03-01T00:00:00Z"))
    assert (got, action) == (None, "rejected")
    assert Path(path).read_bytes() == data
    assert store.rejected and "existing record unreadable" in store.rejected[-1][1]


def test_normalizer_leaves_a_broken_record_alone_and_logs_it(home, tmp_path):
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    payload = hook_payload(path)
    drop_event(home, payload)
    normalize(home)
    progress = [r for r in all_records(home) if r["type"] == "progress"][0]
    rec_path = records.record_path(home.records, progress)
    Path(rec_path).write_text("---\nthis: [is: broken\n---\nmy own notes\n")
    append_turns(path, [("user", "now also add a README with the build steps")])
    drop_event(home, payload)
    stats = normalize(home)
    assert stats["failed"] == 0 and stats["rejected"] == 1
    assert Path(rec_path).read_text() == "---\nthis: [is: broken\n---\nmy own notes\n"
    warn = [l for l in log_lines(home) if l.get("event") == "candidate_rejected"]
    assert warn and "existing record unreadable" in warn[-1]["reason"] and rec_path in warn[-1]["reason"]


def test_an_invalid_record_is_refused_before_it_reaches_disk(store):
    with pytest.raises(RecordError, match="record.schema"):
        store.upsert(cand(rtype="not-a-type"))
    assert files_of(store) == []
    rec, action = store.upsert(cand(text="   "))
    assert (rec, action) == (None, "rejected")


# --------------------------------------------------------------------------- secrets

def test_secrets_in_candidate_text_never_reach_the_file(store):
    rec, _ = store.upsert(cand(text="Deploy smoke tests use the staging key %s from the vault." % FAKE_KEY))
    data = Path(store.path_of(rec)).read_text()
    assert FAKE_KEY not in data and "api03" not in data
    assert "[REDACTED:anthropic_key]" in rec["text"]
    assert rec["redactions"] == 1
    assert validate("record", records.read(store.path_of(rec))) == []
    # the same text with a different key is the same record: the secret is not part of the identity
    other = FAKE_KEY.replace("Zq8", "Yy7")
    again, action = store.upsert(cand(text="Deploy smoke tests use the staging key %s from the vault." % other,
                                      session="s2", at="2025-01-02T00:00:00Z"))
    assert again["id"] == rec["id"] and action == "merged"


def test_private_spans_are_dropped(store):
    rec, _ = store.upsert(cand(text="Keep <private>my home address is 12 Elm St</private>the cache warm on boot"))
    assert "Elm" not in Path(store.path_of(rec)).read_text()
    assert store.upsert(cand(text="<private>only private</private>"))[1] == "rejected"


def _secret_session(home, tmp_path, turns):
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, turns)
    drop_event(home, hook_payload(path))
    stats = normalize(home)
    assert stats["done"] == 1 and stats["failed"] == 0
    return path


def test_secrets_in_a_transcript_reach_no_record_index_or_log(home, tmp_path):
    _secret_session(home, tmp_path, [
        ("assistant", "[MEMORY: decision] Deploy smoke tests use the staging key %s from the vault." % FAKE_KEY),
        ("user", "please also rotate %s after the release, it leaked in CI" % FAKE_KEY),
        ("assistant", "[MEMORY: gotcha] The release job needs the vault token to be exported first."),
    ])
    decision = [r for r in all_records(home) if r["type"] == "decision"]
    assert decision and "[REDACTED:anthropic_key]" in decision[0]["text"]
    progress = [r for r in all_records(home) if r["type"] == "progress"]
    assert "[REDACTED:anthropic_key]" in progress[0]["text"]
    for where in ("records", "index", "logs"):
        for rel, data in tree_bytes(home.path(where)).items():
            assert FAKE_KEY.encode() not in data, "%s/%s" % (where, rel)
    for table in ("records", "postings", "terms"):
        assert FAKE_KEY.lower() not in json.dumps(db_rows(home.index_db, table)).lower()


def test_private_span_does_not_reach_the_log(home, tmp_path):
    _secret_session(home, tmp_path, [("assistant", "[MEMORY: gotcha] <private>the db password is hunter2-xyzzy"
                                                   "</private>")])
    for rel, data in tree_bytes(home.path("logs")).items():
        assert b"hunter2-xyzzy" not in data, rel


def test_secret_in_the_last_prompt_is_not_copied_into_the_state(home, tmp_path):
    _secret_session(home, tmp_path, [("user", "deploy with the staging key %s now" % FAKE_KEY)])
    assert FAKE_KEY not in Path(home.cursors).read_text()
