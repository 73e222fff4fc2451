"""`cortex recall`: search memory by words, best first, and count each hit as a use.

Score of a record that holds at least one query term (BM25 over `textproc.query_terms(QUERY)`, read
from the index):

    relevance  = bm25 / max bm25 among the hits that pass the filters        (0..1]
    activation = 1 / (1 + e^-B)      B = the ACT-R activation of rank.parts   (0..1)
    score      = relevance + 0.2·activation + 0.1·recency + 0.1·confidence + 0.1·pinned

so relevance leads and the ranking parts (how often and how lately a record was met, how sure the
extraction was, whether a person pinned it) separate hits of similar relevance.  Hits of the project
come first, then hits of its domain (then, with --scope all, other scopes), each group by score.
Archived and superseded records are hidden unless `include_archived`; then a superseded record ranks
after the current records of its group and its hit says what replaced it (`superseded_by`) and, when that
was replaced in turn, the rule now in force (`current`).

Episode passages (a turn of a session with its neighbours, episodes/<project>/<session>.md) are
searched beside the records, by FTS5's bm25() over the same terms, and ranked in the same list:

    passage relevance = bm25p / max bm25p among the passages read        (0..1]
    passage score     = passage relevance + 0.1·recency(its time)

Records and passages are each scaled by their own best hit, since the two bm25s are computed over
different documents (short records, long passages) and are not comparable as numbers; beside
passages a record is scored by what both kinds have (relevance, recency, a pin: `merged_score`).  Two
rules decide the merged order (`model.hitorder.merge_ranking`): a record ranks at least as high as a passage of its own
session that says what it says (holds SAME_THING of its terms), and a hit whose sessions the records
above it already come from keeps SEEN_SESSION of its score, so the first places show different
conversations.  A passage whose own turn a passage of its session above it already shows is left out
(`model.hitorder.drop_shown_turns`).  Every hit carries `kind` ("record" or "episode"); `kind=` keeps one of them.
Passages are searched in the project (in every project with scope "all"); a type filter keeps
records only.

A query in the words of a rule since replaced (the superseded decision matches it at least PULL_SHARE as
well as the best current record) also finds the rule now in force, scored with that match, and beside
passages with the conversation of the rule it replaced as well as its own: the amendment rarely repeats
the old rule's words ("make it 14 days" for "keep people signed in for 60 days"), while the old chat's
turns say them many times.

Recall is a use: each returned record gets the current UTC time appended to its `used` list (which
raises its activation) and its index row refreshed; an archived record that is returned is restored
to active.
"""
import json
import math
import os
import re
import sqlite3
import time

from cortex.ops import manage
from cortex.core.errors import CortexError
from cortex.store.episodes import episode_file
from cortex.model import question
from cortex.model.hitorder import add_session_support, drop_shown_turns, merge_ranking

TIERS = 6  # project, domain, other scopes; each split into current records, then superseded ones (--all)
WEIGHTS = {"activation": 0.2, "recency": 0.1, "confidence": 0.1, "pinned": 0.1}
COLUMNS = ("id", "scope", "scope_id", "project", "type", "status", "text", "confidence", "pinned", "priority",
           "created", "updated", "times", "tokens", "files", "branch", "path", "sessions")
KINDS = ("record", "episode")
POOL = 50  # records and passages read for the merge (at least): a record far down can be lifted, a repeated
           # session's place taken by another
SNIPPET_CHARS = 110


def _active_days(con, scope_ids) -> list:
    """The days the project and its domain were worked on (decay counts these, not calendar days)."""
    import json
    from cortex.model.decay import active_days
    rows = con.execute("SELECT r.times FROM candidates c JOIN records r ON r.id=c.id WHERE c.scope_id IN (%s)"
                       % ",".join("?" * len(scope_ids)), list(scope_ids)).fetchall()
    return active_days([{"times": json.loads(t or "[]")} for (t,) in rows])


def score(bm25: float, max_bm25: float, parts: dict, weights=WEIGHTS) -> dict:
    rel = bm25 / max_bm25 if max_bm25 > 0 else 0.0
    b = parts["activation"]
    act = 1.0 / (1.0 + math.exp(-max(min(b, 50.0), -50.0)))
    total = (rel + weights["activation"] * act + weights["recency"] * parts["recency"]
             + weights["confidence"] * parts["confidence"] + (weights["pinned"] if parts["pinned"] else 0.0))
    return {"score": total, "relevance": rel, "activation_norm": act}


