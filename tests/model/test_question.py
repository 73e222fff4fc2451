"""Decision questions ("what did we decide about X?"): read off the wording (cortex.model.question), then
the rule in force first in `cortex recall` and `cortex-prompt`."""
import time

import pytest

import cortex_testkit as testkit
from cortex.model import question
from cortex.model.hitorder import merge_ranking
from cortex.store.terms import query_terms


@pytest.mark.parametrize("text", [
    "what did we decide about `send_invoice()`?",
    "What did we settle on for the invoice mailer?",
    "remind me what we agreed for the invoice mailer",
    "what's the rule for send_invoice again?",
    "did we ever agree how the invoice mailer should work?",
    "Invoice mailer: what was the decision?",
    "I forgot what we chose for the retry policy",
    "how did we end up handling refunds?",
    "what was our final decision on the cache?",
    "Can you remind me how we decided to handle the export?",
    "what did we say the mailer should do?",
    "how is the mailer supposed to work now?",
    "what’s the current policy for API keys?",
])
def test_questions_about_a_settled_rule_are_recognised(text):
    assert question.asks_what_was_decided(text)


@pytest.mark.parametrize("text", [
    "finance flagged an invoice that was sent late after a credit note",
    "Bug in send_invoice(): the PDF goes out before the totals",
    "how do I run the invoice tests?",
    "add a docstring to send_invoice()",
    "thanks!",
    "the decision tree classifier is slow",
    "",
])
def test_other_queries_are_not(text):
    assert not question.asks_what_was_decided(text)


def test_the_frame_words_are_not_searched_for_unless_nothing_else_is_left():
    frame = query_terms(question.FRAME_WORDS)
    terms = query_terms("remind me what we agreed for the invoice mailer again")
    assert question.subject_terms(terms, frame) == query_terms("invoice mailer")
    only = query_terms("what did we decide?")
    assert question.subject_terms(only, frame) == only


def test_a_decision_record_with_the_bonus_ranks_above_a_better_matching_passage():
    def rec(rid, rtype, rel):
        return {"kind": "record", "id": rid, "type": rtype, "relevance": rel, "sessions": ["s-rule"], "text": rid,
                "tier": 0, "parts": {"recency": 0.0, "pinned": False}, "score": rel,
                "bonus": question.decided_bonus(rtype)}
    passage = {"kind": "episode", "id": "s-chat:3", "session": "s-chat", "score": 1.0, "relevance": 1.0, "tier": 0,
               "text": "x"}
    said = {"kind": "episode", "id": "s-rule:2", "session": "s-rule", "score": 0.5, "relevance": 0.5, "tier": 0,
            "text": "y"}
    progress = dict(rec("r-progress", "progress", 1.0), sessions=["s-other"])
    got = [h["id"] for h in merge_ranking([progress, rec("r-rule", "decision", 0.6)], [passage, said],
                                          lambda h: {h["text"]})]
    assert got[:2] == ["r-rule", "s-chat:3"]
    plain = dict(rec("r-rule", "decision", 0.6), bonus=0.0)
    assert [h["id"] for h in merge_ranking([plain], [passage, said], lambda h: {h["text"]})][0] == "s-chat:3"


# ----------------------------------------------------------------------------------------- end to end

@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def _sessions(home, root, project):
    t = time.time() - 30 * 86400
    testkit.invoice_rule_chat(home, root, project, t)  # the rule, never naming what a later bug report says
    # later chats about the same function, full of the question's words ("agreed", "decide", "again")
    for i in range(8):
        testkit.Chat(root, project, "other-%02d" % i, t + 86400 * (i + 1)).turns(
            ("user", "Add type hints to send_invoice() again, the reviewer agreed they help (review %d). I can't "
                     "decide if the invoice module needs more." % i),
            ("assistant", "Added the hints to send_invoice(); the invoice tests pass."),
        ).stop(home)
    for i in range(20):  # and most chats are about something else
        testkit.Chat(root, project, "else-%02d" % i, t + 86400 * 10 + 3600 * i).turns(
            ("user", "The dashboard chart %d renders the wrong colours in dark mode, can you fix it?" % i),
            ("assistant", "Fixed the palette lookup in the chart theme; the dashboard tests pass."),
        ).stop(home)
    testkit.normalize(home)


def test_what_did_we_decide_gets_the_rule_first(env):
    from cortex.ops import recall as R
    home, project, root = env
    _sessions(home, root, project)
    got = R.recall(home, "what did we decide about send_invoice() again?", k=5, cwd=project, record_use=False)
    first = got["hits"][0]
    assert (first["kind"], first.get("type"), first["session"]) == ("record", "decision", "rule-s"), \
        [(h["kind"], h.get("type"), h["session"], h["snippet"]) for h in got["hits"]]
    assert "again" not in " ".join(got["terms"]) and "decid" not in " ".join(got["terms"])


def test_the_prompt_hook_prints_the_rule_first(env):
    from cortex.brief import prompt
    from cortex.core import config
    home, project, root = env
    _sessions(home, root, project)
    cfg = config.load(home)
    # a home this small gives every bm25 a low score: the thresholds that keep the hook quiet are lowered,
    # what is checked is the order
    cfg["prompt"] = dict(cfg.get("prompt") or {}, min_score=0.0, min_passage_score=0.0)
    hits = prompt.search(home, "remind me what we agreed for send_invoice()", project, cfg, "new-s")
    assert hits, "nothing printed"
    first = hits[0][0]
    # the decision itself, or (the session-start block shows it already) the exchange that settled it
    assert "rule-s" in (first.get("sessions") or [first.get("session")]), \
        [(h.get("type"), h.get("session") or h.get("sessions")) for h, _ in hits]
