"""A choice read from the exchange (cortex/ingest/settle.py): the assistant offers a choice, the user's reply
takes something specific from it, the code changes, and the assistant's sentence that repeats it is kept as
the decision, however either side worded the agreement.

The scenarios are Claude Code transcripts captured by the stop hook and normalized; the first group checks
the reader's pieces directly."""
import os
import time

import pytest

import cortex_testkit as testkit
from cortex.ingest import settle as S
from cortex.store.records import iter_paths, read

T0 = time.time() - 20 * 86400


@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def decisions(home):
    return [r for r in (read(p) for p in iter_paths(home.records)) if r["type"] == "decision"]


def chat(env, sid, days=0):
    home, project, root = env
    return testkit.Chat(root, project, sid, T0 + days * 86400)


def edit(c, env, path="src/app.py"):
    c.tool("Edit", file_path=os.path.join(env[1], *path.split("/")), old_string="a = 1", new_string="a = 2")


# -- the pieces --------------------------------------------------------------------------------------

@pytest.mark.parametrize("prose, offers", [
    ("Two options: poll every 15 s, or push with server-sent events.", True),
    ("- **Polling:** simple, but up to 15 s late.\n- **Server-sent events (SSE):** one long response.", True),
    ("Either we deploy on Sunday evening, or we add an effective-from date.", True),
    ("Should the retry live in the worker or in the scheduler?", True),
    ("The cache key misses the tenant id, so two tenants share entries.", False),
    ("Fixed: `parse_date()` now accepts ISO weeks.", False),
])
def test_a_choice_is_offered_by_options_an_alternative_either_or_a_question_with_or(prose, offers):
    assert S.offers_choice(prose) is offers


def test_the_echo_is_what_the_reply_takes_from_the_offer_numbers_names_and_two_word_phrases():
    offer = ["45 minutes covers the slow waves with margin.",
             "One alternative is a per line formula: 30 minutes plus 15 seconds a line."]
    taken = S.echo("flat 45, keep it simple. no per line formula", offer)
    assert taken["nums"] == ["45"] and "line formula" in taken["phrases"]
    assert S.echo("sounds good to me", offer) == {}


def test_an_acronym_the_offer_spells_out_can_be_stated_either_way():
    taken = S.echo("SSE.", ["- Server-sent events (SSE): one long-lived HTTP response the server writes into."])
    assert "server-sent events" in taken["phrases"]
    assert S.stated("Live updates are server-sent events from `/api/live`.", taken) > 0


@pytest.mark.parametrize("reply, picks", [
    ("flat 45, keep it simple", True),
    ("SSE. and do the orders page too", True),
    ("is 45 enough for the big orders?", False),
    ("hmm, let me think about SSE over the weekend", False),
    ("let's park it for now, SSE or polling, not urgent", False),
])
def test_a_pick_answers_it_does_not_ask_or_put_it_off(reply, picks):
    assert S.picks(reply) is picks


@pytest.mark.parametrize("sentence, kept", [
    ("New stock holds last 45 minutes before the sweep releases them.", True),
    ("I could make it 45 minutes if you want.", False),            # hedged
    ("It now holds for 45 minutes.", False),                        # leans on the turn before
    ("We didn't go to 45 minutes for small orders.", False),        # what was turned down
    ("Should it be 45 minutes for every warehouse?", False),        # a question
])
def test_a_statement_is_plain_impersonal_and_not_negated(sentence, kept):
    assert S.is_statement(sentence) is kept


def test_a_statement_must_hold_a_number_the_user_gave():
    pick = S.echo("14 is too short, net 30 terms. 30 days", ["Tokens expire after 14 days by default."])
    assert pick["nums"] == ["14", "30"]
    assert S.stated("The token is valid for 30 days and every email carries a fresh one.", pick) == 1
    assert S.stated("The token carries the invoice id and a signature.", pick) == 0


def test_an_offer_line_kept_in_the_state_is_never_cut_inside_a_word():
    # the cursor state outlives the run: a token glued to a URL (which the redactor cannot tell apart) must
    # not be kept in part where the line is cut
    token = "ghp_" + "a1B2c3D4e5" * 4
    prose = "Either we keep polling, " + "or we call the partner callback " * 5 + "https://x.example/cb?a=1&c" + token
    [line] = S.offer_lines(prose)
    assert len(line) <= S.LINE_CHARS and "ghp_" not in line and line.endswith("…")


# -- scenarios ---------------------------------------------------------------------------------------

def test_an_option_picked_by_its_short_name_is_kept_as_the_done_report_states_it(env):
    home = env[0]
    c = chat(env, "st1")
    c.user("the dock board lags up to 15s behind, people double-book doors. push updates instead of polling")
    c.say("For the board:\n\n- **WebSockets:** two-way, but we only need server to client.\n"
          "- **Server-sent events (SSE):** one long-lived HTTP response, goes through the ingress like any call.")
    c.user("SSE. and drop the interval polling everywhere")
    edit(c, env, "board/live.ts")
    c.say("Done:\n- **Live updates are server-sent events** from `/api/live/stream`, every replica relays them.\n"
          "- The board no longer polls on an interval.")
    c.stop(home, run=True)
    [d] = decisions(home)
    assert "server-sent events" in d["text"]


