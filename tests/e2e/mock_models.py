"""Scripted stand-ins for the model APIs the real CLIs call, for Cortex's end-to-end tests.

    MockModel("anthropic")  POST /v1/messages      (Claude Code: ANTHROPIC_BASE_URL=<url>)
    MockModel("openai")     POST /v1/responses     (Codex: a custom provider with base_url=<url>/v1)
    MockModel("gemini")     POST /v1beta/models/M:generateContent and :streamGenerateContent?alt=sse
                            (Gemini CLI: GOOGLE_GEMINI_BASE_URL=<url>; its model router asks for JSON
                            matching a schema, which the mock fills in)

Both answer with server-sent events (JSON when the request does not ask for a stream), bind
127.0.0.1 on a free port, stop by themselves after `max_seconds` or `max_requests`, and keep every
request (path, a few headers, the parsed body) in `.requests` and, if given, in a JSON-lines log.

The reply is chosen from the request, with no state:

    the last input is a tool result            -> text, with the decision line
    the request asks for a compaction summary  -> a summary
    the request offers no tools (side query)   -> a short title
    the prompt holds RUN_TOOL                  -> a shell tool call (`echo cortex-tool-ok`)
    otherwise                                  -> text, with the decision line

The prompt is the last user message that carries text (tool results and injected context are not
prompts).  When it holds `MEMO:<word>`, the decision line is

    [MEMORY: decision] Keep the <word> cache in SQLite because it needs no server

so each test can write its own marker and later look for it.  Without MEMO there is no tag at all.

Run as a script for manual use:  python3 mock_models.py anthropic|openai --log requests.jsonl
"""
import argparse
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MEMO_RE = re.compile(r"MEMO:([A-Za-z0-9_-]+)")
TOOL_WORD = "RUN_TOOL"
SEARCH_RE = re.compile(r"SEARCH_MEMORY:([A-Za-z0-9_-]+)")  # the Anthropic mock calls Cortex's MCP search tool
TOOL_COMMAND = "echo cortex-tool-ok"


# Shaped like Claude Code's real summaries: numbered headings on their own lines.
COMPACT_SUMMARY = ("<analysis>\nThe user asked for a cache; a decision was recorded.\n</analysis>\n<summary>\n"
                   "1. Primary Request and Intent:\n   The user asked to set up the cache.\n\n"
                   "2. Current Work:\n   Wiring the cache layer into the request handler.\n\n"
                   "3. Pending Tasks:\n   - Add the cache eviction test.\n</summary>")
SUMMARY_WORK = "Wiring the cache layer into the request handler."


def decision_text(marker: str) -> str:
    """The record text a MEMO:<marker> prompt produces (what a later session must receive)."""
    return "Keep the %s cache in SQLite because it needs no server" % marker


def decision_line(marker: str) -> str:
    return "[MEMORY: decision] " + decision_text(marker)


def _blocks_text(content) -> str:
    if isinstance(content, str):
        return content
    out = []
    for b in content or []:
        if isinstance(b, dict) and isinstance(b.get("text"), str):
            out.append(b["text"])
    return "\n".join(out)


def _reply_text(prompt: str, lead: str) -> str:
    m = MEMO_RE.search(prompt or "")
    return lead + ("\n" + decision_line(m.group(1)) if m else "")


# ----------------------------------------------------------------------------------------- Anthropic

def anthropic_decide(body: dict):
    """(kind, content blocks, stop_reason)."""
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    users = [m for m in msgs if m.get("role") == "user"]
    last_user = users[-1] if users else {}
    content = last_user.get("content")
    tool_result = isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                    for b in content)
    prompt = ""
    for m in reversed(users):  # the last user turn that is a prompt, not a tool result
        c = m.get("content")
        if isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in c):
            continue
        prompt = _blocks_text(c)
        if prompt.strip():
            break
    tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    m = SEARCH_RE.search(prompt)
    if m:  # call Cortex's MCP search tool, loading it through ToolSearch first when Claude Code defers it
        called = {b.get("name") for x in msgs if x.get("role") == "assistant" and isinstance(x.get("content"), list)
                  for b in x["content"] if isinstance(b, dict) and b.get("type") == "tool_use"}
        if "mcp__cortex__search" in called:
            return "after_mcp", [{"type": "text", "text": "Memory searched."}], "end_turn"
        if "mcp__cortex__search" in tools:
            return "mcp_search", [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24],
                                   "name": "mcp__cortex__search", "input": {"query": m.group(1).replace("_", " ")}}], \
                "tool_use"
        if "ToolSearch" in tools and "ToolSearch" not in called:
            return "tool_search", [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": "ToolSearch",
                                    "input": {"query": "select:mcp__cortex__search", "max_results": 1}}], "tool_use"
    if tool_result:
        return "after_tool", [{"type": "text", "text": _reply_text(prompt, "The command printed cortex-tool-ok.")}], \
            "end_turn"
    low = _blocks_text(content).lower()
    if "summary of the conversation" in low or "detailed summary" in low:
        return "compact_summary", [{"type": "text", "text": COMPACT_SUMMARY}], "end_turn"
    tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    if not tools:
        return "side_query", [{"type": "text", "text": "Cache setup"}], "end_turn"
    if TOOL_WORD in prompt and "Bash" in tools:
        return "tool_call", [
            {"type": "text", "text": "Running a command first."},
            {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:24], "name": "Bash",
             "input": {"command": TOOL_COMMAND, "description": "Print a marker"}},
        ], "tool_use"
    return "text", [{"type": "text", "text": _reply_text(prompt, "Done.")}], "end_turn"


