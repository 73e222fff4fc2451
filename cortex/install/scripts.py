"""How Cortex's console scripts are found and quoted, for the hook commands and the scheduler units."""
import os
import shlex
import shutil
import sys


class InstallError(Exception):
    """A settings file Cortex cannot safely change; the message is one line for a person."""


def _checkout_bin():
    """The bin/ folder of the checkout this package runs from, if it is one."""
    d = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bin")
    return d if os.path.isdir(d) else None


def _is_exe(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def script_argv(name: str, path_env: str = None) -> list:
    """The argv that runs one of Cortex's console scripts, with absolute paths.

    In order: the script installed beside this interpreter (the same virtual environment), the
    `bin/` script of the checkout this package runs from (through this interpreter, so it finds the
    same dependencies), then the script found on PATH.
    """
    exe_dir = os.path.dirname(os.path.abspath(sys.executable)) if sys.executable else ""
    beside = os.path.join(exe_dir, name)
    if exe_dir and _is_exe(beside):
        return [beside]
    cb = _checkout_bin()
    if cb and os.path.isfile(os.path.join(cb, name)):
        return [os.path.abspath(sys.executable), os.path.join(cb, name)]
    found = shutil.which(name, path=path_env)
    if found:
        return [os.path.abspath(found)]
    raise InstallError("cannot find the %s script: install Cortex (pip install .) or run from a checkout" % name)


def quote_argv(argv) -> str:
    if os.name == "nt":  # pragma: no cover - the clients run hooks through a POSIX shell elsewhere
        import subprocess
        return subprocess.list2cmdline(list(argv))
    return " ".join(shlex.quote(a) for a in argv)
