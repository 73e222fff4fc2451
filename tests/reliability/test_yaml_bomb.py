"""A YAML alias bomb in one hand-edited record (issue #18, defect 19) fails alone, with its reason.

Before: `cortex reindex` died with MemoryError after 25 s, and `export` too.  Record front matter with YAML
anchors or aliases is refused (Cortex never writes them)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from cortex.core.home import Home
from cortex.store import records
from cortex_testkit import BIN, clean_env, feed, normalize

from .helpers import record_files, report

BOMB = ("---\nid: r00000000000000bb\nscope: L0\nscope_id: bomb\ntype: learned\nstatus: active\n"
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
        + "".join("%s: &%s [%s]\n" % (c, c, ",".join(["*" + p] * 9)) for p, c in zip("abcdefgh", "bcdefghi"))
        + "---\nboom\n")


def _cli(home, *args):
    return subprocess.run([sys.executable, str(BIN / "cortex"), *args], env=clean_env(home), capture_output=True,
                          timeout=120)


def test_a_yaml_alias_bomb_record_fails_alone_in_reindex_and_export(tmp_path):
    home = Home(str(tmp_path / "home"))
    feed(home, "cc-2.0.64", dest=tmp_path / "client")
    normalize(home)
    good = len(record_files(home))
    folder = os.path.join(home.records, "L0", "bomb")
    os.makedirs(folder)
    bomb = os.path.join(folder, "r00000000000000bb.md")
    with open(bomb, "w") as f:
        f.write(BOMB)
    t0 = time.monotonic()
    try:
        records.read(bomb)
        raise AssertionError("the bomb parsed")
    except records.RecordError as e:
        assert "alias" in str(e).lower() or "anchor" in str(e).lower()
    r = _cli(home, "reindex")
    re_s = time.monotonic() - t0
    assert r.returncode == 1 and b"r00000000000000bb" in r.stderr, r.stderr[-2000:]
    assert b"MemoryError" not in r.stderr
    e = _cli(home, "export")
    lines = [json.loads(l) for l in e.stdout.splitlines() if l.strip()]
    report("yaml_alias_bomb", reindex_s=round(re_s, 2), reindex_rc=r.returncode, export_rc=e.returncode,
           exported=len(lines))
    assert len(lines) == good
    assert b"MemoryError" not in e.stderr
