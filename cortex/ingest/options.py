"""The options the assistant laid out, and those the session did not take.  Pure functions.

A developer asks how to do something; the assistant sets out the options, each under a bold lead ("**Prawn**:
pure Ruby ... But it's a drawing API ...", "**Grover**: ... But it needs Node + a Chromium download ...");
the user picks one, often without a word about the others, and the session goes on to build it.  The
options not taken are the rejected approaches a later session should know about ("why didn't we use
Grover?"), each with the downside the assistant gave for it.

An offer is kept (in the extraction state, redacted) for OFFER_USER_TURNS user turns.  It is answered by
the first decision the session keeps after it that names exactly one of its options: the others become
rejected records, "Not Grover (went with wicked_pdf): it needs Node + a Chromium download ...".  An offer
no decision answers (a brainstorm left open), or one whose decision names several options, keeps nothing.
"""
import re


OFFER_USER_TURNS = 8   # user turns an offer waits for the decision that answers it
MAX_OPTIONS = 6        # more bold leads than this are a report's headings, not options
HEAD_WORDS = 6         # an option's name is short
REASON_CHARS = 200

# an option: a line that opens with a bold lead, bulleted, numbered or not ("**Prawn**: ...", "- **B. Redis** -- ...")
HEAD_RE = re.compile(r"(?m)^[ \t]*(?:[-*•+][ \t]+|\d+[.)][ \t]+|#{2,4}[ \t]+)?(?:\*\*(?P<head>[^*\n]{2,80}?)\*\*|"
                     r"__(?P<head2>[^_\n]{2,80}?)__)[ \t]*(?P<rest>.*)$")
OPTIONS_WORD_RE = re.compile(r"\b(?:options?|alternatives?|approaches|choices|either)\b", re.I)
# the words before the list that set out a choice between its leads (OPTIONS_WORD_RE, or "X vs Y"),
# not the parts of one proposal ("What I'd propose: - **Server-side sessions** ... - **Absolute lifetime ...**")
VERSUS_RE = re.compile(r"\b(?:vs\.?|versus)\s", re.I)
INTRO_CHARS = 300     # the words before the list that say it is a choice ...
AFTER_CHARS = 400     # ... or after it, that pick from it or ask for a pick
WAYS_RE = re.compile(r"\b(?:two|three|four|2|3|4)\b[^.:\n]{0,30}\b(?:ways|routes|paths|candidates|contenders)\b|"
                     r"\bways\s+(?:to|of|we\s+could|you\s+could)\b|\bways\s*:", re.I)  # "Ways to do that:"
PICKS_RE = re.compile(r"\beither\s+way\b|\boption\s+(?:[A-F]|\d)\b|"
                      r"\bi'?d\s+(?:go\s+with|pick|take|recommend|lean|use|choose|prefer|suggest)\b|"
                      r"\b(?:i\s+)?recommend\b|\bmy\s+(?:pick|vote)\b|\b(?:which|what)\b[^?\n]{0,80}\?|"
                      r"\b(?:your\s+call|up\s+to\s+you)\b|\bor\b[^?\n]{0,60}\?", re.I)
LABEL_RE = re.compile(r"^(?:(?:option|approach|choice|variant|plan)\s+[A-Z1-9]\b\s*[:.)—–-]*|[A-F1-9][.)])\s*", re.I)
LETTERED_RE = re.compile(r"^(?:option\s+)?[A-F][.):]\s", re.I)  # "A. Bigger Fargate tasks", "Option B: ..."
# leads that head a part of the answer, not an option
GENERIC_HEAD_RE = re.compile(r"^(?:pros?|cons?|upsides?|downsides?|trade-?offs?|recommend\w*|summary|note|tl;?dr|"
                             r"my\s+(?:take|pick|vote|suggestion)|why|what|how|when|where|bottom\s+line|verdict|"
                             r"costs?|risks?|caveats?|context|background|problem|issue|cause|fix|plan|steps?|"
                             r"next\s+steps?|current\s+state|today|now|before|after|example|e\.g|important|warning)\b",
                             re.I)
