"""Atomic writes: a file is fsynced before its rename; in a folder-sync batch its folder is synced once, when
the batch ends (the normalizer's window of records), not after every file."""
import os

import pytest

from cortex.core import fsutil


@pytest.fixture
def synced(monkeypatch):
    calls = []
    real = fsutil.fsync_dir
    monkeypatch.setattr(fsutil, "fsync_dir", lambda folder: (calls.append(folder), real(folder)))
    return calls


def test_a_write_outside_a_batch_syncs_its_folder_at_once(tmp_path, synced):
    fsutil.atomic_write_text(str(tmp_path / "a.md"), "one")
    assert synced == [str(tmp_path)]
    assert (tmp_path / "a.md").read_text() == "one"


def test_a_batch_syncs_each_folder_once_when_it_ends(tmp_path, synced):
    (tmp_path / "x").mkdir()
    with fsutil.folder_sync_batch():
        for i in range(5):
            fsutil.atomic_write_text(str(tmp_path / ("r%d.md" % i)), "record %d" % i)
        fsutil.atomic_write_text(str(tmp_path / "x" / "e.md"), "episode")
        with fsutil.folder_sync_batch():  # nested: one batch
            fsutil.atomic_write_text(str(tmp_path / "r9.md"), "nine")
        assert synced == []
        assert (tmp_path / "r3.md").read_text() == "record 3"   # written and renamed already
    assert sorted(synced) == sorted([str(tmp_path), str(tmp_path / "x")])
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_a_batch_that_fails_still_syncs_what_it_wrote(tmp_path, synced):
    with pytest.raises(RuntimeError):
        with fsutil.folder_sync_batch():
            fsutil.atomic_write_text(str(tmp_path / "a.md"), "one")
            raise RuntimeError("disk full")
    assert synced == [str(tmp_path)]
    fsutil.atomic_write_text(str(tmp_path / "b.md"), "two")   # the batch is closed
    assert synced == [str(tmp_path), str(tmp_path)]


def test_a_write_that_skips_durability_syncs_nothing(tmp_path, synced):
    with fsutil.folder_sync_batch():
        fsutil.atomic_write_text(str(tmp_path / "a.md"), "one", durable=False)
    assert synced == []
