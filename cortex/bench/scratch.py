"""What the in-process benchmarks share: a working folder whose homes they point CORTEX_HOME at, put back
as it was afterwards, and the --json file they write."""
import contextlib
import json
import os
import shutil
import tempfile


@contextlib.contextmanager
def workdir(path: str = None, prefix: str = "cortex-bench-"):
    """Yields `path` (kept) or a new temporary folder (removed afterwards); CORTEX_HOME is restored on exit,
    since the benchmark sets it to each home it builds."""
    base = path or tempfile.mkdtemp(prefix=prefix)
    old_home = os.environ.get("CORTEX_HOME")
    try:
        yield base
    finally:
        if old_home is None:
            os.environ.pop("CORTEX_HOME", None)
        else:
            os.environ["CORTEX_HOME"] = old_home
        if not path:
            shutil.rmtree(base, ignore_errors=True)


def dump_json(path, obj):
    """Write the --json file, if one was asked for."""
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1)
