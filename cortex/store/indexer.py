"""Keeping the index in step with the record files (normalizer side; may import heavy things)."""
import json
import os
import sys
import time

from cortex.store import records as records_mod
from cortex.store.index import POSTINGS_DDL, Index, activation_times, has_postings_dl
from cortex.core.schemas import validate  # answers valid records without importing jsonschema


def _row_view(rec: dict) -> dict:
    """The fields ranking reads, as session start gets them from the index."""
    return {"id": rec["id"], "type": rec["type"], "status": rec.get("status", "active"),
            "confidence": rec.get("confidence", 0.5), "pinned": rec.get("pinned", False),
            "priority": rec.get("priority", 0), "times": activation_times(rec), "tokens": rec.get("tokens", 0)}


CANDIDATE_COLUMNS = "id, type, status, confidence, pinned, priority, times, tokens"
INCREMENTAL_FROM = 5000      # active records in a scope above which a small change re-ranks only the old list
FULL_EVERY_SECONDS = 3600.0  # ... as long as the scope was fully re-ranked less than this long ago


def _candidate_recs(rows) -> list:
    loads = json.loads
    return [{"id": r[0], "type": r[1], "status": r[2], "confidence": r[3], "pinned": bool(r[4]), "priority": r[5],
             "times": loads(r[6] or "[]"), "tokens": r[7]} for r in rows]


def compute_candidates(idx: Index, cfg: dict, scope_id: str, now: float = None):
    """Pre-rank a scope's active records so session start reads a short list, not the whole scope."""
    now = time.time() if now is None else now
    rows = idx.con.execute("SELECT %s FROM records WHERE scope_id=? AND status='active'" % CANDIDATE_COLUMNS,
                           (scope_id,)).fetchall()
    _store_candidates(idx, cfg, scope_id, _candidate_recs(rows), now)
    idx.con.execute("INSERT OR REPLACE INTO candidates_ranked VALUES(?, ?, ?)", (scope_id, now, len(rows)))


def refresh_candidates(idx: Index, cfg: dict, scope_id: str, changed_ids, now: float = None):
    """compute_candidates, made cheap for a big scope after a small change: when the scope has more than
    INCREMENTAL_FROM active records and was fully ranked less than FULL_EVERY_SECONDS ago, only the old
    candidates and the changed records are re-ranked (the records outside the list did not change, and an
    hour of decay does not carry one past hundreds of others into the few dozen the block shows).
    Otherwise, and at least hourly, the whole scope is ranked again.  (rank.order counts the active days
    of the records it is given; here those are the candidates', as at session start.)"""
    now = time.time() if now is None else now
    con = idx.con
    row = con.execute("SELECT full_at, active FROM candidates_ranked WHERE scope_id=?", (scope_id,)).fetchone()
    if (row is None or not (0 <= now - float(row[0]) < FULL_EVERY_SECONDS)
            or int(row[1] or 0) <= INCREMENTAL_FROM):  # the scope's size at its last full ranking
        return compute_candidates(idx, cfg, scope_id, now)
    pool = {r[0] for r in con.execute("SELECT id FROM candidates WHERE scope_id=?", (scope_id,))}
    pool.update(changed_ids)
    pool = sorted(pool)
    rows = []
    for i in range(0, len(pool), 500):  # by id (primary key seeks), then the scope and status are checked here
        chunk = pool[i:i + 500]
        rows += [r[:-1] for r in con.execute("SELECT %s, scope_id FROM records WHERE id IN (%s)"
                                             % (CANDIDATE_COLUMNS, ",".join("?" * len(chunk))), chunk)
                 if r[-1] == scope_id and r[2] == "active"]
    _store_candidates(idx, cfg, scope_id, _candidate_recs(rows), now)


def _store_candidates(idx: Index, cfg: dict, scope_id: str, recs: list, now: float):
    from cortex.brief.rank import order
    ranked = order(recs, now, cfg)
    limit = int(cfg["session_start"]["candidates_per_scope"])
    keep = [r["id"] for r in ranked[:limit]]
    # the newest plan of the scope is always a candidate: it is what "where you left off" shows
    # (the 3 newest plans or progress notes: 3 per type from the records_light index, merged)
    newest = []
    for rtype in ("plan", "progress"):
        newest += idx.con.execute("SELECT updated, id FROM records WHERE scope_id=? AND status='active' AND type=? "
                                  "ORDER BY updated DESC LIMIT 3", (scope_id, rtype)).fetchall()
    extra = [rid for _, rid in sorted(newest, key=lambda r: (r[0] or ""), reverse=True)[:3]]
    for rid in extra:
        if rid not in keep:
            keep.append(rid)
    idx.set_candidates(scope_id, keep)


