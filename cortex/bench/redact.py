"""`python -m cortex.bench.redact`: speed of secret redaction (cortex/model/redact.py).

Measures, on the bundled fixture transcripts (tests/fixtures/transcripts):

  raw JSONL lines          every line of every transcript, as read from disk
  decoded strings          every string inside the decoded JSON (prompts, replies, tool output, code)
  decoded strings >= 1 KB  the long ones only
  import                   a fresh interpreter executing redact.py (patterns compiled at import)

Throughput is MB (UTF-8) / CPU time (time.process_time), best of --rounds: CPU time is the fairer figure
on a shared machine.  Import time is the best of --import-runs fresh processes (re and math already
imported, bytecode cached even under PYTHONDONTWRITEBYTECODE), so it is the module's own work: mostly
compiling its patterns.

    python -m cortex.bench.redact                      the working tree's redact.py
    python -m cortex.bench.redact --rev main           ... and the one of a git revision, in the same run
    python -m cortex.bench.redact --rev HEAD~1 --profile
    python -m cortex.bench.redact --rev main --normalize 3   ... and cortex-normalize with each version

With --rev, the old module is loaded from `git show REV:cortex/model/redact.py` into a temporary module,
and the outputs of both on every text are compared (any difference is listed: a speed change must not
change what is redacted).
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Callable, Iterator, List, Tuple

MODULE = "cortex/model/redact.py"


def _strings(obj) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def samples(root: str = None) -> List[Tuple[str, List[str]]]:
    """[(name, texts)]: raw JSONL lines, decoded strings, decoded strings >= 1 KB."""
    if root is None:
        from cortex.core.bundled import fixtures_dir
        root = fixtures_dir()
    files = []
    for dirpath, _, names in os.walk(root):
        files.extend(os.path.join(dirpath, n) for n in names if n.endswith((".jsonl", ".json")))
    files.sort()
    lines: List[str] = []
    texts: List[str] = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            if f.endswith(".json"):
                texts.extend(_strings(json.load(fh)))
                continue
            for line in fh:
                line = line.rstrip("\n")
                lines.append(line)
                try:
                    texts.extend(_strings(json.loads(line)))
                except ValueError:
                    pass
    return [("raw JSONL lines", lines), ("decoded strings", texts),
            ("decoded strings >= 1 KB", [t for t in texts if len(t) >= 1000])]


def throughput(fn: Callable[[str], object], texts: List[str], rounds: int) -> float:
    """MB/s by CPU time, best of `rounds`."""
    nbytes = sum(len(t.encode("utf-8")) for t in texts)
    best = float("inf")
    for _ in range(rounds):
        c0 = time.process_time()
        for t in texts:
            fn(t)
        best = min(best, time.process_time() - c0)
    return nbytes / 1e6 / max(best, 1e-9)


_IMPORT_PROBE = r"""
import importlib.util, math, re, sys, time
spec = importlib.util.spec_from_file_location("_redact_probe", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
t0 = time.perf_counter()
spec.loader.exec_module(mod)
print((time.perf_counter() - t0) * 1000)
"""


def import_ms(path: str, runs: int, cache: str) -> float:
    """Best wall time (ms) of executing the module file in a fresh interpreter, its bytecode cached (under
    `cache`) as an installed package has it: PYTHONDONTWRITEBYTECODE would add compiling the source."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    best = float("inf")
    for _ in range(runs + 1):  # the first run writes the bytecode cache
        out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, path], capture_output=True, text=True, check=True,
                             env=env)
        best = min(best, float(out.stdout.strip()))
    return best


