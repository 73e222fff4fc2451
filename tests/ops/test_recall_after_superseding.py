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


# -- chains: rule -> amendment -> second amendment ------------------------------------------------------

@pytest.fixture
def chain(env):
    home, project, root = env
    sessions = testkit.amended_twice(home, root, project, T0)
    return home, project, sessions


def _where(hits, sessions):
    return [i for i, h in enumerate(hits) if (h.get("session") in sessions and h["kind"] == "episode")
            or (h["kind"] == "record" and set(h.get("sessions") or ()) <= set(sessions))]


def test_the_second_amendment_ranks_above_the_chats_of_both_rules_it_retired(chain):
    """The question's words are those of the first chat (its passages lead when nothing moves them), the
    second amendment superseded the amendment, which superseded the rule: both chats come after it."""
    home, project, (rule, amend, amend2) = chain
    hits = recall(home, "what should guest checkout require", cwd=project, k=10, record_use=False)["hits"]
    assert hits[0]["kind"] == "record" and hits[0]["sessions"] == [amend2], hits[0]
    assert _where(hits, [rule]) and _where(hits, [rule, amend])[0] > 0


def test_the_chats_of_a_chain_move_behind_the_current_rule_the_later_rule_first(chain):
    """Every hit from the chats of the rules the shown record replaced, directly or not, moves right behind
    it: the amendment's chat before the original rule's, each chat's hits in their own order."""
    from cortex.ops.recall import _after_superseding
    from cortex.store.index import connect
    home, project, (rule, amend, amend2) = chain
    con = connect(home.index_db, readonly=True)
    try:
        rid, path = con.execute("SELECT id, path FROM records WHERE status='active' AND type='decision'").fetchone()
    finally:
        con.close()
    current = {"kind": "record", "id": rid, "type": "decision", "path": path, "sessions": [amend2]}

    def passage(name, session):
        return {"kind": "episode", "id": name, "session": session}
    ranked = [passage("a1", rule), passage("b1", amend), passage("other", "elsewhere"), passage("a2", rule),
              current, passage("b2", amend), passage("c1", amend2)]
    out = _after_superseding(home, [((0, float(i), h["id"]), h) for i, h in enumerate(ranked)], k=5)
    # b2 ranked below the record already: it takes a1's place (the chain's places keep theirs, the later
    # rule's chat first), c1 (the current rule's own chat) stays where it was
    assert [h["id"] for _, h in out] == ["other", rid, "b1", "b2", "a1", "a2", "c1"]
    # a record that will not be shown moves nothing
    out = _after_superseding(home, [((0, float(i), h["id"]), h) for i, h in enumerate(ranked)], k=4)
    assert [h["id"] for _, h in out] == [h["id"] for h in ranked]
    # below the record, the older chat's hits give their places to the later chat's; others stay put
    below = [current, passage("a3", rule), passage("x", "elsewhere"), passage("b3", amend), passage("a4", rule)]
    out = _after_superseding(home, [((0, float(i), h["id"]), h) for i, h in enumerate(below)], k=3)
    assert [h["id"] for _, h in out] == [rid, "b3", "x", "a3", "a4"]


def test_recall_all_labels_each_retired_rule_with_what_replaced_it_and_the_current_rule(chain, capsys):
    from cortex.cli.main import main
    home, project, (rule, amend, amend2) = chain
    hits = recall(home, "guest checkout email address", cwd=project, k=10, record_use=False,
                  include_archived=True)["hits"]
    recs = {h["sessions"][0]: h for h in hits if h["kind"] == "record"}
    assert [recs[s]["status"] for s in (rule, amend, amend2)] == ["superseded", "superseded", "active"]
    assert recs[rule]["superseded_by"] == [recs[amend]["id"]] and recs[rule]["current"] == [recs[amend2]["id"]]
    assert recs[amend]["superseded_by"] == [recs[amend2]["id"]] and "current" not in recs[amend]
    assert "superseded_by" not in recs[amend2]
    assert main(["recall", "guest checkout email address", "--all", "--no-use", "--cwd", project]) == 0
    out = capsys.readouterr().out
    assert "superseded by %s; now %s" % (recs[amend]["id"], recs[amend2]["id"]) in out, out
    assert "superseded by %s)" % recs[amend2]["id"] in out, out


