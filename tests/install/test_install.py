"""`cortex install` / `cortex uninstall`: merging hooks into client settings files, safely."""
from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cortex.install import hooks as install
from cortex.install import scripts
from cortex.cli.main import main as cli_main  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """HOME and CODEX_HOME in tmp: no test can touch the real user's settings."""
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    (tmp_path / "userhome").mkdir()
    (tmp_path / "proj").mkdir()


@pytest.fixture
def proj(tmp_path) -> Path:
    return tmp_path / "proj"


def cc_settings(proj: Path) -> Path:
    return proj / ".claude" / "settings.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def handlers(data: dict, event: str) -> list:
    return [h for g in data.get("hooks", {}).get(event, []) for h in g["hooks"]]


class Captured:
    def __init__(self, out, err):
        self.out, self.err = out, err


def run_cli(*argv):
    """Run `cortex …` in-process; returns (exit status, Captured(out, err))."""
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli_main(list(argv))
    return rc, Captured(out.getvalue(), err.getvalue())


def backups(path: Path) -> list:
    """The backups of a settings file: under the Cortex home (never beside the file)."""
    from cortex.core.home import Home
    assert not [p for p in path.parent.iterdir() if ".cortex-backup-" in p.name]
    mirror = Path(Home().root) / "backups" / str(path.parent.resolve()).lstrip(os.sep)
    if not mirror.is_dir():
        return []
    return sorted(p for p in mirror.iterdir() if p.name.startswith(path.name + ".cortex-backup-"))


# ----------------------------------------------------------------------------------------- where

def test_settings_paths(tmp_path):
    env = {"HOME": str(tmp_path / "h")}
    p = str(tmp_path / "p")
    assert install.settings_path("claude-code", p, environ=env) == os.path.join(p, ".claude", "settings.json")
    assert install.settings_path("claude-code", user=True, environ=env) == str(tmp_path / "h" / ".claude" / "settings.json")
    assert install.settings_path("gemini", p, environ=env) == os.path.join(p, ".gemini", "settings.json")
    assert install.settings_path("gemini", user=True, environ=env) == str(tmp_path / "h" / ".gemini" / "settings.json")
    # codex: the user's CODEX_HOME by default, the project layer with --project
    assert install.settings_path("codex", environ=env) == str(tmp_path / "h" / ".codex" / "hooks.json")
    assert install.settings_path("codex", user=True, environ=dict(env, CODEX_HOME=str(tmp_path / "cx"))) == \
        str(tmp_path / "cx" / "hooks.json")
    assert install.settings_path("codex", p, environ=env) == os.path.join(p, ".codex", "hooks.json")
    with pytest.raises(install.InstallError):
        install.settings_path("cursor", p, environ=env)


# ----------------------------------------------------------------------------------------- Claude Code

def test_claude_code_fresh_install_shape(proj):
    rc, out = run_cli("install", "claude-code", "--project", str(proj))
    assert rc == 0
    data = load(cc_settings(proj))
    assert list(data) == ["hooks"]
    assert list(data["hooks"]) == ["SessionStart", "PreCompact", "Stop", "SessionEnd", "UserPromptSubmit"]
    ss = data["hooks"]["SessionStart"]
    assert len(ss) == 1 and ss[0]["matcher"] == "startup|resume|clear|compact"
    for event, script, timeout in (("SessionStart", "cortex-session-start", 10), ("PreCompact", "cortex-pre-compact", 5),
                                   ("Stop", "cortex-stop", 5), ("SessionEnd", "cortex-stop", 5),
                                   ("UserPromptSubmit", "cortex-prompt", 5)):
        groups = data["hooks"][event]
        assert len(groups) == 1 and len(groups[0]["hooks"]) == 1
        h = groups[0]["hooks"][0]
        assert set(h) == {"type", "command", "timeout"}  # nothing a client could reject
        assert h["type"] == "command" and h["timeout"] == timeout
        argv = shlex.split(h["command"])
        assert argv[-2:] == ["--client", "claude-code"]
        assert os.path.basename(argv[-3]) == script and all(os.path.isabs(a) for a in argv[:-2])
        if event != "SessionStart":
            assert "matcher" not in groups[0]
    # one line per hook added
    assert out.out.count("\n  + ") == 5 and "changed %s" % cc_settings(proj) in out.out
    assert "SessionEnd: " in out.out and "(timeout 5 s)" in out.out


