"""`cortex bench`: wall time of the hot paths beside `python3 -c pass`, measured in the same run.

Builds throw-away homes of N varied records (realistic text from templates and a code
vocabulary, so dedup keeps them apart), then times whole processes: the capture hook,
session start, and an idle normalize.  Prints medians with min/max, the ratio to the
interpreter's own start-up, and each case's peak memory (max RSS).
"""
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

VERBS = ["use", "keep", "drop", "cache", "split", "retry", "validate", "stream", "index", "batch", "lock", "hash"]
NOUNS = ["session", "token", "index", "parser", "cursor", "record", "schema", "queue", "worker", "config", "event",
         "transcript", "adapter", "client", "payload", "lock", "migration", "endpoint", "fixture", "cache"]
TECH = ["SQLite", "Postgres", "Redis", "GraphQL", "REST", "gRPC", "protobuf", "msgpack", "JSON Lines", "YAML",
        "asyncio", "threads", "fcntl", "watchdog", "tiktoken", "BM25", "pytest", "hypothesis", "uvloop", "orjson"]
DIRS = ["src", "lib", "cortex", "api", "web", "core", "tests", "scripts", "internal", "pkg"]
TEMPLATES = {
    "decision": ["Chose {t1} over {t2} for the {n1} {n2} because {n3} {v1} must stay cheap",
                 "Decided to {v1} the {n1} in {f} instead of the {n2} layer since {t1} handles it"],
    "rejected": ["Rejected {t1} for the {n1} {n2}: it won't work because {n3} {v1} needs {t2}",
                 "Dropped the idea to {v1} {n1}s in {f}; {t1} made {n2} {v2} too slow"],
    "gotcha": ["{t1} {v1}s the {n1} silently when {n2} is empty; check {f} first",
               "The {n1} {n2} in {f} must {v1} before {t1} starts or {n3} breaks"],
    "learned": ["The root cause of the {n1} bug was {f} calling {v1} twice on the {n2}",
                "{t1} returns {n1} ids in {n2} order, not insertion order"],
    "progress": ["asked \"{v1} the {n1} {n2} and fix {f}\"; changed {f}, {f2}"],
    "fix": ["`pytest {f}` failed ({t1} {n1} error); it passed after changing {f2}"],
    "preference": ["Prefer {t1} for {n1} {n2} work; keep {v1} calls out of {f}"],
}


def fake_text(rng: random.Random, rtype: str, i: int) -> str:
    f = "%s/%s_%s_%d.py" % (rng.choice(DIRS), rng.choice(NOUNS), rng.choice(NOUNS), i % 997)
    f2 = "%s/%s/%s%d.py" % (rng.choice(DIRS), rng.choice(NOUNS), rng.choice(VERBS), i % 389)
    return rng.choice(TEMPLATES[rtype]).format(
        t1=rng.choice(TECH), t2=rng.choice(TECH), n1=rng.choice(NOUNS), n2=rng.choice(NOUNS), n3=rng.choice(NOUNS),
        v1=rng.choice(VERBS), v2=rng.choice(VERBS), f=f, f2=f2) + " (case %d)" % i


