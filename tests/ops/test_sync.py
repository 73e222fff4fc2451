"""`cortex sync`: homes that share a local bare repository (no network) converge to the same record files
and the same session-start block, whatever the order of their syncs; nothing is lost, nothing deleted
comes back, a secret never reaches the remote, a failed push or a killed sync leaves the home whole."""
import itertools
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from cortex.core.errors import CortexError
from cortex.core.home import Home
from cortex.model import recmerge
from cortex.model.scope import legacy_project_id, project_for
from cortex.ops import manage
from cortex.ops import sync as S
from cortex.store import records

REPO_URL = "https://github.com/acme/shop.git"
NOW = 1_800_000_000.0
CONFIG = "sync:\n  domains: ['*']\n  projects: ['*']\n"


def git(*args, cwd=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git"] + list(args), cwd=cwd, check=True, capture_output=True, env=env).stdout.decode()


@pytest.fixture
def remote(tmp_path):
    path = tmp_path / "remote.git"
    git("init", "-q", "--bare", str(path))
    return str(path)


class Machine:
    """One Cortex home, with the same repository cloned at its own path."""

    def __init__(self, root, remote, name, url=REPO_URL, config=CONFIG, init=True):
        self.home = Home(str(root / name / "home")).ensure()
        with open(self.home.config_yaml, "w") as f:
            f.write(config)
        self.proj = str(root / name / ("src-%s" % name) / "shop")
        os.makedirs(self.proj)
        git("init", "-q", self.proj)
        git("remote", "add", "origin", url, cwd=self.proj)
        if init:
            S.init(self.home, remote)

    @property
    def pid(self):
        return project_for(self.proj)["id"]

    def remember(self, text, t=0.0, **kw):
        return manage.remember(self.home, text, cwd=self.proj, now=NOW + t, **kw)["record"]

    def sync(self, **kw):
        return S.sync(self.home, **kw)

    def files(self):
        out = {}
        for path in records.iter_paths(self.home.records):
            with open(path, "rb") as f:
                out[os.path.relpath(path, self.home.records)] = f.read()
        return out

    def block(self):
        from cortex.brief.session_start import build
        return build(self.home, self.proj, now=NOW + 86400)[0]

    def rec(self, rid):
        return records.RecordStore(self.home.records).get(rid)


def converge(machines, rounds=2):
    for _ in range(rounds):
        for m in machines:
            m.sync()
    first = machines[0]
    for m in machines[1:]:
        assert m.files() == first.files()
        assert m.block() == first.block()
    return first.files()


def remote_history(remote) -> str:
    try:
        return git("--git-dir", remote, "log", "-p", "--all", "--format=%H %s")
    except subprocess.CalledProcessError:
        return ""


# -- project identity -----------------------------------------------------------------------------

def test_same_repository_at_two_paths_is_one_project(tmp_path):
    a = tmp_path / "a" / "code" / "shop"
    b = tmp_path / "b" / "elsewhere" / "shop-clone"
    for d, url in ((a, "https://github.com/Acme/Shop.git"), (b, "git@github.com:Acme/Shop")):
        os.makedirs(d)
        git("init", "-q", str(d))
        git("remote", "add", "origin", url, cwd=str(d))
    assert project_for(str(a))["id"] == project_for(str(b))["id"]
    assert project_for(str(a))["id"].startswith("Shop-")
    os.makedirs(a / "sub" / "dir")
    assert project_for(str(a / "sub" / "dir"))["id"] == project_for(str(a))["id"]
    # a worktree shares the id
    (a / "f").write_text("x")
    git("add", "f", cwd=str(a))
    git("commit", "-qm", "one", cwd=str(a))
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=str(a))
    assert project_for(str(tmp_path / "wt"))["id"] == project_for(str(a))["id"]
    # another repository is another project; a plain folder keeps its path id
    c = tmp_path / "c" / "shop"
    os.makedirs(c)
    git("init", "-q", str(c))
    git("remote", "add", "origin", "https://github.com/other/shop.git", cwd=str(c))
    assert project_for(str(c))["id"] != project_for(str(a))["id"]
    plain = tmp_path / "plain"
    os.makedirs(plain)
    assert project_for(str(plain))["id"] == legacy_project_id(str(plain))


