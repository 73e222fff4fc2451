"""Memory that stays right: supersession, conflicts, near-duplicates, reality checks, lifecycle.

Each test scripts sessions as real Claude Code transcript lines, drops stop events through the
capture code, runs the normalizer and reads the block the next session would get.
"""
import json
import os
import subprocess
import time

import pytest

import cortex_testkit as testkit
from cortex_testkit import iso


from cortex.ingest import run as normalize

from cortex.brief import session_start
from cortex.curate.consolidate import effective_confidence, lifecycle, rejected_subject, settings, switch_subject
from cortex.store.records import RecordStore, iter_paths, read

T0 = time.time() - 3 * 86400


Session = testkit.Chat


@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def records(home):
    return [read(p) for p in iter_paths(home.records)]


def block(home, project, now=None):
    return session_start.build(home, project, now=now)


def test_switch_from_a_to_b_supersedes_a_and_the_block_shows_b(env):
    home, project, root = env
    s1 = Session(root, project, "s1", T0)
    s1.user("Which API style should the public endpoints use?")
    s1.say("[MEMORY: decision] Use REST for the public API because every client already speaks it.")
    s1.stop(home)
    normalize.run(home)
    s2 = Session(root, project, "s2", T0 + 86400)
    s2.user("Clients need nested queries now.")
    s2.say("[MEMORY: decision] Switched from REST to GraphQL for the public API because clients need nested queries.")
    s2.stop(home)
    normalize.run(home)
    recs = {r["text"]: r for r in records(home) if r["type"] == "decision"}
    rest = next(r for t, r in recs.items() if t.startswith("Use REST"))
    gql = next(r for t, r in recs.items() if t.startswith("Switched from REST"))
    assert rest["status"] == "superseded" and rest["superseded_by"] == [gql["id"]]
    assert gql["status"] == "active" and gql["supersedes"] == [rest["id"]]
    text, details = block(home, project)
    assert "GraphQL" in text and "Use REST for the public API" not in text
    assert rest["id"] not in [r["id"] for r in details["kept"]]


def test_rejection_of_a_recommended_approach_is_flagged_as_conflict_not_deleted(env):
    home, project, root = env
    s1 = Session(root, project, "s1", T0)
    s1.say("[MEMORY: decision] Use Redis for the session cache because it is already deployed.")
    s1.say("[MEMORY: rejected] Redis for the session cache: it loses entries on failover.")
    s1.stop(home)
    normalize.run(home)
    recs = {r["type"]: r for r in records(home)}
    assert recs["decision"]["conflicts_with"] == [recs["rejected"]["id"]]
    assert recs["rejected"]["conflicts_with"] == [recs["decision"]["id"]]
    assert recs["decision"]["status"] == "active"  # never delete; explain


def test_near_duplicate_in_a_later_session_reinforces_instead_of_adding(env):
    home, project, root = env
    Session(root, project, "s1", T0).say("[MEMORY: gotcha] The fixtures directory must be writable before pytest starts.")
    s1 = Session(root, project, "s1", T0)
    s1.stop(home)
    normalize.run(home)
    s2 = Session(root, project, "s2", T0 + 3600)
    s2.say("[MEMORY: gotcha] The fixtures directory must be writable before pytest starts!")
    s2.say("[MEMORY: gotcha] the fixtures directory MUST be writable before `pytest` starts")
    s2.stop(home)
    normalize.run(home)
    gotchas = [r for r in records(home) if r["type"] == "gotcha"]
    assert len(gotchas) == 1
    assert sorted(p["session"] for p in gotchas[0]["provenance"]) == ["s1", "s2"]
    assert len(gotchas[0]["seen"]) == 2


def test_different_facts_with_similar_wording_stay_apart_but_linked(env):
    home, project, root = env
    s1 = Session(root, project, "s1", T0)
    s1.say("[MEMORY: gotcha] The search index must be rebuilt after a schema migration of the records table.")
    s1.say("[MEMORY: gotcha] The search index must be rebuilt after a restore of the records table from backup.")
    s1.stop(home)
    normalize.run(home)
    gotchas = sorted((r for r in records(home) if r["type"] == "gotcha"), key=lambda r: r["text"])
    assert len(gotchas) == 2
    assert gotchas[0]["related"] == [gotchas[1]["id"]] and gotchas[1]["related"] == [gotchas[0]["id"]]


