"""A home on another filesystem than the transcripts keeps one copy per transcript (issue #18, defect 21)."""
from __future__ import annotations

import errno
import os
import time

from cortex.core.home import Home
from cortex_testkit import append_turns, copy_fixture, drop_event, hook_payload, normalize

from .helpers import report


def _no_links(*_a, **_k):
    raise OSError(errno.EXDEV, "Invalid cross-device link")


def _blobs(home) -> list:
    return sorted(n for n in os.listdir(home.blobs) if not n.startswith("."))


def test_one_copy_per_transcript_across_filesystems_and_the_cleanup_removes_it(tmp_path, monkeypatch):
    """Before: every stop copied the whole transcript under a new name (40 stops of one session left 40
    copies, 145 MiB)."""
    home = Home(str(tmp_path / "home"))
    path = copy_fixture("cc-2.1.4", tmp_path / "client")
    payload = hook_payload(path, "claude-code")
    monkeypatch.setattr(os, "link", _no_links)  # as on another filesystem
    stops = 40
    for i in range(stops):
        append_turns(path, [("user", "step %d of the work" % i), ("assistant", "Done with step %d." % i)])
        drop_event(home, payload)
    blobs = _blobs(home)
    size = sum(os.path.getsize(os.path.join(home.blobs, n)) for n in blobs)
    report("one_copy_per_transcript", stops=stops, copies=len(blobs), bytes=size, transcript=path.stat().st_size)
    assert len(blobs) == 1 and size == path.stat().st_size  # the latest content, once
    assert not [n for n in os.listdir(home.inbox_dir("tmp")) if n.endswith(".part")]
    os.unlink(path)  # the client deleted it: the copy is read instead
    stats = normalize(home)
    assert stats["failed"] == 0 and stats["done"] == stops
    # past the retention time, the next run (any event) removes the copy
    old = time.time() - 48 * 3600
    for n in blobs:
        os.utime(os.path.join(home.blobs, n), (old, old))
    other = copy_fixture("cc-1.0.98", tmp_path / "other")
    drop_event(home, hook_payload(other, "claude-code"))
    normalize(home)
    assert not set(blobs) & set(_blobs(home))
