"""Codex CLI rollout files: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl`.

Each line is `{"timestamp", "type", "payload"}` (see ../shared/clients/contracts.md §3).
The rollout records most things twice, once as a model `response_item` and once as a UI
`event_msg`.  One source is picked per kind so nothing is doubled:

- prompts:    `event_msg.user_message` (the response_item copy sits among injected
              AGENTS.md / environment blocks and, when redacted, cannot be told apart);
- replies:    `response_item` message role=assistant (not `event_msg.agent_message`);
- reasoning:  `response_item` reasoning summary (not `event_msg.agent_reasoning`);
- tools:      `response_item` calls and outputs; `exec_command_end` / `patch_apply_end`
              only supply an exit code or failure for an output that has not arrived yet.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass

from cortex.clients import sniff
from cortex.core import fastjson
from cortex.ingest.adapters.base import (
    clip, str_or_none,
    ASSISTANT, COMPACT_SUMMARY, EDIT, INJECTED, OTHER, PLAN, READ, SEARCH, SHELL, TASK,
    THINKING, TOOL_CALL, TOOL_RESULT, USER, WRITE,
    Adapter, Entry, MAX_LINE_BYTES, ParseResult, PlanItem, SessionMeta, WINDOW_BYTES, line_blocks,
)


# Contextual blocks Codex itself puts into role=user messages (codex-rs
# contextual_user_message.rs), plus developer-style blocks seen in fixtures.
_INJECTED_OPENINGS = (
    "# agents.md instructions for", "<instructions>", "<environment_context>",
    "<user_instructions>", "<skill>", "<user_shell_command>", "<turn_aborted>",
    "<subagent_notification>", "<permissions instructions>", "<collaboration_mode>",
)
_CORTEX_TAG = "<cortex-memory"
_CORTEX_BLOCK = re.compile(r"<cortex-memory\b.*?(?:</cortex-memory>|\Z)", re.S)

# Local compaction stores "<SUMMARY_PREFIX>\n<summary>" (codex-rs compact.rs).
_SUMMARY_PREFIX = "Another language model started to solve this problem"

_SHELL_TOOLS = frozenset((
    "shell", "container.exec", "exec_command", "write_stdin", "shell_command",
    "local_shell", "unified_exec", "exec",
))
_TOOL_ACTIONS = {
    "apply_patch": EDIT,
    "view_image": READ, "read_file": READ,
    "web_search": SEARCH, "grep_files": SEARCH, "list_dir": SEARCH,
    "spawn_agent": TASK,
}
_PATCH_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.M)
_EXIT_LINE = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)", re.M)
_ERROR_OPENINGS = (
    "write_stdin failed", "apply_patch verification failed", "execution error",
    "failed to parse function arguments", "unsupported call",
)
_PLAN_STATUS = {
    "pending": "pending", "todo": "pending", "not_started": "pending",
    "in_progress": "in_progress", "in-progress": "in_progress", "active": "in_progress",
    "completed": "completed", "complete": "completed", "done": "completed",
    "cancelled": "completed", "canceled": "completed",
}
# What the cursor>0 pass needs to know about the lines before the cursor.
_PRIME_MARKERS = (
    b'"session_meta"', b'"turn_context"', b'"function_call', b'"custom_tool_call',
    b'"local_shell_call"', b'"exec_command_end"', b'"patch_apply_end"',
)
_CALL_ID = re.compile(rb'"call_id"\s*:\s*"([^"]*)"')
# Events `_event` ignores anyway.  About a third of a rollout's lines are token_count
# alone, so dropping them before JSON decoding is worth a regex; a line written with
# different spacing simply misses this shortcut and is decoded and ignored.
_SKIP_LINE = re.compile(
    r'"type":"event_msg","payload":\{"type":"(?:token_count|agent_message|agent_reasoning|'
    r'task_complete|context_compacted|web_search_end|turn_aborted|'
    r'item_started|exec_command_begin|patch_apply_begin|mcp_tool_call_begin|mcp_tool_call_end)"')
_decode = json.JSONDecoder().decode


@dataclass(frozen=True)
class _Call:
    tool: str
    action: str
    files: tuple


class CodexAdapter(Adapter):
    client = "codex"

    def sniff(self, head: bytes, path: str) -> bool:
        return sniff.codex(head, path)

    def windows(self, path: str, cursor: int = 0, window: int = WINDOW_BYTES,
                max_line: int = MAX_LINE_BYTES, max_document: int = 0):
        state = _State()
        with open(path, "rb") as f:
            lineno = 0
            if cursor > 0:
                size = os.fstat(f.fileno()).st_size
                if cursor > size:
                    # Replaced or truncated under us: nothing here continues the old cursor.
                    state.warnings.append(f"cursor {cursor} is past the end of the file ({size} bytes)")
                    yield state.result(cursor, truncated=False)
                    return
                lineno = state.prime(f, cursor, window, max_line)
            at, yielded = cursor, None
            for what, offset, data in line_blocks(f, cursor, None, window, max_line):
                if what == "tail":
                    f.seek(offset)
                    if data > 4096 or f.read(data).strip():
                        state.truncated = True
                    break
                if what == "long":
                    lineno += 1
                    state.bad_lines += 1
                    state.warn(f"L{lineno}: a line of {data} bytes, over the {max_line}-byte line limit, "
                               "skipped")
                    at = offset + data
                    continue
                lines = _split_lines(data)
                lines.pop()  # the empty string after the final newline
                for line in lines:
                    lineno += 1
                    if line is None:
                        state.bad_lines += 1
                    elif line and not _SKIP_LINE.search(line, 0, 160) and not line.isspace():
                        state.line(line, lineno)
                at = offset + len(data)
                del lines, data
                yielded = state.result(at, False)
                yield yielded
                state.next_window()
            if yielded is None or at != yielded.cursor or state.bad_lines or state.truncated or state.warnings:
                yield state.result(at, state.truncated)


class _State:
    """Everything one parse accumulates; `prime` replays what matters from before the cursor."""

    def __init__(self):
        self.meta = SessionMeta(client="codex")
        self.entries = []
        self.bad_lines = 0
        self.warnings = []
        self.calls = {}          # call_id -> _Call, so results carry tool/action/files
        self.exit_codes = {}     # call_id -> exit code reported before the call's output
        self.patch_failed = {}   # call_id -> True when patch_apply_end said it failed
        self.sidechain = False
        self.truncated = False

    def result(self, cursor: int, truncated: bool) -> ParseResult:
        return ParseResult(meta=self.meta, entries=self.entries, cursor=cursor,
                           bad_lines=self.bad_lines, truncated=truncated,
                           warnings=self.warnings)

    def next_window(self):
        """The next window's entries, bad lines and notes start empty; the rest carries on."""
        self.entries, self.bad_lines, self.warnings = [], 0, []

    def warn(self, message: str):
        if len(self.warnings) < 20:
            self.warnings.append(message)

    # -- lines before the cursor ------------------------------------------------------

    def prime(self, f, cursor: int, window: int = WINDOW_BYTES, max_line: int = MAX_LINE_BYTES) -> int:
        """Count the lines before `cursor` and rebuild the state later lines depend on
        (session meta, last cwd, open tool calls), without emitting entries."""
        lines = 0
        for what, _offset, data in line_blocks(f, 0, cursor, window, max_line):
            if what == "tail":
                # Not a cursor this adapter returned; the rest of this line will not parse.
                self.warnings.append(f"cursor {cursor} is not at a line boundary")
                break
            if what == "long":
                lines += 1
                continue
            for raw in data.split(b"\n")[:-1]:
                lines += 1
                head = raw[:200]
                if any(m in head for m in _PRIME_MARKERS):
                    self._prime_line(raw, head)
        return lines

    def _prime_line(self, raw: bytes, head: bytes):
        if b'"type":"function_call_output"' in head or b'"type":"custom_tool_call_output"' in head:
            # Outputs are the big lines; only their call_id matters here.
            m = _CALL_ID.search(raw)
            if m:
                cid = m.group(1).decode("utf-8", "replace")
                self.exit_codes.pop(cid, None)
                self.patch_failed.pop(cid, None)
            return
        try:
            obj = fastjson.decoded(raw)
            if obj is fastjson.UNDECIDED:
                obj = json.loads(raw)
        except (ValueError, RecursionError):
            return
        if not isinstance(obj, dict) or not isinstance(obj.get("payload"), dict):
            return
        typ, p = obj.get("type"), obj["payload"]
        if typ == "session_meta":
            self._session_meta(p, obj.get("timestamp"))
        elif typ == "turn_context":
            if isinstance(p.get("cwd"), str):
                self.meta.cwd = p["cwd"]
        elif typ == "response_item":
            if p.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
                self._tool_call(p, "", None, emit=False)
        elif typ == "event_msg":
            self._tool_event(p)

    # -- one line ---------------------------------------------------------------------

    def line(self, raw: str, lineno: int):
        try:
            obj = fastjson.decoded(raw)
            if obj is fastjson.UNDECIDED:
                obj = _decode(raw)
        except (ValueError, RecursionError):
            self.bad_lines += 1
            return
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            self.bad_lines += 1
            return
        payload = obj.get("payload")
        if not isinstance(payload, dict):
            self.bad_lines += 1
            return
        ts = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
        if self.meta.started_at is None and ts:
            self.meta.started_at = ts
        ref = f"L{lineno}"
        typ = obj["type"]
        if typ == "response_item":
            self._response_item(payload, ref, ts)
        elif typ == "event_msg":
            self._event(payload, ref, ts)
        elif typ == "session_meta":
            self._session_meta(payload, ts)
        elif typ == "turn_context":
            if isinstance(payload.get("cwd"), str):
                self.meta.cwd = payload["cwd"]
        elif typ == "compacted":
            self._compacted(payload, ref, ts)

    def _add(self, kind: str, ref: str, ts, **kw):
        if self.sidechain:
            kw["sidechain"] = True
        self.entries.append(Entry(kind=kind, ref=ref, ts=ts, **kw))

    def _session_meta(self, p: dict, ts):
        m = self.meta
        # A resumed or forked rollout can repeat session_meta; the first one names the file.
        if m.session_id is None and isinstance(p.get("id"), str):
            m.session_id = p["id"]
        if isinstance(p.get("cwd"), str) and m.cwd is None:
            m.cwd = p["cwd"]
        if m.client_version is None and isinstance(p.get("cli_version"), str):
            m.client_version = p["cli_version"]
        git = p.get("git")
        if m.git_branch is None and isinstance(git, dict) and isinstance(git.get("branch"), str):
            m.git_branch = git["branch"]
        started = p.get("timestamp") if isinstance(p.get("timestamp"), str) else ts
        if started and (m.started_at is None or started < m.started_at):
            m.started_at = started
        source = p.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self.sidechain = True

    # -- response items ---------------------------------------------------------------

    def _response_item(self, p: dict, ref: str, ts):
        typ = p.get("type")
        if typ == "message":
            self._message(p, ref, ts)
        elif typ == "reasoning":
            text = _reasoning_text(p)
            if text:
                self._add(THINKING, ref, ts, text=text, message_id=str_or_none(p.get("id")))
        elif typ in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            self._tool_call(p, ref, ts, emit=True)
        elif typ in ("function_call_output", "custom_tool_call_output"):
            self._tool_output(p, ref, ts)
        # ghost_snapshot, compaction (encrypted), and unknown items carry nothing to keep.

    def _message(self, p: dict, ref: str, ts):
        role = p.get("role")
        text = _content_text(p.get("content"))
        mid = str_or_none(p.get("id"))
        if role == "assistant":
            if text.strip():
                self._add(ASSISTANT, ref, ts, text=text, message_id=mid)
        elif role == "user":
            # Real prompts come from event_msg.user_message; this copy is only kept when
            # it is recognisably something the client or a hook injected.
            if _is_injected(text):
                self._add(INJECTED, ref, ts, text=text, message_id=mid)
        elif text.strip():
            # developer / system: instructions, permissions, hook output.
            self._add(INJECTED, ref, ts, text=text, message_id=mid)

    def _tool_call(self, p: dict, ref: str, ts, emit: bool):
        typ = p.get("type")
        if typ == "web_search_call":
            if emit:
                action = p.get("action") if isinstance(p.get("action"), dict) else {}
                query = action.get("query") or " | ".join(
                    q for q in action.get("queries") or () if isinstance(q, str))
                self._add(TOOL_CALL, ref, ts, tool="web_search", action=SEARCH,
                          text=clip(str_or_none(query) or ""), args=action or None,
                          call_id=str_or_none(p.get("id")))
            return
        cid = str_or_none(p.get("call_id")) or str_or_none(p.get("id"))
        if typ == "local_shell_call":
            name = "local_shell"
            act = p.get("action") if isinstance(p.get("action"), dict) else {}
            args = act
            text = _command_text(act.get("command"))
        else:
            name = str_or_none(p.get("name")) or "?"
            if typ == "custom_tool_call":
                raw = p.get("input")
                raw = raw if isinstance(raw, str) else ""
                args = {"input": raw}
            else:
                raw = p.get("arguments")
                args = _json_args(raw)
            text = _call_text(name, args)

        action, files = _classify(name, args, text)
        if cid:
            self.calls[cid] = _Call(name, action, files)
        if not emit:
            return
        self._add(TOOL_CALL, ref, ts, tool=name, action=action, text=clip(text),
                  args=args, call_id=cid, files=files)
        if name == "update_plan":
            items = _plan_items(args.get("plan"))
            if items is not None:
                self._add(PLAN, ref, ts, plan=items, tool=name, call_id=cid,
                          text=str_or_none(args.get("explanation")) or "")

    def _tool_output(self, p: dict, ref: str, ts):
        cid = str_or_none(p.get("call_id"))
        call = self.calls.get(cid) if cid else None
        text, exit_code, failed = _output_fields(p.get("output"))
        early_exit = self.exit_codes.pop(cid, None) if cid else None
        if exit_code is None:
            exit_code = early_exit
        if cid and self.patch_failed.pop(cid, False):
            failed = True
        is_error = failed or (exit_code is not None and exit_code != 0)
        self._add(TOOL_RESULT, ref, ts, text=clip(text), call_id=cid,
                  tool=call.tool if call else None,
                  action=call.action if call else None,
                  files=call.files if call else (),
                  exit_code=exit_code, is_error=is_error)

    # -- events -----------------------------------------------------------------------

    def _event(self, p: dict, ref: str, ts):
        """Prompts and tool outcomes.  agent_message / agent_reasoning duplicate response
        items; token_count, task_*, context_compacted and the rest carry no content."""
        typ = p.get("type")
        if typ == "task_started":
            self.turn_prompts = {"event": [], "item": []}
        form = "event"
        if typ == "item_completed" and isinstance(p.get("item"), dict) and p["item"].get("type") == "UserMessage":
            # Codex 0.169 exec writes the prompt only as a completed UserMessage item
            parts = p["item"].get("content") or []
            text = "".join(c.get("text", "") for c in parts if isinstance(c, dict) and c.get("type") == "text")
            p, typ, form = {"type": "user_message", "message": text}, "user_message", "item"
        if typ == "user_message":
            text = p.get("message") if isinstance(p.get("message"), str) else ""
            images = p.get("images") or p.get("local_images")
            seen = getattr(self, "turn_prompts", None) or {"event": [], "item": []}
            self.turn_prompts = seen
            other = seen["item" if form == "event" else "event"]
            if text and text in other:
                other.remove(text)  # the same prompt written in both forms: count it once
                return
            if text:
                seen[form].append(text)
            if p.get("kind") in ("user_instructions", "environment_context"):
                # Older releases tagged injected blocks on the event itself.
                self._add(INJECTED, ref, ts, text=text)
                return
            if _CORTEX_TAG in text:
                injected, text = _split_cortex(text)
                self._add(INJECTED, ref, ts, text=injected)
            if text.strip() or images:
                self._add(USER, ref, ts, text=text)
        else:
            self._tool_event(p)

    def _tool_event(self, p: dict):
        typ = p.get("type")
        cid = str_or_none(p.get("call_id"))
        if not cid:
            return
        if typ == "exec_command_end":
            code = p.get("exit_code")
            if isinstance(code, int) and not isinstance(code, bool):
                self.exit_codes[cid] = code
        elif typ == "patch_apply_end":
            if p.get("success") is False:
                self.patch_failed[cid] = True

    def _compacted(self, p: dict, ref: str, ts):
        text = p.get("message") if isinstance(p.get("message"), str) else ""
        text = _strip_summary_prefix(text).strip()
        if not text:
            text = _summary_from_history(p.get("replacement_history"))
        if text:
            self._add(COMPACT_SUMMARY, ref, ts, text=text)


