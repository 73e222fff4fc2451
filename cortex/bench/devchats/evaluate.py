#!/usr/bin/env python3
"""Run the devchats corpus through the installed Cortex commands and score it against a rank-bm25 baseline.

    python -m cortex.bench.devchats [--seed 7] [--chats 180] [--keep DIR] [--json FILE] [--normalize-every N]

Only the installed commands are used (subprocess): cortex-stop, cortex-normalize, cortex export,
cortex recall --json, cortex show --json (fallback), cortex-prompt.  Everything happens in a temporary
folder (or --keep DIR): ROOT/parcelwise (the project, a `git init` repository), ROOT/claude/projects/<slug>/
(the transcripts, where Claude Code keeps them), ROOT/home (CORTEX_HOME).  See README.md for the metrics.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone

from cortex.bench.devchats import generate

K = 5
KINDS = ("bug", "decide", "amend-bug", "amend-decide")      # the original query kinds ("recall@5 all")
NAMED_KINDS = ("bug-named", "amend-bug-named")             # the same symptoms filed against the subject by name
AMEND2_KINDS = ("amend2-decide", "amend2-bug")             # rules amended a second time (rule -> amendment -> this)
WORD = re.compile(r"[a-z0-9]+")


def tokens(text):
    return WORD.findall(text.lower())


def clean_env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_", "GEMINI_", "CLAUDE", "PYTHONSTARTUP"))}
    env.pop("PYTHONPATH", None)
    env["CORTEX_HOME"] = home
    env["NO_COLOR"] = "1"
    return env


def run(cmd, env, cwd, stdin=None, check=True):
    p = subprocess.run(cmd, input=stdin, capture_output=True, env=env, cwd=cwd, timeout=300)
    if check and p.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (" ".join(cmd[:3]), p.returncode, p.stderr.decode(errors="replace")[-2000:]))
    return p


def chat_text(path):
    """All user and assistant prose of a transcript (no tool calls, no tool results)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            c = rec.get("message", {}).get("content")
            if rec.get("type") == "user" and isinstance(c, str):
                out.append(c)
            elif rec.get("type") == "assistant" and isinstance(c, list):
                out += [b.get("text", "") for b in c if b.get("type") == "text"]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------ Cortex side

class Cortex:
    def __init__(self, home, project, env):
        self.home, self.project, self.env = home, project, env
        self.records = {}     # id -> export line
        self.show_calls = 0

    def export(self):
        p = run(["cortex", "export"], self.env, self.project)
        self.records = {}
        for line in p.stdout.decode("utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                self.records[r["id"]] = r
        return self.records

    def sessions_of(self, hit):
        """Session ids a recall hit comes from: the hit's own `session`/`sessions`/`provenance` if the JSON
        carries them, else the record's provenance from `cortex export`, else `cortex show ID --json`."""
        if hit.get("session"):
            return {hit["session"]}
        if hit.get("sessions"):
            return set(hit["sessions"])
        if hit.get("provenance"):
            return {p.get("session") for p in hit["provenance"] if p.get("session")}
        rec = self.records.get(hit["id"])
        if rec is None:
            self.show_calls += 1
            p = run(["cortex", "show", hit["id"], "--json"], self.env, self.project, check=False)
            rec = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else {}
            self.records[hit["id"]] = rec
        return {p.get("session") for p in rec.get("provenance") or [] if p.get("session")}

    def recall(self, query, k=K):
        p = run(["cortex", "recall", query, "-k", str(k), "--json", "--no-use", "--cwd", self.project],
                self.env, self.project)
        hits = json.loads(p.stdout).get("hits", [])
        return [(h, self.sessions_of(h)) for h in hits]

    def prompt(self, query, transcript_dir):
        sid = str(uuid.uuid4())
        path = os.path.join(transcript_dir, "prompt-%s.jsonl" % sid)
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": self.project,
                                "sessionId": sid, "version": "2.1.39", "gitBranch": "main", "type": "user",
                                "message": {"role": "user", "content": query}, "uuid": str(uuid.uuid4()),
                                "timestamp": now}) + "\n")
        payload = {"session_id": sid, "transcript_path": path, "cwd": self.project,
                   "hook_event_name": "UserPromptSubmit", "prompt": query}
        p = run(["cortex-prompt", "--client", "claude-code"], self.env, self.project,
                stdin=json.dumps(payload).encode())
        os.unlink(path)
        return p.stdout.decode("utf-8")


