"""Ranking: which records deserve a place in the session-start block.  Pure functions.

activation  ACT-R base-level learning, B = ln Σ t_j^-d, with t_j the hours since each time the
            record was created, seen again in a later session, or used (recalled).
recency     0.5 ** (days since last touched / half-life).
score       type weight + activation weight·B + recency weight·recency + confidence weight·confidence.
Types in `never_decay` (decisions, rejections, preferences) do not lose activation or recency with
age: their B is ln(number of times) and their recency is 1.  Pinned records always come first.
"""
import math

MIN_AGE_HOURS = 1.0 / 60  # a time "now" would give an infinite activation


def activation(times: list, now: float, decay: float) -> float:
    total = 0.0
    for t in times:
        age_h = max((now - t) / 3600.0, MIN_AGE_HOURS)
        total += age_h ** -decay
    return math.log(total) if total > 0 else -10.0


def recency(times: list, now: float, half_life_days: float) -> float:
    if not times:
        return 0.0
    age_days = max(now - max(times), 0.0) / 86400.0
    return 0.5 ** (age_days / half_life_days)


def parts(rec: dict, now: float, cfg: dict, days=None) -> dict:
    """The score of one record and what it is made of (for `cortex why`)."""
    r = cfg["ranking"]
    times = rec.get("times") or []
    never = rec["type"] in r.get("never_decay", ())
    act = math.log(max(len(times), 1)) if never else activation(times, now, r["decay"])
    rec_ = 1.0 if never else recency(times, now, r["recency_half_life_days"])
    tw = r["type_weights"].get(rec["type"], 1.0)
    from cortex.model.decay import effective_confidence, settings
    # confidence decays with the work done in the scope (active days), not the calendar: a project
    # left alone for months keeps its memory as it was
    conf = effective_confidence(rec, now, settings(cfg), r.get("never_decay", ()), days)
    score = (tw + r["activation_weight"] * act + r["recency_weight"] * rec_ + r["confidence_weight"] * conf
             + 0.1 * int(rec.get("priority") or 0))
    return {"score": score, "activation": act, "recency": rec_, "type_weight": tw, "confidence": conf,
            "pinned": bool(rec.get("pinned"))}


def order(records: list, now: float, cfg: dict, boost_session: str = None) -> list:
    """Records sorted best first: pinned, then by score; ties go to the record touched last (decisions do
    not age, so two of the same score are often an old rule and the newer one that changed it without
    retiring it), then by id so the order is stable.
    `boost_session` lifts records of that session (the one that just compacted) to the top."""
    from cortex.model.decay import active_days
    days = active_days(records)

    def key(rec):
        p = parts(rec, now, cfg, days)
        rec["_parts"] = p
        boosted = bool(boost_session and boost_session in (rec.get("sessions") or ()))
        return (not p["pinned"], not boosted, -p["score"], -max(rec.get("times") or [0]), rec["id"])
    return sorted(records, key=key)


def plan_is_open(rec: dict) -> bool:
    plan = rec.get("plan") or []
    return any(i.get("status") != "completed" for i in plan) if plan else True