def test_repository_without_remote_copied_keeps_its_id(tmp_path):
    import shutil
    a = tmp_path / "one" / "tool"
    os.makedirs(a)
    git("init", "-q", str(a))
    (a / "f").write_text("x")
    git("add", "f", cwd=str(a))
    git("commit", "-qm", "first", cwd=str(a))
    b = tmp_path / "two" / "tool"
    shutil.copytree(str(a), str(b))
    assert project_for(str(a))["id"] == project_for(str(b))["id"]
    fresh = tmp_path / "fresh"
    os.makedirs(fresh)
    git("init", "-q", str(fresh))  # no commit, no remote: the path, as before
    assert project_for(str(fresh))["id"] == legacy_project_id(str(fresh))


# -- the merge rule -------------------------------------------------------------------------------

def _random_version(rng, base):
    r = dict(base)
    r["seen"] = sorted(rng.sample(["2026-01-0%dT00:00:00Z" % i for i in range(1, 10)], rng.randint(1, 4)))
    r["used"] = sorted(rng.choices(["2026-02-0%dT00:00:00Z" % i for i in range(1, 6)], k=rng.randint(0, 3)))
    r["updated"] = max(r["seen"])
    r["text"] = rng.choice(["alpha", "beta", "gamma"])
    r["pinned"] = rng.random() < 0.3
    r["confidence"] = rng.choice([0.5, 0.7, 0.9])
    r["related"] = sorted(rng.sample(["r%016x" % i for i in range(5)], rng.randint(0, 2)))
    r["provenance"] = [{"client": "cli", "session": s, "layer": "manual", "at": s and "2026-01-01T00:00:00Z" or "x"}
                       for s in sorted(rng.sample(["s1", "s2", "s3"], rng.randint(1, 2)))]
    st = rng.choice(["active", "active", "archived", "superseded"])
    r["status"] = st
    if st == "archived":
        r["archived_at"] = rng.choice(["2026-01-05T00:00:00Z", "2026-03-01T00:00:00Z"])
    return r


def test_merge_is_a_join():
    rng = random.Random(7)
    base = {"id": "r0123456789abcdef", "scope": "L0", "scope_id": "p-1", "type": "learned", "salience": 0.5,
            "priority": 0, "created": "2026-01-01T00:00:00Z", "tokens": 5, "project": "p"}
    for _ in range(300):
        a, b, c = (_random_version(rng, base) for _ in range(3))
        dump = lambda r: records.dump(r)  # noqa: E731
        ab = recmerge.merge(a, b)
        assert dump(ab) == dump(recmerge.merge(b, a))
        assert dump(recmerge.merge(ab, c)) == dump(recmerge.merge(a, recmerge.merge(b, c)))
        assert dump(recmerge.merge(ab, ab)) == dump(ab)
        assert dump(recmerge.merge(ab, a)) == dump(ab)
        assert ab["pinned"] == (a["pinned"] or b["pinned"])
        if "superseded" in (a["status"], b["status"]):
            assert ab["status"] == "superseded"


# -- machines -------------------------------------------------------------------------------------

def test_nothing_leaves_before_init_and_dry_run_sends_nothing(tmp_path, remote):
    m = Machine(tmp_path, remote, "a", init=False)
    m.remember("the shop uses postgres 16")
    with pytest.raises(CortexError):
        m.sync()
    assert remote_history(remote) == ""
    S.init(m.home, remote)
    before = m.files()
    res = m.sync(dry_run=True)
    assert res["sent"] == 1 and res["would_send"]
    assert remote_history(remote) == "" and m.files() == before
    m.sync()
    assert "postgres 16" in remote_history(remote)


