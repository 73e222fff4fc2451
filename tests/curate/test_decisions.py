"""Decisions that stay right: types users know, decisions settled in conversation, supersession.

Each scenario is scripted as real Claude Code transcript lines, captured through the stop hook and
normalized; the assertions read the records, the session-start block and `cortex recall`.
"""
import os
import time

import pytest

import cortex_testkit as testkit

from cortex.brief import session_start
from cortex.store.records import canonical_type, iter_paths, read

T0 = time.time() - 40 * 86400


class Chat(testkit.Chat):
    def stop(self, home, run: bool = True):  # every scenario here normalizes after each session
        return super().stop(home, run)


@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def records(home, rtype=None):
    out = [read(p) for p in iter_paths(home.records)]
    return [r for r in out if rtype is None or r["type"] == rtype]


def one(home, rtype, *words):
    found = [r for r in records(home, rtype) if all(w.lower() in r["text"].lower() for w in words)]
    assert len(found) == 1, (words, [r["text"] for r in records(home)])
    return found[0]


# -- types users know -------------------------------------------------------------------------------

def test_type_names_of_other_memory_tools_map_onto_cortex_types():
    assert canonical_type("architecture") == canonical_type("Convention") == canonical_type("patterns") == "decision"
    assert canonical_type("constraint") == canonical_type("requirement") == "decision"
    assert canonical_type("context") == canonical_type("insight") == canonical_type("note") == "learned"
    assert canonical_type("bug") == "gotcha" and canonical_type("anti-pattern") == "rejected"
    assert canonical_type("decision") == "decision" and canonical_type("nonsense") is None


def test_memory_tags_and_remember_accept_the_known_type_names(env):
    from cortex.ops.manage import CortexError, remember
    home, project, root = env
    Chat(root, project, "t1", T0).turns(
        ("assistant", "[MEMORY: architecture] The HTTP handlers reach storage only through `RecordRepository`."),
        ("assistant", "[MEMORY: context] The nightly export runs on a box that sleeps between 01:00 and 05:00."),
        ("assistant", "[MEMORY: bug] `parse_date()` returns local time when the string has no offset."),
        ("user", "[MEMORY: convention] Test files are named after the module they cover."),
    ).stop(home)
    assert "RecordRepository" in one(home, "decision", "RecordRepository")["text"]
    one(home, "learned", "nightly export")
    one(home, "gotcha", "parse_date")
    one(home, "decision", "Test files are named")
    rec = remember(home, "Public endpoints are versioned in the path", rtype="requirement", cwd=project)
    assert rec["record"]["type"] == "decision"
    with pytest.raises(CortexError):
        remember(home, "x y z", rtype="nonsense", cwd=project)


# -- supersession on natural wording --------------------------------------------------------------

def current_decisions(home, project):
    text, details = session_start.build(home, project)
    return text, [r["text"] for r in details["kept"] if r["type"] == "decision"]


def test_reported_case_rest_then_graphql_for_the_public_api_lists_only_graphql(env):
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("user", "Which style for the public API?"),
        ("assistant", "[MEMORY: decision] Chose REST over gRPC for the public API because browsers and curl "
                      "can call it without generated stubs."),
    ).stop(home)
    Chat(root, project, "s2", T0 + 86400).turns(("user", "Let's fix the flaky test in the uploader."),
                                               ("assistant", "Fixed: the test waited on a real clock.")).stop(home)
    Chat(root, project, "s3", T0 + 9 * 86400).turns(
        ("user", "Mobile needs nested reads in one round trip."),
        ("assistant", "[MEMORY: decision] Switched the public API from REST to GraphQL because the mobile "
                      "client needs nested reads in one round trip."),
    ).stop(home)
    rest = one(home, "decision", "Chose REST")
    gql = one(home, "decision", "GraphQL because")
    assert rest["status"] == "superseded" and rest["superseded_by"] == [gql["id"]]
    assert gql["supersedes"] == [rest["id"]] and gql["status"] == "active"
    text, current = current_decisions(home, project)
    assert "GraphQL" in text and "Chose REST over gRPC" not in text
    assert current == [gql["text"]]


def test_a_switch_of_one_subject_leaves_decisions_about_another_subject_alone(env):
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("assistant", "[MEMORY: decision] Use REST for the admin console because it only lists and edits rows."),
        ("assistant", "[MEMORY: decision] Chose REST over gRPC for the public API because any client can call it."),
    ).stop(home)
    Chat(root, project, "s2", T0 + 86400).turns(
        ("assistant", "[MEMORY: decision] Switched the public API from REST to GraphQL for nested reads."),
    ).stop(home)
    assert one(home, "decision", "Chose REST")["status"] == "superseded"
    assert one(home, "decision", "admin console")["status"] == "active"


