#!/usr/bin/env python3
"""Generate the devchats corpus: Claude Code JSONL transcripts of one fictional project plus labels.json.

Standard library only, deterministic: the same --seed (and --end) gives the same bytes.

    python generate.py OUT_DIR [--seed 7] [--chats 180] [--cwd /home/dev/parcelwise] [--end 2026-06-30]

OUT_DIR/transcripts/<session_id>.jsonl   one file per chat (a distinct session id each)
OUT_DIR/labels.json                       what each chat is and the queries to ask (README.md: labeling rules)
"""
import argparse
import json
import os
import random
import re
import sys
import uuid
from datetime import datetime, timedelta, timezone

from cortex.bench.devchats.specs import DEVS, EXTRA_FUNCS, PROJECT, RULES, SECOND_AMENDMENTS

VERSIONS = ["2.0.64", "2.0.76", "2.1.4", "2.1.39"]
MODEL = "claude-sonnet-4-5-20250929"


# ------------------------------------------------------------------------------------------ transcript writer

class Chat:
    """Builds the lines of one Claude Code transcript (user / assistant / tool_result lines)."""

    def __init__(self, rng, session_id, cwd, start, branch):
        self.rng, self.sid, self.cwd, self.t, self.branch = rng, session_id, cwd, start, branch
        self.version = rng.choice(VERSIONS)
        self.lines, self.parent, self.msg_id = [], None, None
        self.texts = []          # (role, text) of everything said, for the baseline and for labels

    def _uuid(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _tick(self, lo=2, hi=40):
        self.t += timedelta(seconds=self.rng.randint(lo, hi), milliseconds=self.rng.randint(0, 999))

    def _base(self, typ):
        u = self._uuid()
        rec = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
               "sessionId": self.sid, "version": self.version, "gitBranch": self.branch, "type": typ,
               "uuid": u, "timestamp": self.t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (self.t.microsecond // 1000)}
        self.parent = u
        return rec

    def user(self, text):
        self._tick(20, 240)
        rec = self._base("user")
        rec["message"] = {"role": "user", "content": text}
        self.lines.append(rec)
        self.texts.append(("user", text))
        self.msg_id = None

    def _assistant_line(self, block):
        if self.msg_id is None:
            self.msg_id = "msg_01" + "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789")
                                             for _ in range(22))
        self._tick(2, 25)
        rec = self._base("assistant")
        rec["message"] = {"model": MODEL, "id": self.msg_id, "type": "message", "role": "assistant",
                          "content": [block], "stop_reason": None, "stop_sequence": None,
                          "usage": {"input_tokens": self.rng.randint(3, 12),
                                    "cache_read_input_tokens": self.rng.randint(8000, 60000),
                                    "output_tokens": self.rng.randint(20, 900)}}
        self.lines.append(rec)
        return rec

    def say(self, text):
        self._assistant_line({"type": "text", "text": text})
        self.texts.append(("assistant", text))

    def tool(self, name, inp, result, is_error=False):
        tid = "toolu_01" + "".join(self.rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789")
                                   for _ in range(22))
        arec = self._assistant_line({"type": "tool_use", "id": tid, "name": name, "input": inp})
        self._tick(1, 15)
        rec = self._base("user")
        rec["message"] = {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result", "content": result,
                                                       **({"is_error": True} if is_error else {})}]}
        if name == "Bash":
            rec["toolUseResult"] = {"stdout": "" if is_error else result, "stderr": result if is_error else "",
                                    "interrupted": False, "isImage": False}
        elif name == "Read":
            rec["toolUseResult"] = {"type": "text", "file": {"filePath": inp.get("file_path"), "content": result,
                                                             "numLines": result.count("\n") + 1, "startLine": 1,
                                                             "totalLines": result.count("\n") + 1}}
        elif name == "Edit":
            rec["toolUseResult"] = {"filePath": inp.get("file_path"), "oldString": inp.get("old_string"),
                                    "newString": inp.get("new_string"), "replaceAll": False}
        else:
            rec["toolUseResult"] = result
        rec["sourceToolAssistantUUID"] = arec["uuid"]
        self.lines.append(rec)
        self.msg_id = None

    def end_time(self):
        return self.t

    def write(self, path):
        with open(path, "w", encoding="utf-8") as f:
            for rec in self.lines:
                f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")


# ------------------------------------------------------------------------------------------ helpers

def bare(code):
    return code[:-2] if code.endswith("()") else code


def fake_source(rng, file, code):
    """A plausible excerpt of the file, as Read returns it (cat -n style)."""
    name = bare(code)
    mod = file.split("/")[-2]
    if code.endswith("()"):
        body = ["from __future__ import annotations", "", "import logging", "from datetime import datetime",
                "", "from parcelwise.%s import models" % mod, "from parcelwise.metrics import timed", "",
                "log = logging.getLogger(__name__)", "", "", "@timed(\"%s.%s\")" % (mod, name),
                "def %s(%s):" % (name, rng.choice(["ctx, *, now=None", "session, obj, settings=None",
                                                   "request, merchant", "parcel, now=None"])),
                "    \"\"\"%s\"\"\"" % rng.choice(["Entry point used by the API and the workers.",
                                                  "See docs/%s.md." % mod, "TODO: document the edge cases."]),
                "    now = now or datetime.utcnow()" if "now" in name else "    settings = settings or {}",
                "    items = models.load_for_update(%s)" % rng.choice(["ctx", "obj", "parcel", "merchant"]),
                "    for item in items:",
                "        %s" % rng.choice(["if item.is_locked():", "if not item.active:", "if item.skip:"]),
                "            continue", "        result = _apply(item)", "        log.debug(\"%%s -> %%s\", item.id, result)",
                "    return result"]
    else:
        body = ["import logging", "from dataclasses import dataclass, field", "", "log = logging.getLogger(__name__)",
                "", "", "@dataclass", "class %s:" % name,
                "    settings: dict = field(default_factory=dict)", "    _state: dict = field(default_factory=dict)",
                "", "    def run(self, batch):", "        for item in batch:", "            self._handle(item)", "",
                "    def _handle(self, item):", "        raise NotImplementedError"]
    return "\n".join("%6d\t%s" % (i + 1, line) for i, line in enumerate(body))


def test_file(file):
    parts = file.split("/")
    return "tests/%s/test_%s" % (parts[-2], parts[-1])


