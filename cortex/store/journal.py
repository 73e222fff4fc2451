"""Intents: what a maintenance change is about to touch, so the next writer can repair a change that died.

A command that changes records outside the normalizer's read loop (forget, import, edit, pin, recall's use
marks, consolidate, lifecycle) writes, before each record file it writes or deletes, that record's id to an
intent file `state/intents/<pid>-<random>.jsonl` (one JSON line per id, appended, so a SIGKILL at any point
leaves every id it touched so far).  Once the index rows of those records are refreshed the file is removed.
If the process dies first, the next writer -- the next normalizer run (even with nothing else to do) or the
next command that takes the run lock -- replays it: the rows of those ids are refreshed from the files (a
deleted file loses its row, with the index scrubbed as after `forget --hard`).  The same writers remove the
staging folders `index/.reindex-*` a killed `cortex reindex` left (they hold copies of record text).

Every function here runs while holding the run lock (core/lock.py).
"""
import contextlib
import glob
import json
import os
import shutil

from cortex.store import records as records_mod


def intents_dir(home) -> str:
    return home.path("state", "intents")


def pending(home) -> bool:
    """Whether a dead writer left something to repair (cheap: two directory listings)."""
    try:
        if any(n.endswith(".jsonl") for n in os.listdir(intents_dir(home))):
            return True
    except FileNotFoundError:
        pass
    try:
        return any(n.startswith(".reindex-") for n in os.listdir(os.path.dirname(home.index_db)))
    except FileNotFoundError:
        return False


class Journal:
    def __init__(self, home):
        self.home, self.path, self.fd, self.finished = home, None, None, False

    def add(self, rec_id: str, scope_id: str = None) -> None:
        if self.fd is None:
            folder = intents_dir(self.home)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            self.path = os.path.join(folder, "%d-%s.jsonl" % (os.getpid(), os.urandom(4).hex()))
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        line = json.dumps({"id": rec_id, "scope": scope_id}) + "\n"
        os.write(self.fd, line.encode("utf-8"))

    def add_all(self, recs) -> None:
        for rec in recs:
            self.add(rec["id"], rec.get("scope_id"))

    def done(self) -> None:
        """The index holds every change so far: the intent is fulfilled."""
        self.finished = True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            if self.finished:
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass


@contextlib.contextmanager
def intent(home, done_on_exit: bool = False):
    """A Journal for the record changes made inside (RecordStore.write notes each id itself; deletions call
    `add` first).  Nested uses share the outer one.  The intent file is removed at the end when `done()`
    was called (or `done_on_exit` and no exception); otherwise it stays for the next writer to replay."""
    root = os.path.abspath(home.records)
    outer = records_mod.JOURNALS.get(root)
    if outer is not None:
        yield outer.__self__
        return
    j = Journal(home)
    records_mod.JOURNALS[root] = j.add
    try:
        yield j
        if done_on_exit:
            j.done()
    finally:
        records_mod.JOURNALS.pop(root, None)
        j.close()


def replay(home, cfg=None, log=None) -> dict:
    """Repair what dead writers left: refresh the index rows of the ids in their intent files and remove
    the files; remove reindex staging folders.  Call while holding the run lock."""
    out = {"intents": 0, "ids": 0, "staging": 0}
    for d in glob.glob(os.path.join(os.path.dirname(home.index_db), ".reindex-*")):
        shutil.rmtree(d, ignore_errors=True)
        out["staging"] += 1
    files = sorted(glob.glob(os.path.join(intents_dir(home), "*.jsonl")))
    if not files:
        return out
    ids, scopes = set(), set()
    for f in files:
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    try:
                        item = json.loads(line)
                    except ValueError:  # the last line of a writer killed mid-write
                        continue
                    if isinstance(item, dict) and isinstance(item.get("id"), str):
                        ids.add(item["id"])
                        if isinstance(item.get("scope"), str):
                            scopes.add(item["scope"])
        except OSError:
            continue
    if ids:
        if cfg is None:
            from cortex.core import config
            cfg = config.load(home, fast=False)
        if os.path.exists(home.index_db):
            from cortex.store.index import connect
            con = connect(home.index_db, readonly=True)
            try:
                q = "SELECT DISTINCT scope_id FROM records WHERE id IN (%s)"
                lst = sorted(ids)
                for i in range(0, len(lst), 500):
                    chunk = lst[i:i + 500]
                    scopes.update(r[0] for r in con.execute(q % ",".join("?" * len(chunk)), chunk))
            finally:
                con.close()
        from cortex.store.indexer import update_index
        update_index(home, cfg, ids, scopes, scrub=True)
    for f in files:
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass
    out.update(intents=len(files), ids=len(ids))
    if log is not None:
        log.info("intents_replayed", **out)
    return out


@contextlib.contextmanager
def writing(home, wait: float = 10.0, cfg=None, done_on_exit: bool = True):
    """The run lock, then the repair of what dead writers left, then an intent for this change."""
    from cortex.core.lock import locked
    with locked(home, wait=wait):
        if pending(home):
            replay(home, cfg)
        with intent(home, done_on_exit=done_on_exit) as j:
            yield j