@pytest.mark.parametrize("later", [
    "[MEMORY: decision] Amendment to the `retry_upload()` rule: give up after 5 attempts, and 429 is retried too.",
    "[MEMORY: decision] From now on `retry_upload()` gives up after 5 attempts instead of the earlier 3.",
    "[MEMORY: decision] `retry_upload()` retries 5 times with exponential backoff and never retries 4xx responses.",
    "[MEMORY: decision] This replaces the earlier rule: `retry_upload()` retries forever with a capped backoff.",
])
def test_a_later_rule_on_the_same_function_supersedes_the_earlier_one(env, later):
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("assistant", "[MEMORY: decision] `retry_upload()` retries 3 times with exponential backoff and never "
                      "retries 4xx responses."),
        ("assistant", "[MEMORY: decision] `retry_upload()` writes each failed attempt to the audit log table."),
        ("assistant", "[MEMORY: decision] `fetch_manifest()` retries 3 times with exponential backoff."),
    ).stop(home)
    Chat(root, project, "s2", T0 + 20 * 86400).turns(("assistant", later)).stop(home)
    old = one(home, "decision", "retries 3 times", "retry_upload")
    new = [r for r in records(home, "decision") if r["provenance"][0]["session"] == "s2"]
    assert len(new) == 1
    assert old["status"] == "superseded" and old["superseded_by"] == [new[0]["id"]]
    assert new[0]["supersedes"] == [old["id"]]
    assert one(home, "decision", "audit log")["status"] == "active"  # another rule on the same function
    assert one(home, "decision", "fetch_manifest")["status"] == "active"  # the same rule on another function


def test_worded_alike_but_other_numbers_are_not_merged(env):
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("assistant", "[MEMORY: learned] The export job batches 500 rows per request to the warehouse API."),
        ("assistant", "[MEMORY: learned] The export job batches 200 rows per request to the warehouse API."),
    ).stop(home)
    assert len(records(home, "learned")) == 2


# -- decisions from conversation ------------------------------------------------------------------

def decisions_of(home, rtype="decision"):
    return [r for r in records(home, rtype) if r["provenance"][0]["layer"] == "conversation"]


def test_accepted_proposal_keeps_the_users_condition_and_names_its_subject(env):
    home, project, root = env
    c = Chat(root, project, "a1", T0)
    c.user("Uploads to the archive bucket keep failing on flaky networks. What should `retry_upload()` do?")
    c.tool("Read", file_path=os.path.join(project, "sync", "upload.py"))
    c.say("Right now it gives up on the first error. I'd make `retry_upload()` retry 3 times with exponential "
          "backoff starting at 2 seconds. Sound good?")
    c.user("ok but only for 5xx responses, a 4xx should fail immediately")
    c.say("Done: the backoff loop is in place and 4xx responses raise right away.")
    c.stop(home)
    [d] = decisions_of(home)
    assert "retry_upload()" in d["text"] and "3 times with exponential backoff" in d["text"]
    assert "only for 5xx responses" in d["text"]
    assert d["confidence"] == 0.9
    from cortex.ops.recall import recall
    hits = recall(home, "retry_upload", cwd=project, record_use=False)["hits"]
    assert hits and hits[0]["id"] == d["id"]


def test_terse_agreement_takes_the_subject_from_the_recent_turns_and_the_exception(env):
    home, project, root = env
    c = Chat(root, project, "a2", T0)
    c.user("The merge of `package-lock.json` is a mess every time we rebase.")
    c.say("Two ways to settle it:\n\nOption A: regenerate the lockfile after every rebase.\n"
          "Option B: always take the main branch's version and run npm install.\n\nI'd go with option B.")
    c.user("go with option B, except on release branches")
    c.say("OK.")
    c.stop(home)
    [d] = decisions_of(home)
    assert "package-lock.json" in d["text"] and "main branch's version" in d["text"]
    assert "except on release branches" in d["text"]


def test_the_assistants_summing_up_replaces_the_accepted_text_in_one_record(env):
    home, project, root = env
    c = Chat(root, project, "a3", T0)
    c.say("For `parse_date()`, should we reject strings without a UTC offset instead of guessing local time?")
    c.user("yes, agreed, except for the legacy CSV import which has no offsets at all")
    c.say("So we agreed: `parse_date()` rejects strings without a UTC offset, except in the legacy CSV import, "
          "which assumes UTC.")
    c.stop(home)
    [d] = decisions_of(home)
    assert d["text"].startswith("`parse_date()` rejects strings without a UTC offset, except in the legacy CSV")
    assert d["confidence"] == 0.95
    assert not [r for r in records(home, "decision") if r["id"] != d["id"]]  # said once, not three times


