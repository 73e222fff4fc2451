"""`cortex mcp` with the real Claude Code CLI, offline: registered as Claude Code's docs say (`claude mcp add`,
the command `cortex install claude-code --user --mcp` prints), `claude mcp list` connects to it, and a session
whose (mock) model calls the search tool gets Cortex's hits back in the tool result."""
import json
import sys

import pytest

from clients import BIN, Sandbox
from mock_models import MockModel

pytestmark = pytest.mark.e2e
pytest.importorskip("mcp")


@pytest.fixture
def sandbox(tmp_path, clis):
    sb = Sandbox(tmp_path / "sandbox", clis)
    sb.anthropic = MockModel("anthropic", log_path=str(tmp_path / "anthropic.jsonl"), max_seconds=600).start()
    try:
        yield sb
    finally:
        sb.anthropic.stop()


def test_claude_code_connects_to_cortex_mcp_and_its_search_returns_hits(sandbox):
    sb = sandbox
    sb.cortex("remember", "Refunds over 500 EUR need a second approver in refund_order()", "--type", "decision",
              "--cwd", str(sb.project)).check("cortex remember")
    refused = sb.cortex("install", "claude-code", "--user", "--mcp")
    assert refused.returncode == 1 and "claude mcp add --scope user cortex" in refused.stderr
    sb.run([sb.clis["claude"], "mcp", "add", "--scope", "user", "cortex", "--", sys.executable, str(BIN / "cortex"),
            "mcp"]).check("claude mcp add")
    listed = sb.run([sb.clis["claude"], "mcp", "list"]).check("claude mcp list")
    assert "cortex" in listed.stdout and "Connected" in listed.stdout, listed.stdout

    mark = sb.anthropic.mark()
    sb.claude("SEARCH_MEMORY:refund_second_approver what did we decide?", "--allowedTools", "mcp__cortex__search,ToolSearch")
    reqs = sb.anthropic.model_requests(mark)
    assert "mcp_search" in [q.get("reply_kind") for q in reqs], [q.get("reply_kind") for q in reqs]
    results = [b for q in reqs for m in (q["body"].get("messages") or []) if isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert any("second approver" in json.dumps(r) for r in results), results
