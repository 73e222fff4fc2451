"""Codex rollout adapter, checked against real rollouts (tests/fixtures/transcripts/SOURCES.md).

Expected values are read from the raw fixture lines where possible, so a test fails when the
adapter drops, doubles or misattributes something rather than when a constant drifts.
"""
from __future__ import annotations

import glob
import json
import os
import re
import time
from dataclasses import replace

import pytest

from cortex.ingest.adapters.base import (
    ASSISTANT, COMPACT_SUMMARY, EDIT, ENTRY_KINDS, INJECTED, OTHER, PLAN, PLAN_STATUSES,
    READ, SEARCH, SHELL, TASK, THINKING, TOOL_CALL, TOOL_RESULT, USER, WRITE,
)
from cortex.ingest.adapters.codex import CodexAdapter

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
TRANSCRIPTS = os.path.join(HERE, "fixtures", "transcripts")


def _one(pattern):
    paths = glob.glob(os.path.join(TRANSCRIPTS, "codex", pattern, "*.jsonl"))
    assert len(paths) == 1, pattern
    return paths[0]


V077 = _one("codex-0.77.0-exec-shell-tool")
V104_SMALL = _one("codex-0.104.0-desktop-small-redacted")
V104_COMPACTED = _one("codex-0.104.0-desktop-compacted-redacted")
V125 = _one("codex-0.125.0-tui-apply-patch")
ALL = [V077, V104_SMALL, V104_COMPACTED, V125]
IDS = ["0.77", "0.104-small", "0.104-compacted", "0.125"]

OTHER_CLIENTS = sorted(
    glob.glob(os.path.join(TRANSCRIPTS, "claude-code", "**", "*.jsonl"), recursive=True)
    + glob.glob(os.path.join(TRANSCRIPTS, "gemini", "*", "*.json")))

ACTIONS = {EDIT, WRITE, READ, SHELL, SEARCH, TASK, OTHER}

adapter = CodexAdapter()
_full = {}


def full(path):
    if path not in _full:
        _full[path] = adapter.parse(path)
    return _full[path]


def raw_lines(path):
    """(1-based line number, decoded record) for every line of a fixture."""
    with open(path, encoding="utf-8") as f:
        return [(n, json.loads(line)) for n, line in enumerate(f, 1)]


def events(path, typ):
    return [(n, d["payload"]) for n, d in raw_lines(path)
            if d["type"] == "event_msg" and d["payload"].get("type") == typ]


def items(path, typ, **match):
    return [(n, d["payload"]) for n, d in raw_lines(path)
            if d["type"] == "response_item" and d["payload"].get("type") == typ
            and all(d["payload"].get(k) == v for k, v in match.items())]


def of(result, kind):
    return [e for e in result.entries if e.kind == kind]


def line_no(ref):
    assert re.fullmatch(r"L\d+", ref), ref
    return int(ref[1:])


def rollout(tmp_path, records, name="rollout.jsonl"):
    """A small synthetic rollout, for cases the fixtures do not contain."""
    head = {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta",
            "payload": {"id": "sess-1", "timestamp": "2026-01-01T00:00:00.000Z",
                        "cwd": "/home/user/proj", "cli_version": "0.130.0"}}
    path = tmp_path / name
    with open(path, "w", encoding="utf-8") as f:
        for rec in [head] + records:
            f.write(json.dumps(rec) + "\n")
    return str(path)


def item(payload, ts="2026-01-01T00:00:01.000Z"):
    return {"timestamp": ts, "type": "response_item", "payload": payload}


def event(payload, ts="2026-01-01T00:00:01.000Z"):
    return {"timestamp": ts, "type": "event_msg", "payload": payload}


# -- every fixture --------------------------------------------------------------------

