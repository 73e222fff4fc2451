"""`python -m cortex.bench.quality` (or `cortex bench --quality`): is the session-start block worth its budget?

For every bundled real fixture session (tests/fixtures/transcripts/), the labeled corpus
(tests/corpora/fixture_labels.json) lists the facts an engineer resuming the work needs -- each a short
description plus 1-3 keywords that must all appear (case-insensitive) in one line of the block -- and
the things that would be wrong to present as current (finished plans, superseded decisions, content-free
requests): a "wrong" item counts when all of its keywords appear in one line.

Each fixture is replayed through a fresh Cortex home exactly as in real use (a stop event through the
capture code, one `cortex-normalize` run, then `cortex-session-start --cwd <session cwd>`), each step a
separate process with PYTHONPATH set to the code under test.  The same run does it twice: once with this
checkout, once with the PREVIOUS RELEASE (`--baseline REF`, default: the merge base with `main`, checked
out with `git worktree add` into a temp dir), so both figures come from the same machine and fixtures.

Prints, per fixture: its size, facts present before/after, wrong-as-current shown before/after, and the
block size.  `--json FILE` writes the rows; `--show` prints each block; `--markdown FILE` writes the blocks
with what was kept and left out (docs/blocks.md).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "transcripts")
LABELS = os.path.join(REPO, "tests", "corpora", "fixture_labels.json")

# Runs inside the child process, with the code under test first on sys.path.
DRIVER = r"""
import json, os, sys
from cortex.core.home import Home
from cortex.capture import hook as capture
from cortex.ingest import adapters
home = Home(os.environ["CORTEX_HOME"]).ensure()
path, client = sys.argv[1], sys.argv[2]
meta = adapters.get(client).parse(path).meta
payload = {"session_id": meta.session_id or os.path.basename(path), "transcript_path": path,
           "cwd": meta.cwd or os.path.dirname(path), "hook_event_name": "Stop"}
for state in ("tmp", "pending"):
    os.makedirs(home.inbox_dir(state), mode=0o700, exist_ok=True)
os.makedirs(home.blobs, mode=0o700, exist_ok=True)
capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), client, home))
from cortex.ingest import run as norm
norm.run(home, quiet=True)
print(json.dumps({"cwd": payload["cwd"]}))
"""

WHY = r"""
import json, os, sys
from cortex.core.home import Home
from cortex.brief import session_start
text, d = session_start.build(Home(os.environ["CORTEX_HOME"]), sys.argv[1])
print(json.dumps({"kept": [[r["type"], r["text"][:100]] for r in d["kept"]],
                  "left": [[r["type"], r["text"][:100], why] for r, why in d["left"]]}))
