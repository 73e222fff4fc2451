"""The normalizer: pending events -> transcript entries -> records -> index.

One run at a time (an OS file lock, released by the kernel if the run dies).  Each
session's transcript is read only from where the last run stopped (a cursor per
transcript), all the stop events of one session are coalesced into one read, and
every event ends in done/ or failed/.  The order of writes makes a crash harmless:
records first (idempotent upserts), then the cursor, then the events' move to
done/; a rerun after a crash at any point redoes at most the last step's work and
writes the same records.
"""
import json
import os
import time

from cortex.core import config as config_mod
from cortex.inbox import maildir as inbox
from cortex.core.fsutil import atomic_write_text, folder_sync_batch
from cortex.core.home import Home
from cortex.core.lock import Busy, RunLock, holding
from cortex.inbox.cursors import Cursors, cursors_text  # noqa: F401  (cursors_text: Run.save_cursors)

TRANSCRIPT_SUFFIXES = (".jsonl", ".json")


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load_json(path, default):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def nothing_to_do(home: Home) -> bool:
    """Cheap check before any heavy import: no pending or orphaned claimed events, no change of a killed
    command to repair (store/journal.py: intent files, reindex staging folders)."""
    try:
        if any(n.endswith(".jsonl") for n in os.listdir(home.path("state", "intents"))):
            return False
    except FileNotFoundError:
        pass
    try:
        if any(n.startswith(".reindex-") for n in os.listdir(home.path("index"))):
            return False
    except FileNotFoundError:
        pass
    for state in ("pending", "claimed"):
        try:
            if any(not n.startswith(".") for n in os.listdir(home.inbox_dir(state))):
                return False
        except FileNotFoundError:
            pass
    if os.path.exists(home.path("state", "running")):  # the last run stopped before its end (full disk, kill)
        return False
    if os.path.exists(home.index_db) and not search_ready(home):
        return False  # the search engine is to be built (an upgrade, a rebuild that was killed)
    return not index_lost(home, quick=True)


def search_ready(home: Home) -> bool:
    """Whether both search engine folders hold a complete build (two small files read; no import)."""
    from cortex.store.search import KINDS, usable
    return all(usable(home.index_db, kind) for kind in KINDS)


def _has_record_files(home: Home) -> bool:
    for scope in ("L0", "L1"):
        try:
            for scope_id in os.listdir(os.path.join(home.records, scope)):
                d = os.path.join(home.records, scope, scope_id)
                if os.path.isdir(d) and any(n.endswith(".md") and not n.startswith(".") for n in os.listdir(d)):
                    return True
        except FileNotFoundError:
            continue
    return False


def index_lost(home: Home, quick: bool = False) -> bool:
    """Records on disk and an index that knows none of them: no index file, a file without tables (a full
    disk while it was created), or no rows (issue #18, defect 9).  `quick` (the idle check) looks into
    the database only when its file is too small to hold the schema."""
    db = home.index_db
    try:
        size = os.path.getsize(db)
    except FileNotFoundError:
        return _has_record_files(home)
    except OSError:
        return False
    if quick and size >= 65536:
        return False
    import sqlite3
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db.replace("?", "%3f"), uri=True, timeout=2.0)
        try:
            if not con.execute("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='records'").fetchone()[0]:
                return _has_record_files(home)
            if con.execute("SELECT 1 FROM records LIMIT 1").fetchone():
                return False
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return _has_record_files(home)


LOW_SPACE = 16 << 20  # bytes free under which any failure is taken for the disk's (see out_of_space)


def out_of_space(e: BaseException, home: Home = None) -> bool:
    """A write failed because the disk is full or read-only (the run must stop, not quarantine).  With
    `home`, any failure while its disk has less than LOW_SPACE free counts too: a full disk surfaces in
    more shapes than these errors (SQLite cannot open its WAL, a library wraps the OSError), and an event
    kept for the next run costs nothing, where one quarantined for the disk is lost until `inbox retry`."""
    import errno
    import sqlite3
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1), errno.EFBIG, errno.EROFS):
        return True
    if isinstance(e, sqlite3.OperationalError) and any(
            w in str(e).lower() for w in ("disk i/o error", "database or disk is full", "readonly database",
                                          "unable to open database file")):
        return True
    # the search engine (tantivy) wraps the OSError: "An IO error occurred: 'No space left on device (os error 28)'"
    if any(w in str(e).lower() for w in ("no space left on device", "disk quota exceeded", "read-only file system")):
        return True
    return home is not None and low_space(home.root)