@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_fixture_parses_cleanly(path):
    r = full(path)
    nlines = len(raw_lines(path))
    assert r.bad_lines == 0
    assert not r.truncated
    assert r.warnings == []
    assert r.cursor == os.path.getsize(path)
    assert r.entries
    last = 0
    for e in r.entries:
        assert e.kind in ENTRY_KINDS
        n = line_no(e.ref)
        assert last <= n <= nlines  # in file order
        last = n
        if e.kind in (TOOL_CALL, TOOL_RESULT) and e.action is not None:
            assert e.action in ACTIONS
        if e.kind == TOOL_RESULT:
            assert len(e.text) <= 4000
        for it in e.plan:
            assert it.status in PLAN_STATUSES


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_meta_comes_from_session_meta_and_last_turn_context(path):
    lines = raw_lines(path)
    n, first = lines[0]
    assert first["type"] == "session_meta"
    p = first["payload"]
    cwds = [d["payload"]["cwd"] for _, d in lines if d["type"] == "turn_context"]
    m = full(path).meta
    assert m.client == "codex"
    assert m.session_id == p["id"]
    assert m.client_version == p["cli_version"]
    assert m.git_branch == p["git"]["branch"]
    assert m.started_at == p["timestamp"]
    assert m.cwd == (cwds[-1] if cwds else p["cwd"])
    # The rollout file name ends with the session id.
    assert os.path.basename(path).endswith(m.session_id + ".jsonl")


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_one_user_entry_per_prompt(path):
    prompts = events(path, "user_message")
    users = of(full(path), USER)
    assert [e.text for e in users] == [p["message"] for _, p in prompts]
    assert [line_no(e.ref) for e in users] == [n for n, _ in prompts]


def test_prompt_count_in_compacted_session():
    # 38 turns' prompts; two texts were each sent twice (separate turns), so 36 distinct.
    users = of(full(V104_COMPACTED), USER)
    assert len(users) == 38
    assert len({e.text for e in users}) == 36


@pytest.mark.parametrize("path", [V077, V125], ids=["0.77", "0.125"])
def test_injected_context_never_reaches_user(path):
    r = full(path)
    for e in of(r, USER):
        assert "AGENTS.md instructions" not in e.text
        assert "<environment_context>" not in e.text
        assert "<INSTRUCTIONS>" not in e.text
    injected = [e.text for e in of(r, INJECTED)]
    assert any(t.startswith("# AGENTS.md instructions for") for t in injected)
    assert any("<environment_context>" in t for t in injected)


def test_077_injects_agents_md_and_environment_as_user_messages():
    # 0.77 puts both blocks in role=user messages; the third role=user message is the prompt.
    r = full(V077)
    user_items = items(V077, "message", role="user")
    assert len(user_items) == 3
    injected = of(r, INJECTED)
    assert [line_no(e.ref) for e in injected] == [user_items[0][0], user_items[1][0]]
    assert injected[1].text.startswith("<environment_context>")
    assert [e.text for e in of(r, USER)] == [
        "what is current repository about? summarize purpuse and explain goals"]


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_developer_messages_are_injected(path):
    dev_lines = [n for n, _ in items(path, "message", role="developer")]
    injected_lines = {line_no(e.ref) for e in of(full(path), INJECTED)}
    assert set(dev_lines) <= injected_lines
    assert not {line_no(e.ref) for e in of(full(path), USER)} & set(dev_lines)


def test_0104_small_counts():
    r = full(V104_SMALL)
    assert len(of(r, USER)) == 1
    assert len(of(r, INJECTED)) == 4  # the developer messages; the redacted user copies are dropped
    assert len(of(r, ASSISTANT)) == 1
    assert len(of(r, THINKING)) == 1
    calls = of(r, TOOL_CALL)
    assert [(c.tool, c.action) for c in calls] == [("exec_command", SHELL)]
    # Arguments were redacted upstream to a non-JSON string; they are kept, not dropped.
    assert calls[0].args == {"arguments": "[REDACTED_ARGUMENTS len=456 sha=df6be51a]"}


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_assistant_text_once_per_message(path):
    sent = events(path, "agent_message")
    replies = of(full(path), ASSISTANT)
    assert len(replies) == len(sent)
    if path == V125:  # full text: the two copies must agree exactly
        assert [e.text for e in replies] == [p["message"] for _, p in sent]


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_reasoning_once(path):
    summaries = events(path, "agent_reasoning")
    thinking = of(full(path), THINKING)
    assert len(thinking) == len(summaries)
    if path == V077:
        assert thinking[0].text.startswith("**Clarifying documentation instructions**")


