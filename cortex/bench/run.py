"""`cortex bench`: the hot paths timed as whole processes beside `python3 -c pass`, measured in the same run.

Builds throw-away homes of N varied records (template sentences about code plus a clause drawn from the
word frequencies of the bundled real transcripts, so every record is different and dedup keeps them
apart), then times whole processes, each case's runs interleaved with runs of `python3 -c pass` so
both see the same machine load:

  cortex-stop / cortex-pre-compact   a 50 MB transcript, 10,000 events already pending
  cortex-session-start               at every size
  cortex-prompt                      (when the command exists)
  cortex recall                      at 10,000 and 100,000 records (when the command exists)
  cortex-normalize, nothing pending
  cortex-normalize throughput        the fixture transcripts replayed as many sessions, MB/s
  cortex reindex                     a full rebuild of the largest home, seconds and peak memory
  rank-bm25 vs the SQLite postings   load a pickled BM25Okapi of the largest home and score one query,
                                     beside the same query through `cortex.store.index.bm25_scores`

Prints medians with min/max, the ratio to the interpreter's own start-up (median/median and
fastest/fastest), peak memory (the max RSS of the measured process itself, from wait4), and each
case's target with whether it is met.  `--json FILE` writes the rows.  `--locomo` runs the LoCoMo
retrieval benchmark instead (`cortex.bench.locomo`), `--devchats` the developer-chat memory benchmark
(`cortex.bench.devchats`), `--quality` the block-quality benchmark on the labeled fixture sessions
(`cortex.bench.quality`).

Only `os`, `sys` and the bench's text lists (`bench.corpus`) are imported at module level, so the CLI
can declare these options cheaply.
"""
import os
import sys

from cortex.bench.corpus import DIRS, NOUNS, TECH, TEMPLATES, VERBS, fake_text, vocabulary  # noqa: F401

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The query the search cases run: a few words a person would type, mixing common and rarer terms.
QUERY = "why did we drop the Redis cache for session tokens"
PROMPT = "The session token cache keeps failing in the parser; why did we drop Redis for it?"

# Targets: (kind, limit).  ratio: median wall time / median `python3 -c pass`;  mbps: MB/s at least;
# seconds and peak_mb: at most.
TARGETS = {
    ("cortex-stop", None): ("ratio", 2.0),
    ("cortex-pre-compact", None): ("ratio", 2.0),
    ("cortex-session-start", 10000): ("ratio", 3.0),
    ("cortex-session-start", 100000): ("ratio", 5.0),
    ("cortex-prompt", 10000): ("ratio", 4.0),
    ("cortex recall", 10000): ("ratio", 5.0),
    ("cortex recall", 100000): ("ratio", 10.0),
    ("cortex-normalize (idle)", None): ("ratio", 3.0),
    ("cortex-normalize throughput", None): ("mbps", 20.0),
    ("cortex reindex", 100000): ("seconds", 30.0),
}
REINDEX_PEAK_MB = 500.0
# Issue #14: the same hot paths in a home that also holds episode passages (100,000 records + 1M passages)
PASSAGE_TARGETS = {"cortex-session-start": ("ratio", 3.0), "cortex-prompt": ("ratio", 4.0),
                   "cortex recall": ("ratio", 5.0)}