def low_space(path: str, floor: int = LOW_SPACE) -> bool:
    try:
        st = os.statvfs(path)
    except (OSError, AttributeError):
        return False
    return st.f_bavail * st.f_frsize < floor


def index_corrupt(e: BaseException) -> bool:
    """SQLite found the index file damaged ("database disk image is malformed", "file is not a database")."""
    import sqlite3
    return isinstance(e, sqlite3.DatabaseError) and any(
        w in str(e).lower() for w in ("malformed", "file is not a database", "database corrupt"))


FINGERPRINT_BYTES = 4096


def fingerprint(path: str, offset: int):
    """What a byte cursor remembers of the file it points into: a hash of the first bytes and one of the
    bytes just before the cursor (at most 4 KiB each).  Appends change neither; a file replaced by another
    one (longer or not) changes them, and is then read again from the start."""
    import hashlib
    if offset <= 0:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(min(offset, FINGERPRINT_BYTES))
            start = max(offset - FINGERPRINT_BYTES, 0)
            f.seek(start)
            tail = f.read(offset - start)
    except OSError:
        return None
    if len(tail) != offset - start:
        return "short"
    return "%s:%s" % (hashlib.sha1(head).hexdigest()[:16], hashlib.sha1(tail).hexdigest()[:16])


def replaced(path: str, cur: dict, size: int) -> bool:
    """Whether the byte cursor `cur` belongs to another file than the one now at `path`: the file is shorter
    than the cursor, or (for a cursor that has a fingerprint) the bytes it had read are not the same."""
    offset = int(cur.get("offset", 0) or 0)
    if offset > size:
        return True
    fp = cur.get("fp")
    return bool(fp) and offset > 0 and fingerprint(path, offset) != fp


def opens_object(path) -> bool:
    """The file starts like a JSON object (a Gemini chat file cut before its header was whole)."""
    try:
        with open(path, "rb") as f:
            return f.read(64).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
    except OSError:
        return False


def safe_transcript_path(path):
    return (isinstance(path, str) and path and "\x00" not in path and os.path.isabs(path)
            and path.lower().endswith(TRANSCRIPT_SUFFIXES))