# -- tools ----------------------------------------------------------------------------

def test_077_shell_tool_commands_and_exit_codes():
    r = full(V077)
    calls = of(r, TOOL_CALL)
    assert [c.text for c in calls] == ["ls", "rg --files -g 'AGENTS.md'", "sed -n '1,160p' README.md"]
    assert {(c.tool, c.action) for c in calls} == {("shell", SHELL)}
    assert calls[0].args["workdir"] == "/Users/user/repos/EPMCDME/codemie-ai/codemie-code"
    results = of(r, TOOL_RESULT)
    assert [res.call_id for res in results] == [c.call_id for c in calls]
    assert [res.exit_code for res in results] == [0, 0, 0]
    assert not any(res.is_error for res in results)
    # The JSON wrapper is unpacked: text is the command's output.
    assert results[1].text == "docs/AGENTS.md\n"
    assert results[0].tool == "shell" and results[0].action == SHELL


def test_every_output_has_its_call():
    for path in ALL:
        r = full(path)
        call_ids = {c.call_id for c in of(r, TOOL_CALL)}
        for res in of(r, TOOL_RESULT):
            assert res.call_id in call_ids
            assert res.tool is not None and res.action is not None


def test_0125_failing_commands():
    r = full(V125)
    failing = [e for e in of(r, TOOL_RESULT) if e.exit_code not in (None, 0)]
    assert sorted(e.exit_code for e in failing) == [1, 1, 1, 2]
    assert all(e.is_error for e in failing)
    # Long-running exec_command processes report their exit through the write_stdin poll
    # that saw them finish; check each against the exec_command_end of that process.
    calls = {c.call_id: c for c in of(r, TOOL_CALL)}
    ends = {p["process_id"]: p for _, p in events(V125, "exec_command_end")}
    assert sorted(p["exit_code"] for p in ends.values() if p["exit_code"]) == [1, 1, 1, 2]
    for res in failing:
        call = calls[res.call_id]
        assert call.tool == "write_stdin" and res.action == SHELL
        assert ends[str(call.args["session_id"])]["exit_code"] == res.exit_code
    # Output text is the command's output, without Codex's "Chunk ID / Wall time" header.
    rg = next(e for e in failing if e.exit_code == 2)
    assert rg.text.startswith("rg: node_modules/opencode-ai: No such file or directory")
    assert not rg.text.startswith("Chunk ID")


def test_0125_exit_codes_read_from_output_text():
    r = full(V125)
    outputs = dict(items(V125, "function_call_output"))
    for res in of(r, TOOL_RESULT):
        n = line_no(res.ref)
        if n not in outputs:
            continue
        m = re.search(r"^Process exited with code (-?\d+)$", outputs[n]["output"], re.M)
        assert res.exit_code == (int(m.group(1)) if m else None), res.ref


def test_0125_tool_failure_without_exit_code_is_an_error():
    r = full(V125)
    closed = [e for e in of(r, TOOL_RESULT) if e.text.startswith("write_stdin failed")]
    assert len(closed) == 1
    assert closed[0].is_error and closed[0].exit_code is None


