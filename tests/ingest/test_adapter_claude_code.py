"""Tests for the Claude Code transcript adapter, against the real fixtures (1.0.98 - 2.1.39)
and against record shapes written by Claude Code 2.1.330 (see `_v2_1_330_records`)."""
from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest

from cortex.ingest.adapters.base import (
    ASSISTANT, COMPACT_SUMMARY, ENTRY_KINDS, INJECTED, PLAN, PLAN_STATUSES, THINKING,
    TOOL_CALL, TOOL_RESULT, USER, PlanItem,
)
from cortex.ingest.adapters.claude_code import ClaudeCodeAdapter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
CC = FIXTURES / "claude-code"
ALL_CC = sorted(CC.rglob("*.jsonl"))

F_1098 = CC / "cc-1.0.98-init-todowrite" / "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
F_10108 = CC / "cc-1.0.108-task-multiedit" / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
D_2064 = CC / "cc-2.0.64-sidechain-agent-files"
F_2064 = D_2064 / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
F_2076 = CC / "cc-2.0.76-compact-boundary" / "624a4a58-b34c-462d-a70d-13421c8125a8.jsonl"
F_214 = CC / "cc-2.1.4-summary-lines" / "9eda1058-9706-484a-b992-d03f9cfa2546.jsonl"
D_2139 = CC / "cc-2.1.39-hooks-compaction-subagents"
F_2139 = D_2139 / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"

A = ClaudeCodeAdapter()


def parse(path, cursor=0):
    return A.parse(str(path), cursor)


def kinds(result, kind):
    return [e for e in result.entries if e.kind == kind]


def line_of(entry):
    return int(entry.ref[1:])


# ------------------------------------------------------------------ every fixture

def test_fixture_set_is_complete():
    assert len(ALL_CC) == 11


@pytest.mark.parametrize("path", ALL_CC, ids=lambda p: str(p.relative_to(CC)))
def test_every_fixture_parses_cleanly(path):
    r = parse(path)
    assert r.bad_lines == 0
    assert r.truncated is False
    assert r.warnings == []
    assert r.cursor == path.stat().st_size
    assert r.meta.client == "claude-code"
    # The session id is the main file's name; subagent files carry the parent's id.
    main = {D_2139: F_2139, D_2064: F_2064}.get(CC / path.relative_to(CC).parts[0], path)
    assert r.meta.session_id == main.stem
    assert r.meta.client_version == path.parts[len(CC.parts)].split("-")[1]
    assert r.meta.started_at and r.meta.started_at.endswith("Z")
    assert r.entries
    nums = [line_of(e) for e in r.entries]
    assert nums == sorted(nums)
    total_lines = path.read_bytes().count(b"\n")
    assert 1 <= nums[0] and nums[-1] <= total_lines
    for e in r.entries:
        assert e.kind in ENTRY_KINDS
        assert e.ref.startswith("L")
        if e.kind == PLAN:
            assert e.plan and all(i.status in PLAN_STATUSES for i in e.plan)
    if path.name.startswith("agent-"):
        assert all(e.sidechain for e in r.entries)


@pytest.mark.parametrize("path", ALL_CC, ids=lambda p: str(p.relative_to(CC)))
def test_refs_point_at_the_right_line(path):
    lines = path.read_bytes().split(b"\n")
    for e in parse(path).entries:
        rec = json.loads(lines[line_of(e) - 1])
        assert rec["type"] in ("user", "assistant", "attachment")
        if e.kind == TOOL_CALL:
            ids = [b.get("id") for b in rec["message"]["content"]]
            assert e.call_id in ids
        if e.kind in (THINKING, ASSISTANT):
            assert rec["type"] == "assistant" and rec["message"]["id"] == e.message_id