def test_a_record_whose_file_was_deleted_is_dropped_and_a_changed_file_is_noted(env):
    home, project, root = env
    for name in ("gone.py", "kept.py"):
        with open(os.path.join(project, name), "w") as f:
            f.write("x = 1\n")
    s1 = Session(root, project, "s1", T0)
    s1.tool("Edit", file_path=os.path.join(project, "gone.py"), old_string="x", new_string="y")
    s1.tool("Bash", command="pytest tests/test_gone.py")
    s1.say("[MEMORY: gotcha] gone.py must import the settings module lazily.")
    s1.stop(home)
    normalize.run(home)
    # a fix-like record naming a file: build one directly through the normalizer's rules
    store = RecordStore(home.records)
    from cortex.model.freshness import file_state
    prov = {"client": "test", "session": "s1", "transcript": None, "ref": "L1", "layer": "manual", "at": iso(T0)}
    for name, text in (("gone.py", "gone.py needs the lazy import to start fast"),
                       ("kept.py", "kept.py holds the retry limits for the uploader")):
        store.upsert({"scope": "L0", "scope_id": _project_id(project), "project": None, "type": "learned",
                      "text": text, "confidence": 0.9, "salience": 0.5, "files": [name],
                      "file_state": file_state([name], project), "provenance": prov})
    from cortex.core import config
    from cortex.store import indexer
    indexer.reindex(home, config.load(home, fast=False))
    os.unlink(os.path.join(project, "gone.py"))
    with open(os.path.join(project, "kept.py"), "w") as f:
        f.write("x = 2  # changed\n")
    text, details = block(home, project)
    assert "kept.py holds the retry limits" in text and "changed since: kept.py" in text
    assert "gone.py needs the lazy import" not in text
    assert any(why.startswith("files gone") for _, why in details["left"])


def _project_id(path):
    from cortex.model.scope import project_for
    return project_for(path)["id"]


def test_finished_plan_is_not_shown_as_the_active_plan(env):
    home, project, root = env
    s1 = Session(root, project, "s1", T0)
    s1.tool("TodoWrite", todos=[{"content": "Write the parser", "status": "completed", "activeForm": "Writing"},
                                {"content": "Ship it", "status": "in_progress", "activeForm": "Shipping"}])
    s1.stop(home)
    normalize.run(home)
    assert "Ship it" in block(home, project)[0]
    s1.tool("TodoWrite", todos=[{"content": "Write the parser", "status": "completed", "activeForm": "Writing"},
                                {"content": "Ship it", "status": "completed", "activeForm": "Shipping"}])
    s1.stop(home)
    normalize.run(home)
    text, details = block(home, project)
    assert "Ship it" not in text
    assert any(why == "plan finished" for _, why in details["left"])


def test_rerunning_the_normalizer_five_times_leaves_the_record_count_unchanged(env):
    home, project, root = env
    s1 = Session(root, project, "s1", T0)
    s1.user("Set up the exporter and document the choice.")
    s1.say("We chose msgpack over JSON for the exporter because payloads shrink by half.")
    s1.say("[MEMORY: learned] The exporter batches 500 rows per request.")
    s1.stop(home)
    normalize.run(home)
    first = sorted((os.path.basename(p), open(p).read()) for p in iter_paths(home.records))
    for _ in range(5):
        os.unlink(home.cursors)  # forget how far we read: the whole transcript is read again
        s1.stop(home)
        normalize.run(home)
    again = sorted((os.path.basename(p), open(p).read()) for p in iter_paths(home.records))
    assert len(again) == len(first) and again == first