def _note_stemmer(idx):
    """Terms made with one stemmer do not match queries made with another: record which one built them."""
    from cortex.store.terms import stemmer_name
    idx.con.execute("INSERT OR REPLACE INTO meta VALUES('stemmer', ?)", (stemmer_name(),))


def stemmer_mismatch(home) -> str:
    """A one-line warning when the index was built with another stemmer than the one loaded now."""
    from cortex.store.index import connect, read_meta
    from cortex.store.terms import stemmer_name
    if not os.path.exists(home.index_db):
        return ""
    con = connect(home.index_db, readonly=True)
    try:
        built = read_meta(con).get("stemmer")
    finally:
        con.close()
    now = stemmer_name()
    if built and built != now:
        return "the index was built with stemmer %s but %s is loaded; run `cortex reindex`" % (built, now)
    return ""


def update_index(home, cfg, changed_ids, touched_scopes, scrub: bool = False):
    """Refresh the rows of these records and re-rank these scopes; scrub after a hard delete
    (Index.truncate_wal)."""
    from cortex.store.terms import tokenize
    idx = Index(home.index_db)
    try:
        store = records_mod.RecordStore(home.records)
        for rid in sorted(changed_ids):
            paths = list(store.find_paths(rid))
            if not paths:
                idx.delete(rid)
                continue
            rec = read_record(paths[0])
            idx.upsert(rec, paths[0], tokenize)
        idx.finish(built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        _note_stemmer(idx)
        now = time.time()
        for scope_id in sorted(touched_scopes):
            refresh_candidates(idx, cfg, scope_id, changed_ids, now)
        idx.commit()
        if scrub and not idx.truncate_wal():
            from cortex.core.log import get_logger
            get_logger(home, component="index").warning(
                "wal_not_truncated", error="a reader held the index while records were deleted, so their text "
                "stays in index/cortex.sqlite-wal until the last process using the index exits; run "
                "`cortex reindex` then to empty it")
    finally:
        idx.close()


# -- episode passages ------------------------------------------------------------------------------

def passage_rows(front: dict, turns: list, path: str, since: int = 1) -> list:
    """The index rows of an episode's passages that hold a turn >= since."""
    from cortex.store import episodes
    from cortex.store.terms import tokenize
    return [(p["anchor"], front.get("project"), front.get("client"), p["at"], p["first"], p["last"], path,
             tokenize(p["text"])) for p in episodes.passages(turns, since)]


def update_passages(home, front: dict, turns: list, path: str, since: int = 1):
    """Index the passages of an episode that changed (those holding a turn >= since)."""
    from cortex.store.index import put_passages
    rows = passage_rows(front, turns, path, since)
    idx = Index(home.index_db)
    try:
        put_passages(idx.con, front["session"], rows, since)
        idx.commit()
    finally:
        idx.close()


def reindex_passages(home, log=None) -> dict:
    """Rebuild the passages from episodes/ alone, in one transaction.  Unreadable files are reported."""
    from cortex.store import episodes
    from cortex.store.index import has_fts, put_passages
    idx = Index(home.index_db)
    n, bad = 0, []
    try:
        con = idx.con
        con.execute("BEGIN IMMEDIATE")
        con.execute("DELETE FROM passages")
        if has_fts(con):
            con.execute("DELETE FROM passages_fts")
        for path in episodes.iter_paths(home.episodes):
            try:
                front, turns = episodes.read(path)
                if not front.get("session"):
                    raise ValueError("no session in its front matter")
            except (OSError, ValueError, UnicodeDecodeError) as e:
                bad.append((path, str(e)))
                if log:
                    log.warning("episode_unreadable", path=path, error=str(e))
                continue
            rows = passage_rows(front, turns, path)
            put_passages(con, front["session"], rows)
            n += len(rows)
        con.execute("COMMIT")
        idx.truncate_wal()
    except BaseException:
        try:
            idx.con.rollback()
        except Exception:
            pass
        raise
    finally:
        idx.close()
    return {"passages": n, "unreadable": bad}


# -- fast record reading -----------------------------------------------------------------------------

_FAST = None


def _fast_res():
    global _FAST
    if _FAST is None:
        import re
        # a plain scalar as records.dump may write one: no indicator first, printable, single inner spaces, no
        # character that ends a plain scalar in a flow collection (, [ ] { }) or starts a comment or a key
        # (fast_parse refuses the other odd characters first: see _odd_chars)
        odd = r"\x00-\x1f\x7f-\x9f"
        first = r"[^\s\-?:,\[\]{}#&*!|>'\"%@`" + odd + "]"
        rest = r"[^\s,\[\]{}#:'\"" + odd + "]"
        plain = r"%s%s*(?: %s+)*" % (first, rest, rest)
        quoted = r"'(?:[^'\n]|'')*'"
        scalar = r"(?:%s|%s)" % (quoted, plain)
        key = r"[A-Za-z_][A-Za-z0-9_]*"
        _FAST = {
            "line": re.compile(r"(%s):(?: (.*))?\Z" % key),
            "plain": re.compile(plain + r"\Z"),
            "quoted": re.compile(quoted + r"\Z"),
            "seq": re.compile(r"\[(%s(?:, %s)*)?\]\Z" % (scalar, scalar)),
            "map": re.compile(r"\{((?:%s: %s)(?:, %s: %s)*)?\}\Z" % (key, scalar, key, scalar)),
            "token": re.compile(r"(?:(%s): )?(%s)(?:, |\Z)" % (key, scalar)),
        }
    return _FAST


_SCALARS = {}
_NO = object()
_RESOLVE = None


# The first characters for which PyYAML's resolver has implicit rules (bool, float, int, merge, null,
# timestamp, value; a test checks this covers yaml.resolver.Resolver's): a plain scalar starting with
# any other character is a string.  And the only words starting with a letter that it reads as other
# than a string (bool and null); "true", "false" and "null" are read here, the others go to YAML.
_RESOLVER_FIRST = frozenset("!&*+-.0123456789<=FNOTYfnoty~")
_WORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
                   "null Null NULL".split())
