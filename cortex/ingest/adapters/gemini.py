"""Gemini CLI chat recordings: one JSON document per session,
`{sessionId, projectHash, startTime, lastUpdated, messages[]}` (contracts.md §4).

The CLI rewrites the whole file as the session goes, so the cursor is the number of
messages already consumed and refs are "M<message index>".  A file caught mid-write does
not parse; it yields nothing and keeps the cursor, to be read again later.
"""
from __future__ import annotations

import hashlib
import json
import ntpath
import os
import posixpath
import re

from cortex.clients import sniff
from cortex.core import fastjson
from cortex.ingest.adapters.base import (
    clip, str_or_none,
    ASSISTANT, EDIT, INJECTED, OTHER, PLAN, READ, SEARCH, SHELL, TASK, THINKING, TOOL_CALL,
    TOOL_RESULT, USER, WRITE,
    MAX_DOCUMENT_BYTES, MAX_LINE_BYTES, WINDOW_BYTES,
    Adapter, Entry, ParseResult, PlanItem, SessionMeta, TooLarge,
)


_TOOL_ACTIONS = {
    "write_file": WRITE,
    "replace": EDIT, "edit": EDIT, "smart_edit": EDIT,
    "read_file": READ, "read_many_files": READ,
    "run_shell_command": SHELL,
    "search_file_content": SEARCH, "grep_search": SEARCH, "glob": SEARCH,
    "google_web_search": SEARCH, "web_fetch": SEARCH, "list_directory": SEARCH,
    "delegate_to_agent": TASK, "codebase_investigator": TASK,
    "write_todos": OTHER,
}
_FILE_ACTIONS = (READ, EDIT, WRITE)
_PATH_ARGS = ("file_path", "absolute_path", "path")
# Statuses after which a tool call will not change any more (CoreToolScheduler).
_FINAL_STATUSES = frozenset(("success", "error", "cancelled"))
_TODO_STATUS = {
    "pending": "pending", "in_progress": "in_progress", "completed": "completed",
    "cancelled": "completed", "canceled": "completed",
}
_EXIT_CODE = re.compile(r"^Exit Code: (-?\d+)", re.M)
_CORTEX_TAG = "<cortex-memory"
_CORTEX_BLOCK = re.compile(r"<cortex-memory\b.*?(?:</cortex-memory>|\Z)", re.S)
_ABS_PATH = re.compile(r"(?<![\w.~])(/[^\s'\"`:;,()<>]+|[A-Za-z]:\\[^\s'\"`:;,()<>]+)")


class GeminiAdapter(Adapter):
    client = "gemini"

    def sniff(self, head: bytes, path: str) -> bool:
        return sniff.gemini(head, path)

    def windows(self, path: str, cursor: int = 0, window: int = WINDOW_BYTES,
                max_line: int = MAX_LINE_BYTES, max_document: int = MAX_DOCUMENT_BYTES, fp: str = None):
        """`fp` is the fingerprint the last read left (ParseResult.fingerprint): when the messages before
        the cursor are no longer those (a rewind, a file rewritten with other or fewer messages), the file
        is read from its first message and the result says `restarted` (issue #18, defect 5)."""
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if max_document and size > max_document:
                raise TooLarge(
                    "Gemini chat file %s is %d MiB, over normalize.max_document_bytes (%d MiB); it is one JSON "
                    "document and cannot be read in parts. Raise the limit in config.yaml if the machine has "
                    "the memory (about 4x the file), then `cortex inbox retry`"
                    % (path, size >> 20, max_document >> 20))
            data = f.read()
        yield self._parse_document(data, cursor, fp)

    def _parse_document(self, data: bytes, cursor: int, fp: str = None) -> ParseResult:
        meta = SessionMeta(client="gemini")
        try:
            doc = _jsonl_document(data)
            if doc is None:
                doc = fastjson.decoded(data)
                if doc is fastjson.UNDECIDED:
                    doc = json.loads(data)
        except (ValueError, RecursionError):
            _meta_from_fragment(meta, data)
            return ParseResult(meta=meta, cursor=cursor, truncated=True,
                               warnings=["chat file does not parse (partial write?)"])
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            return ParseResult(meta=meta, cursor=cursor, bad_lines=1,
                               warnings=["not a Gemini chat document"])

        messages = doc["messages"]
        _fill_meta(meta, doc, messages)
        result = ParseResult(meta=meta, cursor=cursor, truncated=bool(doc.get(_PARTIAL)))
        if cursor > len(messages) or (fp and cursor and message_fingerprint(messages, cursor) != fp):
            result.warnings.append(
                f"the messages before cursor {cursor} changed ({len(messages)} in the file): read from the start")
            cursor, result.restarted = 0, True

        end = len(messages)
        if end > cursor and _still_running(messages[-1]):
            # The CLI will rewrite this message when its tools finish.
            end -= 1
        for index in range(cursor, end):
            msg = messages[index]
            if not isinstance(msg, dict):
                result.bad_lines += 1
                continue
            _message(result.entries, msg, index)
        result.cursor = end
        result.fingerprint = message_fingerprint(messages, end)
        return result


