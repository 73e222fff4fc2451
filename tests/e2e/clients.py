"""Helpers for driving the real Claude Code and Codex CLIs in isolated sandboxes.

A Sandbox is one temporary world: its own HOME, TMPDIR, XDG dirs, CODEX_HOME, Cortex home and a git
project, with the CLIs pointed at a local mock model server.  Nothing reads or writes the real
user's files, and every subprocess has a timeout.
"""
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / "bin"

CLAUDE_PACKAGE, CLAUDE_VERSION = "@anthropic-ai/claude-code", "2.1.330"
CODEX_PACKAGE, CODEX_VERSION = "@openai/codex", "0.169.0"
GEMINI_PACKAGE, GEMINI_VERSION = "@google/gemini-cli", "0.61.0"
NAMES = ("claude", "codex", "gemini")
NPM_TIMEOUT = 900
CLI_TIMEOUT = 180

NETWORK_ERRORS = re.compile(r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|"
                            r"network|socket hang up|getaddrinfo|proxy|certificate|self.signed|E403|E401|"
                            r"request to https?://\S+ failed", re.I)
SCRUB_PREFIXES = ("CLAUDE", "CODEX_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "CORTEX_", "XDG_", "NODE_OPTIONS",
                  "npm_", "NPM_", "PYTHONSTARTUP")


class CliUnavailable(Exception):
    """The CLIs cannot be installed for a reason that is not a bug (no npm, no network)."""


# ----------------------------------------------------------------------------------------- installing the CLIs

def cli_dir() -> Path:
    env = os.environ.get("CORTEX_E2E_CLI_DIR")
    if env:
        return Path(env).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "cortex-e2e"


def _version(exe: Path) -> str:
    try:
        p = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL, env=_base_env(str(exe.parent)))
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (p.stdout or "").strip()


def _installed(base: Path) -> dict:
    b = base / "node_modules" / ".bin"
    out = {}
    claude, codex, gemini = b / "claude", b / "codex", b / "gemini"
    if claude.exists() and _version(claude).startswith(CLAUDE_VERSION):
        out["claude"] = str(claude)
    if codex.exists() and _version(codex).endswith(CODEX_VERSION):
        out["codex"] = str(codex)
    if gemini.exists() and _version(gemini).endswith(GEMINI_VERSION):
        out["gemini"] = str(gemini)
    return out


def ensure_clis(base: Path = None) -> dict:
    """{'claude': path, 'codex': path, 'dir': folder, 'versions': {...}}; installs them with npm if needed.

    Raises CliUnavailable when npm is missing or the registry cannot be reached; any other npm
    failure is an error (RuntimeError) with npm's output.
    """
    base = base or cli_dir()
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test runs never install into one folder at once
        have = _installed(base)
        if len(have) < len(NAMES):
            npm = shutil.which("npm")
            if not npm:
                raise CliUnavailable("npm is not installed; the end-to-end tests need it to install "
                                     "%s@%s and %s@%s" % (CLAUDE_PACKAGE, CLAUDE_VERSION, CODEX_PACKAGE, CODEX_VERSION))
            argv = [npm, "install", "--prefix", str(base), "--no-audit", "--no-fund", "--no-save",
                    "--no-package-lock", "--loglevel=error",
                    "%s@%s" % (CLAUDE_PACKAGE, CLAUDE_VERSION), "%s@%s" % (CODEX_PACKAGE, CODEX_VERSION),
                    "%s@%s" % (GEMINI_PACKAGE, GEMINI_VERSION)]
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=NPM_TIMEOUT,
                                   stdin=subprocess.DEVNULL, cwd=str(base))
            except subprocess.TimeoutExpired:
                raise CliUnavailable("npm install did not finish in %d s (no network?)" % NPM_TIMEOUT)
            out = (p.stdout or "") + (p.stderr or "")
            if p.returncode != 0:
                if NETWORK_ERRORS.search(out):
                    why = [l.strip() for l in out.splitlines() if NETWORK_ERRORS.search(l)]
                    raise CliUnavailable("npm install failed for lack of network (%s)" % why[0][:300])
                raise RuntimeError("npm install failed (exit %d):\n%s" % (p.returncode, out[-3000:]))
            claude = base / "node_modules" / ".bin" / "claude"
            if claude.exists() and not _version(claude):
                # the postinstall that puts the native binary in place was skipped (npm allow-scripts policy)
                script = base / "node_modules" / "@anthropic-ai" / "claude-code" / "install.cjs"
                if script.exists():
                    subprocess.run([shutil.which("node") or "node", str(script)], cwd=str(script.parent),
                                   capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
            have = _installed(base)
            if len(have) < len(NAMES):
                raise RuntimeError("after npm install, the CLIs in %s do not report the pinned versions "
                                   "(claude %r, codex %r, gemini %r)" % (
                                       base, _version(claude), _version(base / "node_modules" / ".bin" / "codex"),
                                       _version(base / "node_modules" / ".bin" / "gemini")))
    have["dir"] = str(base)
    have["versions"] = {n: _version(Path(have[n])) for n in NAMES}
    return have


# ----------------------------------------------------------------------------------------- environments

def _base_env(extra_path: str = "") -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB_PREFIXES)}
    env.pop("PYTHONPATH", None)
    if extra_path:
        env["PATH"] = extra_path + os.pathsep + env.get("PATH", "")
    return env