def test_summing_up_alone_is_a_decision_with_less_confidence(env):
    home, project, root = env
    c = Chat(root, project, "a4", T0)
    c.user("We went back and forth on the cache key yesterday, write down where we landed.")
    c.say("To summarize the decision: `CacheKey` includes the tenant id and the schema version, never the user id.")
    c.stop(home)
    [d] = decisions_of(home)
    assert d["text"].startswith("`CacheKey` includes the tenant id") and d["confidence"] == 0.8


@pytest.mark.parametrize("rule, expect", [
    ("Never call `flush()` from the request thread, it blocks the event loop.", "Never call `flush()`"),
    ("From now on `export_csv()` writes UTF-8 with a BOM so Excel opens it.", "From now on `export_csv()`"),
    ("For conflicts in `schema.sql` keep ours, the migration tool regenerates theirs.", "keep ours"),
    ("Always run `make lint` before pushing to the shared branch.", "Always run `make lint`"),
    ("Don't ever bump the major version of `cortex-client` without a changelog entry.", "Don't ever bump"),
])
def test_rules_the_user_states(env, rule, expect):
    home, project, root = env
    Chat(root, project, "a5", T0).turns(("user", rule), ("assistant", "Understood.")).stop(home)
    [d] = decisions_of(home)
    assert expect in d["text"] and d["confidence"] == 0.9


def test_keep_ours_after_context_names_the_file(env):
    home, project, root = env
    Chat(root, project, "a6", T0).turns(
        ("assistant", "The rebase stopped on a conflict in `config/routes.rb`: both sides added a route."),
        ("user", "keep ours there, their route is dead code"),
        ("assistant", "Resolved with our version."),
    ).stop(home)
    [d] = decisions_of(home)
    assert "config/routes.rb" in d["text"] and "keep ours" in d["text"].lower()


def test_rejection_of_the_obvious_alternative_with_the_reason(env):
    home, project, root = env
    c = Chat(root, project, "a7", T0)
    c.user("The nightly `export_orders` job needs to run somewhere.")
    c.say("I'd schedule `export_orders` as a cron job on the app box at 02:00. Does that work?")
    c.user("no, not a cron job — it drifts when the box sleeps. Use a systemd timer with Persistent=true.")
    c.say("Switched to a systemd timer.")
    c.stop(home)
    [r] = decisions_of(home, "rejected")
    assert "cron job" in r["text"] and "drifts when the box sleeps" in r["text"]
    assert "export_orders" in r["text"]
    [d] = decisions_of(home)
    assert "systemd timer" in d["text"] and "export_orders" in d["text"]


DECOYS = [
    # brainstorming, no agreement
    [("user", "How could we speed up `build_index()`?"),
     ("assistant", "We could batch the inserts, or use a WAL, or maybe parallelise the tokenizer. What do you think?"),
     ("user", "hmm, let me think about it over the weekend")],
    # hypothetical
    [("user", "If we moved `SessionStore` to Redis, what would break?"),
     ("assistant", "If we moved it, the tests that use the in-memory fake would need a Redis fixture.")],
    # a question answered yes is not a proposal
    [("assistant", "Is `worker.py` started by systemd on the staging box?"), ("user", "yes")],
    # maybe later
    [("assistant", "I'd also add caching to `load_manifest()`. Should we do that?"), ("user", "maybe later")],
    [("assistant", "I'd also add caching to `load_manifest()`. Sound good?"), ("user", "yes, but not now, park it")],
    # the user declines
    [("assistant", "I propose we drop Python 3.8 support in `setup.cfg`. OK?"), ("user", "no, let's not")],
    # routine narration acknowledged
    [("assistant", "I'll read the file first and then run the tests."), ("user", "ok")],
    [("assistant", "Let me run the test suite to see what fails. Want me to run it with -x?"), ("user", "sure")],
    [("assistant", "Want me to commit this?"), ("user", "yes please")],
    # user habits and observations are not rules
    [("user", "It always fails on CI but never locally, weird."), ("assistant", "Let me check the CI logs.")],
    [("user", "I never remember the flags of `tar`."), ("assistant", "It's tar -xzf for a gzipped archive.")],
    [("user", "never mind, it was a typo"), ("assistant", "No problem.")],
    # a question back instead of agreement
    [("assistant", "I'd make `retry_upload()` retry 3 times. Sound good?"), ("user", "ok but what about 429s?")],
    # the user says it is not settled
    [("assistant", "I'd move the rate limiter into `gateway/limits.py`. Does that work?"),
     ("user", "No, not a rule yet — I'm only wondering aloud about where it could live.")],
    # declining a proposal without an alternative or a reason
    [("assistant", "I'd switch the queue to SQS. Sound good?"), ("user", "no, not yet")],
    # small talk that reads like a rule or a rejection (LoCoMo's chats gave 29 such records)
    [("user", "Thanks a lot for the review!"), ("assistant", "No worries, I'm here to help whenever you need it.")],
    [("assistant", "The migration finally went through."), ("user", "No doubt: you've got this, keep pushing.")],
    [("user", "The release went out on time."), ("assistant", "Not surprised at all: your hard work paid off.")],
    [("user", "Always happy to pair on this with you."), ("assistant", "Same here, it was fun.")],
    [("user", "Always here to help you with anything."), ("assistant", "Thanks, likewise.")],
    [("user", "Never tried that editor, but it's supposed to be awesome."), ("assistant", "It is quite nice.")],
    # proposals accepted in talk before any work was done (LoCoMo's chats between friends gave 7 such records)
    [("user", "Hey, been a while! How have you been?"), ("assistant", "Been busy with things, how about you?"),
     ("user", "Yeah, something cool happened at the weekend.")],
    [("assistant", "Well, how about we grab lunch at the new noodle place then?"), ("user", "Great idea, let's do it.")],
]


