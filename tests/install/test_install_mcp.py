"""`cortex install CLIENT --mcp`: registering `cortex mcp` in each client's file, merged, idempotent,
removed exactly."""
import json

import pytest

from cortex.install import mcp
from cortex.install.hooks import InstallError


@pytest.fixture
def env(tmp_path):
    return {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex")}


def test_claude_code_project_file_is_merged_idempotent_and_cleaned(tmp_path, env):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}, "keep": 1}))
    r = mcp.apply("claude-code", project=str(proj), environ=env)
    data = json.loads((proj / ".mcp.json").read_text())
    assert r["changed"] and data["keep"] == 1 and data["mcpServers"]["other"] == {"command": "x"}
    assert data["mcpServers"]["cortex"]["args"][-1] == "mcp"
    assert not mcp.apply("claude-code", project=str(proj), environ=env)["changed"]
    mcp.apply("claude-code", "uninstall", project=str(proj), environ=env)
    assert json.loads((proj / ".mcp.json").read_text()) == {"mcpServers": {"other": {"command": "x"}}, "keep": 1}


def test_codex_toml_keeps_everything_else(tmp_path, env):
    cfg = tmp_path / "codex" / "config.toml"
    cfg.parent.mkdir()
    before = 'model = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n\n[features]\nplugins = false\n'
    cfg.write_text(before)
    r = mcp.apply("codex", user=True, environ=env)
    text = cfg.read_text()
    assert r["changed"] and text.startswith(before.rstrip("\n")) and "[mcp_servers.cortex]" in text
    tomllib = pytest.importorskip("tomllib")
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["cortex"]["args"][-1] == "mcp" and parsed["features"] == {"plugins": False}
    assert parsed["mcp_servers"]["docs"] == {"command": "docs-mcp"}
    assert not mcp.apply("codex", user=True, environ=env)["changed"]
    # a stale entry (another interpreter) is replaced, not duplicated
    cfg.write_text(text.replace('args = ["mcp"]', 'args = ["old", "mcp"]'))
    assert mcp.apply("codex", user=True, environ=env)["changes"][0]["op"] == "update"
    assert cfg.read_text().count("[mcp_servers.cortex]") == 1
    mcp.apply("codex", "uninstall", user=True, environ=env)
    assert tomllib.loads(cfg.read_text()) == tomllib.loads(before)


def test_gemini_settings_hold_hooks_and_the_server(tmp_path, env):
    from cortex.install import hooks
    proj = tmp_path / "g"
    proj.mkdir()
    hooks.apply("gemini", project=str(proj), environ=env)
    mcp.apply("gemini", project=str(proj), environ=env)
    data = json.loads((proj / ".gemini" / "settings.json").read_text())
    assert "SessionStart" in data["hooks"] and data["mcpServers"]["cortex"]["args"][-1] == "mcp"


def test_claude_code_user_scope_is_refused_with_the_command_to_run(env):
    with pytest.raises(InstallError, match="claude mcp add --scope user cortex"):
        mcp.apply("claude-code", user=True, environ=env)


def test_a_broken_mcp_servers_value_is_not_touched(tmp_path, env):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / ".mcp.json").write_text('{"mcpServers": [1]}')
    with pytest.raises(InstallError, match="not an object"):
        mcp.apply("claude-code", project=str(proj), environ=env)
    assert (proj / ".mcp.json").read_text() == '{"mcpServers": [1]}'
