"""Reality checks at session start: is what a record says about files and branches still true?

The normalizer stores each named file's size, mtime and SHA-256 when it writes a record
(`file_state`).  At session start a kept record's files are stat'ed; only a file whose size
is unchanged but whose mtime moved is hashed.  Light imports only (hot path).
"""
import os

HASH_LIMIT = 2 * 1024 * 1024  # files larger than this are compared by size and mtime only
MAX_FILES = 10


def file_state(files, cwd) -> dict:
    """{absolute path: {size, mtime, sha256}} for the named files that exist now (normalizer side)."""
    import hashlib
    out = {}
    for f in list(files or ())[:MAX_FILES]:
        path = f if os.path.isabs(f) or not cwd else os.path.join(cwd, f)
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        if not os.path.isfile(path):
            continue
        entry = {"size": st.st_size, "mtime": int(st.st_mtime)}
        if st.st_size <= HASH_LIMIT:
            try:
                with open(path, "rb") as fh:
                    entry["sha256"] = hashlib.sha256(fh.read()).hexdigest()
            except OSError:
                pass
        out[path] = entry
    return out


def _changed(path, was) -> bool:
    st = os.stat(path)
    if st.st_size != was.get("size"):
        return True
    if int(st.st_mtime) == was.get("mtime"):
        return False
    if "sha256" not in was or st.st_size > HASH_LIMIT:
        return True
    import hashlib
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest() != was["sha256"]


def current_branch(cwd):
    """The checked-out branch of the worktree containing cwd, read from HEAD (no git process)."""
    d = os.path.realpath(cwd or ".")
    while True:
        dotgit = os.path.join(d, ".git")
        head = None
        if os.path.isdir(dotgit):
            head = os.path.join(dotgit, "HEAD")
        elif os.path.isfile(dotgit):
            try:
                with open(dotgit, encoding="utf-8") as f:
                    line = f.read(4096).strip()
                if line.startswith("gitdir:"):
                    head = os.path.join(os.path.realpath(os.path.join(d, line[7:].strip())), "HEAD")
            except OSError:
                return None
        if head:
            try:
                with open(head, encoding="utf-8") as f:
                    ref = f.read(256).strip()
            except OSError:
                return None
            return ref[len("ref: refs/heads/"):] if ref.startswith("ref: refs/heads/") else None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def check(rec: dict, branch=None):
    """None when the record may be shown (notes added to it), or the reason to leave it out."""
    fs = rec.get("file_state") or {}
    if fs:
        gone, changed = [], []
        for path, was in sorted(fs.items()):
            try:
                if _changed(path, was):
                    changed.append(os.path.basename(path))
            except FileNotFoundError:
                gone.append(os.path.basename(path))
            except OSError:
                continue
        if gone and len(gone) == len(fs) and rec.get("type") not in ("decision", "rejected", "preference", "plan"):
            return "files gone: %s" % ", ".join(gone)
        notes = []
        if changed:
            notes.append("changed since: %s" % ", ".join(changed[:3]))
        if gone:
            notes.append("gone: %s" % ", ".join(gone[:3]))
        if notes:
            rec["files_note"] = "; ".join(notes)
    if branch and rec.get("branch") and rec["branch"] != branch:
        rec["branch_note"] = "branch %s" % rec["branch"]
    return None