LINE_RE = re.compile(r"^- \[([a-z]+)[^\]]*\]\s*(.*)$")


# Prompts a person types that ask about nothing discussed before (thanks, go-aheads, requests about the
# moment), some with ordinary words the chats also use: cortex-prompt should print nothing for them.
SMALL_TALK = [
    "thanks!", "ok go ahead", "yes please", "can you continue where you left off?", "show me the diff",
    "looks good to me, commit it", "run the tests again", "what time is it?", "hi there", "great work, thank you",
    "let's take a short break", "can you explain that again more simply?", "undo the last change",
    "please format the file", "what did you just do?", "that's all for today", "push it to the branch",
    "keep going with the next step", "open the readme", "why did that take so long?", "good morning!",
    "sounds good, carry on", "can you summarise what we did today?", "never mind, skip that", "fix the typo in the comment",
]


def prompt_lines(output):
    """[(type, body)] of the record lines cortex-prompt printed ("- [type, age, conf] body")."""
    return [(m.group(1), m.group(2).strip()) for m in (LINE_RE.match(l.strip()) for l in output.splitlines()) if m]


def attribute_line(rtype, body, records, chat_tokens):
    """Sessions a printed cortex-prompt line comes from, and which rule said so.

    Rule 1 (record-text): drop the renderer's decorations (a "Last session: " / "Plan: " prefix, a trailing
    "(files…)" note, a trailing "…"), then find the records of the printed type whose word tokens start with
    the line's word tokens (equal, or the line is a cut of the record).  The sessions are their provenance
    sessions (a merged record can name several).
    Rule 2 (overlap, fallback): the chat(s) holding the largest share of the line's word tokens, if that share
    is at least 0.8."""
    body = re.sub(r"^(Last session|Plan): ", "", body)
    variants = [body, re.sub(r"\s*\([^()]*\)$", "", body)]
    for v in variants:
        vt = tokens(v.rstrip("…"))
        if not vt:
            continue
        cands = [r for r in records.values() if r.get("type") == rtype and tokens(r.get("text", ""))[:len(vt)] == vt]
        sess = set()
        for r in cands:
            sess |= {p.get("session") for p in r.get("provenance") or [] if p.get("session")}
        if sess:
            return sess, "record-text"
    toks = set(tokens(body))
    if not toks:
        return set(), "none"
    shares = {sid: len(toks & ct) / len(toks) for sid, ct in chat_tokens.items()}
    best = max(shares.values())
    if best < 0.8:
        return set(), "none"
    return {sid for sid, s in shares.items() if s == best}, "overlap"


# ------------------------------------------------------------------------------------------ main

def rank_of(session_lists, accept):
    for i, sess in enumerate(session_lists):
        if sess & set(accept):
            return i + 1
    return None


