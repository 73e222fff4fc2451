"""`cortex schedule install|remove`: run the normalizer without a daemon of our own.

Linux: three systemd user units in $XDG_CONFIG_HOME/systemd/user (default ~/.config/systemd/user):

    cortex-normalize.service   oneshot: `cortex-normalize --quiet` with CORTEX_HOME set
    cortex-normalize.path      starts the service when something lands in <home>/inbox/pending
                               (PathChanged) and while it is not empty (DirectoryNotEmpty), so
                               events are normalized seconds after a hook drops them
    cortex-normalize.timer     every 10 minutes, the safety net (orphaned claims, missed triggers)

then `systemctl --user daemon-reload` and `systemctl --user enable --now` of the path and timer
units.  macOS: one launchd agent, ~/Library/LaunchAgents/<LABEL>.plist, with WatchPaths on the pending
folder and StartInterval 600, loaded with `launchctl load -w`.  Anywhere else, or when activation is
impossible, the exact commands (and a cron line) are printed instead.

Every file carries a marker line; `remove` deletes only files that carry it.  Activation is skipped
with `--no-activate` or CORTEX_SCHEDULE_NO_ACTIVATE=1 (tests use that).
"""
import os
import plistlib
import shutil
import subprocess
import sys

from cortex.core.home import Home

UNIT = "cortex-normalize"
SYSTEMD_FILES = (UNIT + ".service", UNIT + ".path", UNIT + ".timer")
LAUNCHD_LABEL = "dev.cortex.normalize"
MARKER = "Written by `cortex schedule install`; `cortex schedule remove` deletes it."
TIMER_MINUTES = 10
CRON_MINUTES = 5
ACTIVATE_TIMEOUT = 30


# ------------------------------------------------------------------------------------------ helpers

def _env(environ):
    return os.environ if environ is None else environ


def _user_home(environ=None):
    env = _env(environ)
    return os.path.abspath(env.get("HOME") or os.path.expanduser("~"))


def platform_kind(system: str = None) -> str:
    """'systemd' (Linux), 'launchd' (macOS) or 'cron' (anything else)."""
    system = system or sys.platform
    if system.startswith("linux"):
        return "systemd"
    if system == "darwin":
        return "launchd"
    return "cron"


def systemd_dir(environ=None) -> str:
    env = _env(environ)
    base = env.get("XDG_CONFIG_HOME") or os.path.join(_user_home(env), ".config")
    return os.path.join(os.path.abspath(os.path.expanduser(base)), "systemd", "user")


def launchd_path(environ=None) -> str:
    return os.path.join(_user_home(environ), "Library", "LaunchAgents", LAUNCHD_LABEL + ".plist")


def normalize_argv(path_env: str = None) -> list:
    from cortex.install.scripts import script_argv
    return script_argv("cortex-normalize", path_env) + ["--quiet"]


def cortex_home(environ=None) -> str:
    from cortex.core.home import home_dir
    return home_dir(_env(environ))


def _systemd_escape(arg: str, always_quote: bool = False) -> str:
    """One word for ExecStart=/Environment=: % and $ escaped, double-quoted when it holds a space,
    a quote or a backslash."""
    s = arg.replace("%", "%%").replace("$", "$$")
    if always_quote or any(c in s for c in " \t\"'\\;"):
        s = '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')
    return s


def _systemd_path(path: str) -> str:
    # Path settings take a bare path; only % is special there.
    return path.replace("%", "%%")


def cron_line(argv: list, home: str) -> str:
    cmd = "CORTEX_HOME=%s %s" % (_sh(home), " ".join(_sh(a) for a in argv))
    return "*/%d * * * * %s" % (CRON_MINUTES, cmd.replace("%", "\\%"))


def _sh(s):
    import shlex
    return shlex.quote(s)


# ------------------------------------------------------------------------------------------ contents

