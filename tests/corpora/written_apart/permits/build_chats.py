"""Write chats.json from chats_1.py ... chats_8.py (standard library only)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import chats_1, chats_2, chats_3, chats_4, chats_5, chats_6, chats_7, chats_8  # noqa: E402

MODULES = [chats_1, chats_2, chats_3, chats_4, chats_5, chats_6, chats_7, chats_8]


def main():
    chats = [c for m in MODULES for c in m.CHATS]
    ids = [c["id"] for c in chats]
    assert ids == ["c%02d" % i for i in range(1, 37)], ids
    with open(os.path.join(HERE, "chats.json"), "w", encoding="utf-8") as fh:
        json.dump(chats, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    print("wrote chats.json: %d chats, %d turns" % (len(chats), sum(len(c["turns"]) for c in chats)))


if __name__ == "__main__":
    main()
