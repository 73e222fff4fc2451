"""The inbox queue, Maildir style: the folder a file is in is its state.

    tmp/      a hook is still writing it
    pending/  complete, waiting for the normalizer
    claimed/  taken by a normalizer run (a claim is a rename)
    done/     processed; kept a while for inspection
    failed/   quarantined, with <name>.reason.txt beside it saying why
"""
import json
import os
import time

from cortex.core.fsutil import atomic_write_text, fsync_dir, write_fully

MAX_EVENT_BYTES = 16 * 1024 * 1024


_seq = 0


def unique_name() -> str:
    """A Maildir-style name: time, pid, random and host, so parallel sessions never collide."""
    global _seq
    _seq += 1
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in (os.uname().nodename if hasattr(os, "uname")
                                                                    else os.environ.get("COMPUTERNAME", "host")))
    return "%d.P%dQ%dR%s.%s" % (time.time_ns(), os.getpid(), _seq, os.urandom(6).hex(), host[:40] or "host")


def deliver(home, event: dict) -> str:
    """Maildir delivery (the capture hooks): write in tmp/, fsync, rename into pending/.  Returns the
    pending path."""
    name = unique_name() + ".json"
    tmp = os.path.join(home.inbox_dir("tmp"), name)
    # ASCII escapes: a lone surrogate (half an emoji) in a payload must not lose the event
    data = json.dumps(event, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        try:
            write_fully(fd, data)
        finally:
            os.close(fd)
        dst = os.path.join(home.inbox_dir("pending"), name)
        os.rename(tmp, dst)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return dst


def list_names(home, state: str) -> list:
    try:
        return sorted(n for n in os.listdir(home.inbox_dir(state)) if not n.startswith("."))
    except FileNotFoundError:
        return []


def move(home, name: str, src: str, dst: str) -> str:
    os.makedirs(home.inbox_dir(dst), mode=0o700, exist_ok=True)
    to = os.path.join(home.inbox_dir(dst), name)
    os.rename(os.path.join(home.inbox_dir(src), name), to)
    return to


def claim_all(home) -> list:
    """Claim every pending event by renaming it into claimed/.  Events left in claimed/ by a run
    that crashed are ours again (we hold the lock).  Returns the claimed names, oldest first."""
    claimed = list_names(home, "claimed")
    for name in list_names(home, "pending"):
        try:
            move(home, name, "pending", "claimed")
            claimed.append(name)
        except FileNotFoundError:
            continue
    fsync_dir(home.inbox_dir("claimed"))
    return sorted(set(claimed))


def fail(home, name: str, reason: str, src: str = "claimed") -> None:
    """Quarantine an event with a readable reason beside it.  Never drops the file."""
    atomic_write_text(os.path.join(home.inbox_dir("failed"), name + ".reason.txt"),
                      "%s\nfailed at %s\n" % (reason.strip(), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
    move(home, name, src, "failed")


def done(home, name: str) -> None:
    move(home, name, "claimed", "done")


def load(home, name: str, state: str = "claimed"):
    """(event, None) or (None, reason)."""
    path = os.path.join(home.inbox_dir(state), name)
    if os.path.islink(path):
        return None, "the inbox entry is a symbolic link; Cortex does not follow links out of its inbox"
    if not name.endswith(".json"):
        return None, "not an event file (event files end in .json); it was not written by a Cortex hook"
    try:
        size = os.path.getsize(path)
        if size > MAX_EVENT_BYTES:
            return None, "event file is %d bytes, over the %d byte limit" % (size, MAX_EVENT_BYTES)
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        return None, "cannot read the event file: %s" % e
    try:
        event = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "event file is not valid UTF-8"
    except ValueError as e:
        return None, "event file is not valid JSON: %s" % e
    from cortex.core.schemas import validate
    problems = validate("event", event)
    if problems:
        return None, "event does not match schemas/event.schema.json: %s" % "; ".join(problems[:3])
    if not event["parsed"]:
        return None, "the hook received input that is not a JSON object (%s); raw input is kept in the file" % (
            event.get("error") or "unparsed")
    return event, None