def test_a_value_the_user_settles_tersely_is_kept_from_the_last_and_fullest_statement(env):
    home = env[0]
    c = chat(env, "st2")
    c.user("pickers on the big waves lose their stock before they confirm. they want 45 min. how hard is that")
    c.say("Not hard: the hold is `reservation.ttl`, 30m today. 45 minutes covers the slow orders at p95. "
          "One alternative is a per line formula, so small orders keep the short hold.")
    c.user("flat 45, keep it simple. nobody wants to explain a formula to ops")
    edit(c, env, "inventory/application.yml")
    c.say("Existing holds keep their old expiry; only new reservations get 45.")
    c.user("fine. ship")
    c.say("PR #148 is open. After the deploy, new stock holds last 45 minutes before the sweep releases them.")
    c.stop(home, run=True)
    [d] = decisions(home)
    assert "45 minutes" in d["text"] and "sweep" in d["text"]


def test_the_pick_waits_for_its_statement_across_normalizer_runs(env):
    home = env[0]
    c = chat(env, "st3")
    c.user("the export job runs at 2am and collides with the backup. move it")
    c.say("Two options: 04:30, after the backup ends, or run it on the replica at any time.")
    c.user("04:30, the replica lags too much in the morning")
    c.stop(home, run=True)          # the Stop hook fires after each reply: the pick is saved with the cursor
    assert decisions(home) == []
    edit(c, env, "jobs/schedule.yml")
    c.say("The nightly export now starts at 04:30 UTC, after the backup window.")
    c.stop(home, run=True)
    [d] = decisions(home)
    assert "04:30" in d["text"]


def test_a_reply_that_gives_its_own_value_is_stated_with_it_not_with_the_value_turned_down(env):
    home = env[0]
    c = chat(env, "st4")
    c.user("invoice links should not be valid forever")
    c.say("Signed tokens are the usual fix. Either 14 days, the default, or match the payment terms.")
    c.user("14 is too short, people pay in week 4. 30 days")
    edit(c, env, "app/models/invoice.rb")
    c.say("Summary:\n- public invoice links carry a signed token valid for 30 days, and every email has a fresh one\n"
          "- not keeping the old bare links, and not 14 days")
    c.stop(home, run=True)
    [d] = decisions(home)
    assert "30 days" in d["text"] and "14" not in d["text"]


def test_a_choice_left_open_keeps_nothing_even_when_code_changes_after(env):
    home = env[0]
    c = chat(env, "st5")
    c.user("should the board push updates? polling is 15s behind")
    c.say("Two options: server-sent events, or shorten polling to 2 seconds.")
    c.user("hmm, let me think about server-sent events over the weekend")
    edit(c, env, "board/readme.md")
    c.say("Server-sent events would go through the ingress like any other request.")
    c.stop(home, run=True)
    assert decisions(home) == []


def test_a_pick_that_no_change_follows_keeps_nothing(env):
    home = env[0]
    c = chat(env, "st6")
    c.user("where should the retry live")
    c.say("Should the retry live in the worker, or in the scheduler?")
    c.user("worker, the scheduler restarts too often")
    c.say("The worker keeps the retry count in the job row, so a restart does not lose it.")
    c.stop(home, run=True)
    assert decisions(home) == []


def test_a_fix_with_no_choice_offered_keeps_nothing(env):
    home = env[0]
    c = chat(env, "st7")
    c.user("/api/v1/orders still answers, it was supposed to be gone")
    c.say("The v1 router is still mounted in `app.py` next to v2.")
    c.user("remove it")
    edit(c, env, "app.py")
    c.say("The `/api/v1/orders` route now returns 404; v2 is unchanged.")
    c.stop(home, run=True)
    assert decisions(home) == []


@pytest.mark.parametrize("turn, asks", [
    ("we had a crash last night. how do we want to handle panics in match code", True),
    ("ok new rule for kafka topics before we add more: domain.entity.event.vN", True),
    ("time to actually send the reminder SMS. twilio or SNS?", True),
    ("dashboard errors are a mess, I need one shape. what should it be", True),
    ("we keep the refresh token in secure storage from now on", True),
    ("/api/v1/orders still answers, it was supposed to be gone", False),
    ("bump dbt to 1.8 and fix whatever breaks", False),
    ("CI keeps going red on the race test, can you actually fix it", False),
])
def test_the_user_asking_for_a_rule_is_told_from_a_bug_report_or_a_chore(turn, asks):
    assert bool(S.RULE_ASK_RE.search(turn)) is asks


