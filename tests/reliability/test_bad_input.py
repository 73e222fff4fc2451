"""Bad input: whatever a hook or a transcript holds, every event ends in done/ or, with a one-line reason, in
failed/; the rest of the batch is processed; nothing crashes or grows without bound."""
from __future__ import annotations

import json
import os
import resource
import shutil
from pathlib import Path

import pytest

from cortex.ingest import run as norm
from cortex_testkit import append_turns

from .helpers import (all_event_names, copy_fixture, drop_event, env_for, env_int, event_names,
                      hook_payload, index_tables, make_home, read_log, reason_of, record_files, report, run_measured,
                      script)

MiB = 1024 * 1024


def _hook(home, raw: bytes, client="claude-code", kind="cortex-stop"):
    """Run the real hook; returns (new event name or None, returncode, stdout+stderr, peak RSS MiB, seconds)."""
    before = set(event_names(home, "pending"))
    args = ("--client", client) if client else ()
    rc, out, err, rss, secs = run_measured(script(kind, *args), env_for(home), raw, timeout=120)
    new = sorted(set(event_names(home, "pending")) - before)
    assert len(new) <= 1
    return (new[0] if new else None), rc, out + err, rss, secs


BAD_PAYLOADS = {
    # label: (stdin bytes, words the reason must contain)
    "empty stdin": (b"", "not a JSON object"),
    "not JSON": (b"this is { not json", "not JSON"),
    "JSON list": (b"[1, 2, 3]", "JSON but not an object"),
    "JSON string": (b'"just a string"', "JSON but not an object"),
    "JSON number": (b"42", "JSON but not an object"),
    "JSON null": (b"null", "JSON but not an object"),
    "object without fields": (b"{}", "names no transcript_path"),
    "wrong types": (json.dumps({"session_id": 12, "transcript_path": ["a.jsonl"], "cwd": {"x": 1}}).encode(),
                    "does not match schemas/event.schema.json"),
    "invalid UTF-8": (b'{"session_id": "\xff\xfe\xfd", "cwd": "/tmp"}', "not JSON"),
    "NUL bytes": (b"\x00\x00\x00{}", "not JSON"),
    "truncated JSON": (b'{"session_id": "abc", "transcript_path": "/tmp/x.jsonl"', "not JSON"),
}


def test_bad_hook_input_is_quarantined_with_a_reason_and_the_batch_goes_on(tmp_path):
    home = make_home(tmp_path / "home")
    good_path = copy_fixture("cc-1.0.98", tmp_path / "client")
    made = {}
    for label, (raw, _why) in BAD_PAYLOADS.items():
        name, rc, output, _rss, secs = _hook(home, raw)
        assert rc == 0 and output == b"", label
        assert name, "%s: the hook dropped no event" % label
        made[label] = name
    # an unknown client named by the hook's flag
    name, rc, output, _r, _s = _hook(home, json.dumps(hook_payload(good_path)).encode(), client="vscode")
    assert rc == 0 and output == b""
    made["unknown --client"] = name
    good, rc, _o, _r, _s = _hook(home, json.dumps(hook_payload(good_path)).encode())
    rc, out, err, _rss, _s = run_measured(script("cortex-normalize"), env_for(home))
    assert rc == 0, err
    failed = set(event_names(home, "failed"))
    reasons = {}
    for label, name in made.items():
        assert name in failed, label
        reasons[label] = reason_of(home, name).splitlines()[0]
        want = BAD_PAYLOADS[label][1] if label in BAD_PAYLOADS else "does not match schemas/event.schema.json"
        assert want in reasons[label], (label, reasons[label])
    assert event_names(home, "done") == [good]
    assert record_files(home)
    report("bad input: hook payloads", cases=len(made), quarantined=len(made), good_event_done=1)
    for label, r in reasons.items():
        print("    %-22s -> %s" % (label, r[:150]))


def test_a_20_mb_payload_keeps_the_hook_bounded_and_fast(tmp_path):
    home = make_home(tmp_path / "home")
    raw = json.dumps({"session_id": "big", "transcript_path": None, "cwd": str(tmp_path),
                      "last_assistant_message": "y" * (20 * MiB)}).encode()
    name, rc, output, rss, secs = _hook(home, raw)
    size = os.path.getsize(os.path.join(home.inbox_dir("pending"), name))
    report("bad input: 20 MB hook stdin", stdin_mb=round(len(raw) / MiB, 1), exit=rc, hook_s=round(secs, 2),
           hook_peak_rss_mib=round(rss, 1), event_file_mb=round(size / MiB, 1))
    assert rc == 0 and output == b""
    assert secs < 10
    assert rss < 200
    assert size <= 16 * MiB  # the normalizer's event size limit: it can still be read and explained
    norm.run(home)
    assert event_names(home, "failed") == [name]
    assert "not a JSON object" in reason_of(home, name)


