"""Reality checks at session start: is what a record says about files and branches still true?

The normalizer stores each named file's size, mtime and SHA-256 when it writes a record
(`file_state`).  At session start a kept record's files are stat'ed; only a file whose size
is unchanged but whose mtime moved is hashed.  Light imports only (hot path).

Files, modules and paths named only in a record's text (`legacy_token_cache.py`, `src/auth/`,
`cortex.store.index`) are resolved by the normalizer against the session's directory and the files
the session touched; those that existed then are kept in `file_state` as {"named": 1}.  At session
start they are only stat'ed (no hashing), at most MAX_NAMED per record and MAX_STATS per block: one
that is gone marks the record ("gone: …"), and drops it when everything it names is gone, as for
`files`.
"""
import os
import re

HASH_LIMIT = 2 * 1024 * 1024  # files larger than this are compared by size and mtime only
MAX_FILES = 10
MAX_NAMED = 5      # paths named in a record's text that are checked
MAX_STATS = 64     # stats of named paths per session start, all records together
NAMED_RE = re.compile(
    r"(?<![\w/.:@-])((?:\.{0,2}/)?(?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|ex|exs|erl|rb|"
    r"go|rs|java|kt|scala|c|h|cc|cpp|hpp|cs|swift|php|md|rst|json|jsonl|ya?ml|toml|ini|cfg|conf|sh|bash|sql|css|"
    r"scss|html|vue|svelte|lock|proto|tf|gradle|xml|txt)|(?:[\w.-]+/)+[\w.-]*)(?![\w/-])")
MODULE_RE = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)`")


def named_paths(text: str, cwd, known=()) -> list:
    """Paths of the project named in text that exist now (normalizer side): relative paths against cwd, bare
    file names against cwd and the files the session touched (`known`), dotted module names in backticks
    as their .py file or package.  URLs and paths outside cwd are ignored."""
    if not cwd or not os.path.isdir(cwd):
        return []
    text = re.sub(r"\b[a-z][\w+.-]*://\S+", " ", text or "")
    base = os.path.realpath(cwd)
    by_name = {}
    for k in known or ():
        by_name.setdefault(os.path.basename(k.rstrip("/")), k)
    cands = [m.group(1) for m in NAMED_RE.finditer(text)]
    cands += [m.group(1).replace(".", "/") + ext for m in MODULE_RE.finditer(text) for ext in (".py", "/__init__.py")]
    out = []
    for name in cands:
        name = name.rstrip("/") or name
        tries = [name] if "/" in name else [name] + ([by_name[name]] if name in by_name else [])
        for t in tries:
            path = os.path.normpath(t if os.path.isabs(t) else os.path.join(base, t))
            if not (path + os.sep).startswith(base + os.sep) or path == base:
                continue
            if os.path.exists(path):
                if path not in out:
                    out.append(path)
                break
        if len(out) >= MAX_NAMED:
            break
    return out


def existing_files(files, cwd) -> list:
    """The absolute paths of those of `files` (relative to cwd, or absolute) that are files now."""
    out = []
    for f in list(files or ())[:MAX_FILES]:
        path = f if os.path.isabs(f) or not cwd else os.path.join(cwd, f)
        try:
            if os.path.isfile(path) and path not in out:
                out.append(path)
        except (OSError, ValueError):
            continue
    return out


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


def check(rec: dict, branch=None, budget=None):
    """None when the record may be shown (notes added to it), or the reason to leave it out.
    `budget` ({"stats": n}) caps the stats of text-named paths over a whole block."""
    fs = rec.get("file_state") or {}
    if fs:
        gone, changed = [], []
        named = 0
        for path, was in sorted(fs.items()):
            try:
                if was.get("named"):
                    named += 1
                    if named > MAX_NAMED or (budget is not None and budget.get("stats", 0) >= MAX_STATS):
                        continue
                    if budget is not None:
                        budget["stats"] = budget.get("stats", 0) + 1
                    os.stat(path)
                elif _changed(path, was):
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
