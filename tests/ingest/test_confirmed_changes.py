"""A change the user asks for and the assistant confirms retires the rule it contradicts (decisions.py
"changed", consolidate.changed_targets); a change to something else about the same code retires nothing and
adds no decision."""
import os
import time

import pytest

import cortex_testkit as testkit
from cortex.ingest import decisions as D
from cortex.store.records import iter_paths, read

T0 = time.time() - 40 * 86400


@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def _rule(home, root, project):
    c = testkit.Chat(root, project, "rule", T0)
    c.user("Carts keep grabbing the last unit and then abandon it. What should `reserve_stock()` do?")
    c.tool("Read", file_path=os.path.join(project, "shop/stock.py"))
    c.say("I'd suggest `reserve_stock()` holds units for 15 minutes, then releases them back to stock.")
    c.user("yes, go with that")
    c.stop(home, run=True)


def _later(home, root, project, ask, confirm, sid="later"):
    c = testkit.Chat(root, project, sid, T0 + 20 * 86400)
    c.user(ask)
    c.say("Let me look at the current implementation.")
    c.tool("Read", file_path=os.path.join(project, "shop/stock.py"))
    c.tool("Edit", file_path=os.path.join(project, "shop/stock.py"), old_string="a", new_string="b")
    c.tool("Bash", _result="12 passed", command="pytest -q")
    c.say(confirm)
    c.user("thanks")
    c.stop(home, run=True)


def _decisions(home):
    recs = [read(p) for p in iter_paths(home.records)]
    return {(r["provenance"][0]["session"], r["status"]): r["text"] for r in recs if r["type"] == "decision"}


@pytest.mark.parametrize("ask, confirm", [
    ("Bank transfers take longer than that. `reserve_stock()` should keep them for 30 minutes.",
     "Done: `reserve_stock()` now holds units for 30 minutes before releasing them."),
    ("Ops wants `reserve_stock()` at 45 minutes for the holiday season.",
     "All set: `reserve_stock()` holds units for 45 minutes, then releases them."),
    ("`reserve_stock()`: 10 minutes is plenty, shorten it.", "Done. The tests pass."),
])
def test_a_confirmed_change_retires_the_rule_it_contradicts(env, ask, confirm):
    home, project, root = env
    _rule(home, root, project)
    _later(home, root, project, ask, confirm)
    got = _decisions(home)
    assert ("rule", "superseded") in got and ("rule", "active") not in got, got
    assert ("later", "active") in got, got


@pytest.mark.parametrize("ask, confirm", [
    ("Update the docstring of `reserve_stock()` to Google style instead of reST.",
     "Done: `reserve_stock()` now has a Google-style docstring."),
    ("Fix the crash in `reserve_stock()` when the quantity is 0.",
     "Fixed: `reserve_stock()` now returns early when the quantity is 0."),
    ("Add type hints to `reserve_stock()`.", "Done. The tests pass."),
    ("Set the cache TTL of `load_catalog()` to 60 seconds.", "Done: `load_catalog()` now caches for 60 seconds."),
    ("Make `reserve_stock()` log how long each hold lasted.",
     "Done: `reserve_stock()` now logs each hold of up to 15 minutes with its 2 timestamps."),
])
def test_a_change_to_something_else_leaves_the_rule_and_adds_no_decision(env, ask, confirm):
    home, project, root = env
    _rule(home, root, project)
    _later(home, root, project, ask, confirm)
    got = _decisions(home)
    assert ("rule", "active") in got, got
    assert not [k for k in got if k[0] == "later"], got  # no rule in memory said it: the episode keeps it


def test_the_change_waits_for_the_confirmation_and_a_question_asks_for_none():
    st = D.initial_state()
    out, st = D.step("user", "Ops wants `reserve_stock()` at 45 minutes.", st, "s:1")
    assert out == [] and st["change"]["names"] == ["reserve_stock()"]
    out, st = D.step("assistant", "Let me look at the current implementation.", st, "s:2")
    assert out == [] and st["change"]
    out, st = D.step("assistant", "Done: `reserve_stock()` now holds units for 45 minutes.", st, "s:3")
    assert [(o[0], o[1], o[3]) for o in out] == [("decision", "`reserve_stock()` now holds units for 45 minutes.",
                                                  "changed")]
    assert st["change"] is None
    _, st = D.step("user", "Should `reserve_stock()` hold for 45 minutes?", st, "s:4")
    assert st["change"] is None


def test_the_amendments_benchmark_runs_a_case(tmp_path, monkeypatch):
    from cortex.bench import amendments as A
    monkeypatch.setenv("CORTEX_HOME", str(tmp_path / "unused"))
    res = A.evaluate({"one": (A.FRESH[:1], A.CONFIRMS[:1]), "side": (A.SIDE[:1], A.SIDE_CONFIRMS[:1])},
                     rules=A.RULES[:1], workdir=str(tmp_path))
    assert res["one"][0]["rule_retired"] and res["one"][0]["later_in_force"]
    assert not res["side"][0]["rule_retired"]


