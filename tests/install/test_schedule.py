"""`cortex schedule install|remove`: systemd user units, a launchd agent, or a cron line.

Every test points HOME, XDG_CONFIG_HOME and CORTEX_HOME into tmp and switches activation off (or
puts a fake systemctl / launchctl first on PATH), so the real user's units are never touched.
"""
from __future__ import annotations

import json
import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cortex.install import schedule
from cortex.cli import clients
from cortex.cli.main import main as cli_main  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("CORTEX_HOME", str(tmp_path / "cortex"))
    monkeypatch.setenv("CORTEX_SCHEDULE_NO_ACTIVATE", "1")
    (tmp_path / "userhome").mkdir()


def unit_dir(tmp_path) -> Path:
    return tmp_path / "xdg" / "systemd" / "user"


def fake_tool(tmp_path, monkeypatch, name, rc=0, message=""):
    """A stand-in systemctl / launchctl first on PATH that logs its argv (and which unit files exist)."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / ("%s.log" % name)
    script = bindir / name
    script.write_text("#!%s\nimport json, os, sys\n"
                      "d = %r\n"
                      "files = sorted(os.listdir(d)) if os.path.isdir(d) else []\n"
                      "open(%r, 'a').write(json.dumps({'argv': sys.argv[1:], 'files': files}) + '\\n')\n"
                      "sys.stderr.write(%r)\n"
                      "sys.exit(%d)\n" % (sys.executable, str(unit_dir(tmp_path)), str(log), message, rc))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("CORTEX_SCHEDULE_NO_ACTIVATE")
    return log


def run_cli(*argv):
    """Run `cortex …` in-process; returns (exit status, stdout)."""
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = cli_main(list(argv))
    return rc, out.getvalue()


def calls(log: Path) -> list:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# ----------------------------------------------------------------------------------------- systemd

def test_systemd_units(tmp_path):
    rc, out = run_cli("schedule", "install")
    assert rc == 0
    d = unit_dir(tmp_path)
    assert sorted(os.listdir(d)) == ["cortex-normalize.path", "cortex-normalize.service", "cortex-normalize.timer"]
    home = str(tmp_path / "cortex")
    pending = os.path.join(home, "inbox", "pending")
    service = (d / "cortex-normalize.service").read_text()
    assert "Type=oneshot" in service
    assert 'Environment="CORTEX_HOME=%s"' % home in service
    exec_line = [l for l in service.splitlines() if l.startswith("ExecStart=")][0]
    assert exec_line.endswith("cortex-normalize --quiet")
    path = (d / "cortex-normalize.path").read_text()
    assert "PathChanged=%s\n" % pending in path and "DirectoryNotEmpty=%s\n" % pending in path
    assert "Unit=cortex-normalize.service" in path
    timer = (d / "cortex-normalize.timer").read_text()
    assert "OnCalendar=*:0/10" in timer and "Unit=cortex-normalize.service" in timer
    for text in (service, path, timer):
        assert schedule.MARKER in text
    assert os.path.isdir(pending)  # the watched folder exists before systemd watches it
    # not activated here: the exact commands and the cron fallback are printed
    assert "systemctl --user daemon-reload" in out
    assert "systemctl --user enable --now cortex-normalize.path cortex-normalize.timer" in out
    assert "*/5 * * * * CORTEX_HOME=" in out


def test_systemd_units_are_valid(tmp_path):
    exe = shutil.which("systemd-analyze")
    if not exe:
        pytest.skip("systemd-analyze is not installed")
    schedule.install()
    d = unit_dir(tmp_path)
    units = [str(d / n) for n in schedule.SYSTEMD_FILES]
    p = subprocess.run([exe, "verify", *units], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    text = p.stdout + p.stderr
    if "Failed to initialize manager" in text or "Failed to setup" in text:
        pytest.skip("systemd-analyze cannot run here: %s" % text.strip().splitlines()[-1])
    complaints = [l for l in text.splitlines() if "cortex-normalize" in l or "Unknown" in l or "Invalid" in l]
    assert not complaints, text


def test_install_is_idempotent_and_dry_run_writes_nothing(tmp_path):
    r = schedule.install(dry_run=True)
    assert r["changed"] and all(f["state"] == "added" for f in r["files"])
    assert not unit_dir(tmp_path).exists() and not (tmp_path / "cortex").exists()
    schedule.install()
    d = unit_dir(tmp_path)
    before = {n: (d / n).stat().st_mtime_ns for n in os.listdir(d)}
    rc, out = run_cli("schedule", "install")
    assert rc == 0
    assert "already installed; nothing changed" in out
    assert {n: (d / n).stat().st_mtime_ns for n in os.listdir(d)} == before


def test_changed_home_updates_the_units(tmp_path, monkeypatch):
    schedule.install()
    monkeypatch.setenv("CORTEX_HOME", str(tmp_path / "other"))
    r = schedule.install()
    states = {os.path.basename(f["path"]): f["state"] for f in r["files"]}
    assert states == {"cortex-normalize.service": "updated", "cortex-normalize.path": "updated",
                      "cortex-normalize.timer": "unchanged"}
    assert str(tmp_path / "other") in (unit_dir(tmp_path) / "cortex-normalize.path").read_text()


def test_remove_deletes_exactly_what_install_wrote(tmp_path):
    d = unit_dir(tmp_path)
    d.mkdir(parents=True)
    (d / "other.service").write_text("[Service]\nExecStart=/bin/true\n")
    schedule.install()
    rc, out = run_cli("schedule", "remove")
    assert rc == 0
    assert os.listdir(d) == ["other.service"]
    assert out.count("(removed)") == 3
    assert run_cli("schedule", "remove")[0] == 0
    assert "nothing to remove" in run_cli("schedule", "remove")[1]


def test_remove_keeps_a_unit_it_did_not_write(tmp_path):
    schedule.install()
    mine = unit_dir(tmp_path) / "cortex-normalize.timer"
    mine.write_text("[Timer]\nOnCalendar=hourly\n")  # the user replaced it with their own
    r = schedule.remove()
    assert mine.exists()
    assert [f["state"] for f in r["files"]].count("removed") == 2


def test_remove_dry_run(tmp_path):
    schedule.install()
    r = schedule.remove(dry_run=True)
    assert r["changed"] and len(os.listdir(unit_dir(tmp_path))) == 3


def test_quoting_of_odd_paths(tmp_path, monkeypatch):
    odd = tmp_path / "my data" / "cortex 100%"
    monkeypatch.setenv("CORTEX_HOME", str(odd))
    argv = ["/opt/my tools/python3", "/src/bin/cortex-normalize", "--quiet"]
    units = schedule.systemd_units(argv, str(odd))
    service = units["cortex-normalize.service"]
    assert 'Environment="CORTEX_HOME=%s"' % str(odd).replace("%", "%%") in service
    assert 'ExecStart="/opt/my tools/python3" /src/bin/cortex-normalize --quiet' in service
    assert "PathChanged=%s/inbox/pending" % str(odd).replace("%", "%%") in units["cortex-normalize.path"]
    line = schedule.cron_line(argv, str(odd))
    assert line.startswith("*/5 * * * * CORTEX_HOME=")
    assert "100\\%" in line and "'/opt/my tools/python3'" in line


# ----------------------------------------------------------------------------------------- activation

def test_activation_runs_systemctl(tmp_path, monkeypatch):
    log = fake_tool(tmp_path, monkeypatch, "systemctl")
    rc, out = run_cli("schedule", "install")
    assert rc == 0
    argvs = [c["argv"] for c in calls(log)]
    assert argvs == [["--user", "daemon-reload"],
                     ["--user", "enable", "--now", "cortex-normalize.path", "cortex-normalize.timer"]]
    assert "activated" in out and "not activated" not in out
    # remove: disable first (the files still exist then), daemon-reload after they are gone
    assert run_cli("schedule", "remove")[0] == 0
    tail = calls(log)[2:]
    assert tail[0]["argv"] == ["--user", "disable", "--now", "cortex-normalize.path", "cortex-normalize.timer"]
    assert len(tail[0]["files"]) == 3
    assert tail[1] == {"argv": ["--user", "daemon-reload"], "files": []}


def test_failed_activation_prints_the_commands(tmp_path, monkeypatch):
    fake_tool(tmp_path, monkeypatch, "systemctl", rc=1, message="Failed to connect to bus: No medium found\n")
    rc, out = run_cli("schedule", "install")
    assert rc == 1
    assert "not activated" in out and "Failed to connect to bus" in out
    assert "  systemctl --user enable --now cortex-normalize.path cortex-normalize.timer" in out
    assert "crontab -e" in out
    assert len(os.listdir(unit_dir(tmp_path))) == 3  # the files are written all the same


def test_no_activate_flag(tmp_path, monkeypatch):
    log = fake_tool(tmp_path, monkeypatch, "systemctl")
    assert run_cli("schedule", "install", "--no-activate")[0] == 0
    assert calls(log) == []


# ----------------------------------------------------------------------------------------- macOS and elsewhere

def test_launchd_agent(tmp_path):
    r = schedule.install(system="darwin", activate=False)
    path = tmp_path / "userhome" / "Library" / "LaunchAgents" / (schedule.LAUNCHD_LABEL + ".plist")
    assert [f["path"] for f in r["files"]] == [str(path)]
    data = plistlib.loads(path.read_bytes())
    home = str(tmp_path / "cortex")
    assert data["Label"] == schedule.LAUNCHD_LABEL
    assert data["ProgramArguments"][-2:] == [data["ProgramArguments"][-2], "--quiet"]
    assert data["ProgramArguments"][-2].endswith("cortex-normalize")
    assert data["WatchPaths"] == [os.path.join(home, "inbox", "pending")]
    assert data["StartInterval"] == 600
    assert data["EnvironmentVariables"] == {"CORTEX_HOME": home}
    assert schedule.install(system="darwin", activate=False)["changed"] is False
    r = schedule.remove(system="darwin", activate=False)
    assert not path.exists() and r["files"][0]["state"] == "removed"


def test_launchd_activation(tmp_path, monkeypatch):
    log = tmp_path / "launchctl.log"
    fake_tool(tmp_path, monkeypatch, "launchctl")
    r = schedule.install(system="darwin")
    plist = str(tmp_path / "userhome" / "Library" / "LaunchAgents" / (schedule.LAUNCHD_LABEL + ".plist"))
    assert r["activation"] == "done"
    assert [c["argv"] for c in calls(log)] == [["unload", plist], ["load", "-w", plist]]
    schedule.remove(system="darwin")
    assert calls(log)[-1]["argv"] == ["unload", "-w", plist]


def test_elsewhere_a_cron_line(tmp_path):
    r = schedule.install(system="freebsd13")
    assert r["kind"] == "cron" and r["files"] == []
    assert r["cron"].startswith("*/5 * * * * CORTEX_HOME=%s " % (tmp_path / "cortex"))
    assert r["cron"].endswith("cortex-normalize --quiet")
    text = clients.format_schedule_report(r)
    assert "crontab -e" in text and r["cron"] in text