def snippet(text: str, words, width: int = SNIPPET_CHARS) -> str:
    """The text on one line, cut to `width` around the first query word it contains."""
    flat = re.sub(r"\s+", " ", text or "").strip()
    if len(flat) <= width:
        return flat
    low = flat.lower()
    pos = -1
    for w in words:
        if len(w) >= 2:
            i = low.find(w.lower())
            if i >= 0 and (pos < 0 or i < pos):
                pos = i
    start = 0 if pos < width // 3 else pos - width // 3
    end = start + width
    if end > len(flat):
        end, start = len(flat), max(len(flat) - width, 0)
    out = flat[start:end].strip()
    return ("…" if start > 0 else "") + out + ("…" if end < len(flat) else "")


def _rows(con, ids):
    out = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for row in con.execute("SELECT %s FROM records WHERE id IN (%s)" % (", ".join(COLUMNS), ",".join("?" * len(chunk))),
                               chunk):
            rec = dict(zip(COLUMNS, row))
            rec["times"] = json.loads(rec["times"] or "[]")
            rec["files"] = json.loads(rec["files"] or "[]")
            rec["pinned"] = bool(rec["pinned"])
            rec["sessions"] = json.loads(rec["sessions"] or "[]")
            out[rec["id"]] = rec
    return out


def passage_recency(at: str, now: float, half_life_days: float = 30.0) -> float:
    from cortex.store.index import iso_to_epoch
    t = iso_to_epoch(at or "")
    if not t:
        return 0.0
    return 0.5 ** (max(now - t, 0.0) / 86400.0 / half_life_days)


def _episode_turns(path: str) -> list:
    from cortex.store import episodes
    try:
        return episodes.read(path)[1]
    except (OSError, ValueError, UnicodeDecodeError):
        return []


def passage_turns(path: str, first: int, last: int) -> list:
    """The turns first..last of an episode file (empty when it cannot be read)."""
    return [t for t in _episode_turns(path) if first <= t["n"] <= last]


def _telling_turn(turns: list, anchor: list, words) -> dict:
    """The passage's turn that holds the most query words (the anchor on a tie): a terse prompt ("yes
    exactly") says less than the reply that holds what was asked.  {} when the turns cannot be read."""
    if not turns:
        return {}
    low = [w.lower() for w in words if len(w) >= 3]
    return max(turns, key=lambda t: (sum(w in t["text"].lower() for w in low), t in anchor))


def passage_hit(home, row: dict, bm25: float, rel: float, now: float, words, cache: dict = None) -> dict:
    from cortex.brief import render
    rcy = passage_recency(row["at"], now)
    row = dict(row, path=episode_file(home, row["path"]) or "")
    if cache is not None and row["path"] not in cache:
        cache[row["path"]] = _episode_turns(row["path"])
    turns = [t for t in (cache[row["path"]] if cache is not None else _episode_turns(row["path"]))
             if row["first_turn"] <= t["n"] <= row["last_turn"]]
    text = "\n\n".join("[%s] %s" % (t["role"], t["text"]) for t in turns)
    anchor = [t for t in turns if t["n"] == row["anchor"]]
    telling = _telling_turn(turns, anchor, words)
    from cortex.store.index import iso_to_epoch
    t = iso_to_epoch(row["at"] or "")
    return {"kind": "episode", "id": row["id"], "type": "episode", "status": "active", "scope": "L0",
            "scope_id": row["project"], "where": "project", "session": row["session"], "at": row["at"],
            "client": row["client"], "path": row["path"], "turns": [row["first_turn"], row["last_turn"]],
            "anchor": row["anchor"], "age": render.age(t, now) if t else None,
            "score": round(rel + WEIGHTS["recency"] * rcy, 4), "bm25": round(bm25, 4), "relevance": round(rel, 4),
            "recency": round(rcy, 4), "turn": telling.get("n", row["anchor"]),
            "snippet": snippet(telling.get("text", ""), words),
            "text": text}


