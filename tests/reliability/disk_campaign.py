"""A full disk on a real small filesystem: the campaign behind issue #18's "full disk" guarantee.

Each run mounts a fresh filesystem (tmpfs, or ext4 on a loop device) at one fixed mount point, puts the
Cortex home in it, and then does what a user's machine does:

  1. (warm runs) the hooks of the first sessions and a normalizer run with room: a home that has records,
     episodes and an index already, so the full disk later hits an index *update*, not its creation;
  2. a filler file takes all the space but `free` bytes (fallocate; statvfs says what is left);
  3. the capture hooks of the other sessions (bin/cortex-stop with the real payloads: must exit 0, silent),
     `cortex-normalize`, and `cortex-session-start` in every project (must exit 0, no stderr);
  4. the filler is deleted (the user frees space), each session whose stop the full disk refused gets its
     next stop (the hook again), `cortex-normalize` reruns and session start runs again.

Checked at step 3 and 4: the index passes `PRAGMA integrity_check`; no event lost (an event file that landed in
pending/ is afterwards in pending/, claimed/ or done/; none in failed/); and after step 4 the record files,
episode files, cursors and index tables (home path masked; not build times or candidates) are byte-identical
to a reference run of the same steps with no filler on the same mount point.

Transcripts are laid out two ways: `link`, in the same filesystem as the home (the hook hard-links them:
a full disk does not stop it), and `copy`, on another filesystem (the hook copies each into the home, so
capture itself fills the disk).  Fixture timestamps are shifted once per campaign, so every run reads the
same bytes.

Run as root (mount needs it):

    python tests/reliability/disk_campaign.py --fs tmpfs,ext4 --runs 50 --out figures.json

`tests/reliability/test_full_disk_mounts.py` runs it (slow; skipped when mounting is not permitted).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if "cortex_testkit" not in sys.modules:  # run as a script: load the test kit the way pytest does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import conftest  # noqa: F401  (registers cortex_testkit)

from cortex_testkit import BIN, TRANSCRIPTS, clean_env, copy_fixture, hook_payload  # noqa: E402

# 8 sessions of 3 clients: small and large transcripts (2.6 MB), subagent files, a Gemini document
SESSIONS = ("cc-1.0.108", "cc-2.0.64", "cc-2.1.4", "codex-0.125", "cc-2.0.76", "codex-0.104-small", "codex-0.77",
            "gemini")
TAGGED = 4        # and this many sessions of tagged notes (`[MEMORY: ...]`), TAGGED_NOTES each: a bigger index
TAGGED_NOTES = 40
WARM = 6  # warm runs: these first sessions are normalized with room before the disk fills
FILLER = "filler.bin"
KiB = 1024
MiB = 1024 * KiB


# ----------------------------------------------------------------------------------------- mounts

def can_mount(kind: str) -> str:
    """'' when a filesystem of this kind can be mounted here, else why not."""
    if os.name != "posix" or not sys.platform.startswith("linux"):
        return "not Linux"
    if os.geteuid() != 0:
        return "mounting needs root"
    for tool in ("mount", "umount") + (("mkfs.ext4",) if kind == "ext4" else ()):
        if not shutil.which(tool):
            return "no %s" % tool
    d = tempfile.mkdtemp(prefix="cortex-mount-probe-")
    img = d + ".img"
    try:
        try:
            _mount(kind, d, 4 * MiB, img)
        except (OSError, subprocess.CalledProcessError) as e:
            return "cannot mount %s: %s" % (kind, getattr(e, "stderr", b"") or e)
        _umount(d)
        return ""
    finally:
        shutil.rmtree(d, ignore_errors=True)
        if os.path.exists(img):
            os.unlink(img)


def _mount(kind: str, mnt: str, size: int, img: str):
    os.makedirs(mnt, exist_ok=True)
    if kind == "tmpfs":
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk,mode=0700" % (size // KiB), "tmpfs", mnt],
                       check=True, capture_output=True)
    elif kind == "ext4":
        with open(img, "wb") as f:
            f.truncate(size)
        # -m 0: no blocks reserved for root (the campaign runs as root; a user's disk is full at 0 free)
        r = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", img], capture_output=True)
        if r.returncode:
            raise OSError("mkfs.ext4: %s" % r.stderr.decode(errors="replace").strip())
        subprocess.run(["mount", "-o", "loop", img, mnt], check=True, capture_output=True)
    else:
        raise ValueError(kind)
    os.chmod(mnt, 0o755)


def _umount(mnt: str):
    for _ in range(50):
        r = subprocess.run(["umount", mnt], capture_output=True)
        if r.returncode == 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", mnt], capture_output=True)


def free_bytes(path: str) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(mnt: str, leave: int) -> int:
    """A filler file taking every free byte of mnt but `leave`; returns what statvfs says is free after
    (ext4 spends blocks on the filler's extents too: the file is grown in halving steps, and cut back when
    it overshot)."""
    import errno
    path = os.path.join(mnt, FILLER)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        size = 0
        for _ in range(200):
            need = free_bytes(mnt) - leave
            if need == 0:
                break
            if need < 0:
                if size == 0:
                    break
                size = max(size + need, 0)
                os.ftruncate(fd, size)
                continue
            step = need
            while step >= 512:
                try:
                    os.posix_fallocate(fd, size, step)
                    size += step
                    break
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    step //= 2
            else:
                break
    finally:
        os.close(fd)
    return free_bytes(mnt)


# ----------------------------------------------------------------------------------------- inspection

def events(home: str) -> dict:
    out = {}
    for state in ("tmp", "pending", "claimed", "done", "failed"):
        try:
            out[state] = sorted(n for n in os.listdir(os.path.join(home, "inbox", state))
                                if n.endswith(".json") and not n.startswith("."))
        except FileNotFoundError:
            out[state] = []
    return out


def failed_reasons(home: str) -> list:
    folder = os.path.join(home, "inbox", "failed")
    out = []
    for n in events(home)["failed"]:
        try:
            out.append(Path(folder, n + ".reason.txt").read_text(errors="replace").splitlines()[0][:160])
        except (OSError, IndexError):
            out.append("(no reason file)")
    return out


def integrity(home: str):
    """`PRAGMA integrity_check` of the index as the disk holds it (the file and its WAL, copied elsewhere
    first: on a full disk SQLite cannot even create the shared-memory file a reader of a WAL index needs)."""
    db = os.path.join(home, "index", "cortex.sqlite")
    if not os.path.exists(db):
        return None
    with tempfile.TemporaryDirectory(prefix="cortex-check-") as d:
        copy = os.path.join(d, "cortex.sqlite")
        for suffix in ("", "-wal"):
            if os.path.exists(db + suffix):
                shutil.copyfile(db + suffix, copy + suffix)
        try:
            con = sqlite3.connect(copy, timeout=10)
            try:
                return "; ".join(r[0] for r in con.execute("PRAGMA integrity_check").fetchall())[:300]
            finally:
                con.close()
        except sqlite3.Error as e:
            return "error: %s" % e


def tree(root: str, suffix: str = ".md") -> dict:
    out = {}
    base = Path(root)
    if base.exists():
        for p in sorted(base.rglob("*" + suffix)):
            if p.is_file() and not p.name.startswith("."):
                out[str(p.relative_to(base))] = p.read_bytes()
    return out


TABLES = ("records", "postings", "terms", "sessions", "passages")


def index_rows(home: str) -> dict:
    db = os.path.join(home, "index", "cortex.sqlite")
    if not os.path.exists(db):
        return {}
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
    try:
        have = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        out = {}
        for t in TABLES:
            if t not in have:
                out[t] = None
                continue
            cols = "*" if t != "passages" else "id, session, anchor, project, client, at, first_turn, last_turn, path"
            rows = [tuple(v.replace(home, "<HOME>") if isinstance(v, str) else v for v in r)
                    for r in con.execute("SELECT %s FROM %s" % (cols, t))]
            out[t] = sorted(rows, key=repr)
        if "candidates" in have:  # the shortlist session start reads: which records, per scope (not the order,
            # which moves with the clock)
            out["shortlist"] = sorted(con.execute("SELECT scope_id, group_concat(id) FROM (SELECT scope_id, id "
                                                  "FROM candidates ORDER BY scope_id, id) GROUP BY scope_id"))
    finally:
        con.close()
    from cortex.store import search
    out["search"] = search.content(db)
    return out


def outcome(home: str) -> dict:
    cursors = None
    try:
        cursors = Path(home, "state", "cursors.json").read_bytes()
    except OSError:
        pass
    return {"records": tree(os.path.join(home, "records")), "episodes": tree(os.path.join(home, "episodes")),
            "cursors": cursors, "index": index_rows(home)}


def differences(got: dict, want: dict) -> list:
    out = []
    for part in ("records", "episodes"):
        g, w = got[part], want[part]
        missing = sorted(set(w) - set(g))
        extra = sorted(set(g) - set(w))
        changed = sorted(k for k in set(g) & set(w) if g[k] != w[k])
        if missing or extra or changed:
            out.append("%s: %d missing, %d extra, %d differ%s" % (part, len(missing), len(extra), len(changed),
                                                                  (" (e.g. %s)" % (changed or missing or extra)[0])))
    if got["cursors"] != want["cursors"]:
        out.append("cursors differ")
    for t in sorted(set(got["index"]) | set(want["index"])):
        if got["index"].get(t) != want["index"].get(t):
            out.append("index table %s differs (%s vs %s rows)" % (
                t, len(got["index"].get(t) or []), len(want["index"].get(t) or [])))
    return out


# ----------------------------------------------------------------------------------------- one run

class Campaign:
    """The fixed places every run uses (the mount point, the transcripts outside it), prepared once."""

    def __init__(self, base: str, python: str = sys.executable):
        self.base = os.path.abspath(base)
        self.mnt = os.path.join(self.base, "mnt")
        self.img = os.path.join(self.base, "disk.img")
        self.python = python
        self.fixtures = os.path.join(self.base, "fixtures")  # shifted once: every run reads the same bytes
        self.outside = os.path.join(self.base, "client")      # the `copy` layout's transcripts (another fs)
        os.makedirs(self.mnt, exist_ok=True)
        os.chmod(self.base, 0o755)
        self.main, self.clients = {}, {}
        for n in SESSIONS:
            p = copy_fixture(n, self.fixtures)
            self.main[n] = os.path.relpath(str(p), self.fixtures)
            self.clients[n] = TRANSCRIPTS[n][2]
        from cortex.bench.scale import transcript
        t0 = time.time() - 3600
        for i in range(TAGGED):  # interleaved with the real sessions: warm and later runs get some of each
            n = "tagged-%d" % i
            folder = os.path.join(self.fixtures, n)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "tagged-%d.jsonl" % i)
            if not os.path.exists(path):
                transcript(path, TAGGED_NOTES, 100 + i, "/srv/tagged/project-%d" % (i % 2), t0 + 600 * i)
            self.main[n] = os.path.relpath(path, self.fixtures)
            self.clients[n] = "claude-code"
        self.order = [n for pair in zip(SESSIONS, sorted(k for k in self.main if k.startswith("tagged-")) + [None] * 8)
                      for n in pair if n]
        if not os.path.isdir(self.outside):
            shutil.copytree(self.fixtures, self.outside)
        self.references = {}
        self.keep = None
        self.attempts = 1
        self.reindex = False
        self.readers = False
        self.count = 0
        self.trace = False

    def client_dir(self, layout: str) -> str:
        return os.path.join(self.mnt, "client") if layout == "link" else self.outside

    def payloads(self, layout: str) -> list:
        out = []
        for n in self.order:
            client = self.clients[n]
            out.append((n, client, hook_payload(os.path.join(self.client_dir(layout), self.main[n]), client)))
        return out

    def _run(self, cmd, env, stdin=b"", timeout=300):
        t0 = time.monotonic()
        p = subprocess.run(cmd, input=stdin, capture_output=True, env=env, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0

    def hook(self, env, client, payload):
        return self._run([self.python, str(BIN / "cortex-stop"), "--client", client], env,
                         json.dumps(payload).encode())

    def normalize(self, env):
        if self.trace:  # for debugging: the traceback of a failed run
            code = ("import sys, traceback; sys.path.insert(0, %r)\nfrom cortex.ingest.run import run\n"
                    "from cortex.core.home import Home\ntry:\n    run(Home())\nexcept BaseException:\n"
                    "    traceback.print_exc(); sys.exit(1)" % str(BIN.parent))
            return self._run([self.python, "-c", code], env)
        return self._run([self.python, str(BIN / "cortex-normalize"), "--quiet"], env)

    def session_start(self, env, cwd):
        return self._run([self.python, str(BIN / "cortex-session-start"), "--cwd", cwd], env)

    def start_readers(self, env, cwds, fig):
        """Session starts and prompts in a loop while the normalizer works (readers of the index on the
        full disk); their exits join the figures.  Returns the event that stops them."""
        import threading
        stop = threading.Event()

        def loop():
            i = 0
            while not stop.is_set() and cwds:
                cwd = cwds[i % len(cwds)]
                if i % 2:
                    rc, out, err, _s = self._run([self.python, str(BIN / "cortex-prompt")], env, json.dumps(
                        {"prompt": "why did the tests fail after the cache change", "cwd": cwd}).encode())
                else:
                    rc, out, err, _s = self.session_start(env, cwd)
                fig["session_start_exits"].append(rc)
                fig["session_start_output_err"] += len(err)
                i += 1
            fig["reader_runs"] = i
        stop.thread = threading.Thread(target=loop, daemon=True)
        stop.thread.start()
        return stop

    def one(self, fs: str, size: int, free, layout: str = "link", warm: bool = True) -> dict:
        """One run; free=None is the reference (no filler).  Returns its figures and, for a reference,
        its outcome."""
        self.count += 1
        img = "%s.%d" % (self.img, self.count)  # a new name: a loop device lets go of the last one lazily
        _mount(fs, self.mnt, size, img)
        try:
            return self._one(fs, size, free, layout, warm)
        finally:
            _umount(self.mnt)
            if os.path.exists(img):
                os.unlink(img)

    def _one(self, fs, size, free, layout, warm) -> dict:
        home = os.path.join(self.mnt, "home")
        env = clean_env(home)
        if layout == "link":
            shutil.copytree(self.fixtures, self.client_dir(layout))
        pays = self.payloads(layout)
        cwds = sorted({p["cwd"] for _, _, p in pays if p.get("cwd")})
        fig = {"fs": fs, "size": size, "free": free, "layout": layout, "warm": warm, "hook_exits": [],
               "hook_output": 0, "session_start_exits": [], "session_start_output_err": 0}
        landed = []  # events that reached pending/ (accepted by a hook)

        def stop(items):
            refused = []
            for n, client, payload in items:
                before = set(events(home)["pending"])
                rc, out, err, secs = self.hook(env, client, payload)
                fig["hook_exits"].append(rc)
                fig["hook_output"] += len(out) + len(err)
                new = set(events(home)["pending"]) - before
                landed.extend(new)
                if not new:
                    refused.append((n, client, payload))
            return refused

        first = pays[:WARM] if warm else []
        if first:
            stop(first)
            rc, _o, err, _s = self.normalize(env)
            fig["warm_normalize_exit"] = rc
        if free is not None:
            fig["free_actual"] = fill(self.mnt, free)
        refused = stop(pays[len(first):])
        fig["captures_refused"] = len(refused)
        fig["normalize_exits"] = []
        readers = self.start_readers(env, cwds, fig) if self.readers else None
        for i in range(self.attempts):  # the timer fires again while the disk is still full
            rc, _o, err, secs = self.normalize(env)
            fig["normalize_exits"].append(rc)
            if i == 0:
                fig["normalize_exit"] = rc
                fig["normalize_s"] = round(secs, 2)
                fig["normalize_err"] = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
            fig.setdefault("integrity_between", []).append(integrity(home))
        if self.reindex:  # a person runs `cortex reindex` on the full disk: the old index must survive a failure
            rc, _o, err, secs = self._run([self.python, str(BIN / "cortex"), "reindex"], env)
            fig["reindex_exit"] = rc
            fig["reindex_err"] = err.decode(errors="replace").strip().splitlines()[-3:] if rc else []
            fig.setdefault("integrity_between", []).append(integrity(home))
        if readers is not None:
            readers.set()
            readers.thread.join()
        blocks = 0
        for cwd in cwds:
            rc, out, err, _s = self.session_start(env, cwd)
            fig["session_start_exits"].append(rc)
            fig["session_start_output_err"] += len(err)
            blocks += b"cortex-memory" in out
        fig["blocks_full"] = blocks
        ev = events(home)
        fig["full"] = {"events": {k: len(v) for k, v in ev.items()}, "integrity": integrity(home),
                       "failed": failed_reasons(home)}
        if self.keep:  # for debugging: the home as the full disk left it
            shutil.rmtree(self.keep, ignore_errors=True)
            shutil.copytree(home, self.keep, symlinks=True)
        # the user frees space; the sessions whose stop was refused stop again
        if os.path.exists(os.path.join(self.mnt, FILLER)):
            os.unlink(os.path.join(self.mnt, FILLER))
        stop(refused)
        rc, _o, err, secs = self.normalize(env)
        fig["rerun_exit"] = rc
        fig["rerun_err"] = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
        blocks = 0
        for cwd in cwds:
            rc, out, err, _s = self.session_start(env, cwd)
            fig["session_start_exits"].append(rc)
            fig["session_start_output_err"] += len(err)
            blocks += b"cortex-memory" in out
        fig["blocks_after"] = blocks
        ev = events(home)
        fig["after"] = {"events": {k: len(v) for k, v in ev.items()}, "integrity": integrity(home),
                        "failed": failed_reasons(home)}
        kept = set(ev["pending"]) | set(ev["claimed"]) | set(ev["done"])
        fig["events_landed"] = len(landed)
        fig["events_lost"] = len([n for n in landed if n not in kept])
        got = outcome(home)
        fig["records"] = len(got["records"])
        got["blocks"] = blocks
        if free is None:
            fig["outcome"] = got
        else:
            want = self.reference(fs, layout, warm)
            fig["differences"] = differences(got, want)
            if blocks != want["blocks"]:
                fig["differences"].append("session start printed %d blocks, %d in the roomy run" % (
                    blocks, want["blocks"]))
        return fig

    def reference(self, fs: str, layout: str, warm: bool) -> dict:
        key = (fs, layout, warm)
        if key not in self.references:
            fig = self.one(fs, 64 * MiB, None, layout, warm)
            self.references[key] = fig.pop("outcome")
        return self.references[key]


def verdict(fig: dict) -> list:
    """What is wrong with one run (empty: nothing)."""
    bad = []
    if any(rc != 0 for rc in fig["hook_exits"]) or fig["hook_output"]:
        bad.append("hook exit/output %s/%d" % (fig["hook_exits"], fig["hook_output"]))
    if any(rc != 0 for rc in fig["session_start_exits"]) or fig["session_start_output_err"]:
        bad.append("session start exit/stderr %s/%d" % (fig["session_start_exits"], fig["session_start_output_err"]))
    bad += ["index while full: %s" % i for i in fig.get("integrity_between", ()) if i not in (None, "ok")]
    for when in ("full", "after"):
        if fig[when]["integrity"] not in (None, "ok"):
            bad.append("%s: index %s" % (when, fig[when]["integrity"]))
        if fig[when]["failed"]:
            bad.append("%s: failed %s" % (when, fig[when]["failed"][:2]))
    if fig["events_lost"]:
        bad.append("%d events lost" % fig["events_lost"])
    if fig["rerun_exit"] != 0:
        bad.append("rerun exit %s %s" % (fig["rerun_exit"], fig["rerun_err"]))
    if fig.get("differences"):
        bad.append("rerun differs: %s" % "; ".join(fig["differences"][:4]))
    return bad


# 0 B to 5 MiB free: capture (event files, blob copies), records, episodes, the index's creation and its
# update, its WAL, FTS passages and the log all meet the full disk somewhere in this range
FREE_SIZES = (0, 4 * KiB, 16 * KiB, 48 * KiB, 96 * KiB, 160 * KiB, 256 * KiB, 384 * KiB, 512 * KiB, 768 * KiB,
              1 * MiB, 1536 * KiB, 2 * MiB, 3 * MiB, 4 * MiB, 5 * MiB)


def plan(fss, runs: int) -> list:
    """`runs` runs spread over the filesystems, free sizes, layouts and warm/cold homes."""
    combos = []
    for i, free in enumerate(FREE_SIZES):
        for j, fs in enumerate(fss):
            layout = ("link", "copy")[(i + j) % 2]
            warm = (i // 2 + j) % 2 == 0
            combos.append((fs, free, layout, warm))
    out = []
    k = 0
    while len(out) < runs:
        fs, free, layout, warm = combos[k % len(combos)]
        if k >= len(combos):  # second pass: the other layout and warmth
            layout, warm = ("copy" if layout == "link" else "link"), not warm
        out.append((fs, free, layout, warm))
        k += 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fs", default="tmpfs,ext4")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--free", default="", help="comma-separated free sizes in bytes (default: the built-in list)")
    ap.add_argument("--layout", default="", help="link or copy (default: both, alternating)")
    ap.add_argument("--base", default="/tmp/cortex-disk-campaign")
    ap.add_argument("--out", default="")
    ap.add_argument("--attempts", type=int, default=1, help="normalizer runs while the disk is full")
    ap.add_argument("--reindex", action="store_true", help="`cortex reindex` too while the disk is full")
    ap.add_argument("--readers", action="store_true", help="session starts and prompts in a loop meanwhile")
    ap.add_argument("--cold", action="store_true", help="only runs whose home is new (the disk fills on the first run)")
    ap.add_argument("--probe", default="", help="print which of these filesystems can be mounted here, and exit")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args(argv)
    if args.probe:
        print(" ".join(fs for fs in args.probe.split(",") if fs and not can_mount(fs)))
        return 0
    fss = [f for f in args.fs.split(",") if f]
    for fs in fss:
        why = can_mount(fs)
        if why:
            print("cannot run on %s: %s" % (fs, why))
            return 2
    if os.path.isdir(args.base):
        subprocess.run(["umount", os.path.join(args.base, "mnt")], capture_output=True)
        shutil.rmtree(args.base)
    camp = Campaign(args.base)
    camp.attempts = args.attempts
    camp.reindex = args.reindex
    camp.readers = args.readers
    runs = plan(fss, args.runs)
    if args.free:
        frees = [int(x) for x in args.free.split(",")]
        runs = [(fs, f, ("link", "copy")[i % 2], i % 4 < 2)
                for i, (fs, f) in enumerate((fs, f) for f in frees for fs in fss)][:max(args.runs, 1)]
    runs = [(fs, f, args.layout or layout, warm and not args.cold) for fs, f, layout, warm in runs]
    results = []
    t0 = time.monotonic()
    for fs, free, layout, warm in runs:
        fig = camp.one(fs, 64 * MiB, free, layout, warm)
        fig["problems"] = verdict(fig)
        results.append(fig)
        print("%-5s free=%-8d %-4s %-4s exit=%s/%s records=%d refused=%d blocks=%d/%d full=%s %s" % (
            fs, free, layout, "warm" if warm else "cold", fig["normalize_exit"], fig["rerun_exit"], fig["records"],
            fig["captures_refused"], fig["blocks_full"], fig["blocks_after"], fig["full"]["events"], "OK" if not fig["problems"] else fig["problems"]),
            flush=True)
        if args.v and fig["normalize_err"]:
            print("      ", fig["normalize_err"])
    summary = summarize(results)
    summary["wall_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(summary, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"summary": summary, "runs": results}, f, indent=1, default=str)
    return 0 if not summary["bad_runs"] else 1


def summarize(results: list) -> dict:
    per = {}
    for r in results:
        per.setdefault(r["fs"], []).append(r["free"])
    return {
        "runs": len(results),
        "runs_per_fs": {k: len(v) for k, v in per.items()},
        "free_sizes": sorted({r["free"] for r in results}),
        "corrupt_indexes": sum(1 for r in results for w in ("full", "after")
                               if r[w]["integrity"] not in (None, "ok")),
        "events_landed": sum(r["events_landed"] for r in results),
        "events_lost": sum(r["events_lost"] for r in results),
        "events_failed": sum(r["after"]["events"]["failed"] for r in results),
        "captures_refused_then_retaken": sum(r["captures_refused"] for r in results),
        "hook_runs": sum(len(r["hook_exits"]) for r in results),
        "hook_exits_nonzero": sum(1 for r in results for rc in r["hook_exits"] if rc != 0),
        "session_start_runs": sum(len(r["session_start_exits"]) for r in results),
        "session_start_exits_nonzero": sum(1 for r in results for rc in r["session_start_exits"] if rc != 0),
        "normalize_exit_1_on_full_disk": sum(1 for r in results if r["normalize_exit"] == 1),
        "reindex_on_full_disk_exit_1": sum(1 for r in results if r.get("reindex_exit") == 1),
        "reindex_tracebacks": sum(1 for r in results if any("Traceback" in x or x.startswith(" ")
                                                             for x in r.get("reindex_err") or ())),
        "normalize_tracebacks": sum(1 for r in results if any("Traceback" in x or "Error:" in x.split(" ")[0]
                                                               for x in r.get("normalize_err") or ())),
        "blocks_while_full": sum(r["blocks_full"] for r in results),
        "blocks_after": sum(r["blocks_after"] for r in results),
        "reruns_identical": sum(1 for r in results if not r.get("differences")),
        "bad_runs": [(r["fs"], r["free"], r["layout"], r["warm"], r["problems"]) for r in results if r["problems"]],
    }


if __name__ == "__main__":
    sys.exit(main())