_NUMBER = None


def _plain_value(s: str):
    """_plain_value_yaml(s), without importing YAML for the scalars records hold: strings that start with
    a character no implicit rule starts with, words that are no bool or null, "true", "false", "null",
    plain decimal integers and decimal fractions (which the resolver reads as int and float: its float
    rule is tried first and needs a dot, its int rule matches these whole).  Anything else asks YAML."""
    global _NUMBER
    if s:
        c = s[0]
        if c not in _RESOLVER_FIRST:
            return s
        if c.isalpha():
            if s not in _WORDS:
                return s
            if s in ("true", "false"):
                return s == "true"
            if s == "null":
                return None
            return _NO
        if _NUMBER is None:
            import re
            _NUMBER = re.compile(r"-?(?:(0|[1-9][0-9]*)|[0-9]+\.[0-9]+)\Z")
        m = _NUMBER.match(s)
        if m:
            return int(s) if m.group(1) is not None else float(s)
    return _plain_value_yaml(s)


def _plain_value_yaml(s: str):
    """A plain scalar's value, decided by PyYAML's own resolver (the one its safe loader uses): a string,
    or an int / float / bool / null when it resolves to those and reads back unambiguously; _NO otherwise
    (timestamps, octal, sexagesimal, ... go to YAML)."""
    global _RESOLVE
    if _RESOLVE is None:
        import yaml
        resolver = yaml.resolver.Resolver()
        _RESOLVE = lambda v: resolver.resolve(yaml.nodes.ScalarNode, v, (True, False))  # noqa: E731
    tag = _RESOLVE(s)
    if tag == "tag:yaml.org,2002:str":
        return s
    if tag == "tag:yaml.org,2002:null" and s == "null":
        return None
    if tag == "tag:yaml.org,2002:bool" and s in ("true", "false"):
        return s == "true"
    if tag == "tag:yaml.org,2002:int" and s.lstrip("-").isdigit() and (s.lstrip("-") == "0"
                                                                       or not s.lstrip("-").startswith("0")):
        return int(s)
    if tag == "tag:yaml.org,2002:float" and all(c in "0123456789.-" for c in s) and s.count(".") == 1 \
            and s.lstrip("-")[:1].isdigit() and not s.endswith("."):
        return float(s)
    return _NO