# ----------------------------------------------------------------------------------------- transcripts

def _one_event(home, payload, client="claude-code"):
    return os.path.basename(drop_event(home, payload, client=client))


def test_bad_transcripts_are_quarantined_with_a_reason_and_the_batch_goes_on(tmp_path):
    home = make_home(tmp_path / "home")
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    good_path = copy_fixture("cc-1.0.98", client_dir)
    base = hook_payload(good_path)
    cases = {}
    cases["missing transcript"] = (_one_event(home, dict(base, session_id="m1",
                                   transcript_path=str(client_dir / "deleted.jsonl"))), "is gone and no copy")
    rnd = client_dir / "random.jsonl"
    rnd.write_bytes(os.urandom(200_000))
    cases["random bytes"] = (_one_event(home, dict(base, session_id="m2", transcript_path=str(rnd))),
                             "not in a format Cortex reads")
    unknown = client_dir / "unknown-client.jsonl"
    unknown.write_text("".join(json.dumps({"event": "chat", "who": "bot", "n": i, "text": "hello %d" % i}) + "\n"
                               for i in range(50)))
    cases["unknown client"] = (_one_event(home, dict(base, session_id="m3", transcript_path=str(unknown)),
                                          client="unknown"), "not in a format Cortex reads")
    empty = client_dir / "empty.jsonl"
    empty.write_bytes(b"")
    # an empty file is a session not written yet, never a failure: its event waits in claimed/ (issue #18, 5)
    empty_event = _one_event(home, dict(base, session_id="m4", transcript_path=str(empty)))
    rel = "relative/path.jsonl"
    cases["relative path"] = (_one_event(home, dict(base, session_id="m5", transcript_path=rel)),
                              "not an absolute path")
    adir = client_dir / "a-directory.jsonl"
    adir.mkdir()
    cases["a directory"] = (_one_event(home, dict(base, session_id="m6", transcript_path=str(adir))),
                            "is gone and no copy")
    good = _one_event(home, base)
    stats = norm.run(home)
    for label, (name, want) in cases.items():
        assert name in event_names(home, "failed"), (label, all_event_names(home))
        r = reason_of(home, name)
        assert want in r, (label, r)
    assert event_names(home, "done") == [good]
    assert event_names(home, "claimed") == [empty_event]
    assert record_files(home)
    report("bad input: transcripts", cases=len(cases), quarantined=stats["failed"], good_event_done=1)
    for label, (name, _w) in cases.items():
        print("    %-18s -> %s" % (label, reason_of(home, name).splitlines()[0][:150]))


def _cut_transcript(tmp_path):
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, [("user", "Which indentation do we use?"),
                        ("assistant", "[MEMORY: decision] Chose tabs over spaces because the linter enforces tabs.")])
    full = path.read_bytes()
    last_nl = full.rstrip(b"\n").rfind(b"\n")
    cut_at = last_nl + 1 + (len(full) - last_nl) // 2  # inside the last line
    path.write_bytes(full[:cut_at])
    return path, full, cut_at, last_nl


def test_a_transcript_cut_mid_line_is_read_up_to_the_cut_and_the_rest_later(tmp_path):
    home = make_home(tmp_path / "home")
    path, full, cut_at, last_nl = _cut_transcript(tmp_path)
    drop_event(home, hook_payload(path))
    norm.run(home)
    texts = b"".join(record_files(home).values())
    assert b"tabs over spaces" not in texts
    assert b"Which indentation" in texts  # the complete lines before the cut were read
    cursors = json.loads(Path(home.cursors).read_text())
    assert cursors[os.path.realpath(path)]["offset"] == last_nl + 1
    assert len(event_names(home, "done")) == 1 and not event_names(home, "failed")
    # the client finishes writing the line
    with open(path, "ab") as f:
        f.write(full[cut_at:])
    drop_event(home, hook_payload(path))
    norm.run(home)
    assert b"tabs over spaces" in b"".join(record_files(home).values())
    assert json.loads(Path(home.cursors).read_text())[os.path.realpath(path)]["offset"] == len(full)


