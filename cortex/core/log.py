"""The structured log: JSON lines in <home>/logs/cortex.log.

Each call writes one line, {the bound fields..., the call's fields..., "event", "level", "timestamp"} (and
"exception", the traceback, for `exception` or exc_info): what structlog wrote, configured as Cortex had it
(add_log_level, TimeStamper(fmt="iso", utc=True), format_exc_info, JSONRenderer() into a WriteLogger),
without importing it: structlog's import (asyncio, typing, inspect among others) was 50 ms of CPU of every
normalizer run, a tenth of a run's fixed cost.  tests/core/test_log.py renders the same calls through
structlog and compares.

Imported lazily by the hot paths (only when there is something to log).
"""
import datetime
import json
import os
import sys
import threading
from collections.abc import Mapping

_configured = {}


def get_logger(home, **bound):
    path = home.log_file
    if _configured.get("path") != path:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            stream = _Safe(os.fdopen(fd, "a", encoding="utf-8", buffering=1))
        except OSError:
            stream = _Safe(None)  # an unwritable home must not turn logging into a crash
        old = _configured.get("stream")
        _configured.update(path=path, stream=stream)
        if old is not None:
            try:
                old.close()
            except OSError:
                pass
    return Logger(_configured["stream"], dict(pid=os.getpid(), **bound))


_LOCK = threading.Lock()  # one line at a time, whole


class Logger:
    """A logger bound to some fields: `info`, `warning`, `error`, `exception`... write one line each."""

    def __init__(self, stream, context: dict):
        self._stream, self._context = stream, context

    def bind(self, **fields) -> "Logger":
        return Logger(self._stream, dict(self._context, **fields))

    def _write(self, level: str, event, args, fields: dict) -> None:
        line = dict(self._context)
        line.update(**fields)
        if args:  # "%s" formatting, a single non-empty mapping giving the names
            event = event % (args[0] if len(args) == 1 and isinstance(args[0], Mapping) and args[0] else args)
        if event is not None:
            line["event"] = event
        line["level"] = level
        line["timestamp"] = datetime.datetime.now(tz=datetime.timezone.utc).isoformat().replace("+00:00", "Z")
        exc_info = _exc_info(line.pop("exc_info", None))
        if exc_info:
            line["exception"] = _format_exception(exc_info)
        text = json.dumps(line, default=_fallback, sort_keys=False)
        with _LOCK:
            self._stream.write(text + "\n")
            self._stream.flush()

    def debug(self, event, *args, **fields):
        self._write("debug", event, args, fields)

    def info(self, event, *args, **fields):
        self._write("info", event, args, fields)

    def warning(self, event, *args, **fields):
        self._write("warning", event, args, fields)

    warn = warning

    def error(self, event, *args, **fields):
        self._write("error", event, args, fields)

    def critical(self, event, *args, **fields):
        self._write("critical", event, args, fields)

    def exception(self, event, *args, **fields):
        fields.setdefault("exc_info", True)
        self._write("error", event, args, fields)


def _exc_info(v):
    """What exc_info=... asks to render: an exception, an exc_info tuple, or (any true value) the exception
    being handled; None when there is none."""
    from types import TracebackType
    if isinstance(v, BaseException):
        return (v.__class__, v, v.__traceback__)
    if isinstance(v, tuple) and len(v) == 3:
        if isinstance(v[0], type) and issubclass(v[0], BaseException) and isinstance(v[1], BaseException) \
                and (v[2] is None or isinstance(v[2], TracebackType)):
            return v
    if v:
        got = sys.exc_info()
        return None if got == (None, None, None) else got
    return None


def _format_exception(exc_info) -> str:
    import io
    import traceback
    sio = io.StringIO()
    traceback.print_exception(exc_info[0], exc_info[1], exc_info[2], None, sio)
    s = sio.getvalue()
    return s[:-1] if s[-1:] == "\n" else s


def _fallback(obj):
    """A value JSON has no form for: its __structlog__() if it has one, else its repr."""
    try:
        return obj.__structlog__()
    except AttributeError:
        return repr(obj)


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
