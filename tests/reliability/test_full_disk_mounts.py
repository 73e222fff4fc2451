"""A full disk on real small filesystems: tmpfs, and ext4 on a loop device (issue #18, defect 8).

The campaign itself is tests/reliability/disk_campaign.py (its docstring says what one run does).  It runs in
a subprocess: as root directly, on tmpfs and ext4; otherwise inside a user and mount namespace
(`unshare -rm`), where an unprivileged user may mount a tmpfs (not a loop device: tmpfs only).  Where
neither works the tests are skipped; test_full_disk.py covers the same defects with RLIMIT_FSIZE and fault
injection everywhere.

    CORTEX_FULL=1 python -m pytest tests/reliability/test_full_disk_mounts.py -s     # 50 runs, about 3 minutes
    CORTEX_DISK_RUNS=200 ...                                                            # more
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import env_int, report

CAMPAIGN = Path(__file__).with_name("disk_campaign.py")
RUNS = env_int("CORTEX_DISK_RUNS", 50)


def _runner():
    """(command prefix, filesystems) that can mount here, or None."""
    if not sys.platform.startswith("linux"):
        return None
    if os.geteuid() == 0:
        probe = subprocess.run([sys.executable, str(CAMPAIGN), "--probe", "tmpfs,ext4"], capture_output=True,
                               text=True)
        fss = probe.stdout.split()
        return ([], fss) if fss else None
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    prefix = [unshare, "--user", "--map-root-user", "--mount"]
    probe = subprocess.run(prefix + [sys.executable, str(CAMPAIGN), "--probe", "tmpfs"], capture_output=True,
                           text=True)
    return (prefix, ["tmpfs"]) if probe.stdout.split() == ["tmpfs"] else None


@pytest.fixture(scope="module")
def runner():
    r = _runner()
    if r is None:
        pytest.skip("cannot mount a tmpfs here (not root, and no user namespaces)")
    return r


def _campaign(runner, tmp_path, *args) -> dict:
    prefix, fss = runner
    out = tmp_path / "figures.json"
    p = subprocess.run(prefix + [sys.executable, str(CAMPAIGN), "--fs", ",".join(fss), "--base",
                                 str(tmp_path / "campaign"), "--out", str(out), *args],
                       capture_output=True, text=True, timeout=3600)
    assert out.exists(), p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(out.read_text())


def test_a_first_run_on_a_nearly_full_tmpfs_keeps_every_event(runner, tmp_path):
    """Before: a first run on a tmpfs with 256 KiB free created the index in a temp file through a WAL that
    could not be checkpointed into it when it was closed; the plain OSError that said so failed the session,
    and its event was quarantined (2 of 50 campaign runs; the rerun's cursors then differed from a roomy
    run's).  The temp file is written with a rollback journal now, and any failure while the disk is nearly
    full keeps its events for the next run."""
    prefix, _fss = runner
    got = _campaign((prefix, ["tmpfs"]), tmp_path, "--free", "229376,262144,294912", "--layout", "link",
                    "--cold", "--runs", "3")
    s = got["summary"]
    report("full disk: first run on a small tmpfs", runs=s["runs"], events_failed=s["events_failed"],
           events_lost=s["events_lost"], reruns_identical=s["reruns_identical"], bad=s["bad_runs"])
    assert s["bad_runs"] == []


def test_the_full_disk_campaign_corrupts_nothing_loses_nothing_and_reruns_to_the_roomy_result(runner, tmp_path):
    got = _campaign(runner, tmp_path, "--runs", str(RUNS), "--attempts", "2", "--reindex", "--readers")
    s = got["summary"]
    report("full disk campaign (tmpfs, ext4)", **{k: v for k, v in s.items() if k != "bad_runs"},
           bad_runs=len(s["bad_runs"]))
    assert s["bad_runs"] == []
    assert s["corrupt_indexes"] == 0 and s["events_lost"] == 0 and s["events_failed"] == 0
    assert s["hook_exits_nonzero"] == 0 and s["session_start_exits_nonzero"] == 0
    assert s["reruns_identical"] == s["runs"]