def _scalar(s: str, r):
    """The value of one scalar as PyYAML's safe loader reads it, or _NO when unsure (memoised: values
    are immutable)."""
    v = _SCALARS.get(s, _NO)
    if v is _NO:
        if s[:1] == "'":
            v = s[1:-1].replace("''", "'") if r["quoted"].match(s) else _NO
        elif r["plain"].match(s):
            v = _plain_value(s)
        if v is not _NO:
            if len(_SCALARS) > 50000:
                _SCALARS.clear()
            _SCALARS[s] = v
    return v


def _flow(s: str, r):
    """A flow sequence of scalars or a flow mapping of identifier keys to scalars, or _NO."""
    kind = "seq" if s[:1] == "[" else "map" if s[:1] == "{" else None
    if kind is None or not r[kind].match(s):
        return _NO
    inner = s[1:-1]
    out = [] if kind == "seq" else {}
    for m in r["token"].finditer(inner):
        key, raw = m.group(1), m.group(2)
        v = _scalar(raw, r)
        if v is _NO or (kind == "seq") != (key is None) or (key is not None and _scalar(key, r) != key):
            return _NO
        if kind == "seq":
            out.append(v)
        else:
            out[key] = v
    return out


_LINES = {}  # front-matter line -> (key, value) or (key, None) for "key:" or _NO; values copied on use


def _line(line: str, r):
    """One top-level line "key: value" or "key:" parsed (memoised: most lines repeat across records)."""
    got = _LINES.get(line)
    if got is None:
        got = _NO
        m = r["line"].match(line)
        if m and _scalar(m.group(1), r) == m.group(1):  # not a key YAML reads as a bool or null ("on:")
            raw = m.group(2)
            if raw is None:
                got = (m.group(1), None)
            else:
                v = _flow(raw, r) if raw[:1] in "[{" else _scalar(raw, r)
                if v is not _NO:
                    got = (m.group(1), v)
        if len(_LINES) > 50000:
            _LINES.clear()
        _LINES[line] = got
    return got


def _copy(v):
    return list(v) if type(v) is list else dict(v) if type(v) is dict else v


def _unfold(lines: list):
    """The lines with the folded ones joined back, or None.  records.dump (as PyYAML) breaks a line longer
    than 1,000 characters where a single space stood, and indents what follows: a long `used` list, a
    long plain or quoted value.  In a flow collection or a plain or single-quoted scalar, YAML reads such
    a line break, with the next line's leading spaces, as one space, so the joined line reads the same.
    Only a line indented by at least two spaces after a line that carries a value and does not end with
    a space is joined; anything else (a nested block, a blank line) is left to YAML."""
    out = []
    for line in lines:
        if line[:1] != " ":
            out.append(line)
            continue
        rest = line.lstrip(" ")
        if not out or line[:2] != "  " or rest[:1] in ("", "\t") or out[-1][-1:] in ("", " ", "\t", ":"):
            return None
        out[-1] = out[-1] + " " + rest
    return out


_CONTROL = None


def _odd_chars(s: str) -> bool:
    """Whether s holds a character YAML reads otherwise than as itself inside a quoted scalar, or refuses: a
    control character but tab and line feed, a line or paragraph separator, a byte-order mark, U+FFFE,
    U+FFFF, a surrogate.  (Checked here once per file: in the patterns' character classes the characters
    above U+00FF would make compiling them take 6 ms instead of 1.)"""
    global _CONTROL
    if _CONTROL is None:
        import re
        _CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
    if _CONTROL.search(s):
        return True
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return any(c in s for c in "\u2028\u2029\ufeff\ufffe\uffff")


