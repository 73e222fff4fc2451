"""Build chats.json from chats_1.py ... chats_10.py (standard library only).

Checks: 36 chats with ids c01..c36 in order, day never increases (90 -> 1),
every turn has exactly one of user/assistant/tool with the real tool input shapes,
and file paths start with {P}/.
"""
import importlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import h  # noqa: E402

MODULES = ["chats_%d" % i for i in range(1, 11)]

TOOL_KEYS = {
    "Bash": {"command", "description"},
    "Read": {"file_path"},
    "Edit": {"file_path", "old_string", "new_string"},
    "Write": {"file_path", "content"},
    "Grep": {"pattern", "path"},
}


def check(chats):
    errors = []
    if len(chats) != 36:
        errors.append("expected 36 chats, got %d" % len(chats))
    prev_day = None
    for i, c in enumerate(chats, 1):
        want = "c%02d" % i
        if c["id"] != want:
            errors.append("chat %d has id %s, want %s" % (i, c["id"], want))
        if prev_day is not None and c["day"] > prev_day:
            errors.append("%s: day %d increases after %d" % (c["id"], c["day"], prev_day))
        prev_day = c["day"]
        if not c["turns"] or "user" not in c["turns"][0]:
            errors.append("%s: must start with a user turn" % c["id"])
        for j, t in enumerate(c["turns"]):
            kinds = [k for k in ("user", "assistant", "tool") if k in t]
            if len(kinds) != 1:
                errors.append("%s turn %d: kinds %s" % (c["id"], j, kinds))
                continue
            if "tool" in t:
                name = t["tool"]
                if name not in TOOL_KEYS:
                    errors.append("%s turn %d: unknown tool %s" % (c["id"], j, name))
                    continue
                if set(t["input"]) != TOOL_KEYS[name]:
                    errors.append("%s turn %d: %s input keys %s" % (c["id"], j, name, sorted(t["input"])))
                for k in ("file_path", "path"):
                    if k in t["input"] and not t["input"][k].startswith("{P}"):
                        errors.append("%s turn %d: %s %r does not start with {P}" % (c["id"], j, k, t["input"][k]))
                if not isinstance(t.get("result"), str):
                    errors.append("%s turn %d: tool without string result" % (c["id"], j))
                extra = set(t) - {"tool", "input", "result", "error"}
                if extra:
                    errors.append("%s turn %d: extra keys %s" % (c["id"], j, extra))
            else:
                k = kinds[0]
                if not isinstance(t[k], str) or not t[k].strip():
                    errors.append("%s turn %d: empty %s text" % (c["id"], j, k))
    if chats and (chats[0]["day"] != 90 or chats[-1]["day"] != 1):
        errors.append("days must run from 90 to 1")
    return errors


def main():
    for m in MODULES:
        importlib.import_module(m)
    chats = h.CHATS
    errors = check(chats)
    if errors:
        for e in errors:
            print("ERROR:", e)
        sys.exit(1)
    with open(os.path.join(HERE, "chats.json"), "w", encoding="utf-8") as f:
        json.dump(chats, f, indent=1, ensure_ascii=False)
        f.write("\n")
    n = sum(len(c["turns"]) for c in chats)
    longest = max(chats, key=lambda c: len(c["turns"]))
    print("wrote chats.json: %d chats, %d turns, longest %s (%d turns)" % (len(chats), n, longest["id"], len(longest["turns"])))
    for c in chats:
        print("  %s day %2d  %3d turns" % (c["id"], c["day"], len(c["turns"])))


if __name__ == "__main__":
    main()