@pytest.mark.parametrize("path", ALL_CC, ids=lambda p: str(p.relative_to(CC)))
def test_tool_results_are_linked_to_their_calls(path):
    r = parse(path)
    calls = {e.call_id: e for e in kinds(r, TOOL_CALL)}
    results = kinds(r, TOOL_RESULT)
    assert len(results) == len(calls)
    for res in results:
        call = calls[res.call_id]
        assert (res.tool, res.action, res.files) == (call.tool, call.action, call.files)
        assert line_of(res) > line_of(call)
        assert len(res.text) <= 4000


@pytest.mark.parametrize("path", ALL_CC, ids=lambda p: str(p.relative_to(CC)))
def test_split_messages_are_not_duplicated(path):
    """Each content block of an API message is on its own line; each must come out once."""
    expected = Counter()
    for raw in path.read_bytes().splitlines():
        rec = json.loads(raw)
        if rec.get("type") == "assistant":
            for b in rec["message"]["content"]:
                if b["type"] != "text" or b["text"].strip():  # whitespace-only text is dropped
                    expected[b["type"]] += 1
    r = parse(path)
    got = Counter({"text": len(kinds(r, ASSISTANT)), "thinking": len(kinds(r, THINKING)),
                   "tool_use": len(kinds(r, TOOL_CALL))})
    assert +got == +expected
    assert len({e.call_id for e in kinds(r, TOOL_CALL)}) == len(kinds(r, TOOL_CALL))


# ------------------------------------------------------------------ per-fixture facts

def test_1_0_98_init_command_todos_write():
    r = parse(F_1098)
    users = kinds(r, USER)
    assert [(u.ref, u.text) for u in users] == [("L1", "/init")]
    injected = kinds(r, INJECTED)
    assert [e.ref for e in injected] == ["L2"]
    assert injected[0].text.startswith("Please analyze this codebase and create a CLAUDE.md")

    plans = kinds(r, PLAN)
    assert [p.ref for p in plans] == ["L4", "L22", "L27"]
    assert plans[0].plan[0] == PlanItem("Analyze codebase structure and files", "in_progress")
    assert [i.status for i in plans[0].plan] == ["in_progress"] + ["pending"] * 4
    assert [i.status for i in plans[1].plan] == ["completed"] * 4 + ["in_progress"]
    assert plans[-1].plan == (PlanItem("Create CLAUDE.md with essential information", "completed"),)
    todo_calls = [e for e in kinds(r, TOOL_CALL) if e.tool == "TodoWrite"]
    assert [c.call_id for c in todo_calls] == [p.call_id for p in plans]
    assert all(c.action == "other" for c in todo_calls)

    write = next(e for e in kinds(r, TOOL_CALL) if e.tool == "Write")
    assert write.action == "write" and write.files == ("/path/to/Demo/CLAUDE.md",)
    assert write.args["file_path"] == "/path/to/Demo/CLAUDE.md"
    result = next(e for e in kinds(r, TOOL_RESULT) if e.call_id == write.call_id)
    assert result.ref == "L26" and result.is_error is True
    assert result.files == ("/path/to/Demo/CLAUDE.md",)
    assert result.text.startswith("Claude requested permissions to write")
    assert [e.is_error for e in kinds(r, TOOL_RESULT)].count(True) == 1

    bash = [e for e in kinds(r, TOOL_CALL) if e.tool == "Bash"]
    assert [b.text for b in bash][1] == "ls -la" and all(b.action == "shell" for b in bash)
    assert sum(e.tool == "Glob" and e.action == "search" for e in kinds(r, TOOL_CALL)) == 6
    # Four API messages were split over several lines; their blocks share the message id.
    l6_to_l10 = [e for e in r.entries if 6 <= line_of(e) <= 10]
    assert len(l6_to_l10) == 5 and len({e.message_id for e in l6_to_l10}) == 1
    assert r.meta.cwd == "/path/to/Demo" and r.meta.git_branch is None


