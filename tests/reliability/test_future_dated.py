"""A session dated in the future (a skewed clock) never owns the block over later real sessions (issue #18,
defect 20): no record is dated after its event's capture time."""
from __future__ import annotations

import json
import os
import time

from cortex.brief import session_start
from cortex.core.home import Home
from cortex_testkit import all_records, append_turns, copy_fixture, drop_event, hook_payload, iso, normalize

from .helpers import report


def _session(home, tmp_path, name, ago_hours, prompt, captured_at, cwd):
    path = copy_fixture("cc-2.1.4", tmp_path / name, ago_hours=ago_hours)
    append_turns(path, [("user", prompt), ("assistant", "Done: I have updated the %s module." % name)])
    payload = hook_payload(path, "claude-code", session_id="sess-" + name, cwd=str(cwd))
    pending = drop_event(home, payload)
    with open(pending, encoding="utf-8") as f:
        event = json.load(f)
    event["captured_at"] = iso(captured_at)  # when the hook ran (the event is rewritten in place, as written)
    with open(pending, "w", encoding="utf-8") as f:
        json.dump(event, f)
    normalize(home)


def _epoch(s):
    from cortex.store.index import iso_to_epoch
    return iso_to_epoch(s)


def test_a_future_dated_session_does_not_own_where_you_left_off(tmp_path):
    """Before: a session whose transcript was dated 30 days ahead kept "Where you left off" over every later
    real session, and its records never aged."""
    home = Home(str(tmp_path / "home"))
    cwd = tmp_path / "proj"
    cwd.mkdir()
    now = time.time()
    skewed_capture = now - 3 * 3600
    _session(home, tmp_path, "skewed", -30 * 24, "please refactor the alpha parser module", skewed_capture, cwd)
    later = [r for r in all_records(home)
             if _epoch(r.get("updated") or "") > skewed_capture + 1 or _epoch(r.get("created") or "") > skewed_capture + 1]
    assert all_records(home) and not later, [(r["type"], r.get("created"), r.get("updated")) for r in later]
    _session(home, tmp_path, "real", 1, "please refactor the bravo parser module", now - 60, cwd)
    text, _info = session_start.build(home, str(cwd), now=now)[:2]
    resume = text.split("## Where you left off", 1)[1].split("\n## ", 1)[0] if "## Where you left off" in text else ""
    report("future_dated_session", skewed_records=len(all_records(home)), records_after_capture=len(later),
           resume_is_the_real_session="bravo" in resume)
    assert "bravo" in resume and "alpha" not in resume, text
