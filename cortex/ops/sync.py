"""`cortex sync`: one memory across machines and a team, over a git remote the user names.

    init(home, url)          set up <home>/sync/repo.git (a bare git repository whose `origin` is url)
    sync(home)               exchange the chosen records with the remote; merge; push; update the index
    status(home)             what is set up, chosen, waiting to travel, held back
    migrate(home)            move records of projects from path-based ids to repository-based ids

Nothing of ours runs on a server: git (the program) moves the bytes, through subprocess.  The shared
repository holds

    records/L0/<project id>/<id>.md     the L0 records of the projects people opted in (`sync.projects`)
    records/L1/<domain>/<id>.md         the L1 records of the domains marked shared (`sync.domains`)
    tombstones/<id>                     ids deleted for good (`cortex forget --hard`): deleted everywhere

**One sync** (under the home's run lock):

1. fetch the remote branch into refs/remotes/origin/<branch>;
2. for every chosen record that changed here (against refs/heads/<branch>, the last synced state: the
   *base*) or there, decide its new content three-way: a change on one side is taken; a change on both
   sides is merged field by field in Python (`cortex.model.recmerge`, a join: any order gives the same
   bytes); a deletion on one side of a record the other did not change is taken; a tombstone wins over
   everything;
3. every record to be sent is scanned for secrets again (`redact.contains_secret`); one that fails is
   held back (kept here, reported, never committed);
4. commit on top of the remote tip (`git fast-import`, no checkout, no text merge) and push; a push that
   lost a race is retried from 1; any other failure stops here, and the home is untouched;
5. only then write what arrived (`RecordStore.write`), delete what was deleted, update the index rows of
   those ids, and move the base to the new tip.

A kill at any moment is safe: before the push nothing here changed; after it, the next sync sees the
remote holding the merged versions, which the join leaves as they are.
"""
import fnmatch
import hashlib
import json
import os
import re
import socket
import subprocess
import time

from cortex.core.errors import CortexError
from cortex.core.fsutil import atomic_write_text
from cortex.core.lock import locked

REC_PATH = re.compile(r"^records/(L0|L1)/([A-Za-z0-9][A-Za-z0-9._-]{0,120})/(r[0-9a-f]{16})\.md$")
TOMB_PATH = re.compile(r"^tombstones/(r[0-9a-f]{16})$")
TRIES = 4
NET_TIMEOUT = 300
BATCH_FSYNC = 20      # more records than this arriving at once: written without fsync each, then one sync
REINDEX_FROM = 2000   # more changed ids than this: rebuild the index instead of updating rows


# -- where things are -----------------------------------------------------------------------------

def sync_dir(home) -> str:
    return home.path("sync")


def repo_dir(home) -> str:
    return home.path("sync", "repo.git")


def _settings_path(home) -> str:
    return home.path("sync", "sync.json")


def _cache_path(home) -> str:
    return home.path("sync", "cache.json")


def settings(home):
    """{remote, branch} once `cortex sync init` ran, else None."""
    try:
        with open(_settings_path(home), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not data.get("remote") or not os.path.isdir(repo_dir(home)):
        return None
    return data


def _need_settings(home) -> dict:
    st = settings(home)
    if st is None:
        raise CortexError("sync is not set up for %s: nothing is shared" % home.root,
                          "run `cortex sync init URL` with a git remote you own (docs/sync.md)")
    return st


# -- git ------------------------------------------------------------------------------------------

def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in (
        "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_EXEC_PATH")}
    host = (socket.gethostname() or "localhost").split(".")[0] or "localhost"
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", LANG="C",
               GIT_AUTHOR_NAME="cortex sync", GIT_AUTHOR_EMAIL="cortex@%s" % host,
               GIT_COMMITTER_NAME="cortex sync", GIT_COMMITTER_EMAIL="cortex@%s" % host)
    return env


def _git(repo, *args, data: bytes = None, check: bool = True, timeout: float = NET_TIMEOUT):
    try:
        p = subprocess.run(["git", "--git-dir", repo] + list(args), input=data, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=_env(), timeout=timeout)
    except FileNotFoundError:
        raise CortexError("git is not installed (cortex sync drives the git program)", "install git")
    except subprocess.TimeoutExpired:
        raise CortexError("git %s did not finish in %d s: nothing changed here" % (args[0], timeout),
                          "check the network and the remote, then run `cortex sync` again")
    if check and p.returncode != 0:
        raise CortexError("git %s failed: %s" % (args[0], _first_line(p.stderr)),
                          "nothing changed here; see docs/sync.md")
    return p


