"""A choice read from the exchange itself, not from how it is worded.

The assistant puts a choice to the user (options, an alternative, "either ... or"); the user's reply
takes up something specific from it (a number, a name, a code word, a phrase of two words); the session
then changes code, and the assistant says what now holds with those same words. That sentence is the
rule the session settled: "After merge and deploy, new stock holds last 45 minutes" after "flat 45, keep
it simple" answered "45 minutes covers the p95 ... One alternative is ...".

Nothing here lists how people agree: the reply only has to echo what was offered, not ask, not put it
off; the statement only has to repeat the echo after an edit. `decisions.py` reads the phrasings it
knows; this reader keeps what those leave out, and stands aside when they caught the exchange.

The user may also ask for the rule without an offer to pick from ("how do we want to handle panics in match
code", "new rule for kafka topics: ...", "twilio or SNS?"): a change `decisions.py` reads as confirmed after
such a question answers it, so it is kept even when it replaces no rule, the last one standing for the
session's answer (the report of the work done says what now holds).  Bug reports, upgrades and refactors
ask nothing of the kind, and a change read there still has to replace a rule to be kept.

The state (a dict under the decisions state, saved with the transcript cursor) holds at most a few
short, redacted lines: the offer being answered, the pick waiting for its statement, and where the
question for a rule was asked.
"""
import re

from cortex.curate.consolidate import NUMBER_RE  # a value as the supersession reads one ("15:30", "60.days")
from cortex.ingest import decisions as D
from cortex.store.terms import STOPWORDS

OFFER_LINES = 12          # sentences/bullets of an offer the state keeps
LINE_CHARS = 200          # of each
PICK_WAITS = 12           # assistant entries a pick waits for the statement of it
ASK_WAITS = 40            # assistant entries a question for a rule waits for the change that answers it
REPLY_WORDS = 80          # a longer reply is a new brief, not an answer
STATEMENT_WORDS = (5, 70)

# beside decisions.OPTIONS_WORD_RE, words that put a choice too; decisions.py does not read its bold-lead
# options after them (widened there, it lost the rule of one studied chat and made a false one in another)
MORE_CHOICE_RE = re.compile(r"\b(?:alternatively|instead|vs\.?|versus|trade-?offs?)\b", re.I)
ASKS_OR_RE = re.compile(r"\bor\b[^?]*\?\s*$", re.I)
# not what a reply takes up: the index's stopwords and a chat reply's filler ("ok go", "fine, keep it"), but
# for the words that make a rule's phrase ("per line", "each pod", "after payment")
STOP = (STOPWORDS | frozenset("done fine get go going got keep less let's make much need new ok okay old one really "
                              "still sure two use want yes".split())) - frozenset(
    "per each every after before between above below against both without".split())
# the user asks for a rule, or lays one down: how the team wants something done from now on, which of two
RULE_ASK_RE = re.compile(r"\bhow\s+(?:do|should|would|shall)\s+we\b|\bhow\s+should\s+(?:a|an|the|it|this|that|these|those)\b|"
                         r"\bwhat\s+(?:should|do|would|shall)\s+(?:we|it|they)\s+(?:use|be|pick|go\s+with)\b|"
                         r"\bwhich\s+(?:\w+\s+)?(?:should|do|shall)\s+we\b|"
                         r"\b(?:new|a|the|our)\s+(?:rule|convention|policy|standard)\s+(?:for|on|about)\b|"
                         r"\bfrom\s+now\s+on\b|\bgoing\s+forward\b|\bpropose\b|\bno\s+debate\b|"
                         r"(?:^|[.!?]\s+)[\w.-]+\s+or\s+[\w.-]+\s*\?", re.I)
