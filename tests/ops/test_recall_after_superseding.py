"""`cortex recall`: the rule that replaced another ranks above the talk that settled the old one.

The old rule's record is hidden once superseded, but the passages of the chat that settled it still match
the question, often better than the short new rule (they say the subject's words many times).  A hit that
comes only from the sessions of a superseded rule ranks right after the record that superseded it.
"""
import os
import time

import pytest

import cortex_testkit as testkit

from cortex.ops.recall import recall

T0 = time.time() - 50 * 86400
DAY = 86400


@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def test_passages_of_the_superseded_rules_chat_rank_after_the_rule_that_replaced_it(env):
    home, project, root = env
    old = testkit.Chat(root, project, "old-chat", T0)
    old.user("Guest checkout abandons a lot: the guest checkout form asks for too much. What should guest "
             "checkout require?")
    old.tool("Read", file_path=os.path.join(project, "shop/checkout.py"))
    old.say("For guest checkout I'd require an email address and the shipping address only; guest checkout "
            "would skip the phone number. Sound good?")
    old.user("yes, guest checkout without the phone number is fine")
    old.stop(home, run=True)
    new = testkit.Chat(root, project, "new-chat", T0 + 25 * DAY)
    new.user("Couriers need a phone number after all.")
    new.tool("Read", file_path=os.path.join(project, "shop/checkout.py"))
    new.say("Understood. This replaces the earlier rule. New rule: `checkout_form()` asks guests for an email, "
            "the shipping address and a phone number.")
    new.user("right")
    new.stop(home, run=True)
    hits = recall(home, "what does guest checkout require", cwd=project, k=10, record_use=False)["hits"]
    first_new = next(i for i, h in enumerate(hits) if h["kind"] == "record" and "phone number" in h["text"])
    olds = [i for i, h in enumerate(hits) if (h.get("session") == "old-chat" and h["kind"] == "episode")
            or (h["kind"] == "record" and h["sessions"] == ["old-chat"])]
    assert olds, hits  # the old chat still answers, below the current rule
    assert first_new < min(olds), [(h["kind"], h.get("session"), h["text"][:60]) for h in hits]