def fast_parse(text: str):
    """records.parse(text) for the front matter records.dump writes (top-level keys with scalars, flow
    lists of scalars, block lists of flow mappings, long lines folded), without YAML; None when the file
    holds anything else (nested mappings, double quotes, ...), and records.parse then reads it.  About
    10x faster; tests check it against records.parse on real and generated records."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 3)
    if end < 0:
        return None
    head = text[4:end]
    if _odd_chars(head):
        return None
    r = _fast_res()
    front = {}
    lines = head.split("\n")
    if "\n " in text[3:end]:
        lines = _unfold(lines)
        if lines is None:
            return None
    i, n = 0, len(lines)
    while i < n:
        got = _line(lines[i], r)
        if got is _NO:
            return None
        key, v = got
        i += 1
        if v is None and lines[i - 1].endswith(":"):  # "key:" and a block sequence follows
            items = []
            while i < n and lines[i].startswith("- "):
                it = lines[i][2:]
                v = _flow(it, r) if it[:1] in "[{" else _scalar(it, r)
                if v is _NO:
                    return None
                items.append(v)
                i += 1
            if not items:
                return None
            front[key] = items
            continue
        front[key] = _copy(v)
    if not front:
        return None
    front["text"] = text[end + 5:].strip("\n")
    for k in ("created", "updated"):
        if k in front and not isinstance(front[k], str):
            front[k] = str(front[k])
    return front


def read_record(path: str) -> dict:
    """records.read(path), through fast_parse when the front matter allows."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:  # the same words as records.read
        raise records_mod.RecordError("%s: not UTF-8 text (byte %d); fix or remove the file" % (path, e.start))
    if "\r" in text:  # as text mode reads it: universal newlines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    rec = fast_parse(text)
    return rec if rec is not None else records_mod.parse(text, path)


# -- full rebuild ----------------------------------------------------------------------------------
#
# A rebuild reads every record file, which is most of its cost, so that part runs in worker processes
# (chunks of REINDEX_CHUNK files).  Each worker appends what it reads to its own scratch SQLite file
# (the staging file: rows, postings, sessions, each tagged with the file's sequence number), then
# sorts its postings (an index on term, dl, tf, id), in parallel with the others.  The main process only
# learns ids, scopes and errors; at the end it attaches the staging files and copies them into the
# index in one transaction: records in file order, postings as one merge of the sorted staging
# files (SQLite's MERGE of UNION ALL, no sort), document frequencies with one GROUP BY, then the
# secondary indexes.  Without workers, this process does the same through its own staging file.

REINDEX_CHUNK = 250
PARALLEL_FROM = 4000  # record files; below this one process is faster than starting workers
_RECORD_COLS = ("id, scope, scope_id, project, type, status, text, confidence, salience, pinned, priority, created, "
                "updated, times, tokens, files, branch, plan, sessions, path, doclen, file_state")
_STAGE = {"path": None, "con": None}


def _stage_con(stage_dir: str):
    """This process's staging file in stage_dir (opened once per process and rebuild)."""
    import sqlite3
    path = os.path.join(stage_dir, "stage-%d.sqlite" % os.getpid())
    if _STAGE["path"] != path:
        _close_stage()
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("CREATE TABLE IF NOT EXISTS st_records(seq INTEGER, %s)" % _RECORD_COLS)
        con.execute("CREATE TABLE IF NOT EXISTS st_postings(term TEXT, id TEXT, tf INTEGER, dl INTEGER, seq INTEGER)")
        con.execute("CREATE TABLE IF NOT EXISTS st_sessions(session TEXT, id TEXT, seq INTEGER)")
        _STAGE.update(path=path, con=con)
    return _STAGE["con"]


def _close_stage():
    if _STAGE["con"] is not None:
        try:
            _STAGE["con"].close()
        except Exception:
            pass
    _STAGE.update(path=None, con=None)


