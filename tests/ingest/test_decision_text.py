"""Decision records that read right: the text of a decision or rejection settled in conversation.

A code name keeps its exact case when it starts the sentence ("reserve_stock() holds ...", never
"Reserve_stock() holds ...").  Each test here is a defect seen in decision texts (the developer-chat
benchmark, cortex/bench/devchats) and fails on the code before its fix.
"""
import pytest

from cortex.curate.subjects import cap_first
from cortex.ingest import decisions as D


def _run(turns):
    st = D.initial_state()
    out = []
    for i, (kind, text) in enumerate(turns):
        found, st = D.step(kind, text, st, "s:%d" % i)
        out.extend(found)
    return out


def _decisions(out, rtype="decision"):
    return [r[1] for r in out if r[0] == rtype]


@pytest.mark.parametrize("text, expect", [
    ("make it retry", "Make it retry"),
    ("don't ever bump it", "Don't ever bump it"),
    ("read-only mode stays", "Read-only mode stays"),
    ("über alles", "Über alles"),
    ("reserve_stock() holds units", "reserve_stock() holds units"),
    ("`reserve_stock()` holds units", "`reserve_stock()` holds units"),
    ("isEnabledFor() buckets merchants", "isEnabledFor() buckets merchants"),
    ("os.path.join is enough", "os.path.join is enough"),
    ("src/app.py stays small", "src/app.py stays small"),
    ("__init__.py stays empty", "__init__.py stays empty"),
    ("-k name narrows it", "-k name narrows it"),
    ("x86 builds only", "x86 builds only"),
    ("RateLimiter keys on the account", "RateLimiter keys on the account"),
])
def test_only_an_ordinary_word_is_capitalised(text, expect):
    assert cap_first(text) == expect


def test_an_identifier_that_starts_a_summing_up_keeps_its_case():
    # "Understood. This replaces the earlier rule (...). New rule: nightly_reconcile() moves to ..." gave
    # "Nightly_reconcile() moves to ..."
    said = D.summary_of("Understood. This replaces the earlier rule (nightly_reconcile() runs at 03:30 UTC). "
                        "New rule: nightly_reconcile() moves to 01:00 UTC with a hard stop at 05:00.")
    assert said.startswith("nightly_reconcile() moves to 01:00 UTC"), said
    said = D.summary_of("So, settled: reserve_stock() holds units for 30 minutes instead of 15.")
    assert said == "reserve_stock() holds units for 30 minutes instead of 15.", said


def test_an_identifier_that_starts_a_rule_or_an_agreed_option_keeps_its_case():
    out = _run([("user", "isEnabledFor() must never call random(), the UI flips between designs on refresh.")])
    assert _decisions(out) == ["isEnabledFor() must never call random(), the UI flips between designs on refresh."]
    out = _run([("assistant", "Two ways:\n\nOption A: regenerate the lockfile on every rebase.\n"
                              "Option B: package-lock.json always comes from main, then npm install.\n\n"
                              "I'd go with option B."),
                ("user", "go with option B")])
    assert _decisions(out)[0].startswith("package-lock.json always comes from main"), out


# -- the subject prefix: the rule's own subject, never a name met on the way ----------------------------

def _prefix(text):
    return text.split("`")[1] if text.startswith("For `") else None


def test_a_scratch_file_from_an_earlier_exchange_is_not_the_subject():
    out = _run([("user", "Can you check git status, I think I left something uncommitted."),
                ("assistant", "Only `billing/invoice.py` (our change) and an untracked `scratch.py`."),
                ("user", "Merchants get billed twice when the invoice run is retried. It's in the invoice run."),
                ("assistant", "I'd suggest we make the invoice run idempotent per merchant and calendar month."),
                ("user", "ok, do it")])
    [d] = _decisions(out)
    assert "scratch.py" not in d and d.startswith("Make the invoice run idempotent"), d


