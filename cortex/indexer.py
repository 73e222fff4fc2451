"""Keeping the index in step with the record files (normalizer side; may import heavy things)."""
import json
import os
import sys
import time

from . import records as records_mod
from .index import Index, activation_times


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
    Otherwise, and at least hourly, the whole scope is ranked again."""
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
    from .rank import order
    ranked = order(recs, now, cfg)
    limit = int(cfg["session_start"]["candidates_per_scope"])
    keep = [r["id"] for r in ranked[:limit]]
    # the newest plan of the scope is always a candidate: it is what "where you left off" shows
    # (the 3 newest plans or progress notes: 3 per type from the records_scope_type index, merged)
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
    from .textproc import stemmer_name
    idx.con.execute("INSERT OR REPLACE INTO meta VALUES('stemmer', ?)", (stemmer_name(),))


def stemmer_mismatch(home) -> str:
    """A one-line warning when the index was built with another stemmer than the one loaded now."""
    from .index import connect, read_meta
    from .textproc import stemmer_name
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


def update_index(home, cfg, changed_ids, touched_scopes):
    from .textproc import tokenize
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
    finally:
        idx.close()


# -- fast schema check ---------------------------------------------------------------------------

class _Unsupported(Exception):
    pass


_IGNORED = {"description", "title", "$schema", "$id", "$comment", "default", "examples"}
_TYPE_EXPR = {"string": "isinstance({v}, str)",
              "number": "(isinstance({v}, (int, float)) and not isinstance({v}, bool))",
              "integer": "type({v}) is int",
              "boolean": "isinstance({v}, bool)",
              "null": "{v} is None",
              "object": "isinstance({v}, dict)",
              "array": "isinstance({v}, list)"}
_MISSING = object()


def _compile(schema: dict):
    """A function value -> bool for the subset of JSON Schema the record schema uses (type, enum, pattern,
    minLength, minimum, maximum, required, properties, additionalProperties, items, minItems), generated
    as straight-line Python.  It is *sound*: True only when jsonschema would find no error (it is stricter
    where that is simpler: an "integer" must be an int).  When it says False the caller asks jsonschema,
    so results never differ.  Any other keyword raises _Unsupported (and jsonschema does all the work)."""
    import re
    consts = {"_MISSING": _MISSING}
    lines = ["def check(v0):"]
    depth = [0]

    def const(value):
        name = "_C%d" % len(consts)
        consts[name] = value
        return name

    def gen(sch, v, ind):
        pad = " " * ind
        if not isinstance(sch, dict):
            raise _Unsupported(repr(sch))
        for key, val in sch.items():
            if key in _IGNORED or key in ("properties", "additionalProperties"):
                continue
            if key == "type":
                names = val if isinstance(val, list) else [val]
                try:
                    cond = " or ".join(_TYPE_EXPR[n].format(v=v) for n in names)
                except (KeyError, TypeError):
                    raise _Unsupported("type %r" % (val,))
                lines.append("%sif not (%s): return False" % (pad, cond))
            elif key == "enum":
                if not all(isinstance(e, str) for e in val):
                    raise _Unsupported(key)
                lines.append("%sif not (isinstance(%s, str) and %s in %s): return False" % (pad, v, v,
                                                                                          const(frozenset(val))))
            elif key == "pattern":
                lines.append("%sif isinstance(%s, str) and %s.search(%s) is None: return False"
                             % (pad, v, const(re.compile(val)), v))
            elif key == "minLength":
                lines.append("%sif isinstance(%s, str) and len(%s) < %d: return False" % (pad, v, v, int(val)))
            elif key in ("minimum", "maximum"):
                lines.append("%sif %s and %s %s %s: return False" % (pad, _TYPE_EXPR["number"].format(v=v), v,
                                                                  "<" if key == "minimum" else ">", const(val)))
            elif key == "minItems":
                lines.append("%sif isinstance(%s, list) and len(%s) < %d: return False" % (pad, v, v, int(val)))
            elif key == "required":
                lines.append("%sif isinstance(%s, dict) and not (%s): return False"
                             % (pad, v, " and ".join("%r in %s" % (k, v) for k in val) or "True"))
            elif key == "items":
                depth[0] += 1
                x = "v%d" % depth[0]
                lines.append("%sif isinstance(%s, list):" % (pad, v))
                lines.append("%s    for %s in %s:" % (pad, x, v))
                n = len(lines)
                gen(val, x, ind + 8)
                if len(lines) == n:
                    lines.append("%s        pass" % pad)
            else:
                raise _Unsupported(key)
        props = sch.get("properties") or {}
        extra = sch.get("additionalProperties", True)
        if props or extra is not True:
            lines.append("%sif isinstance(%s, dict):" % (pad, v))
            n0 = len(lines)
            for name, sub in props.items():
                depth[0] += 1
                x = "v%d" % depth[0]
                lines.append("%s    %s = %s.get(%r, _MISSING)" % (pad, x, v, name))
                lines.append("%s    if %s is not _MISSING:" % (pad, x))
                n = len(lines)
                gen(sub, x, ind + 8)
                if len(lines) == n:
                    lines.append("%s        pass" % pad)
            if extra is False:
                lines.append("%s    if any(k not in %s for k in %s): return False" % (pad, const(frozenset(props)), v))
            elif extra is not True:
                depth[0] += 1
                k, x = "k%d" % depth[0], "v%d" % depth[0]
                lines.append("%s    for %s, %s in %s.items():" % (pad, k, x, v))
                lines.append("%s        if %s in %s: continue" % (pad, k, const(frozenset(props))))
                gen(extra, x, ind + 8)
            if len(lines) == n0:
                lines.append("%s    pass" % pad)

    gen(schema, "v0", 4)
    lines.append("    return True")
    ns = dict(consts)
    exec(compile("\n".join(lines), "<record schema check>", "exec"), ns)
    return ns["check"]


_FAST_CHECKS = {}


def fast_check(name: str):
    """The compiled sound check of schemas/<name>.schema.json, or None if it uses keywords it does not handle."""
    if name not in _FAST_CHECKS:
        from .schemas import schema_dir
        try:
            with open(os.path.join(schema_dir(), name + ".schema.json"), encoding="utf-8") as f:
                _FAST_CHECKS[name] = _compile(json.load(f))
        except (_Unsupported, OSError, ValueError, KeyError):
            _FAST_CHECKS[name] = None
    return _FAST_CHECKS[name]


def record_problems(rec) -> list:
    """schemas.validate("record", rec), answered without jsonschema when the fast check passes."""
    check = fast_check("record")
    if check is not None and check(rec):
        return []
    from .schemas import validate
    return validate("record", rec)


# -- fast record reading -----------------------------------------------------------------------------

_FAST = None


def _fast_res():
    global _FAST
    if _FAST is None:
        import re
        # a plain scalar as records.dump may write one: no indicator first, printable, single inner spaces, no
        # character that ends a plain scalar in a flow collection (, [ ] { }) or starts a comment or a key
        odd = r"\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff"
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


def _plain_value(s: str):
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


def fast_parse(text: str):
    """records.parse(text) for the front matter records.dump writes (top-level keys with scalars, flow
    lists of scalars, block lists of flow mappings), without YAML; None when the file holds anything
    else (nested mappings, double quotes, folded lines, ...), and records.parse then reads it.  About
    10x faster; tests check it against records.parse on real and generated records."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 3)
    if end < 0:
        return None
    r = _fast_res()
    front = {}
    lines = text[4:end].split("\n")
    i, n = 0, len(lines)
    while i < n:
        m = r["line"].match(lines[i])
        if not m:
            return None
        key, raw = m.group(1), m.group(2)
        if _scalar(key, r) != key:  # a key YAML reads as a bool or null ("on:", "null:")
            return None
        i += 1
        if raw is None:  # a block sequence follows
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
        v = _flow(raw, r) if raw[:1] in "[{" else _scalar(raw, r)
        if v is _NO:
            return None
        front[key] = v
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
        text = f.read().decode("utf-8")
    if "\r" in text:  # as text mode reads it: universal newlines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    rec = fast_parse(text)
    return rec if rec is not None else records_mod.parse(text, path)


