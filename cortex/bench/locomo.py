"""LoCoMo retrieval benchmark: does Cortex's search find the turns that answer a question?

    python -m cortex.bench.locomo [--data PATH] [--variants V,...] [--conversations N] [--json FILE]
    cortex bench --locomo [--data PATH]

Data: LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024,
https://github.com/snap-research/locomo), `locomo10.json`, CC BY-NC 4.0.  It is read from where it lies
(--data, else $CORTEX_LOCOMO, else <repo>/../shared/bench-data/locomo/locomo10.json) and never copied.

For each of the 10 conversations, every turn becomes one record of a fresh home (one project), with its
session's date as the record's time, written through the index builder (`cortex.store.index.Index.upsert`,
then `finish` and `compute_candidates`, as `cortex reindex` does).  Every question with evidence is then
run through the search `cortex recall` uses (`cortex.ops.recall.recall`, no use recorded, `now` = the day
after the last session), and the dialogue ids of the hits are compared with the question's evidence:

    recall@k  share of a question's evidence turns among the first k hits, averaged over questions
    hit@k     share of questions with at least one evidence turn among the first k hits

Variants (what a record's text holds, and how the hits are ranked) are measured in the same run beside
plain rank-bm25 over the raw turns (whitespace-split, lower-cased tokens).  No model calls anywhere.
"""
import json
import os
import re
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DATA = os.path.join(os.path.dirname(REPO), "shared", "bench-data", "locomo", "locomo10.json")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10)
DEPTH = 50  # hits asked of each ranking that a fusion combines
RRF_K = 60


def data_path(path: str = None) -> str:
    return path or os.environ.get("CORTEX_LOCOMO") or DEFAULT_DATA


# -- the data ----------------------------------------------------------------------------------------------

_SESSION = re.compile(r"session_(\d+)$")


def parse_date(text: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00Z' (the dataset's session times; no zone given)."""
    from datetime import datetime
    s = " ".join((text or "").replace(",", " ").split())
    for fmt in ("%I:%M %p on %d %B %Y", "%I:%M %p on %d %b %Y", "%H:%M on %d %B %Y"):
        try:
            return datetime.strptime(s, fmt).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    return "2023-01-01T00:00:00Z"


def turns_of(conv: dict) -> list:
    """Every turn of a conversation in order: dicts with dia_id, speaker, text, caption, session, date, index."""
    c = conv["conversation"]
    sessions = sorted(int(m.group(1)) for m in (_SESSION.match(k) for k in c) if m and isinstance(c[m.group(0)], list))
    out = []
    for n in sessions:
        date = parse_date(c.get("session_%d_date_time" % n, ""))
        for t in c["session_%d" % n]:
            out.append({"dia_id": t["dia_id"], "speaker": t.get("speaker", ""), "text": t.get("text", ""),
                        "caption": t.get("blip_caption") or "", "session": n, "date": date,
                        "date_text": c.get("session_%d_date_time" % n, ""), "index": len(out)})
    return out


def norm_evidence(ev, known: set) -> list:
    """The question's evidence as dialogue ids of this conversation.  Repairs the dataset's few malformed ids
    ('D8:6; D9:17', 'D:11:26', 'D30:05'); ids that name no turn are dropped (nothing could retrieve them)."""
    out = []
    for item in ev or []:
        for part in re.split(r"[;,\s]+", str(item)):
            m = re.match(r"^D:?(\d+):0*(\d+)$", part.strip())
            if m:
                did = "D%s:%s" % (m.group(1), m.group(2))
                if did in known and did not in out:
                    out.append(did)
    return out


def questions_of(conv: dict, turns: list) -> list:
    known = {t["dia_id"] for t in turns}
    out = []
    for q in conv.get("qa", []):
        ev = norm_evidence(q.get("evidence"), known)
        if ev:
            out.append({"question": q["question"], "evidence": ev, "category": q.get("category")})
    return out


def load(path: str = None) -> list:
    p = data_path(path)
    if not os.path.isfile(p):
        raise FileNotFoundError("LoCoMo data not found at %s; pass --data PATH or set CORTEX_LOCOMO" % p)
    with open(p, encoding="utf-8") as f:
        return json.load(f)


# -- record texts (the variants) ---------------------------------------------------------------------------

def _day(t: dict) -> str:
    return t["date_text"].split(" on ", 1)[-1] if t.get("date_text") else t["date"][:10]


def text_turn(turns, i):
    """The turn's own words."""
    return turns[i]["text"] or turns[i]["caption"] or "(empty)"