def _sse(event: str, data: dict) -> bytes:
    return ("event: %s\ndata: %s\n\n" % (event, json.dumps(data))).encode()


def anthropic_stream(msg: dict) -> bytes:
    head = dict(msg, content=[], stop_reason=None, usage=dict(msg["usage"], output_tokens=1))
    out = [_sse("message_start", {"type": "message_start", "message": head})]
    for i, b in enumerate(msg["content"]):
        if b["type"] == "text":
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "text", "text": ""}}))
            text = b["text"]
            for j in range(0, len(text), 40):  # several deltas, as a real stream has
                out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                        "delta": {"type": "text_delta", "text": text[j:j + 40]}}))
        else:
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "tool_use", "id": b["id"],
                                                                      "name": b["name"], "input": {}}}))
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "input_json_delta",
                                                              "partial_json": json.dumps(b["input"])}}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(_sse("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                      "usage": {"output_tokens": msg["usage"]["output_tokens"]}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


# ----------------------------------------------------------------------------------------- OpenAI Responses

def openai_decide(body: dict):
    """(kind, output items)."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    items = [i for i in items or [] if isinstance(i, dict)]
    last = items[-1] if items else {}
    users = [i for i in items if i.get("type", "message") == "message" and i.get("role") == "user"]
    prompt = _blocks_text(users[-1].get("content")) if users else ""

    def message(text):
        return {"type": "message", "role": "assistant", "id": "msg_" + uuid.uuid4().hex[:24], "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    if last.get("type") in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        return "after_tool", [message(_reply_text(prompt, "The command printed cortex-tool-ok."))]
    if "CONTEXT CHECKPOINT COMPACTION" in prompt or "handoff summary" in prompt.lower():
        return "compact_summary", [message("Summary: the user asked to set up the cache.")]
    names = [t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
             for t in body.get("tools") or [] if isinstance(t, dict)]
    if not names:
        return "side_query", [message("Cache setup")]
    if TOOL_WORD in prompt:
        if "exec_command" in names:
            name, args = "exec_command", {"cmd": TOOL_COMMAND}
        elif "shell_command" in names:
            name, args = "shell_command", {"command": TOOL_COMMAND}
        elif "shell" in names:
            name, args = "shell", {"command": ["bash", "-lc", TOOL_COMMAND]}
        else:
            return "no_shell_tool", [message("No shell tool among %s." % names)]
        return "tool_call", [{"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24], "status": "completed",
                              "call_id": "call_" + uuid.uuid4().hex[:24], "name": name,
                              "arguments": json.dumps(args)}]
    return "text", [message(_reply_text(prompt, "Done."))]


def openai_stream(resp: dict) -> bytes:
    seq = [0]
    out = []

    def ev(name, data):
        data = dict(data, type=name, sequence_number=seq[0])
        seq[0] += 1
        out.append(_sse(name, data))

    ev("response.created", {"response": dict(resp, status="in_progress", output=[], usage=None)})
    ev("response.in_progress", {"response": dict(resp, status="in_progress", output=[], usage=None)})
    for i, item in enumerate(resp["output"]):
        if item["type"] == "message":
            ev("response.output_item.added", {"output_index": i, "item": dict(item, content=[], status="in_progress")})
            part = item["content"][0]
            ev("response.content_part.added", {"output_index": i, "item_id": item["id"], "content_index": 0,
                                               "part": {"type": "output_text", "text": "", "annotations": []}})
            text = part["text"]
            for j in range(0, len(text), 40):
                ev("response.output_text.delta", {"output_index": i, "item_id": item["id"], "content_index": 0,
                                                  "delta": text[j:j + 40]})
            ev("response.output_text.done", {"output_index": i, "item_id": item["id"], "content_index": 0,
                                             "text": text})
            ev("response.content_part.done", {"output_index": i, "item_id": item["id"], "content_index": 0,
                                              "part": part})
        else:
            ev("response.output_item.added", {"output_index": i, "item": dict(item, arguments="",
                                                                             status="in_progress")})
            ev("response.function_call_arguments.delta", {"output_index": i, "item_id": item["id"],
                                                          "delta": item["arguments"]})
            ev("response.function_call_arguments.done", {"output_index": i, "item_id": item["id"],
                                                         "arguments": item["arguments"]})
        ev("response.output_item.done", {"output_index": i, "item": item})
    ev("response.completed", {"response": resp})
    return b"".join(out)


# ----------------------------------------------------------------------------------------- server

KEEP_HEADERS = ("user-agent", "x-claude-code-session-id", "anthropic-beta", "originator", "session_id",
                "session-id", "conversation_id", "content-encoding")


# ----------------------------------------------------------------------------------------- Gemini

def _schema_value(schema):
    """A value that satisfies a (Gemini-style, upper-case types) JSON schema: the model router's
    classification call asks for one (e.g. {complexity_reasoning, complexity_score})."""
    schema = schema if isinstance(schema, dict) else {}
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type") or "object").lower()
    if kind == "object":
        return {k: _schema_value(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return int(schema.get("minimum") or 1)
    if kind == "boolean":
        return False
    return "simple"


def gemini_decide(body: dict):
    """(kind, parts)."""
    gen = body.get("generationConfig") or {}
    schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
    if schema:
        return "json", [{"text": json.dumps(_schema_value(schema))}]
    contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
    last = contents[-1] if contents else {}
    after_tool = any(isinstance(p, dict) and "functionResponse" in p for p in last.get("parts") or [])
    prompt = ""
    for c in reversed(contents):  # the last user turn that holds text: the prompt
        if c.get("role") != "user":
            continue
        texts = [p["text"] for p in c.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if texts:  # Gemini puts its session context and the SessionStart hook's context before the prompt
            prompt = re.split(r"</(?:session_context|hook_context)>", "\n".join(texts))[-1]
            break
    if after_tool:
        return "after_tool", [{"text": _reply_text(prompt, "The command printed cortex-tool-ok.")}]
    if TOOL_WORD in prompt:
        return "tool_call", [{"functionCall": {"name": "run_shell_command",
                                               "args": {"command": TOOL_COMMAND, "description": "Print a marker"}}}]
    return "text", [{"text": _reply_text(prompt, "Done.")}]


def gemini_response(parts: list) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 20, "totalTokenCount": 140},
            "modelVersion": "mock-model", "responseId": uuid.uuid4().hex}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "CortexMockModel/1"

    def log_message(self, fmt, *args):
        pass

    def _send(self, code, payload, ctype="application/json"):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_mock_" + uuid.uuid4().hex[:16])
        self.send_header("x-request-id", "req_mock_" + uuid.uuid4().hex[:16])
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self):
        mock = self.server.mock
        mock.record({"method": "GET", "path": self.path, "headers": self._headers()})
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "mock-model", "object": "model", "created": 0,
                                                         "owned_by": "cortex-tests", "type": "model"}]})
        else:
            self._send(200, {})

    def _headers(self):
        return {k.lower(): v for k, v in self.headers.items() if k.lower() in KEEP_HEADERS}

    def do_POST(self):
        mock = self.server.mock
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        path = self.path.split("?", 1)[0]
        entry = {"method": "POST", "path": self.path, "headers": self._headers()}
        if self.headers.get("Content-Encoding", "").lower() not in ("", "identity"):
            entry["error"] = "compressed body (%s)" % self.headers.get("Content-Encoding")
            mock.record(entry)
            self._send(400, {"error": {"type": "invalid_request_error", "message": "mock reads plain JSON only"}})
            return
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        entry["body"] = body
        if not isinstance(body, dict):
            entry["raw"] = raw[:4000].decode("utf-8", "replace")
            mock.record(entry)
            self._send(400, {"error": {"type": "invalid_request_error", "message": "body is not a JSON object"}})
            return
        if mock.api == "anthropic" and path.endswith("/count_tokens"):
            mock.record(entry)
            self._send(200, {"input_tokens": 100})
        elif mock.api == "anthropic" and path.endswith("/messages"):
            kind, blocks, stop = anthropic_decide(body)
            entry["reply_kind"] = kind
            mock.record(entry)
            msg = {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
                   "model": body.get("model") or "mock-model", "content": blocks, "stop_reason": stop,
                   "stop_sequence": None,
                   "usage": {"input_tokens": 120, "output_tokens": 20, "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": 0}}
            if body.get("stream"):
                self._send(200, anthropic_stream(msg), "text/event-stream")
            else:
                self._send(200, msg)
        elif mock.api == "openai" and path.endswith("/responses"):
            kind, output = openai_decide(body)
            entry["reply_kind"] = kind
            mock.record(entry)
            resp = {"id": "resp_" + uuid.uuid4().hex[:24], "object": "response", "created_at": int(time.time()),
                    "model": body.get("model") or "mock-model", "status": "completed", "output": output,
                    "usage": {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": 140}}
            if body.get("stream"):
                self._send(200, openai_stream(resp), "text/event-stream")
            else:
                self._send(200, resp)
        elif mock.api == "gemini" and (":generateContent" in path or ":streamGenerateContent" in path):
            kind, parts = gemini_decide(body)
            entry["reply_kind"] = kind
            mock.record(entry)
            resp = gemini_response(parts)
            if ":streamGenerateContent" in path:
                self._send(200, ("data: " + json.dumps(resp) + "\r\n\r\n").encode(), "text/event-stream")
            else:
                self._send(200, resp)
        elif mock.api == "gemini" and ":countTokens" in path:
            mock.record(entry)
            self._send(200, {"totalTokens": 100})
        else:
            mock.record(entry)
            self._send(404, {"error": {"type": "not_found_error", "message": "the mock does not serve %s" % path}})


class MockModel:
    """One mock API server on 127.0.0.1.  Use as a context manager, or start()/stop()."""

    def __init__(self, api: str, log_path: str = None, max_seconds: float = 900, max_requests: int = 2000):
        if api not in ("anthropic", "openai", "gemini"):
            raise ValueError(api)
        self.api, self.log_path = api, log_path
        self.max_seconds, self.max_requests = max_seconds, max_requests
        self.requests = []
        self._lock = threading.Lock()
        self._server = None
        self._timer = None
        self._thread = None

    # -- recording
    def record(self, entry: dict):
        with self._lock:
            entry["n"] = len(self.requests)
            entry["t"] = time.time()
            self.requests.append(entry)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry, ensure_ascii=False) + "\n")
            if len(self.requests) >= self.max_requests:
                threading.Thread(target=self.stop, daemon=True).start()

    def mark(self) -> int:
        with self._lock:
            return len(self.requests)

    def since(self, mark: int) -> list:
        with self._lock:
            return list(self.requests[mark:])

    def model_requests(self, mark: int = 0) -> list:
        if self.api == "gemini":  # the conversation calls, not the router's JSON classification
            return [r for r in self.since(mark) if r["method"] == "POST" and ":streamGenerateContent" in r["path"]]
        suffix = "/messages" if self.api == "anthropic" else "/responses"
        return [r for r in self.since(mark) if r["method"] == "POST" and r["path"].split("?")[0].endswith(suffix)]

    # -- lifetime
    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def start(self) -> "MockModel":
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.mock = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        daemon=True, name="mock-%s" % self.api)
        self._thread.start()
        self._timer = threading.Timer(self.max_seconds, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self):
        srv = self._server
        if self._timer is not None:
            self._timer.cancel()
        if srv is not None:
            try:
                srv.shutdown()
                srv.server_close()
            except Exception:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Scripted mock of the Anthropic Messages / OpenAI Responses API.")
    ap.add_argument("api", choices=("anthropic", "openai", "gemini"))
    ap.add_argument("--log", help="append every request here as JSON lines")
    ap.add_argument("--port-file", help="write the bound port here")
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--max-requests", type=int, default=2000)
    args = ap.parse_args(argv)
    mock = MockModel(args.api, args.log, args.max_seconds, args.max_requests).start()
    if args.port_file:
        with open(args.port_file, "w") as f:
            f.write(str(mock.port))
    print("mock %s on %s" % (args.api, mock.url), flush=True)
    try:
        mock._thread.join()
    except KeyboardInterrupt:
        mock.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
