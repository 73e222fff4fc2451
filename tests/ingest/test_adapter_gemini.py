"""Gemini CLI chat adapter, checked against a real chat recording (see SOURCES.md)."""
from __future__ import annotations

import glob
import hashlib
import json
import os

import pytest

from cortex.ingest.adapters.base import (
    ASSISTANT, ENTRY_KINDS, INJECTED, OTHER, PLAN, PLAN_STATUSES, READ, SEARCH, SHELL, TASK,
    THINKING, TOOL_CALL, TOOL_RESULT, USER, WRITE,
)
from cortex.ingest.adapters.gemini import GeminiAdapter

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
TRANSCRIPTS = os.path.join(HERE, "fixtures", "transcripts")
(CHAT,) = glob.glob(os.path.join(TRANSCRIPTS, "gemini", "gemini-cli-chat-file-ops", "*.json"))
OTHER_CLIENTS = sorted(
    glob.glob(os.path.join(TRANSCRIPTS, "claude-code", "**", "*.jsonl"), recursive=True)
    + glob.glob(os.path.join(TRANSCRIPTS, "codex", "*", "*.jsonl")))

adapter = GeminiAdapter()


def load():
    with open(CHAT, encoding="utf-8") as f:
        return json.load(f)


DOC = load()
MESSAGES = DOC["messages"]
FULL = adapter.parse(CHAT)


def of(result, kind):
    return [e for e in result.entries if e.kind == kind]