# the user dictates a move to a named choice: "move SMS to MessageBird", "switch new order ids to UUIDv7",
# "replace the elo thing with glicko-2", "use Redis instead of ..."
SWITCH_TO_RE = re.compile(r"\b(?:switch|move|migrate|port)\s+(?:[\w`.'/-]+\s+){0,4}?(?:over\s+)?to\s+(?:the\s+|a\s+)?"
                          r"(?P<to>`[^`\n]{2,40}`|[\w.+#-]{2,40})|\breplace\s+[^.,;?!\n]{1,40}?\s+with\s+(?:the\s+|a\s+)?"
                          r"(?P<with>`[^`\n]{2,40}`|[\w.+#-]{2,40})|\buse\s+(?P<use>`[^`\n]{2,40}`|[\w.+#-]{2,40})\s+"
                          r"(?:instead\s+of|rather\s+than)\b", re.I)
WORD_RE = re.compile(r"[A-Za-z][\w.+/-]*[\w+]|[A-Za-z]")
CODE_RE = re.compile(r"`([^`\n]{1,80})`")


def _strong(word: str) -> bool:
    """A name rather than a word of the language: snake_case, dotted.path, camelCase, an acronym (SSE)."""
    return bool(re.search(r"[_./+]|[a-z][A-Z]|^[A-Z]{2,}\d*s?$|\d", word))


def _words(text: str) -> list:
    return [w.strip(".-/+") for w in WORD_RE.findall(text)]


def _content(text: str) -> list:
    return [w.lower() for w in _words(text) if len(w) >= 3 and w.lower() not in STOP]


def offers_choice(prose: str) -> bool:
    """Whether an assistant turn puts a choice to the user: options, an alternative, "either", a question
    ending "... or ...?", or two or more bullets with a bold lead."""
    return bool(D.OPTIONS_WORD_RE.search(prose) or MORE_CHOICE_RE.search(prose)
                or len(D.BOLD_LEAD_RE.findall(prose)) >= 2
                or "?" in prose and any(ASKS_OR_RE.search(s) for s in D._sentences(prose)))


def offer_lines(prose: str) -> list:
    """The offer's sentences as the state keeps them: cut as the decisions state cuts a request, never
    inside a word (the text was redacted, but a token glued to a URL is not always recognised)."""
    from cortex.model import redact
    from cortex.model.clip import shorten
    lines = [shorten(D._tidy(s), LINE_CHARS, redact.cut) for s in D._sentences(prose)]
    return [s for s in lines if len(s.split()) >= 2][:OFFER_LINES]


def echo(reply: str, offer: list) -> dict:
    """What the reply takes up from the offer: numbers, names and code words the offer has, and any two
    content words side by side in both ("per pr schema", "sunday evening").  {} when nothing specific."""
    said = " \n ".join(offer)
    low = said.lower()
    given = NUMBER_RE.findall(reply)
    nums = [n for n in given if n in NUMBER_RE.findall(said)]
    codes = {c.lower() for c in CODE_RE.findall(said)}
    names = []
    for w in _words(reply):
        lw = w.lower()
        if lw in STOP or len(lw) < 2:
            continue
        if (_strong(w) or lw in codes) and re.search(r"(?<![\w])%s(?![\w])" % re.escape(lw), low):
            names.append(lw)
    content = _content(reply)
    offered = _content(said)
    pairs = {(a, b) for a, b in zip(offered, offered[1:])}
    phrases = ["%s %s" % p for p in zip(content, content[1:]) if p in pairs]
    counter = [n for n in given if len(n) > 1] if set(content) & set(offered) else []
    if not (nums or names or phrases or counter):
        return {}  # (a value of its own counts when the reply speaks of what was offered: "30 days" to "14 days")
    for name in [n for n in names if re.fullmatch(r"[a-z]{2,6}s?", n)]:
        # an acronym the offer spells out ("server-sent events (SSE)"): the statement may use either
        for m in re.finditer(r"((?:[A-Za-z][\w]*[\s-]+){1,6})\(\s*%s\s*\)" % re.escape(name), said, re.I):
            parts = re.split(r"[\s-]+", m.group(1).strip())[-len(name.rstrip("s")):]
            if "".join(p[0] for p in parts).lower() == name.rstrip("s"):
                phrases.append(" ".join(m.group(1).split()[-len(parts):]).lower())
    # the numbers the reply gives are the values it settles, the offered ones or its own ("14 is too
    # short ... 30 days"): a statement holds at least one of them
    nums += [n for n in given if len(n) > 1]
    return {"nums": sorted(set(nums)), "names": sorted(set(names)), "phrases": sorted(set(phrases))[:12]}