def test_two_machines_one_repository_at_two_paths(tmp_path, remote):
    a, b = Machine(tmp_path, remote, "a"), Machine(tmp_path, remote, "b")
    assert a.proj != b.proj and a.pid == b.pid
    ra = a.remember("payments go through stripe webhooks", t=1)
    b.remember("the cart is cached in redis for 15 minutes", t=2)
    b.remember("prefer small pull requests", rtype="preference", t=3)  # an L1 domain record
    files = converge([a, b])
    assert len(files) == 3
    assert "stripe" in a.block() and "redis" in a.block()
    assert b.rec(ra["id"])["text"] == ra["text"]
    # the index knows what arrived: recall finds it
    from cortex.ops.recall import recall
    hits = recall(b.home, "stripe webhooks", cwd=b.proj) if "cwd" in recall.__code__.co_varnames else None
    assert hits is None or hits


def _scenario(ms):
    """Concurrent changes to the same records on every side."""
    a, b, c = ms
    shared = [m.remember("deploys happen from the main branch only", t=i) for i, m in enumerate(ms)]
    rid = shared[0]["id"]
    assert all(s["id"] == rid for s in shared)
    x = a.remember("the search index is rebuilt nightly", t=10)
    y = a.remember("never run migrations on friday", t=11)
    for m in ms:
        m.sync()
    for m in ms:
        m.sync()
    # concurrent: A pins, B forgets (archive), C edits the text; all touch `rid`; plus uses
    manage.set_pinned(a.home, rid, True)
    manage.forget(b.home, [(b.rec(x["id"]), records.RecordStore(b.home.records).path_of(b.rec(x["id"])))])
    manage.update(c.home, rid, lambda r: r.update(text="deploys happen from main, tagged", updated="2030-01-01T00:00:00Z") or True)
    manage.mark_used(b.home, [rid], at="2030-01-02T00:00:00Z")
    manage.mark_used(c.home, [y["id"]], at="2030-01-03T00:00:00Z")
    a.remember("a fact only A knows", t=20)
    c.remember("a fact only C knows", t=21)
    return rid, x["id"], y["id"]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_three_machines_any_order_converge(tmp_path, remote, order):
    ms = [Machine(tmp_path, remote, n) for n in "abc"]
    rid, xid, yid = _scenario(ms)
    for i in order:
        ms[i].sync()
    files = converge([ms[i] for i in order])
    r = ms[0].rec(rid)
    assert r["pinned"] and r["text"] == "deploys happen from main, tagged"
    assert "2030-01-02T00:00:00Z" in r["used"]
    assert ms[1].rec(xid)["status"] == "archived"
    assert "2030-01-03T00:00:00Z" in ms[0].rec(yid)["used"]
    texts = b"".join(files.values())
    assert b"a fact only A knows" in texts and b"a fact only C knows" in texts


def test_forget_hard_is_not_resurrected(tmp_path, remote):
    ms = a, b, c = [Machine(tmp_path, remote, n) for n in "abc"]
    doomed = a.remember("the staging password rotates weekly", t=1)
    keep = a.remember("staging lives in eu-west-1", t=2)
    converge(ms)
    # B changes it (a use, a pin) while A deletes it for good; C links to it
    manage.mark_used(b.home, [doomed["id"]], at="2030-01-01T00:00:00Z")
    manage.set_pinned(b.home, doomed["id"], True)
    manage.update(c.home, keep["id"], lambda r: r.update(related=[doomed["id"]]) or True)
    manage.forget(a.home, manage.find_targets(a.home, doomed["id"])[0], hard=True)
    for order in ([1, 2, 0], [0, 1, 2], [2, 0, 1]):
        for i in order:
            ms[i].sync()
    files = converge(ms)
    assert not any(doomed["id"] in name for name in files)
    assert all(m.rec(doomed["id"]) is None for m in ms)
    assert doomed["id"] not in (c.rec(keep["id"]).get("related") or [])
    tree = git("--git-dir", remote, "ls-tree", "-r", "--name-only", "main")
    assert "tombstones/%s" % doomed["id"] in tree
    # seen again on a machine that had it: gone again at its next sync
    b.remember("the staging password rotates weekly", t=5)
    b.sync()
    assert b.rec(doomed["id"]) is None


