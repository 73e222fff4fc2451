"""Episodes for the bench homes: N passages of made-up coding sessions, written and indexed in bulk.

    python -m cortex.bench --sizes 10000,100000 --passages 100000,1000000 --cases prompt,recall,session-start

`write_episodes` writes sessions of 6-14 prompts, each answered (about 20 passages each: a passage per
turn, holding the turn before it, the turn and the turn after) as `episodes/<project>/<session>.md`, in the text
`store.episodes.render` makes, straight to disk (no fsync, no schema check per file: the first file is
checked, and a sample is read back and compared).  Prompts and replies are drawn like the bench records:
sentences about code from the record templates (files, technologies, the same nouns and verbs) and
clauses drawn with the word frequencies of the bundled real transcripts, plus tool lines (`- edited
src/…`, `- ran pytest … → exit 1 / …`).  The first sessions carry the ids of the bench records'
sessions (`s0`, `s1`, …), so records and passages of one conversation meet in the merged order as they
do in a real home.  90% of the sessions are in the project, 10% in another project.

`index_passages` fills the `passages` table and the search engine's passages folder with `cortex reindex`'s
own step (`indexer.reindex_passages`: one transaction, bulk inserts); `tests/bench/test_bench.py` checks that
it gives what the normalizer's incremental updates give from the same files.
"""
import os

from cortex.bench.corpus import DIRS, NOUNS, TECH, TEMPLATES, VERBS, vocabulary

OTHER_PROJECT = "other-bench-project"
PROMPTS = [
    "why does {f} {v1} the {n1} {n2} twice",
    "the {n1} {n2} keeps failing in {f}, can you look",
    "can we {v1} the {n1} with {t1} instead",
    "fix the {n1} test in {f}",
    "what did we decide about {t1} for the {n1} {n2}",
    "{v1} the {n1}s before the {n2} starts",
    "continue",
    "ok, and the {n1} {n2}?",
]
TOOLS = [
    "- edited {f}",
    "- read {f}",
    "- read {f2}",
    "- ran pytest -q {f} → exit 1 / E   AssertionError: {n1} {n2} mismatch",
    "- ran pytest -q → exit 0",
    "- ran git diff --stat → exit 0",
    "- searched {n1}_{n2} in {d}",
]


class Topic:
    """What one session is about: a few nouns, verbs, technologies and folders of the record templates,
    and a share of the transcript vocabulary, so a word is common in some sessions and absent from most,
    as in real ones (drawn independently, every frequent word would be in nearly every passage).
    Stopwords are always in reach."""
    SHARE = 0.08  # of the non-stopword vocabulary a session talks about

    def __init__(self, rng, vocab):
        from cortex.store.terms import STOPWORDS
        self.rng = rng
        self.nouns, self.verbs = rng.sample(NOUNS, 4), rng.sample(VERBS, 3)
        self.tech, self.dirs = rng.sample(TECH, 3), rng.sample(DIRS, 2)
        words, cum, last = [], [], 0
        for w, c in zip(*vocab):
            if w.lower() in STOPWORDS or rng.random() < self.SHARE:
                words.append(w)
                cum.append((cum[-1] if cum else 0) + c - last)
            last = c
        self.words, self.cum = words, cum

    def pick(self, own: list, every: list):
        return self.rng.choice(own if self.rng.random() < 0.95 else every)

    def fill(self, template: str, i: int) -> str:
        rng = self.rng
        f = "%s/%s_%s_%d.py" % (self.pick(self.dirs, DIRS), self.pick(self.nouns, NOUNS), self.pick(self.nouns, NOUNS),
                                i % 997)
        f2 = "%s/%s/%s%d.py" % (self.pick(self.dirs, DIRS), self.pick(self.nouns, NOUNS), self.pick(self.verbs, VERBS),
                                i % 389)
        return template.format(t1=self.pick(self.tech, TECH), t2=self.pick(self.tech, TECH),
                               n1=self.pick(self.nouns, NOUNS), n2=self.pick(self.nouns, NOUNS),
                               n3=self.pick(self.nouns, NOUNS), v1=self.pick(self.verbs, VERBS),
                               v2=self.pick(self.verbs, VERBS), f=f, f2=f2, d=self.pick(self.dirs, DIRS))

    def words_(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum, k=self.rng.randint(lo, hi)))