_LIGHT = "SELECT id, scope, scope_id, type, status FROM records %s WHERE id IN (%s)"


def _light_rows(con, ids):
    """(id, scope, scope_id, type, status) of these ids, through the covering index records_hit (one
    seek per id) when the index has it."""
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        try:
            rows = con.execute(_LIGHT % ("INDEXED BY records_hit", marks), chunk).fetchall()
        except sqlite3.OperationalError:  # an index built before records_hit existed
            rows = con.execute(_LIGHT % ("", marks), chunk).fetchall()
        yield from rows


def _could_reach_top(light, k: int, max_bm25: float) -> set:
    """Ids that could still be among the first k.  The ranking parts add at most sum(WEIGHTS) to a
    hit's relevance, so within a tier a hit whose relevance is more than that below the k-th best
    relevance can never overtake it; tiers after the one that fills k hits never show.  Reading full
    rows only for these gives the same hits in the same order, far faster on common words."""
    margin = sum(WEIGHTS.values())
    by_tier = {}
    for tier, b, rid in light:
        by_tier.setdefault(tier, []).append((b / max_bm25 if max_bm25 > 0 else 0.0, rid))
    keep, need = set(), k
    for tier in sorted(by_tier):
        if need <= 0:
            break
        rels = sorted(by_tier[tier], reverse=True)
        floor = rels[min(need, len(rels)) - 1][0] - margin
        keep.update(rid for rel, rid in rels if rel >= floor)
        need -= len(rels)
    return keep


# Slack for rounding in the stopping tests below: they stop only when a hit is behind by the whole
# margin plus this, so a rounding error of a few ulps can never stop them too early.
_SLACK = 1e-9


RERANK_DEPTH = 300  # the ranking parts reorder at most this many of the best BM25 hits (or k, if more): at 100,000
                    # records a query of common words reads 300 in about 25 ms (1,000: 70 ms), and past the best 300
                    # by BM25 a record's use history does not make it the answer


def _filtered_top(con, fetch, k: int, keep_row, tiers_possible, most: int = None) -> list:
    """[(tier, bm25, id)] of the hits that pass the filters, enough of them for the first k.  `fetch(n)`
    gives the best n hits [(bm25, id)] of the search engine, best first, with the filters it can apply;
    `keep_row` maps a hit's light row to its tier, or None when a filter drops it.  The first max(64, 2k)
    hits are read, then, unless every hit not yet read is certain to rank behind k hits read, in every tier
    it could be in: a lower tier, or the same tier with a relevance more than the ranking parts' margin
    above its own (the max bm25 of the hits that pass is the first one read, and a hit not read has a bm25
    no higher than the last one read), the best max(most, k) hits: a proof that fails on the first few
    fails for common words, where the whole depth is read anyway (one search instead of three).  That cap matters for
    queries of common words only: there thousands of records match about equally well, the parts' margin
    (0.5 of relevance) keeps all of them in the running, and reading them cost recall 0.3 s at 100,000
    records; past the best RERANK_DEPTH by BM25 a record is not shown however often it was used."""
    margin = sum(WEIGHTS.values()) + _SLACK
    cap = max(int(RERANK_DEPTH if most is None else most), k)
    n = max(64, 2 * k)
    while True:
        n = min(n, cap)
        hits = fetch(n)
        got = {row[0]: row for row in _light_rows(con, sorted(rid for _, rid in hits))}
        light, max_bm25 = [], None
        per_tier = {t: [] for t in range(TIERS)}  # bm25 of the hits read, by tier, in the order read (descending)
        for b, rid in hits:
            row = got.get(rid)
            tier = keep_row(row) if row is not None else None
            if tier is None:
                continue
            if max_bm25 is None:
                max_bm25 = b
            per_tier[tier].append(b)
            light.append((tier, b, rid))
        if len(hits) < n or n >= cap or (max_bm25 is not None and _nothing_below_can_show(
                per_tier, hits[-1][0], max_bm25, k, margin, tiers_possible)):
            return light
        n = cap  # the proof failed on the first few: common words, where it needs the whole depth anyway


