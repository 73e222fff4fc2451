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
