"""Cortex end to end with the real Gemini CLI (0.61, npm), offline, against the local Gemini mock.

Gemini CLI reads GOOGLE_GEMINI_BASE_URL, accepts a dummy GEMINI_API_KEY once the user settings select
the API-key login, runs hooks of a workspace it trusts (GEMINI_CLI_TRUST_WORKSPACE=true), asks a model
router for a JSON classification before each turn and streams the turn itself: the mock answers both.
Its chat file is JSON Lines with {"$set": ...} patch lines, and it saves the SessionStart context in the
transcript inside <hook_context>, which Cortex must not capture again.
"""
import json
import secrets

import pytest

from clients import Sandbox, body_has
from mock_models import MockModel, decision_line, decision_text

pytestmark = pytest.mark.e2e


def marker(word: str) -> str:
    return "%s%s" % (word, secrets.token_hex(3))


@pytest.fixture
def sandbox(tmp_path, clis):
    sb = Sandbox(tmp_path / "sandbox", clis)
    sb.anthropic = MockModel("anthropic", log_path=str(tmp_path / "anthropic.jsonl"), max_seconds=1200).start()
    sb.gemini_mock = MockModel("gemini", log_path=str(tmp_path / "gemini.jsonl"), max_seconds=1200).start()
    try:
        yield sb
    finally:
        sb.anthropic.stop()
        sb.gemini_mock.stop()


def _install(sb):
    r = sb.cortex("install", "gemini", "--project", str(sb.project)).check("cortex install gemini")
    assert "+ SessionStart" in r.stdout and "ms)" in r.stdout, r.stdout  # Gemini's timeouts are milliseconds


def test_gemini_memory_reaches_a_new_session_and_its_hook_context_is_not_captured_again(sandbox):
    sb = sandbox
    _install(sb)
    m = marker("heron")
    mark = sb.gemini_mock.mark()
    r1 = sb.gemini("MEMO:%s RUN_TOOL set up the cache" % m, "--approval-mode", "yolo")
    kinds = [q["reply_kind"] for q in sb.gemini_mock.since(mark) if q.get("reply_kind")]
    assert "json" in kinds and "tool_call" in kinds and "after_tool" in kinds, kinds
    assert decision_line(m) in r1.stdout

    evs = sb.event_docs()
    names = [e["payload"].get("hook_event_name") for e in evs]
    assert "AfterAgent" in names and "SessionEnd" in names, names
    assert all(e["client"] == "gemini" and e["parsed"] for e in evs)
    assert evs[0]["payload"]["transcript_path"].endswith(".jsonl")  # the JSON Lines chat file

    sb.normalize()
    decisions = [r for r in sb.records() if r["type"] == "decision"]
    assert [r["text"] for r in decisions] == [decision_text(m)]
    assert decisions[0]["provenance"][0]["client"] == "gemini"

    mark = sb.gemini_mock.mark()
    sb.gemini("what did we decide about the cache?")
    assert body_has(sb.gemini_mock.model_requests(mark), decision_text(m)), \
        "the decision from session 1 is not in session 2's request"

    # session 2's transcript holds the block inside <hook_context>: reading it must not record it again
    sb.normalize()
    texts = [r["text"] for r in sb.records()]
    assert not [t for t in texts if "cortex-memory" in t or "Notes from earlier sessions" in t], texts
    assert sum(decision_text(m) in t for t in texts) == 1
    # the second session is kept as what was said (its episode), found by recall like the records
    found = json.loads(sb.cortex("recall", "what did we decide about the cache", "--kind", "episode", "--json",
                                 "--cwd", str(sb.project)).check("cortex recall").stdout)
    assert any(h["kind"] == "episode" and h["client"] == "gemini" for h in found["hits"]), found


def test_claude_code_to_gemini_and_back_through_one_home(sandbox):
    sb = sandbox
    _install(sb)
    sb.cortex("install", "claude-code", "--project", str(sb.project)).check()

    from_claude = marker("alder")
    sb.claude("MEMO:%s decide the cache" % from_claude)
    sb.normalize()
    mark = sb.gemini_mock.mark()
    sb.gemini("what did we decide earlier?")
    assert body_has(sb.gemini_mock.model_requests(mark), decision_text(from_claude)), \
        "a memory written in Claude Code did not reach Gemini CLI"

    from_gemini = marker("birch")
    sb.gemini("MEMO:%s decide the cache" % from_gemini)
    sb.normalize()
    mark = sb.anthropic.mark()
    sb.claude("what did we decide earlier?")
    reqs = sb.anthropic.model_requests(mark)
    assert body_has(reqs, decision_text(from_gemini)), "a memory written in Gemini CLI did not reach Claude Code"
    assert body_has(reqs, decision_text(from_claude))
    by_text = {r["text"]: r for r in sb.records()}
    assert by_text[decision_text(from_gemini)]["provenance"][0]["client"] == "gemini"
