"""Records and passages in one ranking (cortex.model.hitorder and recall end to end).

The unit tests build hits by hand; the scripted test writes sessions as Claude Code would and asks
`recall` what a person would ask."""
import time

import pytest

import cortex_testkit as testkit
from cortex.model.hitorder import drop_shown_turns, merge_ranking
from cortex.ops import recall as R


def rec(rid, rel, sessions, text="", tier=0, recency=0.0, pinned=False):
    return {"kind": "record", "id": rid, "relevance": rel, "sessions": sessions, "text": text, "tier": tier,
            "parts": {"recency": recency, "pinned": pinned}, "score": rel}


def psg(pid, score, session, text="", tier=0):
    return {"kind": "episode", "id": pid, "session": session, "score": score, "relevance": score, "tier": tier,
            "text": text}


def order(records, passages):
    return [h["id"] for h in merge_ranking(records, passages, lambda h: set(h["text"].split()))]


def test_a_record_whose_conversation_does_not_hold_the_query_ranks_below_a_passage_that_does():
    # the best record always has relevance 1 (scaled by the best record), however weak its match
    weak = rec("r-weak", 1.0, ["s-other"])
    strong = psg("s-right:3", 1.0, "s-right", "the nightly export job times out at 4am")
    assert order([weak], [strong]) == ["s-right:3", "r-weak"]


def test_a_record_backed_by_its_conversation_ranks_above_one_that_is_not():
    backed = rec("r-rule", 0.9, ["s-right"], "export job retries twice then pages")
    alone = rec("r-alone", 1.0, ["s-none"], "export settings page")
    got = order([alone, backed], [psg("s-right:3", 0.9, "s-right", "nothing alike"),
                                  psg("s-other:2", 0.8, "s-other", "also nothing")])
    assert got == ["r-rule", "s-other:2", "r-alone", "s-right:3"]


def test_a_record_ranks_at_least_as_high_as_the_passage_of_its_session_that_says_the_same_thing():
    text = "the export job retries twice then pages the on-call"
    r = rec("r-rule", 0.2, ["s1"], text)
    said = psg("s1:4", 1.0, "s1", "[user] ok so " + text + " and that's it")
    other = psg("s2:1", 0.9, "s2", "unrelated words entirely")
    got = order([r], [said, other])
    assert got.index("r-rule") < got.index("s1:4")
    assert got[0] == "r-rule"


def test_a_passage_of_another_session_that_shares_the_words_does_not_lift_a_record():
    text = "the export job retries twice then pages the on-call"
    r = rec("r-rule", 0.2, ["s1"], text)
    got = order([r], [psg("s2:4", 1.0, "s2", text), psg("s1:9", 0.1, "s1", "no")])
    assert got[0] == "s2:4"


def test_after_a_record_the_next_places_go_to_other_conversations():
    r = rec("r-rule", 1.0, ["s1"], "x")
    same = psg("s1:5", 0.9, "s1", "y")
    other = psg("s2:2", 0.7, "s2", "z")
    assert order([r], [same, other]) == ["r-rule", "s2:2", "s1:5"]


def test_a_session_that_answers_far_better_still_fills_the_next_place():
    r = rec("r-rule", 1.0, ["s1"], "x")
    same = psg("s1:5", 1.0, "s1", "y")
    other = psg("s2:2", 0.2, "s2", "z")
    assert order([r], [same, other]) == ["r-rule", "s1:5", "s2:2"]


def test_passages_after_passages_of_the_same_session_keep_their_place():
    # the details of one long conversation (no record above): no step back
    got = order([], [psg("s1:3", 1.0, "s1"), psg("s1:9", 0.8, "s1"), psg("s2:1", 0.7, "s2")])
    assert got == ["s1:3", "s1:9", "s2:1"]


def span(pid, session, anchor, first, last):
    return dict(psg(pid, 1.0, session), row={"anchor": anchor, "first_turn": first, "last_turn": last})


