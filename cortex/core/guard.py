"""Bus errors (SIGBUS) end a hook quietly (issue #18, defect 10).

A memory-mapped file that cannot get a block on a full disk (SQLite's shared-memory index, or its mmap
I/O where a build enables it) raises SIGBUS on the access, and a hook killed by a signal is an error
the client shows to the user.  Python cannot catch it: its handler only sets a flag and returns, and
the faulting access repeats for ever (the process hangs).  So the handler here is a C-level one
(through ctypes, about 1.5 ms to install), which writes `message` to stderr and leaves with `code` at
once.  It is installed only when the disk is nearly full (`low_free` bytes free, the only case a bus
error comes from), so a session start on a normal disk pays one statvfs.
"""
import os

LOW_FREE = 256 << 20
_KEEP = []  # the C callback must outlive the call that installs it


def exit_on_bus_error(path: str, code: int = 0, message: bytes = b"", low_free=LOW_FREE) -> bool:
    """Install the handler (True) if this system has SIGBUS and `path`'s file system has less than
    `low_free` bytes free (None: whatever the free space)."""
    if os.name != "posix":
        return False
    try:
        if low_free is not None:
            while path and not os.path.exists(path):
                parent = os.path.dirname(path)
                path = parent if parent != path else ""
            st = os.statvfs(path or "/")
            if st.f_bavail * st.f_frsize >= low_free:
                return False
        import signal
        sig = getattr(signal, "SIGBUS", None)
        if sig is None:
            return False
        import ctypes
        handler_type = ctypes.CFUNCTYPE(None, ctypes.c_int)

        def handler(_signum):
            if message:
                try:
                    os.write(2, message)
                except OSError:
                    pass
            os._exit(code)

        callback = handler_type(handler)
        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, handler_type)
        libc.signal(sig, callback)
        _KEEP.append(callback)
        return True
    except Exception:  # noqa: BLE001 - no guard is better than a hook that fails
        return False
