"""The best passages for a query from FTS5, without scoring every passage that holds one of its words.

`index.passage_scores` asks FTS5 for `ORDER BY bm25 LIMIT k` over the OR of the query's terms.  FTS5
scores every row the expression matches, and a query with common words matches most of the table: a
million passages in about a second.  This finds the same k rows with the same scores, to the bit, by
running FTS5 on a narrower expression.  FTS5's bm25 of a row is

    score = sum over the expression's phrases i, in their order, of  idf_i * f(tf_i, length of the row)
    idf_i = log((N - n_i + 0.5) / (n_i + 0.5)), 1e-6 when not positive   (n_i: rows holding phrase i)
    f     = tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average length)) < k1 + 1

so a row holding none of the phrases of a set G scores less than UB(all) - UB(G), UB(G) being the sum of
(k1 + 1) * idf_i over G.  Cut the phrases, in the query's order, into consecutive groups G_1..G_m; the
expression

    (phrases of G_1 OR'd) AND (phrases of G_2 OR'd) AND ... AND (phrases of G_m OR'd)

holds every phrase once and in the same order (or with the first two swapped, which changes no sum: below),
so for each row it matches FTS5 computes the same idfs
(counted over the whole table whatever the expression) and adds the same numbers in the same order: the
same score.  A row it does not match misses a whole group.  So when FTS5's k-th best score over the narrow
expression is above UB(all) - UB(G_j) for every group, no row it left out is among the k best, and its
k rows (ordered by score, then rowid) are those of the plain query.  When that cannot be shown, the
caller runs the plain query.

The groups are chosen before the narrow query runs, from a lower bound of the k-th best score: rows
holding the heaviest phrases (a probe of a few hundred rows), scored here with FTS5's formula, and the
phrases' row counts.  Among the cuts whose every group clears the bound, the one FTS5 should match the
fewest rows with (phrases taken as independent) is run.  The proof uses FTS5's own k-th score.

The phrases' row counts come from passage_terms, which the writers keep (store/index.py), when its stamp
matches FTS5's totals; else each phrase is counted in FTS5 (a scan of its doclist, as FTS5's own idf is).
With `min_score` (cortex-prompt's bar), a query whose bound cannot reach it skips FTS5 altogether.  Costs:
the counts, the probe and the narrow query.  Measured in docs/benchmarks.md ("Hot paths at 100k records
and 1M passages").
"""
import math
import sqlite3

K1, B = 1.2, 0.75  # FTS5's bm25()
MIN_ROWS = 20000  # below this many passages the plain query is fast enough (tests lower it)
PROBE_ROWS = 100  # rows of each probe scored here: the best by the probe's own bm25
WORTH = 0.6  # cut the expression only when it should match at most this share of the rows
SMALL = 5000  # when the phrases' rows add up to fewer, the plain query is quick
HEAVY = 12  # phrases whose presence the filter of the scored rows is written over
MAX_SETS = 40  # sets of phrases in that filter at most
_SLACK = 1e-9  # relative margin on every bound: rounding never makes a proof pass that should not


# -- passage_terms and FTS5's totals (index.py keeps the table; these read it) -------------------------

TERMS_STAMP = "passage_terms"


def terms_stamp(con):
    """(rows, tokens) of passages_fts that passage_terms counts, or None when it counts nothing valid."""
    try:
        row = con.execute("SELECT value FROM meta WHERE key=?", (TERMS_STAMP,)).fetchone()
        rows, tokens = (int(x) for x in row[0].split())
        return rows, tokens
    except (sqlite3.Error, TypeError, ValueError, AttributeError):
        return None


def fts_totals(con):
    """(rows, tokens) of passages_fts as its bm25() reads them: FTS5's averages record, two SQLite varints
    (of the last commit: a transaction's own changes show there when FTS5 flushes them), or None."""
    try:
        row = con.execute("SELECT block FROM passages_fts_data WHERE id=1").fetchone()
        return tuple(varints(row[0], 2)) if row and row[0] else None
    except (sqlite3.Error, IndexError, TypeError):
        return None