def build_home(root: str, n: int, project_cwd: str, seed: int = 7) -> dict:
    """A home with n records in the project of project_cwd (90%) and its domain (10%), indexed."""
    os.environ["CORTEX_HOME"] = root
    from . import config, scope
    from .home import Home
    from .indexer import reindex
    from .records import RecordStore
    home = Home(root).ensure()
    cfg = config.load(home, fast=False)
    config.write_snapshot(home, cfg)
    project = scope.project_for(project_cwd)
    domain = scope.domain_for(project, cfg)
    store = RecordStore(home.records, count_tokens=lambda s: max(1, len(s) // 4), validate=False)
    rng = random.Random(seed)
    types = list(TEMPLATES)
    now = time.time()
    for i in range(n):
        rtype = types[i % len(types)]
        l1 = rtype == "preference" or i % 10 == 9
        age_s = rng.random() ** 2 * 90 * 86400
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - age_s))
        cand = {"scope": "L1" if l1 else "L0", "scope_id": domain if l1 else project["id"], "project": project["id"],
                "type": rtype, "text": fake_text(rng, rtype, i), "confidence": round(0.5 + rng.random() / 2, 2),
                "salience": 0.5, "files": [], "provenance": {"client": "bench", "session": "s%d" % (i // 20),
                                                            "transcript": None, "ref": "L%d" % i, "layer": "keyword",
                                                            "at": at}}
        store.upsert(cand)
    res = reindex(home, cfg)
    return {"home": home.root, "project": project["id"], "records": res["records"]}


def _cmd(script: str) -> list:
    exe = shutil.which(script)
    if exe:
        return [exe]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [sys.executable, os.path.join(here, "bin", script)]


def time_cmd(argv, runs: int, env: dict, stdin: bytes = b"", warmup: int = 2) -> list:
    out = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        dt = time.perf_counter() - t0
        if i >= warmup:
            out.append(dt)
    return out


def time_paired(argv, runs: int, env: dict, stdin: bytes = b"", warmup: int = 2):
    """Case and `python3 -c pass` runs interleaved, so both see the same machine load."""
    case, base = [], []
    for i in range(warmup + runs):
        b = time_cmd([sys.executable, "-c", "pass"], 1, env, warmup=0)[0]
        c = time_cmd(argv, 1, env, stdin, warmup=0)[0]
        if i >= warmup:
            case.append(c)
            base.append(b)
    return case, base


def peak_rss_kb(argv, env, stdin=b"") -> int:
    code = ("import resource,subprocess,sys;subprocess.run(sys.argv[1:],input=sys.stdin.buffer.read(),"
            "stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL);"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", code] + argv, input=stdin, env=env, capture_output=True)
    try:
        kb = int(p.stdout.strip())
    except ValueError:
        return -1
    return kb // 1024 if sys.platform == "darwin" else kb  # macOS reports bytes


def run_bench(sizes=(1000,), runs: int = 15, out=sys.stdout, transcript: str = None) -> list:
    rows = []
    base = tempfile.mkdtemp(prefix="cortex-bench-")
    try:
        env = dict(os.environ)
        project_dir = os.path.join(base, "project")
        os.makedirs(project_dir)
        rows.append(("python3 -c pass", None, time_cmd([sys.executable, "-c", "pass"], runs, env), None,
                     peak_rss_kb([sys.executable, "-c", "pass"], env)))
        if transcript is None:
            from .demo import fixtures_dir
            transcript = os.path.join(fixtures_dir(), "claude-code", "cc-1.0.98-init-todowrite",
                                      "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")
        hook_home = os.path.join(base, "hook-home")
        henv = dict(env, CORTEX_HOME=hook_home)
        payload = json.dumps({"session_id": "bench", "transcript_path": transcript, "cwd": project_dir,
                              "hook_event_name": "Stop"}).encode()
        c, b = time_paired(_cmd("cortex-stop"), runs, henv, payload)
        rows.append(("cortex-stop", None, c, b, peak_rss_kb(_cmd("cortex-stop"), henv, payload)))
        for n in sizes:
            info = build_home(os.path.join(base, "home-%d" % n), n, project_dir)
            senv = dict(env, CORTEX_HOME=info["home"])
            ss = _cmd("cortex-session-start") + ["--cwd", project_dir]
            c, b = time_paired(ss, runs, senv)
            rows.append(("cortex-session-start", n, c, b, peak_rss_kb(ss, senv)))
            nz = _cmd("cortex-normalize") + ["--quiet"]
            c, b = time_paired(nz, runs, senv)
            rows.append(("cortex-normalize (idle)", n, c, b, peak_rss_kb(nz, senv)))
        out.write("%-26s %8s %9s %9s %9s %9s %7s %9s %8s\n" % ("case", "records", "median ms", "min ms", "max ms",
                                                                "pass ms", "ratio", "min ratio", "peak MB"))
        for name, n, times, base_times, rss in rows:
            med = statistics.median(times)
            bmed = statistics.median(base_times) if base_times else med
            bmin = min(base_times) if base_times else min(times)
            out.write("%-26s %8s %9.1f %9.1f %9.1f %9.1f %6.2fx %8.2fx %8.1f\n" % (
                name, n if n is not None else "-", med * 1000, min(times) * 1000, max(times) * 1000, bmed * 1000,
                med / bmed, min(times) / bmin, rss / 1024.0))
        out.write("(%d runs each after 2 warm-up runs; 'pass ms' is the median of python3 -c pass runs interleaved with "
                  "that case's runs; ratio = median/median, min ratio = fastest/fastest; python %s; %s)\n" % (runs, sys.version.split()[0],
                                                                                      sys.platform))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return rows


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="cortex bench", description=__doc__)
    ap.add_argument("--sizes", default="1000", help="comma-separated record counts (default 1000)")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args(argv)
    run_bench(tuple(int(s) for s in args.sizes.split(",")), args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