# -- full rebuild ----------------------------------------------------------------------------------

REINDEX_CHUNK = 250
PARALLEL_FROM = 4000  # record files; below this one process is faster than starting workers


def _load_records(paths: list) -> tuple:
    """Read, check and analyse record files.  Returns (items, postings): items in path order, each
    ("ok", records row, sessions, start, end) or ("bad", path, error); postings [(term, id, tf)] of the
    good ones (postings[start:end] are one record's).
    Runs in worker processes for a big rebuild, so it returns plain tuples."""
    from collections import Counter
    from .index import index_text, record_row, record_sessions
    from .textproc import tokenize
    items, postings = [], []
    for path in paths:
        try:
            rec = read_record(path)
            problems = record_problems(rec)
            if problems:
                raise records_mod.RecordError("%s: %s" % (path, problems[0]))
            if os.path.splitext(os.path.basename(path))[0] != rec["id"]:
                raise records_mod.RecordError("%s: file name does not match its id %s" % (path, rec["id"]))
        except (records_mod.RecordError, OSError, UnicodeDecodeError) as e:
            items.append(("bad", path, str(e)))
            continue
        toks = tokenize(index_text(rec))
        sessions = record_sessions(rec)
        rid = rec["id"]
        start = len(postings)
        postings.extend([(t, rid, n) for t, n in Counter(toks).items()])
        items.append(("ok", record_row(rec, path, len(toks), sessions), sessions, start, len(postings)))
    return items, postings


def _workers(n_paths: int, workers) -> int:
    if workers is None:
        env = os.environ.get("CORTEX_REINDEX_WORKERS", "").strip()
        if env.isdigit():
            workers = int(env)
        else:
            workers = min(os.cpu_count() or 1, 4) if n_paths >= PARALLEL_FROM else 1
    return max(1, int(workers))