def varints(blob: bytes, n: int) -> list:
    """The first n SQLite varints of a blob (1-9 bytes each, big-endian, 7 bits a byte, 8 in the ninth)."""
    out, i = [], 0
    while len(out) < n:
        v = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | byte
                break
            v = (v << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(v)
    return out


def stored_hits(con, tokens: list, totals):
    """{token: passages holding it} from passage_terms when its stamp matches FTS5's `totals`, else None."""
    if totals is None or terms_stamp(con) != tuple(totals):
        return None
    want = sorted(set(tokens))
    got = dict(con.execute("SELECT term, df FROM passage_terms WHERE term IN (%s)" % ",".join("?" * len(want)), want))
    return {t: got.get(t, 0) for t in want}


def idf(n_rows: int, hits: int) -> float:
    v = math.log((n_rows - hits + 0.5) / (hits + 0.5))
    return v if v > 0.0 else 1e-6


def score(body: str, tokens: list, idfs: list, avgdl: float) -> float:
    """FTS5's bm25 (negated) of one row's body, the phrases being single tokens in this order."""
    words = body.split()
    count = {}
    want = set(tokens)
    for w in words:
        if w in want:
            count[w] = count.get(w, 0) + 1
    d = float(len(words))
    s = 0.0
    for tok, w in zip(tokens, idfs):
        tf = float(count.get(tok, 0))
        s += w * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * d / avgdl)))
    return s


def best_cut(ubs: list, shares: list, need: float):
    """(groups as (start, end) index pairs, expected share of rows matched) of the cut of the phrases into
    consecutive groups, each with UB above `need`, that matches the fewest rows; None when no cut has
    two groups or more."""
    m = len(ubs)
    best = [None] * (m + 1)  # best[j]: (share, groups) for the first j phrases
    best[0] = (1.0, [])
    for end in range(1, m + 1):
        for start in range(end - 1, -1, -1):
            if best[start] is None:
                continue
            ub = sum(ubs[start:end])
            if ub * (1 - _SLACK) <= need * (1 + _SLACK) + 1e-12:
                continue
            miss = 1.0
            for x in shares[start:end]:
                miss *= 1.0 - x
            share = best[start][0] * (1.0 - miss)
            if best[end] is None or share < best[end][0]:
                best[end] = (share, best[start][1] + [(start, end)])
    if best[m] is None or len(best[m][1]) < 2:
        return None
    return best[m][1], best[m][0]


def minimal_sets(ubs: list, floor: float):
    """(FTS5 filter expression builder input, bound) for the rows that can score `floor` or more: the
    minimal sets of the heaviest phrases (at most HEAVY of them; the others are counted as if every row
    held them) whose UB reaches floor, and the highest UB of a row that holds none of those sets (it scores
    below that).  None when every row could reach floor, or the sets are too many to write."""
    heavy = sorted(sorted(range(len(ubs)), key=lambda i: (-ubs[i], i))[:HEAVY])
    light = sum(ubs) - sum(ubs[i] for i in heavy)
    bar = floor * (1 - _SLACK) - 1e-12
    if light >= bar:
        return None
    sums = [0.0] * (1 << len(heavy))
    for mask in range(1, 1 << len(heavy)):
        low = mask & -mask
        sums[mask] = sums[mask ^ low] + ubs[heavy[low.bit_length() - 1]]
    sets, below = [], light
    for mask, ub in enumerate(sums):
        if light + ub < bar:
            below = max(below, light + ub)
            continue
        bits = [j for j in range(len(heavy)) if mask >> j & 1]
        if all(light + ub - ubs[heavy[j]] < bar for j in bits):
            sets.append([heavy[j] for j in bits])
            if len(sets) > MAX_SETS:
                return None
    return sets, below