def systemd_units(argv: list, home: str) -> dict:
    pending = os.path.join(home, "inbox", "pending")
    exec_start = " ".join(_systemd_escape(a) for a in argv)
    service = "\n".join([
        "# " + MARKER,
        "[Unit]",
        "Description=Cortex: turn pending memory events into records",
        "",
        "[Service]",
        "Type=oneshot",
        "Environment=%s" % _systemd_escape("CORTEX_HOME=" + home, always_quote=True),
        "ExecStart=%s" % exec_start,
        "Nice=10",
        "IOSchedulingClass=idle",
        "",
    ])
    path = "\n".join([
        "# " + MARKER,
        "[Unit]",
        "Description=Cortex: normalize as soon as events land in the inbox",
        "",
        "[Path]",
        "PathChanged=%s" % _systemd_path(pending),
        "DirectoryNotEmpty=%s" % _systemd_path(pending),
        "MakeDirectory=yes",
        "DirectoryMode=0700",
        "Unit=%s.service" % UNIT,
        "",
        "[Install]",
        "WantedBy=paths.target",
        "",
    ])
    timer = "\n".join([
        "# " + MARKER,
        "[Unit]",
        "Description=Cortex: normalize every %d minutes (safety net)" % TIMER_MINUTES,
        "",
        "[Timer]",
        "OnCalendar=*:0/%d" % TIMER_MINUTES,
        "Persistent=true",
        "AccuracySec=1min",
        "Unit=%s.service" % UNIT,
        "",
        "[Install]",
        "WantedBy=timers.target",
        "",
    ])
    return {UNIT + ".service": service, UNIT + ".path": path, UNIT + ".timer": timer}


def launchd_plist(argv: list, home: str) -> str:
    pending = os.path.join(home, "inbox", "pending")
    data = {
        "Label": LAUNCHD_LABEL,
        "Comment": MARKER,
        "ProgramArguments": list(argv),
        "EnvironmentVariables": {"CORTEX_HOME": home},
        "WatchPaths": [pending],
        "StartInterval": TIMER_MINUTES * 60,
        "RunAtLoad": True,
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "StandardOutPath": os.path.join(home, "logs", "launchd.out.log"),
        "StandardErrorPath": os.path.join(home, "logs", "launchd.err.log"),
    }
    return plistlib.dumps(data, sort_keys=False).decode("utf-8")


def planned_files(kind: str, environ=None, path_env: str = None) -> dict:
    """{absolute path: content} that `install` writes for this platform kind ({} for cron)."""
    home = cortex_home(environ)
    argv = normalize_argv(path_env)
    if kind == "systemd":
        d = systemd_dir(environ)
        return {os.path.join(d, name): text for name, text in systemd_units(argv, home).items()}
    if kind == "launchd":
        return {launchd_path(environ): launchd_plist(argv, home)}
    return {}


