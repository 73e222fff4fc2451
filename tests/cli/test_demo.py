"""`cortex demo`: the whole loop on the bundled real transcripts, end to end, as a user runs it."""
from __future__ import annotations

import os
import re

import pytest

from cortex_testkit import clean_env, run_bin


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo-tmp")
    user_home = tmp_path_factory.mktemp("user") / "cortex-home"
    proc = run_bin("cortex", "demo", env=clean_env(user_home, TMPDIR=str(tmp)), timeout=120)
    return proc, tmp, user_home


def blocks(out: str) -> list:
    return re.findall(r"<cortex-memory project=\"[^\"]+\">.*?</cortex-memory>", out, re.S)


def test_demo_exits_0_and_prints_blocks_with_real_content(demo_run):
    proc, _, _ = demo_run
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    found = blocks(out)
    assert len(found) >= 2
    for b in found:
        assert len(b) <= 9500
        assert "## " in b and b.count("</cortex-memory>") == 1
    # a file edited in the 1.0.108 session (MultiEdit on CLAUDE.md) and a file of the 2.1.39 session
    assert "CLAUDE.md" in out
    assert "transcript_tail_supervisor.ex" in out
    # the 2.1.39 compaction summary, split into typed records (its plan was finished after the compaction)
    assert "Pre-commit format check failure" in out
    m = re.search(r"normalized: (\d+) events, (\d+) sessions, (\d+) records, (\d+) failed", out)
    assert m and m.group(1) == m.group(2) and int(m.group(3)) > 0 and m.group(4) == "0"


def test_demo_shows_an_open_plan_item(demo_run):
    out = demo_run[0].stdout.decode()
    # the last update_plan of the Codex 0.125 session: two steps done, verification in progress
    assert "Plan: [x] Add failing tests for default compaction threshold" in out
    assert "[>] Run focused verification" in out


def test_demo_cleans_up_and_leaves_the_users_home_alone(demo_run):
    proc, tmp, user_home = demo_run
    assert proc.returncode == 0
    # (tiktoken keeps its own cache, data-gym-cache, in TMPDIR: not Cortex's to remove)
    assert [n for n in os.listdir(tmp) if n != "data-gym-cache"] == []
    assert not user_home.exists()


def test_demo_keeps_its_home_when_asked(tmp_path):
    target = tmp_path / "kept-home"
    proc = run_bin("cortex", "demo", "--home", str(target), env=clean_env(tmp_path / "user",
                                                                          TMPDIR=str(tmp_path)), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert str(target).encode() in proc.stdout
    assert (target / "index" / "cortex.sqlite").exists()
    mds = list((target / "records").rglob("*.md"))
    assert len(mds) >= 5
    captured = int(re.search(rb"Cortex demo: (\d+) real sessions captured", proc.stdout).group(1))
    assert captured >= 3
    assert len(os.listdir(target / "inbox" / "done")) == captured
    assert os.listdir(target / "inbox" / "failed") == []
    assert os.listdir(target / "inbox" / "pending") == []
    # and it is a normal home: status and session start work on it
    status = run_bin("cortex", "status", "--json", home=target)
    assert status.returncode == 0
    start = run_bin("cortex-session-start", "--cwd", "/path/to/Demo", home=target)
    assert start.returncode == 0 and start.stdout.startswith(b"<cortex-memory")