def _stage_chunk(job) -> list:
    """Read, check and analyse one chunk of record files into this process's staging file.
    job = (stage_dir, sequence number of the first file, paths).  Returns the chunk's items in file
    order: ("ok", seq, id, scope_id) or ("bad", seq, path, error)."""
    from collections import Counter
    from cortex.store.index import index_text, record_row, record_sessions
    from cortex.store.terms import tokenize
    stage_dir, seq, paths = job
    rows, postings, sess, items = [], [], [], []
    for path in paths:
        try:
            rec = read_record(path)
            problems = validate("record", rec)
            if problems:
                raise records_mod.RecordError("%s: %s" % (path, problems[0]))
            if os.path.splitext(os.path.basename(path))[0] != rec["id"]:
                raise records_mod.RecordError("%s: file name does not match its id %s" % (path, rec["id"]))
        except (records_mod.RecordError, OSError, UnicodeDecodeError) as e:
            items.append(("bad", seq, path, str(e)))
            seq += 1
            continue
        toks = tokenize(index_text(rec))
        sessions = record_sessions(rec)
        rid = rec["id"]
        rows.append((seq,) + record_row(rec, path, len(toks), sessions))
        dl = len(toks)
        postings.extend([(t, rid, n, dl, seq) for t, n in Counter(toks).items()])
        sess.extend([(x, rid, seq) for x in sessions])
        items.append(("ok", seq, rid, rec["scope_id"]))
        seq += 1
    con = _stage_con(stage_dir)
    con.execute("BEGIN")
    con.executemany("INSERT INTO st_records VALUES(%s)" % ",".join("?" * 23), rows)
    con.executemany("INSERT INTO st_postings VALUES(?,?,?,?,?)", postings)
    con.executemany("INSERT INTO st_sessions VALUES(?,?,?)", sess)
    con.execute("COMMIT")
    return items


def _sort_stage(path: str) -> str:
    """Index a staging file's postings by (term, dl, tf, id), so the main process can merge them without a sort."""
    import sqlite3
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA cache_size=-32768")
        con.execute("CREATE INDEX IF NOT EXISTS st_order ON st_postings(term, dl, tf, id)")
    finally:
        con.close()
    return path


def _workers(n_paths: int, workers) -> int:
    if workers is None:
        env = os.environ.get("CORTEX_REINDEX_WORKERS", "").strip()
        if env.isdigit():
            workers = int(env)
        else:
            workers = min(os.cpu_count() or 1, 4) if n_paths >= PARALLEL_FROM else 1
    return max(1, int(workers))


class _Stager:
    """Runs _stage_chunk over the chunks (in worker processes when workers > 1: they start here, before
    the caller opens the index, so no SQLite handle is inherited), then _sort_stage over the staging
    files.  If workers cannot be started, this process does the work itself."""

    def __init__(self, paths: list, workers: int, stage_dir: str):
        self.stage_dir = stage_dir
        self.jobs = [(stage_dir, i, paths[i:i + REINDEX_CHUNK]) for i in range(0, len(paths), REINDEX_CHUNK)]
        self.pool, self.results = None, None
        if workers > 1 and len(self.jobs) > 1:
            try:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor
                methods = multiprocessing.get_all_start_methods()
                ctx = multiprocessing.get_context("fork" if "fork" in methods and sys.platform.startswith("linux")
                                                  else "spawn")
                self.pool = ProcessPoolExecutor(max_workers=min(workers, len(self.jobs)), mp_context=ctx)
                self.results = self.pool.map(_stage_chunk, self.jobs)
            except (ImportError, OSError, ValueError, RuntimeError):
                self.close()

    def chunks(self):
        """Each chunk's items, in file order."""
        if self.results is not None:
            yield from self.results
        else:
            for job in self.jobs:
                yield _stage_chunk(job)
            _close_stage()

    def sorted_files(self) -> list:
        import glob
        files = sorted(glob.glob(os.path.join(self.stage_dir, "stage-*.sqlite")))
        if self.pool is not None and len(files) > 1:
            return list(self.pool.map(_sort_stage, files))
        return [_sort_stage(f) for f in files]

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool, self.results = None, None