def test_a_command_flag_the_assistant_explained_earlier_is_not_the_subject():
    out = _run([("user", "Unrelated, but what's the command to run only the api tests again?"),
                ("assistant", "`pytest tests/api -q` runs just those; add `-k name` to narrow it down further."),
                ("user", "A single merchant's batch job slowed the public API down for everyone."),
                ("assistant", "I'd suggest we give each API key a token bucket of 20 requests per second."),
                ("user", "sounds good")])
    [d] = _decisions(out)
    assert d == "Give each API key a token bucket of 20 requests per second.", d


@pytest.mark.parametrize("remark", [
    "Tests for this live in `tests/drivers/test_shifts.py`; there are four of them.",
    "It's older code: it still uses `datetime.utcnow()` and swallows errors. I'll leave those alone.",
])
def test_a_test_file_or_a_library_call_the_assistant_mentions_is_not_the_subject(remark):
    out = _run([("user", "Drivers end the shift with parcels still in the van. What would you do?"),
                ("assistant", remark),
                ("assistant", "The least invasive fix I can see is to block closing while the van has "
                              "undelivered parcels."),
                ("user", "Why not just auto-close shifts at midnight?"),
                ("assistant", "I considered it; the problem is that parcels left in vans overnight would look "
                              "delivered. So I'd stick with my suggestion."),
                ("user", "Fair, not that then. Agreed.")])
    assert [_prefix(t) for t in _decisions(out) + _decisions(out, "rejected")] == [None, None], out


def test_the_function_the_proposing_turn_names_is_the_subject_before_the_users_file():
    out = _run([("user", "Looking at `parcelwise/address/validate.py` today. Drivers can't find flats."),
                ("assistant", "Tests for this live in `tests/address/test_validate.py`."),
                ("assistant", "My recommendation would be to keep the original string alongside the normalized "
                              "form. It keeps the change local to `normalize_address()`."),
                ("user", "Ok, let's do it, though never touch the flat or unit line.")])
    [d] = _decisions(out)
    assert d.startswith("For `normalize_address()`: Keep the original string"), d


def test_a_file_named_in_a_side_request_is_not_the_subject_of_the_summing_up():
    out = _run([("user", "Finance wants the fuel surcharge to follow diesel prices. What would you do?"),
                ("assistant", "Proposal: recompute the surcharge weekly from the published diesel index."),
                ("user", "ok, do it"),
                ("user", "Quick one: is `parcelwise/api/routes.py` still used anywhere?"),
                ("assistant", "Only its definition and one test reference it."),
                ("assistant", "Summary of the change: the fuel surcharge uses a weekly rate derived from the "
                              "diesel index.")])
    assert [_prefix(t) for t in _decisions(out)] == [None, None], out


def test_the_file_the_assistant_names_while_doing_the_agreed_change_is_the_subject():
    out = _run([("user", "A merchant's endpoint was down and their status updates vanished."),
                ("assistant", "The least invasive fix I can see is to retry failed deliveries with backoff."),
                ("user", "That works for me."),
                ("assistant", "Updating `tracking/webhooks.py`."),
                ("assistant", "So, settled: failed webhook deliveries are retried with exponential backoff.")])
    assert _prefix(_decisions(out)[-1]) == "tracking/webhooks.py", out


# -- the condition is what the user added, not the words around the agreement ---------------------------

@pytest.mark.parametrize("reply, cond", [
    ("OK, makes sense, skip it. yes, but the label-creation endpoint gets its own bucket.",
     " — but the label-creation endpoint gets its own bucket."),
    ("OK, makes sense, skip it. sounds good", "."),
])
def test_a_concession_typed_in_lower_case_is_not_the_condition(reply, cond):
    out = _run([("assistant", "I'd suggest we give each API key a token bucket of 20 requests per second."),
                ("user", "Couldn't we simply rate-limit per IP address?"),
                ("assistant", "I considered it; the problem is that merchants on one platform share its IPs and "
                              "would throttle each other. I'd still go with the first option."),
                ("user", reply)])
    assert _decisions(out) == ["Give each API key a token bucket of 20 requests per second" + cond], out
    [r] = _decisions(out, "rejected")
    assert r.startswith("Not rate-limit per IP address: merchants on one platform share its IPs"), r


