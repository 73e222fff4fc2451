"""`forget --hard` stays forgotten (issue #18, defect 7): the extraction state carried in state/cursors.json
must not bring the forgotten record back at the session's next edit."""
from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path

from cortex.core.home import Home
from cortex.ops import manage
from cortex_testkit import append_turns, copy_fixture, drop_event, hook_payload, normalize, records_by_id

from .helpers import report

SECRET_WORDS = "frobnicator quarantine wombat"


def _append_edit(path: Path, file_name: str):
    lines = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
    proto = [r for r in lines if r.get("type") == "assistant" and not r.get("isSidechain")][-1]
    rec = copy.deepcopy(proto)
    rec["uuid"], rec["parentUuid"] = str(uuid.uuid4()), lines[-1].get("uuid")
    rec["timestamp"] = lines[-1]["timestamp"]
    rec["message"]["id"] = "msg_edit_%s" % uuid.uuid4().hex[:8]
    cwd = rec.get("cwd") or "/tmp"
    rec["message"]["content"] = [{"type": "tool_use", "id": "toolu_%s" % uuid.uuid4().hex[:12], "name": "Edit",
                                  "input": {"file_path": "%s/%s" % (cwd, file_name), "old_string": "a",
                                            "new_string": "b"}}]
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")


def test_a_hard_forgotten_progress_record_is_not_recreated_by_the_next_edit(tmp_path):
    home = Home(str(tmp_path / "home"))
    path = copy_fixture("cc-2.1.4", tmp_path / "client")
    append_turns(path, [("user", "please rework the %s handling everywhere" % SECRET_WORDS),
                        ("assistant", "Sure, working on it.")])
    _append_edit(path, "secretmodule_alpha.py")
    payload = hook_payload(path, "claude-code")
    drop_event(home, payload)
    normalize(home)
    hits = [r for r in records_by_id(home).values() if "frobnicator" in r["text"]]
    assert hits, "the progress record quoting the prompt was not written"
    out = manage.forget(home, [manage.load(home, r["id"]) for r in hits], hard=True)
    assert all(s["action"] == "deleted" for s in out)
    assert "frobnicator" not in Path(home.cursors).read_text()
    _append_edit(path, "other_file.py")  # the session goes on: one more edit, no new prompt
    drop_event(home, payload)
    normalize(home)
    back = [r["id"] for r in records_by_id(home).values()
            if "frobnicator" in r["text"] or "secretmodule_alpha" in r["text"]]
    report("forget_hard_resurrection", forgotten=len(hits), back=len(back))
    assert not back
