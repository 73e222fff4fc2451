"""bin/cortex-session-start as the client runs it: hook JSON on stdin, the block on stdout, exit 0 always,
nothing heavy imported on the way."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cortex_testkit import (HEAVY_MODULES, REPO, all_records, clean_env, copy_fixture, drop_event, hook_payload,
                      log_lines, normalize, run_bin)

S98 = "1af7fc5e-8455-4414-9ccd-011d40f70b2a"
S108 = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
DEMO_CWD = "/path/to/Demo"  # the cwd both 1.0.x fixtures recorded


@pytest.fixture
def demo_home(home, tmp_path):
    """Two real sessions of one project (cwd /path/to/Demo), normalized; 1.0.98 ended before 1.0.108, as in
    reality (3 hours and 1 hour ago)."""
    for name, ago in (("cc-1.0.98", 3.0), ("cc-1.0.108", 1.0)):
        path = copy_fixture(name, tmp_path / "client", ago_hours=ago)
        drop_event(home, hook_payload(path))
    stats = normalize(home)
    assert stats["done"] == 2 and stats["failed"] == 0
    return home


def start_payload(cwd=DEMO_CWD, session_id="new-session", source="startup", **kw):
    p = {"session_id": session_id, "transcript_path": "/nowhere/%s.jsonl" % session_id, "cwd": cwd,
         "hook_event_name": "SessionStart", "source": source, "permission_mode": "default"}
    p.update(kw)
    return json.dumps(p).encode()


def resume_section(text):
    part = text.split("## Where you left off\n", 1)[1]
    return part.split("\n\n", 1)[0]


def test_prints_the_block_for_the_project_of_the_payload_cwd(demo_home):
    proc = run_bin("cortex-session-start", "--client", "claude-code", stdin=start_payload(), home=demo_home)
    assert proc.returncode == 0 and proc.stderr == b""
    out = proc.stdout.decode()
    assert out.startswith('<cortex-memory project="Demo-') and out.endswith("</cortex-memory>\n")
    assert "CLAUDE.md" in out
    assert "## Where you left off" in out
    assert "Last session:" in out
    assert len(out) <= 9500
    # the finished plans of both sessions are not shown
    assert "Plan:" not in out
    # --cwd gives the same block (ages may tick over a minute boundary; compare without them)
    same = run_bin("cortex-session-start", "--cwd", DEMO_CWD, home=demo_home)
    assert same.returncode == 0

    def strip_ages(s):
        import re
        return re.sub(r"\[(\w+), \d+(?:m|h|d|w|mo), ", r"[\1, ", s)
    assert strip_ages(same.stdout.decode()) == strip_ages(out)


def test_the_block_names_the_newest_session_first(demo_home):
    out = run_bin("cortex-session-start", stdin=start_payload(), home=demo_home).stdout.decode()
    assert "/orchestrator" in resume_section(out)  # 1.0.108 is the later session


@pytest.mark.parametrize("situation", ["empty-home", "missing-home", "other-project", "garbage-stdin",
                                       "no-stdin"])
def test_no_records_means_no_output_at_all(demo_home, tmp_path, situation):
    home = demo_home
    stdin = start_payload()
    args = ()
    if situation == "empty-home":
        home = tmp_path / "empty"
        home.mkdir()
    elif situation == "missing-home":
        home = tmp_path / "does" / "not" / "exist"
    elif situation == "other-project":
        stdin = start_payload(cwd=str(tmp_path))
    elif situation == "garbage-stdin":
        stdin = b"\xff not json"
    proc = subprocess.run([sys.executable, str(REPO / "bin" / "cortex-session-start"), *args], input=stdin,
                          capture_output=True, env=clean_env(home), cwd=str(tmp_path), timeout=30)
    if situation == "no-stdin":
        proc = subprocess.run([sys.executable, str(REPO / "bin" / "cortex-session-start")],
                              stdin=subprocess.DEVNULL, capture_output=True, env=clean_env(home),
                              cwd=str(tmp_path), timeout=30)
    assert proc.returncode == 0
    assert proc.stdout == b"" and proc.stderr == b""


@pytest.mark.parametrize("damage", ["garbage", "empty-file", "truncated", "wrong-schema"])
def test_corrupt_index_gives_no_output_and_a_log_line(demo_home, damage):
    db = Path(demo_home.index_db)
    for extra in ("-wal", "-shm"):
        try:
            os.unlink(str(db) + extra)
        except FileNotFoundError:
            pass
    if damage == "garbage":
        db.write_bytes(b"this is not an sqlite file at all" * 100)
    elif damage == "empty-file":
        db.write_bytes(b"")
    elif damage == "truncated":
        db.write_bytes(db.read_bytes()[:1500])
    else:
        db.unlink()
        con = sqlite3.connect(str(db))
        con.execute("CREATE TABLE candidates(x)")
        con.commit()
        con.close()
    before = len(log_lines(demo_home))
    proc = run_bin("cortex-session-start", stdin=start_payload(), home=demo_home)
    assert proc.returncode == 0
    assert proc.stdout == b"" and proc.stderr == b""
    new = log_lines(demo_home)[before:]
    assert new, "nothing was logged"
    assert new[-1]["level"] == "error" and new[-1]["event"] == "session_start_failed"
    assert new[-1]["component"] == "session_start"
    assert new[-1].get("error") and "timestamp" in new[-1]


def test_gemini_gets_json(demo_home):
    plain = run_bin("cortex-session-start", stdin=start_payload(), home=demo_home).stdout.decode()
    proc = run_bin("cortex-session-start", "--client", "gemini", stdin=start_payload(), home=demo_home)
    assert proc.returncode == 0 and proc.stderr == b""
    data = json.loads(proc.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    ctx = data["hookSpecificOutput"]["additionalContext"]
    assert ctx.startswith("<cortex-memory") and ctx.endswith("</cortex-memory>")
    assert ctx.split("\n")[3:] == plain.rstrip("\n").split("\n")[3:] or "CLAUDE.md" in ctx
    # Gemini's own payload shape (timestamp + source, no permission_mode / model) is recognised without the flag
    gem = json.dumps({"session_id": "g1", "transcript_path": "/x/g1.json", "cwd": DEMO_CWD,
                      "hook_event_name": "SessionStart", "timestamp": "2026-01-16T11:01:00Z",
                      "source": "startup"}).encode()
    auto = run_bin("cortex-session-start", stdin=gem, home=demo_home)
    assert json.loads(auto.stdout)["hookSpecificOutput"]["additionalContext"].startswith("<cortex-memory")
    # nothing to say: no output, not an empty JSON object
    empty = run_bin("cortex-session-start", "--client", "gemini", stdin=start_payload(cwd="/elsewhere"),
                    home=demo_home)
    assert empty.returncode == 0 and empty.stdout == b""


def test_after_compaction_the_compacted_session_comes_first(demo_home):
    normal = run_bin("cortex-session-start", stdin=start_payload(session_id=S98, source="startup"),
                     home=demo_home).stdout.decode()
    compact = run_bin("cortex-session-start", stdin=start_payload(session_id=S98, source="compact"),
                      home=demo_home).stdout.decode()
    assert "/orchestrator" in resume_section(normal)
    assert "/orchestrator" not in resume_section(compact)
    assert "Last session: changed CLAUDE.md." in resume_section(compact)


def test_after_compaction_the_sessions_records_are_found_even_outside_the_candidates(demo_home):
    """The compacted session's records come from the sessions table, not only the pre-ranked list."""
    s98_ids = {r["id"] for r in all_records(demo_home)
               if S98 in [p["session"] for p in r["provenance"]] and r["type"] != "plan"}
    assert s98_ids
    con = sqlite3.connect(demo_home.index_db)
    con.execute("DELETE FROM candidates")
    con.commit()
    con.close()
    normal = run_bin("cortex-session-start", stdin=start_payload(session_id=S98, source="startup"),
                     home=demo_home)
    assert normal.returncode == 0 and normal.stdout == b""
    compact = run_bin("cortex-session-start", stdin=start_payload(session_id=S98, source="compact"),
                      home=demo_home).stdout.decode()
    assert "Last session: changed CLAUDE.md." in compact
    assert "/orchestrator" not in compact  # the other session's records are not pulled in
    other = run_bin("cortex-session-start", stdin=start_payload(session_id="unknown", source="compact"),
                    home=demo_home)
    assert other.stdout == b""


