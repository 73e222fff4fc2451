"""Helpers shared by the reliability tests: subprocess runs (with peak RSS), inbox and record inspection,
index dumps, file-tree snapshots, and the figures each test reports.

Everything Cortex-specific goes through its public surface: the scripts in bin/, the Cortex home's files,
and the library calls the docs name (`cortex.ingest.run.run`, `cortex.brief.session_start.build`, ...).
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from cortex_testkit import (BIN, FIXTURES, REPO, TRANSCRIPTS, clean_env, copy_fixture,  # noqa: F401
                            drop_event, events_in, hook_payload, make_home, names, run_bin)

from cortex.core.home import Home

INDEX_TABLES = ("records", "postings", "terms", "sessions")


# ----------------------------------------------------------------------------------------- figures

def env_int(name: str, default: int) -> int:
    try:
        return max(int(os.environ.get(name, "") or default), 0)
    except ValueError:
        return default


def report(test: str, **figures) -> None:
    """Print a test's figures (visible with -s) and, when CORTEX_RELIABILITY_FIGURES names a file, append
    them there as one JSON line, so a whole run's figures can be collected."""
    print("\n[reliability] %s: %s" % (test, ", ".join("%s=%s" % kv for kv in figures.items())))
    out = os.environ.get("CORTEX_RELIABILITY_FIGURES")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": test, **figures}, default=str) + "\n")


# ----------------------------------------------------------------------------------------- processes

def script(name: str, *args) -> list:
    return [sys.executable, str(BIN / name), *args]


def env_for(home, **extra) -> dict:
    return clean_env(home, **extra)


def run_measured(cmd, env, stdin: bytes = b"", timeout: float = 300, preexec_fn=None, cwd=None):
    """Run a command to its end; returns (returncode, stdout, stderr, peak RSS in MiB, wall seconds).

    The peak RSS is the child's own: on Linux its VmHWM, read from /proc while it runs (the high-water mark
    of its own address space), because the wait4 figure also carries the peak of the process that forked it
    (Linux keeps it across fork and exec), which made a big pytest process fail a small hook's bound;
    elsewhere the wait4 figure."""
    import tempfile
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        fin.write(stdin)
        fin.seek(0)
        p = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=ferr, env=env, cwd=cwd, preexec_fn=preexec_fn)
        deadline = t0 + timeout
        hwm = 0
        while True:
            hwm = max(hwm, _vm_hwm_kib(p.pid))
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        fout.seek(0)
        ferr.seek(0)
        rss_mib = ru.ru_maxrss / 1024.0 if sys.platform != "darwin" else ru.ru_maxrss / 1048576.0
        if hwm:
            rss_mib = hwm / 1024.0
        return p.returncode, fout.read(), ferr.read(), rss_mib, wall


