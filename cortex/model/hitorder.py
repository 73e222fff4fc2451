"""The order of records and passages in one list (`cortex recall`, `cortex-prompt`).  Pure functions.

Records (extracted rules, fixes, notes) and passages (turns of the sessions' episodes) are found by two
bm25s over different documents, short texts and a few turns, whose numbers are not comparable; each kind
is scaled by its own best hit.  What puts them in one order is evidence both kinds have: how well the
conversation a record came from matches, and recency.  docs/commands.md (recall) states the formulas.
"""

WEIGHTS = {"recency": 0.1, "pinned": 0.1}
RECORD_OWN = 0.5  # share of a record's merged relevance that is its own (the rest: its conversation's)
SEEN_SESSION = 0.4  # a hit of a session a record above it comes from keeps this share of its score
SAME_THING = 0.6  # a passage holding this share of a record's terms says what the record says
SESSION_SUPPORT = 0.15  # a passage gains this share of the relevance of its session's 3 next best passages


def add_session_support(passages: list) -> list:
    """Raise each passage's relevance by SESSION_SUPPORT times the summed relevance of the (up to) three
    best other passages of its session among those found, then scale again so the best has 1 (as a
    record's best does): a conversation that holds the query's words in several places is more likely
    the one asked about than a single turn that shares a few of them.  Measured in docs/benchmarks.md
    (LoCoMo R@10 +1.0; developer chats: right session first +3 points)."""
    by = {}
    for h in passages:
        by.setdefault(h["session"], []).append(h["relevance"])
    for rels in by.values():
        rels.sort(reverse=True)
    raised = []
    for h in passages:
        rels = list(by[h["session"]])
        rels.remove(h["relevance"])
        raised.append(h["relevance"] + SESSION_SUPPORT * sum(rels[:3]))
    top = max(raised or [0.0])
    for h, r in zip(passages, raised):
        rel = r / top if top > 0 else 0.0
        h["score"] += rel - h["relevance"]
        h["relevance"] = rel
    return passages


def merged_score(rec: dict, conversation: float = None, weights: dict = WEIGHTS) -> float:
    """A record's score beside passages.  Its relevance is scaled by the best record, so the best record
    always has 1 however weakly it matches; half of it is therefore how well the conversation the
    record comes from matches (`conversation`, the relevance of its session's best passage, 0 when none
    holds the query's words; a record of no session counts its own relevance twice).  Then what both
    kinds have: recency (and a person's pin).  Activation and confidence need a use history and an
    extraction that passages do not have; they order records among themselves (`--kind record`).  A
    record's `bonus` (model.question: a decision when the query asks what was decided) is added."""
    own = rec["relevance"]
    conversation = own if conversation is None else conversation
    return (RECORD_OWN * own + (1 - RECORD_OWN) * conversation + weights["recency"] * rec["parts"]["recency"]
            + (weights["pinned"] if rec["parts"]["pinned"] else 0.0) + rec.get("bonus", 0.0))


def merge_ranking(records: list, passages: list, terms_of, weights: dict = WEIGHTS) -> list:
    """Records and passages in one ranking, best first.

    Each hit has `tier` (lower first); a passage `score`, `relevance` and `session`, a record
    `relevance`, `parts` and `sessions` (see merged_score); `terms_of(hit)` is the set of a hit's terms,
    asked only when needed (a passage's text is read from its episode file).  Two rules
    on top of (tier, -score):
    - a record ranks at least as high as a passage of its own session that says what it says (holds
      SAME_THING of its terms): the record is the curated form of what the passage quotes;
    - a hit whose sessions the records above it already come from keeps SEEN_SESSION of its score: the
      record is the curated form of that conversation, whose other turns are one `cortex show` away, so
      the next places go to other conversations unless this one answers far better.  Passages after
      passages of the same session keep their score: there the details of one long conversation are
      what is asked for (LoCoMo's questions; docs/benchmarks.md has both measures)."""
    keyed = []
    by_session = {}
    for h in passages:
        keyed.append([h["tier"], -h["score"], h["id"], h])
        by_session.setdefault(h["session"], []).append(keyed[-1])
    best_of = {}
    for h in passages:
        best_of[h["session"]] = max(best_of.get(h["session"], 0.0), h["relevance"])
    for rec in records:
        # (a rule found through the rule it replaced is scored with that rule's conversation too: recall.py)
        sess = rec.get("match_sessions") or rec.get("sessions") or ()
        key = [rec["tier"], -merged_score(rec, max([best_of.get(x, 0.0) for x in sess]) if sess else None, weights),
               rec["id"], rec]
        mine = None
        for sess in rec.get("sessions") or ():
            for pk in by_session.get(sess, ()):
                if (pk[0], pk[1]) >= (key[0], key[1]):
                    continue  # ranks below the record already
                if mine is None:
                    mine = terms_of(rec)
                if mine and len(mine & terms_of(pk[3])) >= SAME_THING * len(mine):
                    key[0], key[1] = pk[0], pk[1] - 1e-9
        keyed.append(key)
    keyed.sort(key=lambda x: (x[0], x[1], x[2]))
    seen, again = set(), False  # the sessions of the records ranked so far
    for key in keyed:
        h = key[3]
        sess = set(h.get("sessions") or ()) if h.get("kind") != "episode" else {h["session"]}
        if sess and sess <= seen:
            key[1] *= SEEN_SESSION
            again = True
        if h.get("kind") != "episode":
            seen |= sess
    if again:
        keyed.sort(key=lambda x: (x[0], x[1], x[2]))
    return [key[3] for key in keyed]


def drop_shown_turns(ranked: list) -> list:
    """`ranked` without the passages whose own turn (`row["anchor"]`) a passage of the same session ranked
    above them already shows (within its `row` first_turn..last_turn).  A passage is a turn with its
    neighbours, so the next turn's passage repeats most of it: listed apart, one stretch of one
    conversation fills the places other conversations should have.  Measured in docs/benchmarks.md (stop
    27): the right chat in the top 5 on held-out developer chats +26 of 570; LoCoMo R@10 -1.1, whose
    questions want the neighbouring turns of one conversation."""
    out, shown = [], {}
    for h in ranked:
        if h.get("kind") == "episode":
            row = h["row"]
            if any(first <= row["anchor"] <= last for first, last in shown.get(h["session"], ())):
                continue
            shown.setdefault(h["session"], []).append((row["first_turn"], row["last_turn"]))
        out.append(h)
    return out
