"""Defects a new user meets (issue #16): a broken config.yaml, hook --help, install targets and backups,
odd CORTEX_HOME values, hints, progress, exit codes, --json, packaging."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cortex_testkit import (REPO, all_records, clean_env, copy_fixture, drop_event, events_in, feed, hook_payload,
                            log_lines, names, run_bin)

S108 = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
DEMO_CWD = "/path/to/Demo"


def cortex(*args, home=None, env=None, cwd=None, stdin=b"", timeout=120):
    env = clean_env(home) if env is None else env
    return subprocess.run([sys.executable, "-m", "cortex", *args], input=stdin, capture_output=True, env=env,
                          cwd=cwd or str(REPO), timeout=timeout)


def start_payload(cwd=DEMO_CWD):
    return json.dumps({"session_id": "new", "transcript_path": "/nowhere/new.jsonl", "cwd": cwd,
                       "hook_event_name": "SessionStart", "source": "startup", "permission_mode": "default"}).encode()


# -- a broken config.yaml never silences memory ---------------------------------------------------

BROKEN = ["session_start: {max_records: \"lots\"}\n", "session_start: [unclosed\n"]


@pytest.mark.parametrize("text", BROKEN, ids=["bad-value", "bad-yaml"])
def test_a_broken_config_falls_back_and_session_start_still_prints_the_block(home, tmp_path, text):
    feed(home, "cc-1.0.108", dest=tmp_path / "client")
    assert run_bin("cortex-normalize", home=home).returncode == 0
    good = run_bin("cortex-session-start", home=home, stdin=start_payload())
    assert good.returncode == 0 and b"<cortex-memory" in good.stdout
    Path(home.config_yaml).write_text(text)
    for _ in range(3):
        proc = run_bin("cortex-session-start", home=home, stdin=start_payload())
        assert proc.returncode == 0 and proc.stdout == good.stdout  # the last valid settings
    said = [ln for ln in log_lines(home) if ln.get("event") == "config_invalid"]
    assert len(said) == 1 and "state/config.json" in said[0]["using"]  # said once, not per session


def test_a_broken_config_with_no_snapshot_uses_the_defaults(home, tmp_path):
    feed(home, "cc-1.0.108", dest=tmp_path / "client")
    Path(home.root).mkdir(parents=True, exist_ok=True)
    Path(home.config_yaml).write_text(BROKEN[0])
    proc = run_bin("cortex-normalize", home=home)
    # the events are processed with the defaults, then the run says what is wrong and exits 2
    assert proc.returncode == 2, proc.stderr
    assert len(events_in(home, "done")) == 1 and all_records(home)
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("cortex: config.yaml") and "default settings" in err
    assert "docs/configuration.md" in err
    assert not os.path.exists(home.config_json)  # the defaults are not taken for a valid snapshot
    start = run_bin("cortex-session-start", home=home, stdin=start_payload())
    assert start.returncode == 0 and b"<cortex-memory" in start.stdout


def test_normalize_exits_2_on_a_broken_config_whatever_the_inbox_holds(home, tmp_path):
    feed(home, "cc-1.0.108", dest=tmp_path / "client")
    assert run_bin("cortex-normalize", home=home).returncode == 0  # a valid snapshot exists, inbox empty
    Path(home.config_yaml).write_text(BROKEN[0])
    for _ in range(2):
        proc = run_bin("cortex-normalize", home=home)
        assert proc.returncode == 2 and b"nothing pending" in proc.stdout
        assert b"max_records" in proc.stderr and b"last valid settings" in proc.stderr
    Path(home.config_yaml).write_text("session_start: {max_records: 12}\n")
    assert run_bin("cortex-normalize", home=home).returncode == 0
    assert json.loads(Path(home.config_json).read_text())["session_start"]["max_records"] == 12


def test_an_unreadable_config_falls_back_too(home, tmp_path):
    feed(home, "cc-1.0.108", dest=tmp_path / "client")
    Path(home.root).mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:  # root reads any file: a folder in its place cannot be read either
        os.mkdir(home.config_yaml)
    else:
        Path(home.config_yaml).write_text("session_start: {max_records: 12}\n")
        os.chmod(home.config_yaml, 0)
    proc = run_bin("cortex-normalize", home=home)
    assert proc.returncode == 2 and b"cannot read" in proc.stderr
    assert len(events_in(home, "done")) == 1
    start = run_bin("cortex-session-start", home=home, stdin=start_payload())
    assert b"<cortex-memory" in start.stdout


def test_doctor_says_the_config_is_broken_and_what_is_used_instead(home, tmp_path):
    Path(home.root).mkdir(parents=True, exist_ok=True)
    Path(home.config_yaml).write_text(BROKEN[0])
    proc = cortex("doctor", "--json", home=home)
    check = [c for c in json.loads(proc.stdout)["checks"] if c["name"] == "config"][0]
    assert check["status"] == "fail" and "default settings" in " ".join(check["details"])


def test_commands_that_need_the_exact_settings_refuse_a_broken_config_with_exit_2(home):
    Path(home.root).mkdir(parents=True, exist_ok=True)
    Path(home.config_yaml).write_text(BROKEN[0])
    for args in (["reindex"], ["consolidate", "--dry-run"]):
        proc = cortex(*args, home=home)
        assert proc.returncode == 2 and proc.stderr.startswith(b"cortex: config.yaml"), (args, proc.stderr)


# -- cortex-normalize: exit status, progress, --watch ----------------------------------------------

def test_normalize_exits_1_when_every_pending_event_failed(home, tmp_path):
    drop_event(home, b"this is not json")
    drop_event(home, b"[1, 2]")
    proc = run_bin("cortex-normalize", home=home)
    assert proc.returncode == 1 and b"2 failed" in proc.stdout and b"quarantined" in proc.stderr
    feed(home, "cc-1.0.108", dest=tmp_path / "client")
    drop_event(home, b"still not json")
    assert run_bin("cortex-normalize", home=home).returncode == 0  # some succeeded: said on stderr, exit 0


class _Tty:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_only_on_a_terminal_only_after_a_second_and_never_with_quiet():
    from cortex.cli.progress import progress
    tty = _Tty()
    assert progress("x", stream=sys.stdout if not sys.stdout.isatty() else _Nope()) is None
    assert progress("x", quiet=True, stream=tty) is None
    quick = progress("normalizing", stream=tty)  # a quick run draws nothing
    quick(1, 3)
    quick(3, 3)
    assert tty.text == ""
    slow = progress("normalizing", stream=tty, delay=0)
    slow(1, 300)
    assert "normalizing 1/300" in tty.text
    slow(300, 300)
    assert tty.text.endswith("\r")  # the line is cleared at the end


class _Nope:
    def isatty(self):
        return False


def test_watch_says_it_started_and_prints_one_line_per_run(home, tmp_path):
    import signal
    import time
    Path(home.root).mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, str(REPO / "bin" / "cortex-normalize"), "--watch"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(home))
    import threading
    guard = threading.Timer(90, proc.kill)  # a silent watcher must fail the test, not hang it
    guard.start()
    try:
        first = proc.stdout.readline()
        assert b"watching" in first and home.inbox_dir("pending").encode() in first
        assert b"nothing pending" in proc.stdout.readline()  # the first run, on what was already there
        feed(home, "cc-1.0.108", dest=tmp_path / "client")
        line = proc.stdout.readline()
        assert b"1 events, 1 sessions" in line
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        guard.cancel()
    assert proc.returncode == 0


# -- cortex consolidate groups identical progress lines ---------------------------------------------

def _three_sessions_that_asked_the_same(home, tmp_path):
    from cortex_testkit import normalize
    for i in range(3):
        path = copy_fixture("cc-1.0.108", tmp_path / ("client%d" % i), ago_hours=3 - i)
        drop_event(home, hook_payload(path, session_id="s%d-%s" % (i, S108)))
    assert normalize(home)["failed"] == 0


def test_consolidate_groups_identical_progress_lines_and_keeps_the_newest(home, tmp_path):
    _three_sessions_that_asked_the_same(home, tmp_path)
    progress = [r for r in all_records(home) if r["type"] == "progress" and r["status"] == "active"]
    assert len(progress) == 3 and len({r["text"] for r in progress}) == 1
    newest = max(progress, key=lambda r: r["updated"])["id"]
    dry = cortex("consolidate", "--dry-run", "--json", home=home)
    assert dry.returncode == 0, dry.stderr
    groups = json.loads(dry.stdout)
    mine = [g for g in groups if newest == g["keep"]]
    assert mine and sorted(mine[0]["merged"]) == sorted(r["id"] for r in progress if r["id"] != newest)
    assert cortex("consolidate", home=home).returncode == 0
    after = {r["id"]: r for r in all_records(home) if r["type"] == "progress"}
    assert after[newest]["status"] == "active" and len(after[newest]["seen"]) == 3
    assert [r["status"] for r in after.values()].count("active") == 1
    start = run_bin("cortex-session-start", home=home, stdin=start_payload())
    assert start.stdout.decode().count("Last session:") == 1


# -- the README's test command downloads nothing ----------------------------------------------------

def test_real_client_e2e_tests_are_opt_in(tmp_path):
    env = clean_env()
    env.pop("CORTEX_E2E", None)
    env["CORTEX_E2E_CLI_DIR"] = str(tmp_path / "clis")  # would be filled by an npm install
    env["PATH"] = str(tmp_path / "nonpm") + os.pathsep + env.get("PATH", "")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "tests/e2e"],
                          capture_output=True, env=env, cwd=str(REPO), timeout=300)
    out = proc.stdout.decode()
    assert proc.returncode == 0, out
    assert " passed" not in out and "skipped" in out and "CORTEX_E2E=1" in out
    assert not (tmp_path / "clis").exists()
    ci = (REPO / ".ci" / "run").read_text()
    assert "CORTEX_E2E=1" in ci and "python -m pytest" in ci


# -- hooks ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("script", ["cortex-stop", "cortex-pre-compact"])
def test_hook_help_prints_usage_and_queues_nothing(home, script):
    for flag in ("--help", "-h"):
        proc = run_bin(script, flag, home=home, stdin=b'{"session_id": "x"}')
        assert proc.returncode == 0 and proc.stdout.startswith(b"usage: " + script.encode()), proc.stdout
        assert names(home, "pending") == [] and names(home, "tmp") == []


# -- cortex install ------------------------------------------------------------------------------------

def test_install_refuses_a_project_folder_that_does_not_exist(home, tmp_path):
    typo = tmp_path / "typo"
    proc = cortex("install", "claude-code", "--project", str(typo), home=home)
    assert proc.returncode == 1 and b"does not exist" in proc.stderr
    assert not typo.exists()


def test_install_and_uninstall_keep_their_backups_under_the_cortex_home(home, tmp_path):
    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    (proj / ".claude" / "settings.json").write_text('{"model": "x"}\n')
    for action in ("install", "uninstall"):
        proc = cortex(action, "claude-code", "--project", str(proj), home=home)
        assert proc.returncode == 0, proc.stderr
        assert ("backup of the previous file: %s" % os.path.join(home.root, "backups")).encode() in proc.stdout
    assert sorted(os.listdir(proj / ".claude")) == ["settings.json"]
    found = [p for p in Path(home.root, "backups").rglob("*") if p.is_file()]
    assert len(found) == 2 and all(p.name.startswith("settings.json.cortex-backup-") for p in found)
    assert all(oct(p.stat().st_mode & 0o777) == oct(0o600) for p in found)


# -- odd CORTEX_HOME values, the demo -------------------------------------------------------------------

def test_a_home_that_is_a_file_is_refused_with_a_hint_that_fits(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    for args in (["status"], ["reindex"], ["recall", "x"], ["inbox", "list"]):
        proc = cortex(*args, env=clean_env(f))
        err = proc.stderr.decode()
        assert proc.returncode == 2 and err.count("\n") == 1, (args, err)
        assert "is a file, not a folder" in err and "point CORTEX_HOME at a folder" in err
        assert "NotADirectoryError" not in err and "cortex.log" not in err and "disk is not full" not in err
    doctor = json.loads(cortex("doctor", "--json", env=clean_env(f)).stdout)  # doctor runs, and says it
    assert [c for c in doctor["checks"] if c["name"] == "home"][0]["status"] == "fail"
    proc = run_bin("cortex-normalize", env=clean_env(f))
    assert proc.returncode == 2 and b"is a file, not a folder" in proc.stderr
    assert b"disk is not full" not in proc.stderr


def test_a_relative_cortex_home_is_one_home_from_every_folder(tmp_path):
    user = tmp_path / "user"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    env = clean_env(CORTEX_HOME="rel-home", HOME=str(user))
    for cwd in ("a", "b"):
        proc = cortex("status", "--json", env=env, cwd=str(tmp_path / cwd))
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["home"] == str(user / "rel-home")
        assert b"relative path" in proc.stderr and str(user / "rel-home").encode() in proc.stderr
    assert not (tmp_path / "a" / "rel-home").exists() and not (tmp_path / "b" / "rel-home").exists()


def test_demo_home_that_is_a_file_is_refused_and_writes_nothing_elsewhere(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    user = tmp_path / "user"
    env = clean_env(HOME=str(user))
    env.pop("CORTEX_HOME", None)
    proc = cortex("demo", "--home", str(f), env=env)
    assert proc.returncode == 2 and b"is a file, not a folder" in proc.stderr, proc.stderr
    assert not (user / ".cortex").exists()


def test_demo_leaves_nothing_in_the_temporary_folder(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = clean_env(TMPDIR=str(tmp))
    assert cortex("demo", env=env).returncode == 0
    assert cortex("demo", "--home", str(tmp_path / "dh"), env=env).returncode == 0
    assert os.listdir(tmp) == []
    assert (tmp_path / "dh" / "records").is_dir()  # the home asked for stays
    proc = cortex("demo", "--keep", env=env)
    assert proc.returncode == 0 and len(os.listdir(tmp)) == 1


# -- usage errors, hints --------------------------------------------------------------------------------

def test_a_bad_flag_prints_the_subcommands_usage_with_exit_2(home):
    proc = cortex("status", "--bogus", home=home)
    assert proc.returncode == 2 and proc.stderr.startswith(b"usage: cortex status"), proc.stderr
    assert b"unrecognized arguments: --bogus" in proc.stderr
    proc = cortex("inbox", "list", "--bogus", home=home)
    assert proc.returncode == 2 and proc.stderr.startswith(b"usage: cortex inbox list")


@pytest.mark.parametrize("command", ["inbox", "schedule"])
def test_a_command_with_no_action_prints_its_help_and_exits_2(home, command):
    proc = cortex(command, home=home)
    assert proc.returncode == 2 and proc.stderr.startswith(b"usage: cortex " + command.encode()), proc.stderr
    assert proc.stdout == b""


def test_reset_without_yes_gives_a_hint_that_fits(home, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    for text in ("first thing to remember here", "second thing worth remembering"):
        assert cortex("remember", text, "--cwd", str(proj), home=home).returncode == 0
    proc = cortex("reset", "--project", "--cwd", str(proj), home=home)
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "--yes" in err and "by id" not in err


def test_doctor_says_a_settings_file_is_not_valid_json(home, tmp_path):
    user = tmp_path / "user"
    (user / ".claude").mkdir(parents=True)
    (user / ".claude" / "settings.json").write_text('{"hooks": {"Stop": [cortex-stop]}')
    proj = tmp_path / "proj"
    proj.mkdir()
    proc = cortex("doctor", "--json", "--cwd", str(proj), env=clean_env(home, HOME=str(user)))
    checks = [c for c in json.loads(proc.stdout)["checks"] if c["name"] == "hooks claude-code"]
    assert any("not valid JSON" in c["summary"] and c["status"] == "fail" for c in checks), checks
    assert not any("not registered" in c["summary"] for c in checks)


# -- packaging: rank-bm25 (and numpy) only for the benchmarks --------------------------------------------

def test_rank_bm25_is_a_bench_extra_and_no_runtime_path_imports_it():
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    assert "rank-bm25" not in cfg["options"]["install_requires"]
    extras = cfg["options.extras_require"]
    assert "rank-bm25" in extras["bench"] and "rank-bm25" in extras["test"]
    code = r"""
