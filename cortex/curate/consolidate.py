"""Memory that stays right: near-duplicates reinforce, later decisions retire earlier ones,
contradictions are flagged, and what nobody needs fades into the archive.

Nothing here deletes without explaining: a superseded record keeps its text and gains a
link to what replaced it; a conflict is a pair of links; only records archived *and*
untouched for `memory.prune_after_days` are removed.  Everything is computed from the
records and the given `now`, so running it twice changes nothing the second time.
"""
import json
import math
import os
import re
import time

from cortex.model.decay import effective_confidence, elapsed_days, settings
from cortex.store.index import connect, iso_to_epoch, record_sessions

PROBE_IDS = 256        # records of this run looked at, at most, per candidate (past the rarest term's)
PROBE_POSTINGS = 4096  # index postings read, at most, per candidate record (past the rarest term's)
REPLACED_VALUE_RE = re.compile(r"\b(?:instead\s+of|rather\s+than|not|from|scratch\s+the|forget\s+what\s+we\s+said\s+"
                               r"about)\s+[^.,;:]{0,40}", re.I)
CHANGE_MIN_SCORE = 0.4  # a confirmed change replaces an earlier rule this close (`_amend_score`: 0.3 of it when
                        # both set numbers, the rest wording apart from the name)
MANY_NAMES = 4  # a decision naming more code than this is a report on several things (_subject_targets)
AMEND_PROBE = 32       # earlier rules an amendment compares, at most, among those naming its subject otherwise
MERGEABLE = {"decision", "rejected", "learned", "gotcha", "fix", "preference", "todo"}
# One record per session, so the normalizer never merges them; `cortex consolidate` groups identical or
# near-identical ones (three sessions that each asked "run the test suite and fix failures") and keeps the
# newest, since it says where the work stands now.  Compared on their text alone.
LATEST_WINS = {"progress", "summary"}

# a named choice reported gone: "Twilio is removed completely", "Detox is gone: `e2e/`, `.detoxrc.js` ...",
# "`topicPrefix` is removed" (a name: capitalised or in backticks; "it is gone", "this was dropped" name nothing)
GONE_RE = re.compile(r"(?<![\w.`-])(?!(?:it|this|that|these|those|everything|nothing|all|which|what|the|there|one)\b)"
                     r"(?P<old>(?-i:[A-Z])[\w.+#-]*[A-Za-z0-9+#]|`[^`\n]{2,40}`)\s+(?:is|are|was|were|has\s+been|have\s+been)"
                     r"\s+(?:now\s+|also\s+|fully\s+)?(?:removed|dropped|deleted|gone|retired|ripped\s+out)\b", re.I)
SWITCH_PATTERNS = [
    re.compile(r"\b(?:switch(?:ed|ing)?|mov(?:ed|ing)|migrat(?:ed|ing)|chang(?:ed|ing)|went)\s+"
               r"(?:(?P<subject>(?:[^.;:,]|\.(?=\w)){1,60}?)\s+)?(?:back\s+)?from\s+"
               r"(?P<old>(?:[^.;:]|\.(?=\w)){1,60}?)\s+to\s+(?P<new>(?:[^.,;:]|\.(?=\w)){1,60})", re.I),
    re.compile(r"\breplac(?:ed|ing|e)\s+(?P<old>(?:[^.;:]|\.(?=\w)){1,60}?)\s+(?:with|by)\s+(?P<new>(?:[^.,;:]|\.(?=\w)){1,60})", re.I),
    re.compile(r"\b(?:no longer|stop(?:ped)?|don't|do not)\s+us(?:e|ing)\s+(?P<old>(?:[^.,;:]|\.(?=\w)){1,60}?)"
               r"(?=\s+(?:because|since|and|anymore|in favou?r of)\b|[.,;:]|$)", re.I),
    re.compile(r"\bdropp(?:ed|ing)\s+(?P<old>(?:[^.,;:]|\.(?=\w)){1,60}?)\s+(?:in favou?r of|for)\s+(?P<new>(?:[^.,;:]|\.(?=\w)){1,60})", re.I),
    re.compile(r"\b(?:switched|moved)\s+(?:away\s+)?from\s+(?P<old>(?:[^.,;:()]|\.(?=\w)){1,60}?)\s*(?=\)|[.,;:]|$)", re.I),
    GONE_RE,
    re.compile(r"\b(?:instead of|rather than)\s+(?P<old>(?:[^.,;:]|\.(?=\w)){1,40}?)(?=\s+(?:because|since|as|for)\b|[.,;:]|$)", re.I),
]
# A rule that says it updates an earlier one on its subject ("amendment to the `retry_upload()` rule",
# "this replaces the earlier rule", "instead of the earlier 3 attempts", "from now on", "we no longer ...").
AMEND_RE = re.compile(
    r"\b(?:amend(?:s|ed|ing|ment)?|supersed(?:e|es|ed|ing)|overrid(?:e|es|ing)|overrode|"
    r"replac(?:e|es|ed|ing)\s+(?:the\s+|our\s+|my\s+)?(?:earlier|old|previous|original|existing|current|former|prior)|"
    r"replac(?:e|es|ed|ing)\s+(?:the\s+|our\s+)?(?:\S+\s+){0,3}?(?:rule|decision|policy|convention|agreement)|"
    r"instead\s+of\s+(?:the\s+)?(?:earlier|old|previous|original|former|prior)|"
    r"(?:earlier|old|previous|original|former|prior)\s+(?:rule|decision|policy|agreement)\s+(?:is|was)\s+(?:gone|dropped|replaced|void|obsolete)|"
    r"no\s+longer|from\s+now\s+on|going\s+forward|(?:new|updated|revised|changed|amended)\s+rule|"
    r"rule\s+change|chang(?:e|es|ed|ing)\s+the\s+rule|updat(?:e|es|ed|ing)\s+(?:to\s+)?the\s+rule)\b", re.I)
# a rule that returns to an earlier choice: "back to AsyncStorage", "reverted the stores to AsyncStorage"
BACK_TO_RE = re.compile(r"\b(?:(?:go(?:es|ing)?|went|switch(?:ed|ing)?|mov(?:e|ed|ing))\s+back\s+to|^back\s+to|"
                        r"revert(?:s|ed|ing)?\s+(?:[\w`.-]+\s+){0,4}?to)\s+(?:the\s+)?(?P<x>`[^`]{2,60}`|[\w.+#-]{3,40})",
                        re.I | re.M)
# a rule that says which value it replaced: "(was 12 hours)", "— was 24", "up from 4", "shortened from 15",
# "from 3 hours to 90 minutes", "instead of 14", "rather than 14", "90 s initially", "their old 15-minute timer"
_QTY = r"(\d+(?:[.:]\d+)?)\s*-?\s*(%|[A-Za-z]+)?"
WAS_VALUE_RE = re.compile(r"\(\s*was\s+" + _QTY + r"|[—–-]\s*was\s+" + _QTY + r"|\bwas\s+previously\s+" + _QTY +
                          r"|\b(?:up|down|raised|lowered|increased|reduced|shortened|extended|changed|moved|bumped|cut)"
                          r"\s+from\s+" + _QTY + r"|\bfrom\s+" + _QTY + r"\s+to\s+\d|\b(?:instead\s+of|rather\s+than)\s+"
                          r"(?:the\s+)?" + _QTY + r"|\b(?:initially|originally|formerly)\s+" + _QTY +
                          r"|(?<![\w.])" + _QTY + r"\s+(?:initially|originally|at\s+first)\b"
                          r"|\b(?:old|previous|former)\s+" + _QTY, re.I)
QTY_RE = re.compile(r"(?<![\w.])" + _QTY)
UNIT_OF = dict([(u, "s") for u in ("s", "sec", "secs", "second", "seconds")] +
               [(u, "min") for u in ("m", "min", "mins", "minute", "minutes")] +
               [(u, "h") for u in ("h", "hr", "hrs", "hour", "hours")] + [(u, "d") for u in ("d", "day", "days")] +
               [(u, "w") for u in ("w", "week", "weeks")] + [(u, "mo") for u in ("month", "months")] +
               [(u, "y") for u in ("y", "year", "years")] + [(u, "%") for u in ("%", "percent")] +
               [(u, u) for u in ("ms", "kb", "mb", "gb", "tb", "rps", "rpm", "hz")])
