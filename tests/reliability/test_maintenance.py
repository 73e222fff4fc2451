"""Maintenance commands beside the normalizer (issue #18, defect 2): every writer of records or index
takes the one run lock (core/lock.py), so `cortex reindex` beside `cortex-normalize` never leaves record
files without index rows and lifecycle's prune never deletes a record a concurrent command restored."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from cortex.core.home import Home
from cortex.core.lock import RunLock
from cortex_testkit import BIN, clean_env, feed, normalize

from .helpers import copy_fixture, drop_event, env_int, hook_payload, make_home, record_files, report



def _normalized(tmp_path, name="A", fixture="cc-2.0.64"):
    home = Home(str(tmp_path / name))
    feed(home, fixture, dest=tmp_path / "client")
    normalize(home)
    assert record_files(home)
    return home


def _start(home, *args, stdin=None):
    return subprocess.Popen([sys.executable, str(BIN / "cortex"), *args], env=clean_env(home),
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _export(home) -> bytes:
    r = subprocess.run([sys.executable, str(BIN / "cortex"), "export"], env=clean_env(home), capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("command", ["reindex", "consolidate", "lifecycle", "import"])
def test_maintenance_commands_wait_for_the_run_lock(tmp_path, command):
    """Before: reindex, consolidate and lifecycle ran while a normalizer held the lock."""
    home = _normalized(tmp_path)
    data = _export(home) if command == "import" else None
    with RunLock(home.lock):
        p = _start(home, *([command, "-"] if command == "import" else [command]), stdin=data)
        if data is not None:
            p.stdin.write(data)
            p.stdin.close()
            p.stdin = None
        time.sleep(3.0)
        running_while_locked = p.poll() is None
    out, err = p.communicate(timeout=120)
    report("maintenance_waits_for_lock", command=command, waited=running_while_locked, rc=p.returncode)
    assert running_while_locked, "%s finished while another process held the run lock: %r" % (command, err)
    assert p.returncode == 0, err


def _index_ids(home) -> set:
    con = sqlite3.connect(home.index_db)
    try:
        return {r[0] for r in con.execute("SELECT id FROM records")}
    finally:
        con.close()


def _file_ids(home) -> set:
    return {os.path.basename(p)[:-3] for p in record_files(home)}


def test_lifecycle_never_prunes_a_record_restored_since_the_index_was_read(tmp_path):
    """The index says archived and old, the file says active (restored by recall a moment ago): kept."""
    from cortex.core import config
    from cortex.curate.consolidate import lifecycle
    from cortex.store import records as records_mod
    home = _normalized(tmp_path)
    rid = sorted(_file_ids(home))[0]
    store = records_mod.RecordStore(home.records)
    con = sqlite3.connect(home.index_db)
    con.execute("UPDATE records SET status='archived', times=? WHERE id=?", (json.dumps([1.0e9]), rid))
    con.commit()
    con.close()
    cfg = config.load(home, fast=False)
    actions = lifecycle(home, store, cfg)
    assert rid in _file_ids(home), actions
    assert not [a for a in actions if a[0] == rid and a[1] == "prune"]