def text_caption(turns, i):
    """The turn, and the caption of the photo it shares."""
    t = turns[i]
    return t["text"] + (" [shares a photo: %s]" % t["caption"] if t["caption"] else "")


def text_speaker_date(turns, i):
    """Who said it and when, then the turn and its photo caption."""
    t = turns[i]
    return "%s (%s): %s" % (t["speaker"], _day(t), text_caption(turns, i))


def text_context(turns, i, window=1, after=None, own=2):
    """Speaker, date, the turn (twice: it outweighs its neighbours), then the neighbouring turns of the
    same session as context."""
    t = turns[i]
    after = window if after is None else after
    ctx = []
    for j in range(i - window, i + after + 1):
        if j != i and 0 <= j < len(turns) and turns[j]["session"] == t["session"]:
            ctx.append("%s: %s" % (turns[j]["speaker"], text_caption(turns, j)))
    return "\n".join([text_speaker_date(turns, i)] + [text_caption(turns, i)] * (own - 1)) + (
        "\ncontext: " + " / ".join(ctx) if ctx else "")


def text_prev(turns, i):
    """Speaker, date and the turn, then the turn before it in the same session (the question it answers)."""
    t = turns[i]
    own = text_speaker_date(turns, i)
    if i > 0 and turns[i - 1]["session"] == t["session"]:
        p = turns[i - 1]
        own += "\nin reply to %s: %s" % (p["speaker"], text_caption(turns, i - 1))
    return own


def text_context2(turns, i):
    """As +context, with two turns either side."""
    return text_context(turns, i, window=2)


def text_context2_own3(turns, i):
    """As +context x2, with the turn three times."""
    return text_context(turns, i, window=2, own=3)


def text_context2_1(turns, i):
    """Speaker, date, the turn twice, two turns before it and one after."""
    return text_context(turns, i, window=2, after=1)


def text_context3(turns, i):
    """As +context, with three turns either side."""
    return text_context(turns, i, window=3)


def text_context5(turns, i):
    """As +context, with five turns either side."""
    return text_context(turns, i, window=5)


def text_context_once(turns, i, window=1):
    """Speaker, date and the turn once, then the neighbouring turns of the same session."""
    t = turns[i]
    ctx = ["%s: %s" % (turns[j]["speaker"], text_caption(turns, j)) for j in range(i - window, i + window + 1)
           if j != i and 0 <= j < len(turns) and turns[j]["session"] == t["session"]]
    return text_speaker_date(turns, i) + ("\ncontext: " + " / ".join(ctx) if ctx else "")


def text_session(turns, i):
    """The turn, then every turn of its session (a session-level document: ranks sessions, not turns)."""
    t = turns[i]
    rest = " / ".join("%s: %s" % (u["speaker"], text_caption(turns, u["index"])) for u in turns
                      if u["session"] == t["session"])
    return text_speaker_date(turns, i) + "\nsession: " + rest


TEXTS = {"turn": text_turn, "caption": text_caption, "speaker-date": text_speaker_date, "prev": text_prev,
         "context": text_context, "context2": text_context2, "context2-own3": text_context2_own3, "context2-1": text_context2_1, "context3": text_context3,
         "context5": text_context5, "context-once": text_context_once,
         "session": text_session}

