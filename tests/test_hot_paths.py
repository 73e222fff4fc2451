"""The hot paths load exactly the Cortex modules listed here, and no heavy third-party one.

A hook runs in the client's process tree on every turn, and session start before the first prompt, so a
new import on these paths costs every session.  These lists are exact on purpose: a change that makes a
hook load one more Cortex module fails here, and whoever makes it either keeps the module off the path
or adds it below, knowing the cost (`cortex bench` measures it).
"""
import json
import subprocess
import sys

import pytest

from cortex_testkit import HEAVY_MODULES, REPO, clean_env, copy_fixture, drop_event, hook_payload, normalize

PACKAGES = {"cortex", "cortex.core", "cortex.model", "cortex.clients", "cortex.capture", "cortex.inbox", "cortex.store",
            "cortex.brief"}

CAPTURE = {"cortex.capture.hook", "cortex.core.fsutil", "cortex.core.home", "cortex.clients.sniff", "cortex.clients.spec",
           "cortex.inbox.maildir"}
SESSION_START = {"cortex.brief.session_start", "cortex.brief.render", "cortex.brief.neutral", "cortex.clients.spec", "cortex.core.config", "cortex.core.home",
                 "cortex.core.guard",
                 "cortex.model.decay", "cortex.model.freshness", "cortex.model.rank", "cortex.model.scope",
                 "cortex.store.index",
                 "cortex.model.clip"}  # (one function, no import: the line cut the block and the normalizer share)
# (the prompt below finds nothing worth saying, so the output envelope, clients.spec, is not loaded)
# (store.search: the engine of records and passages, which loads tantivy, a Rust extension: ~4 ms.  The
# block itself is built (model.freshness, model.decay) only when a record it may show reaches the lines: not here)
PROMPT = SESSION_START - {"cortex.clients.spec", "cortex.model.freshness", "cortex.model.decay"} | {
    "cortex.brief.prompt", "cortex.store.terms", "cortex.model.hitorder", "cortex.store.search",
    "cortex.model.question"}

CWD = "/path/to/Demo"  # the cwd the 1.0.x fixtures recorded


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory):
    from cortex.core.home import Home
    root = tmp_path_factory.mktemp("hot")
    home = Home(str(root / "home")).ensure()
    for name, ago in (("cc-1.0.98", 3.0), ("cc-1.0.108", 1.0)):
        path = copy_fixture(name, root / "client", ago_hours=ago)
        drop_event(home, hook_payload(path))
    assert normalize(home)["done"] == 2
    return home


def _loaded(code: str, home, stdin: bytes = b"") -> set:
    """The modules loaded after `code` ran in a fresh interpreter (printed as JSON on stderr's last line)."""
    proc = subprocess.run([sys.executable, "-c", "import sys, json; sys.path.insert(0, %r)\n%s\n"
                           "sys.stderr.write('\\n' + json.dumps(sorted(sys.modules)))" % (str(REPO), code)],
                          input=stdin, capture_output=True, env=clean_env(home), timeout=60)
    assert proc.returncode == 0, proc.stderr
    mods = set(json.loads(proc.stderr.decode().strip().splitlines()[-1]))
    assert not sorted(m for m in mods if m.split(".")[0] in HEAVY_MODULES)
    return {m for m in mods if m.startswith("cortex")} - PACKAGES, proc.stdout


@pytest.mark.parametrize("kind", ["stop", "pre_compact"])
def test_capture_hooks_load_exactly_their_modules(demo_home, tmp_path, kind):
    t = copy_fixture("cc-1.0.98", tmp_path / "client")
    mods, out = _loaded("from cortex.capture import hook\nhook.capture(%r, [])" % kind, demo_home,
                        json.dumps(hook_payload(t)).encode())
    assert out == b""
    assert mods == CAPTURE


def test_session_start_loads_exactly_its_modules(demo_home):
    mods, out = _loaded("from cortex.brief import session_start\nsession_start.main(['--cwd', %r])" % CWD, demo_home)
    assert out.startswith(b"<cortex-memory")  # the success path, not an early exit
    assert mods == SESSION_START


def test_prompt_loads_exactly_its_modules(demo_home):
    payload = {"session_id": "new", "cwd": CWD, "hook_event_name": "UserPromptSubmit",
               "prompt": "how does the compaction threshold verification work in the opencode plugin"}
    mods, _ = _loaded("from cortex.brief import prompt\nprompt.main([])", demo_home, json.dumps(payload).encode())
    assert mods == PROMPT


def test_project_ids_hash_without_openssl(demo_home):
    """scope's SHA-1 comes from CPython's own _sha1 (hashlib's digest): loading hashlib's OpenSSL took about
    2 ms of every session start and prompt."""
    import hashlib
    from cortex.model import scope
    for key in ("", "git@github.com:me/app.git", "/home/ü/p\udcff"):
        data = key.encode("utf-8", "surrogatepass")
        assert scope._sha1(data) == hashlib.sha1(data).hexdigest()
    code = ("import sys, json; sys.path.insert(0, %r)\nfrom cortex.brief import session_start\n"
            "session_start.main(['--cwd', %r])\nsys.stderr.write('\\n' + json.dumps(sorted(sys.modules)))"
            % (str(REPO), CWD))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, env=clean_env(demo_home), timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith(b"<cortex-memory")
    mods = set(json.loads(proc.stderr.decode().strip().splitlines()[-1]))
    assert "_sha1" in mods and "_hashlib" not in mods and "hashlib" not in mods