def test_0125_apply_patch_names_files():
    r = full(V125)
    patches = [c for c in of(r, TOOL_CALL) if c.tool == "apply_patch"]
    assert [c.files for c in patches] == [
        ("src/agents/plugins/__tests__/codemie-code-reasoning.test.ts",),
        ("src/agents/plugins/codemie-code.plugin.ts",),
        ("src/agents/plugins/opencode/opencode.plugin.ts",),
    ]
    assert {c.action for c in patches} == {EDIT}
    assert patches[0].text.startswith("*** Begin Patch\n*** Update File: ")
    results = {e.call_id: e for e in of(r, TOOL_RESULT)}
    for c in patches:
        res = results[c.call_id]
        assert res.files == c.files and res.action == EDIT and res.tool == "apply_patch"
        assert res.exit_code == 0 and not res.is_error
        assert res.text.startswith("Success. Updated the following files:")


def test_0104_tool_mix():
    r = full(V104_COMPACTED)
    calls = of(r, TOOL_CALL)
    by_tool = {}
    for c in calls:
        by_tool.setdefault(c.tool, []).append(c)
    assert len(by_tool["exec_command"]) == 212
    assert len(by_tool["write_stdin"]) == 70
    assert len(by_tool["apply_patch"]) == 49
    assert len(by_tool["web_search"]) == 7
    assert {c.action for c in by_tool["web_search"]} == {SEARCH}
    assert {c.action for c in by_tool["apply_patch"]} == {EDIT}
    mcp = [c for c in calls if c.tool.startswith("mcp__")]
    assert len(mcp) == 25 and {c.action for c in mcp} == {OTHER}
    # 316 function outputs + 49 patch outputs; web searches have none.
    assert len(of(r, TOOL_RESULT)) == 365


def test_0125_web_search():
    searches = [c for c in of(full(V125), TOOL_CALL) if c.tool == "web_search"]
    raw = [p["action"]["query"] for _, p in items(V125, "web_search_call")]
    assert [c.text for c in searches] == raw
    assert {c.action for c in searches} == {SEARCH}


def test_0125_last_plan():
    r = full(V125)
    plans = of(r, PLAN)
    assert len(plans) == 2
    first, last = plans
    assert [(i.text, i.status) for i in first.plan] == [
        ("Add failing tests for default compaction threshold in generated OpenCode env config", "in_progress"),
        ("Set default compaction threshold to 90% in generated OPENCODE_CONFIG_CONTENT paths", "pending"),
        ("Run focused verification", "pending"),
    ]
    assert [(i.text, i.status) for i in last.plan] == [
        ("Add failing tests for default compaction threshold in generated OpenCode env config", "completed"),
        ("Set default compaction threshold to 90% in generated OPENCODE_CONFIG_CONTENT paths", "completed"),
        ("Run focused verification", "in_progress"),
    ]
    # Each PLAN follows its update_plan call on the same line.
    calls = [c for c in of(r, TOOL_CALL) if c.tool == "update_plan"]
    assert [c.ref for c in calls] == [p.ref for p in plans]
    assert {c.action for c in calls} == {OTHER}
    assert first.text.startswith("I’m treating “context compact to 90 in env var”")


def test_0104_redacted_plan_gives_call_but_no_plan():
    # The arguments were redacted upstream, so there is no plan to read; the call stays.
    r = full(V104_COMPACTED)
    calls = [c for c in of(r, TOOL_CALL) if c.tool == "update_plan"]
    assert len(calls) == 2 and {c.action for c in calls} == {OTHER}
    assert of(r, PLAN) == []


# -- compaction -----------------------------------------------------------------------

def test_compacted_fixture_yields_one_summary():
    r = full(V104_COMPACTED)
    summaries = of(r, COMPACT_SUMMARY)
    compacted = [n for n, d in raw_lines(V104_COMPACTED) if d["type"] == "compacted"]
    assert len(summaries) == 1 and len(compacted) == 1
    assert line_no(summaries[0].ref) == compacted[0]
    # The message was redacted upstream to this placeholder; it is kept as recorded.
    assert summaries[0].text == "[REDACTED_MESSAGE len=0 sha=e3b0c442]"
    assert summaries[0].ts == "2026-02-24T09:51:48.878Z"


