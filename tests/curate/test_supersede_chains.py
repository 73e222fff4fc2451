"""A rule amended twice: rule -> amendment -> second amendment, each in its own chat, through the normalizer.

The second amendment retires the first one only (the original rule is already superseded, and only active
decisions are ever retired), so the links form a chain: rule superseded_by amendment, amendment
superseded_by second amendment.  The block shows the second amendment alone.
"""
import time

import pytest

import cortex_testkit as testkit

from cortex.brief import session_start
from cortex.store.records import iter_paths, read

T0 = time.time() - 50 * 86400


@pytest.fixture
def chain(tmp_path, monkeypatch):
    home, project, root = testkit.project_env(tmp_path, monkeypatch)
    sessions = testkit.amended_twice(home, root, project, T0)
    by_session = {}
    for rec in (read(p) for p in iter_paths(home.records)):
        if rec["type"] == "decision":
            for p in rec["provenance"]:
                by_session.setdefault(p["session"], []).append(rec)
    assert all(len(by_session.get(s, [])) == 1 for s in sessions), by_session
    return home, project, [by_session[s][0] for s in sessions]


def test_each_amendment_retires_the_rule_before_it_and_links_only_to_that_one(chain):
    _, _, (rule, amend, amend2) = chain
    assert (rule["status"], amend["status"], amend2["status"]) == ("superseded", "superseded", "active")
    assert rule.get("superseded_by") == [amend["id"]] and not rule.get("supersedes")
    assert amend.get("supersedes") == [rule["id"]] and amend.get("superseded_by") == [amend2["id"]]
    assert amend2.get("supersedes") == [amend["id"]] and not amend2.get("superseded_by")


def test_the_block_shows_the_second_amendment_alone(chain):
    home, project, (rule, amend, amend2) = chain
    text, info = session_start.build(home, project)
    kept = {r["id"] for r in info["kept"]}
    assert amend2["id"] in kept and not kept & {rule["id"], amend["id"]}, text
    assert "courier app collects" in text and "shipping address only" not in text


def test_a_restatement_that_replaces_the_amended_rule_says_so():
    """A rule amended again names what it replaces as the amended, current or last one: the record keeps
    the words that say it replaces a rule, so the amendment in force is retired."""
    from cortex.ingest.decisions import summary_of
    for said in ["Understood. This replaces the amended rule from last time (holds of 30 minutes). New rule: "
                 "holds last 30 minutes for bank transfers and 10 minutes for cards.",
                 "OK, so the previous amendment (holds of 30 minutes) is superseded as well. From now on: holds last "
                 "30 minutes for bank transfers and 10 minutes for cards.",
                 "Got it, replacing the current rule again: holds last 30 minutes for bank transfers and 10 minutes "
                 "for cards.",
                 "Right, that's the second change. The earlier amendment (holds of 30 minutes) is replaced; the rule "
                 "is now: holds last 30 minutes for bank transfers and 10 minutes for cards."]:
        assert summary_of(said) == ("Holds last 30 minutes for bank transfers and 10 minutes for cards "
                                    "(this replaces the earlier rule)."), said
    assert summary_of("Got it: the current behaviour stays, holds last 30 minutes.") is None
    # a clause after a semicolon may lead a summing-up; the rule it states runs to the end of its sentence
    assert summary_of("Tests pass; the rule is now: holds last 30 minutes; cards get 10.") == (
        "Holds last 30 minutes; cards get 10.")