def test_a_change_that_names_the_value_it_replaces_retires_only_the_rule_holding_it(env):
    """Two rules on `fct_sales`: its lookback (3 days) and how it is backfilled (batches of 7 days).  "... is now
    7 days (instead of 3 days)" replaces the rule that said 3 days, however close the other is in wording."""
    home, project, root = env
    for sid, ask, rule in [
            ("lookback", "What lookback should `fct_sales` use for late refunds?",
             "I'd suggest `fct_sales` reprocesses the last 3 days on every run."),
            ("backfill", "How should we backfill `fct_sales` for all of 2023?",
             "I'd suggest `fct_sales` is backfilled for 2023 in 53 batches of 7 days so missed refund adjustments are in, "
             "with the lookback window vars honoured and the nightly runs untouched.")]:
        c = testkit.Chat(root, project, sid, T0)
        c.user(ask)
        c.tool("Read", file_path=os.path.join(project, "dbt/models/fct_sales.sql"))
        c.say(rule)
        c.user("yes, go with that")
        c.stop(home, run=True)
    c = testkit.Chat(root, project, "later", T0 + 20 * 86400)
    c.user("Refunds arrive up to a week late. Set the `fct_sales` lookback to 7 days instead of 3 days.")
    c.tool("Edit", file_path=os.path.join(project, "dbt/models/fct_sales.sql"), old_string="3", new_string="7")
    c.tool("Bash", _result="PASS=31", command="dbt build -s fct_sales")
    c.say("Done: the `fct_sales` lookback is now 7 days (instead of 3 days), and May 1-20 was backfilled.")
    c.user("thanks")
    c.stop(home, run=True)
    got = _decisions(home)
    assert ("lookback", "superseded") in got and ("backfill", "active") in got, got
    assert ("later", "active") in got, got


def _agreed(home, root, project, sid, days, ask, rule, path="ops/retention.py"):
    c = testkit.Chat(root, project, sid, T0 + days * 86400)
    c.user(ask)
    c.tool("Read", file_path=os.path.join(project, *path.split("/")))
    c.say(rule)
    c.user("yes, go with that")
    c.stop(home, run=True)


def test_a_later_rule_that_measures_the_same_thing_otherwise_retires_the_earlier(env):
    """No code name in either, no "instead of": the words before each value say they measure the same thing
    ("raw ... messages ... kept 90 days", "raw ... messages ... retained 2 years")."""
    home, project, root = env
    _agreed(home, root, project, "keep", 0, "How long do we keep the raw HL7 messages?",
            "I'd suggest raw HL7 messages are kept 90 days, then deleted; parsed observations are never purged.")
    _agreed(home, root, project, "other", 1, "How long do sessions of lab staff last?",
            "I'd suggest lab staff sessions are kept 12 hours, then they sign in again; the purge runs at 03:30 UTC.")
    _agreed(home, root, project, "keep2", 30, "The inspector says 90 days is too short for the interface logs.",
            "I'd suggest raw interface messages are retained 2 years, in encrypted storage after 30 days; the purge "
            "runs nightly at 02:30 UTC.")
    got = _decisions(home)
    assert ("keep", "superseded") in got and ("keep2", "active") in got, got
    assert ("other", "active") in got, got  # another duration, of something else


def test_a_later_rule_with_a_value_of_another_thing_leaves_the_earlier(env):
    home, project, root = env
    _agreed(home, root, project, "keep", 0, "How long do we keep the raw HL7 messages?",
            "I'd suggest raw HL7 messages are kept 90 days, then deleted; parsed observations are never purged.")
    _agreed(home, root, project, "pdf", 30, "How long should the report PDFs stay downloadable?",
            "I'd suggest report PDFs stay downloadable for 14 days after the results are released.")
    got = _decisions(home)
    assert ("keep", "active") in got and ("pdf", "active") in got, got


def test_a_later_rule_that_tells_the_old_value_as_history_still_retires_the_earlier(env):
    """The new rule says what the value was ("... 24 months initially"): that is its history, not a second
    value it holds, so the earlier rule that says 24 months is retired all the same."""
    home, project, root = env
    _agreed(home, root, project, "keep", 0, "How long do we keep the audit exports?",
            "I'd suggest audit exports are kept 24 months in cold storage, then deleted.")
    _agreed(home, root, project, "keep2", 30, "Legal wants the audit exports for longer.",
            "I'd suggest the exported audit logs stay in cold storage for 36 months; history: 24 months initially, "
            "raised for the legal hold.")
    got = _decisions(home)
    assert ("keep", "superseded") in got and ("keep2", "active") in got, got


def test_a_rule_with_a_value_before_an_event_still_states_it():
    from cortex.curate.consolidate import stated_values
    assert stated_values("send one SMS 2 days before the appointment") == ["2"]
    assert stated_values("retries 5 (was 3); bumped from 2 to 3 last year; 90 s initially") == ["5", "3"]


def test_an_old_value_named_as_old_is_one_the_rule_replaced():
    from cortex.curate.consolidate import replaced_values, stated_values
    text = "The cart hold is now 10 minutes; holds already running finish on their old 15-minute timer."
    assert replaced_values(text) == [("15", "min")]
    assert stated_values(text) == ["10"]
    assert replaced_values("old version 2 of the API") == []



def test_a_later_rule_that_tells_the_old_value_as_old_retires_the_rule_holding_it(env):
    """"Holds already running finish on their old 15-minute timer" says which value the rule replaced, as
    "(was 15 minutes)" does: the earlier rule stating 15 minutes of the hold is retired, though the words
    before the two values share one word and no code name is in both."""
    home, project, root = env
    _agreed(home, root, project, "hold", 0, "how long should a room stay on hold after Reserve?",
            "I'd suggest `CreateHold` starts the hold workflow on the booking queue and the banner counts down "
            "15 minutes before the room goes back on sale.")
    _agreed(home, root, project, "hold2", 30, "revenue wants shorter holds for the sale",
            "I'd suggest the cart hold is now 10 minutes, set by `HOLD_TTL` in the booking config; holds already "
            "running finish on their old 15-minute timer and the banner counts down from the new value.")
    got = _decisions(home)
    assert ("hold", "superseded") in got and ("hold2", "active") in got, got
