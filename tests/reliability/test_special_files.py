"""Special files beside a transcript (issue #18, defect 18): a FIFO or a link to /dev/zero named like a
subagent transcript is skipped; before, the normalizer hung for ever on it while holding the run lock."""
from __future__ import annotations

import os
import sys

import pytest

from cortex.core.home import Home
from cortex_testkit import copy_fixture, drop_event, hook_payload

from .helpers import event_names, normalize_bin, report


@pytest.mark.skipif(sys.platform.startswith("win"), reason="FIFOs")
@pytest.mark.parametrize("fixture,where", [("cc-2.0.64", "beside"), ("cc-2.1.39", "subagents")])
def test_a_fifo_or_dev_zero_companion_never_hangs_the_normalizer(tmp_path, fixture, where):
    home = Home(str(tmp_path / "home"))
    path = copy_fixture(fixture, tmp_path / "client")
    folder = path.parent if where == "beside" else path.parent / path.stem / "subagents"
    folder.mkdir(parents=True, exist_ok=True)
    os.mkfifo(folder / "agent-fifo0001.jsonl")
    os.symlink("/dev/zero", folder / "agent-zero0001.jsonl")
    drop_event(home, hook_payload(path, "claude-code"))
    r = normalize_bin(home, timeout=120)  # subprocess.TimeoutExpired before the fix
    report("special_companions", fixture=fixture, rc=r.returncode, done=len(event_names(home, "done")))
    assert r.returncode == 0, r.stderr
    assert len(event_names(home, "done")) == 1
