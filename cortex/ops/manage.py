"""Reading and changing memory by hand: the library behind the people-facing commands.

Every function here works without the CLI (`cortex.cli.commands` only parses arguments and prints):

    remember(home, text, ...)            write a record now, through RecordStore.upsert
    find_targets / forget(...)           archive (or delete for good) records by id, query or session
    project_records / reset ...          every L0 record of one project
    purge_project_inbox / purge_session_inbox   what reset / forget --hard remove from the inbox
    set_pinned(home, ref, True)          pin / unpin
    edit_record(home, ref, editor)       $EDITOR on a copy, validated before it replaces the record
    show(home, ref)                      the full record with its provenance
    export_lines / import_lines          JSON Lines, one record per line, round trip exact
    mark_used(home, ids)                 append a use time (recall), restore archived records
    inbox_show / inbox_retry             look at one event, re-queue failed events

Record files are only ever written through `RecordStore.write` (schema-validated, atomic), while
holding the normalizer's run lock so a normalizer run and a command never interleave their writes
to one record.  After each change the index rows of the changed records are refreshed with
`indexer.update_index`.
"""
import contextlib
import json
import os
import re
import time

from cortex.store import records as records_mod
from cortex.core.clock import now_iso
from cortex.core.errors import CortexError
from cortex.core.home import INBOX_STATES, Home
from cortex.core.lock import locked
from cortex.store.journal import writing
from cortex.inbox.cursors import read_cursors
from cortex.inbox.maildir import MAX_EVENT_BYTES


ID_RE = re.compile(r"^r[0-9a-f]{16}$")
PREFIX_RE = re.compile(r"^r[0-9a-f]{3,15}$")
DEFAULT_TYPE = "learned"
ID_HINT = "find ids with `cortex recall WORDS` or `cortex why`"


# -- the home, the lock, the config -------------------------------------------------------------

def open_home(home=None, create: bool = False) -> Home:
    """The Home, checked: an existing, readable directory (created when `create`)."""
    home = home if isinstance(home, Home) else Home(home)
    root = home.root
    if os.path.exists(root):
        if not os.path.isdir(root):
            raise CortexError("the Cortex home %s is not a directory" % root, "point CORTEX_HOME at a directory")
        need = os.R_OK | os.X_OK | (os.W_OK if create else 0)
        if not os.access(root, need):
            raise CortexError("cannot %s the Cortex home %s: permission denied" % ("write" if create else "read", root),
                              "check its owner and mode (it should be yours, mode 700)")
        if create:
            home.ensure()
    elif create:
        try:
            home.ensure()
        except OSError as e:
            raise CortexError("cannot create the Cortex home %s: %s" % (root, e.strerror or e),
                              "set CORTEX_HOME to a writable directory")
    else:
        raise CortexError("there is no Cortex home at %s (nothing has been captured yet)" % root,
                          "set CORTEX_HOME, or register the hooks and run cortex-normalize")
    return home


def load_config(home, cfg=None) -> dict:
    if cfg is not None:
        return cfg
    from cortex.core import config
    return config.load(home)




def reindex_records(home, cfg, ids, scopes, scrub: bool = False) -> None:
    """Refresh the index rows of these records (deleted files lose their rows) and re-rank their scopes;
    scrub after a hard delete (see indexer.update_index)."""
    if not ids and not scopes:
        return
    from cortex.store.indexer import update_index
    update_index(home, cfg, set(ids), set(scopes), scrub=scrub)


# -- finding records ----------------------------------------------------------------------------

def resolve(home, ref: str) -> str:
    """The file of the record a person named: a full id or a unique id prefix (at least 4 characters)."""
    ref = (ref or "").strip()
    if ref.endswith(".md"):
        ref = os.path.basename(ref)[:-3]
    if ID_RE.match(ref):
        for path in records_mod.RecordStore(home.records).find_paths(ref):
            return path
        raise CortexError("no record with id %s" % ref, ID_HINT)
    if PREFIX_RE.match(ref):
        found = [p for p in records_mod.iter_paths(home.records) if os.path.basename(p).startswith(ref)]
        if len(found) == 1:
            return found[0]
        if found:
            raise CortexError("the id prefix %s matches %d records" % (ref, len(found)), "give more of the id")
        raise CortexError("no record with an id starting %s" % ref, ID_HINT)
    raise CortexError("%r is not a record id (ids look like r3409248afd0fd469)" % ref, ID_HINT)


def read_path(path: str) -> dict:
    try:
        return records_mod.read(path)
    except (records_mod.RecordError, OSError, UnicodeDecodeError) as e:
        raise CortexError("the record file %s is unreadable: %s" % (path, e),
                          "fix it by hand or move it away, then `cortex reindex`")


def load(home, ref: str):
    """(record, path) for an id or id prefix."""
    path = resolve(home, ref)
    return read_path(path), path


def write(home, rec: dict) -> str:
    """The store's writer: schema-validated, atomic.  Returns the path."""
    store = records_mod.RecordStore(home.records)
    try:
        store.write(rec)
    except records_mod.RecordError as e:
        raise CortexError(str(e))
    return store.path_of(rec)


def update(home, rec_id: str, change) -> dict:
    """Read a record, apply change(rec) -> bool, write it back if it changed (RecordStore.update: validated,
    atomic).  Raises CortexError when the record is missing or unreadable."""
    store = records_mod.RecordStore(home.records)
    try:
        rec = store.update(rec_id, change)
    except records_mod.RecordError as e:
        raise CortexError(str(e))
    if rec is None:
        if store.rejected:
            raise CortexError(store.rejected[-1][1], "fix the file by hand or move it away, then `cortex reindex`")
        raise CortexError("no record with id %s" % rec_id, ID_HINT)
    return rec


