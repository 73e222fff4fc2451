"""A bus error (SIGBUS: a memory-mapped file on a full disk) never kills a hook with a signal (issue #18,
defect 10).  The bus error is real: the code under test reads a mapped file truncated under it, which is
what a shared-memory page that cannot get a block on a full ext4 does to SQLite."""
from __future__ import annotations

import subprocess
import sys
import time

from cortex_testkit import REPO, clean_env, make_home

from .helpers import report

FAULT = """
import mmap, os
def bus_error(*_a, **_k):
    with open(os.path.join(os.environ["CORTEX_HOME"], "mapped"), "w+b") as f:
        f.write(b"x" * 8192); f.flush()
        m = mmap.mmap(f.fileno(), 8192)
        f.truncate(0)
        return m[5000]
"""

LOW_DISK = """
import os
_real = os.statvfs
class _Low:
    def __init__(self, st): self.f_frsize, self.f_bavail = st.f_frsize, 2
os.statvfs = lambda p: _Low(_real(p))  # 8 KiB free
"""


def _run(home, code: str):
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r)\n%s" % (str(REPO), code)],
                       capture_output=True, env=clean_env(home), timeout=60, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def test_a_bus_error_at_session_start_on_a_full_disk_exits_0_silently(tmp_path):
    """Before: cortex-session-start died with SIGBUS (exit -7) at 8 KiB free on ext4."""
    home = make_home(tmp_path / "home").ensure()
    results = {}
    calls = {
        "session_start": "from cortex.brief import session_start as m\nm.build = bus_error\n"
                         "sys.exit(m.main(['--cwd', %r]))" % str(tmp_path),
        "prompt": "from cortex.brief import prompt as m\nm.search = bus_error\nimport io\n"
                  "class _In:\n    buffer = io.BytesIO(b'{\"prompt\": \"why is the cache slow\", \"cwd\": \"/tmp\"}')\n"
                  "    def isatty(self): return False\nsys.stdin = _In()\nsys.exit(m.main([]))",
    }
    for hook, call in calls.items():
        rc, out, err, _s = _run(home, LOW_DISK + FAULT + call)
        results[hook] = rc
        assert (rc, out, err) == (0, b"", b""), (hook, rc, err.decode(errors="replace")[-500:])
    rc, out, err, _s = _run(home, FAULT + "import cortex.ingest.run as r\nr.run = bus_error\n"
                            "from cortex.cli import normalize\nsys.exit(normalize.main(['--quiet']))")
    report("sigbus", session_start_exit=results["session_start"], prompt_exit=results["prompt"],
           normalize_exit=rc)
    assert rc == 1 and b"bus error" in err and b"Traceback" not in err


def test_the_guard_costs_session_start_nothing_on_a_normal_disk_and_sqlite_maps_nothing(tmp_path):
    home = make_home(tmp_path / "home").ensure()
    rc, out, err, _s = _run(home, "import time\nfrom cortex.core import guard\nt = time.perf_counter()\n"
                            "ok = guard.exit_on_bus_error(%r)\nnormal = time.perf_counter() - t\n"
                            "assert not ok and 'ctypes' not in sys.modules\n"
                            "t = time.perf_counter(); ok = guard.exit_on_bus_error(%r, low_free=None)\n"
                            "print(normal * 1000, (time.perf_counter() - t) * 1000, ok)" % (home.root, home.root))
    assert rc == 0, err
    normal_ms, low_ms, ok = out.split()
    report("sigbus_guard_cost", normal_disk_ms=round(float(normal_ms), 3), low_disk_ms=round(float(low_ms), 2))
    assert ok == b"True"
    from cortex.store.index import connect
    for ro in (False, True):
        con = connect(home.index_db, readonly=ro)
        assert con.execute("PRAGMA mmap_size").fetchone()[0] == 0
        con.close()