def reindex(home, cfg, progress=None, log=None, workers=None) -> dict:
    """Rebuild the index from records/ alone, in one transaction (readers see old or new, never half).
    Unreadable record files are reported and skipped, never rewritten.  A record id found in two files
    is indexed from the later one (in file order), as one upsert after another would.

    Built for size (see the comment above): the files are read in worker processes (`workers`,
    default up to 4 when there are at least PARALLEL_FROM files, one process below that; the
    environment variable CORTEX_REINDEX_WORKERS overrides), each staging and sorting what it read;
    the index is filled from the staging files with a few INSERT ... SELECT statements, and the
    postings(id), terms(df) and sessions(id) indexes are built once at the end."""
    import shutil
    import tempfile
    paths = list(records_mod.iter_paths(home.records))
    os.makedirs(os.path.dirname(home.index_db), mode=0o700, exist_ok=True)
    stage_dir = tempfile.mkdtemp(prefix=".reindex-", dir=os.path.dirname(home.index_db))
    stager = _Stager(paths, _workers(len(paths), workers), stage_dir)
    bad, scopes, losers = [], set(), []
    idx = None
    try:
        seen = {}
        done = 0
        for items in stager.chunks():
            for item in items:
                if item[0] == "bad":
                    bad.append((item[2], item[3]))
                    if log:
                        log.warning("record_unreadable", path=item[2], error=item[3])
                    continue
                _, seq, rid, scope_id = item
                if rid in seen:  # the same id in two files: the later file wins, as upsert would have it
                    losers.append((rid, seen[rid]))
                seen[rid] = seq
                scopes.add(scope_id)
            before = done
            done += len(items)
            if progress and (done // 500 != before // 500 or done == len(paths)):
                progress(done, len(paths))
        files = stager.sorted_files()
        stager.close()
        idx = Index(home.index_db, migrate=False)  # an older index's postings are rebuilt below, not migrated
        con = idx.con
        con.execute("PRAGMA cache_size=-65536")  # 64 MiB for this rebuild's connection
        names = []
        for i, f in enumerate(files):
            con.execute("ATTACH DATABASE ? AS stage%d" % i, (f,))
            names.append("stage%d" % i)
        con.execute("BEGIN IMMEDIATE")
        for name in ("postings_id", "terms_df", "sessions_id", "records_hit"):
            con.execute("DROP INDEX IF EXISTS %s" % name)
        if not has_postings_dl(con):
            con.execute("DROP TABLE main.postings")
            con.execute(POSTINGS_DDL)
        for table in ("records", "postings", "terms", "sessions", "candidates", "candidates_ranked", "meta"):
            con.execute("DELETE FROM main.%s" % table)
        for rid, seq in losers:
            for name in names:
                for table in ("st_records", "st_postings", "st_sessions"):
                    con.execute("DELETE FROM %s.%s WHERE id=? AND seq=?" % (name, table), (rid, seq))
        if names:
            def union(table, cols):
                return " UNION ALL ".join("SELECT %s FROM %s.%s" % (cols, n, table) for n in names)
            con.execute("INSERT INTO main.records(%s) SELECT %s FROM (%s) ORDER BY seq"
                        % (_RECORD_COLS, _RECORD_COLS, union("st_records", "seq, " + _RECORD_COLS)))
            con.execute("INSERT INTO main.postings(term, dl, tf, id) %s ORDER BY 1, 2, 3, 4"
                        % union("st_postings", "term, dl, tf, id"))
            con.execute("INSERT OR IGNORE INTO main.sessions(session, id) %s" % union("st_sessions", "session, id"))
        con.execute("INSERT INTO main.terms SELECT term, COUNT(*) FROM main.postings GROUP BY term")
        con.execute("CREATE INDEX IF NOT EXISTS main.postings_id ON postings(id)")
        con.execute("CREATE INDEX IF NOT EXISTS main.terms_df ON terms(df)")
        con.execute("CREATE INDEX IF NOT EXISTS main.sessions_id ON sessions(id)")
        con.execute("CREATE INDEX IF NOT EXISTS main.records_hit ON records(id, doclen, scope, scope_id, type, status)")
        idx.stats_changed = True  # filled above without upserts: finish must count everything
        idx.finish(built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        _note_stemmer(idx)
        now = time.time()
        for scope_id in sorted(scopes):
            compute_candidates(idx, cfg, scope_id, now=now)
        idx.commit()
        for name in names:
            con.execute("DETACH DATABASE %s" % name)
        # the rebuild deleted every old row: its WAL (the size of the index) holds their text; and
        # `wal_not_truncated` above sends people here
        idx.truncate_wal()
    except BaseException:
        if idx is not None:
            try:
                idx.con.rollback()
            except Exception:
                pass
        raise
    finally:
        stager.close()
        _close_stage()
        if idx is not None:
            idx.close()
        shutil.rmtree(stage_dir, ignore_errors=True)
    ep = reindex_passages(home, log)  # episodes/: their passages, from the files alone
    return {"records": len(paths) - len(bad), "unreadable": bad + ep["unreadable"], "passages": ep["passages"]}