# a lead that argues rather than names an option: "Not atomic with the DB write", "TTL vs retry window"
REASON_HEAD_RE = re.compile(r"^(?:not|never|don'?t|doesn'?t|can'?t|won'?t)\b|" + VERSUS_RE.pattern, re.I)
# a sentence that gives the option's downside
DOWNSIDE_RE = re.compile(r"\b(?:but|however|downsides?|drawbacks?|cons?|catch|costs?|slow(?:er)?|risk\w*|needs?|"
                         r"requires?|can'?t|cannot|won'?t|doesn'?t|isn'?t|aren'?t|lacks?|no\s+longer|heavier|bigger|"
                         r"more\s+expensive|priced|pricey|overkill|fragile|brittle|breaks?|unmaintained|"
                         r"barely\s+maintained|lock-?in)\b", re.I)
LEAD_WORD_RE = re.compile(r"^(?:but|however|downsides?|drawbacks?|cons?|the\s+catch)\b\s*[:,—–-]*\s*", re.I)
SENT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*(])")
SPLIT_KEY_RE = re.compile(r"\s*(?:\(|/|\+|:|,|\s[—–-]\s|\s-\s|\bwith\b|\bvia\b|\busing\b)\s*", re.I)
CODE_RE = re.compile(r"`([^`\n]{1,60})`")
MARK_RE = re.compile(r"`|\*\*|(?<![\w])_|_(?![\w])")  # markup, not the underscore of wicked_pdf


def _plain(text: str) -> str:
    return MARK_RE.sub("", text or "").lower()


def _key(head: str) -> str:
    """The name an option goes by: its lead up to the first bracket, slash, colon or dash."""
    head = LABEL_RE.sub("", MARK_RE.sub("", head)).strip(" .:")
    return SPLIT_KEY_RE.split(head, 1)[0].strip(" .:").lower()


def _names(text: str, key: str) -> bool:
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(key), text) is not None


NEGATED_RE = re.compile(r"\b(?:not|no|never|instead\s+of|rather\s+than|over|without)\s+(?:\w+\s+){0,2}$")


def _takes(text: str, key: str) -> bool:
    """Whether a decision's text names the option as the one taken: once at least not after "not", "no",
    "instead of", ... ("rendered with wicked_pdf; not Grover for now" takes wicked_pdf, not Grover)."""
    return any(not NEGATED_RE.search(text[max(0, m.start() - 40):m.start()])
               for m in re.finditer(r"(?<![\w-])%s(?![\w-])" % re.escape(key), text))


def offered(prose: str):
    """The options an assistant turn sets out, [{head, key, reason}], or None.  Two to MAX_OPTIONS bold leads
    with distinct short names, in a turn that speaks of a choice."""
    if not prose:
        return None
    heads = list(HEAD_RE.finditer(prose))
    if not 2 <= len(heads) <= MAX_OPTIONS:
        return None
    # the choice is named before the list ("The realistic options for Rails:") or asked after it ("Which way
    # do you want to go?"); "an intermediate option would be ..." after a list of what a vendor does is not
    intro = prose[max(0, heads[0].start() - INTRO_CHARS):heads[0].start()]
    after = prose[heads[-1].end():heads[-1].end() + AFTER_CHARS]
    if not (OPTIONS_WORD_RE.search(intro) or VERSUS_RE.search(intro) or WAYS_RE.search(intro)
            or PICKS_RE.search(after)
            or all(LETTERED_RE.match((m.group("head") or m.group("head2")) + " ") for m in heads)):
        return None
    out = []
    for i, m in enumerate(heads):
        head = " ".join(LABEL_RE.sub("", m.group("head") or m.group("head2")).split()).strip(" .:")
        if not head and m.group("rest"):
            head = m.group("rest").split(":")[0].strip()
        key = _key(head)
        if (not key or len(head.split()) > HEAD_WORDS or len(key) < 2 or GENERIC_HEAD_RE.match(key)
                or REASON_HEAD_RE.search(head)
                or any(o["key"] == key for o in out)):
            return None  # a report's headings, or a list that is not a choice between named things
        end = heads[i + 1].start() if i + 1 < len(heads) else len(prose)
        body = m.group("rest") + prose[m.end():end]
        if i + 1 == len(heads):
            body = re.split(r"\n\s*\n", body, 1)[0]  # the last option ends at its paragraph
        # the name it goes by, and any code it names ("Redis `SETNX` on `event.id`", "B. `stripe_events` table")
        names = [key] + [c.lower() for c in CODE_RE.findall(head) if len(c) >= 3 and c.lower() != key]
        out.append({"head": head, "key": key, "names": names, "reason": _reason(body)})
    return out