@pytest.mark.parametrize("later, cond", [
    ("Actually, wait. Except hazardous goods, which stay in the caged aisle.",
     "except hazardous goods, which stay in the caged aisle"),
    ("Actually, wait. For merchants with the trusted flag we refund at the first scan.",
     "for merchants with the trusted flag we refund at the first scan"),
    ("Actually, wait. Allow a 7-day grace period with a warning header.",
     "allow a 7-day grace period with a warning header"),
    ("Actually, wait. Royal Mail handovers keep the numeric format.", "Royal Mail handovers keep the numeric format"),
    ("Actually, wait. `legacy_import()` keeps the old format.", "`legacy_import()` keeps the old format"),
])
def test_a_condition_added_later_reads_on_after_the_dash(later, cond):
    out = _run([("assistant", "One clean option: put the top 5% SKUs by weekly picks in the slots nearest the "
                              "packing benches."),
                ("user", "go with that"), ("assistant", "Implementing it."), ("user", later)])
    assert _decisions(out)[-1] == ("Put the top 5% SKUs by weekly picks in the slots nearest the packing benches — "
                                   + cond + "."), out


# -- Markdown is dropped, a code name's characters never --------------------------------------------------

@pytest.mark.parametrize("said, expect", [
    ("From now on `__init__.py` files stay empty, imports go in the modules.",
     "From now on `__init__.py` files stay empty, imports go in the modules."),
    ("Never pass **kwargs through `dispatch()`, name every argument.",
     "Never pass **kwargs through `dispatch()`, name every argument."),
    ("Never *ever* call `flush()` from the **request** thread.", "Never ever call `flush()` from the request thread."),
])
def test_a_rule_loses_its_markdown_but_keeps_its_code_names(said, expect):
    assert _decisions(_run([("user", said)])) == [expect]


def test_a_stored_text_keeps_dunder_and_star_names():
    from cortex.ingest.extract import clean_sentence
    assert clean_sentence("- **Never** pass `**kwargs` to `__init__()`; glob `src/**/*.py`", 600) == \
        "Never pass `**kwargs` to `__init__()`; glob `src/**/*.py`"


# -- a name is never cut ---------------------------------------------------------------------------------

def test_the_subject_keeps_the_dot_that_starts_its_name():
    out = _run([("user", "The `.env.example` file keeps drifting from what the app actually reads."),
                ("assistant", "I'd suggest we generate it from the settings class in CI."),
                ("user", "yes")])
    assert _decisions(out) == ["For `.env.example`: Generate it from the settings class in CI."], out
    from cortex.curate.subjects import subjects
    assert subjects("run ./scripts/deploy.sh, not `../tools/deploy.sh` or `.github/workflows/ci.yml`.") == \
        ["./scripts/deploy.sh", "../tools/deploy.sh", ".github/workflows/ci.yml"]


@pytest.mark.parametrize("proposal, expect", [
    ("How about we move the totals column of `InvoiceTable` to the right?",
     "Move the totals column of `InvoiceTable` to the right."),
    ("I'd keep the totals of `InvoiceTable` on the right, ok?", "Keep the totals of `InvoiceTable` on the right."),
    ("I'd keep quotes in `RateCache` for 10 minutes, sound good?", "Keep quotes in `RateCache` for 10 minutes."),
])
def test_the_closing_ask_goes_and_the_proposals_last_word_stays(proposal, expect):
    assert _decisions(_run([("assistant", proposal), ("user", "yes")])) == [expect]


@pytest.mark.parametrize("reply", ["👍 go ahead", "👍"])
def test_a_thumbs_up_agrees(reply):
    out = _run([("assistant", "How about we hold stock for 15 minutes when an order is created? It's a small change "
                              "in `warehouse/inventory.py`."),
                ("user", reply)])
    assert _decisions(out) == ["For `warehouse/inventory.py`: Hold stock for 15 minutes when an order is created."]


