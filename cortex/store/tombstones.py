"""Tombstones: the ids of records deleted for good (`cortex forget --hard`, `cortex reset`), kept so that
`cortex sync` can delete them on the other machines too instead of bringing them back.

    state/tombstones/<record id>      one small file each: "<scope>/<scope_id>" and the time of deletion

A tombstone is written whether or not sync is set up (a few bytes; sync may be set up later).  `cortex sync`
copies it into the shared repository (tombstones/<id>), where it stays: a record id, once deleted there,
is deleted on every machine that syncs.
"""
import os
import re
import time

from cortex.core.fsutil import atomic_write_text

_ID = re.compile(r"^r[0-9a-f]{16}$")


def folder(home) -> str:
    return home.path("state", "tombstones")


def add(home, recs) -> int:
    """Leave a tombstone for each record dict (id, scope, scope_id) deleted for good."""
    n = 0
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for rec in recs:
        rid = rec.get("id") or ""
        if not _ID.match(rid):
            continue
        os.makedirs(folder(home), mode=0o700, exist_ok=True)
        atomic_write_text(os.path.join(folder(home), rid), "%s/%s\n%s\n" % (rec.get("scope"), rec.get("scope_id"), when))
        n += 1
    return n


def read(home) -> dict:
    """{id: (scope, scope_id)} of the tombstones left on this machine."""
    out = {}
    try:
        names = os.listdir(folder(home))
    except OSError:
        return out
    for name in names:
        if not _ID.match(name):
            continue
        try:
            with open(os.path.join(folder(home), name), encoding="utf-8") as f:
                first = f.readline().strip()
        except OSError:
            continue
        scope, _, scope_id = first.partition("/")
        out[name] = (scope, scope_id)
    return out