@pytest.mark.parametrize("turns", DECOYS, ids=[str(i) for i in range(len(DECOYS))])
def test_decoys_make_no_decision(env, turns):
    home, project, root = env
    Chat(root, project, "d", T0).turns(*turns).stop(home)
    assert [r["text"] for r in records(home) if r["type"] in ("decision", "rejected")] == []


def test_a_no_that_assents_turns_nothing_down(env):
    """"no that's fine, ..." answers a check with yes: it is not "not <that's fine>" with a reason."""
    home, project, root = env
    c = Chat(root, project, "n", T0)
    c.user("hm it promoted a model with lower auc than the old champion in `promote.py`. is that what we want")
    c.tool("Read", file_path=os.path.join(project, "src", "promote.py"))
    c.say("It's what the gate does: 0.8131 vs 0.8143 is a 0.15% drop, well inside the seed noise of `eval_auc`.")
    c.user("no that's fine, just wanted to be sure it's intentional. ship")
    c.stop(home)
    assert [r["text"] for r in records(home) if r["type"] == "rejected"] == []


def test_a_business_rule_agreed_after_reading_the_code_is_kept_though_it_names_no_code(env):
    """Before any tool was used, an accepted proposal must be about software work (the decoys above); once the
    session has read a file, a rule worded as the business says it is kept."""
    home, project, root = env
    c = Chat(root, project, "b", T0)
    c.user("Big merchants are gaming the volume tiers by splitting shipments across sub-accounts.")
    c.tool("Read", file_path=os.path.join(project, "pricing", "discounts.py"))
    c.say("I'd compute the tier from the parent account's rolling 30-day parcel count, summed over all its "
          "sub-accounts. Sound good?")
    c.user("yes, do that")
    c.stop(home)
    [d] = decisions_of(home)
    assert "rolling 30-day parcel count" in d["text"]


def test_the_agreement_in_a_later_window_finds_the_proposal_and_reruns_give_the_same_record(env):
    home, project, root = env
    c = Chat(root, project, "w1", T0)
    c.say("I'd cap `BulkWriter` batches at 500 rows so a failed batch is cheap to retry. Sound good?")
    c.stop(home)  # the proposal is read in one run ...
    assert decisions_of(home) == []
    c.user("yes, and only for the Postgres backend")
    c.stop(home)  # ... the agreement in the next
    [d] = decisions_of(home)
    assert "500 rows" in d["text"] and "only for the Postgres backend" in d["text"] and "BulkWriter" in d["text"]
    before = {os.path.basename(p): open(p).read() for p in iter_paths(home.records)}
    os.unlink(home.cursors)
    c.stop(home)
    after = {os.path.basename(p): open(p).read() for p in iter_paths(home.records)}
    assert after == before


def test_an_amendment_weeks_later_supersedes_the_agreed_rule(env):
    home, project, root = env
    c = Chat(root, project, "m1", T0)
    c.say("For `retry_upload()` I'd retry 3 times with exponential backoff and fail fast on 4xx. Sound good?")
    c.user("yes")
    c.say("Got it — rule: `retry_upload()` retries 3 times with exponential backoff and fails fast on 4xx.")
    c.stop(home)
    c2 = Chat(root, project, "m2", T0 + 21 * 86400)
    c2.user("429s from the archive API are rate limits, not client errors. `retry_upload()` should retry those too, "
            "and 5 attempts.")
    c2.say("Got it — amended rule: `retry_upload()` retries 5 times with exponential backoff, retries 429 as well, "
           "and fails fast on other 4xx. This replaces the earlier rule of 3 attempts.")
    c2.stop(home)
    old = one(home, "decision", "retries 3 times")
    new = one(home, "decision", "retries 5 times")
    assert old["status"] == "superseded" and old["superseded_by"] == [new["id"]]
    assert new["supersedes"] == [old["id"]]
    text, current = current_decisions(home, project)
    assert "retries 5 times" in text and "retries 3 times" not in text