def _git_init(path: Path):
    path.mkdir(parents=True, exist_ok=True)
    (path / "README.md").write_text("# demo project for the Cortex end-to-end tests\n")
    for argv in (["git", "init", "-q"], ["git", "add", "README.md"],
                 ["git", "-c", "user.email=e2e@cortex.invalid", "-c", "user.name=cortex-e2e", "-c",
                  "commit.gpgsign=false", "commit", "-q", "-m", "init"]):
        subprocess.run(argv, cwd=str(path), check=True, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)


class Result:
    def __init__(self, argv, returncode, stdout, stderr, wall, lines=None):
        self.argv, self.returncode, self.stdout, self.stderr, self.wall = argv, returncode, stdout, stderr, wall
        self.lines = lines or []   # [(seconds since start, line)] for streamed runs

    def json_lines(self):
        out = []
        for _, line in self.lines or [(0, l) for l in self.stdout.splitlines()]:
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def check(self, what=""):
        if self.returncode != 0:
            raise AssertionError("%s failed (exit %d): %s\nstdout: %s\nstderr: %s" % (
                what or self.argv[0], self.returncode, " ".join(map(str, self.argv))[:300],
                self.stdout[-2000:], self.stderr[-2000:]))
        return self


class Sandbox:
    """One isolated world for the CLIs: HOME, TMPDIR, CODEX_HOME, Cortex home and a git project."""

    def __init__(self, root: Path, clis: dict, cortex_home: Path = None, project: Path = None):
        self.root = Path(root)
        self.clis = clis
        self.home = self.root / "home"
        self.tmp = self.root / "tmp"
        self.codex_home = self.root / "codex_home"
        self.cortex_home = Path(cortex_home) if cortex_home else self.root / "cortex"
        self.project = Path(project) if project else self.root / "proj"
        for d in (self.home, self.tmp, self.codex_home):
            d.mkdir(parents=True, exist_ok=True)
        if not (self.project / ".git").exists():
            _git_init(self.project)
        self.anthropic = None
        self.openai = None
        self.gemini_mock = None

    # -- environments
    def env(self, **extra) -> dict:
        env = _base_env(str(Path(self.clis["claude"]).parent))
        env.update({
            "HOME": str(self.home), "TMPDIR": str(self.tmp), "CORTEX_HOME": str(self.cortex_home),
            "XDG_CONFIG_HOME": str(self.home / ".config"), "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"), "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "CODEX_HOME": str(self.codex_home), "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1",
            # Claude Code: no telemetry, no update checks, no other traffic than the mock
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ANTHROPIC_API_KEY": "cortex-e2e-dummy-key",
            "CORTEX_E2E_MOCK_KEY": "cortex-e2e-dummy-key",
        })
        if self.anthropic is not None:
            env["ANTHROPIC_BASE_URL"] = self.anthropic.url
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def write_codex_config(self, codex_home: Path = None):
        """A custom provider pointing at the OpenAI mock; plugin sync off (it would resolve github.com)."""
        codex_home = Path(codex_home or self.codex_home)
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model = "mock-model"\n'
            'model_provider = "cortexmock"\n'
            '\n'
            '[model_providers.cortexmock]\n'
            'name = "Cortex e2e mock"\n'
            'base_url = "%s/v1"\n'
            'env_key = "CORTEX_E2E_MOCK_KEY"\n'
            'wire_api = "responses"\n'
            'request_max_retries = 0\n'
            'stream_max_retries = 0\n'
            '\n'
            '[features]\n'
            'plugins = false\n'
            'remote_plugin = false\n' % self.openai.url)

    # -- running things
    def run(self, argv, cwd=None, timeout=CLI_TIMEOUT, env=None, input=None) -> Result:
        t0 = time.perf_counter()
        try:
            p = subprocess.run([str(a) for a in argv], cwd=str(cwd or self.project), env=env or self.env(),
                               capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL if input is None else None, input=input)
        except subprocess.TimeoutExpired as e:
            raise AssertionError("timed out after %d s: %s\nstdout: %s\nstderr: %s" % (
                timeout, " ".join(map(str, argv))[:300], (e.stdout or b"")[-2000:], (e.stderr or b"")[-2000:]))
        return Result(argv, p.returncode, p.stdout, p.stderr, time.perf_counter() - t0)

    def run_streaming(self, argv, cwd=None, timeout=CLI_TIMEOUT, env=None) -> Result:
        """Run and timestamp each stdout line as it arrives (for hook timings from stream-json)."""
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(a) for a in argv], cwd=str(cwd or self.project), env=env or self.env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, bufsize=1)
        lines, err = [], []

        def pump_out():
            for line in proc.stdout:
                lines.append((time.perf_counter() - t0, line))

        def pump_err():
            err.append(proc.stderr.read())

        threads = [threading.Thread(target=pump_out, daemon=True), threading.Thread(target=pump_err, daemon=True)]
        for t in threads:
            t.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            raise AssertionError("timed out after %d s: %s" % (timeout, " ".join(map(str, argv))[:300]))
        for t in threads:
            t.join(timeout=10)
        return Result(argv, proc.returncode, "".join(l for _, l in lines), "".join(err),
                      time.perf_counter() - t0, lines)

    def cortex(self, *args, **kw) -> Result:
        return self.run([sys.executable, BIN / "cortex", *args], **kw)

    def normalize(self) -> Result:
        r = self.run([sys.executable, BIN / "cortex-normalize"]).check("cortex-normalize")
        failed = self.events("failed")
        assert not failed, "the normalizer quarantined events: %s" % [
            (Path(p).name, _read(p.replace(".json", ".reason.txt"))) for p in failed]
        return r

    # -- Claude Code
    def claude(self, prompt, *args, stream=False, cwd=None, timeout=CLI_TIMEOUT) -> Result:
        argv = [self.clis["claude"], "-p", prompt, *args]
        if stream:
            argv += ["--output-format", "stream-json", "--verbose", "--include-hook-events"]
            return self.run_streaming(argv, cwd=cwd, timeout=timeout).check("claude -p")
        if "--output-format" not in args:
            argv += ["--output-format", "json"]
        return self.run(argv, cwd=cwd, timeout=timeout).check("claude -p")

    @staticmethod
    def claude_session_id(result: Result) -> str:
        for obj in reversed(result.json_lines()):
            if obj.get("session_id"):
                return obj["session_id"]
        raise AssertionError("no session_id in claude output: %s" % result.stdout[-1000:])

    # -- Codex
    def codex(self, prompt, *args, cwd=None, timeout=CLI_TIMEOUT, codex_home=None) -> Result:
        argv = [self.clis["codex"], "exec", "--dangerously-bypass-hook-trust", "--json", *args, prompt]
        env = self.env(CODEX_HOME=codex_home) if codex_home else None
        return self.run(argv, cwd=cwd, timeout=timeout, env=env).check("codex exec")

    # -- Gemini CLI
    def gemini(self, prompt, *args, cwd=None, timeout=CLI_TIMEOUT) -> Result:
        """`gemini -p` against the Gemini mock: an API key login (a dummy key), the workspace trusted, no
        other traffic than the mock."""
        user_settings = self.home / ".gemini" / "settings.json"
        if not user_settings.exists():
            user_settings.parent.mkdir(parents=True, exist_ok=True)
            user_settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}},
                                                 "privacy": {"usageStatisticsEnabled": False}}))
        env = self.env(GOOGLE_GEMINI_BASE_URL=self.gemini_mock.url, GEMINI_API_KEY="cortex-e2e-dummy-key",
                       GEMINI_CLI_TRUST_WORKSPACE="true")
        return self.run([self.clis["gemini"], "-p", prompt, *args], cwd=cwd, timeout=timeout,
                        env=env).check("gemini -p")

    # -- the Cortex home
    def events(self, state="pending") -> list:
        d = self.cortex_home / "inbox" / state
        if not d.is_dir():
            return []
        return sorted(str(p) for p in d.iterdir() if p.name.endswith(".json") and not p.name.startswith("."))

    def event_docs(self, state="pending") -> list:
        out = []
        for p in self.events(state):
            with open(p, encoding="utf-8") as f:
                out.append(json.load(f))
        return sorted(out, key=lambda e: e["captured_at"])

    def records(self) -> list:
        if str(REPO) not in sys.path:
            sys.path.insert(0, str(REPO))
        from cortex.store import records
        return [records.read(p) for p in records.iter_paths(str(self.cortex_home / "records"))]


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def body_has(requests, text) -> bool:
    """Does any request body contain text?  The whole JSON is searched: Claude Code puts hook
    output in role:"system" messages, Codex in role:"developer" input items."""
    return any(text in json.dumps(r.get("body"), ensure_ascii=False) for r in requests)
