#!/usr/bin/env python3
""""What did we decide about X?" asked many ways, on a devchats corpus already run through Cortex.

    python -m cortex.bench.devchats --seed 7 --keep /tmp/dc7          # the corpus, normalized
    python -m cortex.bench.devchats.questions /tmp/dc7 [--json FILE]  # this

For each of the corpus's 36 rules, every phrasing below names its subject (code or prose form, as the
phrasing says) and goes to `cortex recall` (the library call, in this process, `record_use=False`), and to
rank-bm25 over the raw chats (one document per chat, as evaluate.py's baseline).  The answer wanted is the
rule in force: the decision record of the last chat of the rule's chain (rule -> amendment -> second
amendment).  Measured: that record first (and in the first 3), its chat first (and in the first 5; for
rank-bm25 the chat), and a chat of a replaced version of the rule above it.

Two sets of phrasings: `GENERATOR` are the six the corpus's own `decide` queries use (generate.DECIDE_Q);
`APART` were written for this measure without looking at how recall reads questions, before
`model/question.py` existed, so they test the wording rule on questions it was not written from.
"""
import argparse
import json
import os
import sys

from cortex.bench.devchats import generate
from cortex.bench.devchats.evaluate import chat_text, tokens

GENERATOR = list(generate.DECIDE_Q)
APART = [
    "what was our call on {code}?", "how did we end up handling {prose}?", "which approach did we pick for {prose}?",
    "what did we land on for {code}?", "what's the current policy for {prose}?", "did we settle {prose} in the end?",
    "what was the conclusion about {code}?", "what did we say {prose} should do?",
    "what's the agreed behaviour of {code}?", "how is {prose} supposed to work now?",
    "what's the decision on {prose}?", "quick check: what did we go with for {code}?",
    "I forgot what we chose for {prose}", "what's the plan for {code} that we agreed on?",
    "can you remind me how we decided to handle {prose}?", "what were the rules we set for {code}?",
    "{code} - what did we settle on?",
]


def chains(labels: dict) -> dict:
    """rule key -> (rule label, [the chats of its versions, oldest first])."""
    amendments = {a["session_id"]: a for a in labels["amendments"]}
    out = {}
    for r in labels["rules"]:
        chain = [r["session_id"]]
        nxt = r.get("amended_by")
        while nxt:
            chain.append(nxt)
            nxt = (amendments.get(nxt) or {}).get("amended_by")
        out[r["key"]] = (r, chain)
    return out


def phrase(template: str, rule: dict) -> str:
    code = "`%s`" % rule["subject"]
    prose = rule["subject_prose"]
    if template.startswith("{prose}"):
        prose = prose[4:] if prose.startswith("the ") else prose
    q = template.format(code=code, prose=prose)
    return q[0].upper() + q[1:] if template.startswith("{") else q


def evaluate(root: str) -> dict:
    from rank_bm25 import BM25Okapi
    from cortex.core.home import Home
    from cortex.ops.recall import recall
    labels = json.load(open(os.path.join(root, "corpus", "labels.json"), encoding="utf-8"))
    home = Home(os.path.join(root, "home"))
    cwd = os.path.join(root, "parcelwise")
    chats = [c["session_id"] for c in labels["chats"]]
    docs = [tokens(chat_text(os.path.join(root, "corpus", "transcripts", s + ".jsonl"))) for s in chats]
    bm25 = BM25Okapi(docs)
    totals, rows = {}, []
    for key, (rule, chain) in chains(labels).items():
        force = chain[-1]
        for name, templates in (("generator", GENERATOR), ("apart", APART)):
            for template in templates:
                q = phrase(template, rule)
                hits = recall(home, q, k=10, cwd=cwd, record_use=False)["hits"]
                sessions = [set(h.get("sessions") or [h.get("session")]) for h in hits]
                decision = next((i for i, (h, s) in enumerate(zip(hits, sessions))
                                 if h["kind"] == "record" and h.get("type") == "decision" and force in s), None)
                chat = next((i for i, s in enumerate(sessions) if force in s), None)
                old = next((i for i, s in enumerate(sessions) if s & set(chain[:-1])), None)
                scores = bm25.get_scores(tokens(q))
                ranked = sorted(range(len(chats)), key=lambda i: -scores[i])
                b_chat = next((n for n, i in enumerate(ranked) if chats[i] == force), None)
                b_old = next((n for n, i in enumerate(ranked) if chats[i] in chain[:-1]), None)
                t = totals.setdefault(name, dict.fromkeys(
                    ("questions", "decision first", "decision in 3", "chat first", "chat in 5",
                     "older version above", "bm25 chat first", "bm25 chat in 5", "bm25 older version above"), 0))
                t["questions"] += 1
                t["decision first"] += decision == 0
                t["decision in 3"] += decision is not None and decision < 3
                t["chat first"] += chat == 0
                t["chat in 5"] += chat is not None and chat < 5
                t["older version above"] += old is not None and (chat is None or old < chat)
                t["bm25 chat first"] += b_chat == 0
                t["bm25 chat in 5"] += b_chat is not None and b_chat < 5
                t["bm25 older version above"] += b_old is not None and (b_chat is None or b_old < b_chat)
                rows.append({"rule": key, "set": name, "query": q, "decision_rank": decision, "chat_rank": chat,
                             "older_rank": old, "bm25_chat_rank": b_chat, "versions": len(chain)})
    return {"totals": totals, "rows": rows}


def format_totals(totals: dict) -> str:
    lines = ["%-28s %18s %18s" % ("metric", "generator's", "written apart")]
    names = ("generator", "apart")
    for metric in totals["generator"]:
        if metric == "questions":
            continue
        cells = []
        for n in names:
            t = totals[n]
            cells.append("%4d/%-4d %5.1f%%" % (t[metric], t["questions"], 100.0 * t[metric] / t["questions"]))
        lines.append("%-28s %18s %18s" % (metric, cells[0], cells[1]))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="a folder kept by `python -m cortex.bench.devchats --keep ROOT`")
    ap.add_argument("--json", help="write totals and every question's ranks here")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.root, "corpus", "labels.json")):
        sys.stderr.write("cortex.bench.devchats.questions: %s has no corpus/labels.json; run `python -m "
                         "cortex.bench.devchats --keep %s` first\n" % (args.root, args.root))
        return 2
    res = evaluate(args.root)
    print(format_totals(res["totals"]))
    from cortex.bench.scratch import dump_json
    dump_json(args.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
