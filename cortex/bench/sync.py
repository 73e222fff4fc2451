"""`python -m cortex.bench.sync`: `cortex sync` of a 10,000-record home with 100 records changed.

Builds two throw-away homes (A and B) sharing a local bare repository (no network), fills A with N records
of one project, and times:

  first sync, A             every record scanned for secrets, committed and pushed
  first sync, B             every record received, written and indexed
  sync, nothing changed     fetch, compare (stat cache), nothing to do
  sync, 100 changed on A    send: scan, merge check, commit, push          (target <= 2 s)
  sync, 100 changed on B    receive: fetch, write, update the index rows   (target <= 2 s)
  `cortex sync` process     the same receive as a whole process (interpreter start-up included)

Each timed case runs `--repeat` times on fresh changes; the median, min and max are printed.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TARGET_S = 2.0
WORDS = ("cache index retry queue shard lock batch stream token schema migrate deploy worker cron webhook "
         "replica bucket ledger invoice cart search session audit backup rollback canary flag quota").split()


def _records(pid: str, n: int):
    from cortex.store.records import make_id, normalize_text
    import random
    rng = random.Random(42)
    for i in range(n):
        words = rng.sample(WORDS, 6)
        text = "record %d: the %s %s uses %s with %s, not %s (see %s)" % (i, *words)
        at = "2026-%02d-%02dT%02d:00:00Z" % (1 + i % 12, 1 + i % 28, i % 24)
        yield {"id": make_id(pid, "learned", normalize_text(text)), "scope": "L0", "scope_id": pid, "project": "bench",
               "type": "learned", "status": "active", "confidence": 0.8, "salience": 0.5, "pinned": False,
               "priority": 0, "created": at, "updated": at, "seen": [at], "used": [], "tokens": 30,
               "branch": None, "files": [], "text": text,
               "provenance": [{"client": "bench", "session": "s%d" % (i % 97), "layer": "manual", "at": at}]}


def _config(home):
    with open(home.config_yaml, "w") as f:
        f.write("sync:\n  domains: ['*']\n  projects: ['*']\n")


def _change(home, ids, stamp):
    from cortex.store.records import RecordStore
    store = RecordStore(home.records)
    for rid in ids:
        store.update(rid, lambda r: r.update(used=list(r.get("used") or []) + [stamp]) or True)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(n: int = 10000, changed: int = 100, repeat: int = 3, keep: bool = False) -> list:
    from cortex.core.home import Home
    from cortex.core import config
    from cortex.ops import sync as S
    from cortex.store.records import RecordStore
    from cortex.store.indexer import reindex
    root = tempfile.mkdtemp(prefix="cortex-bench-sync-")
    rows = []
    try:
        remote = os.path.join(root, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        a, b = Home(os.path.join(root, "a")).ensure(), Home(os.path.join(root, "b")).ensure()
        for h in (a, b):
            _config(h)
        store = RecordStore(a.records, validate=False)
        ids = []
        for rec in _records("bench-0123abcd", n):
            store.write(rec)
            ids.append(rec["id"])
        reindex(a, config.load(a, fast=False))
        for h in (a, b):
            S.init(h, remote)
        t, res = _timed(lambda: S.sync(a))
        rows.append(("first sync, A sends %d" % n, [t], res["sent"]))
        t, res = _timed(lambda: S.sync(b))
        rows.append(("first sync, B receives %d" % n, [t], res["received"]))
        times = []
        for _ in range(repeat):
            t, res = _timed(lambda: S.sync(a))
            times.append(t)
        rows.append(("sync, nothing changed", times, res["sent"]))
        send, recv, proc = [], [], []
        step = 0
        for r in range(repeat):
            batch = ids[step * changed:(step + 1) * changed]
            step += 1
            _change(a, batch, "2027-01-01T00:%02d:00Z" % r)
            t, res = _timed(lambda: S.sync(a))
            send.append(t)
            assert res["sent"] == changed, res
            t, res = _timed(lambda: S.sync(b))
            recv.append(t)
            assert res["received"] == changed, res
            batch = ids[step * changed:(step + 1) * changed]
            step += 1
            _change(a, batch, "2027-01-02T00:%02d:00Z" % r)
            S.sync(a)
            env = dict(os.environ, CORTEX_HOME=b.root)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "cortex", "sync"], env=env, check=True, stdout=subprocess.DEVNULL)
            proc.append(time.perf_counter() - t0)
        rows.append(("sync, %d changed: A sends" % changed, send, changed))
        rows.append(("sync, %d changed: B receives + index" % changed, recv, changed))
        rows.append(("`cortex sync` process, B receives %d" % changed, proc, changed))
    finally:
        if keep:
            print("homes kept in %s" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cortex.bench.sync", description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("--changed", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the homes and print where")
    args = ap.parse_args(argv)
    rows = run(args.records, args.changed, args.repeat, args.keep)
    print("%-42s %9s %9s %9s  %s" % ("case", "median s", "min s", "max s", "target"))
    ok = True
    for name, times, _n in rows:
        med = statistics.median(times)
        target = ""
        if "changed:" in name:
            met = med <= TARGET_S
            ok = ok and met
            target = "<= %.1f s %s" % (TARGET_S, "met" if met else "MISSED")
        print("%-42s %9.3f %9.3f %9.3f  %s" % (name, med, min(times), max(times), target))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