def activation_commands(kind: str, action: str, environ=None) -> list:
    """The commands that switch the schedule on (install) or off (remove), as argv lists."""
    if kind == "systemd":
        units = [UNIT + ".path", UNIT + ".timer"]
        if action == "install":
            return [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now"] + units]
        return [["systemctl", "--user", "disable", "--now"] + units, ["systemctl", "--user", "daemon-reload"]]
    if kind == "launchd":
        p = launchd_path(environ)
        return [["launchctl", "load", "-w", p]] if action == "install" else [["launchctl", "unload", "-w", p]]
    return []


def _ours(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return MARKER in f.read(65536)
    except OSError:
        return False


def _run(argv, timeout=ACTIVATE_TIMEOUT):
    """(ok, one-line detail)."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return False, "%s not found" % argv[0]
    except subprocess.TimeoutExpired:
        return False, "timed out after %d s" % timeout
    except OSError as e:
        return False, str(e)
    detail = (p.stderr or p.stdout or "").strip().splitlines()
    return p.returncode == 0, (detail[-1] if detail else "exit status %d" % p.returncode)


def _no_activate(environ=None) -> bool:
    return (_env(environ).get("CORTEX_SCHEDULE_NO_ACTIVATE") or "").strip().lower() in ("1", "true", "yes", "on")


# ------------------------------------------------------------------------------------------ actions

def install(dry_run: bool = False, activate: bool = True, system: str = None, environ=None,
            path_env: str = None) -> dict:
    """Write the units (or plist) and switch them on.  Returns a report (see `format_report`)."""
    kind = platform_kind(system)
    home = cortex_home(environ)
    argv = normalize_argv(path_env)
    report = {"action": "install", "kind": kind, "home": home, "dry_run": dry_run, "files": [],
              "commands": [" ".join(_sh(a) for a in c) for c in activation_commands(kind, "install", environ)],
              "activation": None, "activation_error": None, "cron": cron_line(argv, home), "changed": False}
    for path, text in planned_files(kind, environ, path_env).items():
        try:
            with open(path, encoding="utf-8") as f:
                old = f.read()
        except FileNotFoundError:
            old = None
        except OSError:
            old = ""
        state = "unchanged" if old == text else ("added" if old is None else "updated")
        report["files"].append({"path": path, "state": state})
        if state != "unchanged":
            report["changed"] = True
            if not dry_run:
                from cortex.core.fsutil import atomic_write_text
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                atomic_write_text(path, text, mode=0o644)
    if dry_run or kind == "cron":
        return report
    Home(home).ensure()  # the watched folder must exist before systemd / launchd watch it
    if not activate or _no_activate(environ):
        report["activation"] = "skipped"
        report["activation_error"] = "activation skipped (--no-activate or CORTEX_SCHEDULE_NO_ACTIVATE)"
        return report
    tool = "systemctl" if kind == "systemd" else "launchctl"
    if not shutil.which(tool):
        report["activation"] = "unavailable"
        report["activation_error"] = "%s is not available" % tool
        return report
    if kind == "launchd":
        # `load` of an agent that is already loaded fails; unload first so a rerun reloads changes.
        _run(["launchctl", "unload", launchd_path(environ)])
    for cmd in activation_commands(kind, "install", environ):
        ok, detail = _run(cmd)
        if not ok:
            report["activation"] = "failed"
            report["activation_error"] = "`%s` failed: %s" % (" ".join(cmd), detail)
            return report
    report["activation"] = "done"
    return report


def remove(dry_run: bool = False, activate: bool = True, system: str = None, environ=None) -> dict:
    """Switch the schedule off and delete exactly the files `install` wrote."""
    kind = platform_kind(system)
    report = {"action": "remove", "kind": kind, "dry_run": dry_run, "files": [], "commands": [],
              "activation": None, "activation_error": None, "changed": False}
    if kind == "systemd":
        d = systemd_dir(environ)
        paths = [os.path.join(d, n) for n in SYSTEMD_FILES]
    elif kind == "launchd":
        paths = [launchd_path(environ)]
    else:
        paths = []
    present = []
    for p in paths:
        if not os.path.lexists(p):
            continue
        if _ours(p):
            present.append(p)
            report["files"].append({"path": p, "state": "removed"})
        else:
            report["files"].append({"path": p, "state": "kept (not written by cortex)"})
    report["changed"] = bool(present)
    report["commands"] = [" ".join(_sh(a) for a in c) for c in activation_commands(kind, "remove", environ)]
    if dry_run or not present:
        return report
    if activate and not _no_activate(environ):
        tool = "systemctl" if kind == "systemd" else "launchctl"
        if shutil.which(tool):
            cmds = activation_commands(kind, "remove", environ)
            # disable/unload before deleting the files; daemon-reload after
            ok, detail = _run(cmds[0])
            if not ok:
                report["activation_error"] = "`%s` failed: %s" % (" ".join(cmds[0]), detail)
            for p in present:
                os.unlink(p)
            for cmd in cmds[1:]:
                ok, detail = _run(cmd)
                if not ok and not report["activation_error"]:
                    report["activation_error"] = "`%s` failed: %s" % (" ".join(cmd), detail)
            report["activation"] = "failed" if report["activation_error"] else "done"
            return report
        report["activation"] = "unavailable"
        report["activation_error"] = "%s is not available" % tool
    else:
        report["activation"] = "skipped"
        report["activation_error"] = "deactivation skipped (--no-activate or CORTEX_SCHEDULE_NO_ACTIVATE)"
    for p in present:
        os.unlink(p)
    return report
