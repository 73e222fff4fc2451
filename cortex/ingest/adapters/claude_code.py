"""Claude Code session transcripts (`~/.claude/projects/<dir>/<session-id>.jsonl`).

One JSON record per line.  The record schema is not documented by Anthropic; what this
module relies on was read from real transcripts of versions 1.0.98 to 2.1.330 (see
tests/fixtures/transcripts/SOURCES.md and ../shared/clients/contracts.md section 2).
"""
from __future__ import annotations

import dataclasses
import json
import os
import re

from cortex.clients import sniff
from cortex.core import fastjson
from cortex.ingest.adapters.base import (
    clip,
    ASSISTANT, COMPACT_SUMMARY, EDIT, INJECTED, MAX_LINE_BYTES, OTHER, PLAN, READ, SEARCH, SHELL, TASK,
    THINKING, TOOL_CALL, TOOL_RESULT, USER, WINDOW_BYTES, WRITE,
    Adapter, Entry, ParseResult, PlanItem, SessionMeta, line_blocks,
)

MAX_WARNINGS = 20

# Cortex's own session-start block: whoever carries it, it is never a prompt or a reply.
CORTEX_MARKER = "<cortex-memory"

TOOL_ACTIONS = {
    "Edit": EDIT, "MultiEdit": EDIT, "NotebookEdit": EDIT,
    "Write": WRITE,
    "Read": READ, "NotebookRead": READ,
    "Bash": SHELL, "BashOutput": SHELL,
    "Grep": SEARCH, "Glob": SEARCH, "LS": SEARCH, "WebSearch": SEARCH, "WebFetch": SEARCH,
    "web_search": SEARCH, "web_fetch": SEARCH,  # server-side tools
    "Task": TASK, "Agent": TASK,
    "TodoWrite": OTHER,
}

PLAN_STATUS = {
    "pending": "pending", "todo": "pending", "not_started": "pending",
    "in_progress": "in_progress", "in-progress": "in_progress", "active": "in_progress",
    "completed": "completed", "complete": "completed", "done": "completed",
}

_REMINDER_RE = re.compile(
    r"<(system-reminder|user-prompt-submit-hook)>.*?</\1>\s*", re.DOTALL)
_COMMAND_NAME_RE = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS_RE = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_BASH_INPUT_RE = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)
_EXIT_CODE_RE = re.compile(r"^(?:Error: )?Exit code (-?\d+)\b")
_TOOL_ERROR_RE = re.compile(r"^\s*<tool_use_error>(.*)</tool_use_error>\s*$", re.DOTALL)

# User text that the client wrote, not the human (local command output and caveats,
# `!` shell-mode output, background task notices, interrupt markers).
_INJECTED_PREFIXES = (
    "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
    "<bash-stdout>", "<bash-stderr>", "<task-notification>",
    "[Request interrupted by user", "Caveat: The messages below were generated",
)