# name -> (how the ranking is made, what it needs)
#   ("recall", text)        cortex.ops.recall.recall over records holding TEXTS[text]
#   ("bm25", text)          cortex.store.index.bm25_scores alone (no ranking parts) over the same records
#   ("rank-bm25", tokens)   plain rank_bm25.BM25Okapi over raw turns: "ws" whitespace-split lower-cased text,
#                           "word" lower-cased \w+ runs (punctuation dropped), "textproc" Cortex's analyser
#   ("fuse", [names])       reciprocal rank fusion (k=60) of the named rankings
#   ("product", "episodes") through the product's interface: each LoCoMo session written as a Claude Code
#                           transcript (first speaker as the user, the other as the assistant), captured by
#                           the Stop hook's code and read by the normalizer into records and episodes; the
#                           question goes to `cortex recall` (records and passages in one ranking); each hit
#                           gives the dialogue ids of its turns (a passage: its anchor turn, the reply, the
#                           turn before), and the ranking is cut at k dialogue ids, as rank-bm25's is
VARIANTS = {
    "product: episodes via hook + normalizer + recall": ("product", "episodes"),
    "rank-bm25 raw turns": ("rank-bm25", "ws"),
    "rank-bm25 raw turns, word tokens": ("rank-bm25", "word"),
    "rank-bm25 stemmed": ("rank-bm25", "textproc"),
    "recall: turn": ("recall", "turn"),
    "index bm25: turn": ("bm25", "turn"),
    "recall: turn+caption": ("recall", "caption"),
    "recall: speaker+date": ("recall", "speaker-date"),
    "recall: +reply-to": ("recall", "prev"),
    "recall: +context": ("recall", "context"),
    "recall: +context x2": ("recall", "context2"),
    "recall: +context x2 own x3": ("recall", "context2-own3"),
    "recall: +context 2 before 1 after": ("recall", "context2-1"),
    "recall: +context x3": ("recall", "context3"),
    "recall: +context x5": ("recall", "context5"),
    "recall: +context once": ("recall", "context-once"),
    "fusion: +reply-to / +context x2": ("fuse", ["recall: +reply-to", "recall: +context x2"]),
    "fusion: +context / x2 / x3": ("fuse", ["recall: +context", "recall: +context x2", "recall: +context x3"]),
    "recall: session": ("recall", "session"),
    "fusion: +reply-to / +context": ("fuse", ["recall: +reply-to", "recall: +context"]),
    "fusion: +context / session": ("fuse", ["recall: +context", "recall: session"]),
    "fusion: +reply-to / +context / session": ("fuse", ["recall: +reply-to", "recall: +context", "recall: session"]),
    "fusion: speaker+date / +context": ("fuse", ["recall: speaker+date", "recall: +context"]),
    "fusion: speaker+date / +reply-to / +context": ("fuse", ["recall: speaker+date", "recall: +reply-to",
                                                           "recall: +context"]),
}
# what `python -m cortex.bench.locomo` runs unless told otherwise (`--variants all` runs every one)
DEFAULT_VARIANTS = ["product: episodes via hook + normalizer + recall", "rank-bm25 raw turns", "rank-bm25 raw turns, word tokens", "rank-bm25 stemmed", "recall: turn",
                    "index bm25: turn", "recall: speaker+date", "recall: +reply-to", "recall: +context",
                    "recall: +context x2", "recall: +context x3", "fusion: +context / x2 / x3"]
BEST = "recall: +context x2"


# -- building a conversation's home ------------------------------------------------------------------------

def build_home(root: str, turns: list, text_fn, project_cwd: str) -> dict:
    """A Cortex home whose index holds one record per turn (text from text_fn), created at its session's
    date.  Returns {home, cfg, ids: record id -> dia_id}."""
    from cortex.core import config
    from cortex.model import scope
    from cortex.core.home import Home
    from cortex.store.index import Index
    from cortex.store.shortlist import compute_candidates
    from cortex.store.records import LINE_OVERHEAD_TOKENS, make_id, normalize_text
    from cortex.store.terms import tokenize
    home = Home(root).ensure()
    cfg = config.DEFAULTS
    project = scope.project_for(project_cwd)
    idx = Index(home.index_db)
    ids = {}
    try:
        for i, t in enumerate(turns):
            text = text_fn(turns, i)
            rid = make_id(project["id"], "summary", normalize_text(text) + "\x1f" + t["dia_id"])
            ids[rid] = t["dia_id"]
            rec = {"id": rid, "scope": "L0", "scope_id": project["id"], "project": project["id"], "type": "summary",
                   "status": "active", "confidence": 0.8, "salience": 0.5, "pinned": False, "priority": 0,
                   "created": t["date"], "updated": t["date"], "seen": [t["date"]], "used": [],
                   "tokens": len(text) // 4 + LINE_OVERHEAD_TOKENS, "branch": None, "files": [],
                   "provenance": [{"client": "locomo", "session": "session_%d" % t["session"], "transcript": None,
                                   "ref": t["dia_id"], "layer": "summary", "at": t["date"]}],
                   "text": text}
            idx.upsert(rec, os.path.join(home.records, "L0", project["id"], rid + ".md"), tokenize)
        idx.finish()
        compute_candidates(idx, cfg, project["id"])
        idx.commit()
    finally:
        idx.close()
    from cortex.store.indexer import rebuild_search
    rebuild_search(home)  # the search engine's folders, as the first normalizer run of a home builds them
    return {"home": home, "cfg": cfg, "ids": ids}