def pytest_out(rng, file, passed, failed=0, name=None):
    n = passed + failed
    head = "============================= test session starts ==============================\n" \
           "platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0\nrootdir: /srv/%s\ncollected %d items\n\n" % (PROJECT, n)
    dots = "." * passed + "F" * failed
    body = "%s %s %s\n" % (test_file(file), dots, "[100%]")
    if failed:
        body += "\n=================================== FAILURES ===================================\n" \
                "___________________________ %s ___________________________\n" % (name or "test_case") + \
                "E       AssertionError: assert %s == %s\n" % (rng.randint(2, 99), rng.randint(100, 400))
        tail = "========================= %d failed, %d passed in %.2fs =========================" % (
            failed, passed, rng.uniform(0.3, 9))
    else:
        tail = "============================== %d passed in %.2fs ===============================" % (
            passed, rng.uniform(0.3, 9))
    return head + body + tail


def strip_cond(cond):
    return re.sub(r"^(yes, but|ok, though|but|and|though)\s+", "", cond.strip(), flags=re.I)


def cap(s):
    return s[:1].upper() + s[1:]


def ending(s):
    return s if s.endswith((".", "?", "!")) else s + "."


# ------------------------------------------------------------------------------------------ generic moves

FILLER_REQUESTS = [
    ("Can you run the whole test suite once? Something felt off after the rebase.", "bash-tests"),
    ("Can you also fix the flake8 warning in `{other}`? Line too long somewhere.", "edit-other"),
    ("Unrelated, but what's the command to run only the {mod} tests again?", "answer-cmd"),
    ("Also add a changelog entry for this, under Unreleased.", "edit-changelog"),
    ("Quick one: is `{other}` still used anywhere?", "grep-other"),
    ("Can you check git status, I think I left something uncommitted.", "git-status"),
    ("The type checker complains about `{other}`, can you take a look?", "edit-other"),
    ("Rename the local variable `tmp` in `{file}` to something meaningful.", "edit-same"),
]


def filler(chat, rng, file, mod):
    other_file, other_func = rng.choice(EXTRA_FUNCS)
    req, kind = rng.choice(FILLER_REQUESTS)
    chat.user(req.format(other=rng.choice([other_file, other_func]), mod=mod, file=file))
    if kind == "bash-tests":
        chat.tool("Bash", {"command": "pytest -q", "description": "Run the test suite"},
                  pytest_out(rng, file, rng.randint(120, 480)))
        chat.say(rng.choice(["All green, nothing broken by the rebase.", "Suite passes. Whatever felt off, it isn't in the tests.",
                             "Everything passes locally."]))
    elif kind == "edit-other":
        chat.tool("Read", {"file_path": "/srv/%s/%s" % (PROJECT, other_file)}, fake_source(rng, other_file, other_func))
        chat.tool("Edit", {"file_path": "/srv/%s/%s" % (PROJECT, other_file), "old_string": "    return result",
                           "new_string": "    return result  # noqa: E501"}, "The file has been updated.")
        chat.say(rng.choice(["Fixed in `%s`." % other_file, "Done; that was a one-line change in `%s`." % other_file,
                             "Cleaned that up in `%s`, no behaviour change." % other_file]))
    elif kind == "answer-cmd":
        chat.say("`pytest tests/%s -q` runs just those; add `-k name` to narrow it down further." % mod)
    elif kind == "edit-changelog":
        chat.tool("Edit", {"file_path": "/srv/%s/CHANGELOG.md" % PROJECT, "old_string": "## Unreleased\n",
                           "new_string": "## Unreleased\n\n- %s: behaviour change, see PR.\n" % mod},
                  "The file has been updated.")
        chat.say("Added a line under Unreleased.")
    elif kind == "grep-other":
        chat.tool("Grep", {"pattern": bare(other_func), "path": "/srv/%s" % PROJECT},
                  "%s\ntests/test_misc.py" % other_file)
        chat.say(rng.choice(["Yes, it's still imported in a test and defined in `%s`." % other_file,
                             "Only its definition and one test reference it, so it's borderline dead code."]))
    elif kind == "git-status":
        chat.tool("Bash", {"command": "git status --short", "description": "Show working tree status"},
                  " M %s\n?? scratch.py" % file)
        chat.say("Only `%s` (our change) and an untracked `scratch.py`." % file)
    else:
        chat.tool("Edit", {"file_path": "/srv/%s/%s" % (PROJECT, file), "old_string": "tmp = ", "new_string": "pending = "},
                  "The file has been updated.")
        chat.say("Renamed `tmp` to `pending`.")


INVESTIGATE_PROSE = [
    "The function is about 80 lines. Most of it is input validation; the interesting part is a single loop over the candidates near the end, and there is no test that exercises it with more than one item.",
    "It's older code: it still uses `datetime.utcnow()` and has a bare `except Exception` that logs and swallows errors. I'll leave those alone unless you want them fixed.",
    "There are two call sites, the API handler and the worker. Both pass a settings dict, but the worker passes an empty one, so it's always running on defaults.",
    "Tests for this live in `{test}`; there are four of them and they all mock the database layer.",
    "The module has grown a few helpers that are only used once. Nothing blocking, just noting it.",
    "The logic is spread over two private helpers, and the docstring no longer matches what the code does.",
]

INVESTIGATE_OPEN = ["Let me look at the current implementation.", "I'll start by reading the code.",
                    "Let me see what it does today.", "Reading the module first.", "Let me check the file."]


def investigate(chat, rng, rule):
    chat.say(rng.choice(INVESTIGATE_OPEN))
    chat.tool("Read", {"file_path": "/srv/%s/%s" % (PROJECT, rule["file"])}, fake_source(rng, rule["file"], rule["code"]))
    if rng.random() < 0.5:
        chat.tool("Grep", {"pattern": bare(rule["code"]), "path": "/srv/%s" % PROJECT},
                  "%s\nparcelwise/api/routes.py\nparcelwise/workers/tasks.py\n%s" % (rule["file"], test_file(rule["file"])))
    chat.say(rng.choice(INVESTIGATE_PROSE).format(test=test_file(rule["file"])))


def implement(chat, rng, rule, fail_first=None):
    fail_first = rng.random() < 0.3 if fail_first is None else fail_first
    path = "/srv/%s/%s" % (PROJECT, rule["file"])
    chat.say(rng.choice(["I'll make the change now.", "Implementing it.", "Updating `%s`." % rule["file"],
                         "On it, plus a test for the new behaviour."]))
    chat.tool("Edit", {"file_path": path, "old_string": "        result = _apply(item)",
                       "new_string": "        result = _apply(item, policy=settings.get(\"policy\"))"},
              "The file %s has been updated." % path)
    tf = test_file(rule["file"])
    chat.tool("Edit", {"file_path": "/srv/%s/%s" % (PROJECT, tf), "old_string": "", "new_string": "def test_%s_policy():\n    ...\n" % bare(rule["code"]).lower()},
              "The file has been updated.")
    if fail_first:
        chat.tool("Bash", {"command": "pytest %s -q" % tf, "description": "Run the tests"},
                  pytest_out(rng, rule["file"], rng.randint(3, 12), 1, "test_%s_policy" % bare(rule["code"]).lower()),
                  is_error=True)
        chat.say(rng.choice(["One failure: the new test's fixture uses the old default. Fixing the fixture.",
                             "The test fails because the factory builds the object without the new field; adjusting the factory."]))
        chat.tool("Edit", {"file_path": "/srv/%s/tests/factories.py" % PROJECT, "old_string": "defaults = {}",
                           "new_string": "defaults = {\"policy\": None}"}, "The file has been updated.")
    chat.tool("Bash", {"command": "pytest %s -q" % tf, "description": "Run the tests"},
              pytest_out(rng, rule["file"], rng.randint(4, 14)))