def test_install_merges_with_other_settings_and_hooks(proj):
    theirs = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "env": {"FOO": "1"},
        "hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 2}]}],
            "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}],
        },
        "model": "opus",
    }
    path = cc_settings(proj)
    path.parent.mkdir()
    path.write_text(json.dumps(theirs, indent=4))
    before = path.read_bytes()
    assert run_cli("install", "claude-code", "--project", str(proj))[0] == 0
    data = load(path)
    for k in ("permissions", "env", "model"):
        assert data[k] == theirs[k]
    assert data["hooks"]["PostToolUse"] == theirs["hooks"]["PostToolUse"]
    # their handlers stay first, ours are added after them
    assert data["hooks"]["SessionStart"][0] == theirs["hooks"]["SessionStart"][0]
    assert data["hooks"]["Stop"][0] == theirs["hooks"]["Stop"][0]
    assert install.is_cortex_handler(data["hooks"]["SessionStart"][1]["hooks"][0])
    assert install.is_cortex_handler(data["hooks"]["Stop"][1]["hooks"][0])
    # the previous file is backed up byte for byte
    (b,) = backups(path)
    assert b.read_bytes() == before
    assert b.name.startswith("settings.json.cortex-backup-")


def test_install_is_idempotent(proj):
    assert run_cli("install", "claude-code", "--project", str(proj))[0] == 0
    path = cc_settings(proj)
    first, mtime = path.read_bytes(), path.stat().st_mtime_ns
    rc, out = run_cli("install", "claude-code", "--project", str(proj))
    assert rc == 0
    assert "already installed" in out.out and "nothing changed" in out.out
    assert path.read_bytes() == first and path.stat().st_mtime_ns == mtime
    assert backups(path) == []  # nothing was replaced, nothing backed up


def test_install_updates_an_outdated_cortex_hook_in_place(proj):
    path = cc_settings(proj)
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]},
                 {"hooks": [{"type": "command", "command": "cortex-stop --client claude-code", "timeout": 60}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "/old/venv/bin/cortex-stop --client claude-code"},
                                  {"type": "command", "command": "echo shared-group"}]}],
    }}))
    rc, out = run_cli("install", "claude-code", "--project", str(proj))
    assert rc == 0
    data = load(path)
    stop = data["hooks"]["Stop"]
    assert [install.is_cortex_handler(g["hooks"][0]) for g in stop] == [False, True]
    assert stop[1]["hooks"][0]["timeout"] == 5 and stop[1]["hooks"][0]["command"] != "cortex-stop --client claude-code"
    end = data["hooks"]["SessionEnd"]
    # the shared group keeps the other handler; exactly one Cortex handler remains
    assert sum(install.is_cortex_handler(h) for g in end for h in g["hooks"]) == 1
    assert any(h["command"] == "echo shared-group" for g in end for h in g["hooks"])
    assert "  ~ Stop: " in out.out and "  ~ SessionEnd: " in out.out and "  + SessionStart" in out.out


def test_dry_run_writes_nothing(proj):
    rc, out = run_cli("install", "claude-code", "--project", str(proj), "--dry-run")
    assert rc == 0
    assert not cc_settings(proj).exists() and not (proj / ".claude").exists()
    assert out.out.count("\n  + ") == 5 and "dry run: nothing was written" in out.out
    rc, out = run_cli("install", "claude-code", "--project", str(proj), "--dry-run", "--json")
    rep = json.loads(out.out)
    assert rep["dry_run"] and rep["changed"] and len(rep["changes"]) == 5
    assert install.is_cortex_handler(rep["settings"]["hooks"]["Stop"][0]["hooks"][0])
    assert not cc_settings(proj).exists()


