"""Check chats.json + labels.json against the brief (standard library only).

Exit status 1 and a list of problems if anything is off.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

TOOL_KEYS = {
    "Bash": {"command", "description"},
    "Read": {"file_path"},
    "Edit": {"file_path", "old_string", "new_string"},
    "Write": {"file_path", "content"},
    "Grep": {"pattern", "path"},
}
SECRET_PATTERNS = [r"AKIA[0-9A-Z]{16}", r"sk_(live|test)_[0-9a-zA-Z]{10,}", r"\bAC[0-9a-f]{32}\b", r"\bSK[0-9a-f]{32}\b",
                   r"-----BEGIN [A-Z ]*PRIVATE KEY-----", r"xox[bpa]-[0-9A-Za-z-]{10,}", r"ghp_[0-9A-Za-z]{30,}"]

problems = []


def bad(msg):
    problems.append(msg)


def said(chat):
    """All user and assistant text of a chat, lower-cased."""
    parts = []
    for t in chat["turns"]:
        if "user" in t:
            parts.append(t["user"])
        elif "assistant" in t:
            parts.append(t["assistant"])
    return "\n".join(parts).lower()


def main():
    chats = json.load(open(os.path.join(HERE, "chats.json"), encoding="utf-8"))
    labels = json.load(open(os.path.join(HERE, "labels.json"), encoding="utf-8"))
    by_id = {c["id"]: c for c in chats}

    # --- chats ---------------------------------------------------------------
    if [c["id"] for c in chats] != ["c%02d" % i for i in range(1, 37)]:
        bad("chat ids are not c01..c36 in order")
    if chats[0]["day"] != 90 or chats[-1]["day"] != 1:
        bad("first day must be 90 and last day 1 (got %s, %s)" % (chats[0]["day"], chats[-1]["day"]))
    for a, b in zip(chats, chats[1:]):
        if b["day"] > a["day"]:
            bad("day increases from %s to %s" % (a["id"], b["id"]))
    total = 0
    for c in chats:
        if set(c) != {"id", "day", "turns"}:
            bad("%s: keys %s" % (c["id"], sorted(c)))
        total += len(c["turns"])
        if not any("user" in t for t in c["turns"][:1]):
            bad("%s: does not start with a user turn" % c["id"])
        for i, t in enumerate(c["turns"]):
            where = "%s turn %d" % (c["id"], i)
            if "user" in t or "assistant" in t:
                if len(t) != 1 or not isinstance(next(iter(t.values())), str) or not next(iter(t.values())).strip():
                    bad("%s: bad text turn" % where)
                continue
            tool = t.get("tool")
            if tool not in TOOL_KEYS:
                bad("%s: unknown tool %r" % (where, tool))
                continue
            if set(t) - {"tool", "input", "result", "error"} or "result" not in t:
                bad("%s: bad tool turn keys %s" % (where, sorted(t)))
            if set(t["input"]) != TOOL_KEYS[tool]:
                bad("%s: %s input keys %s" % (where, tool, sorted(t["input"])))
            if "error" in t and t["error"] is not True:
                bad("%s: error must be true when present" % where)
            fp = t["input"].get("file_path") or (t["input"].get("path") if tool == "Grep" else None)
            if fp is not None and not fp.startswith("{P}"):
                bad("%s: path does not start with {P}: %s" % (where, fp))
            for v in list(t["input"].values()) + [t["result"]]:
                if not isinstance(v, str):
                    bad("%s: non-string value" % where)
        blob = json.dumps(c)
        for pat in SECRET_PATTERNS:
            if re.search(pat, blob):
                bad("%s: looks like a secret (%s)" % (c["id"], pat))
    if not 750 <= total <= 800:
        bad("total turns %d not in 750..800" % total)
    long_chats = [c["id"] for c in chats if 50 <= len(c["turns"]) <= 80]
    if len(long_chats) < 2:
        bad("need a few chats of 50-80 turns, have %s" % long_chats)
    if any(len(c["turns"]) > 80 for c in chats):
        bad("a chat is longer than 80 turns")

    # --- labels --------------------------------------------------------------
    decs = labels["decisions"]
    dec_by_id = {d["id"]: d for d in decs}
    originals = [d for d in decs if d["amends"] is None]
    amendments = [d for d in decs if d["amends"] is not None]
    if len(originals) != 12 or len(amendments) != 7:
        bad("need 12 rules + 7 amendments, have %d + %d" % (len(originals), len(amendments)))
    if len(labels["undecided"]) != 3 or len(labels["unrelated"]) != 14:
        bad("need 3 undecided and 14 unrelated")
    if [d["id"] for d in decs] != ["d%02d" % i for i in range(1, len(decs) + 1)]:
        bad("decision ids not sequential")

    classified = [d["chat"] for d in decs] + labels["undecided"] + labels["unrelated"]
    if sorted(classified) != sorted(by_id):
        dup = sorted({x for x in classified if classified.count(x) > 1})
        missing = sorted(set(by_id) - set(classified))
        bad("chats not classified exactly once: duplicates %s, missing %s" % (dup, missing))
    if sorted(q["chat"] for q in labels["undecided_questions"]) != sorted(labels["undecided"]):
        bad("undecided_questions must cover each undecided chat once")

    amended_targets = []
    for d in decs:
        text = said(by_id[d["chat"]])
        for w in d["rule_words"]:
            if w.lower() not in text:
                bad("%s: rule word %r not said in %s" % (d["id"], w, d["chat"]))
        for r in d["rejected"]:
            for w in r["words"]:
                if w.lower() not in text:
                    bad("%s: rejected word %r not said in %s" % (d["id"], w, d["chat"]))
        if len(d["questions"]) != 5:
            bad("%s: needs 5 questions" % d["id"])
        q5 = d["questions"][-1].lower()
        for w in d["rule_words"] + d["stale_words"]:
            if w.lower() in q5:
                bad("%s: 5th question contains %r" % (d["id"], w))
        if d["amends"] is None:
            if d["stale_words"]:
                bad("%s: stale words on a non-amendment" % d["id"])
            continue
        old = dec_by_id.get(d["amends"])
        if old is None or old["amends"] is not None:
            bad("%s: amends %s which is not an original rule" % (d["id"], d["amends"]))
            continue
        amended_targets.append(old["id"])
        old_chat, new_chat = by_id[old["chat"]], by_id[d["chat"]]
        if not (int(new_chat["id"][1:]) > int(old_chat["id"][1:]) and old_chat["day"] - new_chat["day"] >= 14):
            bad("%s: amendment not weeks later than %s" % (d["id"], old["id"]))
        if not d["stale_words"]:
            bad("%s: no stale words" % d["id"])
        for w in d["stale_words"]:
            if w.lower() not in said(old_chat):
                bad("%s: stale word %r not said in the amended chat %s" % (d["id"], w, old_chat["id"]))
            if w.lower() not in text:
                bad("%s: stale word %r not said in the amending chat %s" % (d["id"], w, d["chat"]))
    if len(set(amended_targets)) != len(amended_targets):
        bad("a rule is amended twice")

    # --- wording ---------------------------------------------------------------
    everything = "\n".join(said(c) for c in chats)
    counts = {w: len(re.findall(r"\b%s\b" % w, everything)) for w in ("decision", "decided", "rule")}

    print("chats: %d, turns: %d, long chats: %s" % (len(chats), total, ", ".join(
        "%s (%d)" % (c, len(by_id[c]["turns"])) for c in long_chats)))
    print("rules: %d, amendments: %d, undecided: %d, unrelated: %d" % (
        len(originals), len(amendments), len(labels["undecided"]), len(labels["unrelated"])))
    print("uses of decision/decided/rule in chat text: %s" % counts)
    if problems:
        print("\nPROBLEMS (%d):" % len(problems))
        for p in problems:
            print(" -", p)
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
