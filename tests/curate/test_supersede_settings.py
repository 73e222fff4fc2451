"""A later rule that gives a setting another value retires the earlier rule on that setting, however
differently the two are worded; a rule that goes back to a choice retires the rule that left it.

Weeks apart, one rule says `dispatch.same-day-cutoff: "14:00"` inside a long paragraph and the next says
`dispatch.same-day-cutoff: "15:30"` in one line: too unlike in wording to be linked by similarity, yet the
same key set to another value.  The scenarios are Claude Code transcripts captured by the stop hook and
normalized; the first group checks the pieces directly."""
import os
import time

import pytest

import cortex_testkit as testkit
from cortex.curate import consolidate as C
from cortex.curate.subjects import subjects
from cortex.store.records import iter_paths, read

T0 = time.time() - 40 * 86400


@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def decisions(home):
    return [r for r in (read(p) for p in iter_paths(home.records)) if r["type"] == "decision"]


def status(home, *words):
    found = [r for r in decisions(home) if all(w.lower() in r["text"].lower() for w in words)]
    assert len(found) == 1, (words, [r["text"] for r in decisions(home)])
    return found[0]["status"]


def settled(env, sid, days, offer, reply, statement, path="config/app.yml"):
    home, project, root = env
    c = testkit.Chat(root, project, sid, T0 + days * 86400)
    c.user("next thing on the list")
    c.say(offer)
    c.user(reply)
    c.tool("Edit", file_path=os.path.join(project, *path.split("/")), old_string="a: 1", new_string="a: 2")
    c.say(statement)
    c.stop(home, run=True)


# -- the pieces --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, first", [
    ('the cutoff is 15:30 (`dispatch.same-day-cutoff: "15:30"`)', "dispatch.same-day-cutoff"),
    ('pinned with `Stripe.api_version = "2024-06-20"` now', "Stripe.api_version"),
    ("`FREE_CANCEL_WINDOW = 2.minutes` in the model", "FREE_CANCEL_WINDOW"),
    ("`a == b` compares them", "a == b"),        # a comparison is not a setting
    ("see `http://localhost:8080/health`", "http://localhost:8080/health"),
])
def test_a_setting_in_backticks_is_named_by_its_key(text, first):
    assert subjects(text)[0] == first


def test_setting_values_and_their_kinds():
    text = ('cutoff `dispatch.same-day-cutoff: "14:00"`, `Stripe.api_version = "2023-10-16"`, '
            'pool `maximumPoolSize = 20`, `ttl: 30m`')
    assert C.setting_values(text) == {"dispatch.same-day-cutoff": "14:00", "stripe.api_version": "2023-10-16",
                                      "maximumpoolsize": "20", "ttl": "30m"}
    assert [C.value_kind(v)[0] for v in ("14:00", "2023-10-16", "1.4.2", "20", "30m", "60.days")] == \
        ["time", "date", "version", "number", "number", "number"]
    assert C.value_kind("mmkvStorage") is None


@pytest.mark.parametrize("text, otherwise", [
    ('held 30 minutes (`inventory.reservation-ttl: 30m`)', True),        # set to another value
    ('held 45 minutes (`inventory.reservation-ttl: 45m`)', False),       # the same, as written
    ("big waves hold 45 minutes, beside `inventory.reservation-ttl`", False),  # named, with the new value
    ("`inventory.reservation-ttl` holds stock 30 minutes", True),        # named, with another number
    ("`inventory.reservation-ttl` is read at start-up", False),          # named, no value of its kind
    ("held 30 minutes (`cart.hold-ttl: 30m`)", False),                   # another key
])
def test_a_rule_gives_a_setting_another_value(text, otherwise):
    assert C.sets_otherwise("inventory.reservation-ttl", "45m", text) is otherwise


# -- the same setting given another value ------------------------------------------------------------

