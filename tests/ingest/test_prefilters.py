"""The cheap tests that spare extraction its expensive searches (subjects.mentions_any, the needles of
subjects.NAME_PATTERNS) never turn away a text one of those searches matches: every generated match of each
pattern passes its test."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cortex.curate.subjects import NAME_PATTERNS, mentions_any
from cortex.ingest import decisions as D
from cortex.ingest import extract as X

ASCII = st.characters(min_codepoint=0, max_codepoint=127)
CASES = [(p, X.KEYWORD_WORDS, False) for group in (X.DECISION_PATTERNS, X.REJECTION_PATTERNS, X.LEARNED_PATTERNS)
         for p, _ in group]
CASES += [(D.PROPOSAL_RE, D.PROPOSAL_WORDS, True), (D.ALT_RE, D.ALT_WORDS, True), (X.DONE_CLAIM_RE, X.DONE_WORDS, False),
          (X.LABELED_LIST_RE, X.LABELED_WORDS, False), (D.RULED_OUT_RE, D.RULED_OUT_WORDS, True)]


@pytest.mark.parametrize("pattern,words,tidied", CASES, ids=lambda c: getattr(c, "pattern", "")[:30] or None)
def test_every_match_of_a_pattern_holds_one_of_its_words(pattern, words, tidied):
    @settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern, alphabet=ASCII))
    def check(text):
        if tidied:  # these patterns are searched in tidied sentences (single spaces)
            text = D._tidy(text)
        if pattern.search(text) is None or pattern is D.ALT_RE and text[:2].lower() == "or":
            return  # (a sentence starting with "or" is searched whatever its words)
        assert mentions_any(text, words)
    check()


def test_a_text_that_is_not_ascii_is_always_searched():
    # re.IGNORECASE matches the long s and the Kelvin sign as "s" and "k": no str.lower() test for those
    assert D.PROPOSAL_RE.search("we ſhould keep it") and mentions_any("we ſhould keep it", ("should",))
    assert not mentions_any("nothing to see here", ("should",))


@pytest.mark.parametrize("pattern,needle", NAME_PATTERNS, ids=lambda c: getattr(c, "pattern", None) and c.pattern[:30])
def test_every_name_a_pattern_finds_holds_what_subjects_tests_first(pattern, needle):
    @settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern))
    def check(text):
        assert needle in text if isinstance(needle, str) else needle.search(text)
    check()