def _compacted_record(path):
    return next(d for _, d in raw_lines(path) if d["type"] == "compacted")


def test_empty_compaction_message_falls_back_to_history(tmp_path):
    # Remote compaction writes message "" and an encrypted summary: use the last answer kept.
    rec = _compacted_record(V104_COMPACTED)
    rec["payload"]["message"] = ""
    path = rollout(tmp_path, [rec])
    s = of(adapter.parse(path), COMPACT_SUMMARY)
    assert [e.text for e in s] == ["[REDACTED_TEXT len=4688 sha=d42874d0]"]


def test_local_compaction_summary_prefix_is_stripped(tmp_path):
    prefix = ("Another language model started to solve this problem and produced a summary of "
              "its thinking process. You also have access to the state of the tools …")
    rec = {"timestamp": "2026-01-01T00:00:02.000Z", "type": "compacted",
           "payload": {"message": prefix + "\nWe chose SQLite over Postgres."}}
    nothing = {"timestamp": "2026-01-01T00:00:03.000Z", "type": "compacted",
               "payload": {"message": "", "replacement_history": [
                   {"type": "compaction", "encrypted_content": "xyz"}]}}
    r = adapter.parse(rollout(tmp_path, [rec, nothing]))
    assert [e.text for e in of(r, COMPACT_SUMMARY)] == ["We chose SQLite over Postgres."]


# -- incremental reading --------------------------------------------------------------

def _split_parse(tmp_path, path, cut):
    """Parse the file as it was when only `cut` bytes were written, then the rest."""
    with open(path, "rb") as f:
        data = f.read()
    part = tmp_path / "partial.jsonl"
    part.write_bytes(data[:cut])
    first = adapter.parse(str(part))
    second = adapter.parse(path, first.cursor)
    return first, second