class ClaudeCodeAdapter(Adapter):
    client = "claude-code"

    # ---------------------------------------------------------------- sniff

    def sniff(self, head: bytes, path: str) -> bool:
        return sniff.claude_code(head, path)

    # ---------------------------------------------------------------- parse

    def windows(self, path: str, cursor: int = 0, window: int = WINDOW_BYTES,
                max_line: int = MAX_LINE_BYTES, max_document: int = 0):
        meta = SessionMeta(client=self.client)
        result = ParseResult(meta=meta, cursor=max(cursor, 0))
        state = _State(result)
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            start = result.cursor
            if start > size:
                _warn(result, f"cursor {start} is past the end of the file ({size} bytes); "
                              "the file was replaced, re-reading from the start")
                start = result.cursor = 0
            line_no = _count_newlines(f, start) if start else 0
            mid_line = False
            if start:
                f.seek(start - 1)
                mid_line = f.read(1) != b"\n"
            if mid_line:
                # A cursor inside a line: drop the rest of that line rather than misread it.
                _warn(result, f"cursor {start} is not at a line start; skipped to the next line")
            yielded = None
            for what, offset, data in line_blocks(f, start, None, window, max_line):
                if what == "tail":  # bytes after the last newline: a line still being written
                    result.truncated = True
                    break
                if what == "long":
                    line_no += 1
                    if not mid_line:
                        result.bad_lines += 1
                        _warn(result, f"L{line_no}: a line of {data} bytes, over the {max_line}-byte "
                                      "line limit, skipped")
                    mid_line = False
                    result.cursor = offset + data
                    continue
                lines = data.split(b"\n")
                lines.pop()
                if mid_line:
                    lines[0] = b""
                    mid_line = False
                for raw in lines:
                    line_no += 1
                    if not raw or raw.isspace():
                        continue
                    try:
                        rec = fastjson.decoded(raw)
                        if rec is fastjson.UNDECIDED:
                            rec = json.loads(raw)
                    except (ValueError, RecursionError):
                        result.bad_lines += 1
                        continue
                    if not isinstance(rec, dict):
                        result.bad_lines += 1
                        continue
                    try:
                        state.record(rec, line_no)
                    except Exception as exc:  # malformed record of a known type: skip it, never raise
                        result.bad_lines += 1
                        _warn(result, f"L{line_no}: skipped ({type(exc).__name__}: {exc})")
                result.cursor = offset + len(data)
                del lines, data
                _finish_window(path, start, state)
                yield result
                yielded = result
                result = ParseResult(meta=meta, cursor=result.cursor)
                state.begin(result)
        if yielded is None or result.cursor != yielded.cursor or result.bad_lines or result.truncated \
                or result.warnings:
            _finish_window(path, start, state)
            yield result

    # ---------------------------------------------------------------- companions

    def companions(self, path: str) -> list:
        path = os.path.abspath(path)
        folder, base = os.path.split(path)
        if base.startswith("agent-"):
            return []  # a subagent file has no companions of its own
        stem = base[:-len(".jsonl")] if base.endswith(".jsonl") else os.path.splitext(base)[0]
        found = []
        # 2.1.x: <dir>/<session>/subagents/agent-*.jsonl
        sub = os.path.join(folder, stem, "subagents")
        for name in _listdir(sub):
            if name.startswith("agent-") and name.endswith(".jsonl") and _regular(os.path.join(sub, name)):
                found.append(os.path.join(sub, name))
        # 2.0.x: agent-*.jsonl beside the session file, tied to it only by sessionId.
        siblings = [n for n in _listdir(folder) if n.startswith("agent-") and n.endswith(".jsonl")
                    and _regular(os.path.join(folder, n))]
        heads = {}
        if siblings:
            session_id = _head_info(path)[0] or stem
            for name in siblings:
                p = os.path.join(folder, name)
                heads[p] = _head_info(p)
                if heads[p][0] == session_id:
                    found.append(p)
        # "Warmup" agents are the client's cache pre-warming, not delegated work.
        return sorted(p for p in found if (heads.get(p) or _head_info(p))[1] != "Warmup")


# -------------------------------------------------------------------- parsing state