def test_recall_ranks_the_current_rule_first_and_labels_the_superseded_one(env, capsys):
    from cortex.ops.recall import recall
    from cortex.cli import main as cli_main
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("assistant", "[MEMORY: decision] Chose REST over gRPC for the public API because any client can call it; "
                      "REST for the public API keeps caching simple for the public API."),
    ).stop(home)
    Chat(root, project, "s2", T0 + 86400).turns(
        ("assistant", "[MEMORY: decision] Switched the public API from REST to GraphQL for nested reads."),
    ).stop(home)
    hits = recall(home, "public API REST", cwd=project, include_archived=True, record_use=False, kind="record")["hits"]
    assert [h["status"] for h in hits] == ["active", "superseded"]
    # with the episode passages: each passage right after the record that says what it says
    both = recall(home, "public API REST", cwd=project, include_archived=True, record_use=False)["hits"]
    assert [h["id"] for h in both if h["kind"] == "record"] == [h["id"] for h in hits]
    assert both[0]["id"] == hits[0]["id"]
    assert "GraphQL" in hits[0]["text"] and hits[1]["superseded_by"] == [hits[0]["id"]]
    assert [h["status"] for h in recall(home, "public API REST", cwd=project, record_use=False,
                                        kind="record")["hits"]] == ["active"]
    capsys.readouterr()
    rc = cli_main.main(["recall", "--all", "--no-use", "--cwd", project, "public", "API", "REST"])
    out = capsys.readouterr().out
    assert rc == 0 and "(superseded by %s)" % hits[0]["id"] in out


# -- generalised classes (own wording) ---------------------------------------------------------------

from cortex.ingest import decisions as D  # noqa: E402


def _run(turns):
    st = D.initial_state()
    out = []
    for i, (kind, text) in enumerate(turns):
        found, st = D.step(kind, text, st, "s:%d" % i)
        out.extend(found)
    return out


def test_named_fix_without_closing_ask_is_accepted():
    out = _run([("user", "The `sync_inventory()` job double-counts returns."),
                ("assistant", "The simplest fix I can see is to dedupe returns by RMA number before summing."),
                ("user", "yep, do that")])
    assert any(r[0] == "decision" and "dedupe returns by rma" in r[1].lower() for r in out)


def test_proposal_survives_side_remark_and_challenge_then_concession():
    out = _run([("assistant", "My recommendation would be to batch `send_digest()` mails hourly per tenant."),
                ("assistant", "Let me look at the scheduler."),
                ("user", "Couldn't we simply send each mail right away?"),
                ("assistant", "I thought about it, but the provider throttles us above 50 mails a minute."),
                ("user", "Fair enough. Go ahead.")])
    assert any(r[0] == "decision" and "batch" in r[1].lower() for r in out)
    assert any(r[0] == "rejected" and "send each mail right away" in r[1] and "throttles" in r[1] for r in out)


def test_refusing_the_offered_alternative_then_taking_the_first():
    out = _run([("assistant", "Cleanest option: store prices as integer pence in `Invoice`."),
                ("assistant", "The cheaper alternative would be to keep floats and round on display. Prefer that?"),
                ("user", "Nope, the ledger never balances that way. Your first idea is better, go with that.")])
    assert any(r[0] == "rejected" and "keep floats" in r[1] and "ledger" in r[1] for r in out)
    assert any(r[0] == "decision" and "integer pence" in r[1] for r in out)


def test_named_condition_belongs_to_the_decision():
    out = _run([("assistant", "Proposal: cap `export_report()` at 10k rows per request."),
                ("user", "Works for me. One caveat: admins can export everything.")])
    assert any(r[0] == "decision" and "10k rows" in r[1] and "admins can export everything" in r[1] for r in out)


def test_afterthought_amends_the_same_record():
    out = _run([("assistant", "I'd suggest we expire `ShareLink` tokens after 7 days."),
                ("user", "sure"),
                ("assistant", "Done, tests pass."),
                ("user", "Forgot to mention: links for paying customers last 30 days.")])
    dec = [r for r in out if r[0] == "decision"]
    assert len({r[4] for r in dec}) == 1 and "30 days" in dec[-1][1] and "7 days" in dec[-1][1]


def test_recap_after_agreement_replaces_the_record():
    out = _run([("assistant", "How about we lock `Wallet` rows with SELECT FOR UPDATE during transfers?"),
                ("user", "ok"),
                ("assistant", "Implementing."),
                ("assistant", "For the record, the behaviour is now: transfers lock both wallet rows in id order.")])
    assert out[-1][0] == "decision" and "id order" in out[-1][1] and out[-1][4] == out[0][4]