@pytest.mark.parametrize("content, words", [
    ('{"hooks": {"Stop": [', "not valid JSON"),
    ("[1, 2]", "JSON list"),
    ('{"hooks": []}', '"hooks" is not an object'),
    ('{"hooks": {"Stop": {"command": "x"}}}', "hooks.Stop is not a list"),
    ('{"hooks": {"Stop": true}}', "hooks.Stop is true, not a list"),
])
def test_invalid_settings_are_left_untouched(proj, content, words):
    path = cc_settings(proj)
    path.parent.mkdir()
    path.write_text(content)
    actions = ("install",) if "true" in content else ("install", "uninstall")  # nothing of ours to remove there
    for argv in ((a, "claude-code", "--project", str(proj)) for a in actions):
        rc, out = run_cli(*argv)
        assert rc == 1
        assert path.read_text() == content
        err = out.err.strip().splitlines()
        assert len(err) == 1 and words in err[0] and str(path) in err[0] and "nothing was changed" in err[0]
    assert backups(path) == []


def test_uninstall_removes_exactly_ours(proj):
    path = cc_settings(proj)
    path.parent.mkdir()
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo theirs"}]}],
                        "SessionStart": [{"hooks": [{"type": "command", "command": "cortex-stop-wrapper.sh"}]}]},
              "statusLine": {"type": "command", "command": "x"}}
    path.write_text(json.dumps(theirs))
    run_cli("install", "claude-code", "--project", str(proj))
    # a handler the user added to one of our groups survives uninstall
    data = load(path)
    data["hooks"]["PreCompact"][0]["hooks"].append({"type": "command", "command": "echo pre"})
    path.write_text(json.dumps(data))
    rc, out = run_cli("uninstall", "claude-code", "--project", str(proj))
    assert rc == 0
    assert out.out.count("\n  - ") == 5
    after = load(path)
    assert after["statusLine"] == theirs["statusLine"]
    assert after["hooks"]["Stop"] == theirs["hooks"]["Stop"]
    assert after["hooks"]["SessionStart"] == theirs["hooks"]["SessionStart"]
    assert after["hooks"]["PreCompact"] == [{"hooks": [{"type": "command", "command": "echo pre"}]}]
    assert "SessionEnd" not in after["hooks"]  # only our group was there
    rc, out = run_cli("uninstall", "claude-code", "--project", str(proj))
    assert rc == 0 and "nothing changed" in out.out


def test_uninstall_of_a_file_cortex_created_leaves_an_empty_object(proj):
    run_cli("install", "claude-code", "--project", str(proj))
    run_cli("uninstall", "claude-code", "--project", str(proj))
    assert load(cc_settings(proj)) == {}
    assert len(backups(cc_settings(proj))) == 1


def test_uninstall_without_a_file_changes_nothing(proj):
    rc, out = run_cli("uninstall", "claude-code", "--project", str(proj))
    assert rc == 0 and "no Cortex hooks" in out.out and not cc_settings(proj).exists()


def test_user_level_uses_home(tmp_path):
    rc, _ = run_cli("install", "claude-code", "--user")
    assert rc == 0
    assert (tmp_path / "userhome" / ".claude" / "settings.json").exists()


def test_project_and_user_are_exclusive(proj):
    with pytest.raises(SystemExit) as e:
        run_cli("install", "claude-code", "--project", str(proj), "--user")
    assert e.value.code == 2


def test_file_mode_is_kept(proj):
    path = cc_settings(proj)
    path.parent.mkdir()
    path.write_text("{}")
    os.chmod(path, 0o640)
    run_cli("install", "claude-code", "--project", str(proj))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_symlinked_settings_file_stays_a_link(proj, tmp_path):
    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text('{"model": "opus"}')
    path = cc_settings(proj)
    path.parent.mkdir()
    path.symlink_to(real)
    assert run_cli("install", "claude-code", "--project", str(proj))[0] == 0
    assert path.is_symlink() and load(real)["model"] == "opus" and "Stop" in load(real)["hooks"]