def picks(reply: str) -> bool:
    """Whether a user turn can be a pick at all: an answer, not a question, not put off."""
    text = D._tidy(reply)
    if not text or len(text.split()) > REPLY_WORDS or text.rstrip().endswith("?"):
        return False
    first = next(iter(D._sentences(text)), "")
    if D.QUESTION_START_RE.match(first) and "?" in text:
        return False
    return not (D.UNDECIDED_RE.search(text) or D.POSTPONE_RE.search(text)
                or re.match(r"^\s*(?:hmm+|maybe|perhaps)\b", text, re.I))  # ("not sure", "let me think": UNDECIDED_RE)


# what a statement of a rule is not: hedged ("could", "if you want"), the assistant telling what it did
# ("I referred to ...", "let me"), leaning on the turn before it ("It's harmless", "That test ..."), or
# saying what was turned down ("No VCR cassettes", "We didn't serialise ...": the rejected layer's)
NOT_A_RULE_RE = re.compile(r"\b(?:could|would|might|if\s+you\s+(?:want|like|prefer))\b|\bI\b|\bI'(?:ve|ll|m|d)\b|"
                           r"\blet\s+me\b|^(?:it|it's|its|this|that|these|those|they|there|no|not|never|nothing|none)\b|"
                           r"\b(?:didn'?t|don'?t|won'?t|wouldn'?t|isn'?t|aren'?t|wasn'?t|weren'?t)\b", re.I)


def stated(sentence: str, pick: dict) -> int:
    """How fully a sentence states the pick: 0 when it holds none of the numbers the user gave or nothing
    of the pick; else how many of its terms it holds."""
    low = sentence.lower()
    values = NUMBER_RE.findall(sentence)
    nums = sum(n in values for n in pick["nums"])
    if pick["nums"] and not nums:
        return 0
    words = _content(sentence)
    pairs = {"%s %s" % p for p in zip(words, words[1:])}  # two content words side by side, as echo() built them
    return (nums + sum(bool(re.search(r"(?<![\w])%s(?![\w])" % re.escape(n), low)) for n in pick["names"])
            + sum(p in pairs for p in pick["phrases"]))


def is_statement(s: str) -> bool:
    """A sentence that can state a rule: not a question, not what the assistant will do or did, not
    hedged, not leaning on the sentence before it."""
    n = len(s.split())
    return (STATEMENT_WORDS[0] <= n <= STATEMENT_WORDS[1] and not s.endswith("?") and not s.endswith(":")
            and not (D.WILL_DO_RE.match(s) or D.NARRATION_RE.match(s) or D.HYPOTHETICAL_RE.search(s)
                     or NOT_A_RULE_RE.search(s)))


def statement(prose: str, pick: dict, also=()):
    """The sentence (or bullet) of an assistant turn that states the pick most fully, or one of `also` (what
    decisions.py read in the same turn as a change, in the user's words for it: preferred on a tie), with
    its score: (None, 0) when none states it."""
    best, top = None, 0
    for s in also:
        score = stated(s, pick)
        if score > top:
            best, top = s, score
    for s in D._sentences(D._prose(prose)):  # (code blocks state nothing)
        m = D.BULLET_RE.match(s)
        s = D._tidy(m.group(1) if m else s)
        if is_statement(s):
            score = stated(s, pick)
            if score > top:
                best, top = s, score
    return best, top