def test_decay_by_type_and_archive_after_the_documented_time(env):
    home, project, root = env
    cfg = json.load(open(home.config_json)) if os.path.exists(home.config_json) else None
    from cortex.core import config
    cfg = cfg or config.load(home, fast=False)
    mem = settings(cfg)
    now = time.time()
    old = {"type": "progress", "confidence": 0.7, "times": [now - 30 * 86400]}  # calendar clock (no days given)
    fresh = {"type": "progress", "confidence": 0.7, "times": [now - 3600]}
    decision = {"type": "decision", "confidence": 0.7, "times": [now - 400 * 86400]}
    used = {"type": "progress", "confidence": 0.7, "times": [now - 30 * 86400] * 1 + [now - 29 * 86400] * 6}
    never = cfg["ranking"]["never_decay"]
    assert effective_confidence(old, now, mem, never) < 0.01 < effective_confidence(fresh, now, mem, never)
    assert effective_confidence(decision, now, mem, never) == 0.7
    assert effective_confidence(used, now, mem, never) > effective_confidence(old, now, mem, never)
    # with the scope's active days as the clock, idle time does not count: 30 calendar days but
    # only 2 days of work since the record was touched
    days = [int((now - 30 * 86400) // 86400), int((now - 2 * 86400) // 86400), int(now // 86400)]
    assert effective_confidence(old, now, mem, never, days) == pytest.approx(0.7 * 0.5 ** (2 / 3))
    # a session a month ago, alone: the project has been idle, so its memory stays as it was
    s1 = Session(root, project, "s1", now - 40 * 86400)
    s1.user("Tidy the build scripts please.")
    s1.tool("Edit", file_path=os.path.join(project, "build.sh"), old_string="a", new_string="b")
    s1.stop(home)
    normalize.run(home, now=now)
    store = RecordStore(home.records)
    assert lifecycle(home, store, cfg, now=now, dry_run=True) == []
    # the project moves on without it for 12 working days: the old progress record fades into the archive
    for day in range(12, 0, -1):
        s2 = Session(root, project, "s2-%d" % day, now - day * 86400)
        s2.user("Day %d: add the release notes generator, part %d." % (day, day))
        s2.tool("Write", file_path=os.path.join(project, "notes%d.py" % day), content="x")
        s2.stop(home)
    normalize.run(home, now=now)
    status = {r["id"]: (r["status"], r["text"]) for r in records(home)}
    old_id = next(i for i, (_, t) in status.items() if "build scripts" in t)
    assert status[old_id][0] == "archived"  # the normalizer runs the lifecycle itself
    assert all(st == "active" for i, (st, _) in status.items() if i != old_id)
    # a dry run shows what would change and changes nothing
    store.update(old_id, lambda r: r.update(status="active", archived_at=None) or True)
    from cortex.core import config as config_mod
    from cortex.store import indexer
    indexer.update_index(home, config_mod.load(home, fast=False), {old_id}, set())
    planned = lifecycle(home, store, cfg, now=now, dry_run=True)
    assert [(i, a) for i, a, _ in planned] == [(old_id, "archive")]
    assert {r["id"]: r["status"] for r in records(home)}[old_id] == "active"
    assert lifecycle(home, store, cfg, now=now) == planned
    assert {r["id"]: r["status"] for r in records(home)}[old_id] == "archived"
    assert lifecycle(home, store, cfg, now=now) == []  # idempotent


def test_subject_extraction():
    assert switch_subject("Switched from REST to GraphQL for the API")[0] == "REST"
    assert switch_subject("We no longer use Celery because cron is enough")[0] == "Celery"
    assert switch_subject("Replaced moment.js with date-fns to cut bundle size")[0] == "moment.js"
    assert switch_subject("Use SQLite for the cache") == (None, None)
    assert rejected_subject("Redis for the session cache: it loses entries on failover") == "Redis for the session cache"
    assert rejected_subject("Rejected Kafka because the team has no ops capacity") == "Kafka"


def _todos(*items):
    marks = {"x": "completed", ">": "in_progress", " ": "pending"}
    return [{"content": t, "status": marks[m], "activeForm": t} for m, t in items]


def test_a_plan_finished_in_a_later_session_retires_the_earlier_one(env):
    """Issue #15: "[>] Add rate limiting" from weeks ago stayed "where you left off" after a later session
    finished every item of the same plan.  The later plan replaces the earlier one (same work: overlapping
    items), and once all done it leaves the block taking the replaced plan with it."""
    home, project, root = env
    s1 = Session(root, project, "s1", T0 - 21 * 86400)
    s1.user("Harden the public API: rate limiting, auth headers, request logging.")
    s1.tool("TodoWrite", todos=_todos(("x", "Add auth header validation"), (">", "Add rate limiting"),
                                      (" ", "Add request logging")))
    s1.stop(home)
    normalize.run(home)
    assert "[>] Add rate limiting" in block(home, project)[0]
    s2 = Session(root, project, "s2", T0)
    s2.user("Finish the API hardening work from last time.")
    s2.tool("TodoWrite", todos=_todos(("x", "Add rate limiting to the API"), ("x", "Add request logging"),
                                      ("x", "Add auth header validation")))
    s2.stop(home)
    normalize.run(home)
    plans = {r["provenance"][0]["session"]: r for r in records(home) if r["type"] == "plan"}
    assert plans["s1"]["status"] == "superseded" and plans["s1"]["superseded_by"] == [plans["s2"]["id"]]
    text, details = block(home, project)
    assert "Plan:" not in text and "[>] Add rate limiting" not in text
    assert any(why == "plan finished" for _, why in details["left"])


def test_a_different_plan_of_another_session_is_not_replaced(env):
    home, project, root = env
    s1 = Session(root, project, "s1", T0 - 86400)
    s1.tool("TodoWrite", todos=_todos((">", "Migrate the billing tables"), (" ", "Backfill invoices")))
    s1.stop(home)
    s2 = Session(root, project, "s2", T0)
    s2.tool("TodoWrite", todos=_todos(("x", "Write the onboarding email"), ("x", "Schedule the email job")))
    s2.stop(home)
    normalize.run(home)
    plans = {r["provenance"][0]["session"]: r for r in records(home) if r["type"] == "plan"}
    assert plans["s1"]["status"] == "active"  # unrelated work: still open, still shown
    text, _ = block(home, project)
    assert "[>] Migrate the billing tables" in text


def test_plans_replace_each_other_whatever_order_they_are_read_in(env):
    home, project, root = env
    s2 = Session(root, project, "s2", T0)
    s2.tool("TodoWrite", todos=_todos(("x", "Add rate limiting"), (">", "Add request logging")))
    s2.stop(home)
    normalize.run(home)
    s1 = Session(root, project, "s1", T0 - 5 * 86400)
    s1.tool("TodoWrite", todos=_todos((">", "Add rate limiting"), (" ", "Add request logging")))
    s1.stop(home)
    normalize.run(home)
    plans = {r["provenance"][0]["session"]: r for r in records(home) if r["type"] == "plan"}
    assert plans["s1"]["status"] == "superseded" and plans["s2"]["status"] == "active"
    assert "[>] Add request logging" in block(home, project)[0]


def test_a_compaction_summary_plan_is_replaced_by_a_later_todo_list_and_its_next_step_retires(env):
    home, project, root = env
    s1 = Session(root, project, "s1", T0)
    s1.user("Port the exporter to the new queue.")
    s1._line("user", {"role": "user", "content": (
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n\nSummary:\n"
        "1. Primary Request and Intent:\n   Port the exporter to the new queue.\n\n"
        "4. Errors and fixes:\n   - **Queue client timed out**: the default 5 s timeout is too short for batch "
        "acks. Fixed by raising it to 30 s.\n\n"
        "7. Pending Tasks:\n   - Switch the exporter consumer to the new queue client (IN PROGRESS)\n"
        "   - Remove the legacy queue adapter\n\n"
        "8. Current Work:\n   Switching the exporter consumer.\n\n"
        "9. Optional Next Step:\n   Run the exporter integration tests against the new queue client.\n")})
    # the JSONL line must carry isCompactSummary: rewrite the last line
    lines = open(s1.path).read().splitlines()
    last = json.loads(lines[-1])
    last["isCompactSummary"] = True
    lines[-1] = json.dumps(last)
    open(s1.path, "w").write("\n".join(lines) + "\n")
    s1.stop(home)
    normalize.run(home)
    text, _ = block(home, project)
    assert "[>] Switch the exporter consumer to the new queue client" in text
    assert "Next step (at compaction): Run the exporter integration tests" in text
    assert "Fixed by raising it to 30 s" in text  # the fix, whole
    s1.tool("TodoWrite", todos=_todos(("x", "Switch the exporter consumer to the new queue client"),
                                      ("x", "Remove the legacy queue adapter"), ("x", "Run the integration tests")))
    s1.stop(home)
    normalize.run(home)
    text, _ = block(home, project)
    assert "Plan:" not in text and "Next step" not in text
    assert "Fixed by raising it to 30 s" in text


def test_a_note_about_a_file_named_only_in_its_text_goes_stale_when_the_file_is_deleted(env, monkeypatch):
    """Issue #15: a gotcha naming legacy_token_cache.py stayed current after `git rm`; only `files` were
    checked.  Paths, file names and modules named in the text are checked too (stat only)."""
    home, project, root = env
    os.makedirs(os.path.join(project, "src", "auth"))
    for rel in ("src/auth/legacy_token_cache.py", "src/auth/tokens.py", "README.md"):
        with open(os.path.join(project, rel), "w") as f:
            f.write("x = 1\n")
    s1 = Session(root, project, "s1", T0)
    s1.user("Speed up the token refresh.")
    s1.tool("Edit", file_path=os.path.join(project, "src/auth/legacy_token_cache.py"), old_string="x", new_string="y")
    s1.say("[MEMORY: gotcha] legacy_token_cache.py must be warmed before the first refresh or logins stall.")
    s1.say("[MEMORY: decision] Keep `src.auth.tokens` as the only writer of the token table because "
           "legacy_token_cache.py races it.")
    s1.say("[MEMORY: learned] The README.md lists the supported identity providers.")
    s1.stop(home)
    normalize.run(home)
    gotcha = next(r for r in records(home) if r["type"] == "gotcha")
    assert set(os.path.basename(p) for p in gotcha["file_state"]) == {"legacy_token_cache.py"}
    text, _ = block(home, project)
    assert "legacy_token_cache.py must be warmed" in text
    subprocess.run(["git", "-C", project, "rm", "-q", "--cached", "src/auth/legacy_token_cache.py"],
                   capture_output=True)
    os.unlink(os.path.join(project, "src/auth/legacy_token_cache.py"))
    # the hot path only stats named paths: no file is opened to hash them
    from cortex.model import freshness
    monkeypatch.setattr(freshness, "_changed", lambda *a: (_ for _ in ()).throw(AssertionError("hashed")))
    text, details = block(home, project)
    assert "legacy_token_cache.py must be warmed" not in text
    assert any(why == "files gone: legacy_token_cache.py" for _, why in details["left"])
    # a decision naming it stays (a choice outlives a file), marked
    assert "Keep ‹src.auth.tokens›" in text or "src.auth.tokens" in text
    assert "gone: legacy_token_cache.py" in text
    assert "README.md lists the supported identity providers" in text


def test_named_paths_resolution_and_the_stat_cap(tmp_path):
    from cortex.model import freshness
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("")
    (tmp_path / "a.py").write_text("")
    text = ("See a.py, pkg/mod.py, `pkg.mod`, pkg/, https://example.com/x/a.py, ../outside.py, "
            "never_existed.py and /etc/passwd.")
    got = freshness.named_paths(text, str(tmp_path), known=["pkg/mod.py"])
    assert [os.path.relpath(p, str(tmp_path)) for p in got] == ["a.py", "pkg/mod.py", "pkg"]
    assert freshness.named_paths(text, str(tmp_path / "missing")) == []  # a project not on this machine
    # at most MAX_STATS stats for a whole block; past it, nothing is stat'ed and nothing is dropped
    budget = {"stats": freshness.MAX_STATS}
    rec = {"type": "gotcha", "file_state": {str(tmp_path / "gone.py"): {"named": 1}}}
    assert freshness.check(rec, None, budget) is None and budget["stats"] == freshness.MAX_STATS
    assert freshness.check(rec, None, {"stats": 0}) == "files gone: gone.py"


def test_progress_names_the_last_substantive_request_not_a_slash_command_or_a_nudge(env):
    """Issue #15: `/compact` and "did you push?" were reported as what the user asked."""
    home, project, root = env
    s1 = Session(root, project, "s1", T0)
    s1.user("Add retry with backoff to the webhook sender.")
    s1.tool("Edit", file_path=os.path.join(project, "sender.py"), old_string="a", new_string="b")
    s1.user("Run the test suite and fix failures.")
    for prompt in ("continue", "<command-name>/compact</command-name>", "did you push?", "ok thanks", "/clear"):
        s1.user(prompt)
    s1.stop(home)
    normalize.run(home)
    (progress,) = [r for r in records(home) if r["type"] == "progress"]
    assert progress["text"].startswith('asked "Run the test suite and fix failures."')
    assert 'before that: "Add retry with backoff to the webhook sender."' in progress["text"]
    for nudge in ("/compact", "did you push", "continue", "ok thanks", "/clear"):
        assert nudge not in progress["text"]
    from cortex.ingest.extract import substantive
    assert not any(substantive(p) for p in ("/compact", "Continue.", "OK", "thanks!", "did you push?", "go ahead",
                                            "continue until all are done", "what else?"))
    assert all(substantive(p) for p in ("/review the auth module", "push the fix to staging and tag it",
                                        "continue with the migration of the billing tables"))
    assert switch_subject("Switched the public API from REST to GraphQL because of nested reads")[0] == "REST"


def test_a_series_of_sessions_with_switches_and_amendments_keeps_only_the_current_rules(env):
    """Weeks of work on one project: rules settled in conversation, switched, amended; the block lists
    the current rule of each subject once, and the old ones stay recallable as superseded."""
    home, project, root = env
    day = 86400
    s1 = Session(root, project, "q1", T0 - 30 * day)
    s1.user("Which style for the public API?")
    s1.say("[MEMORY: decision] Chose REST over gRPC for the public API because browsers can call it directly.")
    s1.say("For `retry_upload()` I'd retry 3 times with exponential backoff. Sound good?")
    s1.user("yes, except for 4xx responses, those fail immediately")
    s1.stop(home)
    normalize.run(home)
    s2 = Session(root, project, "q2", T0 - 20 * day)
    s2.user("The nightly `export_orders` job keeps running late.")
    s2.say("I'd run `export_orders` from cron on the app box. Does that work?")
    s2.user("no, not cron — it drifts when the box sleeps. Use a systemd timer with Persistent=true.")
    s2.stop(home)
    normalize.run(home)
    s3 = Session(root, project, "q3", T0 - 5 * day)
    s3.user("Mobile needs nested reads in one round trip.")
    s3.say("[MEMORY: decision] Switched the public API from REST to GraphQL because the mobile client needs "
           "nested reads.")
    s3.user("Also 429s are rate limits: from now on `retry_upload()` retries 5 times and retries 429 too.")
    s3.say("Got it — rule: `retry_upload()` retries 5 times with exponential backoff, retries 429, and fails fast "
           "on other 4xx. This replaces the earlier rule.")
    s3.stop(home)
    normalize.run(home)
    decisions = {r["id"]: r for r in records(home) if r["type"] == "decision"}
    active = [r["text"] for r in decisions.values() if r["status"] == "active"]
    superseded = [r for r in decisions.values() if r["status"] == "superseded"]
    assert any("GraphQL" in t for t in active) and not any(t.startswith("Chose REST") for t in active)
    assert any("retries 5 times" in t for t in active) and not any("3 times" in t for t in active)
    assert sorted(r["text"][:10] for r in superseded) == sorted(["Chose REST", "For `retry"])
    for old in superseded:  # linked both ways
        for new_id in old["superseded_by"]:
            assert old["id"] in decisions[new_id]["supersedes"]
    assert any("systemd timer" in t for t in active)
    text, details = block(home, project)
    assert "GraphQL" in text and "Chose REST" not in text and "3 times" not in text
    assert "cron" in text  # the rejection with its reason stays
    # rerunning changes nothing
    first = sorted((os.path.basename(p), open(p).read()) for p in iter_paths(home.records))
    os.unlink(home.cursors)
    for s in (s1, s2, s3):
        s.stop(home)
    normalize.run(home)
    assert sorted((os.path.basename(p), open(p).read()) for p in iter_paths(home.records)) == first


def test_the_lifecycle_pass_runs_once_an_hour_unless_the_day_changes_or_a_past_day_is_written(env):
    home, project, root = env
    now = time.time()
    stamp = home.path("state", "lifecycle.json")

    def run_at(t, sid, ago=0.0):
        s = Session(root, project, sid, t - ago - 600)
        s.user("Add the export button to the %s page, then run the tests." % sid)
        s.tool("Write", file_path=os.path.join(project, "%s.py" % sid), content="x")
        s.stop(home)
        normalize.run(home, now=t)
        return json.load(open(stamp))["at"]

    first = run_at(now, "s1")
    assert first == now
    # ten minutes later, the same day, only today's work: the pass is skipped (its stamp stays)
    later = now + 600 if int((now + 600) // 86400) == int(now // 86400) else now + 1
    assert run_at(later, "s2") == first
    # a catch-up run writing a session of three days ago: its active day can archive records now
    assert run_at(later + 1, "s3", ago=3 * 86400) == later + 1
    # an hour on: due again
    assert run_at(later + 3601, "s4") == later + 3601