def _first_line(err: bytes) -> str:
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith(("fatal:", "error:", "!", "remote:")):
            return ln
    return lines[0] if lines else "no message"


def _rev(repo, ref: str):
    p = _git(repo, "rev-parse", "-q", "--verify", ref + "^{commit}", check=False)
    return p.stdout.decode().strip() or None if p.returncode == 0 else None


def _ls_tree(repo, rev) -> dict:
    """{path: blob sha} of a commit's tree."""
    if not rev:
        return {}
    out = {}
    for entry in _git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        out[path.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
    return out


def _cat(repo, shas) -> dict:
    """{sha: bytes} of these blobs, one git process."""
    shas = sorted(set(shas))
    if not shas:
        return {}
    raw = _git(repo, "cat-file", "--batch", data=("\n".join(shas) + "\n").encode()).stdout
    out, i = {}, 0
    for sha in shas:
        nl = raw.index(b"\n", i)
        head = raw[i:nl].split()
        if len(head) < 3 or head[1] == b"missing":
            raise CortexError("the sync repository lacks object %s" % sha, "run `cortex sync` again")
        size = int(head[2])
        out[sha] = raw[nl + 1:nl + 1 + size]
        i = nl + 1 + size + 1
    return out


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _fetch(repo, branch: str):
    """The remote tip after fetching (None for an empty remote).  Raises CortexError when unreachable."""
    p = _git(repo, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "origin",
             "+refs/heads/%s:refs/remotes/origin/%s" % (branch, branch), check=False)
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace")
        if "couldn't find remote ref" in err or "could not find remote ref" in err:
            return None  # an empty remote, or no branch yet: the first sync creates it
        raise CortexError("cannot fetch from the sync remote: %s" % _first_line(p.stderr),
                          "nothing changed here; check the network and `cortex sync status`, then run `cortex sync` again")
    return _rev(repo, "refs/remotes/origin/" + branch)


def _push(repo, commit: str, branch: str):
    """None when pushed, 'stale' when the remote moved meanwhile, else the remote's one-line reason."""
    p = _git(repo, "push", "-q", "--porcelain", "origin", "%s:refs/heads/%s" % (commit, branch), check=False)
    if p.returncode == 0:
        return None
    text = (p.stdout + p.stderr).decode("utf-8", "replace")
    if "[remote rejected]" not in text and ("non-fast-forward" in text or "fetch first" in text or "stale info" in text):
        return "stale"
    return _first_line(p.stderr) if "[remote rejected]" not in text else next(
        ln.strip() for ln in text.splitlines() if "[remote rejected]" in ln)


def _commit(repo, parent, puts: dict, dels, message: str) -> str:
    """A commit on top of parent with these files written and removed, through git fast-import."""
    ref = "refs/cortex/outgoing"
    chunks = [b"commit %s\n" % ref.encode(),
              b"committer cortex sync <cortex@localhost> %d +0000\n" % int(time.time())]
    msg = message.encode()
    chunks.append(b"data %d\n%s\n" % (len(msg), msg))
    if parent:
        chunks.append(b"from %s\n" % parent.encode())
    for path in sorted(dels):
        chunks.append(b"D %s\n" % path.encode())
    for path in sorted(puts):
        data = puts[path]
        chunks.append(b"M 100644 inline %s\ndata %d\n" % (path.encode(), len(data)))
        chunks.append(data + b"\n")
    chunks.append(b"done\n")
    _git(repo, "fast-import", "--quiet", "--force", "--done", data=b"".join(chunks))
    sha = _rev(repo, ref)
    if not sha:
        raise CortexError("git fast-import made no commit", "run `cortex sync` again")
    return sha


# -- what travels ---------------------------------------------------------------------------------

class Chooser:
    """Which scopes travel: `sync.domains` (L1 domain names or globs) and `sync.projects` (L0 project ids,
    id globs, or path globs matched against the folders Cortex has seen sessions in)."""

    def __init__(self, home, cfg: dict):
        conf = (cfg or {}).get("sync") or {}
        self.domains = [str(d) for d in conf.get("domains") or []]
        self.projects = [str(p) for p in conf.get("projects") or []]
        self.home = home
        self._roots = None

    def roots(self) -> dict:
        """{project id: set of folders} from the cursors and the inbox (where sessions ran)."""
        if self._roots is None:
            from cortex.model.scope import project_for
            self._roots = {}
            for cwd in seen_folders(self.home):
                try:
                    pid = project_for(cwd)
                except OSError:
                    continue
                self._roots.setdefault(pid["id"], set()).add(pid["root"] or cwd)
        return self._roots

    def __call__(self, scope: str, scope_id: str) -> bool:
        if scope == "L1":
            return any(scope_id == d or fnmatch.fnmatchcase(scope_id, d) for d in self.domains)
        for pat in self.projects:
            if scope_id == pat or fnmatch.fnmatchcase(scope_id, pat):
                return True
            if "/" in pat or pat.startswith("~"):
                pat_path = os.path.expanduser(pat)
                for root in self.roots().get(scope_id, ()):
                    if fnmatch.fnmatch(root, pat_path) or fnmatch.fnmatch(root + os.sep, pat_path):
                        return True
        return False


def seen_folders(home) -> set:
    """The working directories of the sessions Cortex has read (cursors) or holds events of (inbox)."""
    from cortex.inbox.cursors import read_cursors
    out = set()
    for cur in read_cursors(home.cursors).values():
        if isinstance(cur, dict) and isinstance(cur.get("cwd"), str) and cur["cwd"]:
            out.add(cur["cwd"])
    for state in ("pending", "claimed"):  # sessions read already are in the cursors
        d = home.inbox_dir(state)
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(d, name), encoding="utf-8") as f:
                    ev = json.loads(f.read(1 << 20))
                cwd = (ev.get("payload") or {}).get("cwd")
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(cwd, str) and cwd:
                out.add(cwd)
    return {c for c in out if os.path.isdir(c)}