import importlib, pkgutil, sys
sys.modules["rank_bm25"] = None  # as if not installed
import cortex
for m in pkgutil.walk_packages(cortex.__path__, "cortex."):
    if not m.name.startswith(("cortex.bench", "cortex.__main__")):
        importlib.import_module(m.name)
from cortex.bench import locomo
try:
    locomo.RankBM25([], "ws")
except Exception as e:
    print(type(e).__name__, e, getattr(e, "hint", ""))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=clean_env(), cwd=str(REPO),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"CortexError" in proc.stdout and b"cortex-memory[bench]" in proc.stdout


# -- one --json convention -------------------------------------------------------------------------------

def test_every_json_output_follows_one_convention(home, tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    runs = [["remember", "Prefer the café's naïve résumé parser", "--cwd", str(proj), "--json"],
            ["status", "--json"], ["reindex", "--json"], ["consolidate", "--dry-run", "--json"],
            ["lifecycle", "--dry-run", "--json"], ["inbox", "list", "--json"], ["recall", "parser", "--cwd", str(proj),
                                                                              "--json"],
            ["install", "claude-code", "--project", str(proj), "--dry-run", "--json"]]
    for args in runs:
        proc = cortex(*args, home=home)
        assert proc.returncode == 0, (args, proc.stderr)
        text = proc.stdout.decode("utf-8")
        doc = json.loads(text)
        assert text == json.dumps(doc, indent=1, ensure_ascii=False) + "\n", args  # indent 1, UTF-8, one document
    status = json.loads(cortex("status", "--json", home=home).stdout)
    assert list(status)[0] == "home"  # insertion order, not sorted
    assert "café" in cortex(*runs[6], home=home).stdout.decode("utf-8")