class _State:
    """Everything one read remembers between lines (and windows)."""

    def __init__(self, result: ParseResult):
        self.begin(result)
        self.meta = result.meta
        self.calls = {}        # tool_use id -> TOOL_CALL entry, to label results
        self.seen_blocks = set()  # (message id, block identity): one message spans many lines
        self.uuids = set()
        self.custom_title = self.ai_title = None
        self.summaries = []       # (leafUuid, summary) in file order

    def begin(self, result: ParseResult) -> None:
        """Start a new window: its entries go to `result`."""
        self.result = result
        self.out = result.entries
        self.orphans = []         # indexes in `out` of results whose call was not seen

    def record(self, rec: dict, line_no: int) -> None:
        kind = rec.get("type")
        self._meta(rec)
        uuid = rec.get("uuid")
        if uuid:
            self.uuids.add(uuid)
        if kind == "assistant":
            self._assistant(rec, line_no)
        elif kind == "user":
            self._user(rec, line_no)
        elif kind == "summary":
            title = rec.get("summary")
            if isinstance(title, str) and title.strip():
                leaf = rec.get("leafUuid")
                self.summaries.append((leaf if isinstance(leaf, str) else None, title.strip()))
        elif kind == "custom-title":  # /rename
            title = rec.get("customTitle")
            if isinstance(title, str) and title.strip():
                self.custom_title = title.strip()
        elif kind == "ai-title":
            title = rec.get("aiTitle")
            if isinstance(title, str) and title.strip():
                self.ai_title = title.strip()
        elif kind == "attachment":
            self._attachment(rec, line_no)
        # system, progress, file-history-snapshot, queue-operation, last-prompt,
        # api-request*, cost-state, mode, tools-used, ...: nothing the extractor needs.

    def finish(self) -> None:
        # A user's /rename beats a generated title.  `summary` lines can name other
        # sessions (a resumed file collects them), so prefer one whose leaf is in this file.
        own = [t for leaf, t in self.summaries if leaf in self.uuids]
        summary = (own or [t for _, t in self.summaries] or [None])[-1]
        title = self.custom_title or self.ai_title or summary
        if title:
            self.meta.title = title

    def _meta(self, rec: dict) -> None:
        meta = self.meta
        sid = rec.get("sessionId")
        if meta.session_id is None and sid and isinstance(sid, str):
            meta.session_id = sid
        cwd = rec.get("cwd")
        if cwd and isinstance(cwd, str):
            meta.cwd = cwd
        branch = rec.get("gitBranch")
        if branch and isinstance(branch, str):
            meta.git_branch = branch
        version = rec.get("version")
        if version and isinstance(version, str):
            meta.client_version = version
        if meta.started_at is None:
            ts = _ts(rec)
            if ts and isinstance(ts, str):
                meta.started_at = ts

    # ---- assistant

    def _assistant(self, rec: dict, line_no: int) -> None:
        msg = rec.get("message")
        if not isinstance(msg, dict):
            raise ValueError("assistant record without a message")
        mid = msg.get("id")
        ref, ts, side = f"L{line_no}", _ts(rec), rec.get("isSidechain") is True
        # Client-made replies (API errors, "No response requested.") are not model output.
        synthetic = msg.get("model") == "<synthetic>" or rec.get("isApiErrorMessage") is True
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise ValueError("assistant content is neither a list nor a string")
        out = []
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype in ("tool_use", "server_tool_use"):
                key = ("tool", block.get("id")) if block.get("id") else None
            elif btype in ("text", "thinking"):
                key = (mid, btype, block.get(btype)) if mid else None
            else:
                continue  # redacted_thinking, server tool results, ...
            if key is not None:
                if key in self.seen_blocks:
                    continue
                self.seen_blocks.add(key)
            if btype == "text":
                text = block.get("text")
                if isinstance(text, str) and text.strip():
                    kind = INJECTED if synthetic or CORTEX_MARKER in text else ASSISTANT
                    out.append(Entry(kind, text, ref, ts, sidechain=side, message_id=mid))
            elif btype == "thinking":
                text = block.get("thinking")
                if isinstance(text, str) and text.strip():
                    out.append(Entry(THINKING, text, ref, ts, sidechain=side, message_id=mid))
            else:
                out.extend(self._tool_call(block, ref, ts, side, mid))
        self.out.extend(out)

    def _tool_call(self, block, ref, ts, side, mid):
        name = block.get("name") or ""
        args = block.get("input")
        if not isinstance(args, dict):
            args = {}
        call = Entry(
            TOOL_CALL, _call_text(name, args), ref, ts,
            tool=name, action=TOOL_ACTIONS.get(name, OTHER), args=args,
            call_id=block.get("id"), files=_call_files(args),
            sidechain=side, message_id=mid,
        )
        if call.call_id:
            self.calls[call.call_id] = call
        entries = [call]
        if name == "TodoWrite" and isinstance(args.get("todos"), list):
            items = tuple(
                PlanItem(str(t.get("content") or t.get("activeForm") or ""),
                         PLAN_STATUS.get(str(t.get("status", "")).lower(), "pending"))
                for t in args["todos"] if isinstance(t, dict)
            )
            text = "\n".join(f"[{i.status}] {i.text}" for i in items)
            entries.append(Entry(PLAN, text, ref, ts, tool=name, call_id=call.call_id,
                                 plan=items, sidechain=side, message_id=mid))
        return entries

    # ---- user

    def _user(self, rec: dict, line_no: int) -> None:
        msg = rec.get("message")
        if not isinstance(msg, dict):
            raise ValueError("user record without a message")
        ref, ts, side = f"L{line_no}", _ts(rec), rec.get("isSidechain") is True
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise ValueError("user content is neither a list nor a string")
        out = []
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = block.get("text")
                if isinstance(text, str):
                    out.extend(_user_text(rec, text, ref, ts, side))
            elif btype == "tool_result":
                out.append(self._tool_result(block, ref, ts, side, len(self.out) + len(out)))
            # images and documents carry no text
        self.out.extend(out)

    def _tool_result(self, block, ref, ts, side, index):
        call_id = block.get("tool_use_id")
        call = self.calls.get(call_id)
        if call is None and call_id:
            self.orphans.append(index)
        text = _result_text(block.get("content"))
        m = _TOOL_ERROR_RE.match(text)
        if m:
            text = m.group(1)
        exit_code = None
        if call is None or call.action == SHELL:
            m = _EXIT_CODE_RE.match(text)
            if m:
                exit_code = int(m.group(1))
        text = clip(text)
        return Entry(
            TOOL_RESULT, text, ref, ts,
            tool=call.tool if call else None,
            action=call.action if call else None,
            call_id=call_id, is_error=block.get("is_error") is True, exit_code=exit_code,
            files=call.files if call else (), sidechain=side,
        )

    # ---- attachment (2.1.x+): only hook output reaches the extractor

    def _attachment(self, rec: dict, line_no: int) -> None:
        att = rec.get("attachment")
        if not isinstance(att, dict):
            return
        atype = att.get("type")
        if not (isinstance(atype, str) and atype.startswith("hook_")):
            return
        content = att.get("content")
        if isinstance(content, list):
            content = "\n".join(c for c in content if isinstance(c, str))
        # A hook that printed JSON has an empty `content` here; its additionalContext
        # follows in a separate `hook_additional_context` attachment.
        if isinstance(content, str) and content.strip():
            self.out.append(Entry(INJECTED, content, f"L{line_no}", _ts(rec),
                                  sidechain=rec.get("isSidechain") is True))