def _local_records(home, choose) -> dict:
    """{repo path: absolute path} of the chosen records on this machine."""
    out = {}
    for scope in ("L0", "L1"):
        base = os.path.join(home.records, scope)
        try:
            scope_ids = os.listdir(base)
        except OSError:
            continue
        for sid in scope_ids:
            if not choose(scope, sid):
                continue
            d = os.path.join(base, sid)
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for name in names:
                rel = "records/%s/%s/%s" % (scope, sid, name)
                if REC_PATH.match(rel):
                    out[rel] = os.path.join(d, name)
    return out


def _local_shas(home, local: dict):
    """{repo path: blob sha} of the local files, reading only those whose stat changed since the last sync
    (sync/cache.json); and the new cache."""
    try:
        with open(_cache_path(home), encoding="utf-8") as f:
            cache = json.load(f)
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    shas, new_cache, data = {}, {}, {}
    for rel, path in local.items():
        try:
            st = os.stat(path)
        except OSError:
            continue
        key = [st.st_ino, st.st_mtime_ns, st.st_size]
        hit = cache.get(rel)
        if isinstance(hit, list) and len(hit) == 4 and hit[:3] == key:
            shas[rel] = hit[3]
        else:
            try:
                with open(path, "rb") as f:
                    b = f.read()
            except OSError:
                continue
            data[rel] = b
            shas[rel] = blob_sha(b)
        new_cache[rel] = key + [shas[rel]]
    return shas, new_cache, data


def _parse(data: bytes, where: str) -> dict:
    from cortex.store import records
    from cortex.store.frontmatter import fast_parse
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise records.RecordError("%s: not UTF-8 text (byte %d)" % (where, e.start))
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    rec = fast_parse(text)
    return rec if rec is not None else records.parse(text, where)


# -- the plan -------------------------------------------------------------------------------------

class Plan:
    def __init__(self):
        self.repo_put = {}      # repo path -> bytes to commit
        self.repo_del = set()   # repo paths to remove from the remote
        self.local_put = {}     # repo path -> record dict to write here
        self.local_del = {}     # repo path -> absolute path to delete here
        self.held = []          # (id, reason): chosen records that stay here
        self.merged = set()     # repo paths merged from two changed sides
        self.tombs_out = set()  # ids whose tombstones go to the remote
        self.new_cache = {}
        self.local_changed = 0

    def counts(self) -> dict:
        sent = sum(1 for p in self.repo_put if p.startswith("records/"))
        return {"sent": sent, "received": len(self.local_put), "merged": len(self.merged),
                "deleted_there": len([p for p in self.repo_del if p.startswith("records/")]),
                "deleted_here": len(self.local_del), "tombstones_sent": len(self.tombs_out),
                "held": [{"id": i, "reason": r} for i, r in self.held]}