LINK_FIELDS = ("related", "supersedes", "superseded_by", "conflicts_with")


def unlink(home, ids) -> set:
    """Remove links to deleted records from the records that name them (one pass over the files).
    Returns the ids of the records changed."""
    ids = set(ids)
    changed = set()
    if not ids:
        return changed
    for path in records_mod.iter_paths(home.records):
        try:
            with open(path, encoding="utf-8") as f:
                raw = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        if not any(i in raw for i in ids):
            continue

        def change(rec):
            hit = False
            for field in LINK_FIELDS:
                links = rec.get(field)
                if isinstance(links, list) and ids & set(links):
                    kept = [x for x in links if x not in ids]
                    if kept:
                        rec[field] = kept
                    else:
                        rec.pop(field)
                    hit = True
            if rec.get("merged_into") in ids:
                rec["merged_into"] = None
                hit = True
            return hit

        rid = os.path.basename(path)[:-3]
        store = records_mod.RecordStore(home.records)
        try:
            rec = store.update(rid, change)
        except records_mod.RecordError:
            continue
        if rec is not None and rid in store.changed:
            changed.add(rid)
    return changed


def archive_time() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def summary(rec: dict, path: str = None) -> dict:
    """The fields every command's JSON shows for a record."""
    out = {k: rec.get(k) for k in ("id", "scope", "scope_id", "project", "type", "status", "confidence", "pinned",
                                   "priority", "created", "updated", "text")}
    out["pinned"] = bool(out["pinned"])
    out["priority"] = int(out["priority"] or 0)
    out["path"] = path
    return out


def where(project_id: str, domain: str, mode: str = None):
    """The scope ids a --scope option means: None (project and its domain), project, domain, or all (None)."""
    if mode in (None, "", "both"):
        return [project_id, domain]
    if mode == "project":
        return [project_id]
    if mode == "domain":
        return [domain]
    if mode == "all":
        return None
    raise CortexError("unknown scope %r" % mode, "use project, domain or all")


def resolve_project(home, cwd=None, cfg=None):
    from cortex.model import scope
    cfg = load_config(home, cfg)
    project = scope.project_for(os.path.abspath(cwd or os.getcwd()))
    return project, scope.domain_for(project, cfg), cfg


def _open_index(home):
    from cortex.store.index import connect
    if not os.path.exists(home.index_db):
        raise CortexError("there is no index in %s" % home.root, "run `cortex reindex`")
    return connect(home.index_db, readonly=True)


def query_matches(home, query: str, scope_ids=None, include_archived: bool = False) -> list:
    """Records holding every term of the query (AND, not BM25's OR: this picks records to change)."""
    from cortex.store.terms import query_terms
    terms = query_terms(query)
    if not terms:
        raise CortexError("the query %r has no searchable words" % query, "use more specific words, or an id")
    con = _open_index(home)
    try:
        ids = None
        for term in terms:
            found = {r[0] for r in con.execute("SELECT id FROM postings WHERE term=?", (term,))}
            ids = found if ids is None else ids & found
            if not ids:
                return []
        rows = []
        for chunk in _chunks(sorted(ids), 500):
            rows += con.execute("SELECT id, scope_id, status, path FROM records WHERE id IN (%s)"
                                % ",".join("?" * len(chunk)), chunk).fetchall()
    finally:
        con.close()
    out = []
    for rid, scope_id, status, path in sorted(rows, key=lambda r: r[0]):
        if scope_ids is not None and scope_id not in scope_ids:
            continue
        if status == "archived" and not include_archived:
            continue
        path = home.record_file(path)  # a file of this home, whatever home wrote the index
        if path and os.path.exists(path):
            out.append((read_path(path), path))
    return out


def session_records(home, session: str) -> list:
    """Every record whose provenance names this session (read from the files, not the index)."""
    if not session:
        raise CortexError("no session id given")
    out = []
    for path in records_mod.iter_paths(home.records):
        try:
            with open(path, encoding="utf-8") as f:
                raw = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        if session not in raw:
            continue
        rec = read_path(path)
        if any(p.get("session") == session for p in rec.get("provenance") or []):
            out.append((rec, path))
    return out


def project_records(home, project_id: str) -> list:
    """Every L0 record of one project, from its folder."""
    folder = os.path.join(home.records, "L0", project_id)
    if not os.path.isdir(folder):
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".md") and not name.startswith("."):
            path = os.path.join(folder, name)
            try:
                rec = records_mod.read(path)
            except (records_mod.RecordError, OSError, UnicodeDecodeError):
                rec = {"id": name[:-3], "scope": "L0", "scope_id": project_id, "type": "?", "status": "unreadable",
                       "text": ""}
            out.append((rec, path))
    return out


def _event_project(ev: dict, cursors: dict, cache: dict):
    """The project id an event's session belongs to: its cursor's project, else its payload's cwd."""
    from cortex.model import scope
    p = ev.get("payload") if isinstance(ev.get("payload"), dict) else {}
    tp = p.get("transcript_path")
    if isinstance(tp, str) and tp and "\x00" not in tp:
        cur = cursors.get(os.path.realpath(tp))
        if isinstance(cur, dict) and cur.get("project"):
            return cur["project"]
    cwd = p.get("cwd")
    if isinstance(cwd, str) and cwd and "\x00" not in cwd and os.path.isabs(cwd):
        if cwd not in cache:
            cache[cwd] = scope.project_for(cwd)["id"]
        return cache[cwd]
    return None