def _nothing_below_can_show(per_tier, below: float, max_bm25: float, k: int, margin: float, tiers_possible):
    """True when a hit of bm25 <= `below` cannot be among the first k, whatever its tier (of those
    the filters allow) and ranking parts."""
    if max_bm25 <= 0:
        return False
    bound = below / max_bm25 + margin
    ahead = 0  # hits read in lower tiers: they rank ahead of any hit of this tier
    for tier in range(TIERS):
        if tier in tiers_possible:
            strictly = 0
            for b in per_tier[tier]:  # descending: count those with a relevance above the bound
                if b / max_bm25 > bound:
                    strictly += 1
                else:
                    break
            if ahead + strictly < k:
                return False
        ahead += len(per_tier[tier])
    return True


PART_COLUMNS = ("id", "type", "confidence", "pinned", "priority", "times")


def _part_rows(con, ids):
    out = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for row in con.execute("SELECT %s FROM records WHERE id IN (%s)" % (", ".join(PART_COLUMNS),
                                                                           ",".join("?" * len(chunk))), chunk):
            rec = dict(zip(PART_COLUMNS, row))
            rec["times"] = json.loads(rec["times"] or "[]")
            rec["pinned"] = bool(rec["pinned"])
            out[rec["id"]] = rec
    return out


def _best_k(con, cands, k: int, max_bm25: float, parts_of) -> list:
    """The first k of `cands` [(tier, bm25, id)] by (tier, -score, id), with their ranking parts and
    scores: [(tier, score dict, parts, id)].  Candidates are scored in order of (tier, -bm25), reading
    the ranking columns in batches, and the scoring stops when the next candidate ranks strictly
    behind the k-th scored one even with the largest ranking parts (its score is at most its relevance
    plus the margin); so it returns what scoring all of them and sorting would."""
    margin = sum(WEIGHTS.values()) + _SLACK
    order = sorted(cands, key=lambda c: (c[0], -c[1], c[2]))
    scored = []
    worst = None  # (tier, -score, id) of the k-th best scored so far
    i = 0
    size = 32
    while i < len(order):
        if worst is not None:
            tier, b, _ = order[i]
            if tier > worst[0] or (tier == worst[0] and b / max_bm25 + margin < -worst[1]):
                break
        chunk = order[i:i + size]
        i += len(chunk)
        size = min(size * 2, 1024)
        rows = _part_rows(con, sorted(rid for _, _, rid in chunk))
        for tier, b, rid in chunk:
            p = parts_of(rows[rid])
            s = score(b, max_bm25, p)
            scored.append(((tier, -s["score"], rid), s, p))
        if len(scored) >= k:
            scored.sort(key=lambda x: x[0])
            del scored[k:]
            worst = scored[-1][0]
    scored.sort(key=lambda x: x[0])
    return scored[:k]


CHAIN_DEPTH = 10  # supersession links followed from a shown record, at most (rule -> amendment -> ...)


def _record_at(path: str) -> dict:
    """The record a file holds, or {} when there is none or it cannot be read."""
    from cortex.store.records import RecordError, read
    try:
        return read(path) if path else {}
    except (RecordError, OSError, UnicodeDecodeError):
        return {}


def _links(rec: dict, field: str) -> list:
    """The ids a record lists under `field` (supersedes, superseded_by)."""
    return [x for x in rec.get(field) or () if isinstance(x, str)]


def _walk(start: list, next_of, me: str) -> dict:
    """{id: depth} of the records reached from `start` (depth 1) through `next_of` (id -> the ids it links
    to), breadth first, each at its least depth, at most CHAIN_DEPTH deep; `me` and the ids met before are
    not followed again, so a cycle ends.  `next_of` is asked once for each id reached."""
    depth, level, d = {}, list(start), 1
    while level:
        nxt = []
        for x in level:
            if x != me and x not in depth:
                depth[x] = d
                later = next_of(x)
                if d < CHAIN_DEPTH:
                    nxt += later
        level, d = nxt, d + 1
    return depth