def _plan(home, cfg, repo, base_tip, remote_tip, choose, remote_only_selected: bool = True) -> Plan:
    from cortex.model import recmerge, redact
    from cortex.store import records, tombstones
    from cortex.core.schemas import validate
    plan = Plan()
    remote = _ls_tree(repo, remote_tip)
    base = _ls_tree(repo, base_tip) if remote_tip else {}  # an emptied remote: start again from nothing
    local = _local_records(home, choose)
    local_sha, plan.new_cache, local_data = _local_shas(home, local)

    tombs = {m.group(1) for m in map(TOMB_PATH.match, list(base) + list(remote)) if m}
    for rid, (scope, sid) in tombstones.read(home).items():
        if choose(scope, sid):
            tombs.add(rid)
            if "tombstones/" + rid not in remote:
                plan.tombs_out.add(rid)
                plan.repo_put["tombstones/" + rid] = ("%s/%s\n" % (scope, sid)).encode()

    paths = set()
    for p, s in local_sha.items():
        if base.get(p) != s:
            paths.add(p)
    for p in set(base) | set(remote):
        if p.startswith("records/") and (remote.get(p) != base.get(p) or p not in local_sha):
            paths.add(p)
    if tombs:
        for p in set(local_sha) | set(remote):
            m = REC_PATH.match(p)
            if m and m.group(3) in tombs:
                paths.add(p)

    wanted = {}
    for p in paths:
        m = REC_PATH.match(p)
        if m and choose(m.group(1), m.group(2)):
            wanted[p] = m
    blobs = _cat(repo, [s for p in wanted for s in (remote.get(p), base.get(p)) if s and s != local_sha.get(p)])
    for p in wanted:
        if p in local_sha and p not in local_data and local_sha[p] not in blobs:
            with open(local[p], "rb") as f:
                local_data[p] = f.read()

    for p in sorted(wanted):
        m = wanted[p]
        rid = m.group(3)
        ls, bs, rs = local_sha.get(p), base.get(p), remote.get(p)
        if ls == rs and rid not in tombs:
            continue
        if ls is not None:
            plan.local_changed += ls != bs

        def data_of(side):
            if side == "L":
                return local_data[p] if p in local_data else blobs[ls]
            return blobs[rs]

        def parsed(side):
            try:
                rec = _parse(data_of(side), "%s (%s)" % (p, "here" if side == "L" else "the remote"))
            except (records.RecordError, ValueError) as e:
                raise CortexError("sync cannot decide record %s: %s" % (rid, e),
                                  "nothing changed here; fix the file or `cortex forget --hard %s`, then sync again" % rid)
            if rec.get("id") != rid or rec.get("scope") != m.group(1) or rec.get("scope_id") != m.group(2):
                raise CortexError("sync cannot decide record %s: its front matter names another id or scope" % rid,
                                  "nothing changed here; fix the file, then sync again")
            return rec

        out = None  # the record's new content: bytes, or None for deleted
        out_rec = None
        as_is = False  # out_rec is the remote's version unchanged: its bytes travel as they are
        if rid in tombs:
            out = None
        elif ls is not None and rs is not None:
            if ls == bs:
                out_rec, as_is = parsed("R"), True
            elif rs == bs:
                out = data_of("L")
            else:
                try:
                    out_rec = recmerge.merge(parsed("L"), parsed("R"))
                except recmerge.MergeError as e:
                    raise CortexError("sync cannot decide record %s: %s" % (rid, e), "nothing changed here")
                plan.merged.add(p)
        elif ls is not None:
            if bs is not None and ls == bs:
                out = None  # deleted there, unchanged here
            else:
                out = data_of("L")
        else:
            if bs is not None and rs == bs:
                out = None  # deleted here, unchanged there
            else:
                out_rec, as_is = parsed("R"), True
        if out is not None and tombs and any(t.encode() in out for t in tombs):
            out_rec = parsed("L")
        if out_rec is not None:
            if recmerge.drop_links(out_rec, tombs):
                as_is = False
            problems = validate("record", out_rec)
            if problems:
                raise CortexError("sync cannot decide record %s: the result does not match the record schema: %s"
                                  % (rid, problems[0]), "nothing changed here; fix the file, then sync again")
            out = data_of("R") if as_is else records.dump(out_rec).encode("utf-8")
        here = data_of("L") if ls is not None else None
        if out != here and not (out is not None and here is not None and blob_sha(out) == ls):
            if out is None:
                plan.local_del[p] = local[p]
            else:
                plan.local_put[p] = out_rec if out_rec is not None else _parse(out, p)
        if rs is not None and out is None:
            plan.repo_del.add(p)
        elif out is not None and blob_sha(out) != rs:
            text = out.decode("utf-8", "replace")
            if redact.contains_secret(text):
                plan.held.append((rid, "a secret was found in it; it stays on this machine"))
            else:
                plan.repo_put[p] = out
    return plan


