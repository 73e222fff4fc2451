"""An amendment finds the rule it replaces when the two name their subject differently.

Weeks apart, people name one thing two ways: the rule chat talks about "the seat hold" over
`booking/seats.py`, the amendment says `hold_seat()`.  An amendment that says it updates an earlier rule
retires the earlier active decision on the same subject, where the same subject is also the same file
(settled over, or named) or the amendment's code name in words, stemmed ("hold_seat" ~ "seat hold").
Another function's rule in the same file stays; nothing crosses projects; a switch "X instead of Y" about
one function says nothing about another function's Y.
"""
import os
import subprocess
import time

import pytest

import cortex_testkit as testkit

from cortex.curate import subjects as S
from cortex.ingest.decisions import summary_of
from cortex.store.records import iter_paths, read

T0 = time.time() - 60 * 86400
DAY = 86400


@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def decisions(home):
    return [r for r in (read(p) for p in iter_paths(home.records)) if r["type"] == "decision"]


def one(home, *words):
    found = [r for r in decisions(home) if all(w.lower() in r["text"].lower() for w in words)]
    assert len(found) == 1, (words, [r["text"] for r in decisions(home)])
    return found[0]


def settle(root, project, sid, t, path, opener, proposal, home):
    c = testkit.Chat(root, project, sid, t)
    c.user(opener)
    c.tool("Read", file_path=os.path.join(project, path))
    c.say(proposal + " Sound good?")
    c.user("yes, go with that")
    c.stop(home, run=True)


def amend(root, project, sid, t, path, ask, restated, home):
    c = testkit.Chat(root, project, sid, t)
    c.user(ask)
    c.tool("Read", file_path=os.path.join(project, path))
    c.say(restated)
    c.user("right")
    c.tool("Edit", file_path=os.path.join(project, path), old_string="a", new_string="b")
    c.stop(home, run=True)


def test_an_amendment_naming_the_function_retires_the_rule_that_named_it_in_prose(env):
    home, project, root = env
    settle(root, project, "seat-rule", T0, "booking/seats.py",
           "Two people keep buying the same seat at the theatre.",
           "I'd keep the seat hold for 8 minutes while the buyer pays, then free it.", home)
    old = one(home, "8 minutes")
    assert old["files"] == ["booking/seats.py"] and "hold_seat" not in old["text"]
    amend(root, project, "seat-amend", T0 + 20 * DAY, "booking/seats.py",
          "Card payments with 3-D Secure take longer than the hold now. `hold_seat()` needs 12 minutes.",
          "Noted, new rule: `hold_seat()` keeps a seat for 12 minutes while the buyer pays, then frees it; this "
          "replaces the earlier rule.", home)
    old, new = one(home, "8 minutes"), one(home, "12 minutes")
    assert old["status"] == "superseded" and old["superseded_by"] == [new["id"]]
    assert new["status"] == "active" and new["supersedes"] == [old["id"]]


def test_an_amendment_linked_only_by_the_file_retires_the_rule_settled_over_it(env):
    home, project, root = env
    settle(root, project, "tax-rule", T0, "billing/vat.py",
           "Invoices to other EU countries show the wrong VAT.",
           "I'd apply the reverse charge for business buyers with a valid VAT number and charge our rate "
           "to everyone else.", home)
    amend(root, project, "tax-amend", T0 + 15 * DAY, "billing/vat.py",
          "Finance says the VAT number check has to be live, not cached.",
          "Understood — replacing the old rule with the new one: apply the reverse charge for business "
          "buyers only after a live check of their VAT number, and charge our rate to everyone else.", home)
    old, new = one(home, "valid VAT number"), one(home, "live check")
    assert old["status"] == "superseded" and new["supersedes"] == [old["id"]]


def test_the_amendment_of_one_function_leaves_another_functions_rule_in_the_same_file(env):
    home, project, root = env
    settle(root, project, "lock-rule", T0, "booking/seats.py",
           "How long should a seat stay locked while the buyer pays?",
           "I'd have `lock_seat()` keep the lock for 8 minutes, then free the seat.", home)
    settle(root, project, "sweep-rule", T0 + DAY, "booking/seats.py",
           "Abandoned carts pile up overnight.",
           "I'd have `sweep_abandoned_carts()` run every 30 minutes and empty carts idle for a day.", home)
    amend(root, project, "lock-amend", T0 + 20 * DAY, "booking/seats.py",
          "From now on `lock_seat()` should keep the lock for 12 minutes, 3-D Secure is slow.",
          "Got it — this replaces the earlier rule. New rule: `lock_seat()` keeps the lock for 12 minutes, "
          "then frees the seat.", home)
    assert one(home, "8 minutes")["status"] == "superseded"
    sweep = one(home, "sweep_abandoned_carts")
    assert sweep["status"] == "active" and not sweep.get("superseded_by")