# -------------------------------------------------------------------- helpers

def _user_text(rec: dict, text: str, ref, ts, side) -> list:
    if not text.strip():
        return []
    if rec.get("isCompactSummary") is True:
        return [Entry(COMPACT_SUMMARY, text, ref, ts, sidechain=side)]
    if rec.get("isMeta") is True or CORTEX_MARKER in text:
        return [Entry(INJECTED, text, ref, ts, sidechain=side)]
    stripped = text.lstrip()
    if stripped.startswith(_INJECTED_PREFIXES):
        return [Entry(INJECTED, text, ref, ts, sidechain=side)]
    if "<command-name>" in text:
        m = _COMMAND_NAME_RE.search(text)
        name = m.group(1).strip() if m else ""
        if name:
            if not name.startswith("/"):
                name = "/" + name
            a = _COMMAND_ARGS_RE.search(text)
            args = a.group(1).strip() if a else ""
            return [Entry(USER, f"{name} {args}" if args else name, ref, ts, sidechain=side)]
    if stripped.startswith("<bash-input>"):
        m = _BASH_INPUT_RE.search(text)
        if m:
            return [Entry(USER, "!" + m.group(1), ref, ts, sidechain=side)]
    # Reminders the client spliced into a typed prompt are injected, the rest is the prompt.
    spans = [m.group(0).strip() for m in _REMINDER_RE.finditer(text)]
    out = []
    if spans:
        text = _REMINDER_RE.sub("", text).strip()
    if text:
        out.append(Entry(USER, text, ref, ts, sidechain=side))
    out.extend(Entry(INJECTED, s, ref, ts, sidechain=side) for s in spans)
    return out


def _finish_window(path: str, start: int, state: _State) -> None:
    state.finish()
    if start and state.orphans:
        _resolve_orphans(path, start, state)


def _resolve_orphans(path: str, start: int, state: _State) -> None:
    """Label results whose tool call lies before the cursor (an incremental read).

    Looks the calls up by their ids in the bytes already consumed, newest first, a bounded
    step at a time, and parses only the lines that hold them.
    """
    out = state.out
    wanted = {out[i].call_id for i in state.orphans if out[i].call_id and out[i].call_id not in state.calls}
    if wanted:
        with open(path, "rb") as f:
            _find_calls(f, start, wanted, state)
    for i in state.orphans:
        entry = out[i]
        call = state.calls.get(entry.call_id)
        if call is None:
            continue
        exit_code = entry.exit_code if call.action == SHELL else None
        out[i] = dataclasses.replace(entry, tool=call.tool, action=call.action,
                                     files=call.files, exit_code=exit_code)


_FIND_STEP = 4 << 20
_FIND_TRIES = 100  # other records (hook progress, results) mention an id too


def _find_calls(f, end: int, wanted: set, state: _State) -> None:
    """Walk bytes [0, end) backwards and record the tool calls whose ids are in `wanted`."""
    needles = {json.dumps(cid).encode(): cid for cid in wanted}
    tries = dict.fromkeys(wanted, 0)
    overlap = max(len(n) for n in needles) - 1
    lo = end
    while lo > 0 and needles:
        prev, hi = lo, min(end, lo + overlap)  # the overlap finds an id cut by the step's edge
        lo = max(0, lo - _FIND_STEP)
        f.seek(lo)
        chunk = f.read(hi - lo)
        hits = []
        for needle, cid in needles.items():
            pos = chunk.rfind(needle)
            while pos >= 0:
                if lo + pos < prev:  # not already seen in the previous step
                    hits.append((lo + pos, cid))
                pos = chunk.rfind(needle, 0, pos + len(needle) - 1)
        for where, cid in sorted(hits, reverse=True):  # newest first
            if cid not in tries or cid in state.calls:
                continue
            tries[cid] += 1
            line = _line_at(f, where, end)
            if line is not None:
                _call_from_line(line, cid, state)
            if cid in state.calls or tries[cid] >= _FIND_TRIES:
                del tries[cid]
                needles = {n: c for n, c in needles.items() if c != cid}