# ------------------------------------------------------------------------------------------ rule chats

OPENERS = [
    "{ctx} Can you look at {S} in `{file}`?",
    "Looking at `{file}` today. {ctx}",
    "{ctx} I'm fairly sure it comes down to {S}.",
    "Next on my list is {S}. {ctx} What would you do?",
    "{ctx}\n\nLet's sort out {S} this afternoon.",
    "Hey. {ctx} Ticket's assigned to me, it's somewhere in {S}.",
]
PROPOSE = [
    "I'd suggest we {proposal}.",
    "One clean option: {proposal}.",
    "How about we {proposal}? It's a small change in `{file}`.",
    "My recommendation would be to {proposal}. It keeps the change local to {S}.",
    "The least invasive fix I can see is to {proposal}.",
    "Proposal: {proposal}. That addresses the complaint directly without touching the callers.",
]
AGREE_WITH_COND = [
    "yes, but {cond}.",
    "Ok, let's do it, though {cond}.",
    "Go with that. One condition: {cond}.",
    "Sounds right to me. One thing though: {cond}.",
    "Agreed, with one tweak: {cond}.",
    "Yep. Caveat: {cond}.",
]
AGREE_PLAIN = ["sounds good", "go with that", "Yes, let's do that.", "ok, do it", "That works for me.", "👍 go ahead"]
COND_LATER = [
    "Oh, one more thing about that: {cond}.",
    "Actually, wait. {Cond}.",
    "Thinking about it more: {cond}. Can you handle that too?",
    "Forgot to say, {cond}.",
]
COND_ACK = [
    "Good point, I'll build that in.", "Makes sense, adding that.", "Understood, I'll include that case.",
    "Right, that needs its own branch in the code. Will do.",
]
REJECT_BY_USER = [
    "And before you suggest it: let's not {naive}. {Reason}.",
    "I don't want to {naive}, by the way; {reason}.",
    "Whatever we do, we shouldn't {naive}: {reason}.",
]
ASSISTANT_OFFERS_NAIVE = [
    "The simpler alternative would be to {naive}. Want that instead?",
    "For completeness: we could also just {naive}, which is less code.",
    "Or, much simpler, {naive}. Thoughts?",
]
USER_REJECTS_OFFER = [
    "No, {reason}.", "Nope. {Reason}.", "Let's not. {Reason}.", "Definitely not, {reason}.",
]
USER_ASKS_NAIVE = ["Why not just {naive}?", "Couldn't we simply {naive}?", "What about {naive_ing}?"]
ASSISTANT_EXPLAINS_NAIVE = ["We could, but {reason}.", "That's the obvious option, but {reason}.",
                            "I considered it; the problem is that {reason}."]
USER_ACCEPTS_EXPLANATION = ["Fair, not that then.", "Right, agreed.", "OK, makes sense, skip it.", "Yeah, true."]
SUMMARY = [
    "To sum up what we agreed: {rule} We're not going to {naive}, because {reason}.",
    "So, settled: {rule}",
    "Recap for the PR description:\n\n- {rule}\n- Not doing: {naive} ({reason}).",
    "Done. For the record, the behaviour is now: {rule}",
    "Summary of the change: {rule} The alternative, to {naive}, was rejected since {reason}.",
]
CLOSE_NO_SUMMARY = ["Done, tests are green.", "All passing. Want me to open the PR?", "That's in, the suite passes.",
                    "Pushed to the branch; CI should pick it up."]
USER_BYE = ["thanks!", "great, thanks", "perfect", "ship it", "cool, I'll review the PR later", "nice, thank you"]


def ing(verb_phrase):
    w, _, rest = verb_phrase.partition(" ")
    if w in ("just", "always", "simply"):
        return w + " " + ing(rest)
    if w.endswith("e") and not w.endswith("ee"):
        g = w[:-1] + "ing"
    elif re.match(r".*[^aeiou][aeiou][ptn]$", w) and len(w) <= 4:
        g = w + w[-1] + "ing"
    else:
        g = w + "ing"
    return (g + " " + rest).strip()


def ack(rng, rule, detail_mode):
    if detail_mode == "ack":
        return rng.choice(["Makes sense. ", "Right: ", "Good point. ", ""]) + rule["detail"] + " " + rng.choice(
            ["I'll build that in.", "I'll handle that case explicitly.", "Adding that."])
    return rng.choice(COND_ACK)


