"""cortex.model.clip.shorten: the one line cut the block, the prompt and the normalizer share."""
from cortex.model import redact
from cortex.model.clip import shorten


def test_a_short_text_is_left_alone_and_a_long_one_ends_at_a_space_within_the_limit():
    assert shorten("retry three times", 40) == "retry three times"
    s = shorten("retry the upload three times with exponential backoff, then give up and flag it", 40)
    assert len(s) <= 40 and s.endswith("…") and s == "retry the upload three times with…"


def test_shortening_twice_changes_nothing():
    # the normalizer's state keeps shortened texts across runs: a rerun must keep the same bytes
    text = "word " * 100
    once = shorten(text, 200, redact.cut)
    assert shorten(once, 200, redact.cut) == once


def test_with_no_space_past_half_the_limit_the_cut_is_the_callers():
    blob = "x" * 10 + " " + "y" * 300
    assert shorten(blob, 100) == ("x" * 10 + " " + "y" * 300)[:99] + "…"
    calls = []
    shorten(blob, 100, lambda t, n: calls.append(n) or t[:n])
    assert calls == [99]
