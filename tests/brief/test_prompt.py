"""cortex-prompt: prompt-time recall (UserPromptSubmit)."""
import json
import os
import subprocess
import sys

import pytest

from cortex.core import config

from cortex.brief import prompt, session_start
from cortex.bench.run import build_home

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAVY = ("tiktoken", "numpy", "rank_bm25", "yaml", "jsonschema", "structlog")


@pytest.fixture(scope="module")
def big_home(tmp_path_factory):
    base = tmp_path_factory.mktemp("prompt")
    project = base / "proj"
    project.mkdir()
    old = os.environ.get("CORTEX_HOME")
    info = build_home(str(base / "home"), 1500, str(project))
    if old is None:
        os.environ.pop("CORTEX_HOME", None)
    else:
        os.environ["CORTEX_HOME"] = old
    return info, str(project)


def run_hook(home, payload, *args):
    env = dict(os.environ, CORTEX_HOME=home)
    return subprocess.run([sys.executable, os.path.join(ROOT, "bin", "cortex-prompt"), *args],
                          input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=60)


def test_relevant_records_not_in_the_block_are_printed_within_budget(big_home):
    info, project = big_home
    from cortex.core.home import Home
    home = Home(info["home"])
    cfg = config.load(home)
    hits = prompt.search(home, "why did we choose Redis for the session cursor lock", project, cfg)
    assert 1 <= len(hits) <= cfg["prompt"]["max_records"]
    assert sum(int(r["tokens"]) for r, _ in hits) <= cfg["prompt"]["max_tokens"]
    assert all(score >= cfg["prompt"]["min_score"] for _, score in hits)
    assert all("redis" in r["text"].lower() or "cursor" in r["text"].lower() for r, _ in hits)
    _, details = session_start.build(home, project, cfg=cfg)
    shown = {r["id"] for r in details["kept"]}
    assert not shown & {r["id"] for r, _ in hits}
    p = run_hook(info["home"], {"prompt": "why did we choose Redis for the session cursor lock", "cwd": project,
                                "hook_event_name": "UserPromptSubmit"})
    out = p.stdout.decode()
    assert p.returncode == 0 and p.stderr == b""
    assert out.startswith("<cortex-recall>") and out.rstrip().endswith("</cortex-recall>")
    assert hits[0][0]["text"][:40] in out


def test_small_talk_and_unknown_words_print_nothing(big_home):
    info, project = big_home
    for text in ("hi", "thanks!", "zzqx wvvk plorp"):
        p = run_hook(info["home"], {"prompt": text, "cwd": project})
        assert p.returncode == 0 and p.stdout == b""


def test_raising_the_threshold_silences_it(big_home, tmp_path):
    info, project = big_home
    from cortex.core.home import Home
    home = Home(info["home"])
    cfg = config.load(home)
    cfg = dict(cfg, prompt=dict(cfg["prompt"], min_score=1e9))
    assert prompt.search(home, "why did we choose Redis for the session cursor lock", project, cfg) == []


def test_gemini_gets_json_and_bad_input_never_fails(big_home):
    info, project = big_home
    p = run_hook(info["home"], {"prompt": "Redis session cursor lock", "cwd": project}, "--client", "gemini")
    if p.stdout:
        data = json.loads(p.stdout)
        assert data["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    for raw in (b"", b"not json", b"[1,2]", b"\xff\xfe"):
        q = subprocess.run([sys.executable, os.path.join(ROOT, "bin", "cortex-prompt")], input=raw,
                           env=dict(os.environ, CORTEX_HOME=info["home"]), capture_output=True, timeout=60)
        assert q.returncode == 0 and q.stdout == b""


def test_prompt_hook_imports_nothing_heavy(big_home):
    info, project = big_home
    code = ("import sys,io,json;sys.argv=['cortex-prompt'];"
            "sys.stdin=io.TextIOWrapper(io.BytesIO(json.dumps({'prompt':'Redis session cursor lock','cwd':%r}).encode()));"
            "from cortex.brief import prompt;prompt.main([]);"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in %r)))" % (project, HEAVY))
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=dict(os.environ, CORTEX_HOME=info["home"]),
                       capture_output=True, timeout=60)
    heavy = json.loads(p.stdout.decode().strip().splitlines()[-1])
    assert heavy == []


