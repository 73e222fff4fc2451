"""End-to-end tests with the real Claude Code and Codex CLIs (see docs/clients.md).

They run by default; deselect them with `-m "not e2e"`.  The CLIs are installed once with npm into
$CORTEX_E2E_CLI_DIR (default ~/.cache/cortex-e2e); the tests are skipped, with the reason, only when
npm is missing or the registry cannot be reached.
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


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