def build_product_home(root: str, turns: list, project_cwd: str) -> dict:
    """A Cortex home filled the way a user's is: one Claude Code transcript per LoCoMo session in a client
    folder, a Stop event captured for each (cortex.capture.hook: build_event + write_event, as
    `cortex-stop` does), then one normalizer run.  Returns {home, cfg, turn_ids: (session id, episode
    turn number) -> [dia_id], line_ids: (transcript, line) -> dia_id}."""
    import uuid
    from datetime import datetime, timedelta
    from cortex.capture import hook as capture
    from cortex.core import config
    from cortex.core.home import Home
    from cortex.ingest import run as norm
    home = Home(root).ensure()
    client = os.path.join(os.path.dirname(root), os.path.basename(root) + "-client")
    os.makedirs(client, exist_ok=True)
    by_session = {}
    for t in turns:
        by_session.setdefault(t["session"], []).append(t)
    first_speaker = turns[0]["speaker"] if turns else ""
    turn_ids, line_ids = {}, {}
    for n in sorted(by_session):
        sid = str(uuid.uuid5(uuid.NAMESPACE_URL, "locomo:%s:%d" % (root, n)))
        path = os.path.join(client, sid + ".jsonl")
        t0 = datetime.strptime(by_session[n][0]["date"], "%Y-%m-%dT%H:%M:%SZ")
        parent, ep_turn, last_role = None, 0, None
        with open(path, "w", encoding="utf-8") as f:
            for i, t in enumerate(by_session[n]):
                role = "user" if t["speaker"] == first_speaker else "assistant"
                ts = (t0 + timedelta(seconds=30 * i)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
                u = str(uuid.uuid5(uuid.NAMESPACE_URL, sid + t["dia_id"]))
                content = t["text"] if role == "user" else [{"type": "text", "text": t["text"]}]
                msg = {"role": role, "content": content}
                if role == "assistant":
                    msg.update(id="msg_" + u[:8], type="message", model="locomo")
                f.write(json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external",
                                    "cwd": project_cwd, "sessionId": sid, "version": "2.1.39", "type": role,
                                    "message": msg, "uuid": u, "timestamp": ts}) + "\n")
                parent = u
                if role == "user" or last_role != "assistant":
                    ep_turn += 1  # a prompt is a turn; consecutive replies make one turn (episodes.append)
                last_role = role
                turn_ids.setdefault((sid, ep_turn), []).append(t["dia_id"])
                line_ids[(path, i + 1)] = t["dia_id"]
        payload = {"session_id": sid, "transcript_path": path, "cwd": project_cwd, "hook_event_name": "Stop"}
        capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), "claude-code", home))
    norm.run(home)
    return {"home": home, "cfg": config.load(home, fast=False), "turn_ids": turn_ids, "line_ids": line_ids}


def product_ranking(built: dict, question: str, cwd: str, now: float, k: int) -> list:
    """Dialogue ids of `cortex recall QUESTION`'s hits (records and passages), best first, at most k."""
    from cortex.core.errors import CortexError
    from cortex.ops.recall import recall
    from cortex.store import records
    try:
        res = recall(built["home"], question, k=k, cwd=cwd, record_use=False, cfg=built["cfg"], now=now)
    except CortexError:
        return []
    out = []
    for h in res["hits"]:
        if h["kind"] == "episode":
            a, (first, last) = h["anchor"], h["turns"]
            order = [a] + list(range(a + 1, last + 1)) + list(range(first, a))
            ids = [d for n in order for d in built["turn_ids"].get((h["session"], n), [])]
        else:
            try:
                prov = records.read(h["path"]).get("provenance") or []
            except Exception:
                prov = []
            ids = [built["line_ids"].get((p.get("transcript"), int(p["ref"][1:])))
                   for p in prov if str(p.get("ref", "")).startswith("L") and p["ref"][1:].isdigit()]
        for d in ids:
            if d and d not in out:
                out.append(d)
    return out[:k]


# -- rankings ------------------------------------------------------------------------------------------------

def recall_ranking(built: dict, question: str, cwd: str, now: float, k: int) -> list:
    """Dialogue ids of the hits of `cortex recall QUESTION` (the library call behind it), best first."""
    from cortex.core.errors import CortexError
    from cortex.ops.recall import recall
    try:
        res = recall(built["home"], question, k=k, cwd=cwd, record_use=False, cfg=built["cfg"], now=now)
    except CortexError:
        return []
    return [built["ids"][h["id"]] for h in res["hits"]]