def rule_chat(chat, rng, rule, style):
    S = ("`%s`" % rule["code"]) if style == "code" else rule["prose"]
    mod = rule["file"].split("/")[-2]
    cond = strip_cond(rule["cond"])
    f = dict(S=S, file=rule["file"], ctx=rule["ctx"], proposal=rule["proposal"], cond=cond, Cond=cap(cond),
             naive=rule["naive"], reason=rule["reason"], Reason=cap(rule["reason"]), naive_ing=ing(rule["naive"]))
    rule_text = rule["rule"] if style == "code" else rule["rule"].replace(rule["code"], cap(rule["prose"]) if rule["rule"].startswith(rule["code"]) else rule["prose"], 1)
    f["rule"] = rule_text
    reject_mode = rng.choice(["user-first", "offer", "ask", "ask"])   # where the naive alternative is rejected
    cond_mode = rng.choice(["with-agree", "with-agree", "later"])
    summary = rng.random() < 0.6
    fillers_before, fillers_mid, fillers_after = rng.choice([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1)])

    for _ in range(fillers_before):
        filler(chat, rng, rule["file"], mod)
    detail_mode = rng.choice(["opener", "with-cond", "ack"])   # who explains the situation behind the condition
    opener = rng.choice(OPENERS).format(**f)
    if detail_mode == "opener":
        opener += rng.choice(["\n\nSome background: ", " For context: ", " "]) + rule["detail"]
    if reject_mode == "user-first":
        opener += " " + rng.choice(REJECT_BY_USER).format(**f)
    chat.user(opener)
    investigate(chat, rng, rule)
    chat.say(rng.choice(PROPOSE).format(**f))
    if cond_mode == "with-agree" and detail_mode == "with-cond":
        AGREE = [t + " " + rule["detail"].replace("{", "{{").replace("}", "}}") for t in AGREE_WITH_COND]
    else:
        AGREE = AGREE_WITH_COND
    if reject_mode == "ask":
        chat.user(rng.choice(USER_ASKS_NAIVE).format(**f))
        chat.say(rng.choice(ASSISTANT_EXPLAINS_NAIVE).format(**f) + " " + rng.choice(
            ["So I'd stick with my suggestion.", "I'd still go with the first option.", "Hence the proposal above."]))
        chat.user(rng.choice(USER_ACCEPTS_EXPLANATION) + " " + (rng.choice(AGREE).format(**f)
                                                               if cond_mode == "with-agree" else rng.choice(AGREE_PLAIN)))
    else:
        if reject_mode == "offer":
            chat.say(rng.choice(ASSISTANT_OFFERS_NAIVE).format(**f))
            chat.user(rng.choice(USER_REJECTS_OFFER).format(**f) + " " + (
                rng.choice(AGREE).format(**f) if cond_mode == "with-agree" else "Your first idea is better, go with that."))
        else:
            chat.user(rng.choice(AGREE).format(**f) if cond_mode == "with-agree" else rng.choice(AGREE_PLAIN))
    if cond_mode == "with-agree":
        chat.say(ack(rng, rule, detail_mode))
    for _ in range(fillers_mid):
        filler(chat, rng, rule["file"], mod)
    if cond_mode == "later":
        implement(chat, rng, rule, fail_first=False)
        chat.say(rng.choice(["First version is in.", "Basic version done, tests pass."]))
        chat.user(rng.choice(COND_LATER).format(**f) + ((" " + rule["detail"]) if detail_mode == "with-cond" else ""))
        chat.say(ack(rng, rule, detail_mode))
    implement(chat, rng, rule)
    chat.say(rng.choice(SUMMARY).format(**f) if summary else rng.choice(CLOSE_NO_SUMMARY))
    for _ in range(fillers_after):
        filler(chat, rng, rule["file"], mod)
    chat.user(rng.choice(USER_BYE))
    return dict(rule_text=rule_text, summary=summary, reject_mode=reject_mode, cond_mode=cond_mode)


# ------------------------------------------------------------------------------------------ amendment chats

AMEND_OPEN = [
    "Amendment to what we agreed on for {S}: {change}.",
    "Actually let's change the rule for {S}: {change}.",
    "We need to revisit {S}. {why} From now on, {change}.",
    "Change of plan on {S}, {change}.",
    "{why} So for {S}, {change}. Can you update it?",
    "We no longer want the old behaviour in {S}; instead, {change}.",
]
AMEND_WHY = ["Ops came back with the numbers from last month.", "After Thursday's incident review,",
             "The merchant council asked for this.", "Support has been drowning in tickets about it.",
             "Finance signed off on a change.", "We talked about it in planning."]
AMEND_RESTATE = [
    "Understood. This replaces the earlier rule ({old}). New rule: {new}",
    "Got it, so the previous behaviour ({old}) is superseded. From now on: {new}",
    "Noted. {new} That supersedes what we settled on before, where {old_lc}",
    "OK. Replacing the old rule with the new one: {new} (Previously: {old})",
]
AMEND_CONFIRM = ["yes exactly", "Correct.", "Yep, that's it.", "right, and update the docstring too"]

# The second amendment of a rule (rule -> amendment -> second amendment): the user changes the amended rule
# again; the assistant restates the new rule as replacing the amended one ({old}: the first amendment's rule,
# {orig}: the rule the first chat settled).
AMEND2_OPEN = [
    "We're changing the {S} rule again: {change}.",
    "Second amendment to {S}, sorry: {change}.",
    "{why} So {S} changes once more: {change}.",
    "I know we only just amended {S}, but it needs another change: {change}.",
    "Back to {S} one more time. From now on, {change}.",
    "The last change to {S} wasn't enough. {why} New plan: {change}.",
]
AMEND2_WHY = ["The numbers since the last change are in and they're not great.", "Ops lived with the new behaviour for two weeks.",
              "Support is still getting tickets about it.", "Legal had a look at the last change.",
              "We went through it again at the retro.", "Sales promised something to a big merchant."]
AMEND2_RESTATE = [
    "Understood. This replaces the amended rule from last time ({old}). New rule: {new}",
    "OK, so the previous amendment ({old}) is superseded as well. From now on: {new}",
    "Noted. {new} That supersedes what we settled on last time, where {old_lc}",
    "Got it, replacing the current rule again: {new} (Until now: {old}. Originally: {orig}.)",
    "Right, that's the second change to this rule. The earlier amendment ({old}) is replaced; the rule is now: {new}",
]


def amend_chat(chat, rng, rule, style, amend=None, old=None, templates=(AMEND_OPEN, AMEND_WHY, AMEND_RESTATE)):
    """An amendment chat: the rule's `amend` replacing its rule, or (a second amendment) `amend` replacing the
    rule `old`, in the given (open, why, restate) templates."""
    S = ("`%s`" % rule["code"]) if style == "code" else rule["prose"]
    mod = rule["file"].split("/")[-2]
    a = amend or rule["amend"]
    opens, whys, restates = templates
    why = rng.choice(whys)
    if rng.random() < 0.4:
        filler(chat, rng, rule["file"], mod)
    chat.user(rng.choice(opens).format(S=S, change=a["change"], why=why))
    investigate(chat, rng, rule) if rng.random() < 0.5 else chat.tool(
        "Read", {"file_path": "/srv/%s/%s" % (PROJECT, rule["file"])}, fake_source(rng, rule["file"], rule["code"]))
    old = (old or rule["rule"]).rstrip(".")
    chat.say(rng.choice(restates).format(old=old, old_lc=old[:1].lower() + old[1:] + ".", new=a["new"],
                                         orig=rule["rule"].rstrip(".")))
    chat.user(rng.choice(AMEND_CONFIRM))
    implement(chat, rng, rule)
    chat.say(rng.choice(["Updated and tested.", "Done, and the docstring now describes the new rule.",
                         "Change is in; old test replaced with one for the new behaviour."]))
    if rng.random() < 0.5:
        filler(chat, rng, rule["file"], mod)
    chat.user(rng.choice(USER_BYE))


# ------------------------------------------------------------------------------------------ decoy chats

DECOY_IDEAS = [
    "move {S} into a background worker", "make {S} configurable per merchant", "put {S} behind a feature flag",
    "cache whatever {S} computes", "split `{file}` into two modules", "rewrite {S} around an event log",
    "let merchants override {S} from the dashboard", "run {S} per region instead of globally",
    "drop the legacy code path in {S}", "add a second, stricter mode to {S}",
]
DECOY_FLOWS = ["park", "hypo", "ask-someone", "options-no-pick", "question-open"]


