"""Developer chats written apart: does extraction generalise to chats nobody wrote for it?

    python -m cortex.bench.apart [--corpus NAME ...] [--keep DIR] [--baseline REF]

The corpora (tests/corpora/written_apart/<name>/chats.json and labels.json, README.md there) were written by
writers who did not read Cortex's extraction code, each about a fictional code base: decisions settled the
way people settle them with a coding assistant, later chats that amend them, brainstorms that end
undecided, and unrelated chats about the same code.  For each corpus, in a fresh CORTEX_HOME and a git
project holding the files the chats touch, each chat is written as a Claude Code JSONL transcript in time
order, `cortex-stop --client claude-code` fires after each, `cortex-normalize` runs after the middle chat
and at the end, then:

  a. decisions captured (a decision record from the chat that holds all rule_words; active for rules in
     force, any status for rules a later chat amended) and amended rules retired;
  b. recall per question (`cortex recall Q -k 5 --json`): the right chat at rank 1 / in the top 5, the top
     hit's text holding the rule words, a stale rule presented as current in the top 3; beside a plain
     rank-bm25 baseline over the raw chats;
  c. rejected alternatives captured;
  d. decision records from undecided (brainstorming) chats, and from unrelated chats;
  e. the session-start block: how many rules in force have all their rule_words in it.

Prints a table a corpus and writes <dir>/results.json with per-question details.  With `--baseline REF`
each corpus is run a second time, first, by the code of git ref REF (a worktree, as `cortex.bench.quality`
does): the table then has REF's column beside this tree's and rank-bm25's, all from the same run.  Cortex is driven only
through its installed commands (as `python -m cortex.bench.devchats` is); rank-bm25 is the bench extra.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid

from rank_bm25 import BM25Okapi

from cortex.bench.transcript import Transcript

CORPORA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests",
                       "corpora", "written_apart")
DAY = 86400


def tool_path(name):
    p = shutil.which(name)
    if p:
        return p
    alt = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(alt):
        return alt
    raise SystemExit("%s not found: install Cortex (pip install -e .) and run from its environment" % name)


# ------------------------------------------------------------------------------------------------
def subst(obj, proj):
    if isinstance(obj, str):
        return obj.replace("{P}", proj)
    if isinstance(obj, list):
        return [subst(x, proj) for x in obj]
    if isinstance(obj, dict):
        return {k: subst(v, proj) for k, v in obj.items()}
    return obj


def session_id(cid):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "written-apart/" + cid))


def write_transcript(path, sid, proj, chat, t0):
    t = Transcript(path, sid, proj, t0)
    for turn in chat["turns"]:
        turn = subst(turn, proj)
        if "user" in turn:
            t.user(turn["user"])
        elif "assistant" in turn:
            t.say(turn["assistant"])
        else:
            t.tool(turn["tool"], turn["input"], turn["result"], bool(turn.get("error")))
    return t


def unnumber(text):
    lines = text.split("\n")
    if lines and all(re.match(r"^\s*\d+\t", l) for l in lines if l):
        return "\n".join(re.sub(r"^\s*\d+\t", "", l) for l in lines) + "\n"
    return None


def make_project(proj, chats):
    """A git repository holding every file the chats read, edit or write (so no record names a missing file)."""
    os.makedirs(proj, exist_ok=True)
    files = {}
    for c in chats:
        for turn in c["turns"]:
            fp = turn.get("input", {}).get("file_path") if "tool" in turn else None
            if not fp:
                continue
            rel = fp.replace("{P}/", "")
            if rel in files:
                continue
            if turn["tool"] == "Write":
                files[rel] = turn["input"]["content"]
            elif turn["tool"] == "Read":
                files[rel] = unnumber(turn["result"]) or "# %s\n" % rel
            else:
                files[rel] = turn["input"].get("new_string", "") + "\n"
    for rel, content in files.items():
        p = os.path.join(proj, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(content)
    # a fixed date makes the initial commit, so the project's scope id and every record id, the same in every
    # run: records that tie in a ranking then come in the same order, and two runs differ only by the code
    env = dict(os.environ, GIT_AUTHOR_NAME="dev", GIT_AUTHOR_EMAIL="dev@example.test",
               GIT_COMMITTER_NAME="dev", GIT_COMMITTER_EMAIL="dev@example.test",
               GIT_AUTHOR_DATE="2024-01-01T09:00:00+0000", GIT_COMMITTER_DATE="2024-01-01T09:00:00+0000")
    subprocess.run(["git", "init", "-q", "-b", "main", proj], check=True, env=env)
    subprocess.run(["git", "-C", proj, "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", proj, "commit", "-qm", "snapshot"], check=True, env=env)
    return len(files)


# ------------------------------------------------------------------------------------------------
def run(cmd, env, cwd, stdin=None, check=True):
    r = subprocess.run(cmd, env=env, cwd=cwd, input=stdin, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise SystemExit("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr[-2000:]))
    return r


def normalize(env, proj):
    t = time.time()
    r = run([tool_path("cortex-normalize")], env, proj, check=False)
    return {"rc": r.returncode, "seconds": round(time.time() - t, 2), "stdout": r.stdout.strip()[-500:],
            "stderr": r.stderr.strip()[-500:]}


def _word_re(w):
    """A rule word as found in text: not glued to a letter/digit on its left; a word ending in a digit must
    not run on into a longer number ('5' is not found in '5.0', '15' or '50'; '5 min' is found in '5 minutes')."""
    tail = r"(?![0-9A-Za-z_]|[.:,][0-9])" if w[-1:].isdigit() else ""
    return re.compile(r"(?<![0-9A-Za-z_])" + re.escape(w) + tail, re.I)


def has_all(text, words):
    return all(_word_re(w).search(text or "") for w in words)


def tokens(text):
    return re.findall(r"[a-z0-9_]+", text.lower())


def chat_text(chat):
    parts = []
    for turn in chat["turns"]:
        if "user" in turn:
            parts.append(turn["user"])
        elif "assistant" in turn:
            parts.append(turn["assistant"])
        else:
            parts.append(" ".join(str(v) for v in turn["input"].values()))
    return "\n".join(parts)


def short(s, n=260):
    s = re.sub(r"\s+", " ", s or "").strip()
    return s if len(s) <= n else s[:n] + "…"


# ------------------------------------------------------------------------------------------------
def corpora() -> list:
    return sorted(d for d in os.listdir(CORPORA) if os.path.isfile(os.path.join(CORPORA, d, "chats.json")))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", metavar="NAME",
                    help="a corpus under tests/corpora/written_apart, or the folder of one (chats.json, labels.json) "
                         "(default: every one): %s" % ", ".join(corpora()))
    ap.add_argument("--keep", metavar="DIR", help="work in DIR/<corpus> and keep it, with the home as "
                                                   "session start saw it in home_at_start (else a temporary folder)")
    ap.add_argument("--baseline", metavar="REF", help="also run the code of git ref REF (e.g. the previous release) "
                                                      "on each corpus and print it beside this tree")
    args = ap.parse_args(argv)
    import tempfile
    base = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="written-apart-")
    tree = scratch = None
    try:
        if args.baseline:
            from cortex.bench.quality import baseline_root
            scratch = tempfile.mkdtemp(prefix="written-apart-ref-")
            tree = baseline_root(args.baseline, scratch)
        for name in args.corpus or corpora():
            print("== %s" % name)
            # a name under tests/corpora/written_apart, or the folder of a corpus of one's own
            folder = name if os.path.isdir(name) else os.path.join(CORPORA, name)
            name = os.path.basename(os.path.normpath(folder))
            before = run_corpus(folder, os.path.join(base, "baseline", name), tree, quiet=True,
                                snapshot=bool(args.keep)) if tree else None
            rows = run_corpus(folder, os.path.join(base, name), snapshot=bool(args.keep))
            if before:
                print(side_by_side(args.baseline, before, rows))
    finally:
        if tree:
            from cortex.bench.quality import REPO
            subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", tree], capture_output=True)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def side_by_side(ref: str, before: list, after: list) -> str:
    """The measures of REF's run and this tree's, with rank-bm25's (the same in both: the raw chats)."""
    width = max(len(ref), 16)
    lines = ["%-62s %-*s %-16s %s" % ("measure", width, ref, "this tree", "rank-bm25 (raw chats)"), "-" * 110]
    for (name, value0, _), (_, value, base) in zip(before, after):
        lines.append("%-62s %-*s %-16s %s" % (name, width, value0, value, base or ""))
    return "\n".join(lines) + "\n"


