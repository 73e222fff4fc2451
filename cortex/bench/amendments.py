#!/usr/bin/env python3
"""Does a later chat that changes a rule retire it?  And does a later chat that only touches the same code
leave it in force?

    python -m cortex.bench.amendments [--json FILE]

Each case is two Claude Code sessions in a fresh home, normalized after each: a rule chat (the user asks
how some function should behave, the assistant proposes, the user agrees) and, 20 days later, a chat where
the user asks for a change in one of many phrasings, the assistant reads the file, edits it, runs the
tests and confirms in one of six ways (from "Done: `x()` now ..." to "Done. The tests pass.").  Counted:
the rule chat's decision retired (superseded) and the later chat's decision in force.  The side requests
(docstring, log line, module move, type hints, about the same function) must retire nothing.

The request phrasings come in three sets, each written before the code was measured on it: `FIRST` (before
the change-request rule existed: the first version of that rule matched them by their words, and was
replaced), `FRESH` (after that rule, before the version that does not read the user's words), and `SIDE`.
Only the written phrasings are measured; nothing here is generated from the rule's own patterns.
"""
import argparse
import itertools
import json
import os
import subprocess
import sys
import time

from cortex.bench.transcript import Transcript

RULES = [  # subject, file, rule chat (ask, proposal, agreement), the old and new value, the new behaviour
    ("reserve_stock()", "shop/stock.py",
     "Carts keep grabbing the last unit and then abandon it. What should `reserve_stock()` do?",
     "I'd suggest `reserve_stock()` holds units for 15 minutes, then releases them back to stock.",
     "yes, go with that", "15 minutes", "30 minutes", "holds units for 30 minutes before releasing them"),
    ("send_reminder()", "notify/remind.py",
     "Customers complain about reminder spam. How often should `send_reminder()` fire?",
     "I'd suggest `send_reminder()` sends at most one reminder every 48 hours per order.", "agreed",
     "every 48 hours", "every 24 hours", "sends at most one reminder every 24 hours per order"),
    ("retry_upload()", "storage/upload.py", "Uploads to S3 fail on flaky networks. What should `retry_upload()` do?",
     "I'd suggest `retry_upload()` retries 3 times with exponential backoff, then gives up and logs.",
     "sounds good", "3 retries", "5 retries", "retries 5 times with exponential backoff before giving up"),
    ("ExportScheduler", "reports/export.py",
     "The nightly export collides with backups. When should `ExportScheduler` run?",
     "I'd suggest `ExportScheduler` runs the export at 02:00 UTC, after the backup window.", "ok, do it",
     "02:00 UTC", "04:00 UTC", "runs the export at 04:00 UTC"),
]
FIRST = [
    "Let's change how `{S}` works: {new} instead of {old}.",
    "Update to the `{S}` rule: {new} now.",
    "Scratch the {old} in `{S}`, make it {new}.",
    "Revisiting `{S}`: we're going with {new}.",
    "Turns out {old} is wrong for `{S}`. Please switch it to {new}.",
    "Actually, `{S}` should use {new}, not {old}.",
    "New requirement from ops: `{S}` has to use {new}.",
    "I've changed my mind about `{S}`: {new} please.",
    "Forget what we said about {old} for `{S}`; use {new}.",
    "Please make `{S}` use {new} rather than {old}.",
    "Ops says {old} in `{S}` is too aggressive, can you move it to {new}",
    "`{S}`: {old} turned out to be too much. {new} from now on.",
]
FRESH = [
    "Hmm, {old} for `{S}` isn't working out in practice. Let's do {new}.",
    "Quick tweak to `{S}`: {new}.",
    "Ops asked us to go to {new} for `{S}`.",
    "We need `{S}` at {new} from next week.",
    "Let's go with {new} for `{S}` after all.",
    "Per the incident review, `{S}` moves to {new}.",
    "The {old} in `{S}` needs to become {new}.",
    "Modify `{S}` so it uses {new}.",
    "I'd like `{S}` to use {new} going forward.",
    "Support keeps complaining. `{S}` should be {new}.",
]
CONFIRMS = [
    "Done: `{S}` now {behaviour}.",
    "Updated. `{S}` now {behaviour}, and the tests pass.",
    "`{S}` {behaviour} now; tests are green.",
    "Changed `{S}` to {new}. Tests pass.",
    "All set: `{S}` {behaviour}.",
    "Done. The tests pass.",
]
SIDE = [
    "Update the docstring of `{S}` to Google style instead of reST.",
    "Change the log message in `{S}` to include the order id.",
    "Move `{S}` to a new module, rather than keeping it next to the views.",
    "Add type hints to `{S}`, the new requirement from the mypy rollout.",
]
SIDE_CONFIRMS = ["Done: `{S}` now has the change and the tests pass.", "Done. The tests pass."]