# ----------------------------------------------------------------------------------------- command recognition

@pytest.mark.parametrize("command, script", [
    ("cortex-stop --client claude-code", "cortex-stop"),
    ("/usr/local/bin/cortex-session-start --client codex", "cortex-session-start"),
    ("/usr/bin/python3 /src/cortex/bin/cortex-pre-compact --client gemini", "cortex-pre-compact"),
    ("'/home/a b/.venv/bin/cortex-stop' --client claude-code", "cortex-stop"),
    ("cortex-stop --client claude-code | tee /tmp/log", None),
    ("cortex-stop --client claude-code --verbose", None),
    ("my-cortex-stop --client claude-code", None),
    ("echo cortex-stop --client x", None),
    ("python3 -m cortex.capture --client x", None),
    ("cortex-normalize --client x", None),
    ("cortex-stop", None),
    ("'unbalanced cortex-stop", None),
    (None, None),
])
def test_cortex_script_of(command, script):
    assert install.cortex_script_of(command) == script


def test_paths_with_spaces_are_quoted_and_run(tmp_path, monkeypatch):
    """A script found on a PATH folder with a space: the command quotes it, the shell runs it, and
    uninstall still recognises it."""
    bindir = tmp_path / "my tools" / "bin"
    bindir.mkdir(parents=True)
    log = tmp_path / "argv.json"
    for name in install.HOOK_SCRIPTS:
        p = bindir / name
        p.write_text("#!%s\nimport json, sys\njson.dump(sys.argv, open(%r, 'w'))\n" % (sys.executable, str(log)))
        p.chmod(0o755)
    monkeypatch.setattr(scripts, "_checkout_bin", lambda: None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python3"))
    cmd = install.hook_command("cortex-stop", "claude-code", path_env=str(bindir))
    assert cmd == "%s --client claude-code" % shlex.quote(str(bindir / "cortex-stop"))
    assert install.cortex_script_of(cmd) == "cortex-stop"
    subprocess.run(cmd, shell=True, check=True, timeout=30, stdin=subprocess.DEVNULL)
    assert json.loads(log.read_text()) == [str(bindir / "cortex-stop"), "--client", "claude-code"]


def test_script_resolution_prefers_this_environment(tmp_path, monkeypatch):
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    for name in install.HOOK_SCRIPTS + ("python3",):
        (venv_bin / name).write_text("#!/bin/sh\n")
        (venv_bin / name).chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python3"))
    assert scripts.script_argv("cortex-stop") == [str(venv_bin / "cortex-stop")]
    # a checkout run (no script beside the interpreter): bin/ of the checkout through the interpreter
    monkeypatch.setattr(sys, "executable", str(tmp_path / "py" / "python3"))
    argv = scripts.script_argv("cortex-stop", path_env="")
    assert argv == [str(tmp_path / "py" / "python3"), str(REPO / "bin" / "cortex-stop")]


def test_installed_commands_run(proj, tmp_path, monkeypatch):
    """The command strings install writes work as hooks: stop drops an event, session start exits 0."""
    home = tmp_path / "cortex-home"
    run_cli("install", "claude-code", "--project", str(proj))
    data = load(cc_settings(proj))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX_", "GEMINI_"))}
    env["CORTEX_HOME"] = str(home)
    payload = json.dumps({"session_id": "s1", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(proj),
                          "hook_event_name": "Stop"})
    stop = handlers(data, "Stop")[0]["command"]
    p = subprocess.run(stop, shell=True, input=payload, capture_output=True, text=True, env=env, timeout=60)
    assert (p.returncode, p.stdout) == (0, "")
    (event_file,) = list((home / "inbox" / "pending").iterdir())
    ev = json.loads(event_file.read_text())
    assert (ev["kind"], ev["client"], ev["payload"]["session_id"]) == ("stop", "claude-code", "s1")
    start = handlers(data, "SessionStart")[0]["command"]
    p = subprocess.run(start, shell=True, input=json.dumps({"cwd": str(proj), "source": "startup"}),
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0 and p.stderr == ""


# ----------------------------------------------------------------------------------------- Codex

def test_codex_install(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex home"))
    rc, out = run_cli("install", "codex")  # default: the user level
    assert rc == 0
    path = tmp_path / "codex home" / "hooks.json"
    data = load(path)
    assert sorted(data["hooks"]) == ["PreCompact", "SessionEnd", "SessionStart", "Stop", "UserPromptSubmit"]
    timeouts = {ev: handlers(data, ev)[0]["timeout"] for ev in data["hooks"]}
    assert timeouts["SessionEnd"] <= 3 and timeouts["SessionStart"] == 10
    assert all(handlers(data, ev)[0]["command"].endswith("--client codex") for ev in data["hooks"])
    assert all(set(h) == {"type", "command", "timeout"} for ev in data["hooks"] for h in handlers(data, ev))
    assert "/hooks" in out.out and "--dangerously-bypass-hook-trust" in out.out
    # the note is printed even when nothing changes: the user may not have trusted the hooks yet
    rc, out = run_cli("install", "codex", "--user")
    assert "nothing changed" in out.out and "/hooks" in out.out


def test_codex_project_install_mentions_project_trust(proj):
    rc, out = run_cli("install", "codex", "--project", str(proj))
    assert rc == 0 and (proj / ".codex" / "hooks.json").exists()
    assert "trusts the project" in out.out


# ----------------------------------------------------------------------------------------- Gemini

def test_gemini_install(proj):
    path = proj / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"theme": "GitHub", "hooks": {"enabled": True}}))
    rc, out = run_cli("install", "gemini", "--project", str(proj))
    assert rc == 0
    data = load(path)
    assert data["theme"] == "GitHub" and data["hooks"]["enabled"] is True
    expect = {"SessionStart": ("cortex-session-start", 10000), "PreCompress": ("cortex-pre-compact", 5000),
              "AfterAgent": ("cortex-stop", 5000), "SessionEnd": ("cortex-stop", 5000),
              "BeforeAgent": ("cortex-prompt", 5000)}
    for ev, (script, ms) in expect.items():
        (h,) = handlers(data, ev)
        assert h["timeout"] == ms and h["name"] == script and h["type"] == "command"
        assert h["command"].endswith("--client gemini") and install.cortex_script_of(h["command"]) == script
    assert "ms)" in out.out
    rc, out = run_cli("uninstall", "gemini", "--project", str(proj))
    assert load(path) == {"theme": "GitHub", "hooks": {"enabled": True}}


def test_gemini_warns_when_hooks_are_switched_off(proj):
    path = proj / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooksConfig": {"enabled": False, "disabled": ["cortex-stop"]}}))
    rc, out = run_cli("install", "gemini", "--project", str(proj))
    assert rc == 0
    assert "switched off" in out.out and "hooksConfig.disabled lists cortex-stop" in out.out
    assert load(path)["hooksConfig"] == {"enabled": False, "disabled": ["cortex-stop"]}  # never flipped


def test_json_report(proj):
    rc, out = run_cli("install", "codex", "--project", str(proj), "--json")
    rep = json.loads(out.out)
    assert rc == 0 and rep["client"] == "codex" and rep["action"] == "install" and rep["changed"]
    assert [c["op"] for c in rep["changes"]] == ["add"] * 5 and "settings" not in rep
    rc, out = run_cli("install", "codex", "--project", str(proj), "--json")
    assert json.loads(out.out)["changed"] is False


def test_schedule_is_registered_through_install():
    from cortex.cli.main import build_parser
    args = build_parser().parse_args(["schedule", "install", "--dry-run"])
    assert args.schedule_action == "install" and args.dry_run
