"""What is specific to each client, in one table: how a hook tells which client ran it, which adapter
reads its transcripts, where its settings live, the events and timeouts Cortex registers, and how its
hooks must print what they give the model.

A new client is one more entry here (plus its adapter and sniffer).  Standard library only, and nothing
imported at load: the capture hooks read it on every turn.
"""

# name -> facts.  `env` are environment variables the client sets for its hooks (any one is enough;
# a name ending in "_" is a prefix); `path_hints` are substrings of its transcript paths;
# `output` is how SessionStart / prompt-time output must be shaped ("text", or "json" for an envelope
# {"hookSpecificOutput": {"hookEventName", "additionalContext"}}); `settings` the folder of its
# settings in a project or the home; `timeout_unit` the unit of the timeouts in its hook settings;
# `hooks` (event, matcher or None, Cortex script, timeout in that unit).
CLIENTS = {
    "claude-code": {
        "env": ("CLAUDECODE", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID"),
        "path_hints": ("/.claude/",),
        "adapter": "cortex.ingest.adapters.claude_code:ClaudeCodeAdapter",
        "output": "text",
        "settings": ".claude",
        "timeout_unit": "s",
        # SessionStart 10 s (it reads the index; normally a fraction of a second).  The capture hooks only
        # drop a file; 5 s is generous, and on SessionEnd an explicit timeout is what lifts Claude's shared
        # 1.5 s SessionEnd budget.
        "hooks": (
            ("SessionStart", "startup|resume|clear|compact", "cortex-session-start", 10),
            ("PreCompact", None, "cortex-pre-compact", 5),
            ("Stop", None, "cortex-stop", 5),
            ("SessionEnd", None, "cortex-stop", 5),
            ("UserPromptSubmit", None, "cortex-prompt", 5),
        ),
    },
    "codex": {
        "env": ("CODEX_",),
        "path_hints": ("/sessions/",),
        "file_prefix": "rollout-",
        "adapter": "cortex.ingest.adapters.codex:CodexAdapter",
        "output": "text",
        "settings": ".codex",
        "timeout_unit": "s",
        # Codex clamps SessionEnd hooks to 3 s, so SessionEnd asks for exactly that.
        "hooks": (
            ("SessionStart", None, "cortex-session-start", 10),
            ("PreCompact", None, "cortex-pre-compact", 5),
            ("Stop", None, "cortex-stop", 5),
            ("SessionEnd", None, "cortex-stop", 3),
            ("UserPromptSubmit", None, "cortex-prompt", 5),
        ),
    },
    "gemini": {
        "env": ("GEMINI_SESSION_ID", "GEMINI_CLI", "GEMINI_PROJECT_DIR"),
        "path_hints": ("/.gemini/",),
        "adapter": "cortex.ingest.adapters.gemini:GeminiAdapter",
        "output": "json",
        "settings": ".gemini",
        "timeout_unit": "ms",
        "hooks": (
            ("SessionStart", None, "cortex-session-start", 10000),
            ("PreCompress", None, "cortex-pre-compact", 5000),
            ("AfterAgent", None, "cortex-stop", 5000),
            ("SessionEnd", None, "cortex-stop", 5000),
            ("BeforeAgent", None, "cortex-prompt", 5000),
        ),
    },
}
NAMES = tuple(CLIENTS)


def client_from_env(environ) -> str:
    """The client whose hook environment this is, or None (Codex first: its variables are the surest)."""
    for name in ("codex", "claude-code", "gemini"):
        for var in CLIENTS[name]["env"]:
            if var.endswith("_") and any(k.startswith(var) for k in environ) or environ.get(var):
                return name
    return None


def client_from_path(transcript_path: str) -> str:
    """The client whose transcript folders this path is in, or None."""
    p = (transcript_path or "").replace("\\", "/")
    base = p.rsplit("/", 1)[-1]
    for name in ("codex", "claude-code", "gemini"):
        facts = CLIENTS[name]
        if any(h in p for h in facts["path_hints"]) and base.startswith(facts.get("file_prefix", "")):
            return name
    return None


def wrap_output(client: str, event: str, text: str) -> str:
    """Hook output as the client wants it: plain text, or Gemini's JSON envelope."""
    if client in CLIENTS and CLIENTS[client]["output"] == "json":
        import json
        return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
    return text
