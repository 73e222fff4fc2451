"""state/cursors.json: how far each transcript was read (the normalizer's only progress state).

One line per transcript so a person can grep a transcript's cursor; written atomically after every
window by the normalizer, and rewritten by `cortex reset --project` (tombstones).
"""
import json


def cursor_tombstone_key(path: str) -> str:
    """The key of the cursor `cortex reset` leaves for a transcript: a hash, not the path itself."""
    import hashlib
    return "reset:" + hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Cursors(dict):
    """state/cursors.json: transcript path -> how far it was read.  A transcript whose project was reset
    has no entry of its own, only a tombstone under `cursor_tombstone_key`: reading resumes there."""

    def get(self, key, default=None):
        found = super().get(key)
        if found is None and isinstance(key, str):
            found = super().get(cursor_tombstone_key(key))
        return default if found is None else found


def cursors_text(cursors: dict) -> str:
    """state/cursors.json as one line per transcript, keys sorted: a person greps a transcript's line, and
    the whole file is written after every window, so it is encoded by json's C encoder (which `indent`
    would turn off: the pure-Python one took 7 ms per write at 70 transcripts, and grows with the file)."""
    dumps = json.dumps
    body = ",\n".join("%s: %s" % (dumps(k), dumps(cursors[k], sort_keys=True)) for k in sorted(cursors))
    return "{\n%s\n}\n" % body if body else "{}\n"


def read_cursors(path) -> dict:
    """The cursors file as a dict ({} when missing or unreadable: the transcripts are read again)."""
    try:
        with open(path, encoding="utf-8") as f:
            cursors = json.load(f)
        return cursors if isinstance(cursors, dict) else {}
    except (OSError, ValueError):
        return {}
