"""Normalize's cost per record is flat in the size of the run and of the home (issue #18, defect 22).

Counted, not timed: the records a candidate is compared with (Consolidator._neighbours) and the pairs
`cortex consolidate` compares.  The timings are `python -m cortex.bench.scale` (docs/reliability.md)."""
from __future__ import annotations

import random

from cortex.bench import scale
from cortex.core.home import Home
from cortex.curate import consolidate

from .helpers import report


def _examined_per_record(tmp_path, monkeypatch, n: int) -> float:
    seen = {"calls": 0, "neighbours": 0}
    real = consolidate.Consolidator._neighbours

    def counting(self, scope_id, rtype, toks):
        out = real(self, scope_id, rtype, toks)
        seen["calls"] += 1
        seen["neighbours"] += len(out)
        return out
    monkeypatch.setattr(consolidate.Consolidator, "_neighbours", counting)
    home = Home(str(tmp_path / ("home-%d" % n)))
    cwd = tmp_path / "project"
    cwd.mkdir(exist_ok=True)
    scale.normalize_session(home, str(tmp_path), n, 500 + n, str(cwd))
    monkeypatch.setattr(consolidate.Consolidator, "_neighbours", real)
    return seen["neighbours"] / max(seen["calls"], 1)


def test_a_record_is_compared_with_a_bounded_number_of_others_however_many_the_run_writes(tmp_path, monkeypatch):
    """Before: each new record was compared with every record of its scope and type written in the run (1k tagged
    records 2.6 s, 3k 13.2 s, 10k 198 s)."""
    small = _examined_per_record(tmp_path, monkeypatch, 200)
    big = _examined_per_record(tmp_path, monkeypatch, 1200)
    report("scale_neighbours_per_record", run_200=round(small, 1), run_1200=round(big, 1))
    # compared with every record of its type written before it, a record would meet (1200/4 - 1)/2 = 150 on average
    assert big <= consolidate.PROBE_IDS + 10 and big < 75, (small, big)


def _records(n: int, seed: int) -> list:
    """Term sets with near-duplicates, as consolidate's buckets hold them."""
    rnd = random.Random(seed)
    vocab = ["w%d" % i for i in range(3000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    out = []
    for i in range(n):
        if out and rnd.random() < 0.2:
            base = set(rnd.choice(out)[1])
            base.discard(rnd.choice(sorted(base)))
            base.add(rnd.choice(vocab))
            toks = frozenset(base)
        else:
            toks = frozenset(rnd.choices(vocab, weights=weights, k=rnd.randint(3, 20)))
        out.append(("r%05d" % i, toks, 1, ""))
    return out


def test_consolidate_compares_only_pairs_that_may_merge_and_misses_none():
    """Before: `cortex consolidate` compared every pair of a scope's records of one type (10k records: 10 s
    for a dry run; 100k: hours)."""
    recs = _records(3000, 11)
    for threshold in (0.9, 0.75, 0.6):
        later = consolidate._similar_candidates(recs, threshold)
        compared = 0
        for i, (_rid, toks, _n, _c) in enumerate(recs):
            cand = set(later(i))
            compared += len(cand)
            for j in range(i + 1, len(recs)):
                if consolidate.dice(toks, recs[j][1]) >= threshold:
                    assert j in cand, (threshold, i, j)
        pairs = len(recs) * (len(recs) - 1) // 2
        report("consolidate_pairs_compared", threshold=threshold, compared=compared, all_pairs=pairs)
        assert compared < pairs / 10
