"""Progress for long work: one line on stderr, rewritten in place, only when stderr is a terminal.

Nothing is drawn during the first second (quick runs stay silent), then at most ten times a second; the
line is cleared when the work ends.  `--quiet` turns it off (pass quiet=True)."""
import sys
import time

DELAY_S = 1.0
INTERVAL_S = 0.1


def progress(label: str, quiet: bool = False, stream=None, delay: float = DELAY_S):
    """A callback cb(done, total), or None when nothing should be shown."""
    stream = stream or sys.stderr
    if quiet:
        return None
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    start = time.monotonic()
    state = {"last": 0.0, "width": 0}

    def cb(i, n):
        now = time.monotonic()
        if i < n and (now - start < delay or now - state["last"] < INTERVAL_S):
            return
        if i >= n:
            if state["width"]:
                stream.write("\r%s\r" % (" " * state["width"]))
                stream.flush()
            return
        state["last"] = now
        text = "%s %d/%d" % (label, i, n)
        state["width"] = max(state["width"], len(text))
        stream.write("\r" + text.ljust(state["width"]))
        stream.flush()
    return cb