def test_planted_secret_never_reaches_the_remote(tmp_path, remote):
    a, b = Machine(tmp_path, remote, "a"), Machine(tmp_path, remote, "b")
    secret = "AKIA" + "QWERTYUIOPASDFGH"
    ghp = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    good = a.remember("the bucket is shop-assets in eu-west-1", t=1)
    converge([a, b])
    def hand_edit(rec):  # a file written past the record store (which redacts), as a person's editor would
        with open(records.record_path(a.home.records, rec), "w", encoding="utf-8") as f:
            f.write(records.dump(rec))

    hand_edit(dict(a.rec(good["id"]), id="r00000000000000aa", text="aws key %s for the bucket" % secret))
    # a record both sides changed, where A's side carries a secret
    hand_edit(dict(a.rec(good["id"]), text="bucket token %s" % ghp, updated="2031-01-01T00:00:00Z"))
    manage.mark_used(b.home, [good["id"]], at="2030-05-05T00:00:00Z")
    b.sync()
    res = a.sync()
    held = {h["id"] for h in res["held"]}
    assert {"r00000000000000aa", good["id"]} <= held
    b.sync()
    hist = remote_history(remote)
    assert secret not in hist and ghp not in hist
    assert b.rec("r00000000000000aa") is None
    assert secret in a.rec("r00000000000000aa")["text"]  # held back, still here


def test_rejected_push_and_unreachable_remote_leave_the_home_untouched(tmp_path, remote):
    a, b = Machine(tmp_path, remote, "a"), Machine(tmp_path, remote, "b")
    a.remember("orders are numbered per year", t=1)
    converge([a, b])
    b.remember("invoices are pdf only", t=2)
    a.remember("refunds need two approvals", t=3)
    a.sync()
    hook = os.path.join(remote, "hooks", "pre-receive")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\necho 'read only' >&2\nexit 1\n")
    os.chmod(hook, 0o755)
    before = b.files()
    base = git("--git-dir", S.repo_dir(b.home), "rev-parse", "main")
    with pytest.raises(CortexError) as e:
        b.sync()
    assert "refused" in str(e.value) and "nothing changed here" in e.value.hint
    assert b.files() == before
    assert git("--git-dir", S.repo_dir(b.home), "rev-parse", "main") == base
    os.unlink(hook)
    os.rename(remote, remote + ".away")
    with pytest.raises(CortexError) as e:
        b.sync()
    assert "cannot fetch" in str(e.value)
    assert b.files() == before
    os.rename(remote + ".away", remote)
    converge([a, b])
    assert len(a.files()) == 3