def _line_at(f, where: int, end: int, limit: int = MAX_LINE_BYTES):
    """The whole line holding byte `where` (reading at most `limit` bytes), or None."""
    step = 1 << 16
    first = where
    while first > 0 and where - first < limit:
        lo = max(0, first - step)
        f.seek(lo)
        back = f.read(first - lo)
        nl = back.rfind(b"\n")
        if nl >= 0:
            first = lo + nl + 1
            break
        first = lo
    else:
        if first > 0:
            return None
    f.seek(first)
    parts, size = [], 0
    while size <= limit:
        data = f.read(min(step, max(end - first - size, 0)))
        if not data:
            break
        nl = data.find(b"\n")
        if nl >= 0:
            parts.append(data[:nl])
            return b"".join(parts)
        parts.append(data)
        size += len(data)
    return b"".join(parts) if size <= limit else None


def _call_from_line(line: bytes, call_id: str, state: _State) -> None:
    try:
        rec = json.loads(line)
        content = rec["message"]["content"] if rec.get("type") == "assistant" else None
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("id") == call_id and \
                block.get("type") in ("tool_use", "server_tool_use"):
            state._tool_call(block, "", None, False, None)
            return


def _call_text(name: str, args: dict) -> str:
    if name in ("Bash",):
        return _str(args.get("command"))
    if name in ("Edit", "MultiEdit", "Write", "Read"):
        return _str(args.get("file_path"))
    if name in ("NotebookEdit", "NotebookRead"):
        return _str(args.get("notebook_path"))
    if name in ("Grep", "Glob"):
        pattern, where = _str(args.get("pattern")), _str(args.get("path"))
        return f"{pattern} in {where}" if where else pattern
    if name in ("WebSearch", "web_search"):
        return _str(args.get("query"))
    if name in ("WebFetch", "web_fetch"):
        return _str(args.get("url"))
    if name in ("Task", "Agent"):
        return _str(args.get("description")) or _str(args.get("prompt"))
    if name == "BashOutput":
        return _str(args.get("bash_id"))
    return ""


def _call_files(args: dict) -> tuple:
    files = []
    for key in ("file_path", "notebook_path"):
        value = args.get(key)
        if isinstance(value, str) and value and value not in files:
            files.append(value)
    return tuple(files)


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if c.get("type") == "text" and isinstance(c.get("text"), str):
                    parts.append(c["text"])
                elif c.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(c, str):
                parts.append(c)
        return "\n".join(parts)
    return ""


def _str(value) -> str:
    return value if isinstance(value, str) else ""


def _count_newlines(f, end: int) -> int:
    f.seek(0)
    count, left = 0, end
    while left > 0:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            break
        count += chunk.count(b"\n")
        left -= len(chunk)
    return count


def _regular(path: str) -> bool:
    """A regular file, not followed through a link: a FIFO or a link to /dev/zero would block or never end."""
    import stat
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _listdir(folder: str) -> list:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _head_info(path: str, max_lines: int = 20):
    """(sessionId, text of the first user message) from the start of a transcript."""
    session_id = first_user = None
    try:
        with open(path, "rb") as f:
            for _ in range(max_lines):
                raw = f.readline(1 << 20)  # a longer line is not a head line worth reading
                if not raw:
                    break
                try:
                    rec = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(rec, dict):
                    continue
                if session_id is None and isinstance(rec.get("sessionId"), str):
                    session_id = rec["sessionId"]
                if rec.get("type") == "user" and first_user is None:
                    msg = rec.get("message")
                    content = msg.get("content") if isinstance(msg, dict) else None
                    if isinstance(content, list):
                        content = _result_text(content)
                    first_user = content.strip() if isinstance(content, str) else ""
                if session_id is not None and first_user is not None:
                    break
    except OSError:
        pass
    return session_id, first_user


def _warn(result: ParseResult, message: str) -> None:
    if len(result.warnings) < MAX_WARNINGS:
        result.warnings.append(message)


def _ts(rec: dict):
    """The record's timestamp when it is a string (Entry.ts is an ISO string or None)."""
    ts = rec.get("timestamp")
    return ts if isinstance(ts, str) else None