@pytest.fixture(scope="module")
def archived_copy(big_home, tmp_path_factory):
    """A copy of the big home's index (rows and engine) with every ninth record archived."""
    import shutil
    import sqlite3
    from cortex.core.home import Home
    from cortex.store.indexer import rebuild_records_search
    info, _ = big_home
    home = Home(str(tmp_path_factory.mktemp("archived") / "home"))
    shutil.copytree(os.path.join(info["home"], "index"), os.path.dirname(home.index_db))
    con = sqlite3.connect(home.index_db)
    ids = [r[0] for r in con.execute("SELECT id FROM records ORDER BY id")]
    con.executemany("UPDATE records SET status='archived' WHERE id=?", [(i,) for i in ids[::9]])
    con.commit()
    con.close()
    rebuild_records_search(home)
    return home


@pytest.mark.parametrize("engine", [True, False])
@pytest.mark.parametrize("prompt_text", ["The session token cache keeps failing in the parser; why did we drop Redis?",
                                         "session session cache", "lock the queue worker config"])
@pytest.mark.parametrize("n", [1, 12, 400, 5000])
def test_record_hits_equal_filtering_every_hit(big_home, archived_copy, prompt_text, n, engine):
    """The prompt's records (index.record_hits: the best n of the project and its domain, active only) are
    the first n of every hit filtered by hand: from the engine, whose filters are part of the query, and
    from the postings, the fallback while the engine is rebuilt (filtered batch by batch)."""
    from cortex.store import search
    from cortex.store.index import bm25_scores, connect, record_hits
    from cortex.store.terms import query_terms
    info, _ = big_home
    con = connect(archived_copy.index_db, readonly=True)
    try:
        scope_ids = {info["project"], info["domain"]}
        in_scope = {r[0] for r in con.execute("SELECT id FROM records WHERE scope_id IN (?, ?) AND status='active'",
                                              tuple(scope_ids))}
        terms = query_terms(prompt_text)
        reader = search.Reader(archived_copy.index_db, "records") if engine else None
        if engine:
            everything = {k: s for s, k in reader.top(terms, 10 ** 7) if k in in_scope}
        else:
            everything = bm25_scores(con, terms, ids_filter=in_scope)
        want = [(s, rid) for rid, s in sorted(everything.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]
        got = record_hits(con, terms, n, scopes=scope_ids, reader=reader)
    finally:
        con.close()
    assert got == want and got


def test_small_talk_with_two_ordinary_words_that_earlier_sessions_used_prints_nothing(tmp_path, monkeypatch):
    import time as _time
    import cortex_testkit as testkit
    home, project, root = testkit.project_env(tmp_path, monkeypatch)
    t = _time.time() - 5 * 86400
    testkit.Chat(root, project, "s-earlier", t).turns(
        ("user", "The import left half the rows behind; continue the migration from the last batch and show "
                 "me the diff before committing."),
        ("assistant", "I'd suggest we make the importer continue from the last committed batch, and show the "
                      "diff of the rows it left behind."),
        ("user", "yes, do that"),
    ).stop(home)
    for i in range(10):  # the rest of the project's history
        testkit.Chat(root, project, "s-other-%d" % i, t + 3600 * (i + 1)).turns(
            ("user", "Add type hints to module %d of the billing service and run the linter." % i),
            ("assistant", "Added the hints; the linter is clean and the tests pass."),
        ).stop(home)
    testkit.normalize(home)
    cfg = config.load(home)
    for text in ("can you continue where you left off?", "show me the diff"):
        assert prompt.search(home, text, project, cfg, "s-now") == [], text
    # words that steer a chat do not count as its subject, though earlier chats said them word for word
    testkit.Chat(root, project, "s-steer", t + 20 * 3600).turns(
        ("user", "ok go ahead"), ("assistant", "Sounds good, I'll carry on with the next step."),
        ("user", "sounds good, carry on"), ("assistant", "Keep going with the next step: the migration."),
    ).stop(home)
    testkit.normalize(home)
    for text in ("ok go ahead", "sounds good, carry on", "keep going with the next step"):
        assert prompt.search(home, text, project, cfg, "s-now") == [], text
    # a prompt about the work itself still gets the earlier session
    hits = prompt.search(home, "the importer left rows behind after the migration batch", project, cfg, "s-now")
    assert hits and any("s-earlier" in (h.get("sessions") or [h.get("session")]) for h, _ in hits)


@pytest.fixture(scope="module")
def home_with_passages(tmp_path_factory):
    base = tmp_path_factory.mktemp("prompt-passages")
    project = base / "proj"
    project.mkdir()
    old = os.environ.get("CORTEX_HOME")
    info = build_home(str(base / "home"), 1500, str(project), passages=6000)
    if old is None:
        os.environ.pop("CORTEX_HOME", None)
    else:
        os.environ["CORTEX_HOME"] = old
    return info, str(project)


def test_the_block_is_built_only_when_a_record_it_may_show_reaches_the_lines(home_with_passages, monkeypatch):
    """search() builds the session-start block (to leave out what it shows) only when a record among the
    scope's candidates reaches the lines; the lines are those of building it every time."""
    from cortex.bench.run import PROMPT
    from cortex.core.home import Home
    from cortex.store import records
    info, project = home_with_passages
    home = Home(info["home"])
    cfg = config.load(home)
    now = 1.9e9
    _, details = session_start.build(home, project, cfg=cfg, now=now)
    assert details["kept"]
    texts = [PROMPT, "why did we choose Redis for the session cursor lock", "fix the parser test in the worker config",
             "lock the queue worker config", "validate the schema migration before the index rebuild"]
    texts += [r["text"] for r in details["kept"][:12]]  # prompts that the block's own records answer
    paths = sorted(records.iter_paths(home.records))
    texts += [records.read(p)["text"] for p in paths[::150]]
    real = session_start.build
    calls = []

    def spy(*a, **kw):
        calls.append(1)
        return real(*a, **kw)
    built = skipped = 0
    for text in texts:
        monkeypatch.setattr(session_start, "build", spy)
        del calls[:]
        got = prompt.search(home, text, project, cfg, "s-now", now=now)
        built += bool(calls)
        skipped += not calls
        monkeypatch.setattr(prompt, "_candidate_ids", lambda con, ids: None)  # every record checked: built always
        want = prompt.search(home, text, project, cfg, "s-now", now=now)
        monkeypatch.undo()
        assert [(h["kind"], h["id"], s) for h, s in got] == [(h["kind"], h["id"], s) for h, s in want], text
        assert got == want
    assert built >= 3 and skipped >= 3


@pytest.mark.parametrize("anchor,want", [(1, [1, 2]), (2, [1, 2]), (3, [3, 4]), (4, [3, 4]), (5, [5])])
def test_a_passage_line_quotes_the_question_and_its_answer(anchor, want):
    """A passage a turn (store.episodes.passages): its line quotes the prompt and the reply, whichever of the
    two anchors it, and a last prompt alone."""
    turns = [{"n": n, "role": "user" if n % 2 else "assistant", "text": "turn %d" % n, "at": ""} for n in range(1, 6)]
    row = {"path": "ep.md", "anchor": anchor, "first_turn": max(anchor - 1, 1), "last_turn": min(anchor + 1, 5)}
    assert [t["n"] for t in prompt._passage_turns(row, {"ep.md": turns})] == want


def test_last_and_previous_are_chat_words_not_search_terms():
    """"undo the last change" names nothing discussed: with "last" a search term it had three and matched a
    rejection that said "we sold the same last unit" (devchats seed 7, stop 22)."""
    from cortex.store.terms import query_terms
    chat = set(query_terms(prompt.CHAT_WORDS))
    assert set(query_terms("last previous")) <= chat
    assert len(set(query_terms("undo the last change")) - chat) < config.DEFAULTS["prompt"]["min_terms"]