# -- helpers --------------------------------------------------------------------------

def _split_lines(body: bytes) -> list:
    """The lines as str; None for a line that is not UTF-8."""
    try:
        return body.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        # Decode per line so one bad byte costs one line, not the whole read.
        out = []
        for raw in body.split(b"\n"):
            try:
                out.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(None)
        return out




def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for c in content:
        if isinstance(c, dict) and isinstance(c.get("text"), str) and c["text"]:
            parts.append(c["text"])
    return "\n".join(parts)


def _reasoning_text(p: dict) -> str:
    parts = [s["text"] for s in p.get("summary") or ()
             if isinstance(s, dict) and isinstance(s.get("text"), str) and s["text"].strip()]
    if not parts:
        # Open-weight providers record raw reasoning as content instead of a summary.
        parts = [c["text"] for c in p.get("content") or ()
                 if isinstance(c, dict) and isinstance(c.get("text"), str) and c["text"].strip()]
    return "\n\n".join(parts)


def _is_injected(text: str) -> bool:
    head = text.lstrip()[:64].lower()
    return (head.startswith(_INJECTED_OPENINGS) or _CORTEX_TAG in text
            or text.lstrip().startswith(_SUMMARY_PREFIX))


def _split_cortex(text: str):
    """Cortex's own memory block, and whatever the user typed around it."""
    blocks = _CORTEX_BLOCK.findall(text)
    rest = _CORTEX_BLOCK.sub("", text).strip()
    return "\n".join(blocks), rest