def bm25_ranking(built: dict, question: str, k: int) -> list:
    """Dialogue ids by the index's BM25 score alone (ties by id), best first."""
    from cortex.store.index import bm25_scores, connect
    from cortex.store.terms import query_terms
    con = connect(built["home"].index_db, readonly=True)
    try:
        scores = bm25_scores(con, query_terms(question))
    finally:
        con.close()
    best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return [built["ids"][rid] for rid, _ in best]


class RankBM25:
    """Plain rank_bm25.BM25Okapi over the raw turn texts."""

    def __init__(self, turns: list, tokens: str):
        try:
            from rank_bm25 import BM25Okapi
        except ImportError:
            from cortex.core.errors import CortexError
            raise CortexError("the rank-bm25 baselines of `cortex bench --locomo` need the rank-bm25 package",
                              "install the bench extra: pip install 'cortex-memory[bench]' (or -e '.[bench]' "
                              "in a checkout)", code=1)
        if tokens == "ws":
            self.tok = lambda s: s.lower().split()
        elif tokens == "word":
            self.tok = lambda s: re.findall(r"\w+", s.lower())
        else:
            from cortex.store.terms import tokenize
            self.tok = tokenize
        self.ids = [t["dia_id"] for t in turns]
        self.bm = BM25Okapi([self.tok(t["text"]) or ["\x00"] for t in turns])

    def ranking(self, question: str, k: int) -> list:
        scores = self.bm.get_scores(self.tok(question))
        order = sorted(range(len(self.ids)), key=lambda i: (-scores[i], i))
        return [self.ids[i] for i in order[:k] if scores[i] > 0]