def _read_to(path: str, offset: int) -> int:
    """Where a reset leaves a transcript's cursor: past everything written so far (the end of its last
    complete line for JSON lines; the number of messages for a Gemini chat), never before `offset`."""
    try:
        if path.lower().endswith(".json"):
            from cortex.ingest import adapters
            from cortex.ingest.adapters.base import TooLarge
            try:
                return max(offset, adapters.get("gemini").parse(path, 0).cursor)
            except TooLarge:  # never read by the normalizer either, so nothing past `offset` can come back
                return offset
        with open(path, "rb") as f:
            end = os.fstat(f.fileno()).st_size
            while end > offset:
                start = max(end - (1 << 20), offset)
                f.seek(start)
                chunk = f.read(end - start)
                nl = chunk.rfind(b"\n")
                if nl >= 0:
                    return start + nl + 1
                end = start
    except (OSError, KeyError):
        pass
    return offset


def _inbox_events(home, states):
    """(state, name, path, event) of every readable event file in those inbox folders."""
    for state in states:
        folder = home.inbox_dir(state)
        for name in _event_names(home, state):
            path = os.path.join(folder, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > MAX_EVENT_BYTES:
                    continue
                with open(path, encoding="utf-8") as f:
                    ev = json.load(f)
            except (OSError, ValueError):
                continue
            if isinstance(ev, dict) and isinstance(ev.get("payload"), dict):
                yield state, name, path, ev


def _event_transcript(ev: dict):
    tp = ev["payload"].get("transcript_path")
    return os.path.realpath(tp) if isinstance(tp, str) and os.path.isabs(tp) and "\x00" not in tp else None


def _event_blob(ev: dict):
    blob = (ev.get("transcript") or {}).get("blob")
    return blob if isinstance(blob, str) and blob and "/" not in blob and "\\" not in blob else None


def _purge_inbox(home, doomed, transcripts: set, dry_run: bool) -> dict:
    """Delete the event files `doomed(state, event)` picks (and their reasons), then the transcript links
    in inbox/blobs/ of those events and of `transcripts` that no remaining event names."""
    counts = {"events": 0, "blobs": 0}
    blob_names, kept_blobs = set(), set()
    for state, _name, path, ev in list(_inbox_events(home, ("pending", "claimed", "done", "failed"))):
        if not doomed(state, ev):
            if _event_blob(ev):
                kept_blobs.add(_event_blob(ev))
            continue
        if _event_transcript(ev):
            transcripts.add(_event_transcript(ev))
        if _event_blob(ev):
            blob_names.add(_event_blob(ev))
        counts["events"] += 1
        if not dry_run:
            for p in (path, path + ".reason.txt"):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
    inodes = set()
    for t in transcripts:
        try:
            st = os.stat(t)
            inodes.add((st.st_dev, st.st_ino))
        except OSError:
            pass
    if os.path.isdir(home.blobs):
        for name in sorted(os.listdir(home.blobs)):
            p = os.path.join(home.blobs, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if name not in kept_blobs and (name in blob_names or (st.st_dev, st.st_ino) in inodes):
                counts["blobs"] += 1
                if not dry_run:
                    os.unlink(p)
    return counts


def purge_project_inbox(home, project_id: str, dry_run: bool = False) -> dict:
    """What a reset removes besides records and index rows: the project's events in the inbox (the raw
    hook payloads: session ids, paths, last messages), its transcript links in inbox/blobs/, and its
    entries in state/cursors.json.  Each cursor is replaced by a tombstone keyed by a hash of the
    transcript's path (`cursor_tombstone_key`) that holds only the offset reached, so what was there
    before the reset is never read again while later activity in the same session still is."""
    from cortex.inbox.cursors import cursor_tombstone_key
    ctx = contextlib.nullcontext() if dry_run else locked(home)
    with ctx:
        cursors, cache = read_cursors(home.cursors), {}
        mine = {k for k, v in cursors.items() if isinstance(v, dict) and v.get("project") == project_id}
        mine |= {k for k, v in cursors.items() if isinstance(v, dict) and v.get("companion_of") in mine}
        transcripts = set(mine)
        counts = _purge_inbox(home, lambda _state, ev: _event_project(ev, cursors, cache) == project_id,
                              transcripts, dry_run)
        counts["cursors"] = 0
        for t in sorted(transcripts):
            cur = cursors.get(t) if dry_run else cursors.pop(t, None)
            counts["cursors"] += cur is not None
            if not dry_run:
                offset = int(cur.get("offset", 0)) if isinstance(cur, dict) else 0
                cursors[cursor_tombstone_key(t)] = {"offset": _read_to(t, offset), "reset_at": now_iso()}
        if not dry_run and transcripts:
            from cortex.core.fsutil import atomic_write_text
            from cortex.inbox.cursors import cursors_text
            atomic_write_text(home.cursors, cursors_text(cursors))
    return counts


def purge_session_inbox(home, sessions: set, dry_run: bool = False) -> dict:
    """What `forget --hard` removes besides the records: the processed (done/) events of the sessions the
    records came from, whose payloads can hold the same text (a Stop hook's last assistant message), and
    their transcript links once no other event needs them.  Events still waiting to be read stay."""
    sessions = {s for s in sessions if s}
    if not sessions:
        return {"events": 0, "blobs": 0}
    ctx = contextlib.nullcontext() if dry_run else locked(home)
    with ctx:
        return _purge_inbox(home, lambda state, ev: state == "done" and ev["payload"].get("session_id") in sessions,
                            set(), dry_run)


# -- episodes ------------------------------------------------------------------------------------

def _episode_paths(home, sessions=None, project_id: str = None) -> list:
    from cortex.store import episodes
    names = {episodes.safe_name(x) + ".md" for x in sessions or () if x}
    folder = episodes.safe_name(project_id) if project_id else None
    return [p for p in episodes.iter_paths(home.episodes)
            if (folder and os.path.basename(os.path.dirname(p)) == folder) or os.path.basename(p) in names]


def _drop_passages(home, sessions=(), project_id: str = None, scrub: bool = True) -> int:
    if not os.path.exists(home.index_db):
        return 0
    from cortex.store.index import Index, delete_passages
    idx = Index(home.index_db)
    try:
        n = sum(delete_passages(idx.con, session=x) for x in sorted(set(sessions)) if x)
        if project_id:
            n += delete_passages(idx.con, project=project_id)
        idx.commit()
        idx.truncate_wal()  # the deleted passages' rows leave the WAL too
    finally:
        idx.close()
    if scrub:  # even when none was left: an archive before may have deleted them without merging
        from cortex.store.indexer import purge_passages_search
        purge_passages_search(home)
    return n


def forget_episodes(home, sessions, hard: bool = False, dry_run: bool = False) -> dict:
    """`forget --session`: the sessions' episodes leave search.  Archived (the default): the file stays,
    marked `archived`, and its passages leave the index (a reindex leaves them out too).  `hard`: the file
    is deleted with its passages."""
    from cortex.store import episodes
    paths = _episode_paths(home, sessions)
    out = {"episodes": len(paths), "passages": 0}
    if dry_run or not paths:
        return out
    with locked(home):
        for p in paths:
            if hard:
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
            else:
                front, turns = episodes.read(p)
                if not front.get("archived"):
                    front["archived"] = now_iso()
                    episodes.rewrite(p, front, turns)
        out["passages"] = _drop_passages(home, sessions, scrub=hard)
    return out


def forget_in_episodes(home, targets, dry_run: bool = False) -> dict:
    """`forget --hard` of records: the turns of their sessions' episodes that hold a record's words are
    blanked (episodes.forget_text), and those episodes' passages indexed again, so the text is left in
    no episode file and no index row."""
    from cortex.store import episodes
    from cortex.store.indexer import update_passages
    by_session = {}
    for rec, _path in targets:
        for p in rec.get("provenance") or []:
            if isinstance(p, dict) and p.get("session"):
                by_session.setdefault(p["session"], []).append(rec.get("text") or "")
    out = {"turns": 0}
    if not by_session:
        return out
    with contextlib.nullcontext() if dry_run else locked(home):
        for session, texts in sorted(by_session.items()):
            for path in _episode_paths(home, [session]):
                if dry_run:
                    from cortex.store.terms import tokenize
                    _, turns = episodes.read(path)
                    wanted = [set(tokenize(t)) for t in texts if tokenize(t)]
                    out["turns"] += sum(1 for t in turns if any(len(w & set(tokenize(t["text"]))) >= 0.8 * len(w)
                                                                for w in wanted))
                    continue
                n = episodes.forget_text(path, texts)
                out["turns"] += n
                if n:
                    front, turns = episodes.read(path)
                    if not front.get("archived"):
                        update_passages(home, front, turns, path)
        if out["turns"] and not dry_run and os.path.exists(home.index_db):
            from cortex.store.indexer import purge_passages_search
            purge_passages_search(home)
    return out


def reset_project_episodes(home, project_id: str, dry_run: bool = False) -> dict:
    """`reset --project`: every episode of the project and its passages are deleted."""
    paths = _episode_paths(home, project_id=project_id)
    out = {"episodes": len(paths), "passages": 0}
    if dry_run:
        return out
    with locked(home):
        for p in paths:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        if paths:
            try:
                os.rmdir(os.path.dirname(paths[0]))
            except OSError:
                pass
        out["passages"] = _drop_passages(home, project_id=project_id)
    return out


def export_episodes(home, scope_ids=None, errors: list = None):
    """One dict per episode file ({"episode": front matter, "turns": [...]}), for `cortex export --episodes`."""
    from cortex.store import episodes
    for p in episodes.iter_paths(home.episodes):
        try:
            front, turns = episodes.read(p)
        except (OSError, ValueError, UnicodeDecodeError) as e:
            if errors is not None:
                errors.append((p, str(e)))
            continue
        if scope_ids is not None and front.get("project") not in scope_ids:
            continue
        yield {"episode": front, "turns": [{"role": t["role"], "at": t["at"], "text": t["text"]} for t in turns]}


def import_episode(home, item: dict, dry_run: bool = False) -> str:
    """Write one exported episode (redacted again, front matter validated) and index its passages."""
    from cortex.model.redact import clean
    from cortex.core.schemas import validate
    from cortex.store import episodes
    from cortex.store.indexer import update_passages
    front = dict(item.get("episode") or {})
    problems = validate("episode", front)
    if problems:
        raise CortexError("an exported episode is not valid: %s" % problems[0])
    turns = []
    for i, t in enumerate(item.get("turns") or [], 1):
        if not isinstance(t, dict) or t.get("role") not in ("user", "assistant"):
            raise CortexError("episode %s: turn %d is not a user or assistant turn" % (front["session"], i))
        turns.append({"n": i, "role": t["role"], "at": str(t.get("at") or ""), "text": clean(str(t.get("text") or ""))[0]})
    front["turns"] = len(turns)
    path = episodes.episode_path(home, front["project"], front["session"])
    if not dry_run:
        episodes.rewrite(path, front, turns)
        if not front.get("archived"):
            update_passages(home, front, turns, path)
    return path


def find_targets(home, target: str = None, session: str = None, cwd: str = None, scope: str = None,
                 hard: bool = False, cfg=None):
    """What `forget` would act on: (matches, how) with how 'id', 'query' or 'session'.
    An argument that looks like an id (r + hex) and names a record is that record; anything else is a
    query matched against the project and its domain (or --scope)."""
    if session:
        return session_records(home, session), "session"
    target = (target or "").strip()
    if not target:
        raise CortexError("say what to forget: an id, some words, or --session SID")
    if ID_RE.match(target) or (PREFIX_RE.match(target) and len(target) >= 5):
        try:
            rec, path = load(home, target)
            return [(rec, path)], "id"
        except CortexError:
            if ID_RE.match(target):
                raise
    project, domain, cfg = resolve_project(home, cwd, cfg)
    return query_matches(home, target, where(project["id"], domain, scope), include_archived=hard), "query"


# -- changing records ---------------------------------------------------------------------------

def forget(home, targets: list, hard: bool = False, dry_run: bool = False, cfg=None) -> list:
    """Archive the records (status archived, `archived_at` set: out of the block and of recall, kept on
    disk), or with `hard` delete their files and index rows, and drop the links other records hold to
    them.  Returns one summary per record with its action."""
    out = []
    ids, scopes, deleted = set(), set(), set()
    ctx = contextlib.nullcontext() if dry_run else writing(home)
    with ctx:
        for rec, path in targets:
            s = summary(rec, path)
            if hard:
                s["action"] = "would delete" if dry_run else "deleted"
                if not dry_run:
                    if not home.contains(path, home.records):
                        raise CortexError("refusing to delete %s: it is not a record file of the Cortex home %s"
                                          % (path, home.root), "run `cortex reindex`, then try again")
                    records_mod.note_change(home.records, rec["id"], rec.get("scope_id"))  # the intent, first
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        pass
                    deleted.add(rec["id"])
            elif rec.get("status") == "archived":
                s["action"] = "already archived"
            else:
                s["action"] = "would archive" if dry_run else "archived"
                if not dry_run:
                    when = archive_time()
                    rec = update(home, rec["id"], lambda r: r.update(status="archived", archived_at=when) or True)
                    s["status"] = "archived"
            if not dry_run and s["action"] in ("deleted", "archived"):
                ids.add(rec["id"])
                scopes.add(rec["scope_id"])
            out.append(s)
        if ids:
            if deleted:
                from cortex.store import tombstones  # so that `cortex sync` deletes them elsewhere too
                tombstones.add(home, [r for r, _ in targets if r.get("id") in deleted])
                for folder in {os.path.dirname(p) for _, p in targets}:
                    try:
                        os.rmdir(folder)  # only when empty
                    except OSError:
                        pass
                for rid in unlink(home, deleted):
                    ids.add(rid)
                scrub_cursor_state(home, [rec for rec, _ in targets if rec["id"] in deleted])
            reindex_records(home, load_config(home, cfg), ids, scopes, scrub=bool(deleted))
    return out


def scrub_cursor_state(home, recs: list) -> int:
    """Drop from the extraction state carried in state/cursors.json what the deleted records were made of
    (the last prompt, edited files, failing commands, open shell calls their text quotes): otherwise the
    session's next edit would write the forgotten progress record again.  Returns the cursors changed."""
    from cortex.core.fsutil import atomic_write_text
    from cortex.inbox.cursors import cursors_text
    texts = [rec.get("text") or "" for rec in recs]
    files = {f for rec in recs for f in rec.get("files") or []}
    sessions = {p.get("session") for rec in recs for p in rec.get("provenance") or [] if p.get("session")}
    if not texts or not sessions:
        return 0

    def quoted(s):
        # (the state may keep a sentence with the full stop the record's quote of it lacks)
        core = s.strip().rstrip(".!?;:") if isinstance(s, str) else ""
        return bool(core) and any(s in t or core in t for t in texts)

    cursors = read_cursors(home.cursors)
    n = 0
    for cur in cursors.values():
        st = cur.get("state") if isinstance(cur, dict) else None
        if not isinstance(st, dict) or cur.get("session") not in sessions:
            continue
        before = json.dumps(st, sort_keys=True)
        lp = st.get("last_prompt")
        if isinstance(lp, dict) and quoted(lp.get("text")):
            st["last_prompt"] = None
        if isinstance(st.get("edited"), list):
            st["edited"] = [f for f in st["edited"] if not (f in files or quoted(f))]
        if isinstance(st.get("touched"), list):  # the files read or changed lately, [[path, turn]]
            st["touched"] = [t for t in st["touched"]
                             if not (isinstance(t, list) and t and (t[0] in files or quoted(t[0])))]
        if isinstance(st.get("dfiles"), dict):  # the files of the session's recent decisions
            st["dfiles"] = {k: [f for f in v if not (f in files or quoted(f))] for k, v in st["dfiles"].items()
                            if isinstance(v, list)}
        if isinstance(st.get("failures"), dict):
            st["failures"] = {k: f for k, f in st["failures"].items()
                              if not (isinstance(f, dict) and (quoted(f.get("cmd")) or quoted(f.get("err"))))}
        if isinstance(st.get("open_shell"), dict):
            st["open_shell"] = {k: v for k, v in st["open_shell"].items() if not quoted(v)}
        # and any other text the state keeps (recent prompts, goal, outcome, plan items, decision state):
        # a longer string the deleted text quotes goes, with the list item or value that holds it
        for key in list(st):
            if key not in ("last_prompt", "edited", "failures", "open_shell", "touched", "dfiles"):
                st[key] = _without_quoted(st[key], lambda t: len(t) >= 16 and quoted(t))
        if json.dumps(st, sort_keys=True) != before:
            n += 1
    if n:
        atomic_write_text(home.cursors, cursors_text(cursors))
    return n


def _holds(value, quoted) -> bool:
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, dict):
        return any(_holds(v, quoted) for v in value.values())
    if isinstance(value, list):
        return any(_holds(v, quoted) for v in value)
    return False


def _without_quoted(value, quoted):
    """`value` without the strings `quoted` accepts: list items holding one are dropped, dict values that
    are one become None, nested containers are cleaned the same way."""
    if isinstance(value, str):
        return None if quoted(value) else value
    if isinstance(value, list):
        return [_without_quoted(v, quoted) for v in value if not (isinstance(v, (str, dict)) and _holds(v, quoted))]
    if isinstance(value, dict):
        return {k: _without_quoted(v, quoted) for k, v in value.items()}
    return value


def set_pinned(home, ref: str, pinned: bool = True, cfg=None):
    """Pin (the record always leads the block) or unpin.  Returns (summary, changed)."""
    with writing(home):
        rec, path = load(home, ref)
        if bool(rec.get("pinned")) == pinned:
            return summary(rec, path), False
        rec = update(home, rec["id"], lambda r: r.update(pinned=pinned) or True)
        reindex_records(home, load_config(home, cfg), {rec["id"]}, {rec["scope_id"]})
    return summary(rec, path), True


def mark_used(home, ids, at: str = None, restore: bool = True, cfg=None) -> list:
    """Count a use of each record: append `at` (default now, UTC) to its `used` list, restore an archived
    record to active (it was asked for, so it matters), write it, refresh its index row."""
    at = at or now_iso()

    def use(rec):
        rec["used"] = list(rec.get("used") or []) + [at]
        if restore and rec.get("status") == "archived":
            rec["status"] = "active"
            rec.pop("archived_at", None)
        return True

    done = []
    with writing(home, wait=5.0):
        for rid in ids:
            done.append(update(home, rid, use))
        reindex_records(home, load_config(home, cfg), {r["id"] for r in done}, {r["scope_id"] for r in done})
    return done


def remember(home, text: str, rtype: str = DEFAULT_TYPE, scope: str = None, pinned: bool = False,
             priority: int = None, cwd: str = None, cfg=None, now: float = None) -> dict:
    """Write a record now, through RecordStore.upsert (redaction, deterministic id, merge).

    scope: 'project' (L0), 'domain' or 'global' (L1 of the project's domain; Cortex has no scope wider
    than a domain, the same as `[MEMORY: learned global]` tags).  Default: project, except preferences,
    which go to the domain as tagged preferences do."""
    from cortex.model import redact
    from cortex.store.records import TYPE_ALIASES, TYPES, canonical_type
    if canonical_type(rtype) is None:
        raise CortexError("unknown type %r" % rtype, "use one of: %s (or %s)" % (
            ", ".join(TYPES), ", ".join(sorted(TYPE_ALIASES))))
    rtype = canonical_type(rtype)
    text = (text or "").strip()
    if not text:
        raise CortexError("nothing to remember: the text is empty")
    project, domain, cfg = resolve_project(home, cwd, cfg)
    scope = scope or ("domain" if rtype == "preference" else "project")
    if scope not in ("project", "domain", "global"):
        raise CortexError("unknown scope %r" % scope, "use project, domain or global")
    l1 = scope in ("domain", "global")
    at = now_iso(now)
    cand = {"scope": "L1" if l1 else "L0", "scope_id": domain if l1 else project["id"], "project": project["id"],
            "type": rtype, "text": text, "confidence": 1.0, "salience": 0.9, "pinned": bool(pinned),
            "priority": int(priority or 0), "files": [], "branch": None,
            "provenance": {"client": "cli", "session": None, "transcript": None, "ref": None, "layer": "manual",
                           "at": at}}
    n_secrets = redact.clean(text)[1]
    store = records_mod.RecordStore(home.records)
    with writing(home):
        try:
            rec, action = store.upsert(cand)
        except records_mod.RecordError as e:
            raise CortexError(str(e))
        if rec is None:
            why = store.rejected[-1][1] if store.rejected else "rejected"
            raise CortexError("nothing to remember: %s" % why)
        changed = False
        if pinned and not rec.get("pinned"):
            rec["pinned"], changed = True, True
        if priority is not None and int(rec.get("priority") or 0) != int(priority):
            rec["priority"], changed = int(priority), True
        if changed:
            write(home, rec)
            action = "updated" if action == "unchanged" else action
        reindex_records(home, cfg, {rec["id"]}, {rec["scope_id"]})
    return {"action": action, "redactions": n_secrets, "record": summary(rec, store.path_of(rec))}


# -- edit ---------------------------------------------------------------------------------------

def check_edited(text: str, original: dict) -> tuple:
    """(record, problem) for the text of an edited record file; problem is None when it is valid."""
    from cortex.core.schemas import validate
    try:
        rec = records_mod.parse(text, "the edited record")
    except records_mod.RecordError as e:
        return None, str(e)
    for k in ("id", "scope", "scope_id"):
        if rec.get(k) != original.get(k):
            return None, "%s cannot be changed by editing (was %r, now %r); use forget and remember" % (
                k, original.get(k), rec.get(k))
    problems = validate("record", rec)
    if problems:
        return None, "does not match schemas/record.schema.json: %s" % problems[0]
    return rec, None


def edit_record(home, ref: str, editor: str = None, ask=None, cfg=None) -> dict:
    """Open $EDITOR (fallback vi) on a copy of the record; when the copy is valid, it replaces the record
    (secrets redacted, token count refreshed) and the record is reindexed.

    An invalid copy never reaches records/: `ask(problem)` (interactive use) returns 'edit' to edit the copy
    again or anything else to discard it; without `ask` the edit is discarded and CortexError says why."""
    import shlex
    import subprocess
    import tempfile
    from cortex.model import redact
    from cortex.store import tokencount as tokens
    rec, path = load(home, ref)
    with open(path, "rb") as f:
        before = f.read()
    editor = editor or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    tmpdir = tempfile.mkdtemp(prefix="edit-", dir=home.path("state") if os.path.isdir(home.path("state")) else None)
    copy = os.path.join(tmpdir, os.path.basename(path))
    try:
        with open(copy, "wb") as f:
            f.write(before)
        while True:
            try:
                rc = subprocess.call(shlex.split(editor) + [copy])
            except OSError as e:
                raise CortexError("cannot run the editor %r: %s" % (editor, e.strerror or e),
                                  "set EDITOR to an editor command")
            if rc != 0:
                raise CortexError("the editor exited with status %d; the record is unchanged" % rc)
            with open(copy, "rb") as f:
                after = f.read()
            if after == before:
                return {"changed": False, "redactions": 0, "record": summary(rec, path)}
            try:
                new, problem = check_edited(after.decode("utf-8"), rec)
            except UnicodeDecodeError:
                new, problem = None, "the file is not valid UTF-8"
            if problem is None:
                break
            if ask is not None and ask(problem) == "edit":
                continue
            raise CortexError("the edited record is invalid, so the record is unchanged: %s" % problem)
        text, n = redact.clean(new["text"])
        new["text"] = text.strip() or new["text"]
        if n:
            new["redactions"] = int(new.get("redactions") or 0) + n
        if new["text"] != rec["text"]:
            new["tokens"] = tokens.count(new["text"]) + records_mod.LINE_OVERHEAD_TOKENS
        with writing(home):
            with open(path, "rb") as f:
                if f.read() != before:
                    keep = os.path.join(home.path("state"), "edited-%s.md" % rec["id"])
                    os.replace(copy, keep)
                    raise CortexError("the record changed on disk while you edited it (a normalizer run merged "
                                      "a session into it); your version is kept at %s" % keep,
                                      "run `cortex edit %s` again and copy your changes over" % rec["id"])
            write(home, new)
            reindex_records(home, load_config(home, cfg), {new["id"]}, {new["scope_id"]})
        return {"changed": True, "redactions": n, "record": summary(new, path)}
    finally:
        import shutil
        shutil.rmtree(tmpdir, ignore_errors=True)


# -- show, export, import -----------------------------------------------------------------------

def ordered(rec: dict) -> dict:
    """A record's fields in file order (front matter as records.FIELD_ORDER, others sorted), text last."""
    out = {k: rec[k] for k in records_mod.FIELD_ORDER if k in rec}
    for k in sorted(rec):
        if k not in out and k != "text":
            out[k] = rec[k]
    out["text"] = rec.get("text", "")
    return out


def show(home, ref: str) -> dict:
    try:
        rec, path = load(home, ref)
    except CortexError:
        if ":" not in ref:
            raise
        return show_passage(home, ref)
    out = ordered(rec)
    out["path"] = path
    return out


def show_passage(home, ref: str) -> dict:
    """The passage SESSION:TURN (the one anchored at that turn, else the one holding it) with its turns."""
    from cortex.store import episodes
    session, _, turn = ref.rpartition(":")
    if not session or not turn.isdigit():
        raise CortexError("no record or passage %r" % ref, "a passage is SESSION:TURN, as `cortex recall` lists it")
    n = int(turn)
    path = None
    if os.path.exists(home.index_db):
        from cortex.store.index import connect
        con = connect(home.index_db, readonly=True)
        try:
            row = con.execute("SELECT path FROM passages WHERE session=? LIMIT 1", (session,)).fetchone()
            path = episodes.episode_file(home, row[0]) if row else None
        except Exception:
            path = None
        finally:
            con.close()
    if path is None:
        want = episodes.safe_name(session) + ".md"
        path = next((p for p in episodes.iter_paths(home.episodes) if os.path.basename(p) == want), None)
    if path is None or not os.path.exists(path):
        raise CortexError("no record or episode passage %r" % ref, "`cortex recall --kind episode WORDS` lists passages")
    front, turns = episodes.read(path)
    ps = episodes.passages(turns)
    p = next((p for p in ps if p["anchor"] == n), None) or next((p for p in ps if p["first"] <= n <= p["last"]), None)
    if p is None:
        raise CortexError("session %s has no turn %d (it has %d)" % (session, n, len(turns)))
    return {"kind": "episode", "id": episodes.passage_id(session, p["anchor"]), "session": session,
            "client": front.get("client"), "project": front.get("project"), "at": p["at"],
            "turns": [p["first"], p["last"]], "anchor": p["anchor"], "of": len(turns), "path": path,
            "text_turns": [t for t in turns if p["first"] <= t["n"] <= p["last"]],
            "text": "\n\n".join("[%s] %s" % (t["role"], t["text"]) for t in turns if p["first"] <= t["n"] <= p["last"])}


def export_records(home, scope_ids=None, errors: list = None, progress=None):
    """Records in file order (scope, scope id, id), optionally only these scope ids.  Unreadable files are
    appended to `errors` as (path, message) and skipped."""
    paths = [p for p in records_mod.iter_paths(home.records)
             if scope_ids is None or os.path.basename(os.path.dirname(p)) in scope_ids]
    for i, path in enumerate(paths):
        try:
            yield records_mod.read(path)
        except (records_mod.RecordError, OSError, UnicodeDecodeError) as e:
            if errors is not None:
                errors.append((path, str(e)))
        if progress and (i % 200 == 0 or i == len(paths) - 1):
            progress(i + 1, len(paths))


def export_line(rec: dict) -> str:
    """One JSON Lines line (no newline): every front-matter field in file order, then text."""
    return json.dumps(ordered(rec), ensure_ascii=False, separators=(",", ":"))


def parse_import(lines) -> list:
    """Check every line before anything is written: JSON objects that validate as records, no id twice.
    Secrets are redacted here too (every write to records/ goes through redaction)."""
    from cortex.model import redact
    from cortex.core.schemas import validate
    recs, seen = [], {}
    for n, line in enumerate(lines, 1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError:
                raise CortexError("line %d is not valid UTF-8" % n)
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise CortexError("line %d is not JSON: %s" % (n, e), "nothing was imported")
        if not isinstance(rec, dict):
            raise CortexError("line %d is not a JSON object" % n, "nothing was imported")
        rec.pop("path", None)
        problems = validate("record", rec)
        if problems:
            raise CortexError("line %d (record %s) is not a valid record: %s" % (n, rec.get("id"), problems[0]),
                              "nothing was imported")
        # every field, not only the text: a plan item, a file name, the transcript path (issue #18)
        rec, k = redact.redact_fields(rec)
        if k:
            rec["text"] = rec["text"].strip() or "[REDACTED]"
            rec["redactions"] = int(rec.get("redactions") or 0) + k
        if rec["id"] in seen:
            raise CortexError("line %d repeats record %s (first on line %d)" % (n, rec["id"], seen[rec["id"]]),
                              "nothing was imported")
        seen[rec["id"]] = n
        recs.append(rec)
    return recs


def import_records(home, recs: list, cfg=None, progress=None, dry_run: bool = False) -> dict:
    """Write records with their own ids (the store's writer: validated, atomic).  A record already in the home
    is replaced by the imported one unless they are identical.  Then the index is refreshed."""
    stats = {"records": len(recs), "created": 0, "replaced": 0, "unchanged": 0, "dry_run": dry_run}
    ids, scopes = set(), set()
    ctx = contextlib.nullcontext() if dry_run else writing(home)
    with ctx:
        for i, rec in enumerate(recs):
            path = records_mod.record_path(home.records, rec)
            new = records_mod.dump(rec)
            old = None
            if os.path.exists(path):
                try:
                    with open(path, encoding="utf-8") as f:
                        old = f.read()
                except (OSError, UnicodeDecodeError):
                    old = ""
            if old == new:
                stats["unchanged"] += 1
            else:
                stats["replaced" if old is not None else "created"] += 1
                if not dry_run:
                    write(home, rec)
                    ids.add(rec["id"])
                    scopes.add(rec["scope_id"])
            if progress and (i % 200 == 0 or i == len(recs) - 1):
                progress(i + 1, len(recs))
        if ids:
            reindex_records(home, load_config(home, cfg), ids, scopes)
    return stats


# -- inbox ----------------------------------------------------------------------------------------

def _event_names(home, state: str) -> list:
    from cortex.inbox import maildir as inbox
    return [n for n in inbox.list_names(home, state) if not n.endswith(".reason.txt")]


def inbox_find(home, ref: str, states=INBOX_STATES) -> list:
    """(state, name) of the events named by a file name or a unique prefix of one."""
    ref = os.path.basename((ref or "").strip())
    if not ref:
        raise CortexError("no event name given")
    exact, prefix = [], []
    for state in states:
        for name in _event_names(home, state):
            if name == ref:
                exact.append((state, name))
            elif name.startswith(ref):
                prefix.append((state, name))
    return exact or prefix


def inbox_one(home, ref: str, states=INBOX_STATES):
    found = inbox_find(home, ref, states)
    if not found:
        raise CortexError("no event %s in %s" % (ref, " or ".join("inbox/%s" % s for s in states)),
                          "list events with `cortex status` or `ls %s`" % home.inbox)
    if len(found) > 1:
        raise CortexError("%s matches %d events (%s, ...)" % (ref, len(found), found[0][1]), "give more of the name")
    return found[0]


def read_reason(home, name: str):
    try:
        with open(os.path.join(home.inbox_dir("failed"), name + ".reason.txt"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def inbox_show(home, ref: str) -> dict:
    """One event file, wherever it is in the inbox: its state, its content (parsed JSON, or the raw text
    when it is not JSON) and, when it failed, the reason."""
    state, name = inbox_one(home, ref)
    path = os.path.join(home.inbox_dir(state), name)
    try:
        with open(path, "rb") as f:
            raw = f.read(4 * 1024 * 1024)
    except OSError as e:
        raise CortexError("cannot read %s: %s" % (path, e.strerror or e))
    text = raw.decode("utf-8", "replace")
    try:
        event, raw_text = json.loads(text), None
    except ValueError:
        event, raw_text = None, text
    return {"name": name, "state": state, "path": path, "size": os.path.getsize(path), "event": event,
            "raw": raw_text, "reason": read_reason(home, name) if state == "failed" else None}


def inbox_retry(home, refs=None, dry_run: bool = False) -> list:
    """Move failed events back to pending/ (all of them when no names are given) and drop their reason
    files, so the next normalizer run tries them again.  Returns the names."""
    from cortex.inbox import maildir as inbox
    from cortex.core.fsutil import fsync_dir
    if refs:
        names = [inbox_one(home, r, ("failed",))[1] for r in refs]
    else:
        names = _event_names(home, "failed")
    names = list(dict.fromkeys(names))
    if dry_run:
        return names
    for name in names:
        inbox.move(home, name, "failed", "pending")
        try:
            os.unlink(os.path.join(home.inbox_dir("failed"), name + ".reason.txt"))
        except FileNotFoundError:
            pass
    if names:
        fsync_dir(home.inbox_dir("pending"))
    return names


def _chunks(seq, n):
    for i in range(0, len(seq), n):
        yield seq[i:i + n]