def message_fingerprint(messages: list, count: int):
    """A hash of who the first `count` messages are (id, else timestamp and type; not their content, which
    the CLI rewrites when a tool finishes), so a cursor notices a file rewritten with other messages."""
    if count <= 0:
        return None
    h = hashlib.sha1()
    for m in messages[:count]:
        if isinstance(m, dict):
            key = m.get("id") if isinstance(m.get("id"), str) else "%s|%s" % (m.get("timestamp"), m.get("type"))
        else:
            key = "?"
        h.update(str(key).encode("utf-8", "replace") + b"\0")
    return h.hexdigest()[:16]


_PARTIAL = "\0partial"  # a key no JSON document of the CLI has: the last line was cut


def _jsonl_document(data: bytes):
    """The chat document a JSON Lines chat file describes, or None when `data` is not one.

    Gemini CLI 0.6x appends to its chat file instead of rewriting it: the first line is the session's
    header, a message line adds a message or replaces the one with the same id (a tool call's result
    is written as a new version of its message), and {"$set": {...}} sets top-level keys (the whole
    `messages` list at the start of a session or after a rewind). A last line cut by a write in
    progress is left for the next read."""
    nl = data.find(b"\n")
    if nl == -1:
        return None
    try:
        header = fastjson.decoded(data[:nl])
        if header is fastjson.UNDECIDED:
            header = json.loads(data[:nl])
    except (ValueError, RecursionError):
        return None
    if not (isinstance(header, dict) and "sessionId" in header and "messages" not in header and "type" not in header):
        return None
    doc = dict(header)
    doc["messages"], where = [], {}
    for raw in data[nl + 1:].split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = fastjson.decoded(raw)
            if obj is fastjson.UNDECIDED:
                obj = json.loads(raw)
        except (ValueError, RecursionError):
            if not data.endswith(b"\n") and data.endswith(raw):
                doc[_PARTIAL] = True  # the last line is being written: read it at the next run
            continue  # a line being written, or a broken one: the lines around it still count
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("$set"), dict):
            for key, value in obj["$set"].items():
                if key == "messages":
                    value = [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []
                    where = {m.get("id"): i for i, m in enumerate(value) if isinstance(m.get("id"), str)}
                doc[key] = value
        elif "$set" not in obj and "$unset" not in obj and isinstance(obj.get("type"), str):
            mid = obj.get("id")
            if isinstance(mid, str) and mid in where:
                doc["messages"][where[mid]] = obj
            else:
                if isinstance(mid, str):
                    where[mid] = len(doc["messages"])
                doc["messages"].append(obj)
    return doc


# Context the CLI or a hook puts into the first user turn; not what the user typed.
_INJECTED_BLOCK = re.compile(r"<(session_context|hook_context)>.*?(?:</\1>|\Z)", re.S)


def _message(out: list, msg: dict, index: int):
    ref = f"M{index}"
    ts = str_or_none(msg.get("timestamp"))
    mid = str_or_none(msg.get("id"))
    typ = msg.get("type")
    text = _content_text(msg.get("content"))
    if typ == "user":
        injected = _INJECTED_BLOCK.findall(text) and [m.group(0) for m in _INJECTED_BLOCK.finditer(text)]
        if injected:
            out.append(Entry(kind=INJECTED, text="\n".join(injected), ref=ref, ts=ts, message_id=mid))
            text = _INJECTED_BLOCK.sub("", text).strip()
        if _CORTEX_TAG in text:
            blocks = _CORTEX_BLOCK.findall(text)
            out.append(Entry(kind=INJECTED, text="\n".join(blocks), ref=ref, ts=ts,
                             message_id=mid))
            text = _CORTEX_BLOCK.sub("", text).strip()
        if text.strip():
            out.append(Entry(kind=USER, text=text, ref=ref, ts=ts, message_id=mid))
    elif typ == "gemini":
        for thought in msg.get("thoughts") or ():
            ttext = _thought_text(thought)
            if ttext:
                tts = str_or_none(thought.get("timestamp")) or ts
                out.append(Entry(kind=THINKING, text=ttext, ref=ref, ts=tts, message_id=mid))
        if text.strip():
            out.append(Entry(kind=ASSISTANT, text=text, ref=ref, ts=ts, message_id=mid))
        for call in msg.get("toolCalls") or ():
            if isinstance(call, dict):
                _tool_call(out, call, ref, ts, mid)
    # info / error / warning messages are CLI notices, not conversation.


def _tool_call(out: list, call: dict, ref: str, ts, mid):
    name = str_or_none(call.get("name")) or "?"
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    cid = str_or_none(call.get("id"))
    cts = str_or_none(call.get("timestamp")) or ts
    action = _TOOL_ACTIONS.get(name, OTHER)
    files = _files(args) if action in _FILE_ACTIONS else ()
    out.append(Entry(kind=TOOL_CALL, text=clip(_call_text(name, args)), ref=ref, ts=cts,
                     tool=name, action=action, args=args, call_id=cid, files=files,
                     message_id=mid))
    if name == "write_todos":
        items = _todo_items(args.get("todos"))
        if items is not None:
            out.append(Entry(kind=PLAN, plan=items, ref=ref, ts=cts, tool=name, call_id=cid,
                             message_id=mid))

    status = call.get("status")
    text, failed = _result_text(call)
    if call.get("result") is None and status not in _FINAL_STATUSES:
        return
    exit_code = None
    if action == SHELL:
        m = _EXIT_CODE.search(text)
        if m:
            exit_code = int(m.group(1))
    # A cancelled call never ran: counting it as an error keeps it out of "files changed".
    is_error = (failed or status in ("error", "cancelled")
                or (exit_code is not None and exit_code != 0))
    out.append(Entry(kind=TOOL_RESULT, text=clip(text), ref=ref, ts=cts, tool=name,
                     action=action, call_id=cid, files=files, is_error=is_error,
                     exit_code=exit_code, message_id=mid))


# -- helpers --------------------------------------------------------------------------



def _content_text(content) -> str:
    """`content` is a string, or a list of Gemini parts in newer releases."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    parts = []
    for p in content:
        if isinstance(p, str):
            parts.append(p)
        elif isinstance(p, dict) and isinstance(p.get("text"), str) and not p.get("thought"):
            parts.append(p["text"])
    return "".join(parts)


def _thought_text(thought) -> str:
    if isinstance(thought, str):
        return thought.strip()
    if not isinstance(thought, dict):
        return ""
    subject = thought.get("subject") if isinstance(thought.get("subject"), str) else ""
    desc = thought.get("description") if isinstance(thought.get("description"), str) else ""
    if subject and desc:
        return f"{subject.strip()}: {desc.strip()}"
    return (subject or desc).strip()


def _call_text(name: str, args: dict) -> str:
    for key in ("command", "file_path", "absolute_path", "path", "pattern", "query",
                "prompt", "objective", "url"):
        v = args.get(key)
        if isinstance(v, str) and v:
            return v
    if name == "write_todos":
        items = _todo_items(args.get("todos")) or ()
        return "\n".join(f"[{i.status}] {i.text}" for i in items)
    if name == "read_many_files" and isinstance(args.get("paths"), list):
        return " ".join(p for p in args["paths"] if isinstance(p, str))
    try:
        return json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError):
        return ""


def _files(args: dict) -> tuple:
    files = []
    for key in _PATH_ARGS:
        v = args.get(key)
        if isinstance(v, str) and v and v not in files:
            files.append(v)
    paths = args.get("paths")
    if isinstance(paths, list):
        files.extend(p for p in paths if isinstance(p, str) and p and p not in files)
    return tuple(files)


def _todo_items(todos):
    if not isinstance(todos, list):
        return None
    items = []
    for t in todos:
        if not isinstance(t, dict):
            continue
        text = t.get("description") if isinstance(t.get("description"), str) else t.get("content")
        if not isinstance(text, str):
            continue
        status = t.get("status")
        status = _TODO_STATUS.get(status, "pending") if isinstance(status, str) else "pending"
        items.append(PlanItem(text=text, status=status))
    return tuple(items)


def _result_text(call: dict):
    """(text, failed) from a tool call's recorded functionResponse parts."""
    result = call.get("result")
    texts, failed = [], False
    for part in result if isinstance(result, list) else [result]:
        if not isinstance(part, dict):
            continue
        fr = part.get("functionResponse")
        resp = fr.get("response") if isinstance(fr, dict) else None
        if isinstance(resp, dict):
            if isinstance(resp.get("output"), str):
                texts.append(resp["output"])
            elif isinstance(resp.get("error"), str):
                texts.append(resp["error"])
                failed = True
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    if not texts and isinstance(call.get("resultDisplay"), str):
        texts.append(call["resultDisplay"])
    return "\n".join(texts), failed


def _still_running(msg) -> bool:
    if not isinstance(msg, dict):
        return False
    return any(isinstance(c, dict) and c.get("status") not in _FINAL_STATUSES
               and c.get("result") is None
               for c in msg.get("toolCalls") or ())


def _fill_meta(meta: SessionMeta, doc: dict, messages: list):
    meta.session_id = str_or_none(doc.get("sessionId"))
    meta.started_at = str_or_none(doc.get("startTime"))
    if meta.started_at is None:
        for m in messages:
            if isinstance(m, dict) and str_or_none(m.get("timestamp")):
                meta.started_at = m["timestamp"]
                break
    meta.title = str_or_none(doc.get("summary"))
    project_hash = doc.get("projectHash")
    if isinstance(project_hash, str) and len(project_hash) == 64:
        meta.cwd = _project_root(project_hash, messages)


def _project_root(project_hash: str, messages: list):
    """The project directory, when a path the session mentions hashes to `projectHash`.

    Gemini CLI names a project by sha256(project root), so a candidate either matches
    exactly or is rejected: no guessing from relative paths.
    """
    tried = set()
    for path in _absolute_paths(messages):
        mod = ntpath if re.match(r"[A-Za-z]:\\", path) else posixpath
        cur = mod.normpath(path)
        while cur not in tried:
            tried.add(cur)
            if hashlib.sha256(cur.encode("utf-8")).hexdigest() == project_hash:
                return cur
            parent = mod.dirname(cur)
            if parent == cur:
                break
            cur = parent
    return None


def _absolute_paths(messages: list):
    for m in messages:
        if not isinstance(m, dict):
            continue
        for call in m.get("toolCalls") or ():
            if not isinstance(call, dict):
                continue
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            for key in _PATH_ARGS + ("dir_path", "directory"):
                v = args.get(key)
                if isinstance(v, str) and (v.startswith("/") or re.match(r"[A-Za-z]:\\", v)):
                    yield v
            # Tools report the absolute path they resolved ("…wrote to new file: /abs/x.md.").
            text, _ = _result_text(call)
            for match in _ABS_PATH.finditer(text[:300]):
                yield match.group(1).rstrip(".")


def _meta_from_fragment(meta: SessionMeta, data: bytes):
    """Session id and start time from the top of a file that is still being written."""
    head = data[:4096].decode("utf-8", "replace")
    for key, attr in (("sessionId", "session_id"), ("startTime", "started_at")):
        m = re.search(r'"%s"\s*:\s*"([^"]+)"' % key, head)
        if m:
            setattr(meta, attr, m.group(1))
