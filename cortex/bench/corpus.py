"""The text of the bench homes: sentences about code from templates, and clauses drawn with the word
frequencies of the bundled real transcripts (`vocabulary`).  Used by the records (`bench.run`) and the
episodes (`bench.passages`) of the bench homes.  Only `os` is imported at module level."""
import os

VERBS = ["use", "keep", "drop", "cache", "split", "retry", "validate", "stream", "index", "batch", "lock", "hash"]
NOUNS = ["session", "token", "index", "parser", "cursor", "record", "schema", "queue", "worker", "config", "event",
         "transcript", "adapter", "client", "payload", "lock", "migration", "endpoint", "fixture", "cache"]
TECH = ["SQLite", "Postgres", "Redis", "GraphQL", "REST", "gRPC", "protobuf", "msgpack", "JSON Lines", "YAML",
        "asyncio", "threads", "fcntl", "watchdog", "tiktoken", "BM25", "pytest", "hypothesis", "uvloop", "orjson"]
DIRS = ["src", "lib", "cortex", "api", "web", "core", "tests", "scripts", "internal", "pkg"]
TEMPLATES = {
    "decision": ["Chose {t1} over {t2} for the {n1} {n2} because {n3} {v1} must stay cheap",
                 "Decided to {v1} the {n1} in {f} instead of the {n2} layer since {t1} handles it"],
    "rejected": ["Rejected {t1} for the {n1} {n2}: it won't work because {n3} {v1} needs {t2}",
                 "Dropped the idea to {v1} {n1}s in {f}; {t1} made {n2} {v2} too slow"],
    "gotcha": ["{t1} {v1}s the {n1} silently when {n2} is empty; check {f} first",
               "The {n1} {n2} in {f} must {v1} before {t1} starts or {n3} breaks"],
    "learned": ["The root cause of the {n1} bug was {f} calling {v1} twice on the {n2}",
                "{t1} returns {n1} ids in {n2} order, not insertion order"],
    "progress": ["asked \"{v1} the {n1} {n2} and fix {f}\"; changed {f}, {f2}"],
    "fix": ["`pytest {f}` failed ({t1} {n1} error); it passed after changing {f2}"],
    "preference": ["Prefer {t1} for {n1} {n2} work; keep {v1} calls out of {f}"],
}


# -- varied, realistic record text -----------------------------------------------------------------

_VOCAB = None


def _collect_text(obj, out, budget):
    if budget[0] <= 0:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, str) and k in ("text", "summary"):
                out.append(v[:4000])
                budget[0] -= min(len(v), 4000)
            elif isinstance(v, (dict, list)):
                _collect_text(v, out, budget)
    elif isinstance(obj, list):
        for v in obj:
            _collect_text(v, out, budget)


def vocabulary(max_words: int = 8000):
    """(words, cumulative weights): the commonest words of the bundled real transcripts with their counts,
    so sampled clauses follow the word frequencies of real coding sessions.  Falls back to the template
    vocabulary when the fixtures are not there."""
    global _VOCAB
    if _VOCAB is not None:
        return _VOCAB
    import json
    import re
    from collections import Counter
    counts = Counter()
    try:
        from cortex.core.bundled import fixtures_dir
        root = fixtures_dir()
    except (FileNotFoundError, ImportError):
        root = None
    if root:
        texts, budget = [], [6 * 1024 * 1024]
        for dirpath, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                if not name.endswith((".jsonl", ".json")):
                    continue
                with open(os.path.join(dirpath, name), encoding="utf-8", errors="replace") as f:
                    data = f.read()
                docs = [data] if name.endswith(".json") else data.splitlines()
                for line in docs:
                    try:
                        _collect_text(json.loads(line), texts, budget)
                    except ValueError:
                        continue
        word = re.compile(r"(?<![\w/.-])[A-Za-z][A-Za-z_]{1,24}(?![\w/=])")
        for t in texts:
            counts.update(w.lower() if w[1:].islower() else w for w in word.findall(t) if "REDACTED" not in w)
    if len(counts) < 200:
        counts = Counter({w: 1 for w in VERBS + NOUNS + [t.split()[0] for t in TECH] + DIRS})
    words, cum, total = [], [], 0
    for w, c in counts.most_common(max_words):
        total += c
        words.append(w)
        cum.append(total)
    _VOCAB = (words, cum)
    return _VOCAB


def fake_text(rng, rtype: str, i: int, vocab=None) -> str:
    """One record's text: a template sentence about code, then (when a vocabulary is given) a clause of
    0-24 words drawn with the word frequencies of real transcripts.  `(case i)` keeps every text unique."""
    f = "%s/%s_%s_%d.py" % (rng.choice(DIRS), rng.choice(NOUNS), rng.choice(NOUNS), i % 997)
    f2 = "%s/%s/%s%d.py" % (rng.choice(DIRS), rng.choice(NOUNS), rng.choice(VERBS), i % 389)
    text = rng.choice(TEMPLATES[rtype]).format(
        t1=rng.choice(TECH), t2=rng.choice(TECH), n1=rng.choice(NOUNS), n2=rng.choice(NOUNS), n3=rng.choice(NOUNS),
        v1=rng.choice(VERBS), v2=rng.choice(VERBS), f=f, f2=f2)
    if vocab:
        k = rng.randint(0, 24)
        if k:
            text += "; " + " ".join(rng.choices(vocab[0], cum_weights=vocab[1], k=k))
    return text + " (case %d)" % i
