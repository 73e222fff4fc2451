"""Atomic file writes: temp file in the same folder, fsync, rename, fsync the folder."""
import os
from contextlib import contextmanager

_pending_folders = None  # folders whose fsync waits for the end of the open `folder_sync_batch`


def write_fully(fd: int, data: bytes) -> None:
    """All of data, then fsync: a nearly full disk may accept only part of one write."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def atomic_write_bytes(path: str, data: bytes, mode: int = 0o600, durable: bool = True) -> None:
    """Temp file, fsync, rename, fsync the folder.  `durable=False` skips both fsyncs, for a caller that
    writes many files and then syncs the filesystem once (`cortex sync` receiving a batch)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    tmp = os.path.join(folder, ".%s.%d.%s.tmp" % (os.path.basename(path), os.getpid(), os.urandom(4).hex()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)  # exactly the mode asked for, whatever the umask (a client's settings keep theirs)
            if durable:
                write_fully(fd, data)
            else:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        if _pending_folders is not None:
            _pending_folders.add(folder)
        else:
            fsync_dir(folder)


@contextmanager
def folder_sync_batch():
    """Within it, an atomic write fsyncs its file at once and its folder once, when the batch ends.  The
    normalizer writes a window's records (many files in a few folders) in one batch and saves the cursor
    after it: a power cut before the folders are synced loses renames the cursor does not yet claim, so the
    window is read again.  A file's own fsync still comes before its rename, so no file is ever seen half
    written.  Nested batches are one."""
    global _pending_folders
    if _pending_folders is not None:
        yield
        return
    _pending_folders = set()
    try:
        yield
    finally:
        folders, _pending_folders = _pending_folders, None
        for folder in sorted(folders):
            fsync_dir(folder)


def atomic_write_text(path: str, text: str, mode: int = 0o600, durable: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode, durable)


def fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
