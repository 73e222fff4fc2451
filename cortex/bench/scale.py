"""Normalize at scale (issue #18, defect 22): how the cost of writing a record grows with the home.

    python -m cortex.bench.scale [--runs 1000,3000,10000] [--homes 1000,10000] [--new 100] [--consolidate 100000]

* `runs`: one normalizer run over one session holding that many tagged records (`[MEMORY: ...]`);
* `homes`: a home already holding that many records, then `new` more in one run (the per-record cost
  must not grow with the home);
* `consolidate`: `cortex consolidate --dry-run` over a home of that many records (built with `reindex`
  from record files written directly, which is faster than normalizing them).

The words come from a fixed vocabulary with a Zipf-like spread (common words in most records, rare
ones in few), seeded, so runs compare.  Prints one line per measurement, and JSON with --json.
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid

TYPES = ("learned", "gotcha", "fix", "decision")


def vocabulary(n: int = 6000, seed: int = 7) -> list:
    rnd = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = set()
    while len(words) < n:
        words.add("".join(rnd.choice(letters) for _ in range(rnd.randint(4, 9))))
    return sorted(words)


def sentences(count: int, seed: int, vocab: list):
    rnd = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    for i in range(count):
        words = rnd.choices(vocab, weights=weights, k=12)
        yield TYPES[i % len(TYPES)], "the %s setting %s uses %s" % (words[0], " ".join(words[1:]), "v%d_%d" % (seed, i))


def transcript(path: str, count: int, seed: int, cwd: str, t0: float) -> str:
    """A Claude Code transcript with `count` assistant turns, each one tagged memory."""
    sid = str(uuid.UUID(int=random.Random(seed).getrandbits(128)))
    parent = None
    with open(path, "w", encoding="utf-8") as f:
        for i, (typ, text) in enumerate(sentences(count, seed, vocabulary())):
            for role in ("user", "assistant"):
                uid = str(uuid.UUID(int=random.Random(seed * 1_000_003 + 2 * i + (role == "assistant")).getrandbits(128)))
                ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t0 + 2 * i + (role == "assistant")))
                rec = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": sid,
                       "version": "2.1.4", "type": role, "uuid": uid, "timestamp": ts}
                if role == "user":
                    rec["message"] = {"role": "user", "content": "please note item %d" % i}
                else:
                    rec["message"] = {"role": "assistant", "id": "msg_%d_%d" % (seed, i), "type": "message",
                                      "model": "m", "content": [{"type": "text", "text": "[MEMORY: %s] %s" % (typ, text)}]}
                f.write(json.dumps(rec) + "\n")
                parent = uid
    return sid


PLACE = {"seconds": 0.0, "calls": 0}


def _timed_place():
    """Count the time Consolidator.place takes (placing a candidate: its neighbours and their similarity)."""
    from cortex.curate import consolidate
    if getattr(consolidate.Consolidator.place, "_timed", False):
        return
    real = consolidate.Consolidator.place

    def place(self, cand):
        t = time.perf_counter()
        try:
            return real(self, cand)
        finally:
            PLACE["seconds"] += time.perf_counter() - t
            PLACE["calls"] += 1
    place._timed = True
    consolidate.Consolidator.place = place


def normalize_session(home, root: str, count: int, seed: int, cwd: str) -> float:
    """Seconds for one normalizer run over a new session of `count` tagged records."""
    from cortex.capture import hook
    from cortex.ingest import run as norm
    path = os.path.join(root, "client", "s%d.jsonl" % seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    sid = transcript(path, count, seed, cwd, time.time() - 7200 + seed)
    payload = {"session_id": sid, "transcript_path": path, "cwd": cwd, "hook_event_name": "Stop"}
    PLACE["seconds"], PLACE["calls"] = 0.0, 0
    home.ensure()
    hook.write_event(home, hook.build_event("stop", json.dumps(payload).encode(), "claude-code", home))
    t = time.perf_counter()
    stats = norm.run(home)
    secs = time.perf_counter() - t
    if stats.get("failed"):
        raise SystemExit("normalize failed: %r" % stats)
    return secs


def records_in(home) -> int:
    from cortex.store.index import connect
    con = connect(home.index_db, readonly=True)
    try:
        return con.execute("SELECT count(*) FROM records").fetchone()[0]
    finally:
        con.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cortex.bench.scale", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="1000,3000,10000", help="tagged records in one run (comma separated)")
    ap.add_argument("--homes", default="1000,10000", help="records already in the home (comma separated)")
    ap.add_argument("--new", type=int, default=100, help="records added to each home")
    ap.add_argument("--consolidate", type=int, default=0, help="records for a `consolidate --dry-run` (0: skip)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--workdir", default=None, help="keep the homes here (default: a temp folder, removed)")
    args = ap.parse_args(argv)
    from cortex.core.home import Home
    _timed_place()
    root = args.workdir or tempfile.mkdtemp(prefix="cortex-scale-")
    cwd = os.path.join(root, "project")
    os.makedirs(cwd, exist_ok=True)
    out = []
    try:
        for n in [int(x) for x in args.runs.split(",") if x.strip()]:
            home = Home(os.path.join(root, "run-%d" % n))
            secs = normalize_session(home, root, n, 1000 + n, cwd)
            out.append({"bench": "one_run", "tagged": n, "records": records_in(home), "seconds": round(secs, 2),
                        "ms_per_record": round(secs * 1000 / n, 2), "place_seconds": round(PLACE["seconds"], 2),
                        "place_ms_per_record": round(PLACE["seconds"] * 1000 / max(PLACE["calls"], 1), 3)})
            print("one run, %6d tagged records: %7.2f s (%.2f ms a record, placing %.3f ms a record, %d records)" % (
                n, secs, secs * 1000 / n, out[-1]["place_ms_per_record"], out[-1]["records"]), file=sys.stderr,
                flush=True)
        for n in [int(x) for x in args.homes.split(",") if x.strip()]:
            home = Home(os.path.join(root, "home-%d" % n))
            build = normalize_session(home, root, n, 2000 + n, cwd)
            secs = normalize_session(home, root, args.new, 3000 + n, cwd)
            out.append({"bench": "add_to_home", "home": n, "new": args.new, "seconds": round(secs, 2),
                        "ms_per_record": round(secs * 1000 / args.new, 2), "build_seconds": round(build, 2),
                        "place_ms_per_record": round(PLACE["seconds"] * 1000 / max(PLACE["calls"], 1), 3)})
            print("%d new records into a %6d-record home: %6.2f s (%.2f ms a record, placing %.3f ms a record; "
                  "building the home took %.1f s)" % (args.new, n, secs, secs * 1000 / args.new,
                                                      out[-1]["place_ms_per_record"], build), file=sys.stderr, flush=True)
        if args.consolidate:
            out.append(consolidate_bench(root, args.consolidate))
            print("consolidate --dry-run over %d records: %.2f s" % (args.consolidate, out[-1]["seconds"]),
                  file=sys.stderr, flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


def consolidate_bench(root: str, n: int) -> dict:
    """`consolidate --dry-run` over a home of `n` records written straight to files, then reindexed."""
    from cortex.core import config as config_mod
    from cortex.core.home import Home
    from cortex.curate.consolidate import consolidate_groups
    from cortex.store.indexer import reindex
    from cortex.store.records import RecordStore
    home = Home(os.path.join(root, "consolidate-%d" % n)).ensure()
    cfg = config_mod.load(home)
    store = RecordStore(home.records)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 3600))
    for i, (typ, text) in enumerate(sentences(n, 4000 + n, vocabulary())):
        store.upsert({"scope": "L0", "scope_id": "proj-bench", "project": "proj-bench", "type": typ, "text": text,
                      "confidence": 0.8, "salience": 0.5, "files": [], "branch": None, "plan": None, "key": None,
                      "replace": False, "since": None,
                      "provenance": {"client": "claude-code", "session": "s%d" % (i // 50), "transcript": None,
                                     "ref": "L%d" % i, "layer": "tag", "at": now}})
    reindex(home, cfg)
    t = time.perf_counter()
    groups = consolidate_groups(home, store, cfg, dry_run=True)
    secs = time.perf_counter() - t
    return {"bench": "consolidate_dry_run", "records": n, "groups": len(groups), "seconds": round(secs, 2)}


if __name__ == "__main__":
    sys.exit(main())
