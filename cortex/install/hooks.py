"""`cortex install` / `cortex uninstall`: register Cortex's hooks in a client's settings file.

    cortex install   claude-code|codex|gemini [--project DIR | --user] [--dry-run] [--json]
    cortex uninstall claude-code|codex|gemini [--project DIR | --user] [--dry-run] [--json]

Where the hooks go:

    claude-code  <DIR>/.claude/settings.json (default DIR: .)   --user: ~/.claude/settings.json
    codex        $CODEX_HOME/hooks.json (default ~/.codex)       --project DIR: <DIR>/.codex/hooks.json
    gemini       <DIR>/.gemini/settings.json (default DIR: .)   --user: ~/.gemini/settings.json

The file is merged, never clobbered: other settings keys and other hooks stay as they are.  A Cortex
handler is recognised by its command alone (the clients reject unknown keys, so nothing else marks
it): the command runs one of Cortex's hook scripts (`cortex-session-start`, `cortex-pre-compact`,
`cortex-stop`, by absolute path or through a Python interpreter) followed by `--client <name>` and
nothing else.  Uninstall removes exactly those handlers, and the groups, events and `hooks` object
that only they filled.  Before a changed file is written, the previous one is copied under the Cortex
home (`<home>/backups/<file's absolute path>.cortex-backup-<UTC time>`); the new one is written atomically.  A second install changes
nothing and says so.
"""
import json
import os
import shlex
import time

from cortex.clients import spec
from cortex.install.scripts import InstallError, quote_argv, script_argv  # noqa: F401

CLIENTS = spec.NAMES
HOOK_SCRIPTS = ("cortex-session-start", "cortex-pre-compact", "cortex-stop", "cortex-prompt")
# (event, matcher or None, script, timeout in the client's own unit) per client: cortex/clients/spec.py
HOOKS = {name: facts["hooks"] for name, facts in spec.CLIENTS.items()}
TIMEOUT_UNIT = {name: facts["timeout_unit"] for name, facts in spec.CLIENTS.items()}

CODEX_TRUST_NOTE = ("Codex runs only hooks you have trusted: start `codex`, open /hooks, review the Cortex hooks "
                    "and trust them (Codex asks again whenever a hook's command changes). For a single run, "
                    "`codex --dangerously-bypass-hook-trust` (or `codex exec --dangerously-bypass-hook-trust`) "
                    "skips the check.")
CODEX_PROJECT_NOTE = ("Project hooks (<project>/.codex/hooks.json) load only when Codex trusts the project "
                      "itself, as well as the hooks.")
GEMINI_NOTE = ("Gemini CLI releases where hooks are still off by default need \"hooksConfig\": {\"enabled\": true} "
               "in settings.json.")


# ------------------------------------------------------------------------------------------ commands

def hook_command(script: str, client: str, path_env: str = None) -> str:
    return quote_argv(script_argv(script, path_env) + ["--client", client])


def _looks_like_python(token: str) -> bool:
    base = os.path.basename(token).lower()
    return base.startswith(("python", "pypy")) or base in ("py", "py.exe")


def cortex_script_of(command) -> str:
    """The Cortex hook script a handler command runs, or None when the command is not one of ours.

    Ours: `[<python>] <…/>cortex-xxx --client <name>`, nothing more (no pipes, no other arguments).
    """
    if not isinstance(command, str) or "cortex-" not in command:
        return None
    try:
        tokens = shlex.split(command)
    except ValueError:
        return None
    if tokens and _looks_like_python(tokens[0]):
        tokens = tokens[1:]
    if len(tokens) != 3 or tokens[1] != "--client" or not tokens[2]:
        return None
    name = os.path.basename(tokens[0].replace("\\", "/"))
    if name.lower().endswith(".exe"):
        name = name[:-4]
    return name if name in HOOK_SCRIPTS else None


def is_cortex_handler(handler) -> bool:
    return isinstance(handler, dict) and cortex_script_of(handler.get("command")) is not None


# ------------------------------------------------------------------------------------------ targets

def _expand_home(environ):
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.abspath(home)


def settings_path(client: str, project: str = None, user: bool = False, environ=None) -> str:
    """The settings file `cortex install` changes for a client and target."""
    env = os.environ if environ is None else environ
    if client not in CLIENTS:
        raise InstallError("unknown client %r: choose one of %s" % (client, ", ".join(CLIENTS)))
    if client == "codex":
        if project is not None and not user:
            return os.path.join(os.path.abspath(project), ".codex", "hooks.json")
        codex_home = env.get("CODEX_HOME") or os.path.join(_expand_home(env), ".codex")
        return os.path.join(os.path.abspath(os.path.expanduser(codex_home)), "hooks.json")
    folder = ".claude" if client == "claude-code" else ".gemini"
    if user:
        return os.path.join(_expand_home(env), folder, "settings.json")
    return os.path.join(os.path.abspath(project or "."), folder, "settings.json")