def _reason(body: str) -> str:
    sents = [s.strip(" -*•:—–") for s in SENT_RE.split(" ".join(body.split())) if s.strip(" -*•:—–")]
    pick = next((s for s in sents if DOWNSIDE_RE.search(s)), "")
    pick = LEAD_WORD_RE.sub("", pick).strip()
    if len(pick) > REASON_CHARS:
        pick = pick[:REASON_CHARS].rsplit(" ", 1)[0].rstrip(",;: ") + "…"
    return pick[:1].upper() + pick[1:] if pick else ""


# a bullet of the assistant's that says what was not done: "- not Grover for now (Chrome won't fit in the 512 MB
# worker), not Prawn (template duplication)", "- Not a GCS lifecycle rule, because its clock starts at upload"
NOT_BULLET_RE = re.compile(r"(?m)^[ \t]*(?:[-*•]|\d+[.)])[ \t]+(?P<line>(?:not|no|never)\b[ \t]+[^\n]{3,300})$", re.I)
# ... and not a report of what did not happen ("- no errors in the log", "- no change needed", "- not done yet")
NOT_REPORT_RE = re.compile(r"^(?:not|no|never)\s+(?:errors?|changes?|issues?|problems?|tests?|longer|more|need(?:ed)?|"
                           r"yet|done|data|warnings?|failures?|one|action|impact|downtime|new|other|further|"
                           r"regressions?|difference|code|rows?|records?|output|results?|matches|hits|reproduc\w*)\b", re.I)


def ruled_out(prose: str) -> list:
    """The approaches an assistant turn's bullets say were not taken, each as a rejected record's text."""
    out = []
    for m in NOT_BULLET_RE.finditer(prose or ""):
        line = SENT_RE.split(" ".join(m.group("line").split()), 1)[0].rstrip(" ;,")  # its first sentence
        if NOT_REPORT_RE.match(line) or line.endswith("?") or len(line.split()) < 3:
            continue
        out.append(line[:1].upper() + line[1:] + ("" if line.endswith((".", "!", ")")) else "."))
    return out


def said_in(line: str, text: str) -> bool:
    """Whether a decision's text already says a not-bullet (its words up to the reason, in order)."""
    head = re.split(r"[:(—–,]|\s-\s|\bbecause\b", line, 1)[0]
    words = re.findall(r"[\w`'./-]+", head.lower())
    return bool(words) and re.search(r"\W+".join(re.escape(w) for w in words), text.lower()) is not None


def chosen(offer: list, text: str):
    """The index of the one option a decision's text names, or None (none, or several)."""
    plain = _plain(text)
    hits = [i for i, o in enumerate(offer) if any(_takes(plain, n) for n in o.get("names") or [o["key"]])]
    return hits[0] if len(hits) == 1 else None


def not_taken(offer: list, pick: int, said=()) -> list:
    """The rejected records' texts for the options other than `pick`; an option a rejection of the session
    already names (`said`: their texts) is left to it."""
    said = [_plain(t) for t in said]
    out = []
    for i, o in enumerate(offer):
        if i == pick or any(_names(s, n) for s in said for n in o.get("names") or [o["key"]]):
            continue
        text = "Not %s (went with %s)" % (o["head"], offer[pick]["head"])
        out.append(text + (": " + o["reason"] if o["reason"] else "."))
    return out