"""


def load_labels(path=LABELS) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _env(code_root, home):
    env = dict(os.environ, CORTEX_HOME=home, PYTHONPATH=code_root, PYTHONDONTWRITEBYTECODE="1")
    for k in list(env):
        if k.startswith(("CODEX_", "GEMINI_")) or k in ("CLAUDECODE", "CLAUDE_PROJECT_DIR"):
            env.pop(k)
    return env


def block_for(code_root: str, fixture_dir: str, main: str, client: str, work: str, details=False):
    """(block text, {kept, left} or None) for one fixture, with the code at code_root."""
    home = os.path.join(work, "home")
    src = os.path.join(work, "client", os.path.basename(fixture_dir))
    shutil.copytree(fixture_dir, src)
    env = _env(code_root, home)
    out = subprocess.run([sys.executable, "-c", DRIVER, os.path.join(src, main), client], env=env,
                         capture_output=True, text=True, check=True, cwd=work)
    cwd = json.loads(out.stdout.strip().splitlines()[-1])["cwd"]
    res = subprocess.run([sys.executable, "-c", "from cortex.brief.session_start import run; run()",
                          "--cwd", cwd], env=env, capture_output=True, text=True, cwd=work, stdin=subprocess.DEVNULL)
    why = None
    if details:
        w = subprocess.run([sys.executable, "-c", WHY, cwd], env=env, capture_output=True, text=True, cwd=work)
        why = json.loads(w.stdout) if w.returncode == 0 and w.stdout.strip() else None
    return res.stdout, why


def _lines(block: str):
    return [ln for ln in block.splitlines() if ln.startswith("- ")]


def _hit(lines, keywords):
    kws = [k.lower() for k in keywords]
    return any(all(k in ln.lower() for k in kws) for ln in lines)


def score(block: str, label: dict) -> dict:
    lines = _lines(block)
    facts = label.get("facts") or []
    wrong = label.get("wrong_as_current") or []
    present = [f["what"] for f in facts if _hit(lines, f["keywords"])]
    shown_wrong = [w["what"] for w in wrong if _hit(lines, w["keywords"])]
    return {"facts": len(facts), "present": len(present), "present_what": present,
            "missing": [f["what"] for f in facts if f["what"] not in present],
            "wrong": len(wrong), "wrong_shown": shown_wrong, "chars": len(block), "lines": len(lines)}


def baseline_root(ref: str, tmp: str) -> str:
    dest = os.path.join(tmp, "baseline")
    subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", "-q", dest, ref], check=True,
                   capture_output=True)
    return dest


def default_ref() -> str:
    out = subprocess.run(["git", "-C", REPO, "merge-base", "HEAD", "main"], capture_output=True, text=True)
    return out.stdout.strip() or "HEAD"


def run(ref=None, only=None, show=False, details=False):
    labels = load_labels()
    tmp = tempfile.mkdtemp(prefix="cortex-quality-")
    rows = []
    base = None
    try:
        if ref != "none":
            base = baseline_root(ref or default_ref(), tmp)
        for name, label in sorted(labels["fixtures"].items()):
            if only and name not in only:
                continue
            fdir = os.path.join(FIXTURES, label["folder"])
            size = os.path.getsize(os.path.join(fdir, label["main"]))
            row = {"fixture": name, "bytes": size}
            for which, root in (("before", base), ("after", REPO)):
                if root is None:
                    continue
                work = tempfile.mkdtemp(prefix=which + "-", dir=tmp)
                block, why = block_for(root, fdir, label["main"], label["client"], work,
                                       details=details and which == "after")
                row[which] = score(block, label)
                row[which + "_block"] = block
                if why is not None:
                    row["why"] = why
                if show:
                    print("=== %s (%s) ===\n%s" % (name, which, block))
            rows.append(row)
    finally:
        if base:
            subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", base], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def table(rows) -> str:
    out = ["| fixture | size | facts present, previous release | facts present, this version | "
           "wrong-as-current shown, previous | wrong-as-current shown, this | block chars (prev → this) |",
           "|---|---|---|---|---|---|---|"]
    tot = {"b": 0, "a": 0, "n": 0, "bw": 0, "aw": 0, "big_a": 0, "big_n": 0, "big_b": 0}
    for r in rows:
        b, a = r.get("before"), r["after"]
        tot["n"] += a["facts"]
        tot["a"] += a["present"]
        tot["aw"] += len(a["wrong_shown"])
        if b:
            tot["b"] += b["present"]
            tot["bw"] += len(b["wrong_shown"])
        if r["bytes"] > 1_000_000:
            tot["big_n"] += a["facts"]
            tot["big_a"] += a["present"]
            tot["big_b"] += b["present"] if b else 0
        out.append("| %s | %.0f KB | %s | %d/%d | %s | %d/%d | %s → %d |" % (
            r["fixture"], r["bytes"] / 1024, "%d/%d" % (b["present"], b["facts"]) if b else "-",
            a["present"], a["facts"], "%d/%d" % (len(b["wrong_shown"]), b["wrong"]) if b else "-",
            len(a["wrong_shown"]), a["wrong"], b["chars"] if b else "-", a["chars"]))
    pct = lambda x, n: "%.0f%%" % (100.0 * x / n) if n else "-"
    out.append("| **all** | | %s | %d/%d (%s) | %d | %d | |" % (
        "%d/%d (%s)" % (tot["b"], tot["n"], pct(tot["b"], tot["n"])), tot["a"], tot["n"], pct(tot["a"], tot["n"]),
        tot["bw"], tot["aw"]))
    out.append("| **sessions over 1 MB** | | %s | %s | | | |" % (
        "%d/%d (%s)" % (tot["big_b"], tot["big_n"], pct(tot["big_b"], tot["big_n"])),
        "%d/%d (%s)" % (tot["big_a"], tot["big_n"], pct(tot["big_a"], tot["big_n"]))))
    return "\n".join(out)


def markdown(rows) -> str:
    out = ["# The block of every bundled real session", "",
           "Generated by `python -m cortex.bench.quality --markdown docs/blocks.md` (labels: "
           "tests/corpora/fixture_labels.json). Each fixture is normalized alone into a fresh home; the block is "
           "what `cortex-session-start --cwd <the session's cwd>` prints. Ages are against the day the doc was "
           "generated (the fixtures are months old).", ""]
    for r in rows:
        a = r["after"]
        out += ["## %s (%.0f KB)" % (r["fixture"], r["bytes"] / 1024), "",
                "Facts present: %d/%d%s. Wrong-as-current shown: %d/%d." % (
                    a["present"], a["facts"],
                    " (previous release: %d/%d)" % (r["before"]["present"], r["before"]["facts"]) if r.get("before")
                    else "", len(a["wrong_shown"]), a["wrong"]), ""]
        if a["missing"]:
            out += ["Missing: " + "; ".join(a["missing"]), ""]
        out += ["```", r["after_block"].rstrip("\n") or "(no block)", "```", ""]
        why = r.get("why")
        if why:
            from collections import Counter
            reasons = Counter(w for _, _, w in why["left"])
            kept = Counter(t for t, _ in why["kept"])
            out += ["Kept: %s. Left out: %s." % (
                ", ".join("%d %s" % (n, t) for t, n in sorted(kept.items())) or "nothing",
                ", ".join("%d (%s)" % (n, w) for w, n in sorted(reasons.items())) or "nothing"), ""]
            out += ["- left out, %s: [%s] %s" % (w, t, x.replace("\n", " ")[:90] + ("…" if len(x) > 90 else ""))
                    for t, x, w in why["left"]]
            if why["left"]:
                out.append("")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m cortex.bench.quality", description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default=None, help="git ref of the previous release (default: merge base with "
                                                      "main); 'none' to skip it")
    ap.add_argument("--fixture", action="append", help="only this fixture (repeatable)")
    ap.add_argument("--show", action="store_true", help="print each block")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--markdown", help="write every block, with what it kept and left out, to this file")
    args = ap.parse_args(argv)
    rows = run(args.baseline, args.fixture, args.show, details=bool(args.markdown))
    print(table(rows))
    for r in rows:
        if r["after"]["missing"]:
            print("%s missing: %s" % (r["fixture"], "; ".join(r["after"]["missing"])))
        if r["after"]["wrong_shown"]:
            print("%s WRONG as current: %s" % (r["fixture"], "; ".join(r["after"]["wrong_shown"])))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(markdown(rows))
    big = [r for r in rows if r["bytes"] > 1_000_000]
    n = sum(r["after"]["facts"] for r in big)
    ok = (not n or sum(r["after"]["present"] for r in big) >= 0.8 * n) and \
        not any(r["after"]["wrong_shown"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