def _vm_hwm_kib(pid: int) -> int:
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def hook(home, payload, kind: str = "stop", client: str = "claude-code", env=None, timeout: float = 60):
    """Run the real capture hook (bin/cortex-stop or bin/cortex-pre-compact) with this payload on stdin."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    name = "cortex-stop" if kind == "stop" else "cortex-pre-compact"
    args = ("--client", client) if client else ()
    return run_bin(name, *args, stdin=raw, home=home, env=env, timeout=timeout)


def normalize_bin(home, env=None, timeout: float = 300):
    return run_bin("cortex-normalize", home=home, env=env, timeout=timeout)


def cortex_cli(home, *args, stdin: bytes = b"", env=None, timeout: float = 120):
    return run_bin("cortex", *args, stdin=stdin, home=home, env=env, timeout=timeout)


# ----------------------------------------------------------------------------------------- inbox

def event_names(home, state: str) -> list:
    return events_in(home, state)


def all_event_names(home) -> dict:
    return {s: event_names(home, s) for s in ("tmp", "pending", "claimed", "done", "failed")}


def reason_of(home, name: str) -> str:
    return Path(home.inbox_dir("failed"), name + ".reason.txt").read_text(encoding="utf-8")


def copy_events(src: Home, dst: Home) -> list:
    """Put src's pending events (same names, same bytes) and its blobs (hard links) into dst's inbox."""
    dst.ensure()
    out = []
    for name in names(src, "pending"):
        data = Path(src.inbox_dir("pending"), name).read_bytes()
        Path(dst.inbox_dir("pending"), name).write_bytes(data)
        os.chmod(os.path.join(dst.inbox_dir("pending"), name), 0o600)
        out.append(name)
    if os.path.isdir(src.blobs):
        for name in os.listdir(src.blobs):
            target = os.path.join(dst.blobs, name)
            if not os.path.exists(target):
                os.link(os.path.join(src.blobs, name), target)
    return sorted(out)


# ----------------------------------------------------------------------------------------- records

def record_files(home) -> dict:
    """{relative path: bytes} of the record files (hidden temp files are not records)."""
    out = {}
    root = Path(home.records)
    if not root.exists():
        return out
    for p in sorted(root.rglob("*.md")):
        if p.is_file() and not p.name.startswith("."):
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def stray_temp_files(home) -> list:
    """Hidden temp files an interrupted atomic write left behind (anywhere in the home)."""
    out = []
    for dirpath, _dirs, files in os.walk(home.root):
        for n in files:
            if n.startswith(".") and n.endswith(".tmp"):
                out.append(os.path.join(dirpath, n))
    return out


def check_records_parse(home) -> tuple:
    """(number of record files, [(path, problem)]) : every records/**/*.md must parse as a whole record."""
    from cortex.store import records
    n, bad = 0, []
    for path in records.iter_paths(home.records):
        n += 1
        try:
            rec = records.read(path)
            if not rec.get("id") or "text" not in rec:
                bad.append((path, "parsed without id/text"))
        except FileNotFoundError:
            n -= 1  # gone between the listing and the read: not a half-written file
        except Exception as e:  # noqa: BLE001 - any failure is what we look for
            bad.append((path, "%s: %s" % (type(e).__name__, e)))
    return n, bad


# ----------------------------------------------------------------------------------------- index

def ro_connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5.0)


def search_content(home) -> dict:
    """What the search engine holds, comparable between homes (cortex.store.search.content)."""
    from cortex.store import search
    return search.content(home.index_db)


def search_vocabulary(home) -> str:
    """Every term in the search engine's dictionaries (deleted documents' included), one per line: the engine
    keeps no text, only terms, and a secret or a forgotten record must leave none of its own."""
    from cortex.store import search
    words = []
    for kind in search.KINDS:
        if os.path.isdir(search.folder(home.index_db, kind)):
            try:
                words += search.Reader(home.index_db, kind).vocabulary() or []
            except search.SearchUnavailable:
                pass
    return "\n".join(words)


def index_tables(home, tables=INDEX_TABLES) -> dict:
    """{table: sorted rows} with the home's own path replaced by '<HOME>' (record paths differ per home), and
    under "search" what the search engine holds (search_content)."""
    if not os.path.exists(home.index_db):
        return dict({t: [] for t in tables}, search=None)
    con = ro_connect(home.index_db)
    try:
        out = {}
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for t in tables:
            rows = []
            if t not in have:  # an index file the normalizer could not even create its tables in
                out[t] = rows
                continue
            for row in con.execute("SELECT * FROM %s" % t):
                rows.append(tuple(v.replace(home.root, "<HOME>") if isinstance(v, str) else v for v in row))
            out[t] = sorted(rows, key=repr)
    finally:
        con.close()
    out["search"] = search_content(home)
    return out


def db_text(path: str) -> str:
    """Every value of every table of an SQLite file, as one string (to search for leaked text)."""
    if not os.path.exists(path):
        return ""
    con = ro_connect(path)
    try:
        parts = []
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            for row in con.execute('SELECT * FROM "%s"' % t):
                parts.extend(str(v) for v in row)
        return "\n".join(parts)
    finally:
        con.close()


def db_raw_bytes(path: str) -> bytes:
    """The SQLite file and its WAL, as bytes (deleted rows can survive in free pages)."""
    out = b""
    for suffix in ("", "-wal", "-journal"):
        p = path + suffix
        if os.path.exists(p):
            out += Path(p).read_bytes()
    return out


# ----------------------------------------------------------------------------------------- trees

def snapshot(root, exclude=()) -> dict:
    """{path: (kind, size, mtime_ns, mode, sha1 of content)} of everything under root (links not followed),
    except the excluded subtrees."""
    root = str(root)
    excl = [os.path.abspath(e) for e in exclude]
    out = {}
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if os.path.abspath(os.path.join(dirpath, d)) not in excl]
        for n in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, n)
            if os.path.abspath(p) in excl:
                continue
            st = os.lstat(p)
            if os.path.islink(p):
                out[p] = ("link", os.readlink(p), st.st_mtime_ns, st.st_mode, None)
                continue
            digest = None
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    digest = hashlib.sha1(f.read()).hexdigest()
            out[p] = ("file", st.st_size, st.st_mtime_ns, st.st_mode, digest)
    return out


def diff_snapshots(before: dict, after: dict) -> list:
    changes = []
    for p in sorted(set(before) | set(after)):
        if p not in before:
            changes.append(("created", p))
        elif p not in after:
            changes.append(("deleted", p))
        elif before[p] != after[p]:
            changes.append(("changed", p))
    return changes


def read_log(home) -> str:
    try:
        return Path(home.log_file).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