# -- the commands ---------------------------------------------------------------------------------

def init(home, url: str, branch: str = "main", cfg=None) -> dict:
    """Set up syncing with a git remote.  Nothing is sent until `sync`.  Returns {remote, branch, migrated}."""
    if not url or not url.strip():
        raise CortexError("no remote given", "cortex sync init URL (a git repository you can push to)")
    if not re.match(r"^[A-Za-z0-9._/-]{1,100}$", branch) or ".." in branch:
        raise CortexError("%r is not a branch name" % branch, "use a plain name such as main")
    home.ensure()
    repo = repo_dir(home)
    with locked(home, wait=30):
        fresh = not os.path.isdir(repo)
        if fresh:
            os.makedirs(sync_dir(home), mode=0o700, exist_ok=True)
            _git(repo, "init", "-q", "--bare")
            _git(repo, "config", "core.logAllRefUpdates", "false")
            _git(repo, "config", "gc.auto", "256")
        if _git(repo, "config", "--get", "remote.origin.url", check=False).returncode == 0:
            _git(repo, "config", "remote.origin.url", url)
        else:
            _git(repo, "remote", "add", "origin", url)
        p = _git(repo, "ls-remote", "-q", "origin", "refs/heads/" + branch, check=False)
        if p.returncode != 0:
            if fresh:
                import shutil
                shutil.rmtree(repo, ignore_errors=True)
            raise CortexError("cannot reach the sync remote %s: %s" % (url, _first_line(p.stderr)),
                              "check the URL and your access to it (git ls-remote %s); nothing was set up" % url)
        atomic_write_text(_settings_path(home), json.dumps({"remote": url, "branch": branch}, indent=1) + "\n")
        migrated = migrate(home, cfg)
    return {"remote": url, "branch": branch, "migrated": migrated}


def sync(home, cfg=None, dry_run: bool = False, log=None) -> dict:
    """Exchange the chosen records with the remote.  Returns what happened (counts, held-back records)."""
    from cortex.core import config as config_mod
    st = _need_settings(home)
    cfg = cfg or config_mod.load(home, fast=False)
    repo, branch = repo_dir(home), st.get("branch") or "main"
    choose = Chooser(home, cfg)
    t0 = time.time()
    with locked(home, wait=30):
        if not dry_run:
            _finish_interrupted(home, cfg)
        for attempt in range(TRIES):
            remote_tip = _fetch(repo, branch)
            base_tip = _rev(repo, "refs/heads/" + branch)
            plan = _plan(home, cfg, repo, base_tip, remote_tip, choose)
            report = dict(plan.counts(), dry_run=dry_run, remote=st["remote"], branch=branch)
            if dry_run:
                report["would_send"] = sorted(p for p in plan.repo_put)
                report["would_receive"] = sorted(plan.local_put)
                report["would_delete_here"] = sorted(plan.local_del)
                report["would_delete_there"] = sorted(plan.repo_del)
                return report
            tip = remote_tip
            if plan.repo_put or plan.repo_del:
                c = plan.counts()
                msg = "cortex sync: %d sent, %d merged, %d deleted, %d tombstones" % (
                    c["sent"], c["merged"], c["deleted_there"], c["tombstones_sent"])
                commit = _commit(repo, remote_tip, plan.repo_put, plan.repo_del, msg)
                why = _push(repo, commit, branch)
                if why == "stale":
                    continue  # someone pushed between our fetch and push: start again from their tip
                if why:
                    raise CortexError("the sync remote refused the push: %s" % why,
                                      "nothing changed here; check your rights on the remote (docs/sync.md)")
                tip = commit
                _git(repo, "update-ref", "refs/remotes/origin/" + branch, commit)
            changed = _apply_local(home, cfg, plan)
            if tip:
                _git(repo, "update-ref", "refs/heads/" + branch, tip)
            _save_cache(home, plan, changed)
            report.update(commit=tip, tries=attempt + 1, ms=int((time.time() - t0) * 1000))
            if log is not None:
                log.info("sync_done", **{k: v for k, v in report.items() if k != "held"}, held=len(plan.held))
            return report
    raise CortexError("the sync remote changed during each of %d tries: nothing changed here" % TRIES,
                      "run `cortex sync` again")


