"""cortex.core.log writes the lines structlog wrote, configured as Cortex had it (the timestamp aside, which
both take from the clock: its form is checked on its own)."""
import io
import json
import re

import pytest

from cortex.core import log as cortex_log

structlog = pytest.importorskip("structlog")


class Thing:
    def __repr__(self):
        return "<thing>"


class Shaped:
    def __structlog__(self):
        return {"shaped": True}


def _calls(logger):
    logger.info("session_done", session="s1", client="claude-code", truncated=False, events=2, notes=["a", "é"])
    logger.warning("event_failed", event_file="x.json", reason="bad\nline")
    logger.info("count %d of %s", 3, "n")
    logger.info("named %(a)s", {"a": 1})
    logger.error("odd_values", things={1, 2} and Thing(), shaped=Shaped(), n=None, f=1.5)
    logger.info("overrides", pid=7, component="other", level="mine", timestamp="mine")
    logger.bind(extra="x").info("bound", extra="y")
    logger.exception("no_exception_here")
    logger.error("explicit", exc_info=ValueError("by value"))
    logger.error("false", exc_info=False)
    try:
        raise KeyError("inner")
    except KeyError:
        logger.exception("session_failed", session="s2")
        logger.warn("warned", exc_info=True)
    logger.debug("debug")
    logger.critical("critical")


def _structlog_lines(bound):
    out = io.StringIO()
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True),
                    structlog.processors.format_exc_info, structlog.processors.JSONRenderer(sort_keys=False)],
        logger_factory=structlog.WriteLoggerFactory(file=out), cache_logger_on_first_use=False)
    try:
        _calls(structlog.get_logger().bind(**bound))
    finally:
        structlog.reset_defaults()
    return out.getvalue().splitlines()


def _lines(bound):
    out = io.StringIO()
    _calls(cortex_log.Logger(out, dict(bound)))
    return out.getvalue().splitlines()


ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{6})?Z$")


def _masked(line):
    d = json.loads(line)
    if d.get("timestamp") != "mine":
        assert ISO_Z.match(d["timestamp"]), d["timestamp"]
        d["timestamp"] = "T"
    return json.dumps(d)  # keys in the order written


def test_the_same_lines_as_structlog():
    bound = {"pid": 42, "component": "normalize"}
    theirs, mine = _structlog_lines(bound), _lines(bound)
    assert len(mine) == len(theirs) == 14
    for a, b in zip(mine, theirs):
        assert _masked(a) == _masked(b)
    # the raw text too, once the clock is masked
    for a, b in zip(mine, theirs):
        ts = re.compile(r'"timestamp": "[^"]*"')
        assert ts.sub("T", a) == ts.sub("T", b)


def test_get_logger_binds_pid_and_fields(tmp_path):
    class H:
        log_file = str(tmp_path / "logs" / "cortex.log")
    cortex_log.get_logger(H(), component="normalize").info("hello", n=1)
    line = json.loads((tmp_path / "logs" / "cortex.log").read_text().splitlines()[-1])
    assert list(line) == ["pid", "component", "n", "event", "level", "timestamp"]
    assert line["event"] == "hello" and line["level"] == "info"
