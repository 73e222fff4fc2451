"""How memory fades: confidence decay by type, counted in active days of a record's scope.

Pure functions, shared by ranking (session start, the shortlist) and curation (archive, prune); they
live here so that neither imports the other and session start loads no curation code.
"""
import bisect
import math

from cortex.core.config import DEFAULTS as _CONFIG_DEFAULTS


def settings(cfg: dict) -> dict:
    """The memory settings of a config, with the defaults of keys it lacks (one source: core.config)."""
    base = _CONFIG_DEFAULTS["memory"]
    mem = cfg.get("memory") or {}
    out = dict(base)
    out.update(mem)
    out["half_life_days"] = dict(base["half_life_days"], **(mem.get("half_life_days") or {}))
    return out


def active_days(records) -> list:
    """The days (UTC day numbers) on which anything happened in these records' scope, sorted."""
    return sorted({int(t // 86400) for r in records for t in (r.get("times") or ())})


def elapsed_days(last: float, now: float, days=None) -> float:
    """How much time a record has been left behind: the number of active days of its scope after the
    day it was last touched (so idle weeks do not count), or calendar days when no activity is known."""
    if days is None:
        return max(now - last, 0) / 86400.0
    last_day, now_day = int(last // 86400), int(now // 86400)
    return float(max(bisect.bisect_right(days, now_day) - bisect.bisect_right(days, last_day), 0))


def effective_confidence(rec: dict, now: float, mem: dict, never_decay=(), days=None) -> float:
    """Confidence after decay: halves every half-life of the record's type -- counted in active days
    of its scope since it was last seen or used; records used often or linked by many decay slower.
    Decisions, rejections, preferences and pinned records never decay."""
    conf = float(rec.get("confidence") or 0)
    hl = mem["half_life_days"].get(rec.get("type"))
    if rec.get("pinned") or rec.get("type") in never_decay or not hl:
        return conf
    times = rec.get("times") or []
    last = max(times) if times else now
    n = max(len(times) - 1, 0) + len(rec.get("related") or ())
    hl = hl * (1 + mem["use_slowdown"] * math.log1p(n))
    return conf * 0.5 ** (elapsed_days(last, now, days) / hl)