def test_cli_one_line_and_exit_1(tmp_path, remote, capsys, monkeypatch):
    from cortex.cli.main import main
    a = Machine(tmp_path, remote, "a")
    monkeypatch.setenv("CORTEX_HOME", a.home.root)
    a.remember("logs are kept 30 days", t=1)
    assert main(["sync", "--dry-run"]) == 0
    assert "would send" in capsys.readouterr().out
    assert main(["sync"]) == 0
    assert "1 sent" in capsys.readouterr().out
    os.rename(remote, remote + ".away")
    assert main(["sync"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cortex: cannot fetch")
    assert main(["sync", "status"]) == 0


def test_only_chosen_records_travel(tmp_path, remote):
    cfg = "sync:\n  domains: ['team']\n  projects: []\n"
    a = Machine(tmp_path, remote, "a", config=cfg)
    a.remember("a private project note", t=1)
    a.remember("a personal preference of mine", rtype="preference", t=2)  # domain 'personal': not chosen
    assert a.sync()["sent"] == 0
    assert "private project note" not in remote_history(remote)
    with open(a.home.config_yaml, "w") as f:
        f.write("sync:\n  domains: ['team']\n  projects: ['%s/*']\n" % os.path.dirname(a.proj))
    # a path glob matches the folders Cortex has seen sessions in
    from cortex.core.fsutil import atomic_write_text
    import json
    atomic_write_text(a.home.cursors, json.dumps({"/x.jsonl": {"offset": 0, "cwd": a.proj}}))
    assert a.sync()["sent"] == 1
    assert "private project note" in remote_history(remote)
    assert "personal preference" not in remote_history(remote)


def test_after_normalize_hook(tmp_path, remote, monkeypatch):
    from cortex.cli.sync import after_normalize
    a, b = Machine(tmp_path, remote, "a"), Machine(tmp_path, remote, "b")
    a.remember("the api is versioned in the path", t=1)
    assert after_normalize(a.home, quiet=True) == 0 and remote_history(remote) == ""  # not turned on
    with open(a.home.config_yaml, "a") as f:
        f.write("  after_normalize: true\n")
    assert after_normalize(a.home, quiet=True) == 0
    assert "versioned in the path" in remote_history(remote)


def test_migrate_moves_path_ids_to_repository_ids(tmp_path, remote):
    a = Machine(tmp_path, remote, "a", init=False)
    old = legacy_project_id(a.proj)
    assert old != a.pid
    store = records.RecordStore(a.home.records)
    recs = []
    for i, text in enumerate(["uses celery for jobs", "jobs retry three times"]):
        at = "2026-01-0%dT00:00:00Z" % (i + 1)
        recs.append({"id": records.make_id(old, "learned", records.normalize_text(text)), "scope": "L0",
                     "scope_id": old, "project": "shop", "type": "learned", "status": "active", "confidence": 0.8,
                     "salience": 0.5, "pinned": False, "priority": 0, "created": at, "updated": at, "seen": [at],
                     "used": [], "tokens": 10, "branch": None, "files": [],
                     "provenance": [{"client": "cli", "session": "s%d" % i, "layer": "manual", "at": at}], "text": text})
    recs[1]["related"] = [recs[0]["id"]]
    for r in recs:
        store.write(r)
    pref = dict(recs[0], id="r" + "1" * 16, scope="L1", scope_id="personal", related=[recs[1]["id"]], text="x pref")
    store.write(pref)
    moved = S.migrate(a.home, folders=[a.proj])
    assert moved == [(old, a.pid, 2)]
    assert not os.path.exists(os.path.join(a.home.records, "L0", old))
    new_ids = {records.make_id(a.pid, "learned", records.normalize_text(r["text"])) for r in recs}
    got = {r["id"] for r in (records.read(p) for p in records.iter_paths(a.home.records)) if r["scope"] == "L0"}
    assert got == new_ids
    second = a.rec(records.make_id(a.pid, "learned", records.normalize_text(recs[1]["text"])))
    assert second["related"] == [records.make_id(a.pid, "learned", records.normalize_text(recs[0]["text"]))]
    assert a.rec(pref["id"])["related"][0] in new_ids
    assert "celery" in a.block()  # the index was rebuilt
    assert S.migrate(a.home, folders=[a.proj]) == []


KILLER = r"""
import sys
from cortex.cli.main import main
sys.exit(main(["sync"]))
"""


def test_kill_in_the_middle_of_a_sync(tmp_path, remote):
    ms = a, b = [Machine(tmp_path, remote, n) for n in "ab"]
    rng = random.Random(11)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    made = set()
    for step in range(10):
        m = ms[step % 2]
        for j in range(rng.randint(1, 8)):
            made.add(m.remember("fact %d-%d from %s" % (step, j, "ab"[step % 2]), t=step * 10 + j)["id"])
        here = sorted(i for i in made if m.rec(i))
        if rng.random() < 0.5:
            manage.set_pinned(m.home, here[rng.randrange(len(here))], True)
        p = subprocess.Popen([sys.executable, "-c", KILLER], env=dict(env, CORTEX_HOME=m.home.root),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 1.2))
        p.send_signal(signal.SIGKILL)
        p.wait()
    files = converge(ms)
    ids = {os.path.basename(k)[:-3] for k in files}
    assert made <= ids  # nothing lost
    assert len(files) == len(made)
