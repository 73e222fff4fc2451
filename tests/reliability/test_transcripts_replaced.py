"""Transcripts replaced, rewritten or caught half-written (issue #18, defects 4 and 5)."""
from __future__ import annotations

import json
import os
import shutil
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