def _apply_local(home, cfg, plan: Plan) -> dict:
    """Write what arrived, delete what went; refresh their index rows.  Returns {repo path: file written}."""
    from cortex.store.records import RecordStore, RecordError
    store = RecordStore(home.records)
    changed, ids, scopes = {}, set(), set()
    batch = len(plan.local_put) > BATCH_FSYNC
    todo = {"ids": sorted({m.group(3) for m in map(REC_PATH.match, list(plan.local_put) + list(plan.local_del))}),
            "scopes": sorted({m.group(2) for m in map(REC_PATH.match, list(plan.local_put) + list(plan.local_del))})}
    if todo["ids"]:  # a journal: a sync killed after these writes has the next one refresh the index first
        atomic_write_text(_journal_path(home), json.dumps(todo))
    for p, rec in sorted(plan.local_put.items()):
        try:
            store.write(rec, durable=not batch)
        except RecordError as e:
            raise CortexError("sync cannot write record %s: %s" % (rec.get("id"), e), "run `cortex sync` again")
        changed[p] = store.path_of(rec)
        ids.add(rec["id"])
        scopes.add(rec["scope_id"])
    for p, path in sorted(plan.local_del.items()):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass
        m = REC_PATH.match(p)
        ids.add(m.group(3))
        scopes.add(m.group(2))
    if batch and hasattr(os, "sync"):
        os.sync()  # one flush for the batch instead of two fsyncs per file; before the base moves
    _refresh_index(home, cfg, ids, scopes, scrub=bool(plan.local_del))
    return changed


def _journal_path(home) -> str:
    return home.path("sync", "index-pending.json")


def _refresh_index(home, cfg, ids, scopes, scrub=False):
    if len(ids) > REINDEX_FROM:
        from cortex.store.indexer import reindex
        reindex(home, cfg)
    elif ids:
        from cortex.store.indexer import update_index
        update_index(home, cfg, set(ids), set(scopes), scrub=scrub)
    try:
        os.unlink(_journal_path(home))
    except FileNotFoundError:
        pass


def _finish_interrupted(home, cfg):
    """The index rows a killed sync wrote records for but did not refresh."""
    try:
        with open(_journal_path(home), encoding="utf-8") as f:
            todo = json.load(f)
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        todo = None
    if not isinstance(todo, dict):
        from cortex.store.indexer import reindex
        reindex(home, cfg)
        os.unlink(_journal_path(home))
        return
    _refresh_index(home, cfg, todo.get("ids") or [], todo.get("scopes") or [], scrub=True)


def _save_cache(home, plan: Plan, changed: dict):
    cache = plan.new_cache
    for p in plan.local_del:
        cache.pop(p, None)
    for p, path in changed.items():  # written by us under the lock: hash what is there now
        try:
            with open(path, "rb") as f:
                data = f.read()
            st = os.stat(path)
        except OSError:
            cache.pop(p, None)
            continue
        cache[p] = [st.st_ino, st.st_mtime_ns, st.st_size, blob_sha(data)]
    os.makedirs(sync_dir(home), mode=0o700, exist_ok=True)
    atomic_write_text(_cache_path(home), json.dumps(cache, separators=(",", ":")))