def test_recap_without_agreement_is_a_changelog_not_a_decision():
    assert not _run([("user", "rename tmp in `utils.py`"),
                     ("assistant", "Summary of the change: renamed `tmp` to `buffer` in `utils.py`.")])


def test_open_answers_settle_nothing():
    for reply in ("OK, open question then, I'll ask the team.", "Right, let me think about it.",
                  "Sure, but let's park it until after the release.", "Hmm, not sure yet."):
        out = _run([("assistant", "One clean option: shard `EventLog` by month."), ("user", reply)])
        assert not [r for r in out if r[0] in ("decision", "rejected")], reply


def test_afterthought_without_agreement_is_not_a_decision():
    out = _run([("assistant", "We could shard by month, or by tenant; both have costs."),
                ("user", "One more thing: the table is already 2 TB.")])
    assert not [r for r in out if r[0] == "decision"]


def test_a_conclusion_the_user_turns_down_at_once_is_not_a_decision(env):
    """The assistant ends a long analysis with its recommendation; the user answers "it's a bad idea, since
    ...". Nothing was settled: the block must not show the recommendation as a current decision (seen on a
    real session, cc-2.0.76, where the keyword layer kept it)."""
    home, project, root = env
    chat = Chat(root, project, "s-turned-down", T0)
    chat.user("why do conversations stop syncing after the first run?")
    chat.say("I traced it through `sync_conversations()`. The solution is straightforward: we decided to "
             "rely on the server's duplicate detection instead of tracking processed sessions locally, since "
             "the endpoint already returns a new_messages count.")
    chat.user("it's a bad idea, since the whole conversation would be sent every time. performance matters. "
              "we need to track the last synced message id instead.")
    chat.say("You're right, re-sending whole conversations is too slow. I'll track the last synced message id.")
    chat.stop(home)
    current = [r["text"] for r in records(home, "decision") if r["status"] == "active"]
    assert not [t for t in current if "duplicate detection" in t and "instead of tracking" in t], current


def test_an_amendment_restated_as_replacing_the_earlier_rule_retires_it(env):
    """The user changes a rule weeks later; the assistant restates the change as replacing the old rule
    ("Replacing the old rule with the new one: ...", or the new rule followed by "That supersedes what we
    settled on before"), and the user confirms. The new rule is a decision and the earlier one is retired."""
    home, project, root = env
    first = Chat(root, project, "s-rule", T0)
    first.turns(("user", "how long should `purge_stale_uploads()` keep files?"),
                ("assistant", "I'd suggest `purge_stale_uploads()` deletes uploads older than 30 days. Sound good?"),
                ("user", "yes, go with that"))
    first.stop(home)
    for sid, restated in (("s-amend-1", "Noted. `purge_stale_uploads()` now deletes uploads older than 14 days, "
                                        "except those attached to an open ticket. That supersedes what we settled "
                                        "on before, where it kept them for 30 days."),):
        later = Chat(root, project, sid, T0 + 20 * 86400)
        later.turns(("user", "legal asked us to shorten retention for uploads, two weeks, but keep ones on open "
                             "tickets"),
                    ("assistant", restated), ("user", "yes exactly"))
        later.stop(home)
    current = [r for r in records(home, "decision") if r["status"] == "active"]
    assert any("14 days" in r["text"] for r in current), [r["text"] for r in records(home)]
    assert not any("30 days" in r["text"] and "14 days" not in r["text"] for r in current), [r["text"] for r in current]


# -- the user's own rule beside an agreement, conventions, lower-case sentences (stop 31) ---------------

def test_a_rule_the_user_states_while_agreeing_is_kept_in_their_words():
    out = _run([("user", "the importer keeps dropping rows when the worker restarts"),
                ("assistant", "Proposal: write each batch to `import_rows` inside one transaction and mark the "
                              "file done only after it commits. Sound good?"),
                ("user", "yes. mark done only after the commit, that's the rule from now on")])
    texts = [r[1] for r in out if r[0] == "decision"]
    assert any("one transaction" in t for t in texts)  # the proposal agreed to
    assert any("Mark done only after the commit, that's the rule from now on" in t for t in texts)


def test_a_convention_stated_as_what_we_always_do_is_a_rule():
    out = _run([("assistant", "The `report_sync` job stamps `finished_at` with the server's local time."),
                ("user", "no no. btw we always store timestamps in UTC. local time is for display only")])
    assert [r[1] for r in out if r[0] == "decision"] == [
        "We always store timestamps in UTC. local time is for display only."]
    assert not [r for r in out if r[0] == "rejected"]  # "no no." turns nothing down


@pytest.mark.parametrize("said", ["we always had flaky tests on this box", "we never tested the retry path",
                                  "we always forget to bump the changelog"])