def _label_superseded(hits: list):
    """With superseded records shown (--all), each says what replaced it (`superseded_by`) and, when that
    was replaced in turn (rule -> amendment -> second amendment), the current end of the chain (`current`:
    the active records reached through `superseded_by`, at most CHAIN_DEPTH links).  Supersession stays in
    one scope, so the other records of a chain are files of the hit's folder."""
    for h in hits:
        if h["status"] != "superseded":
            continue
        h["superseded_by"] = _links(_record_at(h.get("path")), "superseded_by")
        folder, status = os.path.dirname(h.get("path") or ""), {}

        def later(rid):
            rec = _record_at(os.path.join(folder, rid + ".md"))
            status[rid] = rec.get("status")
            return _links(rec, "superseded_by")
        reached = _walk(h["superseded_by"], later, h["id"]) if folder else {}
        current = sorted((x for x in reached if status.get(x) == "active"), key=lambda x: (reached[x], x))
        if current and current != h["superseded_by"]:
            h["current"] = current


def _lineages(home, roots: dict) -> tuple:
    """({record id: {id: depth}}, {id: sessions}): for each record of `roots` (id -> the ids it supersedes),
    every record it supersedes directly (depth 1) or through the records those superseded in turn (rule ->
    amendment -> second amendment), at most CHAIN_DEPTH links deep, a cycle followed once; and the sessions
    each came from.  Its sessions and file come from the index, one query per link depth; the links on
    from its record file (one read per record of the chains)."""
    from cortex.store.index import connect
    links, sessions = {}, {}
    con = connect(home.index_db, readonly=True)
    try:
        level = sorted({x for v in roots.values() for x in v})
        for depth in range(1, CHAIN_DEPTH + 1):
            nxt = set()
            for i in range(0, len(level), 500):
                chunk = level[i:i + 500]
                for rid, ss, path in con.execute("SELECT id, sessions, path FROM records WHERE id IN (%s)"
                                                 % ",".join("?" * len(chunk)), chunk):
                    sessions[rid] = set(json.loads(ss or "[]"))
                    if depth < CHAIN_DEPTH:  # the links of the last depth lead nowhere that counts
                        links[rid] = roots.get(rid) or _links(_record_at(home.record_file(path)), "supersedes")
                        nxt.update(links[rid])
            level = sorted(nxt - set(sessions))
            if not level:
                break
    finally:
        con.close()
    return {rid: _walk(first, lambda x: links.get(x, ()), rid) for rid, first in roots.items()}, sessions


PULL_FROM = 5      # superseded decisions read for a query, the best first
PULL_SHARE = 0.8   # ... whose match is at least this share of the best current record's


def _rules_now(home, con, superseded: list, max_bm25: float) -> list:
    """[(id, bm25, replaced id)] of the rules in force that replaced superseded decisions matching the query
    about as well as the best current record does (or better), each once: the bm25 is that of the replaced
    rule's match."""
    out = []
    for b, rid in superseded:
        if max_bm25 and b < PULL_SHARE * max_bm25:
            continue
        now_id = _rule_in_force(home, con, rid)
        if now_id and now_id not in [x for x, _, _ in out]:
            out.append((now_id, b, rid))
    return out


def _rule_in_force(home, con, rid: str):
    """The active record a superseded one leads to through `superseded_by` (the latest link each step), or
    None, at most CHAIN_DEPTH links."""
    seen, x = set(), rid
    for _ in range(CHAIN_DEPTH):
        row = con.execute("SELECT path, status FROM records WHERE id=?", (x,)).fetchone()
        if not row:
            return None
        if row[1] == "active" and x != rid:
            return x
        seen.add(x)
        nxt = [n for n in _links(_record_at(home.record_file(row[0])), "superseded_by") if n not in seen]
        if not nxt:
            return None
        x = nxt[-1]
    return None