def test_the_same_key_set_to_another_value_in_a_later_session_retires_the_earlier_rule(env):
    settled(env, "st1", 0, "Either a fixed UTC time like 12:00 UTC, or 14:00 in each warehouse's own zone?",
            "14:00 warehouse local time",
            'Rule: orders confirmed before 14:00 warehouse local time ship the same day, per warehouse IANA zone; '
            'configured as `dispatch.same-day-cutoff: "14:00"`, and `ShippingDayCalculator` reads the zone from '
            '`WarehouseZones`, cached.')
    settled(env, "st2", 30, "Either deploy on Sunday evening, or add an effective-from date for 15:30?",
            "sunday evening, 15:30 everywhere",
            'The same-day cutoff is 15:30 (`dispatch.same-day-cutoff: "15:30"`).')
    assert status(env[0], "14:00 warehouse") == "superseded"
    assert status(env[0], "15:30") == "active"


def test_a_rule_naming_the_key_with_another_value_of_its_kind_is_retired(env):
    settled(env, "sv1", 0, "Either keep the account default, or pin 2023-10-16 in code?", "pin 2023-10-16",
            "Stripe API version is pinned to 2023-10-16 in `config/initializers/stripe.rb` through "
            "`Stripe.api_version`; the dashboard default no longer matters.", path="config/initializers/stripe.rb")
    settled(env, "sv2", 25, "Either bump the gem and pin 2024-06-20, or stay on 11.x?", "bump, 2024-06-20",
            'Gem bumped to 12.x with `Stripe.api_version = "2024-06-20"`; webhook fixtures updated.',
            path="config/initializers/stripe.rb")
    assert status(env[0], "2023-10-16") == "superseded"


def test_a_camel_case_key_is_a_compound_name(env):
    settled(env, "sc1", 0, "Either 20 per pod, or one shared pool of 50?", "20 per pod",
            "The Hikari pool holds 20 connections per pod (`maximumPoolSize = 20`), with 5 idle at least.")
    settled(env, "sc2", 25, "Either 30 for the Friday peak, or add replicas?", "30 for the peak",
            "Friday peak: `maximumPoolSize = 30` on every pod.")
    assert status(env[0], "5 idle") == "superseded"


def test_another_key_with_another_value_leaves_the_earlier_rule(env):
    settled(env, "sk1", 0, "Either 10 per pod, or one shared pool of 50?", "10 per pod",
            "Each pod opens at most 10 connections (`db.pool.max-size: 10`), so 12 pods stay under the "
            "server's limit.")
    settled(env, "sk2", 20, "Either 3 retries, or retry for an hour?", "3 retries",
            "Webhook deliveries retry 3 times (`webhooks.retry.max-attempts: 3`) and then go to the "
            "dead-letter table; the pool setting `db.pool.max-size` is untouched.")
    assert status(env[0], "12 pods") == "active"
    assert status(env[0], "dead-letter") == "active"


# -- back to an earlier choice -----------------------------------------------------------------------

def test_going_back_to_a_choice_retires_the_rule_that_moved_away_from_it(env):
    settled(env, "bk1", 0, "Either keep AsyncStorage, or move the persisted stores to MMKV (react-native-mmkv)?",
            "MMKV, it's faster",
            "The persisted stores use `mmkvStorage` from react-native-mmkv (was AsyncStorage), migrated once "
            "on first launch.", path="apps/mobile/src/store/draft.ts")
    settled(env, "bk2", 30, "Either fix the MMKV hydration race, or go back to AsyncStorage with a splash gate?",
            "AsyncStorage with the splash gate",
            "Back to AsyncStorage for the persisted stores, with a hydration gate that keeps the splash screen up.",
            path="apps/mobile/src/store/draft.ts")
    assert status(env[0], "mmkvStorage") == "superseded"
    assert status(env[0], "Back to AsyncStorage") == "active"


