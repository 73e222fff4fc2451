"""Which project and domain a working directory belongs to.

On the session-start path, so it reads a few small files instead of running git.
The project id comes from the git *common* dir: every worktree of one repository
shares it, and two repositories with the same folder name never do.  Outside git
it comes from the resolved path of the directory itself.
"""
import fnmatch
import hashlib
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


def project_for(cwd: str) -> dict:
    """{'id', 'root', 'name', 'git'}: the project cwd belongs to."""
    top, common = git_dirs(cwd) if cwd else (None, None)
    if common:
        key = common
        repo_dir = os.path.dirname(common) if os.path.basename(common) == ".git" else common
        name = os.path.basename(repo_dir)
        if name.endswith(".git"):
            name = name[:-4]
        root = top
    else:
        key = os.path.realpath(cwd or ".")
        name = os.path.basename(key) or "root"
        root = key
    if len(name) >= 16 and any(c.isdigit() for c in name) or "=" in name:
        from cortex.model import redact
        if redact.redact(name)[1]:
            name = "project"
    digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return {"id": "%s-%s" % (slug(name), digest), "root": root, "name": name, "git": bool(common)}


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