def fuse(rankings: list, k: int) -> list:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (60 + rank of d)."""
    score = {}
    for r in rankings:
        for pos, did in enumerate(r):
            score[did] = score.get(did, 0.0) + 1.0 / (RRF_K + pos + 1)
    return [d for d, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


# -- scoring -------------------------------------------------------------------------------------------------

def score_question(ranking: list, evidence: list, ks=KS) -> dict:
    ev = set(evidence)
    out = {}
    for k in ks:
        got = len(ev & set(ranking[:k]))
        out["recall@%d" % k] = got / len(ev)
        out["hit@%d" % k] = 1.0 if got else 0.0
    return out


def summarize(per_question: list) -> dict:
    """{'all': {metric: mean}, 'categories': {cat: {metric: mean, 'n': count}}, 'n': count} (metrics in 0..1)."""
    def mean(rows):
        keys = [k for k in rows[0] if k not in ("category",)] if rows else []
        return dict({k: sum(r[k] for r in rows) / len(rows) for k in keys}, n=len(rows))
    out = {"all": mean(per_question) if per_question else {"n": 0}, "categories": {}}
    for cat in sorted({r["category"] for r in per_question}, key=lambda c: (c is None, c)):
        out["categories"][cat] = mean([r for r in per_question if r["category"] == cat])
    return out


# -- the run ------------------------------------------------------------------------------------------------

def evaluate(data: list, variants=None, conversations: int = None, log=None, workdir: str = None) -> dict:
    """Run every variant on every question with evidence.  Returns {variant: summary} plus '_info'."""
    import shutil
    from datetime import datetime, timezone
    variants = list(variants or DEFAULT_VARIANTS)
    for name in list(variants):
        if VARIANTS[name][0] == "fuse":
            for dep in VARIANTS[name][1]:
                if dep not in variants:
                    variants.insert(variants.index(name), dep)
    convs = data[:conversations] if conversations else data
    per = {v: [] for v in variants}
    n_turns = n_q = 0
    t0 = time.perf_counter()
    from cortex.bench.scratch import workdir as scratch
    with scratch(workdir, "cortex-locomo-") as base:
        for ci, conv in enumerate(convs):
            turns = turns_of(conv)
            qs = questions_of(conv, turns)
            n_turns += len(turns)
            n_q += len(qs)
            last = max(t["date"] for t in turns)
            now = datetime.strptime(last, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp() + 86400
            cwd = os.path.join(base, "project-%d" % ci)
            os.makedirs(cwd, exist_ok=True)
            homes = {}
            ranks = {}
            for name in variants:
                how, what = VARIANTS[name]
                if how in ("recall", "bm25") and what not in homes:
                    root = os.path.join(base, "home-%d-%s" % (ci, what))
                    os.environ["CORTEX_HOME"] = root
                    homes[what] = build_home(root, turns, TEXTS[what], cwd)
                if how == "rank-bm25":
                    homes["rank-bm25:" + what] = RankBM25(turns, what)
                if how == "product" and "product" not in homes:
                    root = os.path.join(base, "home-%d-product" % ci)
                    os.environ["CORTEX_HOME"] = root
                    homes["product"] = build_product_home(root, turns, cwd)
            for q in qs:
                for name in variants:
                    how, what = VARIANTS[name]
                    if how == "recall":
                        os.environ["CORTEX_HOME"] = homes[what]["home"].root
                        r = recall_ranking(homes[what], q["question"], cwd, now, DEPTH)
                    elif how == "bm25":
                        r = bm25_ranking(homes[what], q["question"], DEPTH)
                    elif how == "rank-bm25":
                        r = homes["rank-bm25:" + what].ranking(q["question"], DEPTH)
                    elif how == "product":
                        os.environ["CORTEX_HOME"] = homes["product"]["home"].root
                        r = product_ranking(homes["product"], q["question"], cwd, now, DEPTH)
                    else:
                        r = fuse([ranks[d] for d in what], DEPTH)
                    ranks[name] = r
                    per[name].append(dict(score_question(r, q["evidence"]), category=q["category"]))
            if log:
                log.write("conversation %s: %d turns, %d questions (%.0f s)\n" % (
                    conv.get("sample_id", ci), len(turns), len(qs), time.perf_counter() - t0))
                log.flush()
            for what in list(homes):
                if not what.startswith("rank-bm25:"):
                    shutil.rmtree(homes[what]["home"].root, ignore_errors=True)
    out = {v: summarize(per[v]) for v in variants}
    out["_info"] = {"conversations": len(convs), "turns": n_turns, "questions": n_q,
                    "seconds": round(time.perf_counter() - t0, 1)}
    return out


def format_results(res: dict) -> str:
    names = [k for k in res if not k.startswith("_")]
    cats = sorted({c for n in names for c in res[n]["categories"]}, key=lambda c: (c is None, c))
    head = ["variant", "R@5", "R@10", "hit@10"] + ["R@10 %s" % CATEGORIES.get(c, c) for c in cats]
    rows = []
    for n in names:
        a = res[n]["all"]
        rows.append([n, "%.1f" % (100 * a["recall@5"]), "%.1f" % (100 * a["recall@10"]), "%.1f" % (100 * a["hit@10"])]
                    + ["%.1f" % (100 * res[n]["categories"][c]["recall@10"]) if c in res[n]["categories"] else "-"
                       for c in cats])
    w = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i]) for i, c in enumerate(r)) for r in [head] + rows]
    info = res.get("_info", {})
    first = res[names[0]] if names else {"categories": {}}
    lines.append("(%s conversations, %s turns, %s questions with evidence: %s; %.0f s)" % (
        info.get("conversations"), info.get("turns"), info.get("questions"),
        ", ".join("%s %d" % (CATEGORIES.get(c, c), first["categories"][c]["n"]) for c in cats if c in first["categories"]),
        info.get("seconds", 0)))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m cortex.bench.locomo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="path of locomo10.json (default $CORTEX_LOCOMO or %s)" % DEFAULT_DATA)
    ap.add_argument("--variants", help="comma-separated variant names, or 'all' (default: %s)" % "; ".join(DEFAULT_VARIANTS))
    ap.add_argument("--conversations", type=int, help="only the first N conversations")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--list", action="store_true", help="list the variants and what each record holds")
    args = ap.parse_args(argv)
    if args.list:
        for name, (how, what) in VARIANTS.items():
            desc = (build_product_home.__doc__ if how == "product" else
                    TEXTS[what].__doc__ if how in ("recall", "bm25") else
                    "plain rank_bm25 over raw turns, %s tokens" % what if how == "rank-bm25" else
                    "reciprocal rank fusion of " + ", ".join(what))
            print("%-45s %s: %s" % (name, how, " ".join((desc or "").split())))
        return 0
    try:
        data = load(args.data)
    except FileNotFoundError as e:
        sys.stderr.write("cortex locomo: %s\n" % e)
        return 2
    variants = None
    if args.variants == "all":
        variants = list(VARIANTS)
    elif args.variants:
        variants = [v.strip() for v in args.variants.split(",")]
    for v in variants or []:
        if v not in VARIANTS:
            sys.stderr.write("cortex locomo: unknown variant %r (see --list)\n" % v)
            return 2
    res = evaluate(data, variants, args.conversations, log=sys.stderr)
    sys.stdout.write(format_results(res))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