def write(tmp_path, doc, name="session.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return str(path)


def chat(messages, **extra):
    doc = {"sessionId": "s-1", "projectHash": "0" * 64, "startTime": "2026-01-01T00:00:00.000Z",
           "lastUpdated": "2026-01-01T00:10:00.000Z", "messages": messages}
    doc.update(extra)
    return doc


def gemini_msg(i, content="", tool_calls=None, thoughts=None):
    m = {"id": f"g{i}", "timestamp": f"2026-01-01T00:00:{i:02d}.000Z", "type": "gemini",
         "content": content, "thoughts": thoughts or []}
    if tool_calls is not None:
        m["toolCalls"] = tool_calls
    return m


def user_msg(i, content):
    return {"id": f"u{i}", "timestamp": f"2026-01-01T00:00:{i:02d}.000Z", "type": "user",
            "content": content}


def tool(name, args, status="success", output="ok", cid=None):
    call = {"id": cid or f"{name}-1", "name": name, "args": args, "status": status,
            "timestamp": "2026-01-01T00:00:30.000Z"}
    if output is not None:
        key = "error" if status == "error" else "output"
        call["result"] = [{"functionResponse": {"id": call["id"], "name": name,
                                                "response": {key: output}}}]
    return call


# -- the fixture ----------------------------------------------------------------------

def test_fixture_parses_cleanly():
    assert FULL.bad_lines == 0
    assert not FULL.truncated
    assert FULL.warnings == []
    assert FULL.cursor == len(MESSAGES) == 14
    last = -1
    for e in FULL.entries:
        assert e.kind in ENTRY_KINDS
        assert e.ref.startswith("M")
        index = int(e.ref[1:])
        assert last <= index < len(MESSAGES)
        last = index
        assert e.message_id == MESSAGES[index]["id"]
        for it in e.plan:
            assert it.status in PLAN_STATUSES


def test_meta():
    m = FULL.meta
    assert m.client == "gemini"
    assert m.session_id == DOC["sessionId"] == "37b7abef-713d-4522-85f0-8ff15a4e6d17"
    assert m.started_at == DOC["startTime"]
    # Paths in the fixture were redacted, so none hashes to projectHash: no cwd is guessed.
    assert m.cwd is None


def test_user_prompts_in_order():
    users = of(FULL, USER)
    expected = [(f"M{i}", m["content"]) for i, m in enumerate(MESSAGES) if m["type"] == "user"]
    assert [(e.ref, e.text) for e in users] == expected
    assert [e.text for e in users] == [
        "show tools",
        "expore repository and figure out issues. focus on adaptability and security",
        "create hello.md file", "add 5 lines of random text", "remove 2 and 3 line"]


def test_assistant_text_once_per_gemini_message():
    replies = of(FULL, ASSISTANT)
    expected = [(f"M{i}", m["content"]) for i, m in enumerate(MESSAGES)
                if m["type"] == "gemini" and m["content"].strip()]
    assert [(e.ref, e.text) for e in replies] == expected
    assert len(replies) == 5
    assert of(FULL, THINKING) == []  # every `thoughts` list in this recording is empty


def test_every_tool_call_has_a_result():
    calls = of(FULL, TOOL_CALL)
    results = of(FULL, TOOL_RESULT)
    raw = [tc for m in MESSAGES for tc in m.get("toolCalls") or []]
    assert len(calls) == len(results) == len(raw) == 14
    assert [c.call_id for c in calls] == [tc["id"] for tc in raw]
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert not any(r.is_error for r in results)
    assert results[-1].text.startswith("Successfully overwrote file: ")


def test_tool_actions_and_files():
    calls = of(FULL, TOOL_CALL)
    seen = {(c.tool, c.action) for c in calls}
    assert seen == {("write_todos", OTHER), ("delegate_to_agent", TASK), ("read_file", READ),
                    ("write_file", WRITE), ("search_file_content", SEARCH)}
    reads = [c.files for c in calls if c.tool == "read_file"]
    assert reads == [("SECURITY.md",), ("scripts/validate-secrets.js",), ("src/env/manager.ts",),
                     (".husky/pre-commit",), ("hello.md",), ("hello.md",)]
    assert [c.files for c in calls if c.tool == "write_file"] == [("hello.md",)] * 3
    # Search paths are where to look, not files touched.
    assert [c.files for c in calls if c.tool == "search_file_content"] == [()]
    assert [c.text for c in calls if c.tool == "search_file_content"] == ["CredentialStore"]
    results = {r.call_id: r for r in of(FULL, TOOL_RESULT)}
    for c in calls:
        assert (results[c.call_id].tool, results[c.call_id].action,
                results[c.call_id].files) == (c.tool, c.action, c.files)


def test_write_todos_gives_plans():
    plans = of(FULL, PLAN)
    assert len(plans) == 3
    todo_calls = [c for c in of(FULL, TOOL_CALL) if c.tool == "write_todos"]
    assert [p.call_id for p in plans] == [c.call_id for c in todo_calls]
    assert [(i.status, i.text[:40]) for i in plans[-1].plan] == [
        ("completed", "Investigate codebase architecture for Ad"),
        ("completed", "Review specific security policy document"),
        ("completed", "Analyze configuration and environment ma"),
        ("in_progress", "Check usages of CredentialStore and pre-"),
        ("pending", "Synthesize findings and report issues"),
    ]
    assert [i.status for i in plans[0].plan] == ["in_progress", "pending", "pending", "pending"]


# -- incremental reading --------------------------------------------------------------

@pytest.mark.parametrize("k", range(len(MESSAGES) + 1))
def test_prefix_then_rest_equals_one_parse(tmp_path, k):
    doc = load()
    doc["messages"] = doc["messages"][:k]
    first = adapter.parse(write(tmp_path, doc))
    assert first.cursor == k
    second = adapter.parse(CHAT, first.cursor)
    assert first.entries + second.entries == FULL.entries
    assert second.cursor == len(MESSAGES)


def test_partial_write_is_left_for_later(tmp_path):
    with open(CHAT, "rb") as f:
        data = f.read()
    path = tmp_path / "live.json"
    path.write_bytes(data[: len(data) // 2])
    r = adapter.parse(str(path), 3)
    assert r.truncated and r.entries == [] and r.cursor == 3 and r.bad_lines == 0
    assert r.meta.session_id == DOC["sessionId"]  # still known from the top of the file
    path.write_bytes(data)
    r2 = adapter.parse(str(path), 3)
    assert not r2.truncated
    assert r2.entries == [e for e in FULL.entries if int(e.ref[1:]) >= 3]


def test_running_tool_call_is_not_consumed(tmp_path):
    running = tool("run_shell_command", {"command": "npm test"}, status="executing", output=None)
    msgs = [user_msg(0, "run the tests"), gemini_msg(1, "", [running])]
    path = write(tmp_path, chat(msgs))
    r = adapter.parse(path)
    assert r.cursor == 1 and [e.kind for e in r.entries] == [USER]
    done = tool("run_shell_command", {"command": "npm test"}, status="success",
                output="Command: npm test\nDirectory: (root)\nOutput: 1 failed\nError: (none)\n"
                       "Exit Code: 1\nSignal: (none)")
    msgs[1] = gemini_msg(1, "", [done])
    r2 = adapter.parse(write(tmp_path, chat(msgs)), r.cursor)
    assert r2.cursor == 2
    call, result = r2.entries
    assert (call.kind, call.action, call.text) == (TOOL_CALL, SHELL, "npm test")
    assert (result.kind, result.exit_code, result.is_error) == (TOOL_RESULT, 1, True)


def test_cursor_past_end_reads_from_the_start(tmp_path):
    """A file rewritten with fewer messages than the cursor is read again from its first (issue #18, 5)."""
    r = adapter.parse(CHAT, 99)
    whole = adapter.parse(CHAT)
    assert r.restarted and r.warnings and r.cursor == whole.cursor
    assert [(e.kind, e.text) for e in r.entries] == [(e.kind, e.text) for e in whole.entries]


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        adapter.parse(str(tmp_path / "nope.json"))


# -- synthetic cases the fixture lacks ------------------------------------------------

def test_failed_and_cancelled_tools_are_errors(tmp_path):
    msgs = [gemini_msg(0, "", [
        tool("replace", {"file_path": "/p/a.py", "old_string": "x", "new_string": "y"},
             status="error", output="could not find the string"),
        tool("write_file", {"file_path": "b.py", "content": ""}, status="cancelled", output=None),
        tool("run_shell_command", {"command": "ls"}, output="Output: a\nExit Code: 0"),
    ])]
    r = adapter.parse(write(tmp_path, chat(msgs)))
    results = of(r, TOOL_RESULT)
    assert [(e.tool, e.action, e.is_error, e.exit_code) for e in results] == [
        ("replace", "edit", True, None), ("write_file", WRITE, True, None),
        ("run_shell_command", SHELL, False, 0)]
    assert results[0].text == "could not find the string"
    assert results[0].files == ("/p/a.py",)


def test_todo_statuses_are_mapped(tmp_path):
    todos = [{"description": "a", "status": "cancelled"}, {"description": "b", "status": "pending"},
             {"description": "c", "status": "in_progress"}, {"description": "d", "status": "completed"},
             {"description": "e", "status": "weird"}]
    r = adapter.parse(write(tmp_path, chat([gemini_msg(0, "", [tool("write_todos", {"todos": todos})])])))
    (plan,) = of(r, PLAN)
    assert [(i.text, i.status) for i in plan.plan] == [
        ("a", "completed"), ("b", "pending"), ("c", "in_progress"), ("d", "completed"),
        ("e", "pending")]


def test_thoughts_become_thinking(tmp_path):
    thoughts = [{"subject": "Planning", "description": "Read the config first.",
                 "timestamp": "2026-01-01T00:00:05.000Z"}]
    r = adapter.parse(write(tmp_path, chat([gemini_msg(3, "Done.", thoughts=thoughts)])))
    assert [(e.kind, e.text, e.ts) for e in r.entries] == [
        (THINKING, "Planning: Read the config first.", "2026-01-01T00:00:05.000Z"),
        (ASSISTANT, "Done.", "2026-01-01T00:00:03.000Z")]


def test_content_as_parts_and_notices(tmp_path):
    msgs = [user_msg(0, [{"text": "hello "}, {"text": "there"}]),
            {"id": "i1", "type": "info", "content": "Request cancelled."},
            {"id": "e1", "type": "error", "content": "API error"},
            "not a message"]
    r = adapter.parse(write(tmp_path, chat(msgs)))
    assert [(e.kind, e.text) for e in r.entries] == [(USER, "hello there")]
    assert r.bad_lines == 1 and r.cursor == 4


def test_cortex_memory_block_is_injected(tmp_path):
    block = "<cortex-memory>\n- decision: SQLite\n</cortex-memory>"
    msgs = [user_msg(0, block + "\n\nadd a login page"), user_msg(1, block)]
    r = adapter.parse(write(tmp_path, chat(msgs)))
    assert [(e.kind, e.text, e.ref) for e in r.entries] == [
        (INJECTED, block, "M0"), (USER, "add a login page", "M0"), (INJECTED, block, "M1")]


def test_cwd_when_a_path_hashes_to_project_hash(tmp_path):
    # Gemini CLI names the project by sha256(project root).  write_file reported the
    # absolute path it wrote, so the root can be confirmed against the hash.
    root = "/Users/user/repos/EPMCDME/codemie-ai/codemie-code"
    doc = load()
    doc["projectHash"] = hashlib.sha256(root.encode()).hexdigest()
    assert adapter.parse(write(tmp_path, doc)).meta.cwd == root
    doc["projectHash"] = hashlib.sha256(b"/somewhere/else").hexdigest()
    assert adapter.parse(write(tmp_path, doc)).meta.cwd is None


# -- sniff ----------------------------------------------------------------------------

def _head(path):
    with open(path, "rb") as f:
        return f.read(65536)


def test_sniff_accepts_chat_file():
    assert adapter.sniff(_head(CHAT), CHAT)
    compact = json.dumps(DOC).encode()[:65536]
    assert adapter.sniff(compact, "x.json")


@pytest.mark.parametrize("path", OTHER_CLIENTS, ids=lambda p: os.path.relpath(p, TRANSCRIPTS))
def test_sniff_rejects_other_clients(path):
    assert not adapter.sniff(_head(path), path)


def test_sniff_rejects_json_lines_mentioning_the_keys():
    line = json.dumps({"sessionId": "x", "projectHash": "y", "messages": []}).encode()
    assert not adapter.sniff(line + b"\n" + line + b"\n", "x.jsonl")
    assert not adapter.sniff(b'["sessionId", "messages", "projectHash"]', "x.json")


# --------------------------------------------------------------------------- the JSON Lines chat file (0.6x)

def _jsonl_chat(path, tail_partial=False):
    """A chat file shaped like Gemini CLI 0.61 writes it (seen with the real CLI in tests/e2e): a header,
    {"$set": ...} patches, messages appended, a message rewritten under its id once its tool ran."""
    sid = "3966b3ee-0000-4000-8000-000000000001"
    call = {"id": "run_shell_command__1", "name": "run_shell_command",
            "args": {"command": "pytest -q tests/test_cache.py", "description": "run the tests"}}
    done = dict(call, status="success", timestamp="2026-11-24T07:38:13.718Z", result=[{"functionResponse": {
        "id": "run_shell_command__1", "name": "run_shell_command",
        "response": {"output": "Output: 3 passed\nExit Code: 0"}}}])
    lines = [
        {"sessionId": sid, "projectHash": "0" * 64, "startTime": "2026-11-24T07:38:10.000Z",
         "lastUpdated": "2026-11-24T07:38:10.000Z", "kind": "main"},
        {"$set": {"messages": [{"id": "ctx", "timestamp": "2026-11-24T07:38:10.001Z", "type": "user", "content": [
            {"text": "<session_context>\nThis is the Gemini CLI.\n- /home/u/shop\n</session_context>"}]}]}},
        {"id": "u1", "timestamp": "2026-11-24T07:38:11.000Z", "type": "user", "content": [
            {"text": "<hook_context>&lt;cortex-memory project=\"shop\"&gt;\n- [decision] old note\n"
                     "&lt;/cortex-memory&gt;</hook_context>\n\nmake the cache tests pass"}]},
        {"$set": {"lastUpdated": "2026-11-24T07:38:11.000Z"}},
        {"id": "g1", "timestamp": "2026-11-24T07:38:12.000Z", "type": "gemini", "content": "", "thoughts": [],
         "model": "m"},
        {"id": "g1", "timestamp": "2026-11-24T07:38:12.000Z", "type": "gemini", "content": "", "thoughts": [],
         "model": "m", "toolCalls": [done]},
        {"id": "u2", "timestamp": "2026-11-24T07:38:13.800Z", "type": "user", "content": [done["result"][0]]},
        {"id": "g2", "timestamp": "2026-11-24T07:38:14.000Z", "type": "gemini",
         "content": "The cache tests pass now.\n[MEMORY: gotcha] The cache tests need REDIS_URL unset.", "model": "m"},
    ]
    text = "\n".join(json.dumps(l) for l in lines) + "\n"
    if tail_partial:
        text += '{"id": "g3", "timestamp": "2026-11-24T07:38:15.000Z", "type": "gem'
    path.write_text(text)
    return path


def test_the_json_lines_chat_file_is_sniffed_and_read(tmp_path):
    from cortex.clients import sniff
    from cortex.ingest import adapters
    p = _jsonl_chat(tmp_path / "session-2026-11-24T07-38-3966b3ee.jsonl")
    head = p.read_bytes()[:65536]
    assert sniff.client_of(head, str(p)) == "gemini"
    assert adapters.detect(str(p)).client == "gemini"
    res = GeminiAdapter().parse(str(p))
    assert res.meta.session_id.startswith("3966b3ee")
    users = [e.text for e in res.entries if e.kind == USER]
    assert users == ["make the cache tests pass"]  # not the session context, the hook context or a tool result
    injected = " ".join(e.text for e in res.entries if e.kind == INJECTED)
    assert "<session_context>" in injected and "cortex-memory" in injected
    calls = [e for e in res.entries if e.kind == TOOL_CALL]
    results = [e for e in res.entries if e.kind == TOOL_RESULT]
    assert len(calls) == 1 and "pytest -q tests/test_cache.py" in calls[0].text  # the rewritten message, once
    assert len(results) == 1 and results[0].exit_code == 0 and not results[0].is_error
    assert any("REDIS_URL" in e.text for e in res.entries if e.kind == ASSISTANT)


def test_a_json_lines_chat_file_caught_mid_write_reads_its_complete_lines(tmp_path):
    p = _jsonl_chat(tmp_path / "a.jsonl", tail_partial=True)
    full = GeminiAdapter().parse(str(_jsonl_chat(tmp_path / "b.jsonl")))
    part = GeminiAdapter().parse(str(p))
    assert [(e.kind, e.text) for e in part.entries] == [(e.kind, e.text) for e in full.entries]


def test_the_json_lines_chat_file_through_the_normalizer(home, tmp_path):
    from cortex_testkit import all_records, drop_event, normalize
    (tmp_path / "client").mkdir()
    p = _jsonl_chat(tmp_path / "client" / "session-x.jsonl")
    drop_event(home, {"session_id": "3966b3ee-0000-4000-8000-000000000001", "transcript_path": str(p),
                      "cwd": str(tmp_path), "hook_event_name": "AfterAgent"}, client="gemini")
    assert normalize(home)["failed"] == 0
    texts = {r["type"]: r["text"] for r in all_records(home)}
    assert "REDIS_URL" in texts.get("gotcha", "")
    assert not any("cortex-memory" in t or "old note" in t for t in texts.values())
