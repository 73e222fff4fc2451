"""End-to-end tests with the real Claude Code and Codex CLIs (see docs/clients.md).

Opt-in: they run only with CORTEX_E2E=1 (CI sets it, see .ci/run), because the first run downloads the
Claude Code and Codex CLIs from npm (about 770 MB, network needed) into $CORTEX_E2E_CLI_DIR (default
~/.cache/cortex-e2e).  Without it every test here is skipped, saying how to run them; with it they are
skipped, with the reason, only when npm is missing or the registry cannot be reached.
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


OPT_IN = "CORTEX_E2E"
SKIP_REASON = ("real-client end-to-end tests are opt-in: set CORTEX_E2E=1 to run them (the first run downloads "
               "the Claude Code and Codex CLIs from npm, about 770 MB, into ~/.cache/cortex-e2e)")


def pytest_collection_modifyitems(config, items):
    if os.environ.get(OPT_IN) == "1":
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if str(item.fspath).startswith(HERE + os.sep):
            item.add_marker(skip)


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: end-to-end tests that drive the real Claude Code and Codex CLIs "
                                       "(deselect with -m \"not e2e\")")


@pytest.fixture(scope="session")
def clis():
    from clients import CliUnavailable, ensure_clis
    try:
        found = ensure_clis()
    except CliUnavailable as e:
        pytest.skip("real-client end-to-end tests skipped: %s" % e)
    print("\n[e2e] CLIs in %s: claude %s, codex %s" % (found["dir"], found["versions"]["claude"],
                                                     found["versions"]["codex"]))
    return found

