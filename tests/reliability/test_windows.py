"""Transcripts of any size are read in bounded windows (issue #7, bad input: a 1 GB transcript).

The adapters walk a file one window at a time and the normalizer stores, indexes and checkpoints each
window before reading the next.  These tests hold that to its promise: the windows give exactly the
entries and records of one read, a line over the limit is skipped and counted without being held,
a crash between windows loses nothing, and a one-document transcript too large to read is
quarantined with its reason.
"""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from cortex.ingest import adapters
from cortex.ingest import run as norm
from cortex.ingest.adapters import claude_code
from cortex.ingest.adapters.base import line_blocks

from .helpers import (TRANSCRIPTS, all_event_names, copy_fixture, drop_event, hook_payload, index_tables,
                      make_home, read_log, reason_of, record_files)

JSONL = [k for k, v in TRANSCRIPTS.items() if v[2] in ("claude-code", "codex")]


def _windows(client, path, cursor=0, **limits):
    return list(adapters.get(client).windows(str(path), cursor, **limits))


def _joined(parts):
    entries = [e for p in parts for e in p.entries]
    return entries, parts[-1].cursor, sum(p.bad_lines for p in parts)


def _line_starts(path):
    data = Path(path).read_bytes()
    return [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]


# ----------------------------------------------------------------------------------------- line_blocks

@settings(max_examples=300, deadline=None)
@given(data=st.lists(st.one_of(st.just(b"\n"), st.binary(max_size=40), st.sampled_from([b"x" * 90, b"y" * 300])),
                     max_size=40).map(b"".join),
       window=st.integers(1, 64), max_line=st.integers(1, 128), start_frac=st.floats(0, 1))
def test_line_blocks_cover_the_file_in_order_and_hold_no_line_over_the_limit(tmp_path_factory, data, window,
                                                                           max_line, start_frac):
    path = tmp_path_factory.mktemp("lb") / "f"
    path.write_bytes(data)
    start = int(len(data) * start_frac)
    pos = start
    with open(path, "rb") as f:
        pieces = list(line_blocks(f, start, None, window, max_line))
    for i, (what, offset, payload) in enumerate(pieces):
        assert offset == pos
        if what == "lines":
            assert payload.endswith(b"\n") and payload == data[offset:offset + len(payload)]
            pos += len(payload)
            # a block never holds a line over the limit (newline included), wherever the windows fall
            assert max(len(x) + 1 for x in payload.split(b"\n")[:-1]) <= max_line
        elif what == "long":
            line = data[offset:offset + payload]
            assert line.endswith(b"\n") and b"\n" not in line[:-1] and payload > max_line
            pos += payload
        else:
            assert what == "tail" and i == len(pieces) - 1
            assert b"\n" not in data[offset:offset + payload]
            pos += payload
    assert pos == len(data)


# ----------------------------------------------------------------------------------------- adapters

@pytest.mark.parametrize("name", JSONL)
def test_windows_give_the_entries_of_one_read_from_any_cursor(tmp_path, monkeypatch, name):
    client = TRANSCRIPTS[name][2]
    path = copy_fixture(name, tmp_path, ago_hours=None)
    # small steps for the backwards search of earlier tool calls, so it crosses many step edges
    monkeypatch.setattr(claude_code, "_FIND_STEP", 97)
    starts = _line_starts(path)
    rng = random.Random(name)
    for cursor in [0] + sorted(rng.sample(starts, min(3, len(starts)))):
        whole = adapters.get(client).parse(str(path), cursor)
        parts = _windows(client, path, cursor, window=4096)
        entries, end, bad = _joined(parts)
        assert len(parts) > 1 or path.stat().st_size - cursor <= 4096
        assert entries == whole.entries, (name, cursor)
        assert (end, bad) == (whole.cursor, whole.bad_lines)
        assert end == path.stat().st_size
        assert parts[-1].meta == whole.meta


def _with_long_line(path, at, line):
    lines = Path(path).read_bytes().splitlines(keepends=True)
    Path(path).write_bytes(b"".join(lines[:at]) + line + b"".join(lines[at:]))


@pytest.mark.parametrize("name", ["cc-2.1.4", "codex-0.104-small"])
def test_a_line_over_the_limit_is_skipped_and_counted_like_a_bad_line(tmp_path, name):
    client = TRANSCRIPTS[name][2]
    long_path = copy_fixture(name, tmp_path / "long", ago_hours=None)
    short_path = copy_fixture(name, tmp_path / "short", ago_hours=None)
    # valid JSON the adapter would read if it fit: a huge prompt
    huge = json.dumps({"type": "user", "message": {"role": "user", "content": "z" * 300_000}}).encode() + b"\n"
    _with_long_line(long_path, 5, huge)
    _with_long_line(short_path, 5, b"not json\n")  # the same line, unreadable: one bad line, same numbering
    got = _windows(client, long_path, 0, window=8192, max_line=100_000)
    want = adapters.get(client).parse(str(short_path))
    entries, end, bad = _joined(got)
    assert entries == want.entries
    assert bad == want.bad_lines >= 1
    assert end == long_path.stat().st_size
    assert not any("z" * 1000 in e.text for e in entries)