def test_1_0_108_custom_command_task_multiedit_inline_sidechains():
    r = parse(F_10108)
    main_users = [e for e in kinds(r, USER) if not e.sidechain]
    assert [u.text for u in main_users] == ["/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"]
    assert [e.ref for e in kinds(r, USER) if e.sidechain] == ["L16", "L26"]
    assert kinds(r, INJECTED)[0].ref == "L2"  # the isMeta command expansion

    tasks = [e for e in kinds(r, TOOL_CALL) if e.tool == "Task"]
    assert len(tasks) == 3 and all(t.action == "task" for t in tasks)
    assert tasks[0].text == "Analyze project structure"
    multi = next(e for e in kinds(r, TOOL_CALL) if e.tool == "MultiEdit")
    assert multi.action == "edit" and multi.files == ("/path/to/Demo/CLAUDE.md",)
    edit = next(e for e in kinds(r, TOOL_CALL) if e.tool == "Edit")
    assert edit.action == "edit" and edit.files == ("/path/to/Demo/CLAUDE.md",)
    errors = [e for e in kinds(r, TOOL_RESULT) if e.is_error]
    assert [(e.ref, e.tool) for e in errors] == [("L15", "Task"), ("L33", "Bash"), ("L46", "Edit")]
    # The <tool_use_error> wrapper is removed; Bash errors without "Exit code" have no code.
    assert errors[2].text.startswith("File has not been read yet.")
    assert errors[1].exit_code is None

    plans = kinds(r, PLAN)
    assert len(plans) == 5
    assert [i.status for i in plans[2].plan] == ["completed", "in_progress", "in_progress", "pending"]
    assert all(i.status == "completed" for i in plans[-1].plan)
    assert plans[-1].plan[-1].text.startswith("Update CLAUDE.md")
    sidechain = [e for e in r.entries if e.sidechain]
    assert sidechain and all(16 <= line_of(e) <= 40 for e in sidechain)


def test_2_0_64_main_file():
    r = parse(F_2064)
    assert [u.text for u in kinds(r, USER)] == [
        "create hello.py, md and js", "update py with one liner comment", "delete js"]
    files = [(e.tool, e.action, e.files) for e in kinds(r, TOOL_CALL)]
    assert files == [
        ("Write", "write", ("/tmp/private/hello.py",)),
        ("Write", "write", ("/tmp/private/hello.md",)),
        ("Write", "write", ("/tmp/private/hello.js",)),
        ("Read", "read", ("/tmp/private/hello.py",)),
        ("Edit", "edit", ("/tmp/private/hello.py",)),
        ("Bash", "shell", ()),
    ]
    assert kinds(r, TOOL_CALL)[-1].text == "rm hello.js"
    assert r.meta.git_branch == "analytics-v2" and r.meta.cwd == "/tmp/private"


def test_2_0_76_clear_caveat_interrupts_and_one_compact_summary():
    r = parse(F_2076)
    summaries = kinds(r, COMPACT_SUMMARY)
    assert len(summaries) == 1 and summaries[0].ref == "L159"
    assert summaries[0].text.startswith("This session is being continued from a previous conversation")

    injected = {e.ref: e.text for e in kinds(r, INJECTED)}
    assert injected["L2"].startswith("Caveat: The messages below were generated by the user")
    assert injected["L4"] == "<local-command-stdout></local-command-stdout>"
    interrupts = [ref for ref, t in injected.items() if t == "[Request interrupted by user]"]
    assert interrupts == ["L67", "L111", "L148"]

    users = kinds(r, USER)
    assert users[0].text == "/clear" and users[0].ref == "L3"
    assert len(users) == 15
    for u in users:
        assert not u.text.startswith(("Caveat:", "[Request interrupted", "<local-command", "This session"))

    edits = [e for e in kinds(r, TOOL_CALL) if e.tool == "Edit"]
    assert len(edits) == 23
    assert {e.files for e in edits} == {
        ("/Users/user/repo/src/providers/plugins/sso/ARCHITECTURE-REFACTORING.md",)}
    assert len(kinds(r, THINKING)) == 55
    assert r.meta.git_branch == "conversations"


