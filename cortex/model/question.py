"""What a query asks for, read from its wording.  Pure functions.

"What did we decide about X?", "remind me what we agreed for X", "what's the rule for X again?",
"I forgot what we chose for X": a question about a settled rule.  Its answer is the decision record in
force, not the turn of some chat that shares the most words with it.  Two things follow when a query
reads that way (`cortex recall`, `cortex-prompt`):

- the words of the frame ("decide", "agreed", "remind", "again", ...) are not searched for: they name
  the question, not its subject, and every chat that agreed on anything holds them ("Right, agreed.");
- decision records (and, less, rejected ones: "we decided not to") get a bonus in the ranking
  (`DECIDED_BONUS`), so the rule in force comes before passages and progress lines about the same subject.

Measured in docs/benchmarks.md ("What did we decide about X?"), with phrasings written apart from those
of the devchats corpus.
"""
import re

# Read off the question's wording, not its subject: a verb of deciding after "we" (or after "did we",
# "what/how ... we"), a noun naming a settled thing after "what's the", or "remind me what/how".
_DECIDED_VERB = (r"(?:decide[ds]?|agree[ds]?|settle[ds]?|chose|choose|chosen|pick(?:ed)?|land(?:ed)?|"
                 r"conclude[ds]?|went|go|end(?:ed)? up)")
DECISION_QUESTION_RE = re.compile(
    r"\b(?:we|you and i)\s+(?:have\s+|had\s+|did\s+|ever\s+|finally\s+|eventually\s+|all\s+)*" + _DECIDED_VERB + r"\b"
    r"|\bdid\s+(?:we|you and i)\s+(?:ever\s+|finally\s+|eventually\s+)?(?:" + _DECIDED_VERB + r"|say)\b"
    r"|\bwhat(?:'s|\u2019s| is| was| were| are)\s+(?:the|our)\s+(?:current\s+|final\s+|agreed\s+|latest\s+|new\s+)?"
    r"(?:rules?|decisions?|polic(?:y|ies)|agreements?|conclusions?|verdict|call|consensus|outcome)\b"
    r"|\b(?:the|our)\s+(?:decision|verdict|consensus|agreed\s+\w+)\b[^.!]*\?"
    r"|\bremind\s+me\s+(?:again\s+)?(?:what|how|why|which)\b"
    r"|\bsupposed\s+to\s+(?:work|behave|do|handle)\b",
    re.IGNORECASE)

# The frame's words.  Query terms made from them are dropped in a decision question (unless nothing else
# is left): the subject is what is searched for.
FRAME_WORDS = ("decide decided decides decision decisions agree agreed agreement settle settled chose choose "
               "chosen pick picked land landed conclude concluded conclusion verdict consensus outcome call rule "
               "rules policy policies remind remember forgot forget recall again ever finally eventually end "
               "ended current currently latest final supposed went go say said set")

DECIDED_BONUS = {"decision": 0.5, "rejected": 0.2}


def asks_what_was_decided(text: str) -> bool:
    """True when the query asks about a rule settled earlier (see the module's docstring)."""
    return bool(text) and DECISION_QUESTION_RE.search(text) is not None


def read(query: str, terms: list, analyse) -> tuple:
    """(terms to search, whether the query asks what was decided): the one call recall and cortex-prompt
    make on a query and its `terms`; `analyse` is the search's analyser (store.terms.query_terms, passed in:
    this layer does not import the store)."""
    if not asks_what_was_decided(query):
        return terms, False
    return subject_terms(terms, analyse(FRAME_WORDS)), True


def subject_terms(terms: list, frame_terms) -> list:
    """The query's terms without the frame's (`frame_terms`: FRAME_WORDS analysed like a query); all of
    them when nothing else is left ("what did we decide?" searches for deciding)."""
    frame = set(frame_terms)
    kept = [t for t in terms if t not in frame]
    return kept or list(terms)


def decided_bonus(record_type: str) -> float:
    return DECIDED_BONUS.get(record_type, 0.0)