def _after_superseding(home, ranked: list, k: int) -> list:
    """`ranked` [(key, hit)] with every hit that comes only from sessions of the decisions a record hit among
    the first k superseded moved right after that record: the current rule ranks above the passages (and the
    other records) of the exchanges that settled the rules it replaced.  A chain counts whole: when C
    amended B, which had amended A, the hits of A's chat move too, and those of B's chat come before A's (the
    later version of the rule first; hits of one chat keep their order), also among the chain's hits that
    rank below the record already (they swap places with each other, no other hit moves).  (A record that will not be shown
    moves nothing: the old exchange is then better than no answer.)  The links are in the record files
    (`supersedes`), the sessions of the replaced records in the index."""
    replaced = {}  # record hit id -> ids it supersedes (hits behind the first k never move up into them)
    for _, h in ranked[:k]:
        if h.get("kind") == "episode" or h.get("type") != "decision":
            continue
        first = _links(_record_at(home.record_file(h.get("path"))), "supersedes")
        if first:
            replaced[h["id"]] = first
    if not replaced:
        return ranked
    chains, sessions = _lineages(home, replaced)
    out = list(ranked)
    for key, h in ranked:  # best first, so a record moved behind another keeps its own followers behind it
        if h["id"] not in replaced:
            continue
        at = next(i for i, (_, x) in enumerate(out) if x is h)
        if at >= k:
            continue
        key = out[at][0]
        mine = set(h.get("sessions") or ())
        depth_of = {}  # session -> the least depth in the chain of a record it settled
        for rid, d in chains[h["id"]].items():
            for s in sessions.get(rid, ()):
                if s not in mine and d < depth_of.get(s, CHAIN_DEPTH + 1):
                    depth_of[s] = d
        if not depth_of:
            continue
        movers = []
        for i, (k2, h2) in enumerate(out):
            theirs = {h2["session"]} if h2.get("kind") == "episode" else set(h2.get("sessions") or ())
            if h2 is not h and theirs and theirs <= set(depth_of) and k2 < key:
                movers.append((min(depth_of[s] for s in theirs), i))
        for n, (_, i) in enumerate(sorted(movers)):  # right behind it: the later rule's chat first
            out[i] = ((key[0], key[1] + 1e-9 * (n + 1), out[i][1]["id"]), out[i][1])
        out.sort(key=lambda x: x[0])
        # below it too, the chain's hits take their places later rule first (the places stay theirs): a
        # decision question lifts the old chat's rejected records over the amendment's talk otherwise
        at = next(i for i, (_, x) in enumerate(out) if x is h)
        slots = [i for i in range(at + 1, len(out)) if _chain_depth(out[i][1], depth_of, mine)]
        order = sorted(slots, key=lambda i: (_chain_depth(out[i][1], depth_of, mine), i))
        hits_in_order = [out[i][1] for i in order]
        for i, h2 in zip(slots, hits_in_order):
            out[i] = (out[i][0], h2)
    return out


def _chain_depth(hit: dict, depth_of: dict, mine: set) -> int:
    """The least chain depth of the sessions a hit comes only from (0: not only from the chain's chats)."""
    theirs = {hit["session"]} if hit.get("kind") == "episode" else set(hit.get("sessions") or ())
    if not theirs or not theirs <= set(depth_of):
        return 0
    return min(depth_of[s] for s in theirs)


