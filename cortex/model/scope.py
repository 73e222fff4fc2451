"""Which project and domain a working directory belongs to.

On the session-start path, so it reads a few small files instead of running git.
The project id comes from the git *common* dir: every worktree of one repository
shares it, and two repositories with the same folder name never do.  Outside git
it comes from the resolved path of the directory itself.
"""
import fnmatch
import os
import re

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4096).strip()
    except OSError:
        return None


def git_dirs(cwd: str):
    """(worktree top, git common dir) for cwd, or (None, None) outside git."""
    d = os.path.realpath(cwd)
    while True:
        dotgit = os.path.join(d, ".git")
        if os.path.isdir(dotgit):
            common = _read(os.path.join(dotgit, "commondir"))
            return d, os.path.realpath(os.path.join(dotgit, common)) if common else dotgit
        if os.path.isfile(dotgit):
            line = _read(dotgit) or ""
            if line.startswith("gitdir:"):
                gitdir = os.path.realpath(os.path.join(d, line[7:].strip()))
                common = _read(os.path.join(gitdir, "commondir"))
                return d, os.path.realpath(os.path.join(gitdir, common)) if common else gitdir
        parent = os.path.dirname(d)
        if parent == d:
            return None, None
        d = parent


def slug(text: str, limit: int = 40) -> str:
    s = _SLUG.sub("-", text).strip("-._")[:limit]
    return s or "root"


def remote_url(common: str):
    """The URL of the repository's `origin` remote (else its first remote), read from <common dir>/config."""
    text = _read_all(os.path.join(common, "config"))
    if not text:
        return None
    urls, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            m = re.match(r'\[\s*remote\s+"([^"]*)"\s*\]', line)
            section = m.group(1) if m else None
        elif section is not None and section not in urls:
            m = re.match(r"url\s*=\s*(.+)$", line)
            if m:
                urls[section] = m.group(1).strip().strip('"')
    if not urls:
        return None
    return urls.get("origin") or urls[sorted(urls)[0]]


def normalize_url(url: str) -> str:
    """One spelling for the URLs of one repository: scheme, user, port, `.git` and case of the host dropped,
    so https://github.com/Me/Repo.git, git@github.com:Me/Repo and ssh://git@github.com:22/Me/Repo agree."""
    u = url.strip()
    m = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://(.*)$", u)
    if m:
        rest = m.group(1)
        host, _, path = rest.partition("/")
        if u.lower().startswith("file://"):
            host, path = "", rest.lstrip("/")
    elif re.match(r"^[^/:]+:[^/]", u) and not re.match(r"^[A-Za-z]:[\\/]", u):  # scp-like user@host:path
        host, _, path = u.partition(":")
    else:
        host, path = "", u
    host = host.rpartition("@")[2].split(":")[0].lower()
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return ("%s/%s" % (host, path) if host else "/" + path).rstrip("/")


def _first_commit(common: str):
    """The repository's initial commit when its HEAD reflog starts with it (a repository created here, or
    copied with its .git), else None.  A file read, no git."""
    line = (_read(os.path.join(common, "logs", "HEAD")) or "").split("\n", 1)[0]
    parts = line.split(None, 2)
    if len(parts) == 3 and set(parts[0]) == {"0"} and "commit (initial)" in parts[2] and re.match(
            r"^[0-9a-f]{40,64}$", parts[1]):
        return parts[1]
    return None


def _read_all(path, limit=262144):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def _repo_name(common: str) -> str:
    repo_dir = os.path.dirname(common) if os.path.basename(common) == ".git" else common
    name = os.path.basename(repo_dir)
    return name[:-4] if name.endswith(".git") else name


def _safe_name(name: str) -> str:
    if len(name) >= 16 and any(c.isdigit() for c in name) or "=" in name:
        from cortex.model import redact
        if redact.redact(name)[1]:
            name = "project"
    return name


def _sha1(data: bytes) -> str:
    try:  # CPython's own SHA-1: hashlib's digest, without loading OpenSSL (about 2 ms of every hook's start)
        from _sha1 import sha1
    except ImportError:
        from hashlib import sha1
    return sha1(data).hexdigest()


def _make_id(name: str, key: str) -> str:
    return "%s-%s" % (slug(name), _sha1(key.encode("utf-8", "surrogatepass"))[:8])


def project_for(cwd: str) -> dict:
    """{'id', 'root', 'name', 'git'}: the project cwd belongs to.

    In git the id comes from the repository, not the folder: its remote URL (normalised), else its initial
    commit, else (a fresh repository with neither) its common dir's path.  So one repository cloned at two
    paths, on two machines, and all its worktrees share an id.  Outside git it comes from the path."""
    top, common = git_dirs(cwd) if cwd else (None, None)
    if common:
        name, root = _repo_name(common), top
        url = remote_url(common)
        if url:
            norm = normalize_url(url)
            name = norm.rstrip("/").rsplit("/", 1)[-1] or name
            key = "git-remote:" + norm
        else:
            first = _first_commit(common)
            key = "git-initial:" + first if first else common
    else:
        key = os.path.realpath(cwd or ".")
        name = os.path.basename(key) or "root"
        root = key
    name = _safe_name(name)
    return {"id": _make_id(name, key), "root": root, "name": name, "git": bool(common)}


def legacy_project_id(cwd: str) -> str:
    """The id Cortex gave a directory before ids came from the repository (slug of the folder name and a
    hash of the git common dir's path): what `cortex sync migrate` moves records away from."""
    top, common = git_dirs(cwd) if cwd else (None, None)
    if common:
        return _make_id(_safe_name(_repo_name(common)), common)
    key = os.path.realpath(cwd or ".")
    return _make_id(_safe_name(os.path.basename(key) or "root"), key)


def domain_for(project: dict, cfg: dict) -> str:
    """The L1 domain of a project: the first rule that matches its id or root path, else the default."""
    dom = cfg.get("domains", {})
    for rule in dom.get("rules", []):
        pat = rule.get("match", "")
        if pat == project["id"]:
            return rule["domain"]
        pat_path = os.path.expanduser(pat)
        root = project.get("root") or ""
        if fnmatch.fnmatch(root, pat_path) or fnmatch.fnmatch(root + os.sep, pat_path):
            return rule["domain"]
    return dom.get("default", "personal")
