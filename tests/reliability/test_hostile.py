"""Hostile input: hook payloads whose session_id / cwd / transcript_path try to reach outside the Cortex home
(`../`, absolute paths to other files, symlinks, FIFOs, devices, NUL bytes, newlines, shell metacharacters),
symlinks planted in the inbox, and YAML that asks for Python objects.

What "a transcript path Cortex may touch" means (docs/reliability.md, "Legitimately named transcripts"):
absolute, no NUL or newline, at most 4096 bytes, ending in .jsonl/.json, whose last component is not a symbolic
link and names a regular file, and whose first bytes are a known client's transcript (the adapters' sniff).
Anything else in transcript_path is kept in the event as text and never opened, linked or copied.
"""
from __future__ import annotations

import glob
import json
import os
import stat
from pathlib import Path

import pytest

from cortex.ingest import adapters
from .helpers import (all_event_names, copy_fixture, diff_snapshots, env_for, event_names, hook_payload, make_home,
                      read_log, reason_of, record_files, report, run_measured, script, snapshot)

EVENT_LIKE = {"schema": "cortex.event/1", "kind": "stop", "captured_at": "2026-01-01T00:00:00.000Z",
              "client": "claude-code", "parsed": True,
              "payload": {"session_id": "s", "transcript_path": "/etc/passwd", "cwd": "/"},
              "transcript": {"path": None, "size": None, "mtime": None, "blob": None, "blob_kind": None}}


