"""The contract between transcript adapters and extraction.

An adapter turns one client's transcript file into a flat list of `Entry`
objects in conversation order.  Everything downstream (extraction, records)
only ever sees entries, never a client's raw format, so a new client is one
new module in this package.

Adapters are pure readers: they never write, never call a model, and never
raise on bad content.  A line that does not parse is counted in
`ParseResult.bad_lines` and skipped; a final line without its newline is
left for the next run (the client may still be writing it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Tuple

# Reading limits (normalize.window_bytes / normalize.max_line_bytes in config.yaml).  A transcript is
# read, extracted and stored one window at a time, so memory stays bounded whatever its size; a
# single line longer than the line limit (a pasted image, a runaway tool output, a corrupt file) is
# skipped in small steps and counted as a bad line, never read into memory.
WINDOW_BYTES = 16 << 20
MAX_LINE_BYTES = 32 << 20
SKIP_STEP = 1 << 20
# A transcript that is one JSON document (Gemini) cannot be read in parts: one larger than this is
# not read at all (its events are quarantined with the reason) rather than risk the machine's memory.
MAX_DOCUMENT_BYTES = 64 << 20


class TooLarge(Exception):
    """The transcript cannot be read within the configured memory bounds (the message says why)."""

# What an entry is.  Extraction relies on these meanings:
USER = "user"                  # a prompt the human typed (never injected or meta text)
ASSISTANT = "assistant"        # text the assistant showed the user
THINKING = "thinking"          # reasoning text: never stored as fact
TOOL_CALL = "tool_call"        # the assistant invoked a tool
TOOL_RESULT = "tool_result"    # the result of a tool call (is_error / exit_code set when known)
PLAN = "plan"                  # a full snapshot of the plan / todo list (TodoWrite, update_plan, write_todos)
COMPACT_SUMMARY = "compact_summary"  # the client's own summary written at compaction
INJECTED = "injected"          # context the client or a hook injected (AGENTS.md, env blocks, hook output)

ENTRY_KINDS = (USER, ASSISTANT, THINKING, TOOL_CALL, TOOL_RESULT, PLAN, COMPACT_SUMMARY, INJECTED)

# Normalised tool actions, so extraction does not need each client's tool names.
EDIT = "edit"        # changed an existing file (Edit, MultiEdit, apply_patch update, replace)
WRITE = "write"      # created or overwrote a file (Write, apply_patch add, write_file)
READ = "read"        # read a file
SHELL = "shell"      # ran a command (Bash, shell, exec_command, run_shell_command)
SEARCH = "search"    # grep/glob/web search
TASK = "task"        # delegated to a subagent
OTHER = "other"

PLAN_STATUSES = ("pending", "in_progress", "completed")


@dataclass(frozen=True)
class PlanItem:
    text: str
    status: str  # one of PLAN_STATUSES (map the client's words onto these)


@dataclass(frozen=True)
class Entry:
    kind: str                          # one of ENTRY_KINDS
    text: str = ""                     # the human-readable text (prompt, reply, command, output, summary)
    ref: str = ""                      # stable position in the transcript: "L<line number>" (1-based) for JSONL,
                                       # "M<message index>" for JSON documents
    ts: Optional[str] = None           # ISO-8601 UTC timestamp when the client recorded one
    tool: Optional[str] = None         # the client's own tool name (TOOL_CALL / TOOL_RESULT)
    action: Optional[str] = None       # normalised action: EDIT, WRITE, READ, SHELL, SEARCH, TASK, OTHER
    args: Optional[dict] = None        # tool input as the client recorded it (TOOL_CALL)
    call_id: Optional[str] = None      # links a TOOL_RESULT to its TOOL_CALL
    is_error: bool = False             # TOOL_RESULT: the tool reported failure
    exit_code: Optional[int] = None    # TOOL_RESULT of a shell command, when known
    files: Tuple[str, ...] = ()        # file paths this entry touches (edit/write/read targets, patch files)
    plan: Tuple[PlanItem, ...] = ()    # PLAN: the whole list as of this entry
    sidechain: bool = False            # written by a subagent, not the main conversation
    message_id: Optional[str] = None   # the client's message id, when it has one


@dataclass
class SessionMeta:
    client: str                        # "claude-code", "codex", "gemini"
    session_id: Optional[str] = None
    cwd: Optional[str] = None          # the working directory the client recorded (last seen)
    git_branch: Optional[str] = None
    client_version: Optional[str] = None
    started_at: Optional[str] = None   # first timestamp seen
    title: Optional[str] = None        # a session title/summary line when the client writes one


@dataclass
class ParseResult:
    meta: SessionMeta
    entries: list = field(default_factory=list)   # list[Entry], in order
    cursor: int = 0          # where the next parse should resume: a byte offset (JSONL) or message count (JSON)
    bad_lines: int = 0       # lines / items that could not be read and were skipped
    truncated: bool = False  # the file ended in a partial line that was left for later
    warnings: list = field(default_factory=list)  # short human-readable notes
    fingerprint: str = None  # whole-document formats (Gemini): who the messages before `cursor` are
    restarted: bool = False  # the file was rewritten under the cursor and was read from its start


class Adapter:
    """One client's transcript format.  Subclasses set `client` and implement both methods."""

    client: str = ""

    def sniff(self, head: bytes, path: str) -> bool:
        """True if the first bytes of the file (up to 64 KiB) are this client's format.

        Decide from content; the path may only break a tie, never decide alone.
        """
        raise NotImplementedError

    def windows(self, path: str, cursor: int = 0, window: int = WINDOW_BYTES,
                max_line: int = MAX_LINE_BYTES, max_document: int = MAX_DOCUMENT_BYTES) -> Iterator[ParseResult]:
        """Read the transcript from `cursor` on (0 = from the start), one window at a time.

        Each result holds the entries of its window only, the cursor just past it and its bad
        lines; they share one `meta`, updated as the read goes.  The state that spans lines (open
        tool calls, the session's meta) carries from window to window, so the windows together
        give exactly the entries of one read.  Must not raise on malformed content; raises
        OSError when the file cannot be opened and TooLarge when it cannot be read within the
        limits (a JSON document over `max_document`).
        """
        raise NotImplementedError

    def parse(self, path: str, cursor: int = 0, **limits) -> ParseResult:
        """All the windows of `windows` as one result (for callers that want the whole read)."""
        whole = None
        for part in self.windows(path, cursor, **limits):
            if whole is None:
                whole = part
                continue
            whole.entries.extend(part.entries)
            whole.cursor = part.cursor
            whole.bad_lines += part.bad_lines
            whole.truncated = part.truncated
            whole.warnings.extend(part.warnings)
        return whole

    def companions(self, path: str) -> list:
        """Other transcript files that belong to this session (e.g. subagent files), to be parsed
        with their own cursors and marked sidechain.  Default: none."""
        return []