def _stop_and_normalize(home, t):
    from cortex.capture import hook as capture
    from cortex.ingest import run as normalize
    payload = {"session_id": t.sid, "transcript_path": t.path, "cwd": t.cwd, "hook_event_name": "Stop"}
    capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), "claude-code", home))
    normalize.run(home)


def run_case(root: str, rule: tuple, ask: str, confirm: str) -> dict:
    """Both chats of one case in a fresh home under `root`; what became of the rule and the change."""
    from cortex.core.home import Home
    from cortex.store.records import iter_paths, read
    subject, path, question, proposal, agreement, old, new, behaviour = rule
    home = Home(os.path.join(root, "home")).ensure()
    os.environ["CORTEX_HOME"] = home.root
    project = os.path.join(root, "project")
    os.makedirs(project, exist_ok=True)
    subprocess.run(["git", "init", "-q", project], check=True)
    t0 = time.time() - 40 * 86400
    chat = Transcript(os.path.join(root, "transcripts", "rule.jsonl"), "rule", project, t0)
    chat.user(question)
    chat.tool("Read", dict(file_path=os.path.join(project, path)))
    chat.say(proposal)
    chat.user(agreement)
    chat.tool("Edit", dict(file_path=os.path.join(project, path), old_string="a", new_string="b"))
    chat.say("Done, implemented as agreed.")
    _stop_and_normalize(home, chat)
    later = Transcript(os.path.join(root, "transcripts", "later.jsonl"), "later", project, t0 + 20 * 86400)
    later.user(ask.format(S=subject, old=old, new=new))
    later.say("Let me look at the current implementation.")
    later.tool("Read", dict(file_path=os.path.join(project, path)))
    later.tool("Edit", dict(file_path=os.path.join(project, path), old_string="a", new_string="b"))
    later.tool("Bash", dict(command="pytest -q"), "12 passed")
    later.say(confirm.format(S=subject, new=new, behaviour=behaviour))
    later.user("thanks")
    _stop_and_normalize(home, later)
    decisions = [read(p) for p in iter_paths(home.records)]
    decisions = [(r["status"], r["provenance"][0]["session"], r["text"]) for r in decisions if r["type"] == "decision"]
    rule_decisions = [d for d in decisions if d[1] == "rule"]
    return {"subject": subject, "ask": ask, "confirm": confirm,
            "rule_retired": bool(rule_decisions) and all(d[0] == "superseded" for d in rule_decisions),
            "later_in_force": [d[2] for d in decisions if d[1] == "later" and d[0] == "active"]}


def evaluate(asks: dict, rules=RULES, workdir: str = None) -> dict:
    """{set name: [case result]} for every rule x phrasing x confirmation of each set."""
    from cortex.bench.scratch import workdir as scratch
    out, n = {}, 0
    with scratch(workdir, "cortex-amend-") as base:
        for name, (phrasings, confirms) in asks.items():
            rows = out.setdefault(name, [])
            for rule, ask, confirm in itertools.product(rules, phrasings, confirms):
                n += 1
                rows.append(run_case(os.path.join(base, "case-%d" % n), rule, ask, confirm))
    return out


SETS = {"first": (FIRST, CONFIRMS), "fresh": (FRESH, CONFIRMS), "side": (SIDE, SIDE_CONFIRMS)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write every case here")
    args = ap.parse_args(argv)
    t = time.perf_counter()
    res = evaluate(SETS)
    for name, rows in res.items():
        retired = sum(r["rule_retired"] for r in rows)
        what = "rule retired (must be 0)" if name == "side" else "rule retired"
        print("%-6s %4d cases  %s %d (%.1f%%)  later chat's decision in force %d" % (
            name, len(rows), what, retired, 100.0 * retired / len(rows), sum(bool(r["later_in_force"]) for r in rows)))
        if name != "side":
            for conf in CONFIRMS:
                sub = [r for r in rows if r["confirm"] == conf]
                print("         %-52s %d/%d" % (conf, sum(r["rule_retired"] for r in sub), len(sub)))
    print("(%.0f s)" % (time.perf_counter() - t))
    from cortex.bench.scratch import dump_json
    dump_json(args.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