def _line_ends(path):
    with open(path, "rb") as f:
        data = f.read()
    return [i + 1 for i, b in enumerate(data) if b == 0x0A]


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_two_halves_equal_one_parse(tmp_path, path):
    ends = _line_ends(path)
    for cut in {ends[len(ends) // 4], ends[len(ends) // 2], ends[3 * len(ends) // 4]}:
        first, second = _split_parse(tmp_path, path, cut)
        assert first.cursor == cut and not first.truncated
        assert first.entries + second.entries == full(path).entries
        assert second.meta == full(path).meta
        assert second.cursor == os.path.getsize(path)
        assert second.bad_lines == 0 and second.warnings == []


def test_split_between_call_and_output_keeps_tool_and_files(tmp_path):
    # Cut right after the first apply_patch call and right after its patch_apply_end:
    # the result parsed later must still name the tool, files and outcome.
    patch_line = items(V125, "custom_tool_call")[0][0]
    end_line = events(V125, "patch_apply_end")[0][0]
    ends = _line_ends(V125)
    for line in (patch_line, end_line):
        first, second = _split_parse(tmp_path, V125, ends[line - 1])
        assert first.entries + second.entries == full(V125).entries
        res = next(e for e in second.entries if e.kind == TOOL_RESULT)
        assert res.tool == "apply_patch" and res.files and res.exit_code == 0


def test_cut_final_line_is_left_for_later(tmp_path):
    with open(V125, "rb") as f:
        data = f.read()
    ends = _line_ends(V125)
    cut = ends[200] + 57  # mid-way through line 202
    path = tmp_path / "live.jsonl"
    path.write_bytes(data[:cut])
    first = adapter.parse(str(path))
    assert first.truncated
    assert first.bad_lines == 0
    assert first.cursor == ends[200]
    assert all(line_no(e.ref) <= 201 for e in first.entries)
    path.write_bytes(data)  # the client finishes the line and goes on
    second = adapter.parse(str(path), first.cursor)
    assert not second.truncated
    assert first.entries + second.entries == full(V125).entries


def test_refs_are_absolute_after_cursor():
    r = full(V077)
    ends = _line_ends(V077)
    later = adapter.parse(V077, ends[9])  # resume after line 10
    assert later.entries == [e for e in r.entries if line_no(e.ref) > 10]


def test_cursor_past_end_reads_nothing():
    size = os.path.getsize(V077)
    r = adapter.parse(V077, size + 10)
    assert r.entries == [] and r.cursor == size + 10 and r.warnings


def test_nothing_new_at_end():
    size = os.path.getsize(V077)
    r = adapter.parse(V077, size)
    assert r.entries == [] and r.cursor == size and not r.truncated


# -- malformed input ------------------------------------------------------------------

def test_bad_lines_are_counted_and_skipped(tmp_path):
    with open(V077, "rb") as f:
        lines = f.read().split(b"\n")
    junk = [b"not json", b"[1, 2]", b'{"timestamp":"x","type":"event_msg"}', b'{"type": 5}',
            b"\xff\xfe{}"]
    # Five junk lines after line 4 shift every later line number by five.
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b"\n".join(lines[:4] + junk + lines[4:]))
    r = adapter.parse(str(path))
    assert r.bad_lines == len(junk)
    expected = [replace(e, ref=f"L{line_no(e.ref) + (5 if line_no(e.ref) > 4 else 0)}")
                for e in full(V077).entries]
    assert r.entries == expected


def test_blank_lines_are_not_bad(tmp_path):
    path = rollout(tmp_path, [])
    with open(path, "a") as f:
        f.write("\n   \n")
    r = adapter.parse(path)
    assert r.bad_lines == 0 and not r.truncated


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        adapter.parse(str(tmp_path / "nope.jsonl"))


# -- synthetic cases the fixtures lack ------------------------------------------------

def test_exec_command_end_fills_exit_code_only_when_output_has_none(tmp_path):
    recs = [
        item({"type": "function_call", "name": "exec_command", "call_id": "c1",
              "arguments": json.dumps({"cmd": "make test"})}),
        # The end event can arrive before the output is recorded.
        event({"type": "exec_command_end", "call_id": "c1", "exit_code": 3}),
        item({"type": "function_call_output", "call_id": "c1", "output": "boom"}),
        item({"type": "function_call", "name": "exec_command", "call_id": "c2",
              "arguments": json.dumps({"cmd": "true"})}),
        item({"type": "function_call_output", "call_id": "c2",
              "output": "Chunk ID: a\nWall time: 0.1 seconds\nProcess exited with code 0\n"
                        "Original token count: 1\nOutput:\nok\n"}),
        event({"type": "exec_command_end", "call_id": "c2", "exit_code": 0}),
    ]
    r = adapter.parse(rollout(tmp_path, recs))
    results = of(r, TOOL_RESULT)
    assert [(e.call_id, e.exit_code, e.is_error, e.text) for e in results] == [
        ("c1", 3, True, "boom"), ("c2", 0, False, "ok\n")]
    assert [c.text for c in of(r, TOOL_CALL)] == ["make test", "true"]


def test_apply_patch_actions_and_failure(tmp_path):
    add_only = "*** Begin Patch\n*** Add File: docs/new.md\n+hi\n*** End Patch\n"
    mixed = ("*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: b.py\n@@\n-y\n+z\n"
             "*** Delete File: c.py\n*** Update File: d.py\n*** Move to: e.py\n*** End Patch\n")
    recs = [
        item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "p1",
              "input": add_only, "status": "completed"}),
        item({"type": "custom_tool_call_output", "call_id": "p1",
              "output": json.dumps({"output": "Success.", "metadata": {"exit_code": 0}})}),
        item({"type": "custom_tool_call", "name": "apply_patch", "call_id": "p2",
              "input": mixed, "status": "completed"}),
        event({"type": "patch_apply_end", "call_id": "p2", "success": False,
               "stdout": "", "stderr": "no such file"}),
        item({"type": "custom_tool_call_output", "call_id": "p2", "output": "no such file"}),
        # The older route: the shell tool running `apply_patch` with the patch as argument.
        item({"type": "function_call", "name": "shell", "call_id": "p3",
              "arguments": json.dumps({"command": ["apply_patch", add_only]})}),
    ]
    r = adapter.parse(rollout(tmp_path, recs))
    calls = of(r, TOOL_CALL)
    assert [(c.action, c.files) for c in calls] == [
        (WRITE, ("docs/new.md",)),
        (EDIT, ("a.py", "b.py", "c.py", "d.py", "e.py")),
        (WRITE, ("docs/new.md",)),
    ]
    results = of(r, TOOL_RESULT)
    assert [(e.call_id, e.is_error) for e in results] == [("p1", False), ("p2", True)]
    assert results[1].files == calls[1].files