def above_all(session_lists, new, olds):
    """{new_rank, old_ranks, above}: whether the session `new` appears and ranks before every one of `olds`."""
    n, o = rank_of(session_lists, [new]), [rank_of(session_lists, [x]) for x in olds]
    return {"new_rank": n, "old_ranks": o, "above": n is not None and all(r is None or n < r for r in o)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--chats", type=int, default=180)
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (corpus, transcripts, CORTEX_HOME)")
    ap.add_argument("--json", metavar="FILE", help="write every figure and per-query result to FILE")
    ap.add_argument("--normalize-every", type=int, default=0, metavar="N",
                    help="run cortex-normalize after every N chats (default: once, after all)")
    a = ap.parse_args(argv)
    t_start = time.time()

    root = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="devchats-")
    if a.keep and os.path.exists(root) and os.listdir(root):
        raise SystemExit("--keep %s: folder is not empty" % root)
    project = os.path.join(root, "parcelwise")
    home = os.path.join(root, "home")
    client_dir = os.path.join(root, "claude", "projects", project.replace("/", "-"))
    corpus = os.path.join(root, "corpus")
    for d in (project, client_dir):
        os.makedirs(d, exist_ok=True)
    env = clean_env(home)
    run(["git", "init", "-q"], env, project)

    end = (datetime.now(timezone.utc) - timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    labels = generate.generate(corpus, seed=a.seed, chats=a.chats, cwd=project, end=end)
    chats = sorted(labels["chats"], key=lambda c: c["start"])
    kind_of = {c["session_id"]: c["kind"] for c in chats}

    # ---- capture, in time order: the transcript appears where the client keeps it, then the Stop hook fires
    t0 = time.time()
    normalize_runs = []
    for i, c in enumerate(chats):
        dst = os.path.join(client_dir, c["session_id"] + ".jsonl")
        shutil.copyfile(os.path.join(corpus, c["file"]), dst)
        payload = {"session_id": c["session_id"], "transcript_path": dst, "cwd": project, "hook_event_name": "Stop"}
        run(["cortex-stop", "--client", "claude-code"], env, project, stdin=json.dumps(payload).encode())
        if a.normalize_every and (i + 1) % a.normalize_every == 0:
            normalize_runs.append(run(["cortex-normalize"], env, project).stdout.decode().strip())
    normalize_runs.append(run(["cortex-normalize"], env, project).stdout.decode().strip())
    t_capture = time.time() - t0

    cx = Cortex(home, project, env)
    records = cx.export()
    by_session = {}
    for r in records.values():
        for p in r.get("provenance") or []:
            by_session.setdefault(p.get("session"), []).append(r)

    # ---- baseline: rank-bm25 over the raw chats
    texts = {c["session_id"]: chat_text(os.path.join(corpus, c["file"])) for c in chats}
    chat_tokens = {sid: set(tokens(t)) for sid, t in texts.items()}
    try:
        from rank_bm25 import BM25Okapi
        order = [c["session_id"] for c in chats]
        bm25 = BM25Okapi([tokens(texts[s]) for s in order])

        def baseline(query, k=K):
            scores = bm25.get_scores(tokens(query))
            best = sorted(range(len(order)), key=lambda i: (-scores[i], i))[:k]
            return [{order[i]} for i in best]
    except ImportError:
        baseline = None

    # ---- queries
    t0 = time.time()
    results = []
    for q in labels["queries"]:
        k = 50 if q["kind"] in ("amend-decide", "amend2-decide") else K
        hits = cx.recall(q["text"], k=k)
        sess_lists = [s for _, s in hits]
        res = {"id": q["id"], "kind": q["kind"], "text": q["text"], "target": q["target"], "accept": q["accept"],
               "cortex_rank": rank_of(sess_lists[:K], q["accept"]),
               "cortex_hits": [{"id": h["id"], "type": h["type"], "text": h.get("text", "")[:200], "sessions": sorted(s),
                                "kinds": sorted({kind_of.get(x, "?") for x in s})} for h, s in hits[:K]]}
        res.update({key: q[key] for key in ("subject_form", "from") if key in q})
        out = cx.prompt(q["text"], client_dir)
        lines = prompt_lines(out)
        attributed = [attribute_line(t, body, records, chat_tokens) for t, body in lines]
        res["prompt_lines"] = [{"type": t, "text": body, "sessions": sorted(s), "by": how}
                               for (t, body), (s, how) in zip(lines, attributed)]
        res["prompt_hit"] = any(s & set(q["accept"]) for s, _ in attributed)
        if baseline:
            bl = baseline(q["text"], k=k)
            res["bm25_rank"] = rank_of(bl[:K], q["accept"])
        if q["kind"] == "amend-decide":
            new, old = rank_of(sess_lists, [q["target"]]), rank_of(sess_lists, [q["superseded"]])
            res["cortex_amend"] = {"new_rank": new, "old_rank": old,
                                   "above": new is not None and (old is None or new < old)}
            if baseline:
                bl = baseline(q["text"], k=len(chats))
                nb, ob = rank_of(bl, [q["target"]]), rank_of(bl, [q["superseded"]])
                res["bm25_amend"] = {"new_rank": nb, "old_rank": ob, "above": nb is not None and (ob is None or nb < ob)}
        if q["kind"] == "amend2-decide":   # above the chats of both the first amendment and the rule
            res["cortex_amend2"] = above_all(sess_lists, q["target"], q["superseded"])
            if baseline:
                res["bm25_amend2"] = above_all(baseline(q["text"], k=len(chats)), q["target"], q["superseded"])
        results.append(res)
    # ---- small talk: prompts about nothing discussed, where cortex-prompt should print nothing
    small_talk = [{"text": text, "printed": bool(prompt_lines(cx.prompt(text, client_dir)))} for text in SMALL_TALK]
    t_queries = time.time() - t0

    # ---- figures
    def share(rows, key):
        rows = list(rows)
        return (sum(1 for r in rows if key(r)), len(rows))

    def recall_row(rows):
        return {"cortex": share(rows, lambda r: r["cortex_rank"] is not None),
                "bm25": share(rows, lambda r: r.get("bm25_rank") is not None) if baseline else None}

    fig = {}
    of_kind = lambda *kinds: [r for r in results if r["kind"] in kinds]  # noqa: E731
    for kind in KINDS + NAMED_KINDS + AMEND2_KINDS:
        fig["recall@5 " + kind] = recall_row(of_kind(kind))
    old = of_kind(*KINDS)   # "all" and the prompt's totals keep their meaning from before the named kinds
    fig["recall@5 all"] = recall_row(old)
    fig["recall@5 all incl. named"] = recall_row(of_kind(*KINDS + NAMED_KINDS))
    fig["recall@5 all incl. named, amend2"] = recall_row(results)
    fig["prompt shows right session"] = {"cortex": share(old, lambda r: r["prompt_hit"]), "bm25": None}
    fig["prompt printed anything"] = {"cortex": share(old, lambda r: bool(r["prompt_lines"])), "bm25": None}
    fig["prompt printed on small talk"] = {"cortex": share(small_talk, lambda r: r["printed"]), "bm25": None}
    for kind in ("bug", "bug-named", "amend-bug", "amend-bug-named"):
        fig["prompt shows right session " + kind] = {"cortex": share(of_kind(kind), lambda r: r["prompt_hit"]),
                                                     "bm25": None}
    fig["prompt shows right session amend2"] = {"cortex": share(of_kind(*AMEND2_KINDS), lambda r: r["prompt_hit"]),
                                                "bm25": None}
    fig["prompt shows right session incl. named"] = {"cortex": share(of_kind(*KINDS + NAMED_KINDS),
                                                                     lambda r: r["prompt_hit"]), "bm25": None}
    am = [r for r in results if r["kind"] == "amend-decide"]
    fig["amendment ranks above superseded"] = {"cortex": share(am, lambda r: r["cortex_amend"]["above"]),
                                               "bm25": share(am, lambda r: r["bm25_amend"]["above"]) if baseline else None}
    am2 = of_kind("amend2-decide")
    fig["second amendment ranks above both earlier rules' chats"] = {
        "cortex": share(am2, lambda r: r["cortex_amend2"]["above"]),
        "bm25": share(am2, lambda r: r["bm25_amend2"]["above"]) if baseline else None}
    rule_sids = [r["session_id"] for r in labels["rules"]]
    amend_sids = [r["session_id"] for r in labels["amendments"]]
    decoy_sids = [d["session_id"] for d in labels["decoys"]]
    has = lambda sid, types: any(r["type"] in types for r in by_session.get(sid, []))  # noqa: E731
    fig["rule chats with decision/rejected record"] = {"cortex": share(rule_sids, lambda s: has(s, ("decision", "rejected"))), "bm25": None}
    fig["rule chats with decision record"] = {"cortex": share(rule_sids, lambda s: has(s, ("decision",))), "bm25": None}
    fig["rule chats with rejected record"] = {"cortex": share(rule_sids, lambda s: has(s, ("rejected",))), "bm25": None}
    fig["amendment chats with decision record"] = {"cortex": share(amend_sids, lambda s: has(s, ("decision",))), "bm25": None}
    amend2_sids = [r["session_id"] for r in labels.get("second_amendments", [])]
    fig["second amendment chats with decision record"] = {"cortex": share(amend2_sids, lambda s: has(s, ("decision",))),
                                                          "bm25": None}

    def retires_first(a2):   # a decision of the second amendment's chat supersedes one of the first amendment's
        firsts = {r["id"] for r in by_session.get(a2["supersedes"], []) if r["type"] == "decision"}
        return any(set(r.get("supersedes") or ()) & firsts for r in by_session.get(a2["session_id"], [])
                   if r["type"] == "decision")
    fig["second amendment retires the first amendment's decision"] = {
        "cortex": share(labels.get("second_amendments", []), retires_first), "bm25": None}
    fig["decoy chats with decision/rejected (false)"] = {"cortex": share(decoy_sids, lambda s: has(s, ("decision", "rejected"))), "bm25": None}
    unrel = labels["unrelated"]
    fig["unrelated chats with decision/rejected"] = {"cortex": share(unrel, lambda s: has(s, ("decision", "rejected"))), "bm25": None}

    by_form = {}   # the named kinds by how the report names the subject
    for form in generate.NAMED_FORMS:
        rows = [r for r in of_kind(*NAMED_KINDS) if r.get("subject_form") == form]
        if rows:
            by_form[form] = dict(recall_row(rows), prompt=share(rows, lambda r: r["prompt_hit"]))

    types = {}
    for r in records.values():
        key = (r["type"], r.get("status"))
        types[key] = types.get(key, 0) + 1
    per_kind = {}
    for sid, recs in by_session.items():
        k2 = kind_of.get(sid, "?")
        for r in recs:
            per_kind.setdefault(k2, {}).setdefault(r["type"], 0)
            per_kind[k2][r["type"]] += 1

    # ---- table
    print("devchats seed=%d chats=%d queries=%d root=%s" % (a.seed, len(chats), len(results), root))
    print("%-54s %14s %14s" % ("metric", "cortex", "rank-bm25"))
    for name, v in fig.items():
        def cell(x):
            return "-" if x is None else "%3d/%-3d %5.1f%%" % (x[0], x[1], 100.0 * x[0] / x[1] if x[1] else 0)
        print("%-54s %14s %14s" % (name, cell(v["cortex"]), cell(v["bm25"])))
    if by_form:
        print("named bug reports by subject form (recall@5 cortex / rank-bm25 / prompt right session): " + "; ".join(
            "%s %s" % (form, " / ".join("-" if v[x] is None else "%d/%d" % tuple(v[x]) for x in ("cortex", "bm25", "prompt")))
            for form, v in by_form.items()))
    print("records by type/status: " + ", ".join("%s/%s %d" % (t, s, n) for (t, s), n in sorted(types.items())))
    print("records by chat kind:   " + "; ".join("%s: %s" % (k2, ", ".join("%s %d" % kv for kv in sorted(v.items())))
                                               for k2, v in sorted(per_kind.items())))
    print("normalize: %s" % normalize_runs[-1])
    print("time: capture+normalize %.1fs, queries %.1fs, total %.1fs; cortex show fallbacks: %d"
          % (t_capture, t_queries, time.time() - t_start, cx.show_calls))

    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"seed": a.seed, "chats": len(chats), "root": root if a.keep else None,
                       "figures": {k2: v for k2, v in fig.items()}, "named_by_subject_form": by_form,
                       "records_by_type_status": {"%s/%s" % k2: n for k2, n in sorted(types.items())},
                       "records_by_chat_kind": per_kind, "normalize": normalize_runs,
                       "queries": results, "small_talk": small_talk}, f, indent=1, ensure_ascii=False,
                      sort_keys=True)
            f.write("\n")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