def test_going_back_to_a_choice_leaves_a_rule_that_only_names_it(env):
    settled(env, "bn1", 0, "Either keep AsyncStorage for the settings store, or move it to SQLite?",
            "keep AsyncStorage",
            "The settings store stays on AsyncStorage and is read once at start-up.",
            path="apps/mobile/src/store/settings.ts")
    settled(env, "bn2", 30, "Either fix the MMKV hydration race, or go back to AsyncStorage with a splash gate?",
            "AsyncStorage with the splash gate",
            "Back to AsyncStorage for the draft store, with a hydration gate that keeps the splash screen up.",
            path="apps/mobile/src/store/draft.ts")
    assert status(env[0], "read once at start-up") == "active"



# -- a named choice reported gone -------------------------------------------------------------------

def detox_rule(env, sid):
    settled(env, sid, 0, "Either `detox`, which we know, or `maestro` flows?", "detox, we know it",
            "E2E tests run on Detox (`.detoxrc.js`) against a debug build on the iOS simulator.",
            path="apps/mobile/.detoxrc.js")


def test_a_rule_that_reports_a_named_choice_gone_retires_the_rule_that_chose_it(env):
    detox_rule(env, "gn1")
    settled(env, "gn2", 30, "Either fix the flaky `detox` matchers, or move the flows to `maestro`?",
            "maestro, the flows are simpler",
            "E2E tests are Maestro flows in `apps/mobile/.maestro/`; Detox is gone with its config and deps.",
            path="apps/mobile/.maestro/login.yaml")
    assert status(env[0], "debug build") == "superseded"
    assert status(env[0], "Maestro flows in") == "active"


def test_a_pronoun_reported_gone_retires_nothing(env):
    detox_rule(env, "gp1")
    settled(env, "gp2", 30, "Either keep the nightly e2e job, or run it on every merge?", "keep the nightly job",
            "The nightly e2e job stays on the macOS runner; it is gone from the merge checks.",
            path=".github/workflows/e2e.yml")
    assert status(env[0], "debug build") == "active"


# -- a rule that says which value it replaced ----------------------------------------------------------

def tagged(env, sid, days, text):
    home, project, root = env
    c = testkit.Chat(root, project, sid, T0 + days * 86400)
    c.user("ok, note it down")
    c.say("[MEMORY: decision] " + text)
    c.stop(home, run=True)


@pytest.mark.parametrize("text, olds", [
    ("Admin sessions now end 8 hours after login (absolute, no sliding) — was 12 hours", [("12", "h")]),
    ("cookie lifetime is now 8 hours (`VIDEO_COOKIE_TTL_SECONDS = 8 * 3600`), up from 4", [("4", "h")]),
    ("Idle sessions end after 10 minutes (shortened from 15 after the pen test)", [("15", "min")]),
    ("the pos sensor timeout goes from 3 hours to 90 minutes", [("3", "h")]),
    ("`needs_attention` is now set at day 30 instead of 14.", [("14", "")]),
    ("Admin sessions end 8 hours after login.", []),
])
def test_the_value_a_rule_says_it_replaced(text, olds):
    assert C.replaced_values(text) == olds


def test_a_rule_that_says_it_replaced_a_value_retires_the_rule_that_states_it(env):
    home = env[0]
    tagged(env, "s-admin", 0, "Admin auth uses server-side sessions: absolute lifetime 12 hours after login, "
                              "no sliding renewal.")
    tagged(env, "s-backup", 1, "Nightly database backups stay 12 hours on the local disk before the upload.")
    tagged(env, "s-admin-2", 20, "Admin sessions now end 8 hours after login, still absolute — was 12 hours.")
    assert status(home, "absolute lifetime 12 hours") == "superseded"
    assert status(home, "Nightly database backups") == "active"     # another subject, the same value
    assert status(home, "8 hours after login") == "active"


def test_a_rule_stating_the_old_value_in_another_unit_stays(env):
    home = env[0]
    tagged(env, "s-admin", 0, "Admin auth uses server-side sessions: absolute lifetime 12 days after login, "
                              "no sliding renewal.")
    tagged(env, "s-admin-2", 20, "Admin sessions now end 8 hours after login, still absolute — was 12 hours.")
    assert status(home, "absolute lifetime 12 days") == "active"
