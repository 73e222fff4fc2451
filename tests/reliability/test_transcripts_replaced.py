"""Transcripts replaced, rewritten or caught half-written (issue #18, defects 4 and 5)."""
from __future__ import annotations

import json
import os
import shutil

import pytest
from pathlib import Path

from cortex.core.home import Home
from cortex_testkit import (TRANSCRIPTS, append_turns, copy_fixture, drop_event, hook_payload, normalize,
                            records_by_id)

from .helpers import event_names, report


def _texts(home) -> list:
    return [r["text"] for r in records_by_id(home).values()]


def _variant(tmp_path, name: str, word: str, n: int) -> Path:
    path = copy_fixture("cc-2.1.4", tmp_path / name)
    append_turns(path, [t for i in range(n) for t in (
        ("user", "please note item %d" % i),
        ("assistant", "[MEMORY: learned] the %s setting number %d is called %s%dvalue" % (word, i, word, i)))])
    return path


def test_a_transcript_replaced_by_a_longer_file_is_read_from_the_start(tmp_path):
    """Before: the new file was read from the old byte offset (20 of 40 records never stored)."""
    home = Home(str(tmp_path / "home"))
    old = _variant(tmp_path, "old", "alpha", 20)
    new = _variant(tmp_path, "new", "bravo", 40)
    assert new.stat().st_size > old.stat().st_size
    live = tmp_path / "client" / old.name
    live.parent.mkdir()
    shutil.copy(old, live)
    payload = hook_payload(live, "claude-code")
    drop_event(home, payload)
    normalize(home)
    assert sum("alpha" in t for t in _texts(home)) == 20
    tmp = live.with_suffix(".tmp")
    shutil.copy(new, tmp)
    os.replace(tmp, live)  # the client (or a person) replaced the file
    drop_event(home, payload)
    normalize(home)
    got = sum("bravo" in t for t in _texts(home))
    report("transcript_replaced_longer", new_records=40, stored=got)
    assert got == 40


# --------------------------------------------------------------------------- Gemini chat files (defect 5)

GEMINI_SID = "5e551011-0000-4000-8000-00000000abcd"


def _gemini_messages(word: str, n: int) -> list:
    import time as _time
    t0 = _time.time() - 3600
    out = []
    for i in range(n):
        ts = lambda k: _time.strftime("%Y-%m-%dT%H:%M:%S", _time.gmtime(t0 + 2 * i + k)) + ".000Z"  # noqa: E731
        out.append({"id": "%s-u%d" % (word, i), "timestamp": ts(0), "type": "user", "content": "please note item %d" % i})
        out.append({"id": "%s-g%d" % (word, i), "timestamp": ts(1), "type": "gemini", "model": "m",
                    "content": "[MEMORY: learned] the %s setting number %d is called %s%dvalue" % (word, i, word, i)})
    return out


def _gemini_text(messages: list, form: str) -> str:
    head = {"sessionId": GEMINI_SID, "projectHash": "0" * 64, "startTime": messages[0]["timestamp"],
            "lastUpdated": messages[-1]["timestamp"]}
    if form == "json":
        return json.dumps(dict(head, messages=messages), indent=2)
    return "\n".join([json.dumps(dict(head, kind="main"))] + [json.dumps(m) for m in messages]) + "\n"


def _gemini_event(home, path, cwd):
    drop_event(home, {"session_id": GEMINI_SID, "transcript_path": str(path), "cwd": str(cwd),
                      "hook_event_name": "AfterAgent"}, client="gemini")


def _rewrite(path: Path, text: str):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.mark.parametrize("form", ["json", "jsonl"])
@pytest.mark.parametrize("old_n", [20, 10])
def test_a_gemini_chat_file_rewritten_with_other_messages_is_read_from_the_start(tmp_path, form, old_n):
    """Before: a file rewritten with fewer messages left the cursor past its end (0 of 20 new messages read,
    the event done); one rewritten with as many other messages was not noticed either."""
    home = Home(str(tmp_path / "home"))
    live = tmp_path / "client" / ("session-x." + form)
    live.parent.mkdir()
    live.write_text(_gemini_text(_gemini_messages("alpha", old_n), form))  # old_n turns = 2*old_n messages
    _gemini_event(home, live, tmp_path)
    normalize(home)
    assert sum("alpha" in t for t in _texts(home)) == old_n
    _rewrite(live, _gemini_text(_gemini_messages("bravo", 10), form))  # 20 messages, 10 memories
    _gemini_event(home, live, tmp_path)
    stats = normalize(home)
    got = sum("bravo" in t for t in _texts(home))
    report("gemini_rewritten_%s_%d_to_20" % (form, 2 * old_n), new_records=10, stored=got)
    assert got == 10 and stats["failed"] == 0


@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_a_gemini_chat_file_caught_half_written_keeps_its_event_for_the_next_run(tmp_path, form):
    """Before: the event was marked done with 0 records, and the session was never read again."""
    home = Home(str(tmp_path / "home"))
    live = tmp_path / "client" / ("session-x." + form)
    live.parent.mkdir()
    whole = _gemini_text(_gemini_messages("carol", 10), form)
    cut = whole[:len(whole) // 2] if form == "json" else whole[:whole.index("\n") - 5]
    live.write_text(cut)
    _gemini_event(home, live, tmp_path)
    first = normalize(home)
    kept = event_names(home, "claimed") + event_names(home, "pending")
    assert not event_names(home, "failed") and not event_names(home, "done")
    assert len(kept) == 1, first
    live.write_text(whole)  # the CLI finished writing; no new stop event
    second = normalize(home)
    got = sum("carol" in t for t in _texts(home))
    report("gemini_half_written_" + form, kept_after_first_run=len(kept), stored_after_second=got)
    assert got == 10 and second["failed"] == 0
    assert len(event_names(home, "done")) == 1 and not event_names(home, "claimed")


def test_an_empty_gemini_chat_file_is_not_a_failure(tmp_path):
    """Before: an empty chat file (a session not written yet) sent its event to failed/."""
    home = Home(str(tmp_path / "home"))
    live = tmp_path / "client" / "session-x.json"
    live.parent.mkdir()
    live.write_text("")
    _gemini_event(home, live, tmp_path)
    stats = normalize(home)
    assert stats["failed"] == 0 and not event_names(home, "failed")
    live.write_text(_gemini_text(_gemini_messages("delta", 5), "json"))
    normalize(home)
    assert sum("delta" in t for t in _texts(home)) == 5
    assert not event_names(home, "failed")
    old = tmp_path / "client" / "session-old.json"  # empty for long: its event is done, not failed
    old.write_text("")
    os.utime(old, (os.path.getmtime(old) - 3600,) * 2)
    _gemini_event(home, old, tmp_path)
    stats = normalize(home)
    assert stats["failed"] == 0 and not event_names(home, "failed") and not event_names(home, "claimed")
