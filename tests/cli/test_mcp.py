"""`cortex mcp`, driven by the official MCP SDK's own client over stdio, as a client would start it."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("mcp")
import anyio  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from cortex.core.home import Home  # noqa: E402
from cortex.ops import manage  # noqa: E402


@pytest.fixture
def project(tmp_path):
    home = Home(str(tmp_path / "home")).ensure()
    proj = tmp_path / "shop"
    proj.mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    for text, rtype in (("Refunds over 500 EUR need a second approver in refund_order(); the support team asked",
                         "decision"),
                        ("Do not retry card declines in charge_card(): the processor flags repeated attempts",
                         "rejected"),
                        ("The sandbox webhook secret rotates every Monday, so webhook tests fail then", "gotcha")):
        manage.remember(home, text, rtype=rtype, cwd=str(proj))
    return home, proj


def _call(home, proj, script):
    env = dict(os.environ, CORTEX_HOME=home.root)
    env.pop("CLAUDE_PROJECT_DIR", None)
    params = StdioServerParameters(command=sys.executable, args=["-m", "cortex", "mcp"], env=env, cwd=str(proj))

    async def go():
        async with Client(params) as client:
            return await script(client)
    return anyio.run(go)


def _json(result):
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def test_the_tools_are_listed_with_descriptions_that_say_when_to_use_them(project):
    async def script(c):
        return await c.list_tools()
    tools = {t.name: t for t in _call(*project, script).tools}
    assert set(tools) == {"search", "timeline", "get", "remember", "forget"}
    assert "asks what was decided" in tools["search"].description
    assert all(len(t.description) > 60 for t in tools.values())


def test_search_then_get_then_timeline(project):
    async def script(c):
        found = _json(await c.call_tool("search", {"query": "refund second approver"}))
        rid = found["hits"][0]["id"]
        got = _json(await c.call_tool("get", {"ids": [rid, "r0000000000000000"]}))
        around = _json(await c.call_tool("timeline", {"id": rid}))
        return found, got, around
    found, got, around = _call(*project, script)
    assert found["hits"][0]["type"] == "decision" and "second approver" in found["hits"][0]["text"]
    assert got["records"][0]["text"].startswith("Refunds over 500 EUR")
    assert "error" in got["records"][1]  # an unknown id is reported, not fatal
    assert any(r["this"] for r in around["records"])


def test_remember_and_forget_change_what_search_finds(project):
    async def script(c):
        kept = _json(await c.call_tool("remember", {"text": "Invoices are numbered per legal entity, never globally",
                                                    "type": "decision"}))
        hit = _json(await c.call_tool("search", {"query": "invoices numbered legal entity"}))
        gone = _json(await c.call_tool("forget", {"id": kept["id"]}))
        after = _json(await c.call_tool("search", {"query": "invoices numbered legal entity"}))
        return kept, hit, gone, after
    kept, hit, gone, after = _call(*project, script)
    assert hit["hits"][0]["id"] == kept["id"]
    assert gone["forgotten"][0]["action"] == "archived"
    assert kept["id"] not in [h["id"] for h in after["hits"]]


def test_a_problem_comes_back_as_a_tool_error_with_its_hint(project):
    async def script(c):
        return await c.call_tool("search", {"query": "the and of"})
    res = _call(*project, script)
    assert res.is_error and "no searchable words" in res.content[0].text and "more specific" in res.content[0].text
