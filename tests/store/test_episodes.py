"""Episodes: what was said in each session, kept as episodes/<project>/<session>.md and searched as passages.

The episode files of the bundled real transcripts are read here (prompts present, thinking, injected
context and Cortex's own block absent, tool lines short), plus idempotence, recall kinds / filters /
JSON fields, `cortex show SESSION:TURN`, the cortex-prompt fallback, forget / reset / export / import,
retention and reindex.
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from cortex.core.schemas import validate
from cortex.ingest import adapters
from cortex.ingest.adapters import base as B
from cortex.model.redact import clean
from cortex.store import episodes
from cortex_testkit import (TRANSCRIPTS, append_turns, copy_fixture, drop_event, feed, hook_payload, normalize,
                            run_bin)

REDACTED_FIXTURES = {"codex-0.104-small", "codex-0.104-compacted"}


def flat(text: str) -> str:
    return " ".join(text.split())


def episode_of(home, session: str):
    want = episodes.safe_name(session) + ".md"
    paths = [p for p in episodes.iter_paths(home.episodes) if os.path.basename(p) == want]
    assert len(paths) == 1, (session, list(episodes.iter_paths(home.episodes)))
    return paths[0]


def passages_in_index(home) -> list:
    con = sqlite3.connect(home.index_db)
    try:
        return con.execute("SELECT id, session, anchor, first_turn, last_turn FROM passages ORDER BY id").fetchall()
    finally:
        con.close()


# ----------------------------------------------------------------------------------- the real transcripts

@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_episode_of_every_real_transcript(home, tmp_path, name):
    path, payload = feed(home, name, dest=tmp_path / "client")
    normalize(home)
    ep = episode_of(home, payload["session_id"])
    text = Path(ep).read_text(encoding="utf-8")
    front, turns = episodes.read(ep)
    assert validate("episode", front) == []
    assert front["session"] == payload["session_id"] and front["client"] == TRANSCRIPTS[name][2]
    assert front["turns"] == len(turns) > 0 and front["first"] <= front["last"]
    assert [t["n"] for t in turns] == list(range(1, len(turns) + 1))
    assert os.path.dirname(os.path.relpath(ep, home.root)).startswith("episodes" + os.sep)
    body = flat("\n".join(t["text"] for t in turns))  # as written, with the heading escapes undone
    entries = adapters.get(TRANSCRIPTS[name][2]).parse(str(path)).entries
    main = [e for e in entries if not e.sidechain]
    # every prompt the human typed is there (redacted as records are)
    prompts = [flat(clean(e.text)[0]) for e in main if e.kind == B.USER and "<cortex-memory" not in e.text]
    assert prompts
    for p in prompts:
        assert p[:80] in body, p[:80]
    # the assistant's prose too
    for e in main:
        if e.kind == B.ASSISTANT and len(e.text.strip()) > 30:
            assert flat(clean(e.text)[0])[:60] in body
    # no thinking, no injected context, no subagent text, no Cortex block
    hidden = [e for e in entries if e.kind in (B.THINKING, B.INJECTED) or (e.sidechain and e.kind == B.ASSISTANT)]
    shown = set(prompts)
    for e in hidden:
        chunk = flat(e.text)[20:100]
        if len(chunk) >= 60 and not any(chunk in p for p in shown):
            assert chunk not in body, (e.kind, chunk)
    assert "<cortex-memory" not in text and "<system-reminder>" not in text
    # tool actions are one short line each, never raw output
    tool_lines = [ln for t in turns if t["role"] == "assistant" for ln in t["text"].split("\n")
                  if re.match(r"- (ran|edited|wrote|read|searched|delegated|used) ", ln)]
    if any(e.kind == B.TOOL_CALL for e in main) and name not in REDACTED_FIXTURES:
        assert tool_lines
    assert all(len(ln) <= 2 + 3 * 170 for ln in tool_lines)
    outputs = [flat(e.text) for e in main if e.kind == B.TOOL_RESULT and len(flat(e.text)) > 400]
    for out in outputs[:20]:
        assert out[100:400] not in body
    # no body line makes a heading of its own: only the turns' headings
    assert len(re.findall(r"^## ", text, re.M)) == len(turns)
    # the passages of the episode are in the index
    rows = [r for r in passages_in_index(home) if r[1] == payload["session_id"]]
    assert rows and {r[2] for r in rows} == {p["anchor"] for p in episodes.passages(turns)}


def test_tool_lines_name_the_file_and_the_failure(home, tmp_path):
    path, payload = feed(home, "codex-0.125", dest=tmp_path / "client")
    normalize(home)
    text = Path(episode_of(home, payload["session_id"])).read_text()
    assert re.search(r"^- ran rg -n ", text, re.M)
    assert re.search(r"^- ran .* → (exit \d+|failed)", text, re.M)
    assert "let's update the defailt context compart to 90 in env var" in text


# ----------------------------------------------------------------------------------- idempotence

def test_a_rerun_and_more_turns_keep_the_file_consistent(home, tmp_path):
    path, payload = feed(home, "cc-1.0.98", dest=tmp_path / "client")
    normalize(home)
    ep = episode_of(home, payload["session_id"])
    before = Path(ep).read_bytes()
    # the same window read again (the cursor lost, as after a kill before its save) writes the same bytes
    cur = json.loads(Path(home.cursors).read_text())
    Path(home.cursors).write_text(json.dumps({k: dict(v, offset=0) for k, v in cur.items()}))
    drop_event(home, hook_payload(path))
    normalize(home)
    assert Path(ep).read_bytes() == before
    # later turns are appended; the turns kept so far are unchanged
    append_turns(path, [("user", "should the quokka limiter apply to admin accounts as well?"),
                        ("assistant", "yes, but only for admins with API keys; the quokka limiter skips the rest.")])
    drop_event(home, hook_payload(path))
    normalize(home)
    after = Path(ep).read_bytes()
    assert after.startswith(before.split(b"\n---\n", 1)[1][:200]) or before.split(b"\n---\n", 1)[1] in after
    front, turns = episodes.read(ep)
    assert turns[-2]["text"].startswith("should the quokka limiter") and turns[-1]["role"] == "assistant"
    # the cursor keeps the episode's size as it saw it: taken back a window (as a run killed between the
    # episode write and the cursor save leaves it), the rerun writes the same turns
    before2 = after
    cur = json.loads(Path(home.cursors).read_text())
    key = os.path.realpath(str(path))
    assert cur[key]["ep"] == [len(turns), len(turns[-1]["text"])]
    cur[key]["offset"] = max(cur[key]["offset"] - 200, 1)
    cur[key]["ep"] = [len(turns) - 2, len(turns[-3]["text"])]
    Path(home.cursors).write_text(json.dumps(cur))
    drop_event(home, hook_payload(path))
    normalize(home)
    # (the normalizer may take a cursor moved by hand for a replaced transcript and read it from the start:
    # the same turns either way; byte-for-byte reruns after kills are checked in tests/reliability/test_crash.py)
    assert episodes.read(ep)[1] == episodes.read(Path(ep))[1] and [
        (t["role"], t["text"]) for t in episodes.read(ep)[1]] == [(t["role"], t["text"]) for t in turns]
    assert len(before2) > 0


def test_append_is_idempotent_per_window(tmp_path):
    from cortex.core.home import Home
    home = Home(str(tmp_path / "h")).ensure()
    t1 = [{"role": "user", "at": "2026-01-01T00:00:00Z", "parts": ["first prompt"]},
          {"role": "assistant", "at": "2026-01-01T00:00:01Z", "parts": ["a reply", "- edited a.py"]}]
    t2 = [{"role": "assistant", "at": "2026-01-01T00:00:02Z", "parts": ["- ran pytest → exit 1 / E boom"]},
          {"role": "user", "at": "2026-01-01T00:00:03Z", "parts": ["# a heading-like line\n\\ and a backslash"]}]
    kw = dict(session="s1", client="claude-code", project="p-1", transcript="/t.jsonl")
    episodes.append(home, new_turns=t1, start=0, end=100, **kw)
    one = Path(episodes.episode_path(home, "p-1", "s1")).read_bytes()
    assert episodes.append(home, new_turns=t1, start=0, end=100, **kw)[3] == 1  # the first window again
    assert Path(episodes.episode_path(home, "p-1", "s1")).read_bytes() == one
    episodes.append(home, new_turns=t2, start=100, end=200, **kw)
    two = Path(episodes.episode_path(home, "p-1", "s1")).read_bytes()
    episodes.append(home, new_turns=t2, start=100, end=250, **kw)  # that window again, grown: rolled back first
    front, turns = episodes.read(episodes.episode_path(home, "p-1", "s1"))
    assert len(turns) == 3 and turns[1]["text"].count("ran pytest") == 1
    assert turns[2]["text"] == "# a heading-like line\n\\ and a backslash"
    episodes.append(home, new_turns=t2, start=100, end=200, **kw)
    assert Path(episodes.episode_path(home, "p-1", "s1")).read_bytes() == two
    assert episodes.append(home, new_turns=t2, start=50, end=200, **kw) is None  # inside what is held: skipped
    # a window whose reply continues the last turn with a list right after a tool line: the same bytes again
    t3 = [{"role": "assistant", "at": "2026-01-01T00:00:04Z", "parts": ["- ran make"]}]
    t4 = [{"role": "assistant", "at": "2026-01-01T00:00:05Z", "parts": ["- a list item\nthen prose", "- edited b.py"]}]
    episodes.append(home, new_turns=t3, start=200, end=300, **kw)
    episodes.append(home, new_turns=t4, start=300, end=400, **kw)
    four = Path(episodes.episode_path(home, "p-1", "s1")).read_bytes()
    episodes.append(home, new_turns=t4, start=300, end=400, **kw)
    assert Path(episodes.episode_path(home, "p-1", "s1")).read_bytes() == four


# ----------------------------------------------------------------------------------- search

def _chat_home(home, tmp_path):
    """A session whose answer names no subject, and a record about something else."""
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, [
        ("user", "Should the wombat throttle in charge_invoice() also cover refunds?"),
        ("assistant", "Good question."),
        ("user", "yes, but only for admins"),
        ("assistant", "Done: refunds by admins now go through the wombat throttle; others are not limited."),
    ])
    drop_event(home, hook_payload(path))
    normalize(home)
    return path, hook_payload(path)


def test_recall_kinds_filters_and_json_fields(home, tmp_path):
    from cortex.ops.recall import recall
    path, payload = _chat_home(home, tmp_path)
    cwd = payload["cwd"]
    res = recall(home, "admins refunds throttle", cwd=cwd, record_use=False)
    eps = [h for h in res["hits"] if h["kind"] == "episode"]
    assert eps, res["hits"]
    h = eps[0]
    for key in ("kind", "session", "at", "client", "path", "turns", "id", "score", "snippet"):
        assert key in h
    assert h["session"] == payload["session_id"] and h["client"] == "claude-code"
    assert h["path"].startswith(home.episodes) and h["turns"][0] <= h["anchor"] <= h["turns"][1]
    assert "wombat" in h["text"]  # the question that names the subject travels with the terse answer
    assert all(x["kind"] == "record" for x in recall(home, "admins refunds throttle", cwd=cwd, record_use=False,
                                                     kind="record")["hits"])
    only = recall(home, "admins refunds throttle", cwd=cwd, record_use=False, kind="episode")["hits"]
    assert only and all(x["kind"] == "episode" for x in only)
    # the CLI: --kind and --json; every hit carries kind, session, at, client, path
    p = run_bin("cortex", "recall", "wombat", "throttle", "--json", "--no-use", "--cwd", cwd, home=home)
    assert p.returncode == 0, p.stderr
    hits = json.loads(p.stdout)["hits"]
    assert hits and all({"kind", "session", "at", "client", "path"} <= set(x) for x in hits)
    p = run_bin("cortex", "recall", "wombat", "--kind", "episode", "--cwd", cwd, home=home)
    assert p.returncode == 0 and b"episode" in p.stdout
    # show opens the passage with its turns
    p = run_bin("cortex", "show", h["id"], "--json", home=home)
    shown = json.loads(p.stdout)
    assert shown["kind"] == "episode" and shown["turns"] == h["turns"]
    assert any("only for admins" in t["text"] for t in shown["text_turns"])
    p = run_bin("cortex", "show", "%s:%d" % (payload["session_id"], h["turns"][1]), home=home)
    assert p.returncode == 0 and b"turn" in p.stdout


def test_a_record_ranks_above_the_passage_that_says_the_same(home, tmp_path):
    from cortex.ops.recall import recall
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, [("user", "which queue do we use for the numbat exports?"),
                        ("assistant", "[MEMORY: decision] The numbat exports use the redis stream queue, not celery.")])
    drop_event(home, hook_payload(path))
    normalize(home)
    res = recall(home, "numbat exports queue", cwd=hook_payload(path)["cwd"], record_use=False)
    kinds = [h["kind"] for h in res["hits"]]
    assert "record" in kinds and "episode" in kinds
    assert kinds.index("record") < kinds.index("episode")
    assert res["hits"][0]["type"] == "decision"


def test_prompt_falls_back_to_a_passage_and_stays_silent_on_small_talk(home, tmp_path):
    from cortex.brief import prompt
    from cortex.core import config
    path, payload = _chat_home(home, tmp_path)
    cfg = config.load(home)
    cfg["prompt"]["min_passage_score"] = 0.0  # a one-session home: idf is small
    hits = prompt.search(home, "the wombat throttle on refunds for charge_invoice", payload["cwd"], cfg,
                         session_id="another-session")
    assert hits and hits[0][0]["type"] == "episode"
    out = prompt.render_hits(hits)
    assert "session %s" % payload["session_id"][:8] in out and "wombat" in out
    assert re.search(r"\[said \d{4}-\d\d-\d\d, session ", out)
    # the session's own passages are never printed back to it
    assert not [h for h in prompt.search(home, "the wombat throttle on refunds for charge_invoice", payload["cwd"],
                                         cfg, session_id=payload["session_id"]) if h[0]["type"] == "episode"]
    assert prompt.search(home, "thanks!", payload["cwd"], cfg) == []
    cfg["prompt"]["passages"] = False
    assert not [h for h in prompt.search(home, "the wombat throttle on refunds for charge_invoice", payload["cwd"],
                                         cfg) if h[0]["type"] == "episode"]


# ----------------------------------------------------------------------------------- lifecycle

def test_forget_session_archives_then_hard_deletes_the_episode(home, tmp_path):
    path, payload = _chat_home(home, tmp_path)
    sid = payload["session_id"]
    ep = episode_of(home, sid)
    p = run_bin("cortex", "forget", "--session", sid, "--yes", home=home)
    assert p.returncode == 0, p.stderr
    assert os.path.exists(ep) and episodes.read(ep)[0].get("archived")
    assert not [r for r in passages_in_index(home) if r[1] == sid]
    run_bin("cortex", "reindex", home=home)
    assert not [r for r in passages_in_index(home) if r[1] == sid]  # an archived episode stays out
    p = run_bin("cortex", "forget", "--session", sid, "--hard", "--yes", home=home)
    assert p.returncode == 0, p.stderr
    assert not os.path.exists(ep)
    con = sqlite3.connect(home.index_db)
    raw = b"".join(open(f, "rb").read() for f in (home.index_db, home.index_db + "-wal") if os.path.exists(f))
    con.close()
    assert b"wombat" not in raw


def test_forget_hard_of_a_record_blanks_its_words_in_the_episode(home, tmp_path):
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, [("user", "where do the platypus backups go?"),
                        ("assistant", "[MEMORY: learned] The platypus backups go to the cold bucket in eu-west-3.")])
    drop_event(home, hook_payload(path))
    normalize(home)
    cwd = hook_payload(path)["cwd"]
    p = run_bin("cortex", "forget", "platypus", "backups", "--hard", "--yes", "--cwd", cwd, home=home)
    assert p.returncode == 0, p.stderr
    text = Path(episode_of(home, hook_payload(path)["session_id"])).read_text()
    assert "cold bucket in eu-west-3" not in text and episodes.FORGOTTEN in text


def test_reset_project_export_import_status_and_reindex(home, tmp_path):
    path, payload = _chat_home(home, tmp_path)
    cwd = payload["cwd"]
    p = run_bin("cortex", "export", "--episodes", home=home)
    lines = [json.loads(x) for x in p.stdout.decode().splitlines() if x.strip()]
    eps = [x for x in lines if "episode" in x]
    assert len(eps) == 1 and eps[0]["episode"]["session"] == payload["session_id"]
    assert any("only for admins" in t["text"] for t in eps[0]["turns"])
    exported = p.stdout
    assert all("episode" not in json.loads(x) for x in run_bin("cortex", "export", home=home).stdout.decode().splitlines())
    p = run_bin("cortex", "status", "--json", home=home)
    st = json.loads(p.stdout)
    assert st["episodes"]["files"] == 1 and st["episodes"]["passages"] > 0
    p = run_bin("cortex", "reset", "--project", "--yes", "--cwd", cwd, home=home)
    assert p.returncode == 0, p.stderr
    assert list(episodes.iter_paths(home.episodes)) == [] and passages_in_index(home) == []
    # import brings the episode back, searchable
    imp = tmp_path / "export.jsonl"
    imp.write_bytes(exported)
    p = run_bin("cortex", "import", str(imp), home=home)
    assert p.returncode == 0, p.stderr
    assert len(list(episodes.iter_paths(home.episodes))) == 1 and passages_in_index(home)
    before = passages_in_index(home)
    p = run_bin("cortex", "reindex", home=home)
    assert p.returncode == 0 and passages_in_index(home) == before
    p = run_bin("cortex", "doctor", "--json", home=home)
    assert b"episodes" in p.stdout


def test_retention_deletes_old_episodes(home, tmp_path):
    from cortex.core import config
    from cortex.ingest.episode_step import prune
    path, payload = _chat_home(home, tmp_path)
    ep = episode_of(home, payload["session_id"])
    cfg = config.load(home)
    assert prune(home, cfg) == 0 and os.path.exists(ep)
    later = os.path.getmtime(ep) + 400 * 86400
    from cortex.store.index import iso_to_epoch
    assert iso_to_epoch(episodes.read(ep)[0]["last"]) < later - 365 * 86400
    assert prune(home, cfg, now=later) == 1
    assert not os.path.exists(ep) and passages_in_index(home) == []
    cfg["episodes"]["retention_days"] = 0
    assert prune(home, cfg, now=later * 2) == 0