def _outside(tmp_path):
    """Decoys outside the home: files a hostile payload may name, and a legitimate transcript."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("TOP-SECRET-DECOY-CONTENT\n")
    (out / "data.jsonl").write_text(json.dumps({"user": "root", "password": "hunter2-decoy"}) + "\n")
    (out / "config.json").write_text(json.dumps({"token": "decoy-token-value"}))
    (out / "event.json").write_text(json.dumps(EVENT_LIKE))
    os.symlink("/etc/passwd", out / "passwd-link.jsonl")
    os.symlink(out / "secret.txt", out / "secret-link.jsonl")
    os.mkfifo(out / "fifo.jsonl")
    (out / "a-dir.jsonl").mkdir()
    return out


def _hostile_payloads(tmp_path, out, legit):
    meta = hook_payload(legit)
    base = dict(meta)
    shell = "$(touch %s/pwned-1); `touch %s/pwned-2`; touch %s/pwned-3 #" % (out, out, out)
    cases = []
    for sid in ("../../../outside/pwned-sid", "/etc/passwd", "a\x00b", "line1\nline2", shell, "..", "."):
        cases.append(("session_id=%r" % sid[:30], dict(base, session_id=sid)))
    for cwd in ("../../outside", str(out / ".." / ".." / ".."), "/etc", "/", shell, "a\nb", "x\x00y", "",
                "~/../../root"):
        cases.append(("cwd=%r" % cwd[:30], dict(base, cwd=cwd)))
    for tp in ("/etc/passwd", "/etc/shadow", "/proc/self/environ", "/dev/zero", "/dev/stdin",
               str(out / "data.jsonl"), str(out / "config.json"), str(out / "passwd-link.jsonl"),
               str(out / "secret-link.jsonl"), str(out / "fifo.jsonl"), str(out / "a-dir.jsonl"),
               "../outside/data.jsonl", "outside/data.jsonl", str(out / ".." / "outside" / "data.jsonl"),
               str(legit) + "\x00.txt", str(legit) + "\n", "file://" + str(legit), "~/" + legit.name,
               shell + ".jsonl", str(out / "missing.jsonl")):
        cases.append(("transcript_path=%r" % tp[-40:], dict(base, transcript_path=tp)))
    cases.append(("all at once", dict(base, session_id="../" * 20 + "x", cwd="../" * 20,
                                      transcript_path="/" + "../" * 20 + "etc/passwd.jsonl")))
    return cases


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hostile")
    out = _outside(tmp_path)
    legit = copy_fixture("cc-1.0.98", tmp_path / "client")
    home = make_home(tmp_path / "home")
    env = env_for(home)
    before = snapshot(tmp_path, exclude=[home.root])
    etc_before = {p: os.stat(p) for p in ("/etc/passwd",)}
    cases = _hostile_payloads(tmp_path, out, legit)
    rcs = []
    for label, payload in cases:
        raw = json.dumps(payload).encode()
        rc, o, e, _rss, _s = run_measured(script("cortex-stop", "--client", "claude-code"), env, raw, cwd=str(out))
        rcs.append((label, rc, o + e))
    for flag in ("../../outside/x", "claude-code; touch %s/pwned-4" % out):
        rc, o, e, _rss, _s = run_measured(script("cortex-stop", "--client", flag), env,
                                          json.dumps(hook_payload(legit)).encode(), cwd=str(out))
        rcs.append(("--client %r" % flag, rc, o + e))
    rc, o, e, _rss, _s = run_measured(script("cortex-normalize"), env, cwd=str(out))
    assert rc == 0, e
    rc, o2, e2, _rss, _s = run_measured(script("cortex-session-start", "--cwd", str(out)), env, cwd=str(out))
    assert rc == 0
    after = snapshot(tmp_path, exclude=[home.root])
    return {"home": home, "out": out, "legit": legit, "cases": cases, "rcs": rcs, "changes":
            diff_snapshots(before, after), "etc_before": etc_before, "tmp_path": tmp_path}


def test_hostile_payloads_touch_nothing_outside_the_home(hostile_run):
    r = hostile_run
    assert [x for x in r["rcs"] if x[1] != 0 or x[2]] == []  # every hook exits 0 and prints nothing
    pwned = glob.glob(str(r["tmp_path"] / "**" / "pwned*"), recursive=True) + glob.glob("/tmp/pwned*")
    ev = all_event_names(r["home"])
    report("hostile: payloads", payloads=len(r["rcs"]), files_changed_outside_home=len(r["changes"]),
           shell_injections_run=len(pwned), events_done=len(ev["done"]), events_failed=len(ev["failed"]))
    assert r["changes"] == []
    assert pwned == []
    for p, st in r["etc_before"].items():
        now = os.stat(p)
        assert (now.st_mtime_ns, now.st_size) == (st.st_mtime_ns, st.st_size)
    # every event is accounted for, and every Cortex file is inside the home
    assert len(ev["done"]) + len(ev["failed"]) == len(r["rcs"]) and not ev["pending"] and not ev["claimed"]
    for dirpath, _dirs, files in os.walk(r["home"].root):
        for n in files:
            assert os.path.realpath(os.path.join(dirpath, n)).startswith(r["home"].root + os.sep) or \
                os.path.dirname(os.path.join(dirpath, n)) == r["home"].blobs


def test_hostile_project_ids_and_record_paths_stay_inside_records(hostile_run):
    home = hostile_run["home"]
    for rel in record_files(home):
        parts = Path(rel).parts
        assert len(parts) == 3 and parts[0] in ("L0", "L1") and parts[1] not in ("..", ".", "")
        assert "\x00" not in rel and "\n" not in rel and "/" not in parts[1]
    names = os.listdir(home.blobs) if os.path.isdir(home.blobs) else []
    assert all("/" not in n and not n.startswith(".") and ".." not in n.split(".")[0] for n in names), names


def test_capture_links_and_copies_only_legitimate_transcripts(hostile_run):
    home, out, legit = hostile_run["home"], hostile_run["out"], hostile_run["legit"]
    decoys = {}
    for p in list(out.iterdir()) + [Path("/etc/passwd")]:
        try:
            st = os.stat(p)  # the target of a link
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            decoys[(st.st_dev, st.st_ino)] = str(p)
            decoys[("content", Path(p).read_bytes())] = str(p)
    legit_ino = (os.stat(legit).st_dev, os.stat(legit).st_ino)
    bad = []
    for n in sorted(os.listdir(home.blobs)):
        bp = os.path.join(home.blobs, n)
        st = os.lstat(bp)
        key = (st.st_dev, st.st_ino)
        if key in decoys or ("content", Path(bp).read_bytes()) in decoys:
            bad.append((n, decoys.get(key) or decoys.get(("content", Path(bp).read_bytes()))))
        elif key != legit_ino and adapters.detect(bp) is None:
            bad.append((n, "not a transcript"))
    report("hostile: blobs", blobs=len(os.listdir(home.blobs)), non_transcripts_linked_or_copied=len(bad),
           which=sorted({os.path.basename(b[1]) for b in bad}))
    assert bad == []


def test_symlinks_in_the_inbox_are_quarantined_not_followed(tmp_path):
    out = _outside(tmp_path)
    home = make_home(tmp_path / "home").ensure()
    links = {
        "1000.Plink1.host.json": out / "event.json",          # a valid-looking event outside the home
        "1001.Plink2.host.json": Path("/etc/passwd"),
        "1002.Plink3.host.json": out / "no-such-file.json",   # dangling
        "1003.Plink4.host.json": out,                         # a directory
    }
    for name, target in links.items():
        os.symlink(target, os.path.join(home.inbox_dir("pending"), name))
    os.symlink(out / "event.json", os.path.join(home.inbox_dir("claimed"), "1004.Plink5.host.json"))
    # a blob that is a symlink to a file outside, named by an event whose transcript is gone
    os.symlink(out / "data.jsonl", os.path.join(home.blobs, "evil.1.2.jsonl"))
    ev = dict(EVENT_LIKE, payload={"session_id": "s", "transcript_path": str(out / "gone.jsonl"), "cwd": "/"},
              transcript={"path": str(out / "gone.jsonl"), "size": 1, "mtime": 1.0, "blob": "evil.1.2.jsonl",
                          "blob_kind": "link"})
    Path(home.inbox_dir("pending"), "1005.Pblob.host.json").write_text(json.dumps(ev))
    before = snapshot(tmp_path, exclude=[home.root])
    rc, o, e, _rss, _s = run_measured(script("cortex-normalize"), env_for(home))
    assert rc == 1, e  # every event it took was quarantined: exit 1 (docs/commands.md)
    assert diff_snapshots(before, snapshot(tmp_path, exclude=[home.root])) == []
    failed = set(event_names(home, "failed"))
    for name in list(links) + ["1004.Plink5.host.json"]:
        assert name in failed
        assert os.path.islink(os.path.join(home.inbox_dir("failed"), name))  # moved as a link, never followed
        assert "symbolic link" in reason_of(home, name)
    assert "1005.Pblob.host.json" in failed
    assert "is gone" in reason_of(home, "1005.Pblob.host.json")
    assert record_files(home) == {}
    log = read_log(home)
    assert "hunter2-decoy" not in log and "TOP-SECRET" not in log
    report("hostile: inbox symlinks", symlinks=len(links) + 2, quarantined=len(failed), followed=0)


# ----------------------------------------------------------------------------------------- YAML

PYTHON_TAGS = [
    "!!python/object/apply:os.system ['touch {pwned}']",
    "!!python/object/apply:subprocess.check_output [['touch', '{pwned}']]",
    "!!python/name:os.system",
    "!!python/object/new:os.system ['touch {pwned}']",
    "!!python/module:os",
]


@pytest.mark.parametrize("tag", PYTHON_TAGS)
def test_yaml_python_tags_in_a_record_are_rejected_and_never_run(tmp_path, tag):
    from cortex.store import records
    home = make_home(tmp_path / "home").ensure()
    pwned = tmp_path / "pwned"
    folder = Path(home.records, "L0", "demo-12345678")
    folder.mkdir(parents=True)
    text = ("---\nid: r0123456789abcdef\nscope: L0\nscope_id: demo-12345678\ntype: decision\n"
            "status: %s\n---\nhello\n" % tag.format(pwned=pwned))
    rec_path = folder / "r0123456789abcdef.md"
    rec_path.write_text(text)
    with pytest.raises(records.RecordError):
        records.parse(text)
    rc, o, e, _rss, _s = run_measured(script("cortex", "reindex"), env_for(home))
    assert rc == 1 and b"r0123456789abcdef" in e
    assert not pwned.exists()
    assert rec_path.read_text() == text


def test_yaml_python_tags_in_config_are_refused_with_one_line(tmp_path):
    home = make_home(tmp_path / "home").ensure()
    pwned = tmp_path / "pwned"
    Path(home.config_yaml).write_text("session_start:\n  max_records: !!python/object/apply:os.system "
                                      "['touch %s']\n" % pwned)
    Path(home.inbox_dir("pending"), "1.P1.h.json").write_text(json.dumps(EVENT_LIKE))
    rc, o, e, _rss, _s = run_measured(script("cortex-normalize"), env_for(home))
    assert not pwned.exists()
    # the run goes on with the defaults (memory is never silenced), then says what is wrong, exit 2
    assert rc == 2 and b"Traceback" not in e, e
    assert e.splitlines()[-1].startswith(b"cortex: ") and b"config.yaml" in e.splitlines()[-1]
    assert event_names(home, "pending") == []  # taken by the run, nothing lost
