"""Which client wrote a transcript, judged from its first bytes.

Standard library only and nothing imported until needed: the capture hooks use this to decide
whether a `transcript_path` names a real transcript before they keep a link to it, and the adapters
use the same rules to pick a parser, so a file the hook keeps is always a file the normalizer reads.
"""
import json

HEAD_BYTES = 65536

# Record types Claude Code writes.
CLAUDE_RECORD_TYPES = frozenset((
    "user", "assistant", "system", "summary", "progress", "file-history-snapshot",
    "queue-operation", "attachment", "last-prompt", "cost-state", "mode", "tools-used",
    "atis-latch", "custom-title", "ai-title", "agent-name",
))

# The `type` of a line of a Codex rollout file.
CODEX_ROLLOUT_TYPES = frozenset((
    "session_meta", "response_item", "event_msg", "turn_context", "compacted",
    "world_state", "token_usage_record",
))

_BOM_AND_SPACE = b"\xef\xbb\xbf \t\r\n"


def _claude_record_verdict(rec):
    """True: a Claude Code record; False: something else; None: can't tell."""
    if not isinstance(rec, dict):
        return False
    kind = rec.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "summary":
        return "leafUuid" in rec or "summary" in rec
    if kind == "file-history-snapshot":
        return "snapshot" in rec
    if kind in CLAUDE_RECORD_TYPES or kind.startswith("api-request"):
        return "sessionId" in rec or "parentUuid" in rec or "uuid" in rec
    if "sessionId" in rec and "payload" not in rec:
        return None  # perhaps a record type newer than this module
    return False


def claude_code(head: bytes, path: str) -> bool:
    """Claude Code's JSON lines: most of the first ten complete lines are its records."""
    parts = head.split(b"\n")
    last = len(parts) - 1  # may be cut off by the head's size limit
    yes = no = seen = 0
    for i, raw in enumerate(parts):
        raw = raw.strip()
        if not raw:
            continue
        seen += 1
        if seen > 10:
            break
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):
            if i != last:
                no += 1  # e.g. the first line of a pretty-printed JSON document
            continue
        verdict = _claude_record_verdict(rec)
        if verdict is True:
            yes += 1
        elif verdict is False:
            no += 1
    if yes or no:
        if yes != no:
            return yes > no
        return ".claude" in str(path).replace("\\", "/")
    # No complete line in the head (a very long first record): look at the raw bytes.
    if not (b'"sessionId"' in head and b'"parentUuid"' in head):
        return False
    import re
    return re.search(rb'"type"\s*:\s*"(user|assistant|system|summary)"', head) is not None


def codex(head: bytes, path: str) -> bool:
    """A Codex rollout: the first line is {"timestamp": …, "type": <rollout type>, "payload": {…}}."""
    text = head.lstrip(_BOM_AND_SPACE)
    nl = text.find(b"\n")
    if nl != -1:
        try:
            obj = json.loads(text[:nl])
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            return (isinstance(obj.get("timestamp"), str)
                    and isinstance(obj.get("type"), str) and obj.get("type") in CODEX_ROLLOUT_TYPES
                    and isinstance(obj.get("payload"), dict))
    # The first line can be longer than the head (0.125 writes 22 KB of base instructions into
    # session_meta), so the line's opening is matched on its own.
    import re
    return re.match(rb'\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(?:session_meta|response_item|'
                    rb'event_msg|turn_context|compacted)"\s*,\s*"payload"\s*:\s*\{', text) is not None


def _gemini_jsonl_header(first_line: bytes) -> bool:
    """Gemini CLI 0.6x writes its chat as JSON Lines: a header object (sessionId, projectHash,
    startTime), then message lines and {"$set": ...} patch lines."""
    try:
        obj = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return (isinstance(obj, dict) and isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str)
            and "startTime" in obj and "messages" not in obj and "type" not in obj)


def gemini(head: bytes, path: str) -> bool:
    """A Gemini CLI chat: one JSON object with sessionId, projectHash and messages, or the JSON Lines
    form that opens with a header line."""
    text = head.lstrip(_BOM_AND_SPACE)
    if not text.startswith(b"{"):
        return False
    nl = text.find(b"\n")
    if nl != -1 and _gemini_jsonl_header(text[:nl]):
        return True
    if not (b'"sessionId"' in text and b'"messages"' in text and b'"projectHash"' in text):
        return False
    nl = text.find(b"\n")
    if nl != -1 and text[nl + 1:].strip():
        # A whole object on the first line with more after it is JSON lines (another
        # client's transcript), not a chat document, which opens with a bare "{".
        try:
            json.loads(text[:nl])
            return False
        except (ValueError, RecursionError):
            pass
    return True


SNIFFERS = {"claude-code": claude_code, "codex": codex, "gemini": gemini}


def client_of(head: bytes, path: str = "", hint: str = None):
    """The client whose transcript `head` (the file's first bytes) opens, or None.
    `hint` is tried first but the content must agree."""
    order = ([hint] if hint in SNIFFERS else []) + [c for c in SNIFFERS if c != hint]
    for client in order:
        if SNIFFERS[client](head, path):
            return client
    return None


def client_of_file(path: str, hint: str = None):
    """`client_of` on the first HEAD_BYTES of a file; None if it cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return None
    return client_of(head, path, hint)