def desired_hooks(client: str, path_env: str = None) -> list:
    """[(event, group dict)] that `install` puts in place for a client."""
    out = []
    for event, matcher, script, timeout in HOOKS[client]:
        handler = {"type": "command", "command": hook_command(script, client, path_env), "timeout": timeout}
        if client == "gemini":
            handler = {"name": script, "type": "command", "command": handler["command"], "timeout": timeout}
        group = {"matcher": matcher, "hooks": [handler]} if matcher else {"hooks": [handler]}
        out.append((event, group))
    return out


# ------------------------------------------------------------------------------------------ reading

def read_settings(path: str):
    """(parsed object or {}, raw bytes or None).  Raises InstallError on anything we must not touch."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}, None
    except OSError as e:
        raise InstallError("cannot read %s: %s; nothing was changed" % (path, e.strerror or e))
    if not raw.strip():
        return {}, raw
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InstallError("%s is not UTF-8 text; fix or move it away, nothing was changed" % path)
    except ValueError as e:
        raise InstallError("%s is not valid JSON (%s); fix it or move it away, nothing was changed"
                           % (path, e))
    if not isinstance(data, dict):
        raise InstallError("%s holds a JSON %s, not an object of settings; nothing was changed"
                           % (path, type(data).__name__))
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise InstallError("%s: \"hooks\" is not an object; fix it or move the file away, nothing was changed" % path)
    for event, groups in (hooks or {}).items():
        if not isinstance(groups, list):
            # Gemini keeps a few policy switches next to the events in older releases
            if isinstance(groups, (bool, str, int, float)) or groups is None:
                continue
            raise InstallError("%s: hooks.%s is not a list of matcher groups; nothing was changed" % (path, event))
    return data, raw


# ------------------------------------------------------------------------------------------ merging

def _describe(event, group, client):
    h = group["hooks"][0]
    where = "%s [%s]" % (event, group["matcher"]) if group.get("matcher") else event
    return "%s: %s (timeout %s %s)" % (where, h["command"], h.get("timeout"), TIMEOUT_UNIT[client])


def _describe_handler(event, group, handler, client):
    where = "%s [%s]" % (event, group.get("matcher")) if isinstance(group, dict) and group.get("matcher") else event
    t = handler.get("timeout")
    return "%s: %s%s" % (where, handler.get("command"), (" (timeout %s %s)" % (t, TIMEOUT_UNIT[client])) if t else "")


def _remove_ours(groups: list, only_script: str = None):
    """Drop Cortex handlers (of one script, or all) from a list of groups, in place.

    Returns (removed [(group, handler)], index of the first group that held one, or None).  Groups
    that only held Cortex handlers go; groups shared with other handlers keep those.
    """
    removed, first = [], None
    i = 0
    while i < len(groups):
        g = groups[i]
        hs = g.get("hooks") if isinstance(g, dict) else None
        if not isinstance(hs, list):
            i += 1
            continue
        mine = [h for h in hs if is_cortex_handler(h)
                and (only_script is None or cortex_script_of(h.get("command")) == only_script)]
        if not mine:
            i += 1
            continue
        if first is None:
            first = i
        removed.extend((g, h) for h in mine)
        rest = [h for h in hs if not any(h is m for m in mine)]
        if rest:
            g["hooks"] = rest
            i += 1
        else:
            del groups[i]
    return removed, first


def plan_install(data: dict, client: str, path_env: str = None):
    """(new settings object, changes).  A change is a dict: op add|update|remove, event, line."""
    import copy
    new = copy.deepcopy(data)
    hooks = new.get("hooks")
    if not isinstance(hooks, dict):
        hooks = {}
    changes = []
    created_hooks = "hooks" not in new
    for event, group in desired_hooks(client, path_env):
        script = cortex_script_of(group["hooks"][0]["command"])
        groups = hooks.get(event)
        if groups is None:
            groups = []
        elif not isinstance(groups, list):
            raise InstallError("hooks.%s is %s, not a list of matcher groups; fix the file, nothing was changed"
                               % (event, json.dumps(groups)[:40]))
        mine = [(g, h) for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for h in g["hooks"] if is_cortex_handler(h) and cortex_script_of(h.get("command")) == script]
        if len(mine) == 1 and mine[0][0] == group:
            continue  # already exactly as we would write it
        removed, first = _remove_ours(groups, script)
        at = len(groups) if first is None else min(first, len(groups))
        groups.insert(at, group)
        hooks[event] = groups
        changes.append({"op": "update" if removed else "add", "event": event, "line": _describe(event, group, client),
                        "replaced": [h.get("command") for _, h in removed]})
    if changes or not created_hooks:
        new["hooks"] = hooks
    return new, changes


def plan_uninstall(data: dict, client: str):
    import copy
    new = copy.deepcopy(data)
    hooks = new.get("hooks")
    changes = []
    if not isinstance(hooks, dict):
        return new, changes
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        removed, _ = _remove_ours(groups)
        for g, h in removed:
            changes.append({"op": "remove", "event": event, "line": _describe_handler(event, g, h, client)})
        if removed and not groups:
            del hooks[event]
    if changes and not hooks:
        del new["hooks"]
    return new, changes


# ------------------------------------------------------------------------------------------ writing

def render_settings(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def backup_dir(environ=None) -> str:
    """Where the previous versions of changed settings files go: <Cortex home>/backups/, never the
    client's or the project's folders."""
    from cortex.core.home import home_dir
    return os.path.join(home_dir(environ if environ and environ.get("CORTEX_HOME") else None), "backups")


def backup_path(path: str, now: float = None, environ=None) -> str:
    """<home>/backups/<the file's absolute path>.cortex-backup-<UTC time>: one tree mirroring where each
    backed-up file lives, so two projects' settings.json never collide."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    rel = os.path.splitdrive(os.path.abspath(path))[1].lstrip(os.sep)
    base = os.path.join(backup_dir(environ), "%s.cortex-backup-%s" % (rel, stamp))
    candidate, n = base, 1
    while os.path.exists(candidate):
        n += 1
        candidate = "%s.%d" % (base, n)
    return candidate