def test_a_rule_named_in_words_only_is_found_through_the_stemmed_words():
    from cortex.store.terms import tokenize
    assert S.ident_words("hold_seat()") == frozenset(tokenize("hold seat"))
    assert S.names_words("hold_seat()", frozenset(tokenize("The seat holds last 8 minutes")))
    assert S.names_words("PaymentRetryPolicy", frozenset(tokenize("the policy for payment retries")))
    assert S.names_words("compute_late_fee()", frozenset(tokenize("a late fee of 2 percent")))  # all but one
    assert not S.names_words("hold_seat()", frozenset(tokenize("free the seat after payment")))
    assert not S.ident_words("billing/vat.py") and not S.ident_words("retry")
    assert S.same_file("/home/me/shop/billing/vat.py", "billing/vat.py")
    assert S.same_file("billing/vat.py", "vat.py")
    assert not S.same_file("billing/vat.py", "legacy/vat.py") and not S.same_file("billing/vat.py", "at.py")
    assert S.named_files("For `billing/vat.py`: apply `reverse_charge()` in vat.py") == ["billing/vat.py", "vat.py"]


def test_an_amendment_in_another_project_retires_nothing(env, tmp_path):
    home, project, root = env
    other = tmp_path / "other-proj"
    other.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(other)], check=True)
    settle(root, project, "p1-rule", T0, "booking/seats.py", "Seats get double-sold.",
           "I'd keep the seat hold for 8 minutes while the buyer pays, then free it.", home)
    amend(root, str(other), "p2-amend", T0 + 20 * DAY, "booking/seats.py",
          "`hold_seat()` needs 12 minutes here.",
          "This replaces the earlier rule. New rule: `hold_seat()` keeps a seat for 12 minutes while the buyer "
          "pays, then frees it.", home)
    assert one(home, "8 minutes")["status"] == "active"


def test_instead_of_a_value_for_one_function_leaves_another_functions_rule_alone(env):
    home, project, root = env
    settle(root, project, "digest-rule", T0, "mail/digest.py", "Users want fewer emails.",
           "I'd have `send_digest()` send the activity digest weekly, on Monday morning.", home)
    settle(root, project, "backup-rule", T0 + DAY, "ops/backup.py", "How often should we back up the uploads?",
           "I'd have `backup_uploads()` copy the uploads to cold storage daily at 02:00.", home)
    c = testkit.Chat(root, project, "backup-change", T0 + 10 * DAY)
    c.user("[MEMORY: decision] `backup_uploads()` copies the uploads every hour instead of weekly.")
    c.stop(home, run=True)
    assert one(home, "send_digest")["status"] == "active"
    # a switch between tools, where neither side names code, still retires the earlier choice
    c = testkit.Chat(root, project, "pm-1", T0 + 11 * DAY)
    c.user("[MEMORY: decision] Use npm for installing the front-end dependencies.")
    c.stop(home, run=True)
    c = testkit.Chat(root, project, "pm-2", T0 + 12 * DAY)
    c.user("[MEMORY: decision] Use pnpm instead of npm, the installs are three times faster.")
    c.stop(home, run=True)
    assert one(home, "Use npm for")["status"] == "superseded"


def test_a_restatement_that_says_it_replaces_the_earlier_rule_keeps_those_words():
    said = summary_of("Okay. This replaces the earlier rule (coupons stacked freely). New rule: at most one "
                      "coupon per order, and never on gift cards.")
    assert said == "At most one coupon per order, and never on gift cards (this replaces the earlier rule)."
    said = summary_of("Right, so the old behaviour (we logged every request body) is superseded. Going forward: "
                      "request bodies are logged only for 5xx responses, and truncated to 2 KB.")
    assert said.startswith("Request bodies are logged only for 5xx") and "replaces the earlier rule" in said
    assert summary_of("Going forward: I'll keep the answers short.") is None  # no earlier rule named