def recall(home, query: str, scope: str = None, types=None, k: int = 10, cwd: str = None,
           include_archived: bool = False, record_use: bool = True, cfg=None, now: float = None,
           kind: str = None) -> dict:
    """Search memory.  Returns {query, terms, project, domain, scope, hits, used_at, note}."""
    from cortex.brief import render
    from cortex.model import rank
    from cortex.store.index import record_hits
    from cortex.store.records import TYPES, canonical_type
    from cortex.store.terms import query_terms
    now = time.time() if now is None else now
    types = [t for t in (types or []) if t]
    for t in types:
        if canonical_type(t) is None:
            raise CortexError("unknown type %r" % t, "use one of: %s" % ", ".join(TYPES))
    types = sorted({canonical_type(t) for t in types})
    if k < 1:
        raise CortexError("-k must be at least 1")
    if kind not in (None,) + KINDS:
        raise CortexError("unknown kind %r" % kind, "use record or episode")
    want_records = kind in (None, "record")
    want_passages = kind == "episode" or (kind is None and not types)
    terms = query_terms(query or "")
    if not terms:
        raise CortexError("the query %r has no searchable words (only stopwords or punctuation)" % (query or ""),
                          "use more specific words")
    # "what did we decide about X?": X is searched for, the decision records come first
    terms, decided = question.read(query, terms, query_terms)
    project, domain, cfg = manage.resolve_project(home, cwd, cfg)
    scope_ids = manage.where(project["id"], domain, scope)
    out = {"query": query, "terms": terms, "project": project["id"], "domain": domain,
           "scope": scope or "project+domain", "hits": [], "used_at": None, "note": None}
    if not os.path.exists(home.index_db):
        from cortex.store.records import iter_paths
        if next(iter_paths(home.records), None):
            raise CortexError("there is no index in %s" % home.root, "run `cortex reindex`")
        return out
    from cortex.store.index import connect
    con = connect(home.index_db, readonly=True)
    best, rows, scores, found = [], {}, {}, []
    try:
        allowed = None if scope_ids is None else set(scope_ids)

        def keep_row(row):
            _, sc, sid, rtype, status = row
            if allowed is not None and sid not in allowed:
                return None
            if types and rtype not in types:
                return None
            if status != "active" and not include_archived:
                return None
            group = 0 if sc == "L0" and sid == project["id"] else 1 if sc == "L1" and sid == domain else 2
            # a superseded record ranks after the current records of its group: the current rule first
            return group * 2 + (status == "superseded")

        groups = {2} | ({0} if allowed is None or project["id"] in allowed else set()) | (
            {1} if allowed is None or domain in allowed else set())
        tiers = {g * 2 for g in groups} | ({g * 2 + 1 for g in groups} if include_archived else set())
        # beside passages, the records' order changes (merged_score), so more of them are read: the
        # first k of the merge are then the same whatever k is
        depth = max(k, POOL) if want_passages else k
        light = []
        if want_records:
            from cortex.store.search import open_reader
            reader = open_reader(home.index_db, "records")
            statuses = None if include_archived else ["active"]

            def fetch(n):
                return record_hits(con, terms, n, scopes=allowed, statuses=statuses, types=types or None,
                                   reader=reader)
            light = _filtered_top(con, fetch, depth, keep_row, tiers)
        scores = {rid: b for _, b, rid in light}
        max_bm25 = max(b for _, b, _ in light) if light else 0.0
        if light:
            keep = _could_reach_top(light, depth, max_bm25)
            days = _active_days(con, [project["id"], domain])
            best = _best_k(con, [c for c in light if c[2] in keep], depth, max_bm25,
                           lambda rec: rank.parts(rec, now, cfg, days))
            rows = _rows(con, sorted(rid for (_, _, rid), _, _ in best))
        if want_records and not include_archived and (not types or "decision" in types):
            # a query in the words of a rule since replaced ("what's the login timeout?" for the old
            # SESSION_TTL rule): the rule now in force is a hit, with the match of the one it replaced
            sup = record_hits(con, terms, PULL_FROM, scopes=allowed, statuses=["superseded"], types=["decision"],
                              reader=reader)
            now_in_force = _rules_now(home, con, sup, max_bm25)
            via = _rows(con, sorted({old for _, _, old in now_in_force})) if now_in_force else {}
            for cid, _, old in now_in_force:  # already a hit: scored with the replaced rule's conversation too
                if cid in rows:
                    rows[cid]["match_sessions"] = sorted(set(rows[cid]["sessions"]) | set(via[old]["sessions"]))
            pulled = [x for x in now_in_force if x[0] not in {rid for (_, _, rid), _, _ in best}]
            if pulled:
                top_b = max([max_bm25] + [b for _, b, _ in pulled])
                prow, xrows = _part_rows(con, sorted(c for c, _, _ in pulled)), _rows(con, sorted(c for c, _, _ in pulled))
                days = _active_days(con, [project["id"], domain])
                for cid, b, old in pulled:
                    r = xrows.get(cid)
                    if not r or r["status"] != "active" or (allowed is not None and r["scope_id"] not in allowed):
                        continue
                    tier = 0 if r["scope_id"] == project["id"] else 2 if r["scope_id"] == domain else 4
                    p = rank.parts(prow[cid], now, cfg, days)
                    best.append(((tier, -score(b, top_b, p)["score"], cid), score(b, top_b, p), p))
                    rows[cid], scores[cid] = r, b
                    # beside passages it is scored with the replaced rule's conversation as well as its own
                    r["match_sessions"] = sorted(set(r["sessions"]) | set(via[old]["sessions"]))
                    r["via"] = old  # found through the rule it replaced: the hit says so
        if want_passages:
            from cortex.store.index import passage_scores
            projects = None if allowed is None else ({project["id"]} if project["id"] in allowed else set())
            found = passage_scores(con, terms, projects, limit=max(POOL, 2 * k))
    finally:
        con.close()
    if not best and not found:
        return out
    hits = []
    words = re.findall(r"\w+", query)
    for (tier, _, rid), s, p in best:
        rec = rows[rid]
        rec.update(bm25=scores[rid], parts=p, tier=tier, **s)
        if decided:
            rec["bonus"] = question.decided_bonus(rec["type"])
            rec["score"] += rec["bonus"]
        hits.append(rec)
    top = max([b for b, _ in found] or [0.0])
    passages = []
    for b, row in found:
        rel = b / top if top > 0 else 0.0
        passages.append({"kind": "episode", "id": row["id"], "session": row["session"], "row": row, "bm25": b,
                         "relevance": rel, "score": rel + WEIGHTS["recency"] * passage_recency(row["at"], now),
                         "tier": 0 if row["project"] == project["id"] else 4})  # the project's group, else "other"
    add_session_support(passages)
    episode_cache = {}

    def passage_text(h):
        row = h["row"]
        path = episode_file(home, row["path"]) or ""
        if path not in episode_cache:
            episode_cache[path] = _episode_turns(path)
        return "\n\n".join("[%s] %s" % (t["role"], t["text"]) for t in episode_cache[path]
                            if row["first_turn"] <= t["n"] <= row["last_turn"])

    term_sets = {}

    def terms_of(h):
        if h["id"] not in term_sets:
            from cortex.store.terms import tokenize
            term_sets[h["id"]] = set(tokenize(passage_text(h) if h.get("kind") == "episode" else h["text"]))
        return term_sets[h["id"]]

    if passages:
        ranked = merge_ranking(hits, passages, terms_of, WEIGHTS)
    else:  # records alone keep the order of their full score (activation and confidence included)
        ranked = sorted(hits, key=lambda rec: (rec["tier"], -rec["score"], rec["id"]))
    # the current rule above the exchanges that settled the rules it replaced (keys: the merged order)
    ranked = [h for _, h in _after_superseding(home, [((0, float(i), h["id"]), h) for i, h in enumerate(ranked)], k)]
    ranked = drop_shown_turns(ranked)
    for rec in ranked[:k]:
        if rec.get("kind") == "episode":
            h = passage_hit(home, rec["row"], rec["bm25"], rec["relevance"], now, words, episode_cache)
            h["where"] = ("project", "domain", "other")[rec["tier"] // 2]
            out["hits"].append(h)
            continue
        last = max(rec["times"]) if rec["times"] else 0.0
        p = rec["parts"]
        out["hits"].append({
            "kind": "record", "id": rec["id"], "type": rec["type"], "status": rec["status"], "scope": rec["scope"],
            "scope_id": rec["scope_id"], "where": ("project", "domain", "other")[rec["tier"] // 2],
            "session": rec["sessions"][-1] if rec["sessions"] else None, "sessions": rec["sessions"],
            "at": rec["updated"] or rec["created"], "client": None,
            "age": render.age(last, now) if last else None,
            "last_touched": manage.now_iso(last) if last else None,
            "confidence": rec["confidence"], "effective_confidence": round(p["confidence"], 4),
            "pinned": rec["pinned"], "priority": int(rec["priority"] or 0),
            "score": round(rec["score"], 4), "bm25": round(rec["bm25"], 4), "relevance": round(rec["relevance"], 4),
            "activation": round(p["activation"], 4), "recency": round(p["recency"], 4),
            "snippet": snippet(rec["text"], words), "text": rec["text"], "path": home.record_file(rec["path"]), "restored": False,
            **({"via": rec["via"]} if rec.get("via") else {})})
    if include_archived:
        _label_superseded(out["hits"])
    if record_use:
        at = manage.now_iso(now)
        try:
            used = [h["id"] for h in out["hits"] if h["kind"] == "record"]
            if used:
                manage.mark_used(home, used, at=at, restore=True, cfg=cfg)
            out["used_at"] = at
            for h in out["hits"]:
                if h["kind"] == "record" and h["status"] == "archived":
                    h["status"], h["restored"] = "active", True
        except CortexError as e:
            out["note"] = "uses not recorded: %s" % e
    return out