def _json_args(raw) -> dict:
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        return {}
    try:
        val = fastjson.decoded(raw)
        if val is fastjson.UNDECIDED:
            val = json.loads(raw)
    except (ValueError, RecursionError):
        # Redacted or otherwise non-JSON arguments: keep them as recorded.
        return {"arguments": raw}
    return val if isinstance(val, dict) else {"arguments": val}


def _command_text(cmd) -> str:
    if isinstance(cmd, str):
        return cmd
    if isinstance(cmd, list) and all(isinstance(a, str) for a in cmd):
        # ["bash", "-lc", script] is how the shell tool wraps what the model wrote.
        if len(cmd) == 3 and cmd[1] in ("-lc", "-c") and cmd[0].rsplit("/", 1)[-1] in (
                "bash", "zsh", "sh"):
            return cmd[2]
        return shlex.join(cmd)
    return ""


def _call_text(name: str, args: dict) -> str:
    if set(args) == {"arguments"} and isinstance(args["arguments"], str):
        return args["arguments"]
    if name in _SHELL_TOOLS:
        if name == "write_stdin":
            chars = args.get("chars")
            return chars if isinstance(chars, str) else ""
        return _command_text(args.get("cmd") if "cmd" in args else args.get("command"))
    if name == "apply_patch":
        v = args.get("input")
        return v if isinstance(v, str) else ""
    if name == "update_plan":
        expl = str_or_none(args.get("explanation"))
        if expl:
            return expl
        items = _plan_items(args.get("plan")) or ()
        return "\n".join(f"[{i.status}] {i.text}" for i in items)
    for key in ("path", "file_path", "query"):
        if isinstance(args.get(key), str):
            return args[key]
    try:
        return json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError):
        return ""


