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


def cursors_text(cursors: dict, lines: dict = None) -> str:
    """state/cursors.json as one line per transcript, keys sorted: a person greps a transcript's line, and
    the whole file is written after every window, so it is encoded by json's C encoder (which `indent`
    would turn off: the pure-Python one took 7 ms per write at 70 transcripts, and grows with the file).

    `lines`: the writer's memory of the lines it encoded, {key: (cursor, line)}.  A cursor that is the very
    object its line was made from is not encoded again (the normalizer rewrites the file after every window
    for one changed cursor: 110 ms of a 2.5 s run at 110 transcripts).  It holds for a writer that replaces
    a cursor by a new object rather than changing one in place, and forgets the lines when a change in place
    may have happened (Run: a session that failed mid-window, whose extraction may have changed the state
    the old cursor holds)."""
    dumps = json.dumps
    out = []
    for k in sorted(cursors):
        cur = cursors[k]
        known = lines.get(k) if lines is not None else None
        if known is not None and known[0] is cur:
            out.append(known[1])
            continue
        line = "%s: %s" % (dumps(k), dumps(cur, sort_keys=True))
        if lines is not None:
            lines[k] = (cur, line)
        out.append(line)
    body = ",\n".join(out)
    return "{\n%s\n}\n" % body if body else "{}\n"


def read_cursors(path) -> dict:
    """The cursors file as a dict ({} when missing or unreadable: the transcripts are read again)."""
    try:
        with open(path, encoding="utf-8") as f:
            cursors = json.load(f)
        return cursors if isinstance(cursors, dict) else {}
    except (OSError, ValueError):
        return {}