def test_a_just_normalized_session_shows_up_after_compaction(home, tmp_path):
    """The whole loop: pre-compact hook, normalize, then SessionStart(source=compact) for that session."""
    path = copy_fixture("cc-2.1.39", tmp_path / "client")
    payload = hook_payload(path)
    proc = run_bin("cortex-pre-compact", "--client", "claude-code", stdin=json.dumps(payload).encode(), home=home)
    assert proc.returncode == 0 and proc.stdout == b""
    assert run_bin("cortex-normalize", "--quiet", home=home).returncode == 0
    out = run_bin("cortex-session-start", stdin=start_payload(cwd=payload["cwd"], session_id=payload["session_id"],
                                                             source="compact"), home=home).stdout.decode()
    assert "Pre-commit format check failure" in out  # a fix from the compaction summary
    assert "Plan:" not in out  # its pending tasks were all done after the compaction
    assert "transcript_tail_supervisor.ex" in out  # from the progress record


def test_help(home):
    proc = run_bin("cortex-session-start", "--help", home=home)
    assert proc.returncode == 0 and b"usage: cortex-session-start" in proc.stdout


# --------------------------------------------------------------------------- hot path imports

def test_success_path_imports_nothing_heavy(demo_home):
    proc = run_bin("cortex-session-start", "--cwd", DEMO_CWD, home=demo_home, python_flags=("-X", "importtime"))
    assert proc.returncode == 0
    assert proc.stdout.startswith(b"<cortex-memory")  # the success path, not an early exit
    imported = {l.rsplit("|", 1)[1].strip() for l in proc.stderr.decode().splitlines()
                if l.startswith("import time:") and "|" in l}
    assert "cortex.brief.session_start" in imported and "sqlite3" in imported
    assert sorted(m for m in imported if m.split(".")[0] in HEAVY_MODULES) == []


def test_success_path_leaves_no_heavy_module_loaded(demo_home):
    code = ("import sys, io, json; sys.path.insert(0, %r); from cortex.brief import session_start; "
            "buf = io.StringIO(); real = sys.stdout; sys.stdout = buf; "
            "rc = session_start.main(['--cwd', %r]); sys.stdout = real; "
            "print(json.dumps({'rc': rc, 'out': buf.getvalue(), 'mods': sorted(sys.modules)}))" % (str(REPO), DEMO_CWD))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=clean_env(demo_home), timeout=30)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["rc"] == 0 and res["out"].startswith("<cortex-memory")
    assert sorted(m for m in res["mods"] if m.split(".")[0] in HEAVY_MODULES) == []
    cortex_mods = {m for m in res["mods"] if m.startswith("cortex")}
    assert not cortex_mods & {"cortex.store.records", "cortex.store.indexer", "cortex.store.tokencount", "cortex.model.redact", "cortex.core.log",
                              "cortex.core.schemas", "cortex.ingest.extract", "cortex.ingest.run"}