def _classify(name: str, args: dict, text: str):
    """(normalised action, files) for a call."""
    if name == "apply_patch" or (name in _SHELL_TOOLS and "*** Begin Patch" in text):
        # The shell variant is `apply_patch <<'EOF' …`, which Codex intercepts as a patch.
        return _patch_action(text)
    if name in _SHELL_TOOLS:
        return SHELL, ()
    action = _TOOL_ACTIONS.get(name, OTHER)
    if action == READ:
        path = args.get("path") or args.get("file_path")
        return READ, ((path,) if isinstance(path, str) and path else ())
    return action, ()


def _patch_action(patch: str):
    files, kinds = [], set()
    for m in _PATCH_HEADER.finditer(patch):
        kind, path, moved = m.group(1), m.group(2), m.group(3)
        if moved:
            kinds.add("Update")
            path = moved
        else:
            kinds.add(kind)
        if path not in files:
            files.append(path)
    action = WRITE if kinds == {"Add"} else EDIT
    return action, tuple(files)


def _plan_items(plan):
    if not isinstance(plan, list):
        return None
    items = []
    for it in plan:
        if not isinstance(it, dict):
            continue
        step = it.get("step") if isinstance(it.get("step"), str) else it.get("content")
        if not isinstance(step, str):
            continue
        status = it.get("status")
        status = _PLAN_STATUS.get(status.lower(), "pending") if isinstance(status, str) else "pending"
        items.append(PlanItem(text=step, status=status))
    return tuple(items)