def test_cortex_memory_block_is_injected(tmp_path):
    block = '<cortex-memory source="cortex">\n- decision: use SQLite\n</cortex-memory>'
    recs = [
        item({"type": "message", "role": "developer",
              "content": [{"type": "input_text", "text": block}]}),
        item({"type": "message", "role": "user",
              "content": [{"type": "input_text", "text": block}]}),
        event({"type": "user_message", "message": block + "\n\nfix the login bug", "images": []}),
        item({"type": "message", "role": "user",
              "content": [{"type": "input_text", "text": "plain prompt"}]}),
        event({"type": "user_message", "message": "plain prompt", "images": []}),
    ]
    r = adapter.parse(rollout(tmp_path, recs))
    assert [(e.kind, e.text) for e in r.entries if e.kind in (USER, INJECTED)] == [
        (INJECTED, block), (INJECTED, block), (INJECTED, block),
        (USER, "fix the login bug"), (USER, "plain prompt")]


def test_subagent_rollout_is_sidechain(tmp_path):
    head = {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta",
            "payload": {"id": "child", "cwd": "/p", "source": {"subagent": {"thread_spawn": {}}}}}
    path = tmp_path / "child.jsonl"
    path.write_text(json.dumps(head) + "\n" + json.dumps(
        event({"type": "user_message", "message": "do the sub-task"})) + "\n")
    r = adapter.parse(str(path))
    assert [(e.kind, e.sidechain) for e in r.entries] == [(USER, True)]


# -- sniff ----------------------------------------------------------------------------

def _head(path, n=65536):
    with open(path, "rb") as f:
        return f.read(n)


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_sniff_accepts_rollouts(path):
    assert adapter.sniff(_head(path), path)
    # Even when the session_meta line is longer than the head that was read.
    assert adapter.sniff(_head(path, 300), path)


@pytest.mark.parametrize("path", OTHER_CLIENTS, ids=lambda p: os.path.relpath(p, TRANSCRIPTS))
def test_sniff_rejects_other_clients(path):
    assert not adapter.sniff(_head(path), path)


@pytest.mark.parametrize("head", [b"", b"\n\n", b"hello\n", b"[]\n", b'{"type":"session_meta"}\n',
                                  b'{"timestamp":"t","type":"user","payload":{}}\n'])
def test_sniff_rejects_lookalikes(head):
    assert not adapter.sniff(head, "rollout-x.jsonl")


# -- speed ----------------------------------------------------------------------------

def test_speed_on_compacted_fixture():
    # Target is >= 30 MB/s; the bound here is loose so a slow CI box does not flake,
    # while an accidental quadratic pass would still fail.
    size = os.path.getsize(V104_COMPACTED)
    best = min(_timed(V104_COMPACTED) for _ in range(3))
    assert size / best / 1e6 > 10


def _timed(path):
    t = time.perf_counter()
    adapter.parse(path)
    return time.perf_counter() - t
