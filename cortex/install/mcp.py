"""`cortex install CLIENT --mcp`: register `cortex mcp` (Cortex's MCP server) with a client.

    claude-code  <DIR>/.mcp.json                 {"mcpServers": {"cortex": {"command", "args"}}}
    gemini       the same settings.json as its hooks, key "mcpServers"
    codex        $CODEX_HOME/config.toml (or <DIR>/.codex/config.toml): a [mcp_servers.cortex] table

Claude Code keeps user-scope servers in ~/.claude.json, a file it rewrites itself: for all projects,
`claude mcp add --scope user` is the safe way, and the error says so.  Like the hooks, a file is merged,
never clobbered; a changed file is backed up first and written atomically; a second install changes
nothing; uninstall removes exactly the "cortex" entry.
"""
import json
import os

from cortex.install.hooks import InstallError, read_settings, render_settings, settings_path, write_settings
from cortex.install.scripts import quote_argv, script_argv

NAME = "cortex"


def server_entry(path_env: str = None) -> dict:
    argv = script_argv("cortex", path_env) + ["mcp"]
    return {"command": argv[0], "args": argv[1:]}


def config_path(client: str, project: str = None, user: bool = False, environ=None):
    """The file that registers MCP servers for a client and target (None: Claude Code's user scope)."""
    env = os.environ if environ is None else environ
    if client == "claude-code":
        return None if user else os.path.join(os.path.abspath(project or "."), ".mcp.json")
    if client == "codex":
        if project is not None and not user:
            return os.path.join(os.path.abspath(project), ".codex", "config.toml")
        home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".codex")
        return os.path.join(os.path.abspath(os.path.expanduser(home)), "config.toml")
    return settings_path(client, project, user, environ)


def _toml_table(entry: dict) -> str:
    # JSON strings are valid TOML basic strings for what paths hold (quotes, backslashes, unicode)
    return "[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n" % (
        NAME, json.dumps(entry["command"]), ", ".join(json.dumps(a) for a in entry["args"]))


def _toml_without_ours(text: str):
    """(text without the [mcp_servers.cortex] table, the table's text or None)."""
    lines = text.splitlines(keepends=True)
    out, ours, inside = [], [], False
    for line in lines:
        head = line.strip()
        if head.startswith("["):
            inside = head.replace(" ", "") in ("[mcp_servers.%s]" % NAME, '[mcp_servers."%s"]' % NAME)
        (ours if inside else out).append(line)
    return "".join(out), ("".join(ours) if ours else None)


def _plan_toml(raw: bytes, action: str, entry: dict):
    text = (raw or b"").decode("utf-8")
    rest, ours = _toml_without_ours(text)
    if action == "uninstall":
        return (rest.rstrip("\n") + "\n" if rest.strip() else ""), ([{"op": "remove", "line": "[mcp_servers.cortex]"}]
                                                                    if ours else [])
    table = _toml_table(entry)
    if ours is not None and ours.strip() == table.strip():
        return text, []
    new = (rest.rstrip("\n") + "\n\n" if rest.strip() else "") + table
    return new, [{"op": "update" if ours else "add", "line": "[mcp_servers.cortex] %s" % quote_argv(
        [entry["command"]] + entry["args"])}]


def _plan_json(data: dict, action: str, entry: dict):
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise InstallError("\"mcpServers\" is not an object; fix it or move the file away, nothing was changed")
    servers = dict(servers or {})
    new = dict(data)
    if action == "uninstall":
        if NAME not in servers:
            return data, []
        servers.pop(NAME)
        if servers:
            new["mcpServers"] = servers
        else:
            new.pop("mcpServers", None)
        return new, [{"op": "remove", "line": "mcpServers.cortex"}]
    if servers.get(NAME) == entry:
        return data, []
    op = "update" if NAME in servers else "add"
    servers[NAME] = entry
    new["mcpServers"] = servers
    return new, [{"op": op, "line": "mcpServers.cortex: %s" % quote_argv([entry["command"]] + entry["args"])}]


def apply(client: str, action: str = "install", project: str = None, user: bool = False, dry_run: bool = False,
          environ=None, path_env: str = None) -> dict:
    """Register (or remove) the MCP server for one client.  Returns a report shaped like hooks.apply's."""
    path = config_path(client, project, user, environ)
    if path is None:
        raise InstallError("Claude Code keeps user-wide MCP servers in ~/.claude.json, which it rewrites itself; "
                           "run `claude mcp add --scope user cortex -- %s` instead, or install for one project "
                           "(--project DIR)" % quote_argv(script_argv("cortex", path_env) + ["mcp"]))
    entry = server_entry(path_env) if action == "install" else {}
    report = {"client": client, "action": action, "path": path, "changed": False, "dry_run": dry_run,
              "changes": [], "backup": None, "notes": []}
    if path.endswith(".toml"):
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            raw = None
        except OSError as e:
            raise InstallError("cannot read %s: %s; nothing was changed" % (path, e.strerror or e))
        try:
            text, changes = _plan_toml(raw, action, entry)
        except UnicodeDecodeError:
            raise InstallError("%s is not UTF-8 text; fix or move it away, nothing was changed" % path)
    else:
        data, raw = read_settings(path)
        try:
            new, changes = _plan_json(data, action, entry)
        except InstallError as e:
            raise InstallError("%s: %s" % (path, e))
        text = render_settings(new)
    report["changes"], report["changed"] = changes, bool(changes)
    if changes and not dry_run:
        report["backup"] = write_settings(path, text, raw)
    if action == "install" and changes:
        report["notes"].append("the MCP server needs the mcp package where Cortex is installed: "
                               "pip install 'cortex-memory[mcp]'")
    return report