def test_an_unfinished_long_last_line_waits_then_is_skipped_once_complete(tmp_path):
    path = copy_fixture("cc-2.1.4", tmp_path, ago_hours=None)
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b'{"type":"user","message":{"content":"' + b"q" * 200_000)  # still being written
    parts = _windows("claude-code", path, 0, window=8192, max_line=50_000)
    assert parts[-1].truncated and parts[-1].cursor == size
    with open(path, "ab") as f:
        f.write(b'"}}\n{"type":"summary","summary":"after the long line","leafUuid":"x"}\n')
    later = _windows("claude-code", path, size, window=8192, max_line=50_000)
    assert sum(p.bad_lines for p in later) == 1 and later[-1].cursor == path.stat().st_size
    assert later[-1].meta.title == "after the long line"


# ----------------------------------------------------------------------------------------- normalizer

def _configure(home, **normalize):
    os.makedirs(home.root, exist_ok=True)
    Path(home.config_yaml).write_text("normalize:\n" + "".join("  %s: %d\n" % kv for kv in normalize.items()))


def _feed(home, names, client_dir):
    for name in names:
        client = TRANSCRIPTS[name][2]
        path = copy_fixture(name, client_dir)
        drop_event(home, hook_payload(path, client=client), client=client)


BIG = ["cc-2.1.39", "cc-2.0.76", "codex-0.104-compacted", "codex-0.125"]


def test_a_normalizer_reading_in_small_windows_writes_the_records_of_one_read(tmp_path):
    client_dir = tmp_path / "client"
    small, whole = make_home(tmp_path / "small"), make_home(tmp_path / "whole")
    _configure(small, window_bytes=65536)
    for home in (small, whole):
        _feed(home, BIG, client_dir)
        norm.run(home)
    assert record_files(small) and record_files(small) == record_files(whole)
    assert index_tables(small) == index_tables(whole)
    cursors = [json.loads(Path(h.cursors).read_text()) for h in (small, whole)]
    assert cursors[0] == cursors[1]
    windows = [json.loads(line).get("windows") for line in read_log(small).splitlines() if '"session_done"' in line]
    assert windows and max(windows) > 40  # 3.4 MB in 64 KiB windows: it really was read in parts


class Crash(BaseException):
    """The process dying: not an Exception, so nothing in the normalizer catches it."""


@pytest.mark.parametrize("after", [1, 3, 20])
def test_a_crash_between_windows_resumes_at_the_last_checkpoint_and_loses_nothing(tmp_path, monkeypatch, after):
    client_dir = tmp_path / "client"
    crashed, clean = make_home(tmp_path / "crashed"), make_home(tmp_path / "clean")
    for home in (crashed, clean):
        _configure(home, window_bytes=65536)
        _feed(home, ["cc-2.1.39"], client_dir)
    norm.run(clean)
    real, calls = norm.Run.save_cursors, {"n": 0}

    def dying(self, changed):
        real(self, changed)
        calls["n"] += 1
        if calls["n"] == after:
            raise Crash()
    with monkeypatch.context() as m:
        m.setattr(norm.Run, "save_cursors", dying)
        with pytest.raises(Crash):
            norm.run(crashed)
    saved = json.loads(Path(crashed.cursors).read_text())
    assert any(0 < c["offset"] for c in saved.values())  # a checkpoint was written before the crash
    norm.run(crashed)
    assert record_files(crashed) == record_files(clean)
    assert index_tables(crashed) == index_tables(clean)
    assert json.loads(Path(crashed.cursors).read_text()) == json.loads(Path(clean.cursors).read_text())
    ev = all_event_names(crashed)
    assert len(ev["done"]) == 1 and not ev["failed"] and not ev["pending"] and not ev["claimed"]


def test_a_gemini_document_over_the_limit_is_quarantined_with_its_reason_and_the_batch_goes_on(tmp_path):
    home = make_home(tmp_path / "home")
    _configure(home, max_document_bytes=65536)
    path = copy_fixture("gemini", tmp_path / "client")
    with open(path, "ab") as f:
        f.write(b" " * 70_000)  # still one valid JSON document, now over the limit
    drop_event(home, hook_payload(path, client="gemini"), client="gemini")
    _feed(home, ["cc-2.1.4"], tmp_path / "client")
    norm.run(home)
    ev = all_event_names(home)
    assert len(ev["failed"]) == 1 and len(ev["done"]) == 1
    reason = reason_of(home, ev["failed"][0])
    assert "max_document_bytes" in reason and "cortex inbox retry" in reason and str(path) in reason
    assert record_files(home)