def load_file(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_rev(rev: str, tmp: str):
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    src = subprocess.run(["git", "show", "%s:%s" % (rev, MODULE)], capture_output=True, text=True, check=True,
                         cwd=root).stdout
    path = os.path.join(tmp, "redact_%s.py" % "".join(c if c.isalnum() else "_" for c in rev))
    with open(path, "w", encoding="utf-8") as f:
        f.write(src)
    return load_file(path, "_redact_rev_%d" % abs(hash(rev))), path


# cortex-normalize with a given redact.py: the module is put in sys.modules before Cortex imports it.
_NORMALIZE = r"""
import importlib.util, os, sys
repo, path = sys.argv[1], sys.argv[2]
sys.path.insert(0, repo)
if path:
    spec = importlib.util.spec_from_file_location("cortex.model.redact", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["cortex.model.redact"] = mod
    spec.loader.exec_module(mod)
    import cortex.model
    cortex.model.redact = mod
sys.argv = ["cortex-normalize", "--quiet"]
from cortex.cli.normalize import run_main
run_main()
"""


def normalize_mbps(paths, copies: int, runs: int, log=sys.stderr):
    """{path: (MB/s by CPU time, MB/s by wall time)} of cortex-normalize over the fixture transcripts replayed
    as `copies` x (every fixture) sessions (the set-up of `python -m cortex.bench`'s throughput case), one
    stop event per session, a fresh home per run; CPU time is the process's and its children's (user + sys),
    best of `runs`, with the versions interleaved run by run."""
    import json
    import resource
    import shutil
    from cortex.bench.run import REPO, bench_env, replay_sessions
    from cortex.capture import hook as capture
    from cortex.core.home import Home
    base = tempfile.mkdtemp(prefix="cortex-redact-bench-")
    try:
        sessions, total = replay_sessions(os.path.join(base, "replay"), copies)
        log.write("normalize: %d sessions, %.1f MB of transcripts\n" % (len(sessions), total / 1e6))
        env = bench_env(base)
        best = {p: (float("inf"), float("inf")) for p in paths}
        broken = set()
        for i in range(runs + 1):
            for p in paths:
                root = os.path.join(base, "home")
                shutil.rmtree(root, ignore_errors=True)
                home = Home(root).ensure()
                for client, path, sid, cwd in sessions:
                    payload = {"session_id": sid, "transcript_path": path, "cwd": cwd or os.path.dirname(path),
                               "hook_event_name": "Stop", "stop_hook_active": False}
                    capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), client,
                                                                  home))
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                w0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", _NORMALIZE, REPO, p or ""], env=dict(env, CORTEX_HOME=root),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                w = time.perf_counter() - w0
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
                failed = os.path.join(root, "inbox", "failed")
                if os.path.isdir(failed) and os.listdir(failed):
                    broken.add(p)  # events quarantined: this redact.py does not fit the rest of the tree
                if i >= 1:  # the first round warms the caches
                    best[p] = (min(best[p][0], cpu), min(best[p][1], w))
        return {p: None if p in broken else (total / 1e6 / c, total / 1e6 / w) for p, (c, w) in best.items()}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cortex.bench.redact", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", action="append", default=[], help="also measure redact.py of this git revision")
    ap.add_argument("--rounds", type=int, default=5, help="timed passes per sample, best kept (default 5)")
    ap.add_argument("--import-runs", type=int, default=10, help="fresh processes for the import time (default 10)")
    ap.add_argument("--profile", action="store_true", help="cProfile the working tree's redact on the raw lines")
    ap.add_argument("--no-compare", action="store_true", help="skip the output comparison with --rev")
    ap.add_argument("--normalize", type=int, metavar="RUNS", default=0,
                    help="also time cortex-normalize over the replayed fixtures with each version (best of RUNS)")
    ap.add_argument("--copies", type=int, default=5, help="--normalize: copies of the fixture sessions (default 5)")
    args = ap.parse_args(argv)

    import cortex.model.redact as cur
    here = os.path.abspath(cur.__file__)
    sets = samples()
    with tempfile.TemporaryDirectory() as tmp:
        mods = [("working tree", cur, here)]
        for rev in args.rev:
            m, p = load_rev(rev, tmp)
            mods.append((rev, m, p))
        print("redact throughput, MB/s by CPU time (best of %d); import ms (best of %d fresh processes)"
              % (args.rounds, args.import_runs))
        print("samples: " + "; ".join("%s %d texts %.1f MB" % (n, len(t), sum(len(x.encode()) for x in t) / 1e6)
                                      for n, t in sets))
        head = "%-14s" % "version" + "".join("%26s" % n for n, _ in sets) + "%12s" % "import ms"
        print(head)
        for label, m, p in mods:
            row = "%-14s" % label[:14]
            for _, texts in sets:
                row += "%26.1f" % throughput(m.redact, texts, args.rounds)
            row += "%12.1f" % import_ms(p, args.import_runs, os.path.join(tmp, "pycache"))
            print(row, flush=True)
        if len(mods) > 1 and not args.no_compare:
            for label, m, _ in mods[1:]:
                diff = 0
                for name, texts in sets[:2]:
                    for t in texts:
                        a, b = cur.redact(t), m.redact(t)
                        if a != b:
                            diff += 1
                            if diff <= 5:
                                print("  differs from %s (%s): %r -> %r vs %r" % (label, name, t[:120], a[0][:200],
                                                                                    b[0][:200]))
                print("outputs vs %s: %s" % (label, "identical" if not diff else "%d texts differ" % diff))
        if args.normalize:
            res = normalize_mbps([None] + [p for _, _, p in mods[1:]], args.copies, args.normalize)
            print("cortex-normalize, MB/s by CPU time (process + children, best of %d) and by wall time:"
                  % args.normalize)
            for (label, _, p), key in zip(mods, [None] + [p for _, _, p in mods[1:]]):
                if res[key] is None:
                    print("%-14s events failed: this redact.py does not fit the working tree" % label[:14])
                else:
                    print("%-14s %8.1f cpu %8.1f wall" % (label[:14], *res[key]))
    if args.profile:
        import cProfile
        import pstats
        lines = sets[0][1]
        pr = cProfile.Profile()
        pr.enable()
        for t in lines:
            cur.redact(t)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
