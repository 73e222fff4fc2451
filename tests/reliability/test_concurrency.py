"""Concurrency: many hooks at once, two normalizers at once, a lock left by a killed run, and readers
(session start, raw SQLite, the record files) while the normalizer writes."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from cortex.ingest import run as norm
from cortex_testkit import append_turns, transcript_meta

from .helpers import (TRANSCRIPTS, all_event_names, check_records_parse, copy_fixture, drop_event, env_for,
                      hook_payload, make_home, read_log, report, ro_connect, run_measured, script)

SESSIONS = ("cc-1.0.98", "cc-2.0.64", "cc-2.1.4", "codex-0.104-small", "gemini")


def test_hundred_capture_hooks_at_once_every_event_lands(tmp_path):
    home = make_home(tmp_path / "home")
    env = env_for(home)
    payloads = []
    for name in SESSIONS:
        client = TRANSCRIPTS[name][2]
        path = copy_fixture(name, tmp_path / "client")
        base = hook_payload(path, client)
        for k in range(100 // len(SESSIONS)):
            payloads.append((client, dict(base, cortex_test_seq=len(payloads))))
    assert len(payloads) == 100
    t0 = time.monotonic()
    procs = []
    for i, (client, payload) in enumerate(payloads):
        kind = "cortex-pre-compact" if i % 7 == 0 else "cortex-stop"
        procs.append(subprocess.Popen(script(kind, "--client", client), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env))
    for p, (_c, payload) in zip(procs, payloads):  # every hook is started before any gets its input
        p.stdin.write(json.dumps(payload).encode())
        p.stdin.close()
    outs = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in procs]
    wall = time.monotonic() - t0
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [o for o in outs if o != (0, b"", b"")] == []  # exit 0, print nothing
    pending = all_event_names(home)["pending"]
    seqs = []
    for n in pending:
        seqs.append(json.loads(Path(home.inbox_dir("pending"), n).read_text())["payload"]["cortex_test_seq"])
    report("concurrency: 100 hooks at once", hooks=100, sessions=len(SESSIONS), events_in_pending=len(pending),
           distinct_names=len(set(pending)), wall_s=round(wall, 2))
    assert sorted(seqs) == list(range(100))
    assert len(set(pending)) == 100
    assert "capture_failed" not in read_log(home)
    stats = norm.run(home)
    ev = all_event_names(home)
    assert len(ev["done"]) == 100 and not ev["failed"] and not ev["pending"] and not ev["claimed"]
    assert stats["sessions"] == len(SESSIONS)  # the 20 events of a session are read once


def _busy_home(base: Path):
    """A home with enough pending work that a normalizer run lasts a while."""
    home = make_home(base / "home")
    for name in ("cc-2.0.76", "cc-2.1.39", "codex-0.104-compacted", "cc-1.0.108"):
        client = TRANSCRIPTS[name][2]
        drop_event(home, hook_payload(copy_fixture(name, base / "client"), client), client=client)
    return home


def test_two_normalizers_started_together_one_works_the_other_backs_off(tmp_path):
    attempts = []
    for attempt in range(3):
        home = _busy_home(tmp_path / ("a%d" % attempt))
        env = env_for(home)
        procs = [subprocess.Popen(script("cortex-normalize"), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env) for _ in range(2)]
        outs = [(p.wait(timeout=300), p.stdout.read().decode(), p.stderr.read().decode()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        attempts.append(outs)
        assert [rc for rc, _o, _e in outs] == [0, 0], outs
        worked = [o for _rc, o, _e in outs if "records created" in o]
        busy = [o for _rc, o, _e in outs if "another run is in progress" in o]
        ev = all_event_names(home)
        assert len(ev["done"]) == 4 and not ev["pending"] and not ev["claimed"], ev
        if len(worked) == 1 and len(busy) == 1:
            break
        # the second one started after the first had already finished: nothing to race for; try again
        assert len(worked) == 1 and "nothing pending" in "".join(o for _rc, o, _e in outs), outs
    report("concurrency: two normalizers at once", attempts=len(attempts), second_said=busy[0].strip()[:80])
    assert len(worked) == 1 and len(busy) == 1


def test_a_run_lock_held_elsewhere_makes_normalize_exit_0_and_touch_nothing(tmp_path):
    home = _busy_home(tmp_path)
    home.ensure()
    fd = os.open(home.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        rc, out, err, _rss, _s = run_measured(script("cortex-normalize"), env_for(home))
        assert rc == 0
        assert b"another run is in progress" in out
        ev = all_event_names(home)
        assert len(ev["pending"]) == 4 and not ev["claimed"] and not ev["done"]
    finally:
        os.close(fd)


def test_a_lock_left_by_a_sigkilled_run_is_taken_over(tmp_path):
    home = _busy_home(tmp_path)
    env = env_for(home)
    p = subprocess.Popen(script("cortex-normalize"), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    t0 = time.monotonic()
    held = False
    while p.poll() is None and time.monotonic() - t0 < 60:
        if os.path.exists(home.lock) and os.listdir(home.inbox_dir("claimed")):
            fd = os.open(home.lock, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:
                held = True  # the running normalizer holds it
            finally:
                os.close(fd)
            if held:
                break
        time.sleep(0.002)
    assert held, "the normalizer never held its lock while events were claimed"
    pid_in_lock = Path(home.lock).read_text().strip()
    p.send_signal(signal.SIGKILL)
    assert p.wait(timeout=30) == -signal.SIGKILL
    # the kernel released the lock with the process
    fd = os.open(home.lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    ev = all_event_names(home)
    report("concurrency: lock of a SIGKILLed run", killed_pid=pid_in_lock, claimed_at_kill=len(ev["claimed"]),
           done_at_kill=len(ev["done"]))
    rc, out, err, _rss, _s = run_measured(script("cortex-normalize"), env)
    assert rc == 0 and b"another run" not in out, out
    ev = all_event_names(home)
    assert len(ev["done"]) == 4 and not ev["claimed"] and not ev["pending"] and not ev["failed"]


# ----------------------------------------------------------------------------------------- readers

def test_readers_never_fail_and_never_see_a_half_written_record_while_normalize_writes(tmp_path):
    from cortex.brief import session_start
    home = make_home(tmp_path / "home")
    env = env_for(home)
    growing = copy_fixture("cc-1.0.98", tmp_path / "client")
    cwd = transcript_meta(growing, "claude-code").cwd
    drop_event(home, hook_payload(growing))
    rc, out, err, _rss, _s = run_measured(script("cortex-normalize"), env)
    assert rc == 0, err

    stop = threading.Event()
    counts = {"build": 0, "sqlite": 0, "files": 0, "files_seen": 0, "bin": 0}
    errors = []

    def guard(name, fn):
        def loop():
            while not stop.is_set():
                try:
                    fn()
                    counts[name] += 1
                    time.sleep(0.002)  # leave the writer some CPU
                except Exception as e:  # noqa: BLE001
                    errors.append((name, "%s: %s" % (type(e).__name__, e)))
                    time.sleep(0.01)
        return threading.Thread(target=loop, daemon=True)

    def build():
        text, _info = session_start.build(home, cwd)
        if text:
            assert text.startswith("<cortex-memory") and text.rstrip().endswith("</cortex-memory>"), text[-200:]

    def sqlite_read():
        if not os.path.exists(home.index_db):
            return
        con = ro_connect(home.index_db)
        try:
            con.execute("BEGIN")
            ids = {r[0] for r in con.execute("SELECT id FROM records")}
            cands = {r[0] for r in con.execute("SELECT id FROM candidates")}
            posted = {r[0] for r in con.execute("SELECT DISTINCT id FROM postings")}
            sess = {r[0] for r in con.execute("SELECT DISTINCT id FROM sessions")}
            con.execute("SELECT COUNT(*) FROM terms").fetchone()
            con.execute("SELECT * FROM meta").fetchall()
            con.execute("COMMIT")
        finally:
            con.close()
        # one transaction: the normalizer's commit is all or nothing
        assert cands <= ids and posted <= ids and sess <= ids, "index seen half-updated"

    def files():
        n, bad = check_records_parse(home)
        counts["files_seen"] += n
        assert not bad, bad

    def session_start_bin():
        rc, out, err, _rss, _s = run_measured(script("cortex-session-start", "--cwd", cwd), env, timeout=60)
        assert rc == 0 and not err, err
        if out:
            assert out.startswith(b"<cortex-memory") and out.endswith(b"</cortex-memory>\n"), out[-200:]

    threads = [guard("build", build), guard("sqlite", sqlite_read), guard("files", files),
               guard("bin", session_start_bin)]
    for t in threads:
        t.start()
    rounds = 4
    decisions = ("Chose SQLite over Postgres because the tool must run without a server",
                 "Picked structlog over the logging module because JSON lines are easier to grep",
                 "Went with hard links instead of copies because they follow the client's appends",
                 "Settled on flock rather than pid files because the kernel frees it when a run dies")
    extra = ("cc-2.1.4", "codex-0.104-small", "cc-2.0.64", "gemini", "cc-1.0.108", "codex-0.77")
    t0 = time.monotonic()
    try:
        for k in range(rounds):
            append_turns(growing, [("user", "Round %d: keep going with the storage work" % k),
                                   ("assistant", "[MEMORY: decision] %s." % decisions[k])],
                         start_ts="2025-09-03T0%d:00:00.000Z" % (k + 1))
            drop_event(home, hook_payload(growing))
            name = extra[k % len(extra)]
            client = TRANSCRIPTS[name][2]
            drop_event(home, hook_payload(copy_fixture(name, tmp_path / "client"), client, cwd=cwd), client=client)
            rc, out, err, _rss, _s = run_measured(script("cortex-normalize"), env)
            assert rc == 0, err
    finally:
        writer_s = time.monotonic() - t0
        stop.set()
        for t in threads:
            t.join(timeout=60)
    report("concurrency: readers during normalize", normalize_runs=rounds, writer_s=round(writer_s, 1),
           session_start_builds=counts["build"], sqlite_snapshots=counts["sqlite"],
           record_scans=counts["files"], record_files_parsed=counts["files_seen"],
           session_start_processes=counts["bin"], errors=len(errors))
    assert not errors, errors[:5]
    assert min(counts["build"], counts["sqlite"], counts["files"], counts["bin"]) > 0
    assert "session_start_failed" not in read_log(home)
    text, _ = session_start.build(home, cwd)
    for d in decisions:
        assert d in text
