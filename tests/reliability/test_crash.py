"""Crash consistency: SIGKILL the normalizer and the capture hooks at random moments.

The normalizer (bin/cortex-normalize, a real subprocess) is killed at seeded random delays spread over a
clean run's duration, then rerun to completion; the result is compared with one clean run in another home
over the same event files:

  * record files: identical bytes; every record file parses at the moment of the kill (no half-written file);
  * every event in done/ or failed/, none lost, none twice: done/ names == the good events' names;
  * the index tables records/postings/terms/sessions (not meta times or candidates): identical rows;
  * episode files (episodes/<project>/<session>.md): identical bytes, and the episode passages in the index
    (their rows and FTS5 text) identical.  Runs in small windows are compared with a clean run in the same
    windows (an episode records where its last window started).

How many kills: CORTEX_CRASH_RUNS (default 20; the documented full run is 200):

    CORTEX_CRASH_RUNS=200 python -m pytest tests/reliability -k crash -s
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cortex.ingest import run as norm
from .helpers import (INDEX_TABLES, all_event_names, check_records_parse, copy_events, copy_fixture, drop_event,
                      env_for, env_int, hook_payload, index_tables, make_home, record_files, report, run_measured,
                      script, stray_temp_files, TRANSCRIPTS)

SEED = 20261122
CRASH_RUNS = env_int("CORTEX_CRASH_RUNS", 20)
# several clients, small and large transcripts (2.6 MB), subagent files, a Gemini JSON document
CRASH_FIXTURES = ("cc-1.0.108", "cc-2.0.64", "cc-2.0.76", "cc-2.1.4", "codex-0.125", "codex-0.104-small", "gemini")
EVENTS_PER_SESSION = 4
SMALL_WINDOW = 65536


def _template(base: Path):
    """A home whose pending/ holds the batch every crash run starts from: several Stop events per session
    (they are coalesced) plus a few bad events that must end in failed/."""
    tpl = make_home(base / "template")
    client_dir = base / "client"
    good, bad = [], []
    for name in CRASH_FIXTURES:
        client = TRANSCRIPTS[name][2]
        path = copy_fixture(name, client_dir)
        payload = hook_payload(path, client)
        for i in range(EVENTS_PER_SESSION):
            kind = "pre_compact" if i == 1 else "stop"
            good.append(os.path.basename(drop_event(tpl, payload, kind=kind, client=client)))
    for raw in (b"", b"not json at all", b"[1, 2, 3]",
                json.dumps({"session_id": "gone", "transcript_path": str(base / "nowhere" / "gone.jsonl"),
                            "cwd": str(base)}).encode(),
                json.dumps({"session_id": 7, "transcript_path": ["x"], "cwd": {}}).encode()):
        bad.append(os.path.basename(drop_event(tpl, raw)))
    return tpl, sorted(good), sorted(bad)


def episode_files(home) -> dict:
    out = {}
    root = Path(home.episodes)
    if root.exists():
        for p in sorted(root.rglob("*.md")):
            if p.is_file() and not p.name.startswith("."):
                out[str(p.relative_to(root))] = p.read_bytes()
    return out


def passage_rows(home) -> list:
    if not os.path.exists(home.index_db):
        return []
    import sqlite3
    con = sqlite3.connect("file:%s?mode=ro" % home.index_db, uri=True)
    try:  # their terms are in the search engine: index_tables(home)["search"]
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name='passages'").fetchone():
            return []
        return sorted((r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8].replace(home.root, "<HOME>"))
                      for r in con.execute("SELECT id, session, anchor, project, client, at, first_turn, last_turn, "
                                           "path FROM passages"))
    finally:
        con.close()


def _outcome(home):
    ev = all_event_names(home)
    return {
        "episodes": episode_files(home),
        "passages": passage_rows(home),
        "records": record_files(home),
        "cursors": json.loads(Path(home.cursors).read_text()) if os.path.exists(home.cursors) else None,
        "events": ev,
        "index": index_tables(home),
    }


def _reached(h, mode) -> bool:
    if mode == "first record":
        return any(files for _d, _s, files in os.walk(h.records) if any(not f.startswith(".") for f in files))
    if mode == "first index":
        return os.path.exists(h.index_db + "-wal") and os.path.getsize(h.index_db + "-wal") > 0
    if mode == "first done":
        return bool(os.path.isdir(h.inbox_dir("done")) and os.listdir(h.inbox_dir("done")))
    raise AssertionError(mode)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    base = tmp_path_factory.mktemp("crash")
    tpl, good, bad = _template(base)

    # clean runs, timed (the kill delays are spread over their duration); two of them must agree
    ref = make_home(base / "ref")
    copy_events(tpl, ref)
    rc, out, err, rss, first_s = run_measured(script("cortex-normalize"), env_for(ref))
    assert rc == 0, err.decode(errors="replace")
    reference = _outcome(ref)
    assert reference["records"], "the clean run wrote no records"
    assert sorted(reference["events"]["done"]) == good
    assert sorted(reference["events"]["failed"]) == bad
    ref2 = make_home(base / "ref2")
    copy_events(tpl, ref2)
    rc, out, err, rss, second_s = run_measured(script("cortex-normalize"), env_for(ref2))
    assert rc == 0
    again = _outcome(ref2)
    assert again["records"] == reference["records"] and again["index"] == reference["index"], \
        "two clean runs over the same events disagree: nothing to compare crashes with"
    clean_s = min(first_s, second_s)
    assert reference["episodes"] and reference["passages"], "the clean run wrote no episode"
    assert again["episodes"] == reference["episodes"] and again["passages"] == reference["passages"]
    # the clean run in small windows, which the kills in small windows are compared with for episodes
    ref_small = make_home(base / "ref_small")
    os.makedirs(ref_small.root, exist_ok=True)
    Path(ref_small.config_yaml).write_text("normalize:\n  window_bytes: %d\n" % SMALL_WINDOW)
    copy_events(tpl, ref_small)
    rc, _o, err, _rss, _s = run_measured(script("cortex-normalize"), env_for(ref_small))
    assert rc == 0, err.decode(errors="replace")
    reference_small = _outcome(ref_small)

    rng = random.Random(SEED)
    plan = [("random", rng.uniform(0.0, clean_s)) for _ in range(CRASH_RUNS)]
    # half of the random kills (seeded apart from the delays) run with 64 KiB windows, so they also land
    # between the windows of one transcript (the 2.6 MB one is read in 40 of them); a run in windows
    # writes what one read writes, so they are compared with the same clean run
    small = random.Random(SEED + 1)
    windowed = {i for i in range(len(plan)) if small.random() < 0.5}
    # plus kills aimed at the moments that matter: right after the first record file, the first index
    # commit, the first event moved to done/
    plan += [("first record", None), ("first index", None), ("first done", None)]
    runs = []
    for i, (mode, delay) in enumerate(plan):
        h = make_home(base / ("k%03d" % i))
        if i in windowed:
            os.makedirs(h.root, exist_ok=True)
            Path(h.config_yaml).write_text("normalize:\n  window_bytes: %d\n" % SMALL_WINDOW)
        copy_events(tpl, h)
        p = subprocess.Popen(script("cortex-normalize", "--quiet"), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_for(h))
        t0 = time.monotonic()
        if delay is not None:
            time.sleep(delay)
        else:
            while p.poll() is None and not _reached(h, mode) and time.monotonic() - t0 < 60:
                time.sleep(0.0005)
            delay = time.monotonic() - t0
        p.send_signal(signal.SIGKILL)
        rc = p.wait(timeout=60)
        at_kill = all_event_names(h)
        n_files, half_written = check_records_parse(h)
        integrity = None
        if os.path.exists(h.index_db):
            import sqlite3
            con = sqlite3.connect(h.index_db, timeout=5.0)
            try:
                integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
            finally:
                con.close()
        strays = stray_temp_files(h)
        stats = norm.run(h)  # rerun to completion
        got = _outcome(h)
        want = reference_small if i in windowed else reference
        runs.append({
            "i": i, "mode": mode, "delay": round(delay, 3), "window": SMALL_WINDOW if i in windowed else None,
            "killed": rc == -signal.SIGKILL, "rc": rc,
            "phase": ("before claim" if not (at_kill["claimed"] or at_kill["done"] or at_kill["failed"])
                      else "after the run" if rc == 0 else "mid-run"),
            "done_at_kill": len(at_kill["done"]), "records_at_kill": n_files, "half_written": half_written,
            "integrity": integrity, "stray_tmp": len(strays), "rerun_busy": "busy" in stats,
            "records_equal": got["records"] == reference["records"],
            "records_diff": sorted(set(got["records"]) ^ set(reference["records"]) |
                                   {k for k in got["records"] if got["records"].get(k) != reference["records"].get(k)}),
            "cursors_equal": got["cursors"] == reference["cursors"],
            "episodes_diff": sorted(k for k in set(got["episodes"]) | set(want["episodes"])
                                    if got["episodes"].get(k) != want["episodes"].get(k)),
            "passages_equal": got["passages"] == want["passages"],
            "events": got["events"],
            "index_equal": {t: got["index"][t] == reference["index"][t] for t in INDEX_TABLES},
            "home": h,
        })
    return {"runs": runs, "good": good, "bad": bad, "clean_s": clean_s, "reference": reference, "ref": ref,
            "tpl": tpl, "base": base}


def test_crash_campaign_kills_land_across_the_run(campaign):
    runs = [r for r in campaign["runs"] if r["mode"] == "random"]
    aimed = [r for r in campaign["runs"] if r["mode"] != "random"]
    phases = {p: sum(1 for r in runs if r["phase"] == p) for p in ("before claim", "mid-run", "after the run")}
    report("crash: normalizer SIGKILL campaign", random_kills=len(runs), aimed_kills=len(aimed), seed=SEED,
           clean_run_s=round(campaign["clean_s"], 2), events=len(campaign["good"]) + len(campaign["bad"]),
           sessions=len(CRASH_FIXTURES), killed_while_running=sum(r["killed"] for r in runs), **phases,
           small_window_kills=sum(1 for r in runs if r["window"]),
           small_window_mid_run=sum(1 for r in runs if r["window"] and r["phase"] == "mid-run"),
           aimed_delays_s=[r["delay"] for r in aimed], records=len(campaign["reference"]["records"]),
           stray_tmp_files_left=sum(r["stray_tmp"] for r in campaign["runs"]))
    assert all(r["killed"] for r in aimed), "an aimed kill came after the run had ended"
    if len(runs) >= 10:
        assert phases["mid-run"] >= len(runs) // 4, "too few kills landed while the run was working: %s" % phases


def test_crash_no_half_written_record_at_any_kill(campaign):
    bad = [(r["i"], r["half_written"]) for r in campaign["runs"] if r["half_written"]]
    assert not bad
    broken_db = [(r["i"], r["integrity"]) for r in campaign["runs"] if r["integrity"] not in (None, "ok")]
    assert not broken_db


def test_crash_rerun_takes_the_lock_of_the_killed_run(campaign):
    assert not [r["i"] for r in campaign["runs"] if r["rerun_busy"]]


def test_crash_every_event_ends_in_done_or_failed_exactly_once(campaign):
    good, bad = campaign["good"], campaign["bad"]
    problems = []
    for r in campaign["runs"]:
        ev = r["events"]
        if sorted(ev["done"]) != good or sorted(ev["failed"]) != bad or ev["pending"] or ev["claimed"]:
            problems.append((r["i"], r["delay"], {k: len(v) for k, v in ev.items()}))
        everywhere = ev["pending"] + ev["claimed"] + ev["done"] + ev["failed"]
        if sorted(everywhere) != sorted(good + bad):
            problems.append((r["i"], "lost or duplicated", len(everywhere)))
    assert not problems


def test_crash_rerun_gives_the_clean_run_s_record_files_byte_for_byte(campaign):
    diffs = [(r["i"], r["delay"], r["phase"], r["records_diff"][:4]) for r in campaign["runs"] if not r["records_equal"]]
    cursors = [r["i"] for r in campaign["runs"] if not r["cursors_equal"]]
    report("crash: record files after kill + rerun", runs=len(campaign["runs"]),
           identical=len(campaign["runs"]) - len(diffs), cursors_identical=len(campaign["runs"]) - len(cursors))
    assert not diffs
    assert not cursors


def test_crash_rerun_gives_the_clean_run_s_episodes_byte_for_byte(campaign):
    diffs = [(r["i"], r["delay"], r["phase"], r["window"], r["episodes_diff"][:3]) for r in campaign["runs"]
             if r["episodes_diff"]]
    passages = [r["i"] for r in campaign["runs"] if not r["passages_equal"]]
    report("crash: episode files and passages after kill + rerun", runs=len(campaign["runs"]),
           episodes_identical=len(campaign["runs"]) - len(diffs),
           passages_identical=len(campaign["runs"]) - len(passages))
    assert not diffs
    assert not passages


def _index_mismatches(campaign):
    return [(r["i"], r["delay"], r["phase"], [t for t, ok in r["index_equal"].items() if not ok])
            for r in campaign["runs"] if not all(r["index_equal"].values())]


def test_crash_rerun_gives_the_clean_run_s_index(campaign):
    bad = _index_mismatches(campaign)
    report("crash: index after kill + rerun", runs=len(campaign["runs"]), identical=len(campaign["runs"]) - len(bad),
           differing_runs=[b[0] for b in bad][:20])
    assert not bad


def test_crash_reindex_repairs_any_index_difference(campaign):
    """The documented way back: `cortex reindex` rebuilds the index from the record files alone."""
    from cortex.core import config
    from cortex.store.indexer import reindex
    ref = campaign["ref"]
    reindex(ref, config.load(ref, fast=False))
    want = index_tables(ref)
    checked = 0
    for r in campaign["runs"]:
        if all(r["index_equal"].values()):
            continue
        h = r["home"]
        reindex(h, config.load(h, fast=False))
        assert index_tables(h) == want, "run %d" % r["i"]
        checked += 1
    report("crash: reindex after kill + rerun", repaired_runs=checked)


# ----------------------------------------------------------------------------------------- capture hooks

def test_crash_killed_capture_hook_never_leaves_a_partial_event_in_pending(tmp_path):
    """A hook killed at any moment leaves either nothing or one complete event in pending/."""
    home = make_home(tmp_path / "home")
    big = "x" * (3 * 1024 * 1024)  # 3 MB: the write takes long enough to be interrupted
    runs = max(CRASH_RUNS, 10)
    rng = random.Random(SEED + 1)
    env = env_for(home)
    # how long does one hook take?
    marker = {"session_id": "timing", "transcript_path": None, "cwd": str(tmp_path), "hook_event_name": "Stop",
              "last_assistant_message": big}
    rc, _o, _e, _rss, hook_s = run_measured(script("cortex-stop", "--client", "claude-code"), env,
                                            json.dumps(marker).encode())
    assert rc == 0
    killed = 0
    for i in range(runs):
        payload = dict(marker, session_id="kill-%d" % i)
        p = subprocess.Popen(script("cortex-stop", "--client", "claude-code"), stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        data = json.dumps(payload).encode()
        delay = rng.uniform(0.0, hook_s * 1.1)
        try:
            p.stdin.write(data)
            p.stdin.close()
        except BrokenPipeError:
            pass
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        killed += p.wait(timeout=30) == -signal.SIGKILL
    pend = all_event_names(home)
    complete = 0
    for name in pend["pending"]:
        with open(os.path.join(home.inbox_dir("pending"), name), "rb") as f:
            ev = json.loads(f.read())  # raises on a partial file
        assert ev["payload"]["last_assistant_message"] == big
        complete += 1
    report("crash: capture hook SIGKILL", hooks_killed=runs, killed_while_running=killed, hook_s=round(hook_s, 3),
           complete_events_in_pending=complete, partial_in_pending=0, leftovers_in_tmp=len(pend["tmp"]))
    # the normalizer takes every complete event (none of them can be half-written)
    stats = norm.run(home)
    assert stats.get("events", 0) == complete


def test_crash_leftovers_of_killed_writers_are_cleaned_up(tmp_path):
    home = make_home(tmp_path / "home").ensure()
    old = time.time() - 2 * 86400
    left = [os.path.join(home.inbox_dir("tmp"), "1700000000.P1Q1Rdead.host.json"),
            os.path.join(home.records, "L0", "demo-12345678", ".rdeadbeefdeadbeef.md.4242.abcd.tmp"),
            os.path.join(home.path("state"), ".cursors.json.4242.abcd.tmp")]
    for p in left:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write('{"partial": ')
        os.utime(p, (old, old))
    # a writer working right now (a hook, `cortex remember`): its files are not leftovers
    live = [os.path.join(home.inbox_dir("tmp"), "%d.P2Q1Rlive.host.json" % time.time()),
            os.path.join(home.records, "L0", "demo-12345678", ".rfeedfacefeedface.md.4343.abcd.tmp")]
    for p in live:
        with open(p, "w") as f:
            f.write('{"partial": ')
    drop_event(home, hook_payload(copy_fixture("cc-1.0.98", tmp_path / "client")))
    norm.run(home)
    assert [p for p in left if os.path.exists(p)] == []
    assert [p for p in live if os.path.exists(p)] == live
    # after a run that was killed, every temp file of the records is its leftover, however new
    with open(live[1], "w") as f:
        f.write("x")
    atomic_marker = os.path.join(home.path("state"), "running")
    with open(atomic_marker, "w") as f:
        f.write("4343")
    drop_event(home, hook_payload(copy_fixture("cc-1.0.98", tmp_path / "client2")))
    norm.run(home)
    assert not os.path.exists(live[1]) and os.path.exists(live[0])


def test_a_kill_between_the_episode_write_and_the_cursor_save_reruns_to_the_same_bytes(tmp_path, monkeypatch):
    """Deterministic companion of the random campaign: with 64 KiB windows, the normalizer is stopped just
    before each cursor save of a long real session (the episode of that window written, its cursor not),
    then run again.  The rerun's windows need not fall where the stopped run's did (found by the campaign:
    a rerun window with no turn left the episode unrolled and the next window was taken as already held,
    dropping what it said); the episode must come out byte for byte as one clean run's."""
    from cortex.ingest import run as runmod
    transcript = copy_fixture("cc-2.0.76", tmp_path / "client")

    def episodes_after(name, stop_at=None):
        home = make_home(tmp_path / name)
        os.makedirs(home.root, exist_ok=True)
        Path(home.config_yaml).write_text("normalize:\n  window_bytes: %d\n" % SMALL_WINDOW)
        drop_event(home, hook_payload(transcript))
        if stop_at:
            real, calls = runmod.Run.save_cursors, [0]

            def stop(self, *a, **k):
                calls[0] += 1
                if calls[0] == stop_at:
                    raise KeyboardInterrupt("killed before the cursor save")
                return real(self, *a, **k)
            monkeypatch.setattr(runmod.Run, "save_cursors", stop)
            with pytest.raises(KeyboardInterrupt):
                norm.run(home)
            monkeypatch.setattr(runmod.Run, "save_cursors", real)
        norm.run(home)
        return {p.name: p.read_bytes() for p in Path(home.episodes).rglob("*.md")}

    clean = episodes_after("clean")
    assert clean
    differing = [k for k in (2, 3, 5, 9, 14, 20, 27) if episodes_after("k%d" % k, k) != clean]
    assert differing == []