def decoy_chat(chat, rng, subj_code, subj_prose, file):
    S = ("`%s`" % subj_code) if rng.random() < 0.5 else subj_prose
    f = dict(S=S, file=file)
    idea, idea2 = [x.format(**f) for x in rng.sample(DECOY_IDEAS, 2)]
    flow = rng.choice(DECOY_FLOWS)
    mod = file.split("/")[-2]
    if rng.random() < 0.4:
        filler(chat, rng, file, mod)
    if flow == "park":
        chat.user(rng.choice(["Random thought: maybe we could %s? Not a decision, just thinking out loud.",
                              "Brainstorm with me for a minute: what if we %s?",
                              "I keep wondering whether we should %s. No action needed yet."]) % idea)
        chat.say("It could work. Upsides: less coupling and it would be easier to test. Downsides: another moving part "
                 "to operate, and we'd need a migration path for existing data. I'd want to measure the current "
                 "behaviour before committing to anything.")
        chat.user(rng.choice(["Let's park it for now.", "Yeah, no need to decide today.", "Hm. I'll sleep on it.",
                              "OK, let's not go down that road this sprint. Maybe later."]))
        chat.say(rng.choice(["Sure, nothing changed.", "Fine, I'll leave the code as it is.", "OK, parked."]))
    elif flow == "hypo":
        chat.user("Hypothetically, if we were to %s, what would break?" % idea)
        chat.tool("Grep", {"pattern": bare(subj_code), "path": "/srv/%s" % PROJECT}, "%s\n%s" % (file, test_file(file)))
        chat.say("Hypothetically: the API handler and the nightly job both call it synchronously, so they would need "
                 "to cope with a delay, and the tests in `%s` assume the current shape. Nothing fundamental, but it's "
                 "a few days of work." % test_file(file))
        chat.user(rng.choice(["Interesting. Let's leave it as is for now.", "Good to know, just wanted a feel for it.",
                              "OK, not worth it right now."]))
    elif flow == "ask-someone":
        chat.user("Should we %s, or %s?" % (idea, idea2))
        chat.say("Both are reasonable. The first is cheaper to build; the second is easier to roll back. It really "
                 "depends on how often this path runs in production, which I can't see from here.")
        chat.user("I don't know. Let me ask %s and get back to you; I don't want to decide this alone." % rng.choice(DEVS))
        chat.say("Sounds good. I haven't changed anything.")
    elif flow == "options-no-pick":
        chat.user("What are our options for %s if the load doubles next quarter?" % S)
        chat.say("Three that I can see:\n\n1. %s\n2. %s\n3. leave it and add more workers\n\nEach has trade-offs; "
                 "option 3 is the only one that needs no code." % (cap(idea), cap(idea2)))
        chat.user(rng.choice(["We could go with the second one, or maybe not. Let's revisit after the sprint.",
                              "Let's not pick one yet, I want to see the load test first.",
                              "Hmm, all of them sound plausible. Let's discuss at planning."]))
    else:
        chat.user("How does %s behave when two requests hit it at the same moment? Is that a problem?" % S)
        chat.tool("Read", {"file_path": "/srv/%s/%s" % (PROJECT, file)}, fake_source(rng, file, subj_code))
        chat.say("There's no lock, so in theory both could read the same state. Whether it matters depends on the "
                 "callers; I couldn't find a test for it. Maybe we should add a lock, maybe a unique constraint is "
                 "enough; I'm not sure yet which one is right.")
        chat.user(rng.choice(["Let's keep an eye on it, no change for now.", "OK, open question then. I'll file a ticket.",
                              "Good question for the team. Leaving it."]))
    chat.user(rng.choice(USER_BYE)) if rng.random() < 0.4 else None


# ------------------------------------------------------------------------------------------ unrelated chats

CAUSES = [
    ("a timezone-naive datetime in the fixture", "made the fixture timezone-aware"),
    ("an off-by-one in the pagination loop", "fixed the loop bound"),
    ("a stale mock of the HTTP client", "updated the mock to the new response shape"),
    ("a Decimal compared with a float", "compared Decimals on both sides"),
    ("test order dependence: a module-level cache leaked between tests", "cleared the cache in a fixture"),
    ("the factory defaulting to an inactive merchant", "made the factory build an active merchant"),
    ("a missing `await` on the carrier client call", "awaited the call"),
    ("the locale defaulting to en_US in CI", "pinned the locale in the test settings"),
]
REFACTORS = [
    "Can you add type hints to `{file}`? mypy is in strict mode for that package now.",
    "Extract the validation at the top of {S} into its own helper, it's getting long.",
    "Rename `{bare}` to something clearer, maybe `{bare}_v2` is fine for now, and update the callers.",
    "Please replace the print statements in `{file}` with proper logging.",
    "Convert the dict-based config in `{file}` to a dataclass.",
    "Let's remove the deprecated `legacy=True` parameter from {S}.",
]
DOCS = [
    "Write a docstring for {S}, it has none.",
    "Update docs/{mod}.md, it still describes the old module layout.",
    "Can you add a short section on {S} to the developer README?",
    "The API docs for {S} show the wrong example response, please fix them.",
]
QUESTIONS = [
    "How does {S} get called from the API? I'm new to this part.",
    "Where is {S} tested?",
    "What does the `settings` argument of {S} actually do?",
    "Explain `{file}` to me in two paragraphs.",
]
OPS = [   # (request, what the assistant found)
    ("CI is red on main: the lint job fails on `{file}`.",
     "A recent merge changed the import order in `{file}`, which the linter flags. Fixed."),
    ("Bump the carrier SDK to the latest minor version and check nothing breaks.",
     "Bumped it; the only change we depend on is a renamed timeout argument, which I updated."),
    ("The Docker build takes 9 minutes, can we cache the pip layer?",
     "Pinned the base image and moved the requirements copy before the source copy so the layer caches."),
    ("Sentry shows a KeyError in {S} since this morning, can you find out why?",
     "The KeyError happens when the settings dict lacks `region`; I added a default."),
    ("{S} got slow after yesterday's deploy, p95 went from 80 ms to 900 ms.",
     "The slowdown is an N+1 query introduced in the last merge; I added a `select_related`."),
]