def _output_fields(output):
    """(text, exit_code, failed) from a function_call_output / custom_tool_call_output."""
    failed = False
    exit_code = None
    if isinstance(output, dict):
        # {"content": …, "success": bool} in some versions.
        failed = output.get("success") is False
        output = output.get("content", output.get("output", ""))
    if isinstance(output, list):
        output = _content_text(output)
    if not isinstance(output, str):
        return "", None, failed
    text = output
    if output.startswith('{"output"'):
        # shell (0.77) and apply_patch: {"output": "...", "metadata": {"exit_code": N}}
        try:
            obj = fastjson.decoded(output)
            if obj is fastjson.UNDECIDED:
                obj = json.loads(output)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("output"), str):
            text = obj["output"]
            meta = obj.get("metadata")
            if isinstance(meta, dict):
                code = meta.get("exit_code")
                if isinstance(code, int) and not isinstance(code, bool):
                    exit_code = code
            return text, exit_code, failed
    marker = output.find("\nOutput:\n", 0, 1000)
    if marker != -1:
        # exec_command / write_stdin: "Chunk ID …\nProcess exited with code N\n…\nOutput:\n<body>"
        m = _EXIT_LINE.search(output, 0, marker)
        if m:
            exit_code = int(m.group(1))
        text = output[marker + len("\nOutput:\n"):]
    elif output.startswith(_ERROR_OPENINGS):
        failed = True
    return text, exit_code, failed


def _strip_summary_prefix(text: str) -> str:
    if text.startswith(_SUMMARY_PREFIX):
        nl = text.find("\n")
        return text[nl + 1:] if nl != -1 else ""
    return text


def _summary_from_history(history) -> str:
    """Remote compaction leaves `message` empty and encrypts the summary; fall back to the
    summary message a local compaction puts in the history, else the last assistant answer."""
    if not isinstance(history, list):
        return ""
    last_answer = ""
    for item in history:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        text = _content_text(item.get("content"))
        if item.get("role") == "user" and text.startswith(_SUMMARY_PREFIX):
            return _strip_summary_prefix(text).strip()
        if item.get("role") == "assistant" and text.strip():
            last_answer = text.strip()
    return last_answer
