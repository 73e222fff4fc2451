"""The capture hooks: `cortex-pre-compact` and `cortex-stop`.

They run inside the client's session, so they do as little as possible: read the
hook JSON from stdin, note the transcript's size, keep a hard link to the
transcript (so the session survives the client deleting or rotating it), and
drop one event file into inbox/pending/ the Maildir way (write in tmp/, fsync,
rename).  Standard library only, no output, exit status 0 whatever happens.
"""
import json
import os
import sys
import time

from cortex.core.home import Home
from cortex.inbox.maildir import deliver as write_event  # noqa: F401  (the inbox owns its folders)

EVENT_SCHEMA = "cortex.event/1"
MAX_STDIN = 8 * 1024 * 1024          # a hook payload is a few KB; never buffer more than this
COPY_FALLBACK_MAX = 4 * 1024 * 1024  # when a hard link is impossible, copy transcripts up to this size
TRANSCRIPT_SUFFIXES = (".jsonl", ".json")



def detect_client(payload, flag=None) -> str:
    """The client that ran the hook: the installed hook's --client flag, else the environment, else the payload."""
    if flag:
        return flag
    from cortex.clients import spec
    found = spec.client_from_env(os.environ)
    if not found and isinstance(payload, dict):
        found = spec.client_from_path(str(payload.get("transcript_path") or ""))
    return found or "unknown"


def _safe_transcript(path):
    """The transcript path if it is one a hook may legitimately name: an absolute path to an
    existing regular file with a transcript suffix.  Anything else is recorded but never touched."""
    if not isinstance(path, str) or not path or "\x00" in path or len(path) > 4096:
        return None
    if not os.path.isabs(path) or not path.lower().endswith(TRANSCRIPT_SUFFIXES):
        return None
    return path