def test_2_1_4_summary_lines_set_the_title():
    r = parse(F_214)
    # None of the 16 summary lines names a message of this file, so the last one wins.
    assert r.meta.title == "Cleared conversation history"
    assert [u.text for u in kinds(r, USER)] == [
        "show tools and store response in file", "explore more of current repo", "what else?"]
    assert [(e.ref, e.text) for e in kinds(r, INJECTED)] == [
        ("L22", "[Request interrupted by user for tool use]")]
    tasks = [e for e in kinds(r, TOOL_CALL) if e.action == "task"]
    assert [t.text for t in tasks] == [
        "Explore codemie-code repository structure", "Deep dive into uncovered areas"]
    rejected = next(e for e in kinds(r, TOOL_RESULT) if e.is_error)
    assert rejected.tool == "Write" and rejected.files == ("/Users/user/repo/available-tools.md",)


def test_2_1_39_hooks_compaction_exit_codes():
    r = parse(F_2139)
    assert len(kinds(r, COMPACT_SUMMARY)) == 1 and kinds(r, COMPACT_SUMMARY)[0].ref == "L1585"
    assert [u.text for u in kinds(r, USER)] == [
        "Work on bead spotter-a0y. Run bd show spotter-a0y to see the issue details and bd ready "
        "to find available subtasks. Start with the first ready task.",
        "continue until all are done",
    ]
    injected = kinds(r, INJECTED)
    assert [e.ref for e in injected] == ["L664"]
    assert injected[0].text.startswith("<task-notification>")

    tools = Counter(e.tool for e in kinds(r, TOOL_CALL))
    assert tools == Counter({"Bash": 76, "Edit": 50, "Read": 33, "Write": 12, "Grep": 12,
                             "Glob": 11, "Task": 2, "TaskOutput": 1})
    results = kinds(r, TOOL_RESULT)
    assert sum(e.is_error for e in results) == 8
    assert [(e.ref, e.exit_code) for e in results if e.exit_code is not None] == [
        ("L401", 2), ("L494", 2), ("L519", 6), ("L639", 128), ("L1032", 2), ("L1105", 128),
        ("L1781", 1)]
    assert all(e.action == "shell" for e in results if e.exit_code is not None)
    writes = [e for e in kinds(r, TOOL_CALL) if e.action == "write"]
    assert all(len(e.files) == 1 and e.files[0].startswith("/home/USER/projects/") for e in writes)
    assert r.meta.git_branch == "spotter-a0y"
    assert r.meta.cwd == "/home/USER/projects/spotter-worktrees/spotter-a0y"


def test_2_1_39_compaction_subagent_reminders_are_injected():
    r = parse(D_2139 / F_2139.stem / "subagents" / "agent-acompact-70d8e7.jsonl")
    assert [e.ref for e in kinds(r, INJECTED)] == [f"L{i}" for i in range(1, 14)]
    assert all(e.text.startswith("<system-reminder>") for e in kinds(r, INJECTED))
    assert [e.ref for e in kinds(r, USER)] == ["L14"]
    assert all(e.sidechain for e in r.entries)


def test_is_meta_text_is_never_user():
    for path in ALL_CC:
        lines = path.read_bytes().split(b"\n")
        for e in parse(path).entries:
            rec = json.loads(lines[line_of(e) - 1])
            if rec.get("isMeta"):
                assert e.kind == INJECTED, (path.name, e.ref)


def test_speed_on_the_big_fixture():
    size = F_2139.stat().st_size
    parse(F_2139)
    t = time.perf_counter()
    for _ in range(3):
        parse(F_2139)
    mb_s = size * 3 / (time.perf_counter() - t) / 1e6
    assert mb_s >= 10, f"{mb_s:.1f} MB/s"  # about 150-190 MB/s measured; a loose floor


# ------------------------------------------------------------------ incremental parsing

def _entries_equal_after_split(path, tmp_path, cut):
    data = path.read_bytes()
    target = tmp_path / path.name
    target.write_bytes(data[:cut])
    first = parse(target)
    assert first.cursor == cut and not first.truncated
    target.write_bytes(data)
    second = parse(target, first.cursor)
    assert second.cursor == len(data) and second.bad_lines == 0
    return first.entries + second.entries