def test_a_chain_is_followed_once_round_a_cycle_and_at_most_ten_links_deep():
    from cortex.ops.recall import CHAIN_DEPTH, _walk
    links = {"b": ["a"], "a": ["b", "me"]}
    assert _walk(["b"], lambda x: links.get(x, []), "me") == {"b": 1, "a": 2}
    asked = []
    line = {"r%d" % i: ["r%d" % (i + 1)] for i in range(30)}
    got = _walk(["r0"], lambda x: asked.append(x) or line[x], "me")
    assert CHAIN_DEPTH == 10 and got == {"r%d" % i: i + 1 for i in range(CHAIN_DEPTH)}
    assert asked == ["r%d" % i for i in range(CHAIN_DEPTH)]


def test_a_question_in_the_words_of_a_replaced_rule_finds_the_rule_now_in_force(env, capsys):
    """The amendment shares no word with the question (it sets the code, in other words), the replaced rule
    shares several: the rule in force is a hit all the same, above the old chat."""
    home, project, root = env
    old = testkit.Chat(root, project, "ttl-old", T0)
    old.tool("Read", file_path=os.path.join(project, "auth/session.kt"))
    old.say("I'd keep people signed in for 60 days, sliding: every refresh extends the login "
            "(`SESSION_TTL = 60.days`).")
    old.user("yes")
    old.stop(home, run=True)
    new = testkit.Chat(root, project, "ttl-new", T0 + 30 * DAY)
    new.user("Audit finding SEC-9: make it 14 days.")
    new.tool("Edit", file_path=os.path.join(project, "auth/session.kt"), old_string="val SESSION_TTL = 60.days",
             new_string="val SESSION_TTL = 14.days")
    new.say("Done: `SESSION_TTL = 14.days`.")
    new.stop(home, run=True)
    q = "how long do people stay signed in, is the login sliding?"
    hits = recall(home, q, cwd=project, k=5, record_use=False)["hits"]
    now_in_force = [i for i, h in enumerate(hits) if h["kind"] == "record" and "14.days" in h["text"]]
    assert now_in_force, [(h["kind"], h.get("status"), h["text"][:70]) for h in hits]
    olds = _where(hits, ["ttl-old"])
    assert not olds or now_in_force[0] < min(olds)
    # it says how it was found: through the replaced rule, whose words the question used
    hit = hits[now_in_force[0]]
    replaced = [r for r in recall(home, q, cwd=project, k=5, record_use=False, include_archived=True)["hits"]
                if r["kind"] == "record" and r["status"] == "superseded"]
    assert hit["via"] in {r["id"] for r in replaced}
    assert all("via" not in h for h in hits if h is not hit)
    from cortex.cli.main import main
    assert main(["recall", q, "--no-use", "--cwd", project]) == 0
    assert "via %s, the rule it replaced" % hit["via"] in capsys.readouterr().out


def test_the_rule_in_force_is_scored_with_the_conversation_of_the_rule_it_replaced(env):
    """The amendment is a hit, but weakly (one of the question's words), while the old chat's turns hold
    them all, many times: the rule in force still ranks above the old chat's passages."""
    home, project, root = env
    old = testkit.Chat(root, project, "logo-old", T0)
    old.user("a customer uploaded an svg logo and the pdf worker crashed. should we allow svg logos at all?")
    old.tool("Read", file_path=os.path.join(project, "app/models/account.rb"))
    old.say("SVG logos can carry scripts, and the PDF renderer chokes on some svg files. I'd allow PNG or JPEG "
            "logos only, max 1 MB, and reject svg uploads with a clear message.")
    old.user("yes, no svg logos")
    old.user("and the svg logos already uploaded? convert them")
    old.say("Converted the 12 svg logos already uploaded to PNG.")
    old.stop(home, run=True)
    new = testkit.Chat(root, project, "logo-new", T0 + 30 * DAY)
    new.user("phone photos are bigger than the limit, raise it")
    new.tool("Edit", file_path=os.path.join(project, "app/models/account.rb"),
             old_string='    errors.add(:logo, :too_big, message: "must be smaller than 1 MB") if too_big?',
             new_string='    errors.add(:logo, :too_big, message: "must be smaller than 5 MB") if too_big?')
    new.say("I'd raise the logo limit to 5 MB, still PNG or JPEG only, and downscale on upload in `NormalizeLogoJob`.")
    new.user("yes")
    new.stop(home, run=True)
    hits = recall(home, "can users upload svg logos now?", cwd=project, k=5, record_use=False)["hits"]
    now_in_force = [i for i, h in enumerate(hits) if h["kind"] == "record" and "5 MB" in h["text"]]
    assert now_in_force, [(h["kind"], h.get("session"), h["text"][:70]) for h in hits]
    olds = _where(hits, ["logo-old"])
    assert not olds or now_in_force[0] < min(olds)