@pytest.mark.parametrize("reason, said", [
    ("It burns CPU and flips the order under the driver's feet.", "it burns CPU and flips the order"),
    ("That's how we sold the same last unit to three people.", "that's how we sold the same last unit"),
    ("Merchants saw the UI flip between two designs.", "Merchants saw the UI flip"),
    ("I've seen it double-charge twice this month.", "I've seen it double-charge"),
])
def test_the_reason_of_a_rejection_reads_on_after_the_colon(reason, said):
    out = _run([("assistant", "Proposal: re-plan a van's route in `RouteOptimizer` only when a stop is inserted."),
                ("assistant", "Or, much simpler, re-optimize on every location update. Thoughts?"),
                ("user", "Let's not. %s Your first idea is better, go with that." % reason)])
    [r] = _decisions(out, "rejected")
    assert r.startswith("For `RouteOptimizer`: Not re-optimize on every location update: " + said), r


def test_a_state_saved_before_the_exchange_existed_still_steps():
    st = dict(D.initial_state(), recent=["scratch.py"], topic=["scratch.py"])
    st.pop("exchange")
    out, st = D.step("assistant", "I'd suggest we make the invoice run idempotent per calendar month.", st, "k0")
    out, st = D.step("user", "ok, do it", st, "k1")
    assert [r[1] for r in out] == ["Make the invoice run idempotent per calendar month."]
    assert "recent" not in st and "topic" not in st


_ASKED_WHY_NOT = [("user", "Support agents search by partial phone number and it takes 20 seconds. What would you do?"),
                  ("assistant", "One clean option: search only the last 120 days by default and require at least "
                                "6 characters for partial matches."),
                  ("user", "Why not just put a trigram index on everything?"),
                  ("assistant", "I considered it; the problem is that the index would be bigger than the table and "
                                "slow every insert. So I'd stick with my suggestion.")]


@pytest.mark.parametrize("reply", ["Right, agreed. Yes, let's do that.", "Right, agreed. 👍 go ahead",
                                   "agreed, go with that", "Fair, not that then. Agreed.", "ok"])
def test_agreeing_after_the_assistant_says_why_not_turns_the_users_alternative_down(reply):
    out = _run(_ASKED_WHY_NOT + [("user", reply)])
    assert _decisions(out, "rejected") == ["Not put a trigram index on everything: the index would be bigger than "
                                           "the table and slow every insert."], out
    assert _decisions(out)[0].startswith("Search only the last 120 days"), out


@pytest.mark.parametrize("reply", ["Hmm, no. Let me think about it.", "No, I still prefer the index.",
                                   "Not sure yet, let me ask Dana."])
def test_not_agreeing_turns_nothing_down(reply):
    assert _decisions(_run(_ASKED_WHY_NOT + [("user", reply)]), "rejected") == []


@pytest.mark.parametrize("offer", ["Want me to do it?", "Want me to make that change in the same PR?",
                                   "Shall I do that now?"])
def test_an_offer_of_it_agrees_to_the_proposal_the_turn_made(offer):
    """"Want me to do it?" names no choice: the yes takes up the turn's proposal, not the offer (on the written
    corpora such offers were kept as decisions: "For `X-Elastic-Product`: Want me to do it.")."""
    out = _run([("assistant", "The official PHP client refuses any server that is not Elasticsearch. I'd replace it "
                              "with `opensearch-php`, used directly without Scout. " + offer),
                ("user", "yes")])
    [d] = _decisions(out)
    assert "opensearch-php" in d and "want me" not in d.lower() and "shall i" not in d.lower(), out


def test_an_offer_that_names_its_change_is_the_proposal():
    out = _run([("assistant", "The lockfile drifts on every install. Want me to switch it to pinned versions?"),
                ("user", "yes")])
    assert _decisions(out) == ["Switch it to pinned versions."], out


def test_an_offer_of_it_after_narration_proposes_nothing():
    out = _run([("assistant", "The dashboard is `npm install && npm run dev` in `opsboard/`, and it proxies `/api` to "
                              "the services. I only touched `settings.gradle.kts`. Want me to do it?"),
                ("user", "yes")])
    assert _decisions(out) == [], out
