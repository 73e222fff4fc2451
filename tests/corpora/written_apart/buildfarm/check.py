"""Re-check chats.json and labels.json as they are on disk (no rebuild). Standard library only."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import build_chats  # noqa: E402
import build_labels  # noqa: E402


def main():
    with open(os.path.join(HERE, "chats.json"), encoding="utf-8") as f:
        chats = json.load(f)
    with open(os.path.join(HERE, "labels.json"), encoding="utf-8") as f:
        labels = json.load(f)
    errors = build_chats.check(chats) + build_labels.check(chats, labels)
    for e in errors:
        print("ERROR:", e)
    if errors:
        sys.exit(1)
    turns = sum(len(c["turns"]) for c in chats)
    print("ok: %d chats, %d turns, %d decisions, %d undecided, %d unrelated" % (
        len(chats), turns, len(labels["decisions"]), len(labels["undecided"]), len(labels["unrelated"])))


if __name__ == "__main__":
    main()