def _asked(env, sid, opener):
    c = chat(env, sid)
    c.user(opener)
    c.say("The tick loop in `runMatch()` has no recover, so a panic exits the process with every match on it.")
    c.user("recover it in `runMatch()`, per match")
    edit(c, env, "sim/match.go")
    c.say("`runMatch()` now recovers a panic, logs the stack and ends only that match.")
    c.stop(env[0], run=True)
    return [d["text"] for d in decisions(env[0])]


def test_a_change_confirmed_after_the_user_asks_for_a_rule_is_kept_without_replacing_one(env):
    texts = _asked(env, "sa1", "a nil deref took the server down last night. how do we want to handle panics "
                               "in match code?")
    assert len(texts) == 1 and "recovers a panic" in texts[0], texts


def test_the_same_change_after_a_bug_report_replaces_nothing_and_is_not_kept(env):
    assert _asked(env, "sa2", "a nil deref took the server down last night, 37 matches died. can you look") == []


def _dictated(env, sid, ask):
    c = chat(env, sid)
    c.user("twilio bill was 2.3k last month, MessageBird quoted half. how hard would switching be")
    c.say("Not hard: everything sends through the `SmsClient` interface; three pieces are Twilio-specific.")
    c.user(ask)
    edit(c, env, "reminders/sms.py")
    c.say("Done: SMS now go through MessageBird (`MessageBirdSmsClient` behind the same `SmsClient` interface).")
    c.stop(env[0], run=True)
    return [d["text"] for d in decisions(env[0])]


def test_a_move_the_user_dictates_is_kept_as_the_report_after_the_edit_states_it(env):
    texts = _dictated(env, "sd1", "do it. move SMS to MessageBird, keep the interface, remove twilio completely")
    assert len(texts) == 1 and "MessageBird" in texts[0], texts


def test_a_move_whose_report_says_the_old_choice_is_removed_retires_the_rule_that_chose_it(env):
    home = env[0]
    _settled(env, "sdo", 0, "Either Twilio, with the better delivery reports, or SNS, which is cheaper.",
             "Twilio, delivery reports matter",
             "Reminder SMS are sent through Twilio (`TwilioSmsClient`), whose delivery reports update each message.")
    assert [st for st, _ in status(home)] == ["active"]
    c = chat(env, "sd3", days=20)
    c.user("do it. move SMS to MessageBird, keep the interface")
    edit(c, env, "reminders/sms.py")
    c.say("Done: SMS now go through MessageBird (`MessageBirdSmsClient` behind the same `SmsClient` interface). "
          "Twilio is removed completely (client, validator, dependency).")
    c.stop(home, run=True)
    got = dict((t, st) for st, t in status(home))
    assert [st for t, st in got.items() if "MessageBird" in t] == ["active"], got
    assert [st for t, st in got.items() if "TwilioSmsClient" in t and "MessageBird" not in t] == ["superseded"], got


def test_a_move_that_drops_the_old_choice_says_so_in_the_decision(env):
    texts = _dictated(env, "sd4", "do it. move SMS to MessageBird and remove Twilio completely")
    assert len(texts) == 1 and texts[0].endswith("(switched from Twilio)."), texts


def test_a_move_the_user_only_asks_about_keeps_nothing(env):
    assert _dictated(env, "sd2", "would it be worth it to move SMS to MessageBird?") == []


# -- a rule stated in words is retired by a later one on the same subject ---------------------------------

def _settled(env, sid, days, offer, reply, statement):
    c = chat(env, sid, days)
    c.user("next thing on the list")
    c.say(offer)
    c.user(reply)
    edit(c, env)
    c.say(statement)
    c.stop(env[0], run=True)


def status(home):
    return sorted((r["status"], r["text"]) for r in decisions(home))


def test_a_later_rule_opening_on_the_same_subject_and_setting_another_value_retires_the_earlier(env):
    home = env[0]
    _settled(env, "hd1", 0, "Either 14 days, the default, or match the payment terms.", "30 days, net 30 terms",
             "Public invoice links carry a signed token valid for 30 days.")
    _settled(env, "hd2", 12, "Two options: no expiry while unpaid, or 90 days.", "no expiry while unpaid",
             "Public invoice links now have no expiry while unpaid; they expire 14 days after payment.")
    [(s1, t1), (s2, t2)] = status(home)
    assert (s1, s2) == ("active", "superseded") and "no expiry" in t1 and "30 days" in t2


def test_a_later_rule_on_the_same_subject_that_changes_nothing_leaves_the_earlier(env):
    home = env[0]
    _settled(env, "hd3", 0, "Either 14 days, the default, or match the payment terms.", "30 days, net 30 terms",
             "Public invoice links carry a signed token valid for 30 days.")
    _settled(env, "hd4", 12, "Two options: the logo at the top, or a plain header.", "logo at the top",
             "Public invoice links show the account's logo at the top of the page.")
    assert [s for s, _ in status(home)] == ["active", "active"]