DOC_TWIN_HELD = 0.6  # ... folded only when the section holds this share of the chat's statement's index terms
DOC_TWIN_DICE = 0.45  # a session's own statement of the rule it wrote into a document: folded into the section
WAS_MIN_SHARED = 3  # words besides units and the value a rule shares with the one that says it replaced its value
STATES_NOW_RE = re.compile(r"(?<!right\s)(?<!for\s)(?<!until\s)(?<!till\s)\bnow\b", re.I)
WEAK_AMEND_RE = re.compile(r"\b(?:no\s+longer|from\s+now\s+on|going\s+forward)\b", re.I)
# a number, also one a unit follows in code ("2.minutes", "60.days", "3.seconds")
# a time of day ("03:30") and a number with thousands separators ("10,000") are one value each
NUMBER_RE = re.compile(r"(?<![\w.:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])|(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w]|[.,]\d)|"
                       r"(?<![\w.:,])\d+(?:\.\d+)?(?![\w:]|[.,]\d)")
# a name set to a value in code ("FREE_CANCEL_WINDOW = 2.minutes", "maximumPoolSize = 20"): two rules that set
# the same name to different values say different things, however differently the rest is worded
ASSIGN_RE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_])\s*(?:=|:=)\s*([^\s,;`)]+)")
# ... and a setting written in backticks the way config files write it (`dispatch.same-day-cutoff: "15:30"`)
SETTING_RE = re.compile(r"`([A-Za-z_][\w.-]*\w)\s*(?::=|=(?!=)|:(?=\s))\s*[\"']?([^`\"'\s,;)]+)")
COMPOUND_NAME_RE = re.compile(r"[._-]|[a-z][A-Z]")  # `dispatch.same-day-cutoff`, `maxPoolSize`; not `timeout`
# the kinds of value a setting holds, each with how a text states one: a rule that names the setting and states
# another value of its kind ("pinned to 2023-10-16", for `Stripe.api_version = "2024-06-20"`) says another thing
VALUE_KINDS = (("time", re.compile(r"(?<![\w.:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])")),
               ("date", re.compile(r"(?<![\w.-])\d{4}-\d{2}-\d{2}(?![\w-])")),
               ("version", re.compile(r"(?<![\w.])v?\d+(?:\.\d+){2,}(?![\w.])")))
POLARITY = ("always", "never", "only", "except", "unless", "not", "no", "don't", "without", "must", "allow",
            "forbid", "reject", "accept", "skip", "keep", "drop", "ours", "theirs", "before", "after")
POLARITY_RE = re.compile(r"\b(?:%s)\b" % "|".join(re.escape(w) for w in POLARITY), re.I)
REJECTED_SUBJECT = [
    re.compile(r"\b(?:rejected|ruled out|abandoned|dropped|decided against|gave up on|avoid)\s+(?P<x>[^.,;:—–-]{1,60}?)"
               r"(?=\s+(?:because|since|as|for|due|—|–|-)\b|[.,;:—–]|\s-\s|$)", re.I),
    re.compile(r"^(?P<x>(?:[^.,;:]|\.(?=\w)){1,60}?)\s+(?:won't|will not|doesn't|does not|can't|cannot|didn't|did not)\s+work", re.I),
    re.compile(r"^(?:not|never)\s+(?:use\s+)?(?P<x>[^.,;:—–]{1,60}?)(?=\s+(?:because|since)\b|[.,;:—–]|\s-\s|$)", re.I),
    re.compile(r"^(?P<x>[^.,;:—–]{1,60}?)(?=\s+(?:because|since)\b|\s+[—–-]\s|[:;])", re.I),
]


def terms(text: str) -> frozenset:
    from cortex.store.terms import tokenize
    return frozenset(tokenize(text))


# Types whose `files` are the context they were settled in (what the exchange read or changed), not what they
# say: the same rule stated in two sessions that read other files is still the same rule.
FILES_ARE_CONTEXT = ("decision", "rejected")


def record_terms(rtype: str, text: str, files=()) -> frozenset:
    """What near-duplicates are compared on: the type, the text and, where they are part of what the record
    says (a fix's changed files), its files."""
    return terms("%s %s %s" % (rtype, text, "" if rtype in FILES_ARE_CONTEXT else " ".join(files or ())))


# a label before what a rule is about ("Rule: same-day cutoff is 14:00", "For `orders`: use ULID ...")
LABEL_RE = re.compile(r"^\s*(?:(?:rule|decision|decided|agreed|policy|convention|summary)\s*:|for\s+`[^`]+`\s*:)\s*",
                      re.I)
HEAD_TERMS = 2  # opening words (index terms) two rules must share to be about the same thing in words


def opening_terms(text: str) -> list:
    """The index terms a text opens with, in order, up to its first verb-like break (":" or "("): what a
    rule stated in words is about ("Public invoice links", "Staff sessions")."""
    from cortex.store.terms import tokenize
    text = LABEL_RE.sub("", text, 1)
    return tokenize(re.split(r"[:(;]", re.sub(r"[*`_]", "", text), 1)[0])[:4]


def settings_written(text: str) -> list:
    """The settings a text gives a value, [(key as written, value)]: code assignments (`maximumPoolSize = 20`)
    and config lines in backticks (`dispatch.same-day-cutoff: "15:30"`)."""
    return [(key, value.strip("\"'")) for key, value in SETTING_RE.findall(text) + ASSIGN_RE.findall(text)]


def setting_values(text: str) -> dict:
    """{key (lower case): its first value} of `settings_written`: the same setting however its key is cased."""
    out = {}
    for key, value in settings_written(text):
        out.setdefault(key.lower(), value)
    return out


def value_kind(value: str):
    """(kind, pattern) of a setting's value: a time of day, a date, a version, or a number (with a unit or not,
    "30m", "60.days", "20"); None for a name."""
    for kind, pat in VALUE_KINDS:
        if pat.fullmatch(value):
            return kind, pat
    if re.fullmatch(r"\d+(?:\.\d+)?(?:\.?[A-Za-z]+)?", value):
        return "number", NUMBER_RE
    return None


def sets_otherwise(key: str, value: str, text: str) -> bool:
    """Whether a rule gives setting `key` (lower case) another value than `value`: it sets the key to something
    else, or names the key and states a value of the same kind that is not this one ("pinned to 2023-10-16 ...
    `Stripe.api_version`" for 2024-06-20; a number without its unit, "30m" states 30)."""
    theirs = setting_values(text)
    if key in theirs:
        return theirs[key].lower() != value.lower()
    kind = value_kind(value)
    if not kind or key not in text.lower():
        return False
    said = re.match(r"\d+(?:\.\d+)?", value).group(0) if kind[0] == "number" else value
    stated = set(kind[1].findall(text))
    return bool(stated) and said not in stated


def replaced_values(text: str) -> list:
    """[(number, unit)] a rule says it replaced ("now 8 hours ..., up from 4" -> [("4", "h")]): a bare number
    takes the unit of the value stated just before it; the unit is "" when there is none."""
    out = []
    for m in WAS_VALUE_RE.finditer(text):
        g = m.groups()
        num, unit = next((g[i], g[i + 1]) for i in range(0, len(g), 2) if g[i])
        unit = UNIT_OF.get((unit or "").lower(), "")
        if not unit:
            before = [UNIT_OF.get((u or "").lower(), "") for _, u in QTY_RE.findall(text[:m.start()])]
            unit = next((u for u in reversed(before) if u), "")
        out.append((num, unit))
    return out


def states_value(text: str, num: str, unit: str) -> bool:
    """Whether a text states `num` in `unit` ("12 hours", "12h"; any number when the unit is "")."""
    for m in re.finditer(r"(?<![\w.])%s(?![\d.:]\d)\s*-?\s*(%%|[A-Za-z]+)?" % re.escape(num), text):
        if not unit or UNIT_OF.get((m.group(1) or "").lower(), "") == unit:
            return True
    return False


QTY_CONTEXT = 6     # index terms before a quantity that say what it measures ("the cart hold is now" 10 minutes)
QTY_MIN_SHARED = 2  # of those two quantities must share to measure the same thing
DURATIONS = frozenset("s min h d w mo y".split())


def stated_values(text: str) -> list:
    """The numbers a text states, less those it says it replaced (WAS_VALUE_RE, as `replaced_values` reads
    them): "180 s after boot; Timeout history: 90 s initially" states 180, so it can replace a rule that says
    90 seconds."""
    return NUMBER_RE.findall(WAS_VALUE_RE.sub(" ", text))


def quantities(text: str) -> list:
    """[(number, unit, context)] of the quantities a text states with a unit: a duration, a size, a percentage
    or a count of something named ("16 slots"); `unit` is "duration" for any duration (90 days and 2 years
    measure the same kind of thing), `context` the index terms just before it, units left out."""
    from cortex.store.terms import tokenize
    out = []
    for m in QTY_RE.finditer(text):
        num, raw = m.group(1), (m.group(2) or "").lower()
        if ":" in num:
            continue  # a time of day ("03:30 UTC") is when, not how much
        # a unit, or a word naming what is counted ("16 slots"; a stopword, "5 and", names nothing)
        unit = UNIT_OF.get(raw) or (raw if raw.isalpha() and len(raw) > 2 and terms(raw) else "")
        if not unit:
            continue
        unit = "duration" if unit in DURATIONS else unit
        before = [t for t in tokenize(text[max(0, m.start() - 120):m.start()]) if t not in UNIT_TERMS
                  and not t[:1].isdigit()]
        out.append((num, unit, frozenset(before[-QTY_CONTEXT:])))
    return out


def _statement_of(text: str) -> str:
    """A rule's first sentence: what it states, before the details and the history that may follow."""
    return re.split(r"(?<=[.!?;])\s+(?=[A-Z`(])", text, maxsplit=1)[0]


DOC_LEAD_RE = re.compile(r"^(?:(?P<heading>[^\n`]{1,120}) )?\(?`(?P<path>[^`\n]+)`\)?: ")


def doc_section(rec: dict):
    """(document, heading) of the section a record states (doc_rules.rule_text: "Money (`docs/conventions.md`):
    ..."), when it was read from the project's documents (a provenance layer "doc"), else None."""
    prov = rec.get("provenance") or []
    if not any(p.get("layer") == "doc" for p in ([prov] if isinstance(prov, dict) else prov)):
        return None
    m = DOC_LEAD_RE.match(rec.get("text") or "")
    return (m.group("path"), (m.group("heading") or "").strip().lower()) if m else None


def _other_section(mine, theirs) -> bool:
    return bool(theirs) and theirs[0] == mine[0] and theirs[1] != mine[1]


def dice(a: frozenset, b: frozenset) -> float:
    return 2.0 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


def switch_subject(text: str):
    """(old subject, new subject or None) when a decision says it replaces something."""
    old, new, _ = switch_parts(text)
    return old, new


def switch_parts(text: str):
    """(old, new or None, what was switched or None): "switched the public API from REST to GraphQL"
    gives (REST, GraphQL, the public API)."""
    return _switch(text)[:3]


def _switch(text: str):
    """switch_parts, and whether only "instead of X" / "rather than X" says it (X may then be a value or
    a course of action as well as a tool: "monthly instead of weekly", "serve the last price rather than
    wait")."""
    for i, pat in enumerate(SWITCH_PATTERNS):
        m = pat.search(text)
        if m:
            g = m.groupdict()
            return (m.group("old").strip(), (g.get("new") or "").strip() or None,
                    (g.get("subject") or "").strip() or None, i == len(SWITCH_PATTERNS) - 1)
    return None, None, None, False


def values(text: str) -> frozenset:
    """What a rule sets, as far as words tell: its numbers and its polarity words (always, never, only,
    except, ...).  Two rules on one subject that differ here say different things."""
    return frozenset(NUMBER_RE.findall(text)) | frozenset(w.lower() for w in POLARITY_RE.findall(text))


EDIT_MIN_SHARED = 2  # words an earlier rule shares with the rest of a line whose value an edit replaced
# ... one of them not a unit's, which any two durations share ("timedelta(hours=30)" and "12 hours idle (`timedelta(
# hours=12)`) ... the 30-day remember-me" are not about one thing)
UNIT_TERMS = terms("ms millisecond milliseconds second seconds minute minutes hour hours day days week weeks month "
                   "months year years timedelta duration time kb mb gb bytes percent")
NAME_TOKEN_RE = re.compile(r"[A-Za-z_][\w.-]*\w")


def _states(text: str, nums: frozenset, line: str) -> bool:
    """Whether a rule states each of `nums` as the edited line does: with the word that follows it there
    ("5 MB" for "smaller than 5 MB"; a rule's "5 reminders" is not the new limit), or alone when none does."""
    have = values(text)
    for n in nums:
        if n not in have:
            return False
        unit = re.search(r"(?<![\w.])%s\s*([A-Za-z%%]+)" % re.escape(n), line or "")
        if unit and not re.search(r"(?<![\w.])%s\s*%s" % (re.escape(n), re.escape(unit.group(1))), text, re.I):
            return False
    return True


def _edit_values(tokens) -> tuple:
    """(numbers, names) among the words an edit replaced or put in: "30m" and "30" are 30; a name of three
    letters or more is itself ("mmkvStorage")."""
    nums, names = set(), set()
    for t in tokens or ():
        found = re.findall(r"\d+(?:[.:]\d+)?", t)
        if found:
            nums.update(found)
        elif len(t) > 2:
            names.add(t.lower())
    return frozenset(nums), frozenset(names)


CHOICE_HEAD_WORDS = 15  # a rule that chose X names it in its first words, or more than once


def _chooses(old: str, old_t: frozenset, text: str) -> bool:
    """Whether a rule is about X, the choice a switch moves away from, rather than naming it in passing."""
    head = " ".join(text.split()[:CHOICE_HEAD_WORDS])
    return old_t <= terms(head) or len(re.findall(re.escape(old), text, re.I)) >= 2


def reports_on_many(text: str, idents=None) -> bool:
    """Whether a decision names more than MANY_NAMES pieces of code: a report of work on several things."""
    if idents is None:
        from cortex.curate.subjects import subjects
        idents = subjects(text)
    return len(set(idents)) > MANY_NAMES


def says_it_updates(text: str) -> bool:
    return bool(AMEND_RE.search(text))


def rejected_subject(text: str):
    text = re.sub(r"^For\s+`[^`]+`:\s+", "", text.strip())  # the subject prefix of a conversation record
    for pat in REJECTED_SUBJECT:
        m = pat.search(text.strip())
        if m and m.group("x").strip():
            return m.group("x").strip()
    return None


class Consolidator:
    """Used by the normalizer while it writes a session's candidates."""

    def __init__(self, home, store, cfg):
        self.home, self.store, self.cfg = home, store, cfg
        self.mem = settings(cfg)
        self.fresh = {}   # (scope_id, type) -> {id: terms}, records written or seen in this run
        self.fresh_postings = {}  # (scope_id, type) -> {term: set of ids}: the same records by term
        self.fresh_files = {}  # (scope_id, type) -> {id: (files, text)}: the same records' files
        self._reader = None

    def _con(self):
        """The index, read-only, opened once for the run: opening it cost more than the lookups made through it
        (470 opens for 55 sessions).  Each query still sees what the run's writer has committed."""
        if self._reader is None:
            if not os.path.exists(self.home.index_db):
                return None
            self._reader = connect(self.home.index_db, readonly=True)
        return self._reader

    def close(self):
        """Let go of the index (the run closes its writer, or replaces a corrupt index)."""
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()

    def _probe_terms(self, n_terms: int, present, frequency) -> list:
        """The terms to look neighbours up by: the rarest ones, as many as a record at `link_threshold`
        (Dice) must share at least one of.  Dice >= d needs an overlap of at least d/(2-d) of this record's
        `n_terms` terms, all among the terms `present` in the other records, so any
        |present| - ceil(d/(2-d) n_terms) + 1 of those hold one (issue #18, defect 22)."""
        d = min(self.mem["link_threshold"], self.mem["merge_threshold"])
        need = max(int(math.ceil(d / (2 - d) * n_terms - 1e-9)), 1)
        return sorted(present, key=lambda t: (frequency(t), t))[:max(len(present) - need + 1, 0)]

    def _neighbours(self, scope_id, rtype, toks):
        """Active records of the same scope and type that share terms: {id: terms}.  The cost is flat in the
        size of the home and of the run: records written in this run are looked up through an in-memory term
        index by the rarest terms (about PROBE_IDS records), the index's records through the postings of the
        rarest terms (about PROBE_POSTINGS), scored by BM25 and the best ten kept."""
        from cortex.store.index import bm25_scores
        fresh = self.fresh.get((scope_id, rtype), {})
        out = {}
        if fresh:
            postings = self.fresh_postings.get((scope_id, rtype), {})
            seen = set()
            present = [t for t in toks if postings.get(t)]
            for t in self._probe_terms(len(toks), present, lambda t: len(postings[t])):
                if seen and len(seen) + len(postings[t]) > PROBE_IDS:
                    break  # the rarest terms' records only: a near-duplicate shares them
                seen.update(postings[t])
            out = {rid: fresh[rid] for rid in seen if rid in fresh}
        con = self._con()
        if con is None:
            return out
        qs = sorted(toks)
        df = dict(con.execute("SELECT term, df FROM terms WHERE term IN (%s)" % ",".join("?" * len(qs)), qs)) \
            if qs else {}
        probe, budget = [], PROBE_POSTINGS
        for t in self._probe_terms(len(toks), [t for t in toks if df.get(t)], lambda t: df[t]):
            if probe and df[t] > budget:
                break
            probe.append(t)
            budget -= df[t]
        if not probe:
            return out
        scores = bm25_scores(con, probe)
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:PROBE_IDS]
        rows = {}
        for i in range(0, len(ranked), 500):
            part = [rid for rid, _ in ranked[i:i + 500]]
            rows.update((r[0], r[1:]) for r in con.execute(
                "SELECT id, type, text, files FROM records WHERE id IN (%s) AND scope_id=? AND type=? AND "
                "status='active'" % ",".join("?" * len(part)), part + [scope_id, rtype]))
        kept = 0
        for rid, _ in ranked:
            if kept >= 10:
                break
            row = rows.get(rid)
            if row is None:
                continue
            kept += 1
            if rid not in out:
                out[rid] = record_terms(row[0], row[1], json.loads(row[2] or "[]"))
        return out

    def place(self, cand: dict):
        """(id to merge into or None, ids to link) for a candidate about to be written."""
        if cand["type"] not in MERGEABLE or cand.get("key"):
            return None, []
        toks = record_terms(cand["type"], cand["text"], cand.get("files"))
        best_id, best, related = None, 0.0, []
        for rid, other in sorted(self._neighbours(cand["scope_id"], cand["type"], toks).items()):
            sim = dice(toks, other)
            if sim > best:
                best_id, best = rid, sim
            if sim >= self.mem["link_threshold"]:
                related.append(rid)
        if best >= self.mem["merge_threshold"] and not self._sets_other_numbers(cand, best_id):
            return best_id, []
        return None, related

    def _sets_other_numbers(self, cand, rid) -> bool:
        """"retry 3 times" and "retry 5 times" are worded alike but say different things: not merged."""
        mine = frozenset(NUMBER_RE.findall(cand["text"]))
        other = self.store.get(rid) if rid else None
        return other is not None and mine != frozenset(NUMBER_RE.findall(other.get("text") or ""))

    def written(self, rec: dict):
        key = (rec["scope_id"], rec["type"])
        toks = record_terms(rec["type"], rec["text"], rec.get("files"))
        self.fresh.setdefault(key, {})[rec["id"]] = toks
        self.fresh_files.setdefault(key, {})[rec["id"]] = (list(rec.get("files") or ()), rec["text"])
        postings = self.fresh_postings.setdefault(key, {})
        for t in toks:  # a record rewritten with other words keeps its old entries: one more candidate, no harm
            postings.setdefault(t, set()).add(rec["id"])

    def link_back(self, rec: dict):
        """Make `related` links symmetric."""
        for rid in rec.get("related") or ():
            self.store.update(rid, lambda r, me=rec["id"]: _add_link(r, "related", me))

    def _subject_matches(self, scope_id, rtype, subject_terms, exclude, at_least=None):
        """Active records of that scope and type containing every subject term (`at_least` of them, when
        given: any pair of the words before a quantity, `_quantity_targets`)."""
        if not subject_terms:
            return []
        need = min(at_least or len(subject_terms), len(subject_terms))
        found = set()
        for rid, toks in self.fresh.get((scope_id, rtype), {}).items():
            if len(subject_terms & toks) >= need:
                found.add(rid)
        con = self._con()
        if con is not None and need < len(subject_terms):
            qs = sorted(subject_terms)
            found.update(rid for (rid,) in con.execute(
                "SELECT p.id FROM postings p JOIN records r ON r.id=p.id WHERE p.term IN (%s) AND r.scope_id=? "
                "AND r.type=? AND r.status='active' GROUP BY p.id HAVING COUNT(DISTINCT p.term)>=?"
                % ",".join("?" * len(qs)), qs + [scope_id, rtype, need]))
        elif con is not None:
            qs = sorted(subject_terms)
            df = dict(con.execute("SELECT term, df FROM terms WHERE term IN (%s)" % ",".join("?" * len(qs)), qs))
            # looked up by the rarest term (subject words such as "stock" are common), the rest checked
            first, *rest = sorted(qs, key=lambda t: (df.get(t, 0), t))
            rows = con.execute("SELECT p.id FROM postings p JOIN records r ON r.id=p.id WHERE p.term=? AND "
                               "r.scope_id=? AND r.type=? AND r.status='active'", (first, scope_id, rtype))
            ids = sorted({rid for (rid,) in rows.fetchall()})
            for i in range(0, len(ids), 500):
                part = ids[i:i + 500]
                if not rest:
                    found.update(part)
                    continue
                found.update(rid for (rid,) in con.execute(
                    "SELECT id FROM postings WHERE id IN (%s) AND term IN (%s) GROUP BY id HAVING COUNT(DISTINCT "
                    "term)=?" % (",".join("?" * len(part)), ",".join("?" * len(rest))), part + rest + [len(rest)]))
        return sorted(found - {exclude})

    def supersede(self, rec: dict, replacing: list = None, also=()) -> list:
        """Earlier active decisions this one replaces become superseded (linked both ways):
        - a switch away from X ("switched [the public API] from X to Y", "replaced X with Y", "no longer
          use X", "Y instead of X") retires the earlier decisions that mention X (and, when the switch
          names what was switched, that subject too);
        - a rule on a subject (a code identifier it names) retires the earlier rule on that subject it
          updates: any earlier one close in wording when it says so ("amendment to", "replaces the
          earlier rule", "from now on", "we no longer", ...), otherwise the earlier ones worded alike
          (`memory.link_threshold`) that set different values (numbers, always/never/only/except...);
        - a rule that says it updates one also finds the earlier rule on its subject through the subject's
          words (`reserve_stock()` ~ "stock reservation") or a file both were settled over or name; such a
          rule must be close enough in wording (`memory.amend_min_similarity`), and one that names another
          function must be worded alike (`memory.link_threshold`).
        Only decisions of the same scope are looked at.  A confirmed change retires `replacing`, what
        `changed_targets` found for it before it was stored (it is stored only when that finds a rule); a
        section of a document retires `also` besides, the earlier statements of that section (`doc_targets`)."""
        if rec["type"] != "decision" or rec.get("status") != "active":
            return []
        if replacing:
            mine = [rid for rid in replacing if rid != rec["id"]]
        else:
            mine = self._subject_targets(rec)
            if not mine and STATES_NOW_RE.search(rec["text"]) and not reports_on_many(rec["text"]):
                # a rule that says how its code behaves now ("The free cancellation window is now 3 minutes
                # (`FREE_CANCEL_WINDOW = 3.minutes`)") is a change, whichever way it was settled
                mine = [rid for rid in self.changed_targets(rec) if rid != rec["id"]]
            if not mine:
                mine = self._head_targets(rec)
            mine = sorted(set(mine) | set(self._setting_targets(rec)))
            doc = doc_section(rec)
            if doc:
                # a section of a document replaces its own earlier statement, not the other sections of that
                # document, which share its file and many of its words
                mine = [rid for rid in mine if not _other_section(doc, doc_section(self.store.get(rid) or {}))]
        retired = sorted(set(self._switch_targets(rec) + self._back_targets(rec) + self._was_targets(rec) + mine +
                             self._quantity_targets(rec) + list(also)) - {rec["id"]})
        for rid in retired:
            self.store.update(rid, lambda r, me=rec["id"]: _retire(r, me))
        retired += self._retired_with(retired, rec["id"])
        if retired:
            self.store.update(rec["id"], lambda r: any([_add_link(r, "supersedes", x) for x in retired]))
        return retired

    def _retired_with(self, retired: list, by: str) -> list:
        """What no longer holds once these decisions are retired, among the records linked to them as related:
        the options a decision passed over (layer "options": "Not Grover (went with wicked_pdf)" no longer holds
        once wicked_pdf is replaced), and the same session's other statement of the rule (a document section
        and the chat's statement it holds part of, `link_companions`)."""
        gone = []
        for rid in retired:
            me = self.store.get(rid) or {}
            mine_doc = any(p.get("layer") == "doc" for p in me.get("provenance") or ())
            for oid in me.get("related") or ():
                other = self.store.get(oid)
                if not other or other.get("status") != "active" or oid == by or oid in retired or oid in gone:
                    continue
                layers = {p.get("layer") for p in other.get("provenance") or ()}
                passed_over = other["type"] == "rejected" and "options" in layers
                companion = (other["type"] == "decision" and ("doc" in layers) != mine_doc
                             and bool(set(record_sessions(me)) & set(record_sessions(other))))
                if passed_over or companion:
                    self.store.update(oid, lambda r, b=by: _retire(r, b))
                    gone.append(oid)
        return gone

    def changed_targets(self, rec: dict) -> list:
        """The earlier rule a confirmed change replaces (decisions.py, kind "changed"), or []: an active decision
        of the scope on a code name the change names (not a file), each of the two setting a value the other
        does not (numbers, always/never/only/...: one replaced by another), the closest in wording apart from
        the name (`_amend_score` at least CHANGE_MIN_SCORE).  "`reserve_stock()` now holds units for 30
        minutes" replaces "`reserve_stock()` holds units for 15 minutes, then releases them"; "`reserve_stock()`
        now has type hints" replaces nothing, and is then not kept.  A change that says it moves away from
        a named choice ("switched from OneSignal to FCM") replaces the rules that chose it (`_switch_targets`)."""
        from cortex.curate.subjects import is_path, subject_terms, subjects
        # a change away from a named choice ("... (switched from OneSignal to FCM)") replaces the rules that
        # chose it, as any switch does
        switched = self._switch_targets(dict(rec, id=rec.get("id"))) if _switch(rec["text"])[0] else []
        idents = [i for i in subjects(rec["text"]) if not is_path(i)]
        # what the change sets; a value it says it replaces ("instead of 15 minutes") is the old rule's
        mine = values(REPLACED_VALUE_RE.sub(" ", rec["text"]))
        if not idents or not mine:
            return switched
        subject_t = frozenset(t for ident in idents for t in terms(ident))
        scored = {}
        # the code the change is about is the first it names ("The `snowflake` pool has 16 slots ...
        # `finance_close` keeps its priority weight" changes the pool, not what finance_close's rules say)
        # ... found by its name, or by its words when the rule says them apart ("`SENSOR_TIMEOUT` is 90
        # minutes" changes "one `SFTPSensor` per store, `timeout` 3 hours")
        said_old = values(" ".join(m.group(0) for m in REPLACED_VALUE_RE.finditer(rec["text"])))
        for ident in idents[:1]:
            found = set(self._subject_matches(rec["scope_id"], "decision", subject_terms(ident), rec.get("id")))
            if said_old - {"not", "no"}:  # (by its words only when the user said which value it replaces)
                found |= set(self._word_matches(dict(rec, id=rec.get("id")), [ident]))
            for rid in sorted(found):
                other = self._earlier(rid, rec)
                if other is None or rid in scored:
                    continue
                theirs = values(other["text"])
                # a value replaced by another: each sets one the other does not ("30 minutes" for "15
                # minutes"); "now logs the attempt number (1 to 3)" keeps the rule's 3 and replaces nothing
                if theirs - mine and mine - theirs:
                    scored[rid] = self._amend_score(rec["text"], other["text"], subject_t)
        mine_set = setting_values(rec["text"])
        for rid in scored:
            theirs_set = setting_values(self.store.get(rid)["text"])
            if any(theirs_set[k] != v for k, v in mine_set.items() if k in theirs_set):
                scored[rid] = max(scored[rid], CHANGE_MIN_SCORE)  # the same name set to another value
        best = max(scored.values()) if scored else 0.0
        # the user named the value it replaces ("from 3 hours to 90 minutes"): the rule on the subject that
        # holds it is the one, however it is worded
        named = [rid for rid in scored if said_old & values(self.store.get(rid)["text"]) - {"not", "no"}]
        if named:
            # ... and the rules on the subject that do not hold it are not what it replaces, however close
            # ("fct_sales lookback is now 7 days (instead of 3 days)" replaces the 3-day lookback, not the
            # backfill rule on fct_sales that runs in batches of 7 days)
            return sorted(set(named + switched))
        return sorted(set([rid for rid, sc in scored.items() if sc == best] if best >= CHANGE_MIN_SCORE else [])
                      | set(switched))

    def edited_targets(self, rec: dict, edit: dict) -> list:
        """The earlier rules a value edited in code makes stale (ingest/value_edits.py): active decisions of the
        scope that state a value the edit replaced (a number as `values` reads it, or a name swapped for
        another) and share at least EDIT_MIN_SHARED words with the rest of the edited line ("ttl: 30m  # held
        reservations expire 30 minutes" -> 45 makes "a held reservation expires 30 minutes after creation
        (`inventory.reservation.ttl: 30m`)" stale).  A rule that also holds every new value is not stale."""
        kept = frozenset(t for k in edit.get("kept") or () for t in terms(k))
        old_nums, old_names = _edit_values(edit.get("removed"))
        new_nums, new_names = _edit_values(edit.get("added"))
        if old_nums and new_nums:  # a number replaced: the words around it are the line's, not the value
            old_names = new_names = frozenset()
        if not kept or not (old_nums or old_names):
            return []
        shared, subject = {}, {}
        for t in sorted(kept):
            for rid in self._subject_matches(rec["scope_id"], "decision", frozenset([t]), rec.get("id")):
                shared[rid] = shared.get(rid, 0) + 1
                subject[rid] = subject.get(rid, 0) + (t not in UNIT_TERMS)
        out = []
        for rid, n in sorted(shared.items()):
            other = self._earlier(rid, rec) if n >= EDIT_MIN_SHARED and subject.get(rid) else None
            if other is None:
                continue
            nums = values(other["text"])
            names = frozenset(w.lower() for w in NAME_TOKEN_RE.findall(other["text"]))
            if not (old_nums & nums or old_names & names):
                continue
            if (new_nums or new_names) and _states(other["text"], new_nums, edit.get("new", "")) and new_names <= names:
                continue  # it states the new value too: not the rule the edit contradicts
            out.append(rid)
        return out

    def doc_targets(self, rec: dict, doc: dict) -> list:
        """The earlier statements of a document section that an edit of it makes stale (ingest/doc_rules.py):
        active decisions of the scope written from the same document that stand for the same section (their
        text opens with its heading) or hold a line the edit replaced."""
        path, head = doc.get("path") or "", doc.get("heading")
        gone = [x.rstrip(" .;:")[:120] for x in doc.get("removed") or () if len(x.split()) >= 3]
        lead = "%s (`%s`): " % (head, path) if head else None
        out = []
        for rid in self._file_matches(rec, [path]):
            other = self._earlier(rid, rec)
            if other is None or rid == rec["id"] or not any(p.get("layer") == "doc" for p in other.get("provenance") or ()):
                continue
            if path not in (other.get("files") or ()):
                continue
            text = other["text"]
            if (lead and text.startswith(lead)) or any(g in text for g in gone):
                out.append(rid)
        return sorted(out)

    def link_companions(self, rec: dict, rids: list):
        """Link the section and the chat's statements it holds only part of (`doc_pairs`) as related: both
        stay, and one retired retires the other (`_retired_with`)."""
        for rid in rids:
            self.store.update(rid, lambda r, me=rec["id"]: _add_link(r, "related", me))
            self.store.update(rec["id"], lambda r, other=rid: _add_link(r, "related", other))

    def doc_pairs(self, rec: dict) -> list:
        """[(id, held)]: the session's decisions that state what a document section of the same session states
        (Dice of their index terms at least DOC_TWIN_DICE): the chat's "All money is integer pence —
        `IntegerField`s named `*_pence` ..." beside "Money (`CONTRIBUTING.md`): All money is integer pence ...";
        `held` when the section holds DOC_TWIN_HELD of the chat's statement.  Two lines of one rule in the
        block spend its budget twice; the section is the team's own wording, so the other is
        folded into it (`fold_twin`).  Either may come first; only records written in this run are looked at."""
        if rec.get("type") != "decision" or rec.get("status") != "active":
            return []
        mine_doc = any(p.get("layer") == "doc" for p in rec.get("provenance") or ())
        sessions = set(record_sessions(rec))
        toks = record_terms("decision", rec["text"], rec.get("files"))
        out = []
        for rid, other_t in self.fresh.get((rec["scope_id"], "decision"), {}).items():
            if rid == rec["id"] or dice(toks, other_t) < DOC_TWIN_DICE:
                continue
            other = self.store.get(rid)
            if other is None or other.get("status") != "active" or not sessions & set(record_sessions(other)):
                continue
            other_doc = any(p.get("layer") == "doc" for p in other.get("provenance") or ())
            if mine_doc != other_doc:
                said, section = (other_t, toks) if mine_doc else (toks, other_t)
                out.append((rid, len(said & section) >= DOC_TWIN_HELD * len(said)))
        return sorted(out)

    def fold_twin(self, rec: dict, twins: list) -> list:
        """Fold the chat's statement into the document section (see `doc_pairs`): it is superseded by the
        section, which stays.  Returns the ids folded."""
        mine_doc = any(p.get("layer") == "doc" for p in rec.get("provenance") or ())
        folded = []
        for rid in twins:
            keep, gone = (rec["id"], rid) if mine_doc else (rid, rec["id"])
            self.store.update(gone, lambda r, k=keep: _merged(r, k))
            folded.append(gone)
            if not mine_doc:
                break  # this record is the one folded
        return folded

    def states_edit(self, rec: dict, edit: dict) -> bool:
        """Whether a decision states the value an edit put in, about the edited line's subject."""
        if rec.get("status") != "active":
            return False
        nums, names = _edit_values(edit.get("added"))
        if nums and _edit_values(edit.get("removed"))[0]:
            names = frozenset()
        kept = frozenset(t for k in edit.get("kept") or () for t in terms(k))
        text = rec["text"]
        has = (not nums or nums <= values(text)) and (
            not names or names <= frozenset(w.lower() for w in NAME_TOKEN_RE.findall(text)))
        return bool(nums or names) and has and len(kept & terms(text)) >= 1

    def _earlier(self, rid, rec):
        other = self.store.get(rid)
        if other is None or other.get("status") != "active" or other.get("created", "") > rec.get("created", ""):
            return None
        return other

    def _switch_targets(self, rec) -> list:
        from cortex.curate.subjects import subjects
        old, new, what, weak = _switch(rec["text"])
        if not old:
            return []
        idents = subjects(rec["text"]) if weak else []
        old_t = terms(old)
        if not old_t:
            return []
        new_t = terms(new) if new else frozenset()
        what_t = terms(what) if what else frozenset()
        out = []
        for rid in self._subject_matches(rec["scope_id"], "decision", old_t, rec["id"]):
            other = self._earlier(rid, rec)
            if other is None:
                continue
            other_t = terms(other["text"])
            if not _chooses(old, old_t, other["text"]):
                continue  # it names X in passing ("... registered in Koin"): a rule about something else
            if switch_subject(other["text"])[0] and old_t <= terms(switch_subject(other["text"])[0]):
                continue  # an earlier switch away from the same thing: not a choice of it
            if new_t and new_t <= other_t and not old_t <= other_t - new_t:
                continue
            if what_t and not what_t & other_t:
                continue  # X was dropped for something else than what this decision is about
            if weak and (idents or subjects(other["text"])) and not self._same_subject(rec, idents, other):
                continue  # "monthly instead of weekly" for one function says nothing of another's "weekly"
            out.append(rid)
        return out

    def _same_subject(self, rec, idents, other) -> bool:
        """Whether an earlier decision is on a subject `rec` names: a code name either names (as written or
        in words) or a file of both (settled over, or named)."""
        from cortex.curate.subjects import is_path, named_files, names_words, same_file, subject_terms, subjects
        mine, theirs_t = terms(rec["text"]), terms(other["text"])
        theirs = subjects(other["text"])
        if any(subject_terms(i) <= theirs_t or names_words(i, theirs_t) for i in idents if not is_path(i)):
            return True
        if any(subject_terms(i) <= mine or names_words(i, mine) for i in theirs if not is_path(i)):
            return True
        my_files = list(rec.get("files") or ()) + named_files(rec["text"])
        their_files = list(other.get("files") or ()) + named_files(other["text"])
        return any(same_file(a, b) for a in my_files for b in their_files)

    def _subject_targets(self, rec) -> list:
        from cortex.curate.subjects import is_path, named_files, names_words, subject_terms, subjects
        idents = subjects(rec["text"])
        amend = says_it_updates(rec["text"])
        my_files = list(rec.get("files") or ()) + named_files(rec["text"])
        if not idents and not (amend and my_files):
            return []
        if reports_on_many(rec["text"], idents) and not AMEND_RE.search(WEAK_AMEND_RE.sub(" ", rec["text"])):
            # a report of work on several things ("Alerting reworked: only tier-1 DAGs post: `pos_daily`,
            # `shopify_orders` ...; retries no longer post ...") names the rules it touches in passing: it
            # replaces one only when it says so of a rule ("replaces the earlier rule"), not by an item's
            # "no longer"
            return []
        mine = terms(rec["text"])
        my_values = values(rec["text"])
        subject_t = frozenset(t for ident in idents for t in terms(ident))
        scored, named = {}, set()
        for ident in idents[:3]:
            key = subject_terms(ident)
            for rid in self._subject_matches(rec["scope_id"], "decision", key, rec["id"]):
                other = self._earlier(rid, rec)
                if other is None or rid in scored:
                    continue
                sim = dice(mine, terms(other["text"]))
                if amend:
                    scored[rid] = self._amend_score(rec["text"], other["text"], subject_t)
                    named.add(rid)
                elif sim >= self.mem["link_threshold"] and values(other["text"]) != my_values:
                    scored[rid] = sim
        if not amend:
            return sorted(scored)
        # an amendment also finds the earlier rule on its subject when that rule names it otherwise: in words
        # (`reserve_stock()` ~ "the stock reservation") or by the file both were settled over
        found = set(self._word_matches(rec, idents[:3])) | set(self._file_matches(rec, my_files))
        for rid in self._closest(rec, sorted(found - set(scored)), AMEND_PROBE):
            other = self._earlier(rid, rec)
            if other is None:
                continue
            theirs = [i for i in subjects(other["text"]) if not is_path(i)]
            if theirs and not any(subject_terms(i) <= mine or names_words(i, mine) for i in theirs):
                # it names another function (of the same file, most often): the same rule only when worded
                # alike apart from the names
                names_t = subject_t | frozenset(t for i in theirs for t in terms(i))
                if dice(mine - names_t, terms(other["text"]) - names_t) < self.mem["link_threshold"]:
                    continue
            sc = self._amend_score(rec["text"], other["text"], subject_t)
            if sc >= self.mem["amend_min_similarity"]:
                scored[rid] = sc
        if len(scored) <= 1 and set(scored) <= named:
            return sorted(scored)
        # several earlier rules on the subject: the amendment updates the one about the same thing
        # (closest wording apart from the subject's name, and setting a value of the same kind);
        # another rule on the same function stays
        best = max(scored.values()) if scored else 0.0
        if best < self.mem["amend_min_similarity"]:
            return []
        return sorted(rid for rid, sc in scored.items() if sc == best)

    def _head_targets(self, rec) -> list:
        """Earlier rules of another session that open on the same subject in words and say something else of
        it: "Public invoice links no longer have a fixed lifetime ..." retires "Public invoice links are
        `/i/:id?t=...`; the token is valid for 30 days".  A rule stated without code names has no identifier
        for `_subject_targets` to find it by; its opening words name what it is about.  It must set another
        value (a number, always/never/only ...) or say that it changes one ("now", "no longer")."""
        head = opening_terms(rec["text"])
        if len(head) < HEAD_TERMS or reports_on_many(rec["text"]):
            return []
        sessions = set(record_sessions(rec))
        my_values, changes = values(rec["text"]), bool(STATES_NOW_RE.search(rec["text"]) or
                                                       WEAK_AMEND_RE.search(rec["text"]))
        found = []
        for rid in self._subject_matches(rec["scope_id"], "decision", frozenset(head[:HEAD_TERMS]), rec["id"]):
            other = self._earlier(rid, rec)
            if other is None or rid == rec["id"] or sessions & set(record_sessions(other)):
                continue
            if opening_terms(other["text"])[:HEAD_TERMS] != head[:HEAD_TERMS]:
                continue
            theirs = values(other["text"])
            if changes or (my_values and theirs and theirs != my_values):
                found.append(rid)
        return sorted(found)

    def _setting_targets(self, rec) -> list:
        """Earlier rules of another session that give a setting this one sets another value: the same key set
        to something else (`dispatch.same-day-cutoff: "14:00"` for `dispatch.same-day-cutoff: "15:30"`), or the
        key named with another value of its kind ("pinned to 2023-10-16 ... `Stripe.api_version`" for
        `Stripe.api_version = "2024-06-20"`).  Only keys that are compound names (`timeout` alone may be any
        timeout); a rule that also states the new value is not replaced."""
        from cortex.curate.subjects import subject_terms
        sessions = set(record_sessions(rec))
        found = set()
        seen = set()
        for written, value in settings_written(rec["text"]):
            key = written.lower()
            if key in seen or not COMPOUND_NAME_RE.search(written):  # (camelCase shows only as written)
                continue
            seen.add(key)
            for rid in self._subject_matches(rec["scope_id"], "decision", subject_terms(written), rec["id"]):
                other = self._earlier(rid, rec)
                if other is None or rid == rec["id"] or sessions & set(record_sessions(other)):
                    continue
                if sets_otherwise(key, value, other["text"]):
                    found.add(rid)
        return sorted(found)

    def _was_targets(self, rec) -> list:
        """Earlier rules of another session that state the value this one says it replaced ("Admin sessions now
        end 8 hours after login — was 12 hours" retires "... Absolute lifetime 12 hours, no sliding renewal"):
        the number in the same unit, and at least WAS_MIN_SHARED other words in common."""
        olds = replaced_values(rec["text"])
        if not olds:
            return []
        sessions = set(record_sessions(rec))
        mine = terms(rec["text"]) - UNIT_TERMS
        found = set()
        for num, unit in olds:
            for rid in self._subject_matches(rec["scope_id"], "decision", terms(num), rec["id"]):
                other = self._earlier(rid, rec)
                if other is None or rid == rec["id"] or sessions & set(record_sessions(other)):
                    continue
                if not states_value(other["text"], num, unit):
                    continue
                if len(mine & (terms(other["text"]) - UNIT_TERMS) - terms(num)) >= WAS_MIN_SHARED:
                    found.add(rid)
        return sorted(found)

    def _quantity_targets(self, rec) -> list:
        """The earlier rule of another session that measured the same thing as this one's statement with another
        value: "The cart hold is now 10 minutes" retires "`CreateHold` ... `expiresAt = now + 15 minutes`",
        "Raw interface messages are retained 2 years" retires "Raw HL7 messages are kept 90 days", "The
        `snowflake` pool has 16 slots" retires "New Airflow pool `snowflake` with 8 slots".  The same kind of
        unit (any duration is one kind), QTY_MIN_SHARED of the words just before each value in common (one of
        them not the code both name), neither rule stating the other's value; only the closest earlier rule,
        and only a quantity of the statement's first sentence (the rest of a report names other things)."""
        from cortex.curate.subjects import subjects
        mine = quantities(_statement_of(rec["text"]))
        if not mine or reports_on_many(rec["text"]):
            return []
        sessions = set(record_sessions(rec))
        code_t = frozenset(t for n in subjects(rec["text"]) for t in terms(n))
        best, found = 0, []
        for num, unit, ctx in mine:
            if len(ctx) < QTY_MIN_SHARED:
                continue
            for rid in self._subject_matches(rec["scope_id"], "decision", ctx, rec["id"], at_least=QTY_MIN_SHARED):
                other = self._earlier(rid, rec)
                if other is None or sessions & set(record_sessions(other)):
                    continue
                for n2, u2, ctx2 in quantities(other["text"]):
                    shared = len(ctx & ctx2)
                    # ... one of them a word, not only the code both name (`fct_sales` has a lookback of 3 days
                    # and is backfilled in batches of 7 days: two things)
                    if (u2 != unit or shared < QTY_MIN_SHARED or not (ctx & ctx2) - code_t
                            or float(n2) == float(num)
                            or n2 in stated_values(rec["text"]) or num in stated_values(other["text"])):
                        continue
                    if shared > best:
                        best, found = shared, [rid]
                    elif shared == best and rid not in found:
                        found.append(rid)
        return sorted(found)

    def _back_targets(self, rec) -> list:
        """Earlier rules that moved away from X, when this one goes back to it ("Back to AsyncStorage for the
        persisted stores" retires "`storage: mmkvStorage` ... (was AsyncStorage)")."""
        m = BACK_TO_RE.search(rec["text"])
        if not m:
            return []
        x = m.group("x").strip("`")
        x_t = terms(x)
        if not x_t:
            return []
        found = []
        for rid in self._subject_matches(rec["scope_id"], "decision", x_t, rec["id"]):
            other = self._earlier(rid, rec)
            if other is None or rid == rec["id"]:
                continue
            old = switch_parts(other["text"])[0]
            left = re.search(r"(?:\(was|\bwas\s+previously|\binstead\s+of|\brather\s+than|\bfrom)\s+`?%s\b"
                             % re.escape(x), other["text"], re.I)
            if left or (old and x_t <= terms(old)):
                found.append(rid)
        return sorted(found)

    def _closest(self, rec, ids, n) -> list:
        """The n of `ids` sharing the most index terms with `rec` (all of them when there are no more): the
        cost of comparing stays flat when a subject's words or a file are common in a large home."""
        if len(ids) <= n:
            return ids
        mine = sorted(terms(rec["text"]))
        shared = {}
        fresh = self.fresh.get((rec["scope_id"], "decision"), {})
        for rid in ids:
            if rid in fresh:
                shared[rid] = len(fresh[rid] & frozenset(mine))
        con = self._con()
        if con is not None and mine:
            rest = [rid for rid in ids if rid not in shared]
            for i in range(0, len(rest), 500):
                part = rest[i:i + 500]
                shared.update(con.execute(
                    "SELECT id, COUNT(*) FROM postings WHERE id IN (%s) AND term IN (%s) GROUP BY id"
                    % (",".join("?" * len(part)), ",".join("?" * len(mine))), part + mine))
        return sorted(sorted(ids, key=lambda rid: (-shared.get(rid, 0), rid))[:n])

    def _word_matches(self, rec, idents) -> list:
        """Active decisions of the scope whose text names one of `idents` in words (`names_words`)."""
        from cortex.curate.subjects import ident_words
        found = set()
        for ident in idents:
            words = sorted(ident_words(ident))
            sets = [frozenset(words)] if len(words) < 3 else [frozenset(words[:i] + words[i + 1:])
                                                              for i in range(len(words))]
            for ws in sets:
                found.update(self._subject_matches(rec["scope_id"], "decision", ws, rec["id"]))
        return sorted(found)

    def _file_matches(self, rec, paths) -> list:
        """Active decisions of the scope settled over one of `paths` or naming it (`same_file`)."""
        from cortex.curate.subjects import named_files, same_file
        from cortex.store.terms import tokenize
        if not paths:
            return []
        found = set()

        names = {os.path.basename(p.replace("\\", "/").rstrip("/")).lower() for p in paths}

        def hit(files, text):
            if any(same_file(p, f) for p in paths for f in files or ()):
                return True
            low = (text or "").lower()
            return any(n and n in low for n in names) and any(same_file(p, f) for p in paths
                                                             for f in named_files(text or ""))
        for rid, (files, text) in self.fresh_files.get((rec["scope_id"], "decision"), {}).items():
            if hit(files, text):
                found.add(rid)
        con = self._con()
        if con is not None:
            keys = sorted({(tokenize(os.path.basename(p.rstrip("/\\"))) or [""])[0] for p in paths} - {""})
            for key in keys:
                rows = con.execute("SELECT r.id, r.files, r.text FROM postings p JOIN records r ON r.id=p.id "
                                   "WHERE p.term=? AND r.scope_id=? AND r.type='decision' AND r.status='active'",
                                   (key, rec["scope_id"])).fetchall()
                for rid, files, text in rows:
                    if hit(json.loads(files or "[]"), text):
                        found.add(rid)
        return sorted(found - {rec["id"]})

    @staticmethod
    def _amend_score(new: str, old: str, subject_t: frozenset) -> float:
        a, b = terms(new) - subject_t, terms(old) - subject_t
        na, nb = set(NUMBER_RE.findall(new)), set(NUMBER_RE.findall(old))
        pa, pb = {w.lower() for w in POLARITY_RE.findall(new)}, {w.lower() for w in POLARITY_RE.findall(old)}
        return dice(a, b) + (0.3 if na and nb else 0.0) + (0.3 if na & nb else 0.0) + (0.1 if pa & pb else 0.0)

    def flag_conflicts(self, rec: dict) -> list:
        """A rejection of something an active decision recommends: link the pair as a conflict."""
        if rec["type"] != "rejected":
            return []
        subject = rejected_subject(rec["text"])
        if not subject:
            return []
        subject_t = terms(subject)
        found = []
        for rid in self._subject_matches(rec["scope_id"], "decision", subject_t, rec["id"]):
            other = self.store.get(rid)
            old = switch_subject(other["text"])[0] if other else None
            if old and subject_t <= terms(old):
                continue  # "use a timer instead of cron" agrees with "not cron: it drifts"
            found.append(rid)
        for rid in found:
            self.store.update(rid, lambda r, me=rec["id"]: _add_link(r, "conflicts_with", me))
        if found:
            self.store.update(rec["id"], lambda r: any([_add_link(r, "conflicts_with", x) for x in found]))
        return found


def _add_link(rec: dict, field: str, rid: str) -> bool:
    links = list(rec.get(field) or [])
    if rid in links or rid == rec["id"]:
        return False
    rec[field] = sorted(links + [rid])
    return True


def _retire(rec: dict, by: str) -> bool:
    changed = _add_link(rec, "superseded_by", by)
    if rec.get("status") == "active":
        rec["status"] = "superseded"
        changed = True
    return changed


def lifecycle(home, store, cfg: dict, now: float = None, dry_run: bool = False, wait: float = 60.0) -> list:
    """Archive records whose decayed confidence has stayed under the threshold long enough; delete
    archived records untouched for the prune time.  Returns [(id, action, reason)].  Holds the run lock
    (re-entrant: the normalizer calls this while holding it), so a record restored by a concurrent command
    is never pruned from an index read before the restore."""
    if dry_run:
        return _lifecycle(home, store, cfg, now, dry_run)
    from cortex.store.journal import writing
    # the intent stays until the caller has indexed the changes (the normalizer, `cortex lifecycle`)
    with writing(home, wait=wait, cfg=cfg, done_on_exit=False):
        return _lifecycle(home, store, cfg, now, dry_run)


def _on_disk_archived(path: str) -> bool:
    """Whether the record file still says archived (the index may lag behind the file)."""
    from cortex.store import records as records_mod
    try:
        return records_mod.read(path).get("status") == "archived"
    except Exception:  # unreadable: not ours to delete
        return False


def _lifecycle(home, store, cfg: dict, now: float = None, dry_run: bool = False) -> list:
    mem = settings(cfg)
    never = set(cfg["ranking"].get("never_decay", ()))
    now = time.time() if now is None else now
    if not os.path.exists(home.index_db):
        return []
    con = connect(home.index_db, readonly=True)
    try:
        rows = con.execute("SELECT id, type, status, confidence, pinned, times, path, scope_id FROM records "
                           "WHERE status IN ('active','archived')").fetchall()
        days = _scope_days(con)
    finally:
        con.close()
    actions = []
    for rid, rtype, status, conf, pinned, times_json, path, scope_id in rows:
        rec = {"id": rid, "type": rtype, "confidence": conf, "pinned": bool(pinned), "times": json.loads(times_json or "[]")}
        sdays = days.get(scope_id, [])
        last = max(rec["times"]) if rec["times"] else now
        if status == "active":
            hl = mem["half_life_days"].get(rtype)
            if pinned or rtype in never or not hl or not conf:
                continue
            eff = effective_confidence(rec, now, mem, never, sdays)
            if eff >= mem["archive_below"]:
                continue
            # it went under the threshold after `under` active days; archive after archive_after_days more
            n = max(len(rec["times"]) - 1, 0)
            hl_eff = hl * (1 + mem["use_slowdown"] * math.log1p(n))
            under = hl_eff * math.log2(max(conf / mem["archive_below"], 1.0))
            if elapsed_days(last, now, sdays) < under + mem["archive_after_days"]:
                continue
            later = [d for d in sdays if d > int(last // 86400)]
            due_day = later[min(int(math.ceil(under + mem["archive_after_days"])) - 1, len(later) - 1)] if later else 0
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(due_day * 86400))
            actions.append((rid, "archive", "confidence %.2f under %.2f for %d active days" % (
                eff, mem["archive_below"], elapsed_days(last, now, sdays) - under)))
            if not dry_run:
                flag = []
                store.update(rid, lambda r, w=when: flag.append(_archive(r, w)) or flag[-1])
                if not flag or not flag[-1]:
                    actions.pop()  # already archived on disk (the index lags by one run)
        else:
            if elapsed_days(last, now, sdays) >= mem["prune_after_days"] or (now - last) >= 3 * mem["prune_after_days"] * 86400:
                actions.append((rid, "prune", "archived and untouched for %d active days" % elapsed_days(last, now, sdays)))
                path = home.record_file(path)  # a file of this home only, whatever the index says
                if not dry_run and path and os.path.exists(path):
                    if not _on_disk_archived(path):  # restored (recall, edit) since the index was written
                        actions.pop()
                        store.changed.add(rid)
                        continue
                    from cortex.store.records import note_change
                    note_change(home.records, rid, scope_id)
                    os.unlink(path)
                    store.changed.add(rid)
    return actions


def _scope_days(con) -> dict:
    days = {}
    for sid, times in con.execute("SELECT scope_id, times FROM records"):
        days.setdefault(sid, set()).update(int(t // 86400) for t in json.loads(times or "[]"))
    return {sid: sorted(d) for sid, d in days.items()}


def _archive(rec: dict, when: str) -> bool:
    if rec.get("status") != "active":
        return False
    rec["status"], rec["archived_at"] = "archived", when
    return True


def consolidate_groups(home, store, cfg: dict, dry_run: bool = False, wait: float = 60.0) -> list:
    """`cortex consolidate`: merge groups of active near-duplicates that accumulated anyway.  The record
    seen most (then the oldest) absorbs the others' provenance; the others become superseded with
    `merged_into`, so every merge can be undone by hand.  Holds the run lock (unless dry_run)."""
    if dry_run:
        return _consolidate_groups(home, store, cfg, dry_run)
    from cortex.store.journal import writing
    with writing(home, wait=wait, cfg=cfg, done_on_exit=False):
        return _consolidate_groups(home, store, cfg, dry_run)


def _consolidate_groups(home, store, cfg: dict, dry_run: bool = False) -> list:
    from cortex.store import records as records_mod
    mem = settings(cfg)
    if not os.path.exists(home.index_db):
        return []
    con = connect(home.index_db, readonly=True)
    try:
        rows = con.execute("SELECT id, scope_id, type, text, files, times, created, updated FROM records "
                           "WHERE status='active' ORDER BY scope_id, type, id").fetchall()
    finally:
        con.close()
    buckets = {}
    for rid, scope_id, rtype, text, files, times, created, updated in rows:
        if rtype in MERGEABLE:
            buckets.setdefault((scope_id, rtype), []).append(
                (rid, record_terms(rtype, text, json.loads(files or "[]")),
                 len(json.loads(times or "[]")), created or ""))
        elif rtype in LATEST_WINS:
            # the newest first: a negated sort key of the update time does the job of "seen most"
            buckets.setdefault((scope_id, rtype), []).append(
                (rid, terms(text), -_epoch(updated), created or ""))
    merges = []
    for (scope_id, rtype), recs in sorted(buckets.items()):
        taken = set()
        later = _similar_candidates(recs, mem["merge_threshold"])
        for i, (rid, toks, n, created) in enumerate(recs):
            if rid in taken:
                continue
            group = [(rid, n, created)]
            for j in later(i):
                rid2, toks2, n2, created2 = recs[j]
                if rid2 not in taken and dice(toks, toks2) >= mem["merge_threshold"]:
                    group.append((rid2, n2, created2))
            if len(group) < 2:
                continue
            group.sort(key=lambda g: (-g[1], g[2], g[0]) if rtype not in LATEST_WINS else (g[1], g[0]))
            keep = group[0][0]
            others = [g[0] for g in group[1:]]
            taken.update(g[0] for g in group)
            merges.append((keep, others))
            if dry_run:
                continue
            absorbed = []
            for oid in others:
                other = store.get(oid)
                if other:
                    absorbed.extend(other.get("provenance") or [])
                    store.update(oid, lambda r, k=keep: _merged(r, k))

            def take(r, provs=absorbed, olds=others):
                have = {(p.get("client"), p.get("session")) for p in r.get("provenance") or []}
                new = [p for p in provs if (p.get("client"), p.get("session")) not in have]
                changed = bool(new)
                if new:
                    r["provenance"] = sorted((r.get("provenance") or []) + new,
                                             key=lambda p: (p["at"], p.get("session") or "", p.get("ref") or ""))
                    r["seen"] = records_mod.seen_times(r["provenance"])
                    r["updated"] = max([r["updated"]] + r["seen"])
                for o in olds:
                    changed = _add_link(r, "supersedes", o) or changed
                return changed
            store.update(keep, take)
    return merges


def _similar_candidates(recs: list, threshold: float):
    """later(i): the indexes j > i (in order) of the records that may be within Dice `threshold` of record i,
    a superset of those that are (prefix filtering, issue #18 defect 22): Dice >= d is Jaccard >= t = d/(2-d),
    and two term sets with Jaccard >= t share a term among their first |x| - ceil(t |x|) + 1 terms in one
    global order (here: rarest in the bucket first), so only records sharing such a term are compared.
    Replaces comparing every pair (100k records: hours, now seconds)."""
    t = threshold / (2 - threshold) if threshold < 2 else 1.0
    freq = {}
    for r in recs:
        for term in r[1]:
            freq[term] = freq.get(term, 0) + 1
    prefixes, postings = [], {}
    for i, r in enumerate(recs):
        toks = r[1]
        keep = len(toks) - max(int(math.ceil(t * len(toks) - 1e-9)), 0) + 1
        prefix = sorted(toks, key=lambda term: (freq[term], term))[:max(keep, 0)]
        prefixes.append(prefix)
        for term in prefix:
            postings.setdefault(term, []).append(i)

    def later(i):
        from bisect import bisect_right
        found = set()
        for term in prefixes[i]:
            ids = postings[term]  # ascending
            found.update(ids[bisect_right(ids, i):])
        return sorted(found)
    return later


def _epoch(ts) -> float:
    try:
        return float(iso_to_epoch(ts)) if isinstance(ts, str) else float(ts or 0)
    except (TypeError, ValueError):
        return 0.0


def _merged(rec: dict, keep: str) -> bool:
    changed = _retire(rec, keep)
    if rec.get("merged_into") != keep:
        rec["merged_into"] = keep
        changed = True
    return changed


def iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


__all__ = ["Consolidator", "lifecycle", "consolidate_groups", "effective_confidence", "settings", "iso_to_epoch", "iso"]