@pytest.mark.parametrize("path", ALL_CC, ids=lambda p: str(p.relative_to(CC)))
def test_two_halves_equal_one_full_parse(path, tmp_path):
    data = path.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    assert _entries_equal_after_split(path, tmp_path, cut) == parse(path).entries


def test_many_cut_points_between_call_and_result(tmp_path):
    """A result after the cursor still gets the tool, action and files of its call."""
    data = F_2139.read_bytes()
    full = parse(F_2139).entries
    lines = data.split(b"\n")
    for n in (160, 401, 638, 1584, 1780):  # just after a Write call, around Bash errors, ...
        cut = sum(len(x) + 1 for x in lines[:n])
        assert _entries_equal_after_split(F_2139, tmp_path, cut) == full, n


def test_cut_line_is_left_for_later(tmp_path):
    data = F_1098.read_bytes()
    lines = data.split(b"\n")
    head = b"".join(x + b"\n" for x in lines[:24])
    partial = lines[24][: len(lines[24]) // 2]
    target = tmp_path / "t.jsonl"
    target.write_bytes(head + partial)
    r1 = parse(target)
    assert r1.truncated is True and r1.bad_lines == 0
    assert r1.cursor == len(head)
    assert [e.ref for e in r1.entries][-1] == "L24"

    target.write_bytes(data)  # the client finished the line (and the rest)
    r2 = parse(target, r1.cursor)
    assert r2.truncated is False
    assert r2.entries[0].ref == "L25" and r2.entries[0].tool == "Write"
    assert r1.entries + r2.entries == parse(F_1098).entries


def test_nothing_new_means_no_entries(tmp_path):
    size = F_2064.stat().st_size
    r = parse(F_2064, size)
    assert r.entries == [] and r.cursor == size and r.bad_lines == 0 and not r.truncated


def test_cursor_past_end_rereads_and_warns(tmp_path):
    r = parse(F_2064, 10**9)
    assert r.warnings and r.entries == parse(F_2064).entries


def test_cursor_inside_a_line_skips_to_the_next(tmp_path):
    data = F_1098.read_bytes()
    line_starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    r = parse(F_1098, line_starts[24] + 5)  # inside line 25
    assert r.warnings and r.bad_lines == 0
    assert r.entries[0].ref == "L26"


# ------------------------------------------------------------------ bad input

def test_bad_lines_are_counted_and_skipped(tmp_path):
    lines = F_2064.read_bytes().split(b"\n")
    broken = [lines[0], b"{not json", b"[1, 2]", b"",
              json.dumps({"type": "user", "message": "oops", "sessionId": "x"}).encode(),
              json.dumps({"type": "assistant", "message": {"content": 5}}).encode(),
              b"\xff\xfe garbage"] + lines[1:]
    target = tmp_path / "broken.jsonl"
    target.write_bytes(b"\n".join(broken))
    r = parse(target)
    assert r.bad_lines == 5
    good = parse(F_2064).entries
    assert [(e.kind, e.text) for e in r.entries] == [(e.kind, e.text) for e in good]
    # Refs still count the bad lines.
    assert good[0].ref == "L2" and r.entries[0].ref == "L8"


def test_missing_file_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        parse(tmp_path / "nope.jsonl")


def test_empty_file(tmp_path):
    target = tmp_path / "empty.jsonl"
    target.write_bytes(b"")
    r = parse(target)
    assert r.entries == [] and r.cursor == 0 and not r.truncated and r.bad_lines == 0


# ------------------------------------------------------------------ record shapes of 2.1.330

SID = "694ecd08-7fd0-43e1-bb21-28a437e734d2"


def _env(**fields):
    base = {"parentUuid": None, "isSidechain": False, "userType": "external",
            "entrypoint": "sdk-cli", "cwd": "/tmp/cca-harness/run1/proj", "sessionId": SID,
            "version": "2.1.330", "gitBranch": "master",
            "timestamp": "2026-11-22T01:27:55.597Z", "uuid": f"u-{len(str(fields))}"}
    base.update(fields)
    return base


def _hook(content, hook_name="SessionStart:startup", atype="hook_success", stdout=None):
    att = {"type": atype, "hookName": hook_name, "toolUseID": "0f4d6fa6",
           "hookEvent": hook_name.split(":")[0], "content": content}
    if atype == "hook_success":
        att.update(stdout=stdout if stdout is not None else content + "\n", stderr="",
                   exitCode=0, command="python3 hook_logger.py SessionStart", durationMs=167)
    return _env(type="attachment", attachment=att)


def _user(content, **flags):
    return _env(type="user", message={"role": "user", "content": content}, **flags)


def _assistant(mid, *blocks, **flags):
    return _env(type="assistant", message={"id": mid, "type": "message", "role": "assistant",
                                           "model": "claude-opus-5-5", "content": list(blocks)},
                **flags)


def _v2_1_330_records():
    """Shapes seen in a transcript written by Claude Code 2.1.330 (run through
    ../shared/clients/harness against the mock model); texts shortened."""
    json_hook_stdout = json.dumps({"hookSpecificOutput": {
        "hookEventName": "SessionStart", "additionalContext": "MARKER (via JSON)"}})
    return [
        {"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-11-22T01:27:55.652Z",
         "sessionId": SID, "content": "hello"},
        _hook("HARNESS-SESSIONSTART-MARKER-7f3a (source=startup): Prior memory"),          # L2
        _user("hello", promptId="94a0548b", permissionMode="default"),                     # L3
        _env(type="attachment", attachment={"type": "environment", "snapshot": {"platform": "linux"}},
             rendered=[{"content": "<system-reminder>\n# Environment\n</system-reminder>"}]),
        _env(type="attachment", attachment={"type": "skill_listing", "content": "- dataviz: ..."}),
        {"type": "last-prompt", "lastPrompt": "hello", "leafUuid": "x", "sessionId": SID},
        {"type": "api-request-blob", "hash": "ab", "message": {"role": "user"}, "sessionId": SID},
        _assistant("msg_0f69", {"type": "text", "text": "Hello from the mock model."}),    # L8
        _hook("", hook_name="SessionStart:resume", stdout=json_hook_stdout),               # L9
        _hook(["MARKER (via JSON)"], hook_name="SessionStart", atype="hook_additional_context"),
        {"type": "cost-state", "sessionId": SID, "totalCostUSD": 0.0},
        {"type": "tools-used", "tools": ["Bash"], "sessionId": SID},
        {"type": "mode", "mode": "normal", "sessionId": SID},
        _user("<local-command-caveat>The command below was run directly in Claude Code"
              "</local-command-caveat>", isMeta=True),                                    # L14
        _user("<command-name>/compact</command-name>\n            <command-message>compact"
              "</command-message>\n            <command-args></command-args>"),           # L15
        _user("<local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>",
              repeatsCompactSummary=True),                                                 # L16
        {"type": "custom-title", "customTitle": "my renamed session", "sessionId": SID},
    ]


def _write(tmp_path, records, name=f"{SID}.jsonl"):
    target = tmp_path / name
    target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return target


def test_2_1_330_attachments_hooks_and_new_record_types(tmp_path):
    r = parse(_write(tmp_path, _v2_1_330_records()))
    assert r.bad_lines == 0
    got = [(e.ref, e.kind, e.text) for e in r.entries]
    assert got == [
        ("L2", INJECTED, "HARNESS-SESSIONSTART-MARKER-7f3a (source=startup): Prior memory"),
        ("L3", USER, "hello"),
        ("L8", ASSISTANT, "Hello from the mock model."),
        ("L10", INJECTED, "MARKER (via JSON)"),
        ("L14", INJECTED, "<local-command-caveat>The command below was run directly in Claude Code"
                          "</local-command-caveat>"),
        ("L15", USER, "/compact"),
        ("L16", INJECTED, "<local-command-stdout>Compacted (ctrl+o to see full summary)"
                          "</local-command-stdout>"),
    ]
    assert r.meta.title == "my renamed session"
    assert r.meta.started_at == "2026-11-22T01:27:55.652Z"
    assert r.meta.client_version == "2.1.330" and r.meta.git_branch == "master"


def test_cortex_block_is_always_injected(tmp_path):
    block = '<cortex-memory session="s1">\n- decision: SQLite\n</cortex-memory>'
    records = [
        _hook(block),
        _hook([block], hook_name="SessionStart", atype="hook_additional_context"),
        _user(block),
        _user([{"type": "text", "text": "please go on\n" + block}]),
        _assistant("m1", {"type": "text", "text": "Context:\n" + block}),
        _user("a real prompt"),
    ]
    r = parse(_write(tmp_path, records))
    assert [e.kind for e in r.entries] == [INJECTED] * 5 + [USER]
    assert all("<cortex-memory" not in e.text for e in kinds(r, USER) + kinds(r, ASSISTANT))


def test_system_reminders_are_split_out_of_prompts(tmp_path):
    prompt = ("fix the login bug\n<system-reminder>\nThe user opened src/app.py\n"
              "</system-reminder>\n")
    r = parse(_write(tmp_path, [_user(prompt)]))
    assert [(e.kind, e.text) for e in r.entries] == [
        (USER, "fix the login bug"),
        (INJECTED, "<system-reminder>\nThe user opened src/app.py\n</system-reminder>"),
    ]


def test_repeated_block_of_one_message_is_emitted_once(tmp_path):
    tool = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make test"}}
    text = {"type": "text", "text": "Running the tests."}
    records = [
        _assistant("msg_1", text),
        _assistant("msg_1", text),           # the same block written again
        _assistant("msg_1", tool),
        _assistant("msg_1", text, tool),     # cumulative rewrite of the whole message
        _assistant("msg_2", text),           # same text, another message: kept
        _user([{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                "content": [{"type": "text", "text": "Exit code 2\nFAILED tests/test_x.py"}]}],
              toolUseResult="Error: Exit code 2"),
    ]
    r = parse(_write(tmp_path, records))
    assert [(e.ref, e.kind, e.message_id) for e in r.entries] == [
        ("L1", ASSISTANT, "msg_1"), ("L3", TOOL_CALL, "msg_1"), ("L5", ASSISTANT, "msg_2"),
        ("L6", TOOL_RESULT, None)]
    res = r.entries[-1]
    assert (res.tool, res.action, res.is_error, res.exit_code) == ("Bash", "shell", True, 2)
    assert r.entries[1].text == "make test"


def test_tool_mapping_and_long_results(tmp_path):
    calls = [
        ("NotebookEdit", {"notebook_path": "/p/n.ipynb", "new_source": "x"}, "edit", ("/p/n.ipynb",)),
        ("MultiEdit", {"file_path": "/p/a.py", "edits": []}, "edit", ("/p/a.py",)),
        ("Read", {"file_path": "/p/b.py"}, "read", ("/p/b.py",)),
        ("BashOutput", {"bash_id": "b1"}, "shell", ()),
        ("WebSearch", {"query": "python json speed"}, "search", ()),
        ("WebFetch", {"url": "https://example.org", "prompt": "x"}, "search", ()),
        ("Grep", {"pattern": "TODO", "path": "/p"}, "search", ()),
        ("Agent", {"description": "explore", "prompt": "look around"}, "task", ()),
        ("mcp__github__create_issue", {"title": "t"}, "other", ()),
    ]
    records = [_assistant(f"m{i}", {"type": "tool_use", "id": f"t{i}", "name": n, "input": a})
               for i, (n, a, _, _) in enumerate(calls)]
    records.append(_user([{"type": "tool_result", "tool_use_id": "t2", "content": "x" * 9000}]))
    r = parse(_write(tmp_path, records))
    got = [(e.tool, e.action, e.files) for e in kinds(r, TOOL_CALL)]
    assert got == [(n, act, files) for n, _, act, files in calls]
    assert [e.text for e in kinds(r, TOOL_CALL)][4:8] == [
        "python json speed", "https://example.org", "TODO in /p", "explore"]
    res = kinds(r, TOOL_RESULT)[0]
    assert len(res.text) == 4000 and res.files == ("/p/b.py",) and res.exit_code is None


def test_synthetic_assistant_messages_are_not_replies(tmp_path):
    records = [_env(type="assistant", isApiErrorMessage=True,
                    message={"id": "x", "model": "<synthetic>", "role": "assistant",
                             "content": [{"type": "text", "text": "API Error: 529 overloaded"}]})]
    r = parse(_write(tmp_path, records))
    assert [e.kind for e in r.entries] == [INJECTED]


# ------------------------------------------------------------------ companions

def test_companions_2_1_layout():
    got = A.companions(str(F_2139))
    sub = D_2139 / F_2139.stem / "subagents"
    assert got == [str(sub / n) for n in
                   ("agent-a93ccab.jsonl", "agent-aa84377.jsonl", "agent-acompact-70d8e7.jsonl")]
    assert all(os.path.isabs(p) for p in got)
    assert A.companions(got[0]) == []


def test_companions_2_0_layout_skips_warmup_agents():
    # Both agent files beside this session are "Warmup" agents.
    assert A.companions(str(F_2064)) == []


def test_companions_2_0_layout_matches_session_id(tmp_path):
    shutil.copy(F_2064, tmp_path / F_2064.name)
    warm = (D_2064 / "agent-36541525.jsonl").read_text().splitlines()
    real = [json.loads(x) for x in warm]
    real[0]["message"]["content"] = "Find where the config is loaded"
    (tmp_path / "agent-11111111.jsonl").write_text("".join(json.dumps(x) + "\n" for x in real))
    other = [dict(x, sessionId="another-session") for x in real]
    (tmp_path / "agent-22222222.jsonl").write_text("".join(json.dumps(x) + "\n" for x in other))
    shutil.copy(D_2064 / "agent-36541525.jsonl", tmp_path / "agent-36541525.jsonl")
    assert A.companions(str(tmp_path / F_2064.name)) == [str(tmp_path / "agent-11111111.jsonl")]
    r = parse(tmp_path / "agent-11111111.jsonl")
    assert r.entries[0].kind == USER and r.entries[0].sidechain


def test_companions_without_any():
    assert A.companions(str(F_1098)) == []


# ------------------------------------------------------------------ sniff

def _head(path):
    with open(path, "rb") as f:
        return f.read(65536)


@pytest.mark.parametrize("path", ALL_CC, ids=lambda p: str(p.relative_to(CC)))
def test_sniff_accepts_claude_fixtures(path):
    assert A.sniff(_head(path), str(path)) is True


@pytest.mark.parametrize("path", sorted((FIXTURES / "codex").rglob("*.jsonl"))
                         + sorted((FIXTURES / "gemini").rglob("*.json")),
                         ids=lambda p: p.parent.name)
def test_sniff_rejects_other_clients(path):
    assert A.sniff(_head(path), str(path)) is False
    assert A.sniff(_head(path), "/home/u/.claude/projects/x/" + path.name) is False


def test_sniff_other_shapes(tmp_path):
    assert A.sniff(_write(tmp_path, _v2_1_330_records()).read_bytes(), "x.jsonl") is True
    gemini = json.loads(next((FIXTURES / "gemini").rglob("*.json")).read_text())
    assert A.sniff(json.dumps(gemini).encode()[:65536], "x.json") is False  # on one line
    assert A.sniff(b"", "x.jsonl") is False
    assert A.sniff(b"hello world\n", "x.jsonl") is False
    # A first record longer than the head: decided from the raw bytes.
    big = json.dumps(_user("x" * 70000)).encode()[:65536]
    assert A.sniff(big, "x.jsonl") is True