def run_corpus(corpus: str, out: str, code: str = None, quiet: bool = False, snapshot: bool = False) -> list:
    """Run one corpus in `out`; `code`: a source tree whose `cortex` the commands import instead of this
    one's.  Returns the table's rows: (measure, cortex's figure, rank-bm25's or a note)."""
    chats = json.load(open(os.path.join(corpus, "chats.json"), encoding="utf-8"))
    labels = json.load(open(os.path.join(corpus, "labels.json"), encoding="utf-8"))
    decisions = labels["decisions"]
    by_id = {d["id"]: d for d in decisions}
    chat_by_id = {c["id"]: c for c in chats}

    out = os.path.abspath(out)
    if os.path.exists(out):
        shutil.rmtree(out)
    home, proj, tdir = (os.path.join(out, x) for x in ("home", "project", "transcripts"))
    os.makedirs(home, mode=0o700)
    nfiles = make_project(proj, chats)
    # one hash seed for every command: where the code walks a set, ties then fall the same way in every run
    # (PYTHONHASHSEED of the caller wins, to measure another seed)
    env = dict(os.environ, CORTEX_HOME=home, NO_COLOR="1", PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"))
    if code:
        env["PYTHONPATH"] = os.pathsep.join([code] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        where = run([sys.executable, "-c", "import cortex; print(cortex.__file__)"], env, code).stdout.strip()
        if not os.path.abspath(where).startswith(os.path.abspath(code) + os.sep):
            raise SystemExit("the commands import cortex from %s, not from the baseline tree %s: install Cortex "
                             "in editable mode (pip install -e .) so that PYTHONPATH can take precedence" % (where, code))

    # -- write chats in time order, Stop hook after each, normalize in the middle and at the end
    order = sorted(chats, key=lambda c: -c["day"])
    now = time.time()
    sid_of, chat_of_sid, norm_runs = {}, {}, []
    for i, c in enumerate(order):
        sid = session_id(c["id"])
        sid_of[c["id"]], chat_of_sid[sid] = sid, c["id"]
        t0 = int(now - c["day"] * DAY) - int(now) % DAY + 9 * 3600 + (i % 5) * 1800  # mornings, UTC
        t0 = min(t0, int(now) - 4 * 3600)
        path = os.path.join(tdir, sid + ".jsonl")
        write_transcript(path, sid, proj, c, t0)
        payload = json.dumps({"session_id": sid, "transcript_path": path, "cwd": proj, "hook_event_name": "Stop"})
        run([tool_path("cortex-stop"), "--client", "claude-code"], env, proj, stdin=payload)
        if i == len(order) // 2 - 1:
            norm_runs.append(dict(normalize(env, proj), after=c["id"]))
    norm_runs.append(dict(normalize(env, proj), after=order[-1]["id"]))

    # -- records
    exp = run([tool_path("cortex"), "export", "--scope", "project", "--cwd", proj], env, proj)
    records = [json.loads(l) for l in exp.stdout.splitlines() if l.strip()]
    for r in records:
        r["_chats"] = sorted({chat_of_sid.get((p or {}).get("session"), "?") for p in r.get("provenance") or []})

    def recs(chat=None, rtype=None, active=None):
        for r in records:
            if chat and chat not in r["_chats"]:
                continue
            if rtype and r["type"] != rtype:
                continue
            if active is not None and (r["status"] == "active") != active:
                continue
            yield r

    # chains: a decision's successors (amendments)
    successor = {d["amends"]: d["id"] for d in decisions if d["amends"]}

    def head(did):
        seen = 0
        while did in successor and seen < 20:
            did, seen = successor[did], seen + 1
        return did

    def chain(did):
        h = head(did)
        ids = [h]
        while by_id[ids[-1]]["amends"]:
            ids.append(by_id[ids[-1]]["amends"])
        return ids  # head first

    # a. decisions captured; amended rules retired
    dec_rows = []
    for d in decisions:
        current = head(d["id"]) == d["id"]
        matching = [r for r in recs(d["chat"], "decision") if has_all(r["text"], d["rule_words"])]
        captured = [r for r in matching if r["status"] == "active"] if current else matching
        any_dec = list(recs(d["chat"], "decision"))
        row = {"id": d["id"], "chat": d["chat"], "subject": d["subject"], "current": current,
               "captured": bool(captured),
               "captured_texts": [short(r["text"], 200) for r in captured][:3],
               "decision_records_from_chat": [{"status": r["status"], "text": short(r["text"], 200)} for r in any_dec][:6]}
        if not current:  # the old rule: kept, but no longer active
            row["retired"] = bool(matching) and not any(r["status"] == "active" for r in matching)
            row["old_rule_still_active"] = any(r["status"] == "active" for r in matching)
        rej = []
        for alt in d["rejected"]:
            hit = [r for r in recs(d["chat"], "rejected", active=True) if has_all(r["text"], alt["words"])]
            rej.append({"words": alt["words"], "captured": bool(hit), "texts": [short(r["text"], 200) for r in hit][:2]})
        row["rejected"] = rej
        row["rejected_records_from_chat"] = [short(r["text"], 200) for r in recs(d["chat"], "rejected")][:4]
        dec_rows.append(row)

    # d. decision records from undecided and unrelated chats
    decision_chats = {d["chat"] for d in decisions}
    undecided = labels["undecided"]
    und_rows = [{"chat": c, "decision_records": [{"status": r["status"], "text": short(r["text"], 200)}
                                                 for r in recs(c, "decision")]} for c in undecided]
    unrelated = [c["id"] for c in chats if c["id"] not in decision_chats and c["id"] not in undecided]
    unrel_rows = [{"chat": c, "decision_records": [{"status": r["status"], "text": short(r["text"], 200)}
                                                   for r in recs(c, "decision")]} for c in unrelated]

    # e. session-start block (before any recall: a recall counts as a use)
    if snapshot:  # the home as session start sees it, to try other block code on later (bench.blockcheck)
        shutil.copytree(home, os.path.join(out, "home_at_start"), ignore=shutil.ignore_patterns("episodes", "done"))
    ss_in = json.dumps({"session_id": "apart-probe", "cwd": proj, "hook_event_name": "SessionStart", "source": "startup"})
    block = run([tool_path("cortex-session-start"), "--client", "claude-code"], env, proj, stdin=ss_in).stdout
    heads = [d for d in decisions if head(d["id"]) == d["id"]]
    ss_rows = [{"id": d["id"], "subject": d["subject"], "rule_words": d["rule_words"], "in_block": has_all(block, d["rule_words"])}
               for d in heads]

    # b. recall per question, beside rank-bm25 over the raw chats
    corpus_ids = [c["id"] for c in chats]
    bm25 = BM25Okapi([tokens(chat_text(c)) for c in chats])

    def bm25_rank(q, target):
        scores = bm25.get_scores(tokens(q))
        ranked = [cid for _, cid in sorted(zip(scores, corpus_ids), key=lambda x: -x[0])]
        return ranked.index(target) + 1, ranked[:5]

    def recall(q):
        r = run([tool_path("cortex"), "recall", q, "-k", "5", "--json"], env, proj, check=False)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {"hits": [], "error": r.stderr.strip()[-400:]}

    def hit_chats(h):
        sids = list(h.get("sessions") or []) or ([h["session"]] if h.get("session") else [])
        return sorted({chat_of_sid.get(s, "?") for s in sids})

    q_rows = []
    for d in decisions:
        ids = chain(d["id"])
        hd = by_id[ids[0]]
        chain_chats = [by_id[x]["chat"] for x in ids]
        stale_sets = [by_id[x]["stale_words"] for x in ids if by_id[x]["stale_words"]]
        for qi, q in enumerate(d["questions"]):
            res = recall(q)
            hits = res.get("hits", [])[:5]
            hc = [hit_chats(h) for h in hits]
            rank = next((i + 1 for i, cs in enumerate(hc) if hd["chat"] in cs), None)
            rank_chain = next((i + 1 for i, cs in enumerate(hc) if set(cs) & set(chain_chats)), None)
            top_text = hits[0].get("text", "") if hits else ""
            stale_hits = []
            for i, h in enumerate(hits[:3]):
                if h.get("kind", "record") != "record" or h.get("status") != "active":
                    continue
                if hc[i] == [hd["chat"]]:  # the amending chat's own records quote the old value as what changed
                    continue
                for sw in stale_sets:
                    if has_all(h.get("text", ""), sw) and not has_all(h.get("text", ""), hd["rule_words"]):
                        stale_hits.append({"rank": i + 1, "chats": hc[i], "text": short(h.get("text", ""), 200)})
            brank, btop = bm25_rank(q, hd["chat"])
            q_rows.append({
                "decision": d["id"], "head": hd["id"], "query": q, "bug_style": qi == 4,
                "expected_chat": hd["chat"], "chain_chats": chain_chats, "rule_words": hd["rule_words"],
                "terms": res.get("terms"),
                "cortex_rank": rank, "cortex_top1": rank == 1, "cortex_top5": rank is not None,
                "cortex_chain_top1": rank_chain == 1, "cortex_chain_top5": rank_chain is not None,
                "top_text_has_rule": has_all(top_text, hd["rule_words"]),
                "stale_error": bool(stale_hits), "stale_hits": stale_hits,
                "hits": [{"chats": hc[i], "kind": h.get("kind"), "type": h.get("type"), "status": h.get("status"),
                          "score": h.get("score"), "text": short(h.get("text", ""), 300)} for i, h in enumerate(hits)],
                "bm25_rank": brank, "bm25_top1": brank == 1, "bm25_top5": brank <= 5, "bm25_top5_chats": btop,
                "error": res.get("error"),
            })

    und_q = []
    for u in labels.get("undecided_questions", []):
        res = recall(u["question"])
        hits = res.get("hits", [])[:5]
        hc = [hit_chats(h) for h in hits]
        und_q.append({"chat": u["chat"], "query": u["question"],
                      "chat_rank": next((i + 1 for i, cs in enumerate(hc) if u["chat"] in cs), None),
                      "top_is_decision_record": bool(hits) and hits[0].get("kind") == "record" and hits[0].get("type") == "decision",
                      "hits": [{"chats": hc[i], "kind": h.get("kind"), "type": h.get("type"), "status": h.get("status"),
                                "text": short(h.get("text", ""), 300)} for i, h in enumerate(hits)],
                      "bm25_rank": bm25_rank(u["question"], u["chat"])[0]})

    # ---------------------------------------------------------------------------------------------
    def pct(n, d):
        return "%d/%d (%d%%)" % (n, d, round(100.0 * n / d)) if d else "0/0"

    cur = [r for r in dec_rows if r["current"]]
    old = [r for r in dec_rows if not r["current"]]
    all_rej = [x for r in dec_rows for x in r["rejected"]]
    nat = [q for q in q_rows if not q["bug_style"]]
    bug = [q for q in q_rows if q["bug_style"]]
    amended_q = [q for q in q_rows if len(q["chain_chats"]) > 1]
    lines, rows = [], []

    def row(name, value, base=None):
        rows.append((name, value, base))
        lines.append("%-62s %-16s %s" % (name, value, base or ""))

    lines.append("%-62s %-16s %s" % ("measure", "cortex", "rank-bm25 (raw chats)"))
    lines.append("-" * 100)
    row("a. decisions in force captured (active, all rule_words)", pct(sum(r["captured"] for r in cur), len(cur)))
    row("a. amended decisions captured (any status)", pct(sum(r["captured"] for r in old), len(old)))
    row("a. amended decisions captured and retired (superseded)", pct(sum(r["retired"] for r in old), len(old)))
    row("a. amended decisions whose old rule is still active (err)", pct(sum(r["old_rule_still_active"] for r in old), len(old)))
    row("a. decision records from the rule chats, any text", pct(sum(1 for r in dec_rows if r["decision_records_from_chat"]), len(dec_rows)))
    for name, qs in (("all questions", q_rows), ("natural questions", nat), ("bug-report questions", bug),
                     ("questions on amended rules", amended_q)):
        row("b. %s: right chat at rank 1" % name, pct(sum(q["cortex_top1"] for q in qs), len(qs)),
            pct(sum(q["bm25_top1"] for q in qs), len(qs)))
        row("b. %s: right chat in top 5" % name, pct(sum(q["cortex_top5"] for q in qs), len(qs)),
            pct(sum(q["bm25_top5"] for q in qs), len(qs)))
    row("b. all questions: top hit's text holds the rule words", pct(sum(q["top_text_has_rule"] for q in q_rows), len(q_rows)))
    row("b. all questions: top hit is a record holding the rule words",
        pct(sum(1 for q in q_rows if q["top_text_has_rule"] and q["hits"] and q["hits"][0]["kind"] == "record"), len(q_rows)))
    row("b. amended-rule questions: top hit from the replaced rule's chat",
        pct(sum(1 for q in amended_q if q["hits"] and q["expected_chat"] not in q["hits"][0]["chats"]
                and set(q["hits"][0]["chats"]) & set(q["chain_chats"][1:])), len(amended_q)))
    row("b. all questions: any chat of the rule's chain at rank 1", pct(sum(q["cortex_chain_top1"] for q in q_rows), len(q_rows)))
    row("b. amended-rule questions: stale rule as current in top 3 (err)", pct(sum(q["stale_error"] for q in amended_q), len(amended_q)))
    row("c. rejected alternatives captured (active, words)", pct(sum(x["captured"] for x in all_rej), len(all_rej)))
    row("d. undecided chats with a decision record (want 0)",
        pct(sum(1 for u in und_rows if u["decision_records"]), len(und_rows)),
        "records: %d" % sum(len(u["decision_records"]) for u in und_rows))
    row("d. unrelated chats with a decision record", pct(sum(1 for u in unrel_rows if u["decision_records"]), len(unrel_rows)),
        "records: %d" % sum(len(u["decision_records"]) for u in unrel_rows))
    row("d. undecided questions: that chat in top 5", pct(sum(1 for u in und_q if u["chat_rank"]), len(und_q)),
        pct(sum(1 for u in und_q if u["bm25_rank"] <= 5), len(und_q)))
    row("d. undecided questions: top hit is a decision record", pct(sum(u["top_is_decision_record"] for u in und_q), len(und_q)))
    row("e. session start: rules in force with all rule_words in block", pct(sum(r["in_block"] for r in ss_rows), len(ss_rows)),
        "block %d chars" % len(block))
    failed = sum(int(m.group(1)) for n in norm_runs for m in [re.search(r"(\d+) failed", n["stdout"])] if m)
    row("f. sessions the normalizer failed (want 0; see its log)", str(failed),
        "normalize rc: %s" % ", ".join(str(n["rc"]) for n in norm_runs))
    lines.append("-" * 100)
    lines.append("records: %d (%s); normalize runs: %s; project files: %d" % (
        len(records), ", ".join("%s %d" % (t, sum(1 for r in records if r["type"] == t))
                                for t in sorted({r["type"] for r in records})),
        ", ".join("after %s rc=%d %.1fs" % (n["after"], n["rc"], n["seconds"]) for n in norm_runs), nfiles))
    table = "\n".join(lines)
    if not quiet:
        print(table)

    results = {"table": table, "normalize": norm_runs, "decisions": dec_rows, "questions": q_rows,
               "undecided": und_rows, "undecided_questions": und_q, "unrelated": unrel_rows,
               "session_start": {"rows": ss_rows, "block": block},
               "sessions": {c: sid_of[c] for c in sid_of}}
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, ensure_ascii=False)
    if not quiet:
        print("details: %s\n" % os.path.join(out, "results.json"))
    return rows


if __name__ == "__main__":
    main()