def unrelated_chat(chat, rng, file, code):
    S = ("`%s`" % code) if rng.random() < 0.6 else "`%s`" % file
    mod = file.split("/")[-2]
    f = dict(S=S, file=file, mod=mod, bare=bare(code))
    kind = rng.choice(["debug", "debug", "refactor", "docs", "question", "ops", "ops"])
    path = "/srv/%s/%s" % (PROJECT, file)
    if kind == "debug":
        cause, fix = rng.choice(CAUSES)
        name = "test_%s_%s" % (bare(code).lower(), rng.choice(["happy_path", "empty", "edge", "roundtrip", "retry"]))
        chat.user(rng.choice(["`%s` fails on my machine, passes in CI. Can you look?" % name,
                              "%s is failing since this morning." % name, "Flaky test again: %s" % name]))
        chat.tool("Bash", {"command": "pytest %s -q -k %s" % (test_file(file), name), "description": "Run the failing test"},
                  pytest_out(rng, file, 0, 1, name), is_error=True)
        chat.tool("Read", {"file_path": path}, fake_source(rng, file, code))
        chat.say("The failure comes from %s, not from %s itself." % (cause, S))
        chat.tool("Edit", {"file_path": "/srv/%s/%s" % (PROJECT, test_file(file)), "old_string": "    obj = make()",
                           "new_string": "    obj = make(active=True)"}, "The file has been updated.")
        chat.tool("Bash", {"command": "pytest %s -q" % test_file(file), "description": "Run the tests"},
                  pytest_out(rng, file, rng.randint(3, 15)))
        chat.say("Passing now: I %s." % fix)
    elif kind in ("refactor", "docs"):
        chat.user(rng.choice(REFACTORS if kind == "refactor" else DOCS).format(**f))
        chat.tool("Read", {"file_path": path}, fake_source(rng, file, code))
        chat.tool("Edit", {"file_path": path, "old_string": "    return result", "new_string": "    return result\n"},
                  "The file has been updated.")
        if kind == "refactor":
            chat.tool("Bash", {"command": "pytest -q && mypy %s" % file, "description": "Tests and type check"},
                      pytest_out(rng, file, rng.randint(100, 400)) + "\nSuccess: no issues found in 1 source file")
        chat.say(rng.choice(["Done. No behaviour change.", "Updated; tests and mypy pass.", "Done, have a look at the diff.",
                             "Finished; I kept the public signature unchanged."]))
    elif kind == "question":
        chat.user(rng.choice(QUESTIONS).format(**f))
        chat.tool("Read", {"file_path": path}, fake_source(rng, file, code))
        chat.say("%s is called from the request handler in `parcelwise/api/routes.py` and from a worker task. It loads "
                 "the rows it needs with a lock, applies the per-item logic in `_apply`, and logs at debug level. Its "
                 "tests are in `%s`." % (cap(S), test_file(file)))
    else:
        req, found = rng.choice(OPS)
        chat.user(req.format(**f))
        chat.tool("Bash", {"command": rng.choice(["git log --oneline -5 -- %s" % file, "ruff check %s" % file,
                                                  "docker build . --progress=plain | tail -5"]),
                           "description": "Investigate"},
                  "a1b2c3d Merge branch 'feature/%s'\n9f8e7d6 %s: tidy imports" % (mod, mod))
        chat.say(found.format(**f))
        chat.tool("Bash", {"command": "pytest -q", "description": "Run the suite"}, pytest_out(rng, file, rng.randint(100, 400)))
        chat.say("Suite passes.")
    if rng.random() < 0.5:
        chat.user(rng.choice(USER_BYE))


# ------------------------------------------------------------------------------------------ queries

DECIDE_Q = [
    "what did we decide about {code}?", "what did we settle on for {prose}?", "remind me what we agreed for {prose}",
    "what's the rule for {code} again?", "did we ever agree how {prose} should work?", "{prose}: what was the decision?",
]

# Bug reports that name the subject (issue #14's "a bug report about one of those functions that never names
# the rule"): each `bug` / `amend-bug` symptom again, filed the way a developer or a support agent files a bug
# against a component. {X} is the subject in one of four forms (subject_form), {s} the symptom as written,
# {S} the symptom capitalised, {n} a ticket number, {is}/{Is}/{strikes} the verb agreeing with a plural prose
# name ("delivery emails are misbehaving"). The templates add no word of any rule; the flag says
# whether a short prefix ("prod issue: ") may go in front.
NAMED_TEMPLATES = [
    ("Bug in {X}: {s}", True),
    ("{S} — I think it's {X} again", True),
    ("Support ticket: {S}. Could be something in {X}?", False),
    ("{X} {is} misbehaving: {s}", True),
    ("{S}. Pretty sure the problem is in {X}.", True),
    ("Can anybody look at {X}? {S}.", True),
    ("Ticket PW-{n}: {S} (component: {X})", False),
    ("Reported by ops: {s}. Probably {X}, can you take a look?", False),
    ("Something's off with {X}. {S}.", True),
    ("Regression in {X}? {S}.", True),
    ("Customer complaint, likely {X}: {s}", False),
    ("{X} {strikes} again: {s}", True),
    ("{S}. {Is} {X} doing this?", True),
    ("Looks like a bug in {X}: {s}", True),
]
NAMED_PREFIXES = ["prod issue: ", "Prod issue: ", "urgent: ", "P2: ", "From support: ", "Incident: ", "hey, ", "FYI: "]
NAMED_FORMS = ["code", "prose", "file", "module"]


def named_subject(rng, rule):
    """(form, text): the rule's subject as a bug report names it. code: `assign_courier()` / assign_courier() /
    assign_courier; prose: "the courier assignment"; file: parcelwise/dispatch/assign.py (or dispatch/assign.py);
    module: the bare class name (RouteOptimizer), or for a function its module ("the assign module",
    parcelwise.dispatch.assign)."""
    form = rng.choice(NAMED_FORMS)
    code, file = rule["code"], rule["file"]
    tick = rng.random() < 0.5
    if form == "code":
        text = bare(code) if code.endswith("()") and rng.random() < 0.3 else code
    elif form == "prose":
        text, tick = rule["prose"], False
    elif form == "file":
        text = file if rng.random() < 0.7 else file.split("/", 1)[1]
    elif not code.endswith("()"):
        text, tick = code, False
    else:
        parts = file[:-3].split("/")
        text, tick = rng.choice([("the %s module" % parts[-1], False), (".".join(parts), tick)])
    return form, ("`%s`" % text if tick else text)


def named_bug_report(rng, rule, symptom):
    """One symptom filed against the rule's subject: (text, subject_form, subject_text, template index)."""
    t = rng.randrange(len(NAMED_TEMPLATES))
    template, prefixable = NAMED_TEMPLATES[t]
    form, subject = named_subject(rng, rule)
    prefix = rng.choice(NAMED_PREFIXES) if prefixable and rng.random() < 0.3 else ""
    casual = rng.random() < 0.25     # typed in a hurry: lower case, no backticks, no final punctuation
    n = rng.randint(1200, 9800)
    if casual:
        subject = subject.replace("`", "")
    plural = form == "prose" and subject.endswith("s")   # "damage claims", "the tracking webhooks"
    text = template.format(X="\0", s=symptom, S=cap(symptom), n=n, strikes="strike" if plural else "strikes",
                           **{"is": "are" if plural else "is", "Is": "Are" if plural else "Is"})
    if casual:
        text = text.lower().rstrip(".?!")
    if prefix.endswith(", ") and not text.startswith("\0"):
        text = text[:1].lower() + text[1:]
    x = subject
    if text.startswith("\0") and not prefix and not casual and (form == "prose" or subject.startswith("the ")):
        x = cap(subject)
    return prefix + text.replace("\0", x, 1), form, subject, t