def test_what_we_always_did_or_never_did_is_no_rule(said):
    assert not [r for r in _run([("user", said)]) if r[0] == "decision"]


def test_an_argument_against_the_alternative_is_not_the_proposal():
    out = _run([("assistant", "We could retry the upload inside the worker instead. I'd reject that: a retry "
                              "loop only hides the crash, and the file is still half written."),
                ("user", "ok")])
    assert not [r for r in out if r[0] == "decision" and r[1].lower().startswith("reject")]


def test_asking_about_an_option_by_name_is_no_pick_and_the_later_yes_takes_the_recommendation():
    out = _run([("user", "the worker's retry logic is a mess. which queue library should we use"),
                ("assistant", "Three realistic options:\n\n"
                              "- **Dramatiq**: retries with backoff built in, middleware for rate limits, small API.\n"
                              "- **RQ**: very simple, but retries are manual and there is no rate limiting, so "
                              "we would write both ourselves.\n"
                              "- **Celery**: everything, but heavy to run and configure for a team of two.\n\n"
                              "I'd go with Dramatiq."),
                ("user", "i've used rq before and liked it tbh. whats the actual downside for us"),
                ("assistant", "For us: the retry and rate-limit code is exactly what we'd have to write by hand "
                              "with RQ, and that is the code that is a mess today."),
                ("user", "ok fair, dramatiq it is")])
    decisions = [r[1] for r in out if r[0] == "decision"]
    assert decisions and all("dramatiq" in d.lower() for d in decisions), decisions
    assert not any(d.lower().startswith("rq") for d in decisions)


def test_a_recommendation_by_place_agreed_after_a_side_question_is_the_option_it_names():
    out = _run([("user", "the export job runs out of memory on the big tenants"),
                ("assistant", "Options:\n\n"
                              "- **Stream rows with a server-side cursor.** Memory stays flat whatever the size.\n"
                              "- **Raise the worker to 8 GB.** Quick, but the biggest tenant doubles every year, "
                              "so we would be back here next spring.\n\n"
                              "I'd do the first."),
                ("user", "does the csv writer even support streaming?"),
                ("assistant", "Yes, `csv.writer` writes row by row; only our `build_rows()` collects a list."),
                ("user", "ok. lets do that")])
    [decision] = [r[1] for r in out if r[0] == "decision"]
    assert "Stream rows with a server-side cursor. Memory stays flat whatever the size." in decision
    assert any(r[0] == "rejected" and "raise the worker to 8 GB" in r[1] and "doubles every year" in r[1]
               for r in out)


def test_the_second_one_picks_the_second_option_whatever_else_the_reply_names():
    # the options are called "candidates" (no "options" word): the reply picks by place and names another
    # option only to turn it down, which must not make that one the choice
    out = _run([("user", "kiosk retried POST /orders and we created two. we need an idempotency key"),
                ("assistant", "For the key's format, three candidates:\n"
                              "- **UUIDv4**: random; downside: inserts scatter across the unique index.\n"
                              "- **UUIDv7**: time-ordered, still a plain `uuid` column.\n"
                              "- **ULID**: also time-ordered, but it's a `text` column and a library on each side.\n\n"
                              "I lean to UUIDv7."),
                ("user", "the second one. ulid is cute but i don't want text ids next to uuid everywhere")])
    decisions = [r[1] for r in out if r[0] == "decision"]
    assert decisions and decisions[-1].startswith("UUIDv7: time-ordered"), decisions
    rejected = [r[1] for r in out if r[0] == "rejected"]
    assert any(r.startswith("Not ULID") for r in rejected), rejected
    assert not any("UUIDv7" in r for r in rejected), rejected


def test_the_first_one_that_reports_something_is_no_pick():
    out = _run([("user", "two ways to fix the flaky import?"),
                ("assistant", "Options:\n\n- **Retry the batch.** Cheap, but hides the cause.\n"
                              "- **Lock the table.** Slower, but no race.\n\nWhich one?"),
                ("user", "the first one failed in staging already, what else is there")])
    assert not [r for r in out if r[0] == "decision"], out


def test_an_option_named_by_one_word_alone_is_picked_though_a_question_follows():
    out = _run([("user", "the 'ends soon' reminder arrives late on android"),
                ("assistant", "Options:\n"
                              "- **Send with high priority**: wakes the phone out of Doze. Still needs network at "
                              "that moment.\n"
                              "- **Local notification on the device**: the app schedules it with "
                              "`scheduleNotificationAsync` when the session starts; no network needed.\n"
                              "- **Both**: local first, the push as a backup, so duplicates unless we dedupe."),
                ("user", "local. the no-network thing is real, half the complaints are from the basement garage. "
                         "but what about extending from another device?")])
    decisions = [r[1] for r in out if r[0] == "decision"]
    assert decisions and decisions[-1].startswith("Local notification on the device"), decisions
    # one word shared by two options' leads names neither
    out = _run([("user", "which cache?"),
                ("assistant", "Options:\n- **Redis cache**: shared between pods.\n"
                              "- **In-process cache**: no network hop, but per pod.\n\nWhich one?"),
                ("user", "cache. what's the memory cost?")])
    assert not [r for r in out if r[0] == "decision"], out


