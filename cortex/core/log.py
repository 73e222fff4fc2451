"""The structured log: JSON lines in <home>/logs/cortex.log, through structlog.

Imported lazily by the hot paths (only when there is something to log).
"""
import os
import sys

_configured = {}


def get_logger(home, **bound):
    import structlog
    path = home.log_file
    if _configured.get("path") != path:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            stream = _Safe(os.fdopen(fd, "a", encoding="utf-8", buffering=1))
        except OSError:
            stream = _Safe(None)  # an unwritable home must not turn logging into a crash
        old = _configured.get("stream")
        structlog.configure(
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(sort_keys=False),
            ],
            logger_factory=structlog.WriteLoggerFactory(file=stream),
            cache_logger_on_first_use=False,
        )
        _configured.update(path=path, stream=stream)
        if old is not None:
            try:
                old.close()
            except OSError:
                pass
    return structlog.get_logger().bind(pid=os.getpid(), **bound)


class _Safe:
    """A log stream whose writes never raise: a full disk or read-only home loses log lines, not work."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, s):
        if self.stream is not None:
            try:
                self.stream.write(s)
            except (OSError, ValueError):
                pass

    def flush(self):
        if self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def close(self):
        if self.stream is not None:
            try:
                self.stream.close()
            except (OSError, ValueError):
                pass


def error_line(msg: str, hint: str = "") -> None:
    """One line for a person on stderr: what went wrong, and what to do."""
    sys.stderr.write("cortex: %s%s\n" % (msg, ("; " + hint) if hint else ""))