def test_a_passage_whose_turn_one_of_its_session_above_shows_is_left_out():
    # a turn with its neighbours: the next turn's passage repeats two of its three turns
    got = drop_shown_turns([span("s1:4", "s1", 4, 3, 5), span("s1:5", "s1", 5, 4, 6), rec("r1", 1.0, ["s1"]),
                            span("s2:4", "s2", 4, 3, 5), span("s1:6", "s1", 6, 5, 7), span("s1:3", "s1", 3, 2, 4)])
    # s1:5 and s1:3 repeat turns s1:4 shows; s1:6 holds a turn none above shows; a record is never left out
    assert [h["id"] for h in got] == ["s1:4", "r1", "s2:4", "s1:6"]


def test_tiers_still_come_first():
    got = order([rec("r-domain", 1.0, ["s9"], tier=2)], [psg("s1:3", 0.1, "s1", tier=0)])
    assert got == ["s1:3", "r-domain"]


# ----------------------------------------------------------------------------------------- end to end

@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def _sessions(home, root, project):
    t = time.time() - 20 * 86400
    testkit.invoice_rule_chat(home, root, project, t)  # the rule, never naming what a later bug report says
    # many unrelated chats about the same code
    for i in range(12):
        testkit.Chat(root, project, "other-%02d" % i, t + 3600 * (i + 1)).turns(
            ("user", "Rename the helper in the invoice module, and fix the flaky test number %d." % i),
            ("assistant", "Renamed it and the invoice tests pass; the flaky test was a timezone fixture."),
        ).stop(home)
    testkit.normalize(home)


def test_a_bug_report_that_never_names_the_rule_finds_the_conversation_that_settled_it_first(env):
    home, project, root = env
    _sessions(home, root, project)
    got = R.recall(home, "finance flagged an invoice that was sent late after a credit note", k=5, cwd=project,
                   record_use=False)
    sessions = [h["session"] for h in got["hits"]]
    assert sessions[0] == "rule-s", [(h["kind"], h["session"], h["snippet"]) for h in got["hits"]]


def test_the_first_hits_do_not_depend_on_k(env):
    home, project, root = env
    _sessions(home, root, project)
    for q in ("invoice tests flaky timezone", "credit note totals recalculated", "rename the helper"):
        five = [h["id"] for h in R.recall(home, q, k=5, cwd=project, record_use=False)["hits"]]
        forty = [h["id"] for h in R.recall(home, q, k=40, cwd=project, record_use=False)["hits"]]
        assert forty[:5] == five, q


def test_a_conversation_that_holds_the_words_in_several_places_beats_a_single_turn():
    from cortex.model.hitorder import add_session_support
    lone = psg("s-lone:7", 1.0, "s-lone")
    many = [psg("s-many:2", 0.9, "s-many"), psg("s-many:5", 0.6, "s-many"), psg("s-many:9", 0.5, "s-many")]
    ranked = order([], add_session_support([lone] + many))
    assert ranked[0] == "s-many:2"
    # support counts the three best others only, and never the passage itself
    solo = add_session_support([psg("x:1", 0.7, "x"), psg("y:1", 1.0, "y")])
    assert [round(h["score"], 6) for h in solo] == [0.7, 1.0]


def test_one_stretch_of_a_conversation_is_one_hit_and_the_next_place_goes_to_another(env):
    home, project, root = env
    t = time.time() - 10 * 86400
    testkit.Chat(root, project, "long-s", t).turns(
        ("user", "Is staging green?"),
        ("assistant", "Staging is green."),
        ("user", "Now the nightly jobs, please."),
        ("assistant", "The export job times out at 4am because the backup locks the orders table."),
        ("user", "Ok, I'll move the backup."),
        ("assistant", "Good."),
    ).stop(home)
    testkit.Chat(root, project, "short-s", t + 86400).turns(
        ("user", "Moved the nightly export job to 04:30 so it no longer times out."),
        ("assistant", "Noted."),
    ).stop(home)
    testkit.normalize(home)
    hits = R.recall(home, "export job times out at 4am", k=2, cwd=project, record_use=False, kind="episode")["hits"]
    assert [h["session"] for h in hits] == ["long-s", "short-s"], [(h["session"], h["turns"]) for h in hits]
