"""A writer killed while SQLite's rollback journal of the index was hot (issue #18, found by the crash campaign
with CORTEX_CRASH_RUNS=200: a `cortex import` SIGKILLed while it switched a new index to WAL).

Before: the journal stayed beside `index/cortex.sqlite`, SQLite rolls such a journal back only through a
connection that may write, and the normalizer's first look at the index (the repair of the killed command's
intent) is read-only: every later `cortex-normalize` failed with "attempt to write a readonly database", so
memory stopped growing until a person removed the file.  Now the index is in WAL mode before it is renamed
into place (no journal is ever written beside it), and a reader that finds a journal there lets SQLite roll
it back first.
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from cortex.store import index as index_mod
from .helpers import BIN, clean_env

# a child that changes many rows of the index with a tiny page cache (so SQLite spills the changed pages into
# the database file after syncing the journal), then dies before its commit: the journal is hot
KILLED_WRITER = """
import os, signal, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA cache_size=2")
con.execute("BEGIN IMMEDIATE")
con.execute("UPDATE records SET text = 'half written ' || id")
os.kill(os.getpid(), signal.SIGKILL)
"""


def _hot_journal(db: str):
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=DELETE")  # as an index was between its creation and its switch to WAL
    con.close()
    subprocess.run([sys.executable, "-c", KILLED_WRITER, db])
    assert os.path.getsize(db + "-journal") > 0
    ro = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        ro.execute("SELECT count(*) FROM records").fetchone()
        raise AssertionError("the journal is not hot: the test would prove nothing")
    except sqlite3.OperationalError as e:
        assert "readonly" in str(e)
    finally:
        ro.close()


def _home_with_records(tmp_path, n: int = 300) -> str:
    home = str(tmp_path / "home with space")
    data = tmp_path / "records.jsonl"
    lines = []
    for i in range(n):
        at = "2026-01-%02dT10:00:00Z" % (1 + i % 27)
        lines.append(json.dumps({
            "id": "r%016x" % (0xfeed000000000000 + i), "scope": "L0", "scope_id": "proj-00000001",
            "project": "proj-00000001", "type": "learned", "status": "active", "confidence": 0.9, "salience": 0.5,
            "pinned": False, "priority": 0, "created": at, "updated": at, "seen": [at], "used": [], "tokens": 30,
            "branch": None, "files": [], "provenance": [{"client": "cli", "session": "s%d" % i, "transcript": None,
                                                        "ref": None, "layer": "manual", "at": at}],
            "text": "the retry budget of uploader %d is %d attempts because of flaky proxies %s" % (i, i % 7, "x" * 200)}))
    data.write_text("\n".join(lines) + "\n")
    r = subprocess.run([sys.executable, str(BIN / "cortex"), "import", str(data)], env=clean_env(home),
                       capture_output=True, cwd="/")
    assert r.returncode == 0, r.stderr
    return home


def test_a_new_index_is_renamed_into_place_already_in_wal_mode(tmp_path):
    db = str(tmp_path / "index" / "cortex.sqlite")
    os.makedirs(os.path.dirname(db))
    index_mod.create(db)
    with open(db, "rb") as f:
        header = f.read(100)
    assert (header[18], header[19]) == (2, 2)  # WAL: opening it never rewrites its first page
    assert sorted(os.listdir(os.path.dirname(db))) == ["cortex.sqlite"]


def test_a_reader_gets_the_committed_rows_past_a_hot_journal(tmp_path):
    home = _home_with_records(tmp_path)
    db = os.path.join(home, "index", "cortex.sqlite")
    _hot_journal(db)
    con = index_mod.connect(db, readonly=True)
    try:
        n, half = con.execute("SELECT count(*), sum(text LIKE 'half written%') FROM records").fetchone()
    finally:
        con.close()
    assert (n, half) == (300, 0)  # rolled back: the killed writer's changes are gone
    assert not os.path.exists(db + "-journal")


def test_normalize_repairs_a_killed_command_that_left_a_hot_journal(tmp_path):
    home = _home_with_records(tmp_path)
    db = os.path.join(home, "index", "cortex.sqlite")
    _hot_journal(db)
    # the killed command's intent: the next normalizer run re-reads these records (read-only look first)
    intents = os.path.join(home, "state", "intents")
    os.makedirs(intents, exist_ok=True)
    with open(os.path.join(intents, "4242-deadbeef.jsonl"), "w") as f:
        f.write(json.dumps({"id": "r%016x" % 0xfeed000000000000, "scope": "proj-00000001"}) + "\n")
    for _ in range(2):  # and the run after it
        n = subprocess.run([sys.executable, str(BIN / "cortex-normalize")], env=clean_env(home),
                           capture_output=True, timeout=300)
        assert n.returncode == 0, n.stderr
    r = subprocess.run([sys.executable, str(BIN / "cortex"), "recall", "--json", "--scope", "all", "retry budget uploader 5"],
                       env=clean_env(home), capture_output=True, cwd="/")
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["hits"]
    assert hits and not any(h["text"].startswith("half written") for h in hits)
    assert os.listdir(intents) == []