def narrowed(con, phrases: list, limit: int, run, probe, min_score: float = None):
    """The rows `run(" OR ".join(phrases))` would return, from a narrower search, or None when that cannot
    be shown (the caller then runs the plain query).  With `min_score`, the rows that score less are not
    asked for: the result is right where it scores that much (and [] when no row can).

    `phrases`: the query's FTS5 phrases ('"token"'), in order; `run(expr, only)`: FTS5's best `limit` rows
    [(score, ...)] by (-score, rowid) for the MATCH expression `expr`, among the rows that also match the
    expression `only` when given (a filter: its phrases are not scored); `probe(expr, n)`: the n rows
    [(rowid, body)] the expression matches that FTS5's bm25 over that expression ranks best."""
    if len(phrases) < 2 or limit < 1:
        return None
    tot = fts_totals(con)
    if not tot or tot[0] < MIN_ROWS or tot[1] <= 0:
        return None
    n_rows, n_tokens = tot
    avgdl = float(n_tokens) / float(n_rows)
    tokens = [p.strip('"').lower() for p in phrases]
    stored = stored_hits(con, tokens, tot)  # the counts the writers keep, when they match FTS5's totals
    if stored is not None:
        hits = [stored[t] for t in tokens]
    else:
        hits = [con.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?", (p,)).fetchone()[0]
                for p in phrases]
    idfs = [idf(n_rows, h) for h in hits]
    ubs = [(K1 + 1.0) * w * (1 + _SLACK) for w in idfs]
    total = sum(ubs)
    least = min_score if min_score is not None and min_score > 0 else None
    if least is not None and total * (1 + _SLACK) + 1e-12 < least:
        return []  # no row can score min_score: the query's words are too common (or absent)
    if sum(hits) < SMALL:
        return None  # few rows hold any phrase: the plain query is quick
    # a lower bound of the k-th best score: rows holding the heaviest phrases, scored with FTS5's formula
    heavy = sorted(range(len(phrases)), key=lambda i: (-ubs[i], i))
    seen = {}
    for n in range(min(3, len(heavy)), 0, -1):
        expr = " AND ".join(phrases[i] for i in sorted(heavy[:n]))
        for rowid, body in probe(expr, PROBE_ROWS):
            if rowid not in seen:
                seen[rowid] = score(body or "", tokens, idfs, avgdl)
        if len(seen) >= limit:
            break
    floor = sorted(seen.values(), reverse=True)[limit - 1] * (1 - 1e-6) if len(seen) >= limit else 0.0
    floor = max(floor, least or 0.0)
    if floor <= 0.0:
        return None
    # the scored expression: the query's phrases cut into AND-ed groups when a cut holds every row that can
    # reach floor (fewer rows for FTS5 to walk), else the plain OR
    # FTS5 adds the phrases' parts in their order, 0.0 for a phrase a row lacks: swapping the first two
    # phrases changes no sum (0 + x1 + x2 = 0 + x2 + x1 exactly), so the cut may take them either way
    shares = [h / n_rows for h in hits]
    order, cut = list(range(len(phrases))), best_cut(ubs, shares, total - floor)
    swapped = [1, 0] + order[2:]
    other = best_cut([ubs[i] for i in swapped], [shares[i] for i in swapped], total - floor)
    if other is not None and (cut is None or other[1] < cut[1]):
        order, cut = swapped, other
    groups = cut[0] if cut is not None and cut[1] <= WORTH else [(0, len(phrases))]
    expr = " AND ".join("(%s)" % " OR ".join(phrases[i] for i in order[a:b]) for a, b in groups)
    # the rows scored: those holding a set of the heaviest phrases whose bound reaches floor
    sets = minimal_sets(ubs, floor)
    if sets is None and len(groups) == 1:
        return None
    only = None if sets is None else " OR ".join("(%s)" % " AND ".join(phrases[i] for i in s) for s in sets[0])
    rows = run(expr, only)
    if rows is None:
        return None
    # a row left out scores below every bound: it is not among the best `limit` when `limit` rows score more
    # (theta), nor asked for when it scores below min_score
    theta = max(rows[-1][0] if len(rows) >= limit else float("-inf"), least if least is not None else float("-inf"))
    bounds = [total - sum(ubs[i] for i in order[a:b]) for a, b in groups if len(groups) > 1] + (
        [sets[1]] if sets else [])
    if any(bound * (1 + _SLACK) + 1e-12 >= theta for bound in bounds):
        return None
    return rows
