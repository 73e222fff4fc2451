"""An approach the user rules out before anyone proposes it, with its reason ("Whatever we do, we shouldn't X:
<reason>", "I don't want to X, by the way; <reason>", "let's not X. <Reason>."): a rejected record, when it is
about the work.  Before, only a reply that started with "no"/"not"/"don't use"/"avoid" was read as one.  (A
reason that is a sentence of its own keeps its first capital, as a name would.)"""
from __future__ import annotations

import pytest

from cortex.ingest import extract
from cortex.ingest.adapters import base as B
from cortex.ingest.extract import Context

CTX = Context(client="claude-code", session="s1", transcript=None, project="p", domain="d")


def _rejected(text):
    cands = extract.extract([B.Entry(kind=B.USER, text=text, ref="L1", ts="2026-03-01T10:00:00Z")], CTX)[0]
    return [c.text for c in cands if c.type == "rejected"]


@pytest.mark.parametrize("said,want", [
    ("Can you look at `expire_sessions()`? Whatever we do, we shouldn't delete expired rows inline: the login "
     "path would wait on the delete.",
     "For `expire_sessions()`: Not delete expired rows inline: the login path would wait on the delete."),
    ("The upload retries live in `uploader/retry.py`. I don't want to just retry forever, by the way; a dead "
     "bucket would pin a worker for good.",
     "For `uploader/retry.py`: Not retry forever: a dead bucket would pin a worker for good."),
    ("Please look at `build_invoice()`. And before you suggest it: let's not cache the totals. Refunds change "
     "them after the invoice is sent.",
     "For `build_invoice()`: Not cache the totals: Refunds change them after the invoice is sent."),
    ("The nightly export in `jobs/export.py` is slow. Please don't parallelise it with threads, the database "
     "driver is not thread-safe.",
     "For `jobs/export.py`: Not parallelise it with threads: the database driver is not thread-safe."),
])
def test_an_approach_ruled_out_up_front_is_a_rejection_with_its_reason(said, want):
    assert _rejected(said) == [want]


@pytest.mark.parametrize("said", [
    "I don't want to go to the party tonight, the crowds there are just exhausting for me.",
    "Let's not talk about work today. I had a long week and need a break from it all.",
    "Please don't worry about the deadline, we will figure it out together next week.",
    # what to do instead is not a reason
    "Can you look at `reserve_stock()`? Let's not reserve at add-to-basket. Do it at checkout.",
    # a decision put off is not an approach ruled out
    "Caching in `get_shipment()`: let's not pick one yet: I want to see the load test first.",
    "For `get_shipment()` we shouldn't decide between Redis and memcached before the load test runs.",
    # a question is not a decision
    "Shouldn't we avoid caching the totals in `build_invoice()`, since refunds change them?",
])
def test_small_talk_or_a_bare_instruction_rules_nothing_out(said):
    assert _rejected(said) == []
