"""Decisions a compaction summary states: the lists it labels as decisions or rejected approaches (also in its
analysis, which is otherwise dropped), and the problem-solving items that name a choice."""
from __future__ import annotations

from cortex.ingest import extract
from cortex.ingest.adapters import base as B
from cortex.ingest.extract import Context, labeled_lists

CTX = Context(client="claude-code", session="s1", transcript=None, project="p", domain="d")

SUMMARY = """This session is being continued from a previous conversation that ran out of context.
Analysis:
Let me go through the conversation.

1. The user asked for a lock for the session cursor.

Key technical decisions:
- Use Redis `SET NX` for the cursor lock because it expires on its own
  - the TTL is 30 seconds
- Keep SQLite for everything else
- No new service, the worker already talks to Redis

Open decisions:
- whether to shard the cursor table later on

Summary:
1. Primary Request and Intent:
   Add a lock around the session cursor.

2. Problem Solving:
   - Chose a lease over a mutex so that a dead worker frees the lock by itself
   - Decided against a file lock because NFS mounts break flock semantics
   - Found that the flaky test was caused by the clock of the test container

### Rejected approaches
* A Postgres advisory lock: the worker has no Postgres connection

7. Pending Tasks:
   - Write the lock's tests
Please continue the conversation from where we left it off without asking the user any further questions.
"""


def test_labeled_lists_take_the_bullets_under_the_label_and_nothing_after():
    got = labeled_lists(SUMMARY)
    assert got == [
        ("decision", "Use Redis `SET NX` for the cursor lock because it expires on its own; the TTL is 30 seconds"),
        ("decision", "Keep SQLite for everything else"),
        ("decision", "No new service, the worker already talks to Redis"),
        ("rejected", "A Postgres advisory lock: the worker has no Postgres connection"),
    ]


def test_a_label_that_asks_or_is_followed_by_prose_gives_nothing():
    assert labeled_lists("Open decisions:\n- whether to shard\n") == []
    assert labeled_lists("Decisions needed:\n- the cache size\n") == []
    assert labeled_lists("Key decisions:\nWe did not settle anything yet.\n- a stray bullet later\n") == []


def test_a_compaction_summary_gives_its_decisions_and_rejections_as_records():
    entry = B.Entry(kind=B.COMPACT_SUMMARY, text=SUMMARY, ts="2026-03-01T10:00:00Z", ref="L7")
    cands = extract.extract([entry], CTX)[0]
    by_type = {}
    for c in cands:
        by_type.setdefault(c.type, []).append(c.text)
    assert "Keep SQLite for everything else" in by_type["decision"]
    assert any(t.startswith("Use Redis `SET NX` for the cursor lock") for t in by_type["decision"])
    assert any(t.startswith("Chose a lease over a mutex") for t in by_type["decision"])
    assert any(t.startswith("Decided against a file lock") for t in by_type["rejected"])
    assert any(t.startswith("A Postgres advisory lock") for t in by_type["rejected"])
    assert any(t.startswith("Found that the flaky test") for t in by_type["learned"])
    assert not any("shard" in t for ts in by_type.values() for t in ts)  # an open question is no decision


REPORT = """All three tasks are done and the suite passes (412 tests).

Key decisions:
- Stored the retry budget per tenant in `settings.retry_budget` instead of a global constant
- Kept the exponential backoff capped at 30 seconds so that webhooks never wait longer than a minute

Rejected approaches:
- A Celery retry queue: it would add a broker just for this
"""

PROPOSAL = """Here is what I would do before touching the code.

Key decisions:
- Store the retry budget per tenant in `settings.retry_budget`
- Cap the exponential backoff at 30 seconds

Shall I go ahead with this?"""


def _types(entries):
    cands = extract.extract(entries, CTX)[0]
    return [(c.type, c.text) for c in cands if c.type in ("decision", "rejected")]


def test_a_closing_report_s_decision_list_gives_decisions():
    got = _types([B.Entry(kind=B.USER, text="Add a per-tenant retry budget to the webhook sender", ref="L1",
                          ts="2026-03-01T10:00:00Z"),
                  B.Entry(kind=B.ASSISTANT, text=REPORT, ref="L2", ts="2026-03-01T10:05:00Z")])
    assert ("decision", "Stored the retry budget per tenant in `settings.retry_budget` instead of a global constant") in got
    assert any(t == "rejected" and x.startswith("A Celery retry queue") for t, x in got)


def test_a_decision_list_put_to_the_user_as_a_proposal_is_not_yet_decided():
    got = _types([B.Entry(kind=B.USER, text="Add a per-tenant retry budget to the webhook sender", ref="L1",
                          ts="2026-03-01T10:00:00Z"),
                  B.Entry(kind=B.ASSISTANT, text=PROPOSAL, ref="L2", ts="2026-03-01T10:05:00Z")])
    assert not any("Cap the exponential backoff" in x or "Store the retry budget" in x for _, x in got)


def test_a_decision_list_inside_a_code_block_is_not_read():
    text = "I wrote the ADR:\n\n```markdown\n## Decisions\n- Use Kafka for the event bus from now on\n```\n"
    got = _types([B.Entry(kind=B.ASSISTANT, text=text, ref="L2", ts="2026-03-01T10:05:00Z")])
    assert got == []