class Run:
    def __init__(self, home: Home, cfg: dict, log, progress=None, now: float = None):
        self.home, self.cfg, self.log = home, cfg, log
        self.progress = progress
        self.now = now
        from cortex.curate.consolidate import Consolidator
        from cortex.store.records import RecordStore
        self.store = RecordStore(home.records)
        self.cons = Consolidator(home, self.store, cfg)
        self.all_changed = set()
        self.cursors = Cursors(load_json(home.cursors, {}))
        self.cursor_lines = {}  # cursors_text's memory of the lines it encoded
        self.stats = {"events": 0, "done": 0, "failed": 0, "sessions": 0, "created": 0, "merged": 0,
                      "unchanged": 0, "rejected": 0, "bytes": 0}
        self.touched_scopes = set()
        self.rebuilt = False  # the index was found corrupt and rebuilt in this run
        self.writer = None  # the index writer of the windows' rows (index_writer)

    # -- events -------------------------------------------------------------------------
    def sweep_leftovers(self, stale_after: float = 3600.0):
        """Temp files of a writer that was killed mid-write (atomic writes never leave a half file in
        place, but their temp files stay).  All of them after a run that did not finish; otherwise
        those older than an hour (`cortex remember`, `edit` and recall write records without the run
        lock, but their temp files live for milliseconds)."""
        marker = self.home.path("state", "running")
        self.recover_tmp()
        cutoff = time.time() if os.path.exists(marker) else time.time() - stale_after
        for folder in (self.home.records, self.home.episodes, self.home.path("state"), self.home.path("index")):
            for root, _, files in os.walk(folder):
                for name in files:
                    if not (name.startswith(".") and name.endswith(".tmp") or name.endswith(".part")):
                        continue
                    p = os.path.join(root, name)
                    try:
                        if os.lstat(p).st_mtime <= cutoff:
                            os.unlink(p)
                            self.log.info("temp_leftover_removed", file=os.path.relpath(p, self.home.root))
                    except OSError:
                        pass
        atomic_write_text(marker, str(os.getpid()))

    def recover_tmp(self, older_than: float = 600.0):
        """inbox/tmp/ files a hook left when it was killed: a complete event is delivered to pending/,
        anything else is removed.  Only files older than `older_than` seconds (a hook may be writing)."""
        cutoff = time.time() - older_than
        folder = self.home.inbox_dir("tmp")
        for name in inbox.list_names(self.home, "tmp"):
            p = os.path.join(folder, name)
            try:
                if os.lstat(p).st_mtime > cutoff:
                    continue
                if name.endswith(".json") and not os.path.islink(p):
                    with open(p, "rb") as f:
                        json.loads(f.read().decode("utf-8"))
                    os.rename(p, os.path.join(self.home.inbox_dir("pending"), name))
                    self.log.info("tmp_event_recovered", event_file=name)
                    continue
            except (OSError, ValueError):
                pass
            try:
                os.unlink(p)
                self.log.info("tmp_leftover_removed", file=name)
            except OSError:
                pass

    def run(self):
        from cortex.store import journal
        # what a killed command (forget, import...) left half done
        self.with_index(journal.replay, self.home, self.cfg, log=self.log)
        self.sweep_leftovers()
        if index_lost(self.home):  # a full disk cut its creation: rebuilt from the record files
            from cortex.store.indexer import reindex
            self.log.warning("index_rebuilt", reason="the index had no tables or rows while records exist")
            reindex(self.home, self.cfg, log=self.log)
        self.with_index(self.search_upkeep)
        names = inbox.claim_all(self.home)
        self.stats["events"] = len(names)
        groups = {}
        for name in names:
            event, reason = inbox.load(self.home, name)
            if event is None:
                self._fail(name, reason)
                continue
            p = event["payload"]
            key = (event["client"], str(p.get("session_id") or ""), str(p.get("transcript_path") or ""))
            groups.setdefault(key, []).append((name, event))
        for i, (key, evs) in enumerate(sorted(groups.items(), key=lambda kv: min(e["captured_at"] for _, e in kv[1]))):
            evs.sort(key=lambda ne: (ne[1]["captured_at"], ne[0]))
            try:
                self.with_index(self.session, evs)
            except Exception as e:  # one broken session never stops the batch
                if out_of_space(e, self.home):
                    # not the events' fault: stop here, leave them claimed, and the next run resumes
                    self.log.error("normalize_stopped", reason="no space or read-only: %s: %s" % (type(e).__name__, e),
                                   hint="free disk space; pending events are kept")
                    raise
                self.log.exception("session_failed", session=key[1], client=key[0])
                for name, _ in evs:
                    self._fail(name, "normalizer error while reading this session: %s: %s; "
                                     "fix the cause, then `cortex inbox retry`" % (type(e).__name__, e))
            if self.progress:
                self.progress(i + 1, len(groups))
        self.with_index(self.finish_index)
        self.close_writer()
        self.with_index(self.prune_episodes)
        self.with_index(self.flush_search)
        self.cleanup_blobs()
        self.prune_done()
        try:
            os.unlink(self.home.path("state", "running"))
        except OSError:
            pass
        return self.stats

    def with_index(self, fn, *args, **kwargs):
        """fn(...), and once more after rebuilding the index from the record files and episodes if it found
        the index corrupt ("database disk image is malformed"): the records are the truth, the index is
        derived from them, so its events are never quarantined for it (issue #18, defect 8)."""
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            self.close_writer()  # what a failed session left uncommitted is rolled back, as a closed writer's was
            self.cursor_lines.clear()  # its extraction may have changed the state its old cursor holds
            if not index_corrupt(e) or self.rebuilt:
                raise
            self.rebuild_index(e)
        return fn(*args, **kwargs)

    def index_writer(self):
        """The writer of the index rows the windows change, opened once a run (opening one, with its schema
        checks, and closing it, with its WAL checkpoint, cost 1.3 ms of CPU per window and per index
        update).  Each commit is synced (synchronous=FULL), as a closed writer's checkpoint made it durable
        before the window's cursor was saved."""
        if self.writer is None:
            from cortex.store.index import Index
            self.writer = Index(self.home.index_db, flush_search=False)
            self.writer.con.execute("PRAGMA synchronous=FULL")
        return self.writer

    def close_writer(self):
        """Close the run's connections to the index: its writer and the consolidator's reader."""
        self.cons.close()
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.close()

    def search_upkeep(self):
        """Build the search engine's folders that are missing or incomplete (a first run after an upgrade, a
        rebuild that was killed, a folder deleted by hand) from the index rows and the episode files."""
        if not os.path.exists(self.home.index_db):
            return
        from cortex.store.indexer import rebuild_search
        done = rebuild_search(self.home, self.log)
        if done:
            self.stats["search_rebuilt"] = sorted(done)

    def flush_search(self):
        """What this run wrote, into the search engine (its outbox, written with the rows: store/search.py),
        with the segment merges its commit starts; a folder that is not there yet (a new home) is built."""
        if not os.path.exists(self.home.index_db):
            return
        from cortex.store.index import Index
        self.search_upkeep()
        idx = Index(self.home.index_db)
        try:
            idx.flush(wait_merges=True)
        finally:
            idx.close()

    def rebuild_index(self, e):
        """Replace a corrupt index by one rebuilt from records/ and episodes/ (`cortex reindex`)."""
        from cortex.store.indexer import reindex
        self.rebuilt = True
        self.log.error("index_corrupt", error="%s: %s" % (type(e).__name__, e),
                       action="the index is rebuilt from the record files and episodes")
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(self.home.index_db + suffix)
            except FileNotFoundError:
                pass
        reindex(self.home, self.cfg, log=self.log)
        self.stats["index_rebuilt"] = True

    def _fail(self, name, reason):
        self.log.warning("event_failed", event_file=name, reason=reason)
        try:
            inbox.fail(self.home, name, reason)
        except FileNotFoundError:
            pass
        self.stats["failed"] += 1

    # -- one session --------------------------------------------------------------------
    def transcript_source(self, evs):
        """(path to read, reason if none).  The client's file if it is still there, else our captured copy."""
        last = evs[-1][1]
        path = last["payload"].get("transcript_path")
        if path and not safe_transcript_path(path):
            return None, "transcript_path %r is not an absolute path to a .jsonl/.json file; ignored" % (str(path)[:200],)
        if path and os.path.isfile(path) and not os.path.islink(path):
            return path, None
        linked = bool(path) and os.path.islink(path)
        for _, ev in reversed(evs):
            blob = (ev.get("transcript") or {}).get("blob")
            if blob and "/" not in blob and "\\" not in blob:
                bp = os.path.join(self.home.blobs, blob)
                if os.path.isfile(bp) and not os.path.islink(bp):
                    return bp, None
        if not path:
            return None, "the hook payload names no transcript_path"
        if linked:
            return None, ("transcript_path %s is a symbolic link; Cortex reads only regular files it is named "
                          "directly (and no copy was captured)" % path)
        return None, ("transcript %s is gone and no copy was captured (the client may have deleted it); "
                      "nothing to read" % path)

    def session(self, evs):
        from cortex.ingest import adapters
        from cortex.ingest.extract import Context, extract
        from cortex.model.redact import remembered
        last = evs[-1][1]
        payload = last["payload"]
        src, reason = self.transcript_source(evs)
        if src is None:
            for name, _ in evs:
                self._fail(name, reason)
            return
        if os.path.getsize(src) == 0:  # a session not written yet: nothing to read, and nothing wrong
            self.wait_or_done(evs, src, "transcript is empty")
            return
        hint = last["client"] if last["client"] != "unknown" else None
        adapter = adapters.detect(src, hint)
        if adapter is None and hint == "gemini" and self.recent(src) and opens_object(src):
            self.wait_or_done(evs, src, "chat file caught before its header was written")  # kept: recent
            return
        if adapter is None:
            for name, _ in evs:
                self._fail(name, "transcript %s is not in a format Cortex reads (Claude Code, Codex, Gemini)" % src)
            return
        from cortex.ingest.adapters.base import TooLarge
        key = os.path.realpath(payload.get("transcript_path") or src)
        cur = self.cursors.get(key) or {}
        size = os.path.getsize(src)
        offset = int(cur.get("offset", 0))
        if adapter.client != "gemini" and replaced(src, cur, size):
            self.log.info("transcript_replaced", transcript=os.path.basename(key), offset=offset, size=size)
            offset, cur = 0, {}  # the file was replaced or truncated: read it again
        limits = self.read_limits()
        if adapter.client == "gemini":  # a count of messages, checked against who they were
            limits["fp"] = cur.get("mfp")
        parts = adapter.windows(src, offset, **limits)
        try:
            res = next(parts)
        except TooLarge as e:
            for name, _ in evs:
                self._fail(name, str(e))
            return
        self.stats["bytes"] += max(size - offset, 0)
        totals = {"entries": 0, "candidates": 0, "bad_lines": 0, "windows": 0}
        # One window at a time: its records, their index rows, then the cursor, so memory stays
        # bounded and a run killed between windows resumes where the last one ended.
        wstart = offset  # where this window starts in the transcript (the episode's idempotence key)
        while res is not None:
            if res.restarted:
                self.log.info("transcript_replaced", transcript=os.path.basename(key), offset=offset, size=size)
                cur = {}
            ctx = self.context(adapter, payload, last, src, res, cur)
            with remembered():  # the window's prompts and replies are cleaned for extract and the episode
                cands, state = extract(res.entries, ctx, cur.get("state"))
                with folder_sync_batch():  # its folders synced once, before the cursor says they are written
                    self.store_candidates(cands, ctx)
                    ep = self.episode(ctx, res, wstart, adapter.client, None if res.restarted else cur.get("ep"))
            ep = ep if ep is not None else (None if res.restarted else cur.get("ep"))
            wstart = res.cursor
            from cortex.model.redact import clean
            mfp = res.fingerprint or (None if res.restarted else cur.get("mfp"))
            cur = {"offset": res.cursor, "client": adapter.client, "session": ctx.session,
                   "cwd": clean(ctx.cwd)[0] if ctx.cwd else None, "branch": ctx.branch, "project": ctx.project,
                   "state": state, "bad_lines": int(cur.get("bad_lines", 0)) + res.bad_lines}
            if ep is not None:
                cur["ep"] = ep
            if adapter.client != "gemini":
                cur["fp"] = fingerprint(src, res.cursor)
            elif mfp:
                cur["mfp"] = mfp
            self.index_changes()
            self.save_cursors({key: cur})
            totals["entries"] += len(res.entries)
            totals["candidates"] += len(cands)
            totals["bad_lines"] += res.bad_lines
            totals["windows"] += 1
            truncated, warnings = res.truncated, res.warnings
            unread = truncated and adapter.client == "gemini"  # caught half-written: the rest comes later
            if warnings:  # an exception's message may quote the transcript: redacted like a record
                self.log.info("transcript_notes", transcript=ctx.transcript,
                              notes=[clean(w)[0][:300] for w in warnings[:5]])
            res = cands = None  # let the window go before the next is read
            res = next(parts, None)
        import stat
        for comp in adapter.companions(src):
            try:  # regular files only: a FIFO or a link to a device would hang the run while it holds the lock
                if not stat.S_ISREG(os.lstat(comp).st_mode):
                    continue
            except OSError:
                continue
            ckey = os.path.realpath(comp)
            ccur = self.cursors.get(ckey) or {}
            coff = int(ccur.get("offset", 0))
            if replaced(comp, ccur, os.path.getsize(comp)):
                coff, ccur = 0, {}
            cctx = Context(**dict(ctx.__dict__, transcript=comp))
            for cres in adapter.windows(comp, coff, **limits):
                ccands, cstate = extract(cres.entries, cctx, ccur.get("state"))
                ccands = [c for c in ccands if c.type not in ("progress", "plan")]
                with folder_sync_batch():
                    self.store_candidates(ccands, ctx)
                ccur = {"offset": cres.cursor, "client": adapter.client, "session": ctx.session,
                        "state": cstate, "companion_of": key, "fp": fingerprint(comp, cres.cursor)}
                self.index_changes()
                self.save_cursors({ckey: ccur})
                totals["candidates"] += len(ccands)
        if unread:
            self.wait_or_done(evs, src, "chat file does not parse (being written?)")
            return
        for name, _ in evs:
            inbox.done(self.home, name)
            self.stats["done"] += 1
        self.stats["sessions"] += 1
        self.log.info("session_done", session=ctx.session, client=adapter.client, project=ctx.project,
                      truncated=truncated, events=len(evs), **totals)

    def prune_episodes(self):
        from cortex.ingest.episode_step import prune
        n = prune(self.home, self.cfg, self.log, now=self.now)
        if n:
            self.stats["episodes_expired"] = n

    def episode(self, ctx, res, start, client, base=None):
        """The window's turns into the session's episode and its passages (before the cursor is saved,
        which keeps the episode's size the returned checkpoint: a rerun goes back to it)."""
        from cortex.ingest.episode_step import record_window
        return record_window(self.home, self.cfg, self.log, ctx, res, start, client, base, self.index_writer)

    def wait_or_done(self, evs, src, why: str, settle: float = 600.0):
        """A transcript with nothing readable yet (empty, or caught half-written): its events stay in
        claimed/ for the next run while the file changed in the last `settle` seconds; after that they
        are done (never failed: the file is not wrong, and its next stop brings a new event)."""
        recent = self.recent(src, settle)
        self.log.info("transcript_not_ready", transcript=os.path.basename(src), reason=why,
                      kept=len(evs) if recent else 0)
        if recent:
            self.stats["kept"] = self.stats.get("kept", 0) + len(evs)
            return
        for name, _ in evs:
            inbox.done(self.home, name)
            self.stats["done"] += 1

    @staticmethod
    def recent(src, settle: float = 600.0) -> bool:
        try:
            return time.time() - os.stat(src).st_mtime < settle
        except OSError:
            return False

    def read_limits(self) -> dict:
        conf = self.cfg["normalize"]
        return {"window": int(conf["window_bytes"]), "max_line": int(conf["max_line_bytes"]),
                "max_document": int(conf["max_document_bytes"])}

    def context(self, adapter, payload, last, src, res, cur):
        """What extraction needs to know about the session, as of this window."""
        from cortex.model import scope
        from cortex.ingest.extract import Context
        cwd = payload.get("cwd") or res.meta.cwd or cur.get("cwd")
        project = scope.project_for(cwd) if cwd else scope.project_for(os.path.dirname(src))
        domain = scope.domain_for(project, self.cfg)
        return Context(client=adapter.client, session=payload.get("session_id") or res.meta.session_id,
                       transcript=payload.get("transcript_path") or src, project=project["id"], domain=domain,
                       branch=res.meta.git_branch or cur.get("branch"), fallback_time=last["captured_at"],
                       keyword_min_confidence=self.cfg["extraction"]["keyword_min_confidence"],
                       max_chars=self.cfg["extraction"]["max_record_chars"], cwd=res.meta.cwd or cwd)

    def store_candidates(self, cands, ctx):
        """Write the candidates as records (placed, merged, linked, superseding), in order.  With episodes
        on, a progress note that only repeats what was asked (no file changed) is not stored: the
        episode keeps the prompt itself, searchable, and the block and recall do not fill with them."""
        from cortex.model.freshness import existing_files, file_state, named_paths
        if (self.cfg.get("episodes") or {}).get("enabled", True):
            cands = [c for c in cands if not (c.type == "progress" and not c.files)]
        known = sorted({f for c in cands for f in c.files})
        # values edited in code come last: a decision of the session that states the new value is the rule that
        # replaces the stale one, and the edit's own line only when there is none
        cands = [c for c in cands if c.edit is None] + [c for c in cands if c.edit is not None]
        stored = []
        record_of = {}  # id(candidate) -> the record it became (an option not taken links to its decision)
        for c in cands:
            cand = c.to_store(ctx)
            if cand.get("files") and c.type in ("decision", "rejected"):
                # the files the exchange that settled it read or changed: a rule stays right when they are
                # edited, so they are only checked for being gone, like the files a text names
                cand["file_state"] = {p: {"named": 1} for p in existing_files(cand["files"], ctx.cwd)}
            elif cand.get("files") and c.type not in ("progress", "summary"):
                cand["file_state"] = file_state(cand["files"], ctx.cwd)
            if c.type not in ("progress", "summary", "plan"):
                named = [p for p in named_paths(c.text, ctx.cwd, known) if p not in (cand.get("file_state") or {})]
                if named:
                    cand["file_state"] = dict(cand.get("file_state") or {}, **{p: {"named": 1} for p in named})
            replacing = None
            if c.edit is not None:
                replacing = self.cons.edited_targets(dict(cand, created=cand["provenance"]["at"], status="active"),
                                                     c.edit)
                if not replacing:
                    continue
                says = [r for r in stored if r["type"] == "decision" and self.cons.states_edit(r, c.edit)]
                if says:
                    self.cons.supersede(says[-1], replacing=replacing)
                    continue
            elif c.if_replacing:
                replacing = self.cons.changed_targets(dict(cand, created=cand["provenance"]["at"], status="active"))
                if not replacing:
                    continue  # a change to something no rule in memory says: the progress note and episode have it
            doc_stale = ()
            if c.doc is not None:
                # the section's earlier record (another session) is replaced; the lines this edit did not
                # replace still hold, so the new record carries them
                from cortex.ingest import doc_rules
                doc_stale = self.cons.doc_targets(dict(cand, id=None, created=cand["provenance"]["at"],
                                                       status="active"), c.doc)
                from cortex.store.index import record_sessions
                earlier = [self.store.get(rid) or {} for rid in doc_stale]
                carried = [x for r in earlier if ctx.session not in record_sessions(r)
                           for x in doc_rules.carried_lines(r.get("text") or "", c.doc.get("removed"))]
                if carried:
                    mine = doc_rules.carried_lines(cand["text"], ())
                    lines = [x for x in carried if x not in mine] + mine
                    cand["text"] = doc_rules.rule_text({"heading": c.doc.get("heading"), "lines": lines},
                                                       c.doc["path"]) or cand["text"]
            into, related = self.cons.place(cand)
            if c.chosen is not None and id(c.chosen) in record_of:
                # the option passed over stands with the decision that passed it over: when that decision is
                # replaced, the rejection goes with it (consolidate.supersede)
                related = sorted(set(related or ()) | {record_of[id(c.chosen)]})
            if related:
                cand["related"] = related
            rec, action = self.store.upsert(cand, into=into)
            self.stats[action] = self.stats.get(action, 0) + 1
            if rec is None:
                continue
            self.touched_scopes.add(rec["scope_id"])
            stored.append(rec)
            record_of[id(c)] = rec["id"]
            self.store.changed.add(rec["id"])  # a run that died after writing it may not have indexed it
            self.cons.written(rec)
            if related:
                self.cons.link_back(rec)
            if self.cons.supersede(rec, replacing=replacing, also=doc_stale):
                self.stats["superseded"] = self.stats.get("superseded", 0) + 1
            pairs = self.cons.doc_pairs(rec)
            twins = [rid for rid, held in pairs if held]
            if twins:
                self.cons.fold_twin(rec, twins)
            else:  # a section that holds only part of the chat's statement: both stay, retired together
                self.cons.link_companions(rec, [rid for rid, held in pairs if not held])
            if rec["type"] == "plan":
                from cortex.curate import plans
                plans.settle(self.cons, self.store, rec)
            if self.cons.flag_conflicts(rec):
                self.stats["conflicts"] = self.stats.get("conflicts", 0) + 1
        for text, why in self.store.rejected:
            self.log.warning("candidate_rejected", text=text, reason=why)
        self.store.rejected.clear()

    def save_cursors(self, changed: dict):
        # records are on disk and indexed before this: a run that dies here reads the window again
        # and the upserts find their records already written
        self.cursors.update(changed)
        atomic_write_text(self.home.cursors, cursors_text(self.cursors, self.cursor_lines))

    # -- index and housekeeping ---------------------------------------------------------
    def index_changes(self, scopes=()):
        from cortex.store.indexer import update_index
        if self.store.changed or scopes:
            update_index(self.home, self.cfg, set(self.store.changed), set(scopes), flush=False,
                         idx=self.index_writer())
            self.all_changed |= self.store.changed
            self.store.changed.clear()

    def finish_index(self):
        from cortex.store.journal import intent
        if not self.all_changed and not self.stats["sessions"]:
            # nothing new, but a run that stopped before its ranking (a full disk, a kill) left scopes
            # whose shortlist lacks the records it wrote: rank them now
            scopes = self.unranked_scopes()
            if scopes:
                self.log.info("shortlist_repaired", scopes=len(scopes))
                self.index_changes(scopes)
            return
        with intent(self.home) as j:  # the lifecycle's changes stay journaled until indexed below
            self._finish_index()
            j.done()

    # The lifecycle pass reads every record (0.5 s at 100,000); decay counts active days, so its outcome
    # changes with the day, or with activity written for a past day (a catch-up run): within the hour of the last pass, on the same
    # day, with nothing written on an earlier day, it is skipped (an archive is at most an hour late).
    LIFECYCLE_EVERY = 3600.0

    def lifecycle_due(self) -> bool:
        now = time.time() if self.now is None else self.now
        try:
            with open(self.home.path("state", "lifecycle.json"), encoding="utf-8") as f:
                last = float(json.load(f)["at"])
        except (OSError, ValueError, KeyError, TypeError):
            return True
        if not (last <= now < last + self.LIFECYCLE_EVERY) or int(now // 86400) != int(last // 86400):
            return True
        return self.wrote_on_an_earlier_day(int(now // 86400))

    def wrote_on_an_earlier_day(self, today: int) -> bool:
        ids = sorted(self.all_changed | self.store.changed)
        if not ids or not os.path.exists(self.home.index_db):
            return bool(ids)
        from cortex.store.index import connect
        con = connect(self.home.index_db, readonly=True)
        try:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                for (times,) in con.execute("SELECT times FROM records WHERE id IN (%s)" % ",".join("?" * len(chunk)),
                                            chunk):
                    seen = json.loads(times or "[]")  # its newest time is what this run added
                    if seen and int(max(seen) // 86400) < today:
                        return True
        finally:
            con.close()
        return False

    def lifecycle_done(self):
        now = time.time() if self.now is None else self.now
        try:
            atomic_write_text(self.home.path("state", "lifecycle.json"), json.dumps({"at": now}) + "\n")
        except OSError:
            pass  # the next run passes again: nothing lost

    def unranked_scopes(self) -> set:
        if not os.path.exists(self.home.index_db):
            return set()
        from cortex.store.index import connect
        from cortex.store.shortlist import unranked_scopes
        con = connect(self.home.index_db, readonly=True)
        try:
            return unranked_scopes(con)
        finally:
            con.close()

    def _finish_index(self):
        from cortex.curate.consolidate import lifecycle
        if self.lifecycle_due():
            for rid, action, why in lifecycle(self.home, self.store, self.cfg, now=self.now):
                self.stats[action + "d"] = self.stats.get(action + "d", 0) + 1
                self.log.info("lifecycle", record=rid, action=action, reason=why)
            self.lifecycle_done()
        scopes = set(self.touched_scopes)
        if self.store.changed:
            from cortex.store.index import connect
            con = connect(self.home.index_db, readonly=True)
            try:
                for (sid,) in con.execute("SELECT DISTINCT scope_id FROM records WHERE id IN (%s)" % ",".join(
                        "?" * len(self.store.changed)), sorted(self.store.changed)):
                    scopes.add(sid)
            finally:
                con.close()
        # with those of an earlier run that stopped between writing its rows and ranking them
        self.index_changes(scopes | self.unranked_scopes())

    def prune_done(self):
        """Processed events are kept for inspection for a while, then deleted."""
        cutoff = time.time() - float(self.cfg["normalize"]["done_retention_days"]) * 86400
        for name in inbox.list_names(self.home, "done"):
            p = os.path.join(self.home.inbox_dir("done"), name)
            try:
                if os.lstat(p).st_mtime < cutoff:
                    os.unlink(p)
            except OSError:
                pass

    def cleanup_blobs(self):
        """Drop captured transcript links no pending event needs, once untouched for the retention time."""
        keep_hours = float(self.cfg["normalize"]["blob_retention_hours"])
        if not os.path.isdir(self.home.blobs) or inbox.list_names(self.home, "pending"):
            return
        cutoff = time.time() - keep_hours * 3600
        for name in os.listdir(self.home.blobs):
            p = os.path.join(self.home.blobs, name)
            try:
                if os.lstat(p).st_mtime < cutoff:
                    os.unlink(p)
            except OSError:
                pass


def run(home: Home = None, quiet: bool = False, progress=None, now: float = None) -> dict:
    """One normalizer run.  Returns its stats, or {'busy': pid} when another run holds the lock."""
    home = (home or Home()).ensure()
    if nothing_to_do(home) and config_mod.snapshot_current(home):
        return {"events": 0, "idle": True}
    from cortex.core.log import get_logger
    log = get_logger(home, component="normalize")
    t0 = time.time()
    try:
        with RunLock(home.lock), holding(home):
            # a broken config.yaml never silences memory: the run goes on with the last valid settings (or
            # the defaults), keeps that snapshot, and reports the problem (cortex-normalize exits 2)
            cfg, problem = config_mod.load_checked(home)
            if problem is None:
                config_mod.write_snapshot(home, cfg)
            stats = Run(home, cfg, log, progress, now=now).run()
            if problem is not None:
                stats["config_error"] = problem
                stats["config_used"] = config_mod.fallback_source(home)
            stats["duration_ms"] = int((time.time() - t0) * 1000)
            atomic_write_text(home.path("state", "last_run.json"),
                              json.dumps(dict(stats, finished_at=now_iso()), indent=1, sort_keys=True))
            log.info("normalize_done", **stats)
            return stats
    except Busy as b:
        log.info("normalize_busy", holder=str(b))
        return {"busy": str(b)}
