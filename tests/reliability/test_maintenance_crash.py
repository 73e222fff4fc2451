"""SIGKILL during maintenance (issue #18, defect 3): the next normalizer run repairs the index.

Each writer below (`cortex import`, `forget --hard`, `reindex`, `consolidate`, `lifecycle`) runs as a real
subprocess on a home of a few hundred records and is SIGKILLed after a seeded random delay within a clean
run's duration; then `cortex-normalize` runs with nothing in the inbox.  After it: every record file has its
index row with the file's text and status, no row is left for a deleted file, no `index/.reindex-*` staging
folder and no intent file remain, and the index passes `integrity_check`.

Before: a killed `import` left written records unindexed; a killed `forget --hard` left deleted records in
the index (still in the block and recall); a killed `reindex` left staging copies of record text for ever.

Kills per writer: CORTEX_CRASH_RUNS / 5 (at least 3; default 4).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from cortex.core.home import Home
from cortex_testkit import BIN, clean_env

from .helpers import env_int, report

RUNS = max(3, env_int("CORTEX_CRASH_RUNS", 20) // 5)
N = 400
SEED = 20261122


def _line(i: int, dup: bool = False) -> str:
    at = "2026-01-%02dT10:00:00.000Z" % (1 + i % 27)
    rid = "r%016x" % (0xabc0000000000000 + i)
    words = "zebra%d quokka%d" % (i // 2 if dup else i, (i // 2) if dup else i)
    rec = {"id": rid, "scope": "L0", "scope_id": "proj-00000001", "project": "proj-00000001", "type": "learned",
           "status": "active", "confidence": 0.9, "salience": 0.5, "pinned": False, "priority": 0, "created": at,
           "updated": at, "seen": [at], "used": [], "tokens": 30, "branch": None, "files": [],
           "provenance": [{"client": "cli", "session": "s%d" % i, "transcript": None, "ref": None, "layer": "manual",
                           "at": at}],
           "text": "shared marmalade fact number %s about the build of component %s" % (words, words)}
    return json.dumps(rec)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    base = tmp_path_factory.mktemp("maint")
    data = base / "records.jsonl"
    data.write_text("\n".join(_line(i, dup=i % 4 < 2) for i in range(N)) + "\n")
    empty = Home(str(base / "empty")).ensure()
    full = Home(str(base / "full"))
    r = _cli(full, "import", str(data))
    assert r.returncode == 0, r.stderr
    return base, data, empty, full


def _cli(home, *args, timeout=300):
    return subprocess.run([sys.executable, str(BIN / "cortex"), *args], env=clean_env(home), capture_output=True,
                          timeout=timeout, cwd="/")


WRITERS = {
    "import": ("empty", lambda data: ["import", str(data)]),
    "forget": ("full", lambda data: ["forget", "--hard", "--yes", "--scope", "all", "marmalade"]),
    "reindex": ("full", lambda data: ["reindex"]),
    "consolidate": ("full", lambda data: ["consolidate"]),
}


def _consistency(home) -> list:
    """What is wrong between the record files and the index (empty when consistent)."""
    from cortex.store import records
    problems = []
    files = {}
    for p in records.iter_paths(home.records):
        rec = records.read(p)
        files[rec["id"]] = rec
    rows = {}
    if os.path.exists(home.index_db):
        con = sqlite3.connect(home.index_db)
        try:
            if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                problems.append("integrity_check failed")
            rows = {r[0]: (r[1], r[2]) for r in con.execute("SELECT id, text, status FROM records")}
            posted = {r[0] for r in con.execute("SELECT DISTINCT id FROM postings")}
        finally:
            con.close()
        if posted - set(files):
            problems.append("%d deleted records still have postings" % len(posted - set(files)))
    missing, stale, wrong = set(files) - set(rows), set(rows) - set(files), 0
    for rid in set(files) & set(rows):
        if rows[rid] != (files[rid]["text"], files[rid].get("status", "active")):
            wrong += 1
    if missing:
        problems.append("%d record files without an index row" % len(missing))
    if stale:
        problems.append("%d index rows without a record file" % len(stale))
    if wrong:
        problems.append("%d index rows that differ from their files" % wrong)
    staging = [n for n in os.listdir(os.path.dirname(home.index_db)) if n.startswith(".reindex-")] \
        if os.path.isdir(os.path.dirname(home.index_db)) else []
    if staging:
        problems.append("reindex staging folders left: %s" % staging)
    intents = home.path("state", "intents")
    if os.path.isdir(intents) and os.listdir(intents):
        problems.append("intent files left: %s" % os.listdir(intents))
    return problems


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_killed_maintenance_command_is_repaired_by_the_next_normalize(template, tmp_path, writer):
    base, data, empty, full = template
    src_name, argv = WRITERS[writer]
    src = empty if src_name == "empty" else full
    # a clean run's duration, to spread the kills over it
    clean = Home(str(tmp_path / "clean"))
    shutil.copytree(src.root, clean.root, symlinks=True)
    t0 = time.monotonic()
    r = _cli(clean, *argv(data))
    duration = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert not _consistency(clean)
    rng = random.Random("%s-%s" % (SEED, writer))
    killed, bad = 0, []
    for i in range(RUNS):
        home = Home(str(tmp_path / ("k%d" % i)))
        shutil.copytree(src.root, home.root, symlinks=True)
        p = subprocess.Popen([sys.executable, str(BIN / "cortex"), *argv(data)], env=clean_env(home),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            killed += 1
        p.wait()
        n = subprocess.run([sys.executable, str(BIN / "cortex-normalize")], env=clean_env(home),
                           capture_output=True, timeout=300)
        assert n.returncode == 0, n.stderr
        problems = _consistency(home)
        if problems:
            bad.append((i, problems))
    report("maintenance_kill", writer=writer, runs=RUNS, killed=killed, clean_s=round(duration, 2),
           inconsistent=len(bad))
    assert not bad, bad