def _is_client_transcript(path, st) -> bool:
    """Whether the file `st` describes opens like a client's transcript (the adapters' own rules).
    Opened without following a link, and checked to be the same file, so a path swapped after the
    lstat is not read."""
    from cortex.clients.sniff import HEAD_BYTES, client_of
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False
        head = os.read(fd, HEAD_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    return client_of(head, path) is not None


def snapshot_transcript(home: Home, path, session_id):
    """Record the transcript's size and keep its content reachable.

    A hard link costs nothing and keeps the bytes even if the client deletes the file; where
    links are impossible (another filesystem, Windows without rights), small transcripts are
    copied.  Returns the `transcript` part of the event.
    """
    info = {"path": path if isinstance(path, str) else None, "size": None, "mtime": None,
            "blob": None, "blob_kind": None}
    safe = _safe_transcript(path)
    if safe is None:
        return info
    try:
        st = os.lstat(safe)  # a symlink is never followed
    except OSError:
        return info
    import stat as _stat
    if not _stat.S_ISREG(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
        return info
    if not _is_client_transcript(safe, st):  # only a client's transcript is ever linked or copied
        return info
    info["size"], info["mtime"] = st.st_size, st.st_mtime
    sid = "".join(c for c in str(session_id or "nosession") if c.isalnum() or c in "-_")[:80] or "nosession"
    blob_name = "%s.%d.%d%s" % (sid, st.st_dev, st.st_ino, os.path.splitext(safe)[1].lower())
    blob_path = os.path.join(home.blobs, blob_name)
    try:
        if os.path.exists(blob_path):
            info["blob"], info["blob_kind"] = blob_name, "link"
            return info
        os.link(safe, blob_path, follow_symlinks=False)
        info["blob"], info["blob_kind"] = blob_name, "link"
    except OSError:
        if st.st_size <= COPY_FALLBACK_MAX:
            # one copy per transcript (named by its identity), replaced as it grows: 40 stops of a session
            # on another filesystem than the home left 40 copies before (issue #18, defect 21)
            copy_name = "%s.%d.%d.copy%s" % (sid, st.st_dev, st.st_ino, os.path.splitext(safe)[1].lower())
            copy_path = os.path.join(home.blobs, copy_name)
            try:
                try:
                    cst = os.lstat(copy_path)
                    current = cst.st_size == st.st_size and cst.st_mtime >= st.st_mtime
                except OSError:
                    current = False
                if not current:  # the copy is older than the transcript's last change
                    _atomic_copy(safe, copy_path, home)
                info["blob"], info["blob_kind"] = copy_name, "copy"
            except OSError:
                pass
    return info


def _atomic_copy(src, dst, home):
    tmp = os.path.join(home.inbox_dir("tmp"), "%s.%d.%d.part" % (os.path.basename(dst), os.getpid(), time.time_ns()))
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            while True:
                chunk = fin.read(1 << 20)
                if not chunk:
                    break
                fout.write(chunk)
            fout.flush()
            os.fsync(fout.fileno())
        os.replace(tmp, dst)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def build_event(kind: str, raw: bytes, client_flag=None, home: Home = None) -> dict:
    payload, parsed, error = None, False, None
    try:
        payload = json.loads(raw.decode("utf-8"))
        parsed = isinstance(payload, dict)
        if not parsed:
            error = "payload is JSON but not an object"
    except (UnicodeDecodeError, ValueError) as e:
        error = "payload is not JSON: %s" % (str(e)[:200],)
    except RecursionError:
        payload, error = None, "payload is nested too deeply to be read"
    event = {
        "schema": EVENT_SCHEMA,
        "kind": kind,
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%03dZ" % (time.time_ns() // 1_000_000 % 1000),
        "client": detect_client(payload if parsed else None, client_flag),
        "parsed": parsed,
        "payload": payload if parsed else None,
        "transcript": {"path": None, "size": None, "mtime": None, "blob": None, "blob_kind": None},
    }
    if parsed:
        if home is not None:
            event["transcript"] = snapshot_transcript(home, payload.get("transcript_path"), payload.get("session_id"))
    else:
        event["raw"] = raw[:MAX_STDIN].decode("utf-8", "backslashreplace")
        event["error"] = error
    return event


def _read_stdin() -> bytes:
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return b""
        return sys.stdin.buffer.read(MAX_STDIN)
    except (OSError, ValueError):
        return b""


def _log_failure(home: Home, kind: str, exc: BaseException):
    """Last resort: one JSON line in the log, written without structlog (hooks stay stdlib-only)."""
    try:
        line = json.dumps({"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "level": "error",
                           "event": "capture_failed", "hook": kind, "error": "%s: %s" % (type(exc).__name__, exc),
                           "hint": "check that the Cortex home is writable and the disk is not full"})
        os.makedirs(os.path.dirname(home.log_file), mode=0o700, exist_ok=True)
        with open(home.log_file, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except Exception:
        pass


HOOK_USAGE = """usage: cortex-%s [--client claude-code|codex|gemini]

%s hook: reads the client's hook JSON on stdin, drops one event into the Cortex inbox
($CORTEX_HOME/inbox/pending/, default ~/.cortex) for cortex-normalize, prints nothing and exits 0
whatever happens (a client never calls a hook with --help: this text queues nothing).
"""


def capture(kind: str, argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "-h" in argv or "--help" in argv:
        name = kind.replace("_", "-")
        sys.stdout.write(HOOK_USAGE % (name, {"stop": "Stop / SessionEnd / AfterAgent",
                                               "pre_compact": "PreCompact / PreCompress"}.get(kind, kind)))
        return 0
    client = None
    if "--client" in argv:
        i = argv.index("--client")
        client = argv[i + 1] if i + 1 < len(argv) else None
    home = Home()
    try:
        raw = _read_stdin()
        old = os.umask(0o077)
        try:
            for state in ("tmp", "pending"):
                os.makedirs(home.inbox_dir(state), mode=0o700, exist_ok=True)
            os.makedirs(home.blobs, mode=0o700, exist_ok=True)
            try:
                write_event(home, build_event(kind, raw, client, home))
            except (RecursionError, ValueError, TypeError, MemoryError) as e:
                # the payload itself broke the event (nesting deeper than json.dumps goes, ...): keep it raw,
                # unparsed, so the normalizer quarantines it with a reason instead of it being lost
                write_event(home, raw_event(kind, raw, client, "%s: %s" % (type(e).__name__, str(e)[:200])))
        finally:
            os.umask(old)
    except BaseException as e:  # a hook must never fail the client's session
        _log_failure(home, kind, e)
    return 0


def raw_event(kind: str, raw: bytes, client_flag, error: str) -> dict:
    """An unparsed event holding the payload's bytes as text (the fallback when build_event fails)."""
    return {"schema": EVENT_SCHEMA, "kind": kind,
            "captured_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + ".%03dZ" % (
                time.time_ns() // 1_000_000 % 1000),
            "client": detect_client(None, client_flag),
            "parsed": False, "payload": None,
            "transcript": {"path": None, "size": None, "mtime": None, "blob": None, "blob_kind": None},
            "raw": raw[:MAX_STDIN].decode("utf-8", "backslashreplace"), "error": error}


def main_stop():
    sys.exit(capture("stop"))


def main_pre_compact():
    sys.exit(capture("pre_compact"))