TEXT_LIMIT = 4000  # characters of one entry's text an adapter keeps


def str_or_none(v):
    """A non-empty string, else None (transcript fields of any JSON type)."""
    return v if isinstance(v, str) and v else None


def clip(text: str) -> str:
    """At most TEXT_LIMIT characters, never ending inside a word, so no secret is left in part (issue #18)."""
    if len(text) <= TEXT_LIMIT:
        return text
    from cortex.model import redact
    return redact.cut(text, TEXT_LIMIT)


def line_blocks(f, start: int, end: Optional[int] = None, window: int = WINDOW_BYTES,
                max_line: int = MAX_LINE_BYTES):
    """Walk a JSON Lines file from byte `start` (to `end`, default EOF) in bounded pieces.

    Yields, in file order:
      ("lines", offset, data)  complete lines (data ends with a newline), at most about
                               `window` + `max_line` bytes;
      ("long", offset, size)   one line longer than `max_line`, skipped without being held;
      ("tail", offset, size)   bytes after the last newline: a line still being written.
    """
    window = max(int(window), 1)
    max_line = max(int(max_line), 1)
    f.seek(start)
    pos = start              # file offset of the first byte not yet yielded
    left = None if end is None else max(end - start, 0)
    rest = b""               # the start of a line the last read cut

    def read(n):
        nonlocal left
        if left is not None:
            n = min(n, left)
            if n <= 0:
                return b""
        data = f.read(n)
        if left is not None:
            left -= len(data)
        return data

    while True:
        chunk = read(window)
        if chunk and len(rest) + len(chunk) > max_line and b"\n" not in chunk:
            size, rest, chunk = len(rest) + len(chunk), b"", None  # over the limit: no need to join them
        else:
            size = 0
            data = rest + chunk if rest else chunk  # no copy for a file read in one go
            nl = data.rfind(b"\n")
            if nl >= 0:
                block = data if nl + 1 == len(data) else data[:nl + 1]
                rest = data[nl + 1:]
                if len(block) > max_line:  # it may hold a line over the limit: that line is skipped wherever it falls
                    yield from _split_long(pos, block, max_line)
                else:
                    yield ("lines", pos, block)
                pos += nl + 1
                del block
            else:
                rest = data
            del data
            if not chunk:
                break
        if len(rest) > max_line:
            size, rest = len(rest), b""
        if size:
            while True:
                step = read(SKIP_STEP)
                if not step:
                    yield ("tail", pos, size)
                    return
                i = step.find(b"\n")
                if i >= 0:
                    yield ("long", pos, size + i + 1)
                    pos += size + i + 1
                    rest = step[i + 1:]
                    break
                size += len(step)
    if rest:
        yield ("tail", pos, len(rest))


def _split_long(pos: int, block: bytes, max_line: int):
    """line_blocks' pieces for a block of whole lines that may hold lines over `max_line`."""
    first = at = 0
    while at < len(block):
        nl = block.index(b"\n", at)
        if nl + 1 - at > max_line:
            if at > first:
                yield ("lines", pos + first, block[first:at])
            yield ("long", pos + at, nl + 1 - at)
            first = nl + 1
        at = nl + 1
    if first < len(block):
        yield ("lines", pos + first, block[first:])
