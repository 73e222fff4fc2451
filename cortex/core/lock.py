"""The home's run lock (state/lock): one writer of records and index at a time.

The normalizer takes it for a whole run; people's commands that change records (`locked`) take it
for the change, waiting a little for a running normalizer.  An OS file lock: the kernel releases it
when the holder dies, so a lock left by a killed process is simply taken by the next one.
"""
import contextlib
import os
import time

from cortex.core.errors import CortexError


class Busy(Exception):
    pass


class RunLock:
    """An exclusive, non-blocking lock on state/lock.  The kernel releases it when the holder dies,
    so a lock left by a killed run is simply taken by the next one."""

    def __init__(self, path):
        self.path, self.fd = path, None

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            import fcntl
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # Windows
            import msvcrt
            try:
                msvcrt.locking(self.fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                os.close(self.fd)
                raise Busy(self.holder())
        except OSError:
            holder = self.holder()
            os.close(self.fd)
            raise Busy(holder)
        os.ftruncate(self.fd, 0)
        os.write(self.fd, str(os.getpid()).encode())
        return self

    def holder(self):
        try:
            with open(self.path) as f:
                return f.read().strip() or "?"
        except OSError:
            return "?"

    def __exit__(self, *exc):
        try:
            os.close(self.fd)
        except OSError:
            pass


_held = {}


@contextlib.contextmanager
def holding(home):
    """Say that this process holds the run lock (taken with RunLock, as the normalizer does), so that the
    maintenance functions it calls, which take `locked` themselves, do not wait for their own process."""
    key = home.root
    _held[key] = _held.get(key, 0) + 1
    try:
        yield
    finally:
        _held.pop(key, None)


@contextlib.contextmanager
def locked(home, wait: float = 10.0):
    """Hold the run lock while changing records.  Re-entrant within a process; waits up to `wait`
    seconds for a running normalizer, then raises CortexError."""
    key = home.root
    if _held.get(key):
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    lock = RunLock(home.lock)
    deadline = time.time() + wait
    while True:
        try:
            lock.__enter__()
            break
        except Busy as b:
            if time.time() >= deadline:
                raise CortexError("a normalizer run (pid %s) holds the lock on %s" % (b, home.root),
                                  "try again when it has finished")
            time.sleep(0.1)
    _held[key] = 1
    try:
        yield
    finally:
        _held.pop(key, None)
        lock.__exit__(None, None, None)
