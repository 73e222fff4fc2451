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
from typing import Optional, Tuple

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


class Adapter:
    """One client's transcript format.  Subclasses set `client` and implement both methods."""

    client: str = ""

    def sniff(self, head: bytes, path: str) -> bool:
        """True if the first bytes of the file (up to 64 KiB) are this client's format.

        Decide from content; the path may only break a tie, never decide alone.
        """
        raise NotImplementedError

    def parse(self, path: str, cursor: int = 0) -> ParseResult:
        """Read the transcript from `cursor` on (0 = from the start) and return its entries.

        Must not raise on malformed content; raises OSError only when the file cannot be opened.
        """
        raise NotImplementedError

    def companions(self, path: str) -> list:
        """Other transcript files that belong to this session (e.g. subagent files), to be parsed
        with their own cursors and marked sidechain.  Default: none."""
        return []