def test_a_reply_that_names_an_option_alone_and_asks_more_than_that_is_still_no_pick():
    out = _run([("user", "how do we store tooth numbers"),
                ("assistant", "Options:\n- **Universal**: 1-32, what US dentists use.\n"
                              "- **FDI**: two digits, quadrant first, what the rest of the world uses.\n\n"
                              "Which one?"),
                ("user", "fdi maybe later, what does the clearinghouse want?")])
    assert not [r for r in out if r[0] == "decision"], out



# the work between a pick and its report: past the turns in which the assistant's plain restatement of an
# agreement counts (decisions.AFTER_TURNS), so only the user's approval can tie the report to the pick
_WORK = [t for i in range(8) for t in (("user", "next file, %d" % i), ("assistant", "Migrated file %d." % i))]


def test_a_report_of_the_work_the_user_approves_restates_the_decision_it_holds():
    # the pick holds the library; the rule as a whole (instants in UTC, the library) meets only in the report
    turns = [("user", "reminders went out an hour early after the DST change. how do we store times"),
             ("assistant", "Three candidates for the time zone database:\n"
                           "- **tzdata**: downloads IANA releases at runtime, an outbound call from every machine.\n"
                           "- **tz** (`Tz.TimeZoneDatabase`): compiles the IANA data in at build time, no network.\n"
                           "- **time_zone_info**: similar to tz, less used.\n\nI'd take `tz`."),
             ("user", "tz. go")] + _WORK + [
             ("assistant", "Prod is migrated.\n\nWhere we are now:\n"
                           "- appointment `starts_at`/`ends_at` are `utc_datetime`, converted to local only for "
                           "display;\n- each clinic has an IANA `time_zone`;\n- Elixir uses `Tz.TimeZoneDatabase` "
                           "compiled in at build time, no network.")]
    out = _run(turns + [("user", "👍 thanks")])
    picked = [r for r in out if r[0] == "decision" and r[1].startswith("Tz (`Tz.TimeZoneDatabase`)")]
    assert picked, out
    restated = [r for r in out if r[0] == "decision" and "utc_datetime" in r[1]]
    assert restated and restated[-1][1].startswith("Appointment `starts_at`"), out
    assert restated[-1][4] == picked[0][4]  # the same record: its text replaced, no second decision
    # no approval, or a question back: the report restates nothing
    for reply in ("hmm why is the old column still there?", "wait, revert that"):
        out = _run(turns + [("user", reply)])
        assert not [r for r in out if r[0] == "decision" and "utc_datetime" in r[1]], (reply, out)


def test_an_approved_report_that_holds_little_of_the_sessions_decision_restates_nothing():
    out = _run([("user", "which queue for the thumbnails"),
                ("assistant", "I'd put thumbnails on the `default` queue, they take under a second."),
                ("user", "ok do it")] + _WORK + [
                ("assistant", "Done:\n- bumped `ffmpeg` to 6.1 in the Dockerfile\n- fixed the flaky upload test"),
                ("user", "great work")])
    decisions = [r[1] for r in out if r[0] == "decision"]
    assert decisions and not any("ffmpeg" in d for d in decisions), decisions


def test_a_numbered_list_the_turn_recommends_from_is_a_choice_its_leads_can_be_named_by():
    # no word says "options" and one lead is too long for a name: the recommendation makes it a choice
    out = _run([("user", "ok what are the ways to fix the double booking for real"),
                ("assistant", "Ways to make it atomic:\n\n"
                              "1. **Advisory lock per operatory**: works, but every write path has to remember "
                              "to take the lock.\n"
                              "2. **SELECT ... FOR UPDATE on the operatory row**: same weakness, it only protects "
                              "code that remembers it.\n"
                              "3. **An exclusion constraint** on appointments: the database refuses two "
                              "overlapping rows for one operatory, whatever code path writes them.\n\n"
                              "I'd go with 3."),
                ("user", "the constraint. is btree_gist even available on our postgres?")])
    decisions = [r[1] for r in out if r[0] == "decision"]
    assert decisions and "An exclusion constraint on appointments" in decisions[-1], decisions
    rejected = [r[1] for r in out if r[0] == "rejected"]
    assert any(r.startswith("Not advisory lock per operatory") for r in rejected), rejected