def test_reading_a_transcript_in_two_parts_gives_the_records_of_one_read(tmp_path):
    home = make_home(tmp_path / "home")
    path, full, cut_at, _nl = _cut_transcript(tmp_path)
    drop_event(home, hook_payload(path))
    norm.run(home)
    with open(path, "ab") as f:
        f.write(full[cut_at:])
    drop_event(home, hook_payload(path))
    norm.run(home)
    clean = make_home(tmp_path / "clean")
    drop_event(clean, hook_payload(path))
    norm.run(clean)
    assert record_files(home) == record_files(clean)
    assert index_tables(home) == index_tables(clean)


JSONL_FIXTURES = [n for n in ("cc-1.0.98", "cc-1.0.108", "cc-2.0.64", "cc-2.0.76", "cc-2.1.4", "cc-2.1.39",
                                "codex-0.77", "codex-0.125")]


@pytest.mark.parametrize("name", JSONL_FIXTURES)
def test_a_transcript_read_in_many_parts_gives_the_records_of_one_read(tmp_path, name):
    """A transcript grows while sessions run: a normalizer run can stop anywhere (between turns, between a
    tool call and its result, mid-line).  Four seeded cut points, two of them mid-line, read run by run,
    must give the record files and index of one read of the whole file."""
    import random
    from cortex_testkit import TRANSCRIPTS
    client = TRANSCRIPTS[name][2]
    home = make_home(tmp_path / "home")
    path = copy_fixture(name, tmp_path / "client")
    full = path.read_bytes()
    rng = random.Random("%s-20261122" % name)
    ends = [i + 1 for i, b in enumerate(full) if b == 0x0A][:-1]
    cuts = sorted(set(rng.sample(ends, min(2, len(ends))) + [rng.randrange(1, len(full)) for _ in range(2)]))
    path.write_bytes(b"")
    written = 0
    for cut in cuts + [len(full)]:
        with open(path, "ab") as f:  # the client appends
            f.write(full[written:cut])
        written = cut
        drop_event(home, hook_payload(path, client=client), client=client)
        norm.run(home)
    clean = make_home(tmp_path / "clean")
    drop_event(clean, hook_payload(path, client=client), client=client)
    norm.run(clean)
    assert record_files(home) == record_files(clean)
    assert index_tables(home) == index_tables(clean)
    assert not event_names(home, "failed")


def _limit_as(mib):
    def pre():
        if mib:
            resource.setrlimit(resource.RLIMIT_AS, (mib * MiB, mib * MiB))
    return pre


BIG_MB = env_int("CORTEX_BIG_TRANSCRIPT_MB", 1024)
BIG_AS_LIMIT_MB = env_int("CORTEX_BIG_TRANSCRIPT_AS_LIMIT_MB", 2048)  # 0: no limit (measures the real peak)


def test_a_1_gib_transcript_neither_crashes_nor_eats_unbounded_memory(tmp_path):
    home = make_home(tmp_path / "home")
    src = copy_fixture("cc-1.0.98", tmp_path / "client")
    big = src.with_name("big-%dmb.jsonl" % BIG_MB)
    shutil.copy(src, big)
    with open(big, "r+b") as f:  # a real transcript's lines, then a sparse hole of NULs, then a newline
        f.truncate(BIG_MB * MiB)
        f.seek(0, 2)
        f.write(b"\n")
    drop_event(home, dict(hook_payload(src), transcript_path=str(big)))
    rc, out, err, rss, secs = run_measured(script("cortex-normalize"), env_for(home), timeout=600,
                                           preexec_fn=_limit_as(BIG_AS_LIMIT_MB))
    ev = all_event_names(home)
    report("bad input: large transcript", size_mib=BIG_MB, address_space_limit_mib=BIG_AS_LIMIT_MB or "none",
           exit=rc, normalize_s=round(secs, 1), peak_rss_mib=round(rss), done=len(ev["done"]),
           failed=len(ev["failed"]), reason=(reason_of(home, ev["failed"][0])[:120] if ev["failed"] else ""))
    assert rc == 0, err[-2000:]
    assert len(ev["done"]) == 1, "the session was quarantined: %s" % (ev["failed"] and reason_of(home, ev["failed"][0]))
    assert record_files(home)  # the real lines at the head were read
    assert rss < 400, "peak RSS %.0f MiB for a %d MiB transcript" % (rss, BIG_MB)
    cursor = json.loads(Path(home.cursors).read_text())[os.path.realpath(big)]
    assert cursor["offset"] == big.stat().st_size  # the whole file was consumed, the long line included
    assert cursor["bad_lines"] == 1  # the NUL line: skipped and counted, never decoded