def add_named_bug_reports(labels, seed):
    """Append a `bug-named` query for each `bug` query and an `amend-bug-named` one for each `amend-bug` query
    (same target and accept), drawn from their own random stream so the chats and every other query are the
    bytes they were before these kinds existed."""
    rng = random.Random("devchats/bug-named/%d" % seed)
    spec = {r["key"]: r for r in RULES}
    owner = {("bug", r["key"]): r for r in labels["rules"]}
    owner.update({("amend-bug", a["key"]): a for a in labels["amendments"]})
    named = []
    for q in labels["queries"]:
        if q["kind"] not in ("bug", "amend-bug"):
            continue
        kind = q["kind"] + "-named"
        text, form, subject, t = named_bug_report(rng, spec[q["rule"]], q["text"])
        named.append({"id": q["id"].replace("/" + q["kind"], "/" + kind, 1), "kind": kind, "text": text,
                      "target": q["target"], "accept": list(q["accept"]), "rule": q["rule"], "from": q["id"],
                      "subject_form": form, "subject_text": subject, "template": t})
        owner[(q["kind"], q["rule"])]["queries"].setdefault("bug_reports_named", []).append(text)
    labels["queries"] += named   # after the others, so those run in the same order as before


AMEND2_GAP = (10, 25)   # days between an amendment and its second amendment


def _overlap(t0, t1, spans):
    """The end of a chat in `spans` [(start, end)] that [t0, t1] overlaps (5 minutes apart at least), or None."""
    for a, b in spans:
        if t0 < b + timedelta(minutes=5) and a < t1 + timedelta(minutes=5):
            return b
    return None