def write_settings(path: str, text: str, old_raw, environ=None) -> str:
    """Back up the old file (if any) under the Cortex home, then write the new one atomically.  Returns
    the backup path or None."""
    from cortex.core.fsutil import atomic_write_bytes, atomic_write_text
    if os.path.islink(path):
        path = os.path.realpath(path)  # a dotfile manager's link stays a link; its target is updated
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o755, exist_ok=True)
    mode = 0o644
    backup = None
    if old_raw is not None:
        try:
            mode = os.stat(path).st_mode & 0o777
        except OSError:
            pass
        backup = backup_path(path, environ=environ)
        old_umask = os.umask(0o077)
        try:
            os.makedirs(os.path.dirname(backup), mode=0o700, exist_ok=True)
        finally:
            os.umask(old_umask)
        atomic_write_bytes(backup, old_raw, mode=0o600)
    atomic_write_text(path, text, mode=mode)
    return backup


def apply(client: str, action: str = "install", project: str = None, user: bool = False, dry_run: bool = False,
          environ=None, path_env: str = None) -> dict:
    """Install or uninstall one client's hooks.  Returns a report (see `format_report`)."""
    if project is not None and not user and not os.path.isdir(project):
        # a typo must not create a folder (and a settings file no client will ever read)
        raise InstallError("the project folder %s does not exist; give the folder of an existing project "
                           "(or --user for every project)" % os.path.abspath(project))
    path = settings_path(client, project, user, environ)
    data, raw = read_settings(path)
    if action == "install":
        try:
            new, changes = plan_install(data, client, path_env)
        except InstallError as e:
            raise InstallError("%s: %s" % (path, e))
    elif action == "uninstall":
        new, changes = plan_uninstall(data, client)
    else:
        raise ValueError(action)
    report = {"client": client, "action": action, "path": path, "changed": bool(changes), "dry_run": dry_run,
              "changes": changes, "backup": None, "notes": [], "settings": new}
    if changes and not dry_run:
        report["backup"] = write_settings(path, render_settings(new), raw, environ)
    if action == "install":
        if client == "codex":
            report["notes"].append(CODEX_TRUST_NOTE)
            if project is not None and not user:
                report["notes"].append(CODEX_PROJECT_NOTE)
        if client == "gemini":
            hc = new.get("hooksConfig") if isinstance(new.get("hooksConfig"), dict) else {}
            if hc.get("enabled") is False or (isinstance(new.get("hooks"), dict) and new["hooks"].get("enabled") is False):
                report["notes"].append("warning: hooks are switched off in this file (hooksConfig.enabled is false); "
                                       "Gemini will not run the Cortex hooks until you switch them on.")
            else:
                report["notes"].append(GEMINI_NOTE)
            disabled = hc.get("disabled") if isinstance(hc.get("disabled"), list) else []
            off = sorted(set(disabled) & set(HOOK_SCRIPTS))
            if off:
                report["notes"].append("warning: hooksConfig.disabled lists %s; Gemini skips those hooks"
                                       % ", ".join(off))
    return report