class _Loader:
    """The results of _load_records over paths, chunk by chunk, in path order.  With workers > 1 the
    chunks are handed to worker processes at once (before the caller opens the database, so no SQLite
    handle is inherited); if workers cannot be started, this process reads them itself."""

    def __init__(self, paths: list, workers: int):
        self.chunks = [paths[i:i + REINDEX_CHUNK] for i in range(0, len(paths), REINDEX_CHUNK)]
        self.pool, self.results = None, None
        if workers > 1 and len(self.chunks) > 1:
            try:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor
                methods = multiprocessing.get_all_start_methods()
                ctx = multiprocessing.get_context("fork" if "fork" in methods and sys.platform.startswith("linux")
                                                  else "spawn")
                self.pool = ProcessPoolExecutor(max_workers=min(workers, len(self.chunks)), mp_context=ctx)
                self.results = self.pool.map(_load_records, self.chunks)
            except (ImportError, OSError, ValueError, RuntimeError):
                self.close()
                self.pool, self.results = None, None

    def __iter__(self):
        if self.results is not None:
            yield from self.results
        else:
            for chunk in self.chunks:
                yield _load_records(chunk)

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def reindex(home, cfg, progress=None, log=None, workers=None) -> dict:
    """Rebuild the index from records/ alone, in one transaction (readers see old or new, never half).
    Unreadable record files are reported and skipped, never rewritten.

    Built for size: record files are read and analysed in worker processes (`workers`, default: up to 4
    when there are more than PARALLEL_FROM files; env CORTEX_REINDEX_WORKERS overrides), rows and
    postings go in with one executemany per chunk, postings are staged unordered and copied once in
    key order, document frequencies come from one GROUP BY, and the postings(id), terms(df) and
    sessions(id) indexes are rebuilt at the end instead of maintained row by row."""
    from .index import INSERT_RECORD
    paths = list(records_mod.iter_paths(home.records))
    loaded = _Loader(paths, _workers(len(paths), workers))  # workers start before the database is opened
    idx = Index(home.index_db)
    bad = []
    scopes = set()
    try:
        con = idx.con
        con.execute("PRAGMA cache_size=-65536")  # 64 MiB for this rebuild's connection
        con.execute("BEGIN IMMEDIATE")
        con.execute("DROP INDEX IF EXISTS postings_id")
        con.execute("DROP INDEX IF EXISTS terms_df")
        con.execute("DROP INDEX IF EXISTS sessions_id")
        for table in ("records", "postings", "terms", "sessions", "candidates", "candidates_ranked", "meta"):
            con.execute("DELETE FROM %s" % table)
        con.execute("CREATE TEMP TABLE IF NOT EXISTS reindex_postings(term TEXT, id TEXT, tf INTEGER)")
        con.execute("DELETE FROM temp.reindex_postings")
        seen = set()
        done = 0
        for items, postings in loaded:
            rows, sess, drop = [], [], []
            in_chunk = {}
            for item in items:
                if item[0] == "bad":
                    bad.append((item[1], item[2]))
                    if log:
                        log.warning("record_unreadable", path=item[1], error=item[2])
                    continue
                _, row, sessions, start, end = item
                rid = row[0]
                if rid in seen:  # the same id in two files: the later file wins, as upsert would have it
                    rows[:] = [r for r in rows if r[0] != rid]
                    sess[:] = [x for x in sess if x[1] != rid]
                    if rid in in_chunk:
                        drop.append(in_chunk[rid])
                    for table in ("records", "temp.reindex_postings", "sessions"):
                        con.execute("DELETE FROM %s WHERE id=?" % table, (rid,))
                seen.add(rid)
                in_chunk[rid] = (start, end)
                rows.append(row)
                sess.extend((x, rid) for x in sessions)
                scopes.add(row[2])
            if drop:
                gone = set(i for a, b in drop for i in range(a, b))
                postings = [p for i, p in enumerate(postings) if i not in gone]
            con.executemany(INSERT_RECORD, rows)
            con.executemany("INSERT INTO temp.reindex_postings VALUES(?,?,?)", postings)
            con.executemany("INSERT OR IGNORE INTO sessions VALUES(?,?)", sess)
            before = done
            done += len(items)
            if progress and (done // 500 != before // 500 or done == len(paths)):
                progress(done, len(paths))
        con.execute("INSERT INTO postings SELECT term, id, tf FROM temp.reindex_postings ORDER BY term, id")
        con.execute("DROP TABLE temp.reindex_postings")
        con.execute("INSERT INTO terms SELECT term, COUNT(*) FROM postings GROUP BY term")
        con.execute("CREATE INDEX IF NOT EXISTS postings_id ON postings(id)")
        con.execute("CREATE INDEX IF NOT EXISTS terms_df ON terms(df)")
        con.execute("CREATE INDEX IF NOT EXISTS sessions_id ON sessions(id)")
        idx.finish(built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        _note_stemmer(idx)
        now = time.time()
        for scope_id in sorted(scopes):
            compute_candidates(idx, cfg, scope_id, now=now)
        idx.commit()
    except BaseException:
        try:
            idx.con.rollback()
        except Exception:
            pass
        raise
    finally:
        idx.close()
        loaded.close()
    return {"records": len(paths) - len(bad), "unreadable": bad}