def prompt_text(topic: Topic, i: int) -> str:
    text = topic.fill(topic.rng.choice(PROMPTS), i)
    if topic.rng.random() < 0.6:
        text += "; " + topic.words_(2, 24)
    return text


def reply_text(topic: Topic, i: int) -> str:
    """One to three paragraphs of prose (a record-template sentence and words drawn like real replies),
    then up to five tool lines; under 1,800 characters, so a passage never cuts a turn."""
    rng = topic.rng
    paras = []
    for _ in range(rng.randint(1, 3)):
        s = topic.fill(rng.choice(rng.choice(list(TEMPLATES.values()))), i)
        paras.append(s + ". " + topic.words_(5, 45) + ".")
    tools = [topic.fill(rng.choice(TOOLS), i) for _ in range(rng.choice((0, 0, 1, 2, 3, 5)))]
    text = "\n\n".join(paras)
    if tools:
        text += "\n\n" + "\n".join(tools)
    return text[:1800].rstrip()


def session_turns(rng, vocab, i: int, start: float) -> list:
    """[{"n", "role", "at", "text"}] of one session: 6-14 prompts on one topic, each answered."""
    import time
    topic = Topic(rng, vocab)
    turns, t = [], start
    for _ in range(rng.randint(6, 14)):
        for role in ("user", "assistant"):
            t += rng.randint(5, 300)
            text = prompt_text(topic, i) if role == "user" else reply_text(topic, i)
            turns.append({"n": len(turns) + 1, "role": role, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)),
                          "text": text})
    return turns


def plan_sessions(n_passages: int, project_id: str, seed: int = 7, now: float = None):
    """Yield (session id, project, turns) until the sessions hold n_passages passages (the last session
    is cut to fit).  Deterministic for a seed and `now`."""
    import random
    import time
    rng = random.Random(seed * 7919 + 1)
    vocab = vocabulary()
    now = time.time() if now is None else now
    left, i = n_passages, 0
    while left > 0:
        start = now - rng.random() ** 2 * 90 * 86400 - 4 * 3600
        turns = session_turns(rng, vocab, i, start)
        if len(turns) > left:  # one passage per turn (episodes.passages): keep `left` of them
            turns = turns[:left]
        project = OTHER_PROJECT if i % 10 == 9 else project_id
        yield "s%d" % i, project, turns
        left -= len(turns)
        i += 1


def front_matter(session: str, project: str, turns: list, chars: int) -> dict:
    return {"session": session, "client": "claude-code", "project": project, "first": turns[0]["at"],
            "last": turns[-1]["at"], "transcript": "/home/dev/.claude/projects/-home-dev-app/%s.jsonl" % session,
            "turns": len(turns), "read_to": chars}


def write_episodes(home, n_passages: int, project_id: str, seed: int = 7, now: float = None,
                   index: bool = True) -> dict:
    """Write sessions holding n_passages passages into the home's episodes/, and index them (one
    transaction) unless `index` is false.  Returns {"sessions", "passages", "bytes", "write_s", "index_s"}."""
    import time
    from cortex.store import episodes
    from cortex.core.schemas import validate
    t0 = time.perf_counter()
    made, written, size, sessions = set(), [], 0, 0
    for sid, project, turns in plan_sessions(n_passages, project_id, seed, now):
        path = episodes.episode_path(home, project, sid)
        folder = os.path.dirname(path)
        if folder not in made:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            made.add(folder)
        front = front_matter(sid, project, turns, 1000 * len(turns))
        if sessions == 0 and validate("episode", front):
            raise ValueError("bench episode front matter: %s" % validate("episode", front)[0])
        text = episodes.render(front, turns).encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, text)
        finally:
            os.close(fd)
        if sessions < 20 or sessions % 4999 == 0:  # what the store reads back is what was generated
            if episodes.read(path) != (front, turns):
                raise ValueError("bench episode %s does not read back as written" % path)
        size += len(text)
        sessions += 1
    t1 = time.perf_counter()
    n = index_passages(home) if index else None
    return {"sessions": sessions, "passages": n, "bytes": size, "write_s": t1 - t0,
            "index_s": time.perf_counter() - t1}


def index_passages(home) -> int:
    """The passages tables rebuilt from episodes/ by `cortex reindex`'s own step
    (`indexer.reindex_passages`, bulk inserts in one transaction).  Returns the passage count."""
    from cortex.store.indexer import reindex_passages
    return reindex_passages(home)["passages"]