def bench_record(rng, i: int, project_id: str, domain: str, now: float, vocab=None) -> dict:
    """A record exactly as RecordStore.upsert creates one (same keys, same order), for the bench homes."""
    import time
    from cortex.store.records import LINE_OVERHEAD_TOKENS, make_id, normalize_text
    types = list(TEMPLATES)
    rtype = types[i % len(types)]
    l1 = rtype == "preference" or i % 10 == 9
    age_s = rng.random() ** 2 * 90 * 86400
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - age_s))
    text = fake_text(rng, rtype, i, vocab)
    scope_id = domain if l1 else project_id
    return {"id": make_id(scope_id, rtype, normalize_text(text)), "scope": "L1" if l1 else "L0",
            "scope_id": scope_id, "project": project_id, "type": rtype, "status": "active",
            "confidence": round(0.5 + rng.random() / 2, 2), "salience": 0.5, "pinned": False, "priority": 0,
            "created": at, "updated": at, "seen": [at], "used": [],
            "tokens": max(1, len(text) // 4) + LINE_OVERHEAD_TOKENS, "branch": None, "files": [],
            "provenance": [{"client": "bench", "session": "s%d" % (i // 20), "transcript": None, "ref": "L%d" % i,
                            "layer": "keyword", "at": at}],
            "text": text}


_PLAIN = None


def _scalar(v) -> str:
    """A YAML scalar as the SafeDumper writes the values bench records hold (verified against records.dump)."""
    global _PLAIN
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if _PLAIN is None:
        import re
        _PLAIN = (re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z"), re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z\Z"))
    if _PLAIN[0].match(v) and v.lower() not in ("null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan",
                                                   "inf"):
        return v
    if _PLAIN[1].match(v):
        return "'%s'" % v
    raise ValueError("no fast form for %r" % (v,))


def dump_fast(rec: dict) -> str:
    """The text `records.dump(rec)` writes, for bench records, without YAML (about 30x faster).
    `build_home` checks it against records.dump as it goes and falls back to it on any difference."""
    out = ["---"]
    for k, v in rec.items():
        if k == "text":
            continue
        if isinstance(v, list):
            if k == "provenance":
                out.append("provenance:")
                for p in v:
                    out.append("- {%s}" % ", ".join("%s: %s" % (pk, _scalar(pv)) for pk, pv in p.items()))
            else:
                out.append("%s: [%s]" % (k, ", ".join(_scalar(x) for x in v)))
        else:
            out.append("%s: %s" % (k, _scalar(v)))
    return "\n".join(out) + "\n---\n%s\n" % rec["text"].rstrip("\n")


def write_records(home, n: int, project_id: str, domain: str, seed: int = 7, now: float = None,
                  varied: bool = True) -> int:
    """Write n bench records straight into the home's records/ (the store's format, no validation, no
    merge lookups, no fsync): the fast way to a big home.  Returns how many files were written."""
    import random
    import time
    from cortex.store import records
    rng = random.Random(seed)
    now = time.time() if now is None else now
    vocab = vocabulary() if varied else None
    made = set()
    checked = 0
    use_fast = True
    written = 0
    for i in range(n):
        rec = bench_record(rng, i, project_id, domain, now, vocab)
        folder = os.path.join(home.records, rec["scope"], rec["scope_id"])
        if folder not in made:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            made.add(folder)
        text = None
        if use_fast:
            try:
                text = dump_fast(rec)
            except ValueError:
                text = None
            if text is not None and (i < 50 or i % 997 == 0):
                checked += 1
                if text != records.dump(rec):
                    use_fast, text = False, None
        if text is None:
            text = records.dump(rec)
        fd = os.open(os.path.join(folder, rec["id"] + ".md"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        written += 1
    return written


def build_home(root: str, n: int, project_cwd: str, seed: int = 7, varied: bool = True, passages: int = 0) -> dict:
    """A home with n records in the project of project_cwd (90%) and its domain (10%), indexed by `reindex`;
    with `passages`, also episodes holding that many passages, indexed as `reindex` does (bench.passages)."""
    import time
    os.environ["CORTEX_HOME"] = root
    from cortex.core import config
    from cortex.model import scope
    from cortex.core.home import Home
    from cortex.store.indexer import reindex
    home = Home(root).ensure()
    cfg = config.load(home, fast=False)
    config.write_snapshot(home, cfg)
    project = scope.project_for(project_cwd)
    domain = scope.domain_for(project, cfg)
    t0 = time.perf_counter()
    write_records(home, n, project["id"], domain, seed=seed, varied=varied)
    t1 = time.perf_counter()
    res = reindex(home, cfg)
    t2 = time.perf_counter()
    out = {"home": home.root, "project": project["id"], "domain": domain, "records": res["records"],
           "write_s": t1 - t0, "reindex_s": t2 - t1, "passages": 0}
    if passages:
        from cortex.bench.passages import write_episodes
        ep = write_episodes(home, passages, project["id"], seed=seed)
        out.update(passages=ep["passages"], sessions=ep["sessions"], episodes_mb=ep["bytes"] / 1e6,
                   episodes_write_s=ep["write_s"], passages_index_s=ep["index_s"])
    return out


# -- timing whole processes -------------------------------------------------------------------------

def _cmd(script: str) -> list:
    import shutil
    local = os.path.join(REPO, "bin", script)
    if os.path.exists(local):
        return [sys.executable, local]
    exe = shutil.which(script)
    return [exe] if exe else [sys.executable, local]


def command_exists(script: str) -> bool:
    import shutil
    return os.path.exists(os.path.join(REPO, "bin", script)) or shutil.which(script) is not None


def run_once(argv, env: dict, stdin: bytes = b"", cwd: str = None):
    """(wall seconds, exit status) of one process, from start to reaped."""
    import subprocess
    import time
    devnull = subprocess.DEVNULL
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else devnull, stdout=devnull, stderr=devnull,
                         env=env, cwd=cwd)
    if stdin:
        try:
            p.stdin.write(stdin)
        except BrokenPipeError:
            pass
        p.stdin.close()
    rc = p.wait()
    return time.perf_counter() - t0, rc


# Runs a command from a small interpreter and prints its wall time and peak memory.  The peak memory
# must come from a small parent: Linux counts the memory of the process that forked the child in the
# child's max RSS, and the bench process itself is large.
MEASURE = r"""
import os, resource, subprocess, sys, time
data = sys.stdin.buffer.read()
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE if data else subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if data:
    p.communicate(data)
rc = p.wait()
dt = time.perf_counter() - t0
kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(dt, kb // 1024 if sys.platform == "darwin" else kb, rc)
"""


def measured_run(argv, env: dict, stdin: bytes = b""):
    """(wall seconds, peak RSS KiB, exit status) of one process, run from a small measuring interpreter
    (its own start-up is not in the time).  Peak RSS is -1 where `resource` is missing."""
    import subprocess
    p = subprocess.run([sys.executable, "-c", MEASURE] + list(argv), input=stdin or b"", env=env,
                       capture_output=True)
    try:
        dt, kb, rc = p.stdout.split()
        return float(dt), int(kb), int(rc)
    except ValueError:
        return float("nan"), -1, p.returncode


def tree_peak_rss_kb(argv, env: dict, interval: float = 0.05) -> int:
    """The peak of the summed RSS of a process and all its descendants (its worker processes), sampled
    from /proc every `interval` seconds (Linux; -1 elsewhere).  Shared copy-on-write pages of forked
    workers count once per process, so this is an upper bound."""
    import subprocess
    import time
    if not os.path.isdir("/proc/self/task"):
        return -1
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=env)
    peak = 0
    while p.poll() is None:
        parents, rss = {}, {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parents[int(name)] = int(fields[1])
                rss[int(name)] = int(fields[21]) * page_kb
            except (OSError, IndexError, ValueError):
                continue
        tree, grew = {p.pid}, True
        while grew:
            grew = False
            for pid, ppid in parents.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        peak = max(peak, sum(rss.get(pid, 0) for pid in tree))
        time.sleep(interval)
    return peak


def peak_rss_kb(argv, env: dict, stdin: bytes = b"") -> int:
    return measured_run(argv, env, stdin)[1]




def time_paired(argv, runs: int, env: dict, stdin=b"", warmup: int = 2, measured: bool = False):
    """Case runs and `python3 -c pass` runs interleaved, so both see the same machine load.
    Returns (case seconds, baseline seconds, peak RSS KiB of the case, exit statuses).  The peak memory
    comes from one more run through the measuring interpreter; with `measured`, every case run goes
    through it instead (for long cases, where one more run is costly and its start-up is noise)."""
    base_argv = [sys.executable, "-c", "pass"]
    case, base, rss, codes = [], [], -1, set()
    for i in range(warmup + runs):
        b = run_once(base_argv, env)[0]
        if measured:
            c, kb, rc = measured_run(argv, env, stdin)
            rss = max(rss, kb)
        else:
            c, rc = run_once(argv, env, stdin)
        codes.add(rc)
        if i >= warmup:
            case.append(c)
            base.append(b)
    if not measured:
        _, rss, rc = measured_run(argv, env, stdin)
        codes.add(rc)
    return case, base, rss, codes


class Row:
    def __init__(self, name, records=None, times=(), base=(), rss_kb=-1, target=None, note="", value=None,
                 unit=None, codes=(), passages=0):
        self.name, self.records, self.times, self.base = name, records, list(times), list(base)
        self.passages = passages
        self.rss_kb, self.target, self.note, self.codes = rss_kb, target, note, set(codes)
        self.value, self.unit = value, unit  # for throughput rows: the measured MB/s

    @property
    def skipped(self):
        return not self.times

    def stats(self) -> dict:
        import statistics
        if self.skipped:
            return {}
        med = statistics.median(self.times)
        out = {"median_ms": med * 1000, "min_ms": min(self.times) * 1000, "max_ms": max(self.times) * 1000,
               "runs": len(self.times), "peak_mb": self.rss_kb / 1024.0 if self.rss_kb >= 0 else None}
        if self.base:
            bmed = statistics.median(self.base)
            out.update(pass_ms=bmed * 1000, ratio=med / bmed, min_ratio=min(self.times) / min(self.base))
        if self.value is not None:
            out["value"] = self.value
        return out

    def result(self):
        """(measured figure as text, target as text, met: True/False/None)."""
        s = self.stats()
        if self.target is None:
            if self.skipped:
                return "-", "-", None
            return ("%.2fx" % s["ratio"]) if "ratio" in s else "-", "-", None
        kind, limit = self.target
        if self.skipped:
            return "-", _target_text(kind, limit), None
        if kind == "ratio":
            return "%.2fx" % s["ratio"], _target_text(kind, limit), s["ratio"] <= limit
        if kind == "mbps":
            return "%.1f MB/s" % self.value, _target_text(kind, limit), self.value >= limit
        if kind == "seconds":
            sec = s["median_ms"] / 1000.0
            peak = s["peak_mb"]
            ok = sec <= limit and (peak is None or peak <= REINDEX_PEAK_MB)
            return "%.1f s" % sec, _target_text(kind, limit), ok
        return "-", "-", None

    def as_json(self) -> dict:
        fig, tgt, met = self.result()
        return dict(self.stats(), case=self.name, records=self.records, passages=self.passages, target=tgt,
                    result=fig, met=met,
                    note=self.note, exit_codes=sorted(self.codes))


def _target_text(kind, limit):
    return {"ratio": "<= %gx" % limit, "mbps": ">= %g MB/s" % limit,
            "seconds": "<= %g s, <= %g MB" % (limit, REINDEX_PEAK_MB)}[kind]


def format_table(rows, runs: int) -> str:
    head = ("case", "records", "median ms", "min ms", "max ms", "pass ms", "ratio", "min ratio", "peak MB",
            "result", "target", "met")
    lines = []
    body = []
    for r in rows:
        s = r.stats()
        fig, tgt, met = r.result()
        if r.skipped:
            body.append((r.name, _size(r), "-", "-", "-", "-", "-", "-", "-", "-", tgt,
                         "skipped: " + (r.note or "not measured")))
            continue
        body.append((r.name, _size(r), "%.1f" % s["median_ms"], "%.1f" % s["min_ms"], "%.1f" % s["max_ms"],
                     "%.1f" % s["pass_ms"] if "pass_ms" in s else "-",
                     "%.2fx" % s["ratio"] if "ratio" in s else "-",
                     "%.2fx" % s["min_ratio"] if "min_ratio" in s else "-",
                     "%.1f" % s["peak_mb"] if s.get("peak_mb") is not None else "-", fig, tgt,
                     {True: "yes", False: "NO", None: "-"}[met]))
    widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    right = set(range(1, 9))
    for row in [head] + body:
        lines.append("  ".join(str(c).rjust(widths[i]) if i in right else str(c).ljust(widths[i])
                               for i, c in enumerate(row)).rstrip())
    notes = [r for r in rows if r.note and not r.skipped]
    for r in notes:
        lines.append("  %s%s: %s" % (r.name, " @%s" % _size(r) if r.records else "", r.note))
    return "\n".join(lines) + "\n"


def _n(n):
    return "-" if n is None else "{:,}".format(n)


def _size(row) -> str:
    """The records column: the home's records, and its passages when it has episodes."""
    return _n(row.records) + (" + %s passages" % _n(row.passages) if getattr(row, "passages", 0) else "")


# -- the cases ---------------------------------------------------------------------------------------

def make_big_transcript(path: str, mb: float = 50.0) -> int:
    """A Claude Code transcript of about `mb` MB, made by repeating the lines of a real one."""
    from cortex.core.bundled import fixtures_dir
    src = os.path.join(fixtures_dir(), "claude-code", "cc-2.1.39-hooks-compaction-subagents",
                       "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")
    with open(src, "rb") as f:
        data = f.read()
    if not data.endswith(b"\n"):
        data += b"\n"
    want = int(mb * 1000 * 1000)
    size = 0
    with open(path, "wb") as f:
        while size < want:
            chunk = data[:want - size] if want - size < len(data) else data
            if chunk is not data:
                chunk = chunk[:chunk.rfind(b"\n") + 1] or data
            f.write(chunk)
            size += len(chunk)
    return size


def fill_pending(home, n: int, payload: dict, client: str = "claude-code") -> None:
    """n stop events already pending, as capture writes them (one built, the rest copies under fresh names)."""
    import json
    from cortex.capture import hook as capture
    from cortex.inbox import maildir as inbox
    for state in ("tmp", "pending"):
        os.makedirs(home.inbox_dir(state), mode=0o700, exist_ok=True)
    os.makedirs(home.blobs, mode=0o700, exist_ok=True)
    data = json.dumps(capture.build_event("stop", json.dumps(payload).encode(), client, home),
                      ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    pending = home.inbox_dir("pending")
    for _ in range(n):
        with open(os.path.join(pending, inbox.unique_name() + ".json"), "wb") as f:
            f.write(data)


def fixture_sessions():
    """[(client, folder, main transcript, session id)] of the bundled real transcripts."""
    import glob
    from cortex.ingest import adapters
    from cortex.core.bundled import fixtures_dir
    root = fixtures_dir()
    out = []
    for client in ("claude-code", "codex", "gemini"):
        for folder in sorted(glob.glob(os.path.join(root, client, "*"))):
            if not os.path.isdir(folder):
                continue
            mains = [f for f in sorted(glob.glob(os.path.join(folder, "*.json*")))
                     if not os.path.basename(f).startswith("agent-")]
            for main in mains:
                try:
                    meta = adapters.get(client).parse(main).meta
                except ImportError:
                    continue
                out.append((client, folder, main, meta.session_id, meta.cwd))
    return out


def replay_sessions(dest: str, copies: int):
    """The fixture transcripts copied `copies` times under dest, each copy a distinct session: its session
    id is replaced (in the content and the file names) by a new one of the same shape.
    Returns ([(client, main transcript path, session id, cwd)], total bytes of every copied file)."""
    import hashlib
    import shutil
    hexd = set("0123456789abcdef")
    sessions = fixture_sessions()
    out, total = [], 0
    for c in range(copies):
        for client, folder, main, sid, cwd in sessions:
            h = hashlib.sha256(("%d:%s" % (c, sid)).encode()).hexdigest()
            new = "".join(h[j % 64] if ch in hexd else ch for j, ch in enumerate(sid or "")) if sid else None
            dst = os.path.join(dest, "copy%d" % c, client, os.path.basename(folder))
            if not os.path.isdir(dst):
                shutil.copytree(folder, dst)
                for dirpath, dirnames, files in os.walk(dst, topdown=False):
                    for name in files + dirnames:
                        p = os.path.join(dirpath, name)
                        if os.path.isfile(p) and sid and new:
                            with open(p, "rb") as f:
                                data = f.read()
                            data = data.replace(sid.encode(), new.encode())
                            with open(p, "wb") as f:
                                f.write(data)
                        if sid and new and sid in name:
                            os.rename(p, os.path.join(dirpath, name.replace(sid, new)))
            for dirpath, _, files in os.walk(dst):
                total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
            rel = os.path.relpath(main, folder)
            if sid and new:
                rel = rel.replace(sid, new)
            out.append((client, os.path.join(dst, rel), new or sid, cwd))
    return out, total


def bench_env(base: str) -> dict:
    """The environment of every measured process: this one's, without the client variables that change
    client detection, and with bytecode cached (under base/pycache, not in the checkout) as an installed
    package has it: PYTHONDONTWRITEBYTECODE would make every run compile Cortex from source."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "GEMINI_", "CLAUDE"))}
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(base, "pycache")
    return env


def _note(out, text):
    if out is not None:
        out.write(text + "\n")
        out.flush()


def run_bench(sizes=(1000, 10000, 100000), runs: int = 15, out=sys.stdout, transcript: str = None,
              reindex_runs: int = 3, throughput_runs: int = 3, copies: int = 5, pending: int = 10000,
              transcript_mb: float = 50.0, cases=None, keep: str = None, json_path: str = None,
              bm25_compare: bool = True, log=sys.stderr, warmup: int = 2, passages=None) -> list:
    """Run the cases and print the table to `out`.  Returns the rows.  `cases` limits which groups run:
    hooks, session-start, prompt, recall, normalize, throughput, reindex, bm25.  `passages` gives each
    home episodes holding that many passages: one count for every size, or {size: count}."""
    import json
    import shutil
    import tempfile
    import time
    from cortex.core.home import Home
    want = set(cases or ("hooks", "session-start", "prompt", "recall", "normalize", "throughput", "reindex",
                         "bm25"))
    sizes = tuple(sorted(set(int(s) for s in sizes)))
    n_passages = passages if isinstance(passages, dict) else {n: int(passages or 0) for n in sizes}
    base = os.path.abspath(keep) if keep else tempfile.mkdtemp(prefix="cortex-bench-")
    os.makedirs(base, exist_ok=True)
    rows = []
    env = bench_env(base)

    def add(row):
        rows.append(row)
        s = row.stats()
        _note(log, "  %-28s %8s  %s" % (row.name, _size(row), "skipped: " + row.note if row.skipped else
                                        "median %.1f ms, ratio %s, %s" % (s["median_ms"], "%.2fx" % s["ratio"]
                                                                          if "ratio" in s else "-", row.result()[0])))

    try:
        project_dir = os.path.join(base, "project")
        os.makedirs(project_dir, exist_ok=True)
        b = time_paired([sys.executable, "-c", "pass"], runs, env, warmup=warmup)
        add(Row("python3 -c pass", None, b[0], b[1], b[2]))

        # the capture hooks: a 50 MB transcript, 10,000 events already pending
        if "hooks" in want:
            _note(log, "hooks: a %g MB transcript and %d pending events" % (transcript_mb, pending))
            hook_home = Home(os.path.join(base, "hook-home")).ensure()
            big = transcript or os.path.join(base, "client", "big-session.jsonl")
            if not transcript and not os.path.exists(big):
                os.makedirs(os.path.dirname(big), exist_ok=True)
                make_big_transcript(big, transcript_mb)
            payload = {"session_id": "bench-session", "transcript_path": big, "cwd": project_dir,
                       "hook_event_name": "Stop", "stop_hook_active": False}
            if not os.listdir(hook_home.inbox_dir("pending")):
                fill_pending(hook_home, pending, payload)
            henv = dict(env, CORTEX_HOME=hook_home.root)
            size_mb = os.path.getsize(big) / 1e6
            for script, event in (("cortex-stop", "Stop"), ("cortex-pre-compact", "PreCompact")):
                data = json.dumps(dict(payload, hook_event_name=event)).encode()
                c = time_paired(_cmd(script) + ["--client", "claude-code"], runs, henv, data, warmup=warmup)
                add(Row(script, None, c[0], c[1], c[2], TARGETS[(script, None)], codes=c[3],
                        note="%.0f MB transcript, %d+ events pending" % (size_mb, pending)))

        homes = {}
        for n in sizes:
            pn = n_passages.get(n, 0)
            root = os.path.join(base, "home-%d" % n + ("-p%d" % pn if pn else ""))
            t0 = time.perf_counter()
            if keep and os.path.exists(os.path.join(root, "index", "cortex.sqlite")):
                from cortex.model import scope
                os.environ["CORTEX_HOME"] = root
                from cortex.core import config
                cfg = config.load(Home(root))
                project = scope.project_for(project_dir)
                homes[n] = {"home": root, "project": project["id"], "domain": scope.domain_for(project, cfg),
                            "records": n, "passages": pn}
                continue
            if os.path.exists(root):
                shutil.rmtree(root)
            info = build_home(root, n, project_dir, passages=pn)
            homes[n] = info
            _note(log, "home of %d records built in %.1f s (files %.1f s, reindex %.1f s)" % (
                n, time.perf_counter() - t0, info["write_s"], info["reindex_s"]) + (
                "; %d passages in %d sessions (%.0f MB of episodes written in %.1f s, indexed in %.1f s)" % (
                    info["passages"], info["sessions"], info["episodes_mb"], info["episodes_write_s"],
                    info["passages_index_s"]) if pn else ""))

        for n in sizes:
            info = homes[n]
            pn = info.get("passages") or 0
            senv = dict(env, CORTEX_HOME=info["home"])

            def target(name):
                return PASSAGE_TARGETS.get(name) if pn else TARGETS.get((name, n))
            if "session-start" in want:
                ss = _cmd("cortex-session-start") + ["--cwd", project_dir]
                c = time_paired(ss, runs, senv, warmup=warmup)
                add(Row("cortex-session-start", n, c[0], c[1], c[2], target("cortex-session-start"), codes=c[3],
                        passages=pn))
            if "prompt" in want:
                if command_exists("cortex-prompt"):
                    data = json.dumps({"session_id": "bench", "cwd": project_dir, "hook_event_name":
                                       "UserPromptSubmit", "prompt": PROMPT, "transcript_path": ""}).encode()
                    c = time_paired(_cmd("cortex-prompt"), runs, senv, data, warmup=warmup)
                    add(Row("cortex-prompt", n, c[0], c[1], c[2], target("cortex-prompt"), codes=c[3], passages=pn))
                else:
                    add(Row("cortex-prompt", n, target=target("cortex-prompt"), note="cortex-prompt is not built yet"))
            if "recall" in want:
                if os.path.exists(os.path.join(REPO, "cortex", "ops", "recall.py")):
                    rc = _cmd("cortex") + ["recall"] + QUERY.split() + ["--cwd", project_dir]
                    c = time_paired(rc, runs, senv, warmup=warmup)
                    add(Row("cortex recall", n, c[0], c[1], c[2], target("cortex recall"), codes=c[3], passages=pn,
                            note="counts each hit as a use (writes its records, refreshes their index rows)"))
                    c = time_paired(rc + ["--no-use"], runs, senv, warmup=warmup)
                    add(Row("cortex recall --no-use", n, c[0], c[1], c[2], codes=c[3], passages=pn))
                else:
                    add(Row("cortex recall", n, target=target("cortex recall"), note="cortex recall is not built yet"))
        if "normalize" in want and sizes:
            n = 10000 if 10000 in homes else sizes[0]
            senv = dict(env, CORTEX_HOME=homes[n]["home"])
            nz = _cmd("cortex-normalize") + ["--quiet"]
            c = time_paired(nz, runs, senv, warmup=warmup)
            add(Row("cortex-normalize (idle)", n, c[0], c[1], c[2], TARGETS[("cortex-normalize (idle)", None)],
                    codes=c[3], note="nothing pending"))

        if "throughput" in want:
            add(throughput_row(base, env, throughput_runs, copies, log))

        if "reindex" in want and sizes:
            n = sizes[-1]
            senv = dict(env, CORTEX_HOME=homes[n]["home"])
            argv = _cmd("cortex") + ["reindex"]
            c = time_paired(argv, reindex_runs, senv, warmup=1, measured=True)
            tree = tree_peak_rss_kb(argv, senv)
            add(Row("cortex reindex", n, c[0], c[1], max(c[2], tree), TARGETS.get(("cortex reindex", n)),
                    codes=c[3], note="full rebuild from the record files; peak MB = the main process and its %d "
                                     "worker processes together (main alone: %.0f MB)%s" % (
                                         min(os.cpu_count() or 1, 4), c[2] / 1024.0,
                                         "" if n == 100000 else " (the target is for 100,000 records)")))

        if "bm25" in want and bm25_compare and sizes:
            n = sizes[-1]
            rows.extend(bm25_rows(homes[n]["home"], base, env, runs, log, warmup))
        out.write("\n" + format_table(rows, runs))
        out.write("(%d runs per case after %d warm-up runs (reindex: %d after 1, throughput: %d); 'pass ms' is the median "
                  "of python3 -c pass runs interleaved with that case's runs; ratio = median/median, min ratio = "
                  "fastest/fastest; peak MB = max RSS of the measured process; python %s on %s, %s CPUs)\n" % (
                      runs, warmup, reindex_runs, throughput_runs, sys.version.split()[0],
                      sys.platform, os.cpu_count()))
        if json_path:
            doc = json.dumps({"python": sys.version.split()[0], "platform": sys.platform, "cpus": os.cpu_count(),
                              "runs": runs, "rows": [r.as_json() for r in rows]}, indent=1, ensure_ascii=False) + "\n"
            if json_path == "-":
                sys.stdout.write(doc)
            else:
                with open(json_path, "w", encoding="utf-8") as f:
                    f.write(doc)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    return rows


def throughput_row(base: str, env: dict, runs: int, copies: int, log=None) -> Row:
    """cortex-normalize over the fixture transcripts replayed as `copies` x (every fixture) sessions, each
    run in a fresh home with one stop event per session.  MB/s = transcript bytes / median wall time."""
    import json
    import shutil
    import statistics
    from cortex.capture import hook as capture
    from cortex.core.home import Home
    try:
        sessions, total = replay_sessions(os.path.join(base, "replay"), copies)
    except FileNotFoundError as e:
        return Row("cortex-normalize throughput", None, target=TARGETS[("cortex-normalize throughput", None)],
                   note=str(e))
    _note(log, "throughput: %d sessions, %.1f MB of transcripts" % (len(sessions), total / 1e6))
    homes = [os.path.join(base, "tp-home-%d" % i) for i in range(runs + 1)]

    def setup(i):
        root = homes[i]
        shutil.rmtree(root, ignore_errors=True)
        home = Home(root).ensure()
        for client, path, sid, cwd in sessions:
            payload = {"session_id": sid, "transcript_path": path, "cwd": cwd or os.path.dirname(path),
                       "hook_event_name": "Stop", "stop_hook_active": False}
            capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), client, home))
        tenv.clear()
        tenv.update(env, CORTEX_HOME=root)

    tenv = dict(env)
    nz = _cmd("cortex-normalize") + ["--quiet"]
    import resource
    times, cpus, rss, codes = [], [], 0, set()
    for i in range(runs + 1):
        setup(i)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        dt, kb, rc = measured_run(nz, tenv)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        codes.add(rc)
        rss = max(rss, kb)
        if i >= 1:
            times.append(dt)
            # CPU time of the run (user + system): on a shared machine the wall time also counts other jobs
            cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        shutil.rmtree(homes[i], ignore_errors=True)
    med = statistics.median(times)
    _note(log, "throughput by CPU time: median %.2f s, %.1f MB/s" % (statistics.median(cpus),
                                                                     total / 1e6 / statistics.median(cpus)))
    return Row("cortex-normalize throughput", None, times, (), rss, TARGETS[("cortex-normalize throughput", None)],
               value=total / 1e6 / med, codes=codes,
               note="%d sessions (%d copies of the %d fixture sessions, new session ids), %.1f MB" % (
                   len(sessions), copies, len(sessions) // max(copies, 1), total / 1e6))


BM25_SQLITE = r"""
import sys
sys.path.insert(0, sys.argv[1])
from cortex.store.index import connect, bm25_scores
from cortex.store.terms import query_terms
con = connect(sys.argv[2], readonly=True)
s = bm25_scores(con, query_terms(sys.argv[3]))
top = sorted(s.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
"""

BM25_PICKLE = r"""
import pickle, sys
sys.path.insert(0, sys.argv[1])
from cortex.store.terms import query_terms
with open(sys.argv[2], "rb") as f:
    ids, bm = pickle.load(f)
s = bm.get_scores(query_terms(sys.argv[3]))
top = sorted(range(len(ids)), key=lambda i: -s[i])[:10]
"""


def bm25_rows(home_root: str, base: str, env: dict, runs: int, log=None, warmup: int = 2) -> list:
    """Plain rank-bm25 (a pickled BM25Okapi of every record, loaded and scored per query, as a hook process
    would have to) beside the SQLite postings path, on the same home and query.  Also checks that both
    give the same scores."""
    import math
    import pickle
    import sqlite3
    import time
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return [Row("rank-bm25 (pickled) query", None, note="rank-bm25 is not installed")]
    from cortex.core.home import Home
    from cortex.store.index import bm25_scores
    from cortex.store.terms import query_terms
    db = Home(home_root).index_db
    con = sqlite3.connect(db)
    ids, docs = [], {}
    for rid, in con.execute("SELECT id FROM records ORDER BY id"):
        ids.append(rid)
        docs[rid] = []
    for term, rid, tf in con.execute("SELECT term, id, tf FROM postings"):
        docs[rid].extend([term] * tf)
    t0 = time.perf_counter()
    bm = BM25Okapi([docs[r] for r in ids])
    build_s = time.perf_counter() - t0
    del docs
    path = os.path.join(base, "bm25okapi.pickle")
    with open(path, "wb") as f:
        pickle.dump((ids, bm), f, protocol=pickle.HIGHEST_PROTOCOL)
    terms = query_terms(QUERY)
    want = dict(zip(ids, bm.get_scores(terms)))
    got = bm25_scores(con, terms)
    con.close()
    same = all(math.isclose(got.get(r, 0.0), v, rel_tol=1e-9, abs_tol=1e-12) for r, v in want.items())
    del bm, want
    n = len(ids)
    mb = os.path.getsize(path) / 1e6
    _note(log, "rank-bm25: BM25Okapi of %d records built in %.1f s, pickle %.0f MB; scores equal: %s" % (
        n, build_s, mb, same))
    rows = []
    c = time_paired([sys.executable, "-c", BM25_PICKLE, REPO, path, QUERY], runs, env, warmup=warmup)
    rows.append(Row("rank-bm25: load pickle + query", n, c[0], c[1], c[2], codes=c[3],
                    note="pickled BM25Okapi %.0f MB; its scores equal the SQLite path's: %s" % (mb, same)))
    c = time_paired([sys.executable, "-c", BM25_SQLITE, REPO, db, QUERY], runs, env, warmup=warmup)
    rows.append(Row("sqlite postings: bm25_scores", n, c[0], c[1], c[2], codes=c[3]))
    os.unlink(path)
    return rows


# -- command line --------------------------------------------------------------------------------------

CASE_GROUPS = ("hooks", "session-start", "prompt", "recall", "normalize", "throughput", "reindex", "bm25")


def add_arguments(ap) -> None:
    ap.add_argument("--sizes", default="1000,10000,100000",
                    help="comma-separated record counts of the homes (default 1000,10000,100000)")
    ap.add_argument("--runs", type=int, default=15, help="timed runs per case, after the warm-up runs (default 15)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed warm-up runs per case (default 2)")
    ap.add_argument("--reindex-runs", type=int, default=3, help="timed full reindex runs (default 3)")
    ap.add_argument("--throughput-runs", type=int, default=3, help="timed normalizer throughput runs (default 3)")
    ap.add_argument("--copies", type=int, default=5,
                    help="how many times the fixture transcripts are replayed for the throughput case (default 5)")
    ap.add_argument("--pending", type=int, default=10000, help="events already pending for the hook cases")
    ap.add_argument("--transcript-mb", type=float, default=50.0, help="transcript size for the hook cases (MB)")
    ap.add_argument("--cases", default=",".join(CASE_GROUPS),
                    help="comma-separated case groups to run (default all: %s)" % ",".join(CASE_GROUPS))
    ap.add_argument("--passages", metavar="N[,N...]", default="",
                    help="give each home episodes holding N passages (about 10 a session), indexed as `cortex reindex` "
                         "does: one N for every size, or one per size in the order of --sizes (default none)")
    ap.add_argument("--keep", metavar="DIR", help="build the homes in DIR and keep them (reused by the next run)")
    ap.add_argument("--json", metavar="FILE", dest="json_path", nargs="?", const="-",
                    help="print the rows as JSON on stdout (the table then goes to stderr), or with FILE also "
                         "write them to FILE")
    ap.add_argument("--locomo", action="store_true",
                    help="run the LoCoMo retrieval benchmark instead (see python -m cortex.bench.locomo --help)")
    ap.add_argument("--devchats", action="store_true",
                    help="run the developer-chat memory benchmark instead (see python -m cortex.bench.devchats --help)")
    ap.add_argument("--data", help="LoCoMo: path of locomo10.json (default $CORTEX_LOCOMO or "
                                   "<repo>/../shared/bench-data/locomo/locomo10.json)")
    ap.add_argument("--quality", action="store_true",
                    help="run the block-quality benchmark on the labeled fixture sessions instead, beside the "
                         "previous release (see python -m cortex.bench.quality --help)")


def run_args(args) -> int:
    if getattr(args, "devchats", False):
        from cortex.bench.devchats import evaluate
        return evaluate.main([])
    if getattr(args, "quality", False):
        from cortex.bench import quality
        return quality.main(["--json", args.json_path] if getattr(args, "json_path", None) else [])
    if getattr(args, "locomo", False):
        from cortex.bench import locomo
        return locomo.main(["--data", args.data] if getattr(args, "data", None) else [])
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in cases if c not in CASE_GROUPS]
    if bad:
        sys.stderr.write("cortex bench: unknown case group %s; use %s\n" % (", ".join(bad), ", ".join(CASE_GROUPS)))
        return 2
    sizes = tuple(int(s) for s in args.sizes.split(",") if s.strip())
    counts = [int(s) for s in (getattr(args, "passages", "") or "").split(",") if s.strip()]
    if len(counts) > 1 and len(counts) != len(sizes):
        sys.stderr.write("cortex bench: --passages takes one count, or one per size (%d sizes)\n" % len(sizes))
        return 2
    passages = dict(zip(sizes, counts)) if len(counts) > 1 else (counts[0] if counts else 0)
    run_bench(sizes, args.runs, passages=passages,
              out=sys.stderr if args.json_path == "-" else sys.stdout,
              reindex_runs=args.reindex_runs, throughput_runs=args.throughput_runs, copies=args.copies,
              pending=args.pending, transcript_mb=args.transcript_mb, cases=cases, keep=args.keep,
              json_path=args.json_path, warmup=args.warmup)
    return 0


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="cortex bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap)
    return run_args(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