def status(home, cfg=None) -> dict:
    """Set-up, chosen scopes, and what the next sync would send (no network: against the last fetch)."""
    from cortex.core import config as config_mod
    st = settings(home)
    cfg = cfg or config_mod.load(home, fast=False)
    conf = cfg.get("sync") or {}
    out = {"set_up": st is not None, "remote": st and st.get("remote"), "branch": st and st.get("branch"),
           "domains": list(conf.get("domains") or []), "projects": list(conf.get("projects") or []),
           "after_normalize": bool(conf.get("after_normalize"))}
    choose = Chooser(home, cfg)
    scopes = {}
    for rel in _local_records(home, choose):
        m = REC_PATH.match(rel)
        key = "%s/%s" % (m.group(1), m.group(2))
        scopes[key] = scopes.get(key, 0) + 1
    out["chosen"] = scopes
    if st is not None:
        repo, branch = repo_dir(home), st.get("branch") or "main"
        out["last_synced"] = _rev(repo, "refs/heads/" + branch)
        if out["last_synced"]:
            p = _git(repo, "log", "-1", "--format=%cI", out["last_synced"], check=False)
            out["last_synced_at"] = p.stdout.decode().strip() or None
        plan = _plan(home, cfg, repo, out["last_synced"], _rev(repo, "refs/remotes/origin/" + branch), choose)
        out["pending"] = plan.counts()
    return out


# -- project ids that follow the repository -------------------------------------------------------

def _key_of(rec: dict) -> str:
    """The identity key a record was most likely written with (the writer does not store it)."""
    from cortex.store.records import normalize_text
    provs = rec.get("provenance") or []
    session = provs[0].get("session") if provs and isinstance(provs[0], dict) else None
    if rec.get("type") in ("plan", "progress") and session:
        return "%s:%s" % (rec["type"], session)
    return normalize_text(rec.get("text") or "")


def migrate(home, cfg=None, folders=None) -> list:
    """Move the L0 records of projects whose id was derived from their path to the id derived from their
    repository (`scope.project_for`), for every folder Cortex has seen sessions in (and `folders`).  Record
    ids are rewritten (they hash the project id), links to them follow, two records that become one are
    merged (`recmerge`), and the index is rebuilt.  Idempotent; a crash midway is finished by a rerun.
    Returns [(old project id, new project id, records moved)]."""
    from cortex.model import recmerge, scope
    from cortex.store import records
    from cortex.core import config as config_mod
    cfg = cfg or config_mod.load(home, fast=False)
    moves = {}
    for cwd in sorted(set(seen_folders(home)) | set(folders or ())):
        if not os.path.isdir(cwd):
            continue
        old, new = scope.legacy_project_id(cwd), scope.project_for(cwd)["id"]
        if old != new and os.path.isdir(os.path.join(home.records, "L0", old)):
            moves[old] = new
    if not moves:
        return []
    done, id_map, found = [], {}, []
    with locked(home, wait=30):
        store = records.RecordStore(home.records)
        for old, new in sorted(moves.items()):
            folder = os.path.join(home.records, "L0", old)
            n = 0
            for name in sorted(os.listdir(folder)):
                if not name.endswith(".md") or name.startswith("."):
                    continue
                path = os.path.join(folder, name)
                try:
                    rec = records.read(path)
                except (records.RecordError, OSError) as e:
                    raise CortexError("cannot migrate %s: %s" % (path, e), "fix or move the file away, then run again")
                id_map[rec["id"]] = records.make_id(new, rec["type"], _key_of(rec))
                found.append((rec, new))
                n += 1
            done.append((old, new, n))

        def relink(rec):
            hit = False
            for k in recmerge.LINK_FIELDS:
                if isinstance(rec.get(k), list) and set(rec[k]) & set(id_map):
                    rec[k] = sorted({id_map.get(x, x) for x in rec[k]} - {rec["id"]})
                    hit = True
            if rec.get("merged_into") in id_map:
                rec["merged_into"] = id_map[rec["merged_into"]]
                hit = True
            return hit

        for rec, new in found:  # new files first: a crash leaves the old ones, and a rerun redoes this
            moved = dict(rec, id=id_map[rec["id"]], scope_id=new)
            relink(moved)
            target = records.record_path(home.records, moved)
            if os.path.exists(target):
                moved = recmerge.merge(records.read(target), moved)
            store.write(moved)
        for path in records.iter_paths(home.records):  # links other records hold to a moved one
            if os.path.basename(os.path.dirname(path)) in moves:
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    raw = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            if any(o in raw for o in id_map):
                store.update(os.path.basename(path)[:-3], relink)
        for old in moves:
            folder = os.path.join(home.records, "L0", old)
            for name in os.listdir(folder):
                if name.endswith(".md"):
                    os.unlink(os.path.join(folder, name))
            try:
                os.rmdir(folder)
            except OSError:
                pass
        from cortex.store.indexer import reindex
        reindex(home, cfg)
    return done