def replaced_named(said: str, prose: str, was: str = None) -> str:
    """The statement, saying what it replaced when its turn reports a named choice removed ("SMS now go through
    MessageBird" + "Twilio is removed completely" -> "... (switched from Twilio).") or the user's move dropped
    one (`was`, as decisions.switch_request reads it: "move SMS to MessageBird and remove Twilio"), so the supersession retires the rules
    that chose it (consolidate._switch_targets: only those naming it in their first words)."""
    from cortex.curate.consolidate import GONE_RE, terms
    names = [m.group("old").strip("`") for m in GONE_RE.finditer(prose)] + ([was] if was else [])
    for x in names:
        if not terms(x) or terms(x) <= terms(said):
            continue
        return D._switched(said, x)
    return said


def initial() -> dict:
    return {"offer": None, "pick": None, "asked": None}


def assistant_turn(prose: str, st: dict, also=()):
    """An assistant entry: remember the choice it offers; state a waiting pick.  Returns
    (statement, state): statement = {"text", "ref" (the pick's, for its key), "used" (those of `also` it
    states, which it replaces)} or None."""
    st, prose = dict(st), D._prose(prose)
    found = None
    pick = st.get("pick")
    if pick:
        pick = dict(pick, waits=pick["waits"] + 1)
        # a change decisions.py read as confirmed says the work was done; the turn's own sentences need an edit
        said, score = statement(prose if pick.get("worked") else "", pick, also)
        if said and score >= pick.get("score", 0):
            # a later turn that states it as fully replaces the earlier statement: the report of the work
            # done says what now holds better than a remark made on the way
            pick["score"] = score
            found = {"text": replaced_named(said, prose, pick.get("was")), "ref": pick["ref"],
                     "used": [a for a in also if stated(a, pick)]}
        st["pick"] = None if pick["waits"] > PICK_WAITS else pick
    asked = st.get("asked")
    if asked:
        if found is None and also:
            # a confirmed change after the question for a rule answers it; a later one replaces it
            found = {"text": also[-1], "ref": asked["ref"], "used": [also[-1]]}
        asked = dict(asked, waits=asked["waits"] + 1)
        st["asked"] = None if asked["waits"] > ASK_WAITS else asked
    if offers_choice(prose):
        st["offer"] = offer_lines(prose)
    return found, st


def user_turn(reply: str, ref: str, st: dict) -> dict:
    """A user entry: a pick when it answers the choice just offered with something specific from it."""
    st = dict(st)
    if RULE_ASK_RE.search(reply or ""):
        st["asked"] = {"ref": ref, "waits": 0}
    offer, st["offer"] = st.get("offer"), None
    if offer and picks(reply):
        taken = echo(D._tidy(reply), offer)
        if taken:
            st["pick"] = dict(taken, ref=ref, waits=0, worked=False)
            return st
    moved = SWITCH_TO_RE.search(D._tidy(reply)) if picks(reply) else None
    to = moved and (moved.group("to") or moved.group("with") or moved.group("use")).strip("`.-").lower()
    if to and to not in STOP and not to.isdigit():
        # the choice is the user's own: the statement after the edit must name what they moved to
        st["pick"] = {"nums": [], "names": [to], "phrases": [], "ref": ref, "waits": 0, "worked": False}
        # what it moves away from, when the same turn says ("... and drop OneSignal", "switch from X to Y")
        was = D.switch_request(D._tidy(reply))[0]
        if was and was.lower() != to:
            st["pick"]["was"] = was
    return st


def edited(st: dict) -> dict:
    if st.get("pick") and not st["pick"].get("worked"):
        st = dict(st, pick=dict(st["pick"], worked=True))
    return st


def caught(st: dict) -> dict:
    """The phrasings of decisions.py kept a decision for this exchange: the pick, and the question, are theirs."""
    return dict(st, pick=None, asked=None) if st.get("pick") or st.get("asked") else st
