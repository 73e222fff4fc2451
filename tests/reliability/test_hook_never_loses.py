"""A hook never loses an event and always exits 0 (issue #18, defect 6)."""
from __future__ import annotations

import pytest

from cortex.core.home import Home
from cortex_testkit import normalize

from .helpers import event_names, hook, reason_of, report


@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_a_deeply_nested_payload_lands_and_is_quarantined_with_a_reason(tmp_path, depth):
    """Before: RecursionError outside the guard; the event landed in neither pending/ nor failed/."""
    home = Home(str(tmp_path / "home"))
    raw = b'{"session_id": "deep", "x": ' + b"[" * depth + b"]" * depth + b"}"
    r = hook(home, raw)
    assert r.returncode == 0 and not r.stdout
    pending = event_names(home, "pending")
    report("deep_payload_hook", depth=depth, rc=r.returncode, pending=len(pending))
    assert len(pending) == 1
    normalize(home)
    failed = event_names(home, "failed")
    assert failed == pending
    assert reason_of(home, failed[0]).strip()