def add_second_amendments(labels, seed, out_dir, cwd, start_dt):
    """Amend about half of the amended rules once more (rule -> amendment -> second amendment): a chat 10-25 days
    after the first amendment, written to OUT/transcripts like the others, its `amend2-decide` query (accepts
    the second amendment only) and `amend2-bug` queries.  Everything is drawn from its own random stream, after
    everything else, so the other chats, their session ids and the other queries are the bytes they were
    before second amendments existed; the new chats and queries come last in their lists."""
    rng = random.Random("devchats/amend2/%d" % seed)
    spec = {r["key"]: r for r in RULES}
    rules = {r["key"]: r for r in labels["rules"]}
    when = lambda c: datetime.strptime(c, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)  # noqa: E731
    chat_of = {c["session_id"]: c for c in labels["chats"]}
    spans = [(when(c["start"]), when(c["end"])) for c in labels["chats"]]
    last_day = (start_dt + timedelta(days=89)).date()
    room = {a["session_id"]: min(AMEND2_GAP[1], (last_day - when(chat_of[a["session_id"]]["start"]).date()).days)
            for a in labels["amendments"]}
    eligible = [a for a in labels["amendments"] if room[a["session_id"]] >= AMEND2_GAP[0] and a["key"] in SECOND_AMENDMENTS]
    chosen = set(id(a) for a in rng.sample(eligible, min((len(labels["amendments"]) + 1) // 2, len(eligible))))
    labels["second_amendments"] = []
    for a in labels["amendments"]:
        a["amended_by"] = None
        if id(a) not in chosen:
            continue
        r, a2, first = spec[a["key"]], SECOND_AMENDMENTS[a["key"]], rules[a["key"]]
        day = when(chat_of[a["session_id"]]["start"]).date() + timedelta(days=rng.randint(AMEND2_GAP[0], room[a["session_id"]]))
        t = datetime(day.year, day.month, day.day, rng.randint(8, 18), rng.randint(0, 59), rng.randint(0, 59),
                     tzinfo=timezone.utc)
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        branch = rng.choice(["main", "main", "develop", "fix/%s" % rng.choice(["eta", "labels", "queue", "search"])])
        style = "code" if rng.random() < 0.6 else "prose"
        while True:  # a chat of its own time, as the others: moved past any chat it would overlap
            chat = Chat(rng, sid, cwd, t, branch)
            amend_chat(chat, rng, r, style, amend=a2, old=r["amend"]["new"],
                       templates=(AMEND2_OPEN, AMEND2_WHY, AMEND2_RESTATE))
            busy = _overlap(t, chat.end_time(), spans)
            if busy is None:
                break
            t = busy + timedelta(minutes=rng.randint(5, 90))
        spans.append((t, chat.end_time()))
        entry = {"session_id": sid, "kind": "amendment2", "start": t.strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "end": chat.end_time().strftime("%Y-%m-%dT%H:%M:%SZ"), "file": "transcripts/%s.jsonl" % sid,
                 "lines": len(chat.lines)}
        chat.write(os.path.join(out_dir, entry["file"]))
        labels["chats"].append(entry)
        a["amended_by"] = sid
        taken = {first["queries"]["decide"], a["queries"]["decide"]}
        q_decide = rng.choice([q for q in (q.format(code=r["code"], prose=r["prose"]) for q in DECIDE_Q) if q not in taken])
        labels["second_amendments"].append({
            "key": a["key"], "session_id": sid, "supersedes": a["session_id"], "rule_session": first["session_id"],
            "subject": r["code"], "new_rule": a2["new"], "change": a2["change"],
            "queries": {"decide": q_decide, "bug_reports": list(a2["bugs"])}})
        labels["queries"].append({"id": "%s/amend2-decide" % a["key"], "kind": "amend2-decide", "text": q_decide,
                                  "target": sid, "accept": [sid], "superseded": [a["session_id"], first["session_id"]],
                                  "rule": a["key"]})
        for i, q in enumerate(a2["bugs"]):
            labels["queries"].append({"id": "%s/amend2-bug%d" % (a["key"], i + 1), "kind": "amend2-bug", "text": q,
                                      "target": sid, "accept": [sid, a["session_id"], first["session_id"]],
                                      "rule": a["key"]})


def generate(out_dir, seed=7, chats=180, cwd="/home/dev/%s" % PROJECT, end="2026-06-30"):
    rng = random.Random(seed)
    os.makedirs(os.path.join(out_dir, "transcripts"), exist_ok=True)
    end_dt = datetime.strptime(end, "%Y-%m-%d").replace(tzinfo=timezone.utc) if isinstance(end, str) else end
    start_dt = end_dt - timedelta(days=90)

    n_rules = min(len(RULES), max(1, round(chats * 0.2)))
    rules = rng.sample(RULES, n_rules)
    amendable = [r for r in rules if r["amend"]]
    n_amend = min(len(amendable), max(0, round(chats * 0.056)))
    amended = rng.sample(amendable, n_amend)
    n_decoy = max(1, round(chats * 0.11))
    n_unrel = max(0, chats - n_rules - n_amend - n_decoy)

    # schedule: (day offset, kind, payload)
    plan = []
    for r in rules:
        plan.append((rng.uniform(0, 60 if r in amended else 75), "rule", r))
    rule_day = {p[2]["key"]: p[0] for p in plan}
    for r in amended:
        plan.append((min(89, rule_day[r["key"]] + rng.uniform(14, 28)), "amendment", r))
    subjects = [(r["code"], r["prose"], r["file"]) for r in RULES] + \
               [(c, "`%s`" % f.split("/")[-1], f) for f, c in EXTRA_FUNCS]
    for _ in range(n_decoy):
        plan.append((rng.uniform(0, 89), "decoy", rng.choice(subjects)))
    files = [(r["file"], r["code"]) for r in RULES] + EXTRA_FUNCS
    for _ in range(n_unrel):
        plan.append((rng.uniform(0, 89), "unrelated", rng.choice(files)))
    plan.sort(key=lambda p: p[0])

    labels = {"corpus": "devchats", "project": PROJECT, "seed": seed, "chats": [], "rules": [], "amendments": [],
              "decoys": [], "unrelated": [], "queries": []}
    by_key = {}
    last_end = start_dt
    for day, kind, payload in plan:
        t = start_dt + timedelta(days=day)
        t = t.replace(hour=rng.randint(8, 18), minute=rng.randint(0, 59), second=rng.randint(0, 59))
        if t <= last_end:
            t = last_end + timedelta(minutes=rng.randint(5, 90))
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        branch = rng.choice(["main", "main", "develop", "fix/%s" % rng.choice(["eta", "labels", "queue", "search"])])
        chat = Chat(rng, sid, cwd, t, branch)
        style = "code" if rng.random() < 0.6 else "prose"
        entry = {"session_id": sid, "kind": kind, "start": t.strftime("%Y-%m-%dT%H:%M:%SZ")}
        if kind == "rule":
            info = rule_chat(chat, rng, payload, style)
            r = payload
            q_decide = rng.choice(DECIDE_Q).format(code=r["code"], prose=r["prose"])
            rec = {"key": r["key"], "session_id": sid, "subject": r["code"], "subject_prose": r["prose"],
                   "file": r["file"], "subject_style": style, "rule": r["rule"],
                   "conditions": [{"kind": r["kind"], "text": strip_cond(r["cond"])}],
                   "rejected": {"alternative": r["naive"], "reason": r["reason"]},
                   "summary_in_chat": info["summary"], "rejection_mode": info["reject_mode"],
                   "condition_mode": info["cond_mode"], "amended_by": None,
                   "queries": {"bug_reports": list(r["bugs"]), "decide": q_decide}}
            labels["rules"].append(rec)
            by_key[r["key"]] = rec
        elif kind == "amendment":
            amend_chat(chat, rng, payload, style)
            r, old = payload, by_key[payload["key"]]
            old["amended_by"] = sid
            q_decide = rng.choice([q for q in DECIDE_Q if q.format(code=r["code"], prose=r["prose"]) != old["queries"]["decide"]]
                                  ).format(code=r["code"], prose=r["prose"])
            labels["amendments"].append({"key": r["key"], "session_id": sid, "supersedes": old["session_id"],
                                         "subject": r["code"], "new_rule": r["amend"]["new"], "change": r["amend"]["change"],
                                         "queries": {"decide": q_decide, "bug_reports": list(r["amend"]["bugs"])}})
        elif kind == "decoy":
            code, prose, file = payload
            decoy_chat(chat, rng, code, prose, file)
            labels["decoys"].append({"session_id": sid, "subject": code})
        else:
            file, code = payload
            unrelated_chat(chat, rng, file, code)
            labels["unrelated"].append(sid)
        entry["end"] = chat.end_time().strftime("%Y-%m-%dT%H:%M:%SZ")
        entry["file"] = "transcripts/%s.jsonl" % sid
        entry["lines"] = len(chat.lines)
        labels["chats"].append(entry)
        chat.write(os.path.join(out_dir, entry["file"]))
        last_end = chat.end_time()

    # the flat query list the evaluator runs
    amend_of = {a["supersedes"]: a for a in labels["amendments"]}
    for rec in labels["rules"]:
        a = amend_of.get(rec["session_id"])
        accept = [rec["session_id"]] + ([a["session_id"]] if a else [])
        for i, q in enumerate(rec["queries"]["bug_reports"]):
            labels["queries"].append({"id": "%s/bug%d" % (rec["key"], i + 1), "kind": "bug", "text": q,
                                      "target": rec["session_id"], "accept": accept, "rule": rec["key"]})
        if not a:   # for an amended rule the "what did we decide" query belongs to the amendment
            labels["queries"].append({"id": "%s/decide" % rec["key"], "kind": "decide", "text": rec["queries"]["decide"],
                                      "target": rec["session_id"], "accept": accept, "rule": rec["key"]})
    for a in labels["amendments"]:
        labels["queries"].append({"id": "%s/amend-decide" % a["key"], "kind": "amend-decide", "text": a["queries"]["decide"],
                                  "target": a["session_id"], "accept": [a["session_id"]], "superseded": a["supersedes"],
                                  "rule": a["key"]})
        for i, q in enumerate(a["queries"]["bug_reports"]):
            labels["queries"].append({"id": "%s/amend-bug%d" % (a["key"], i + 1), "kind": "amend-bug", "text": q,
                                      "target": a["session_id"], "accept": [a["session_id"], a["supersedes"]],
                                      "rule": a["key"]})
    add_named_bug_reports(labels, seed)
    add_second_amendments(labels, seed, out_dir, cwd, start_dt)
    with open(os.path.join(out_dir, "labels.json"), "w", encoding="utf-8") as fh:
        json.dump(labels, fh, ensure_ascii=False, indent=1, sort_keys=True)
        fh.write("\n")
    return labels


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--chats", type=int, default=180)
    ap.add_argument("--cwd", default="/home/dev/%s" % PROJECT, help="the project folder the transcripts name")
    ap.add_argument("--end", default="2026-06-30", help="date (YYYY-MM-DD) the 90-day timeline ends")
    a = ap.parse_args(argv)
    labels = generate(a.out_dir, a.seed, a.chats, a.cwd, a.end)
    kinds = {}
    for c in labels["chats"]:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    print("%d chats (%s), %d queries -> %s" % (len(labels["chats"]), ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
                                               len(labels["queries"]), a.out_dir))


if __name__ == "__main__":
    main()