# ----------------------------------------------------------------------------------------- deep nesting

def test_a_deeply_nested_line_is_a_bad_line_not_a_lost_session(tmp_path):
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    lines = path.read_bytes().splitlines(keepends=True)
    deep = b"[" * 200_000 + b"]" * 200_000 + b"\n"
    path.write_bytes(b"".join(lines[:3]) + deep + b"".join(lines[3:]))
    drop_event(home, hook_payload(path))
    norm.run(home)
    ev = all_event_names(home)
    assert len(ev["done"]) == 1, ev["failed"] and reason_of(home, ev["failed"][0])
    assert record_files(home)


# ----------------------------------------------------------------------------------------- hand-broken records

def _normalized_home(tmp_path):
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    drop_event(home, hook_payload(path))
    norm.run(home)
    return home, path


def _break(home, how):
    files = record_files(home)
    rel = sorted(files)[0]
    p = Path(home.records) / rel
    text = p.read_text(encoding="utf-8")
    if how == "yaml":
        text = text.replace("\ntype: ", "\ntype: [unclosed\n  - x: ", 1)
    elif how == "date":
        text = text.replace("\nupdated: ", "\nupdated: 2026-13-45\nx_old_updated: ", 1)
    elif how == "deep":
        text = text.replace("\ntype: ", "\nx_deep: %s%s\ntype: " % ("[" * 60000, "]" * 60000), 1)
    p.write_text(text, encoding="utf-8")
    return p, p.read_bytes(), os.path.basename(rel)[:-3]


def _reindex_and_feed_again(home, path, tmp_path, broken, data, rid):
    rc, out, err, _rss, _s = run_measured(script("cortex", "reindex"), env_for(home))
    assert rc == 1, (rc, err[-1500:])  # reported, not a crash
    assert str(broken).encode() in err, err
    assert rid not in {r[0] for r in index_tables(home)["records"]}
    assert index_tables(home)["records"]  # the other records were indexed
    # a later session produces the same record: the upsert must leave the broken file alone
    again = copy_fixture("cc-1.0.98", tmp_path / "client-again")
    drop_event(home, hook_payload(again))
    norm.run(home)
    assert broken.read_bytes() == data
    assert event_names(home, "failed") == []
    assert "existing record unreadable" in read_log(home)


def test_a_record_broken_by_hand_is_reported_skipped_by_reindex_and_never_overwritten(tmp_path):
    home, path = _normalized_home(tmp_path)
    broken, data, rid = _break(home, "yaml")
    _reindex_and_feed_again(home, path, tmp_path, broken, data, rid)


def test_a_record_with_an_impossible_date_is_reported_not_a_crash(tmp_path):
    home, path = _normalized_home(tmp_path)
    broken, data, rid = _break(home, "date")
    _reindex_and_feed_again(home, path, tmp_path, broken, data, rid)


def test_a_record_with_absurd_nesting_does_not_crash_reindex(tmp_path):
    home, path = _normalized_home(tmp_path)
    broken, data, rid = _break(home, "deep")
    _reindex_and_feed_again(home, path, tmp_path, broken, data, rid)


# ----------------------------------------------------------------------------------------- lone surrogates

def test_a_lone_surrogate_in_a_transcript_does_not_lose_the_session(tmp_path):
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, [("user", "Where is the config?"),
                        ("assistant", "[MEMORY: learned] The config lives in settings.toml SURROGATE and nowhere else.")])
    path.write_bytes(path.read_bytes().replace(b"SURROGATE", b"\\ud83d"))
    drop_event(home, hook_payload(path))
    norm.run(home)
    ev = all_event_names(home)
    assert ev["failed"] == [], reason_of(home, ev["failed"][0])
    assert b"settings.toml" in b"".join(record_files(home).values())


def test_a_hook_payload_with_a_lone_surrogate_still_lands(tmp_path):
    home = make_home(tmp_path / "home")
    raw = b'{"session_id": "s1", "transcript_path": null, "cwd": "/tmp", "last_assistant_message": "cut \\ud83d"}'
    name, rc, output, _rss, _s = _hook(home, raw, client="codex")
    assert rc == 0 and output == b""
    assert name is not None, read_log(home)[-300:]
