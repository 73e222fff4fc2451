"""The capture hooks (bin/cortex-stop, bin/cortex-pre-compact), run as the client runs them: a subprocess
with the hook JSON on stdin.  They must drop exactly one event, print nothing and exit 0 whatever happens."""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cortex_testkit import BIN, HEAVY_MODULES, REPO, TRANSCRIPTS, clean_env, copy_fixture, events_in, names, normalize, run_bin
from cortex.core.home import Home
from cortex.core.schemas import validate

HOOKS = [("cortex-stop", "stop"), ("cortex-pre-compact", "pre_compact")]


def only_event(home: Home) -> dict:
    pending = names(home, "pending")
    assert len(pending) == 1, pending
    with open(os.path.join(home.inbox_dir("pending"), pending[0]), encoding="utf-8") as f:
        return json.load(f)


def assert_silent_success(proc):
    assert proc.returncode == 0
    assert proc.stdout == b""
    assert proc.stderr == b""


@pytest.fixture
def transcript(tmp_path) -> Path:
    return copy_fixture("cc-1.0.98", tmp_path / "client")


# --------------------------------------------------------------------------- valid payloads

@pytest.mark.parametrize("script,kind", HOOKS)
def test_valid_payload_drops_one_complete_event(home, transcript, script, kind):
    payload = {"session_id": "1af7fc5e-8455-4414-9ccd-011d40f70b2a", "transcript_path": str(transcript),
               "cwd": "/path/to/Demo", "hook_event_name": "Stop" if kind == "stop" else "PreCompact",
               "trigger": "auto" if kind == "pre_compact" else None}
    before = time.time()
    proc = run_bin(script, "--client", "claude-code", stdin=json.dumps(payload).encode(), home=home)
    assert_silent_success(proc)

    assert names(home, "tmp") == []
    event = only_event(home)
    assert validate("event", event) == []
    assert event["schema"] == "cortex.event/1"
    assert event["kind"] == kind
    assert event["client"] == "claude-code"
    assert event["parsed"] is True
    assert event["payload"] == payload
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["captured_at"])
    captured = time.mktime(time.strptime(event["captured_at"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert before - 5 <= captured <= time.time() + 5

    tr = event["transcript"]
    assert tr["path"] == str(transcript)
    assert tr["size"] == transcript.stat().st_size
    assert tr["mtime"] == pytest.approx(transcript.stat().st_mtime)
    assert tr["blob_kind"] == "link"
    blob = Path(home.blobs) / tr["blob"]
    assert blob.read_bytes() == transcript.read_bytes()
    assert blob.stat().st_ino == transcript.stat().st_ino  # a hard link, not a copy
    assert os.listdir(home.blobs) == [tr["blob"]]


def test_client_is_detected_from_environment_and_path(home, tmp_path):
    t = copy_fixture("cc-1.0.98", tmp_path / ".claude" / "projects")
    payload = json.dumps({"session_id": "s", "transcript_path": str(t)}).encode()
    # no flag, no client variables: the path decides
    assert_silent_success(run_bin("cortex-stop", stdin=payload, home=home))
    # a client variable beats the path
    env = clean_env(home, CODEX_HOME="/x")
    assert_silent_success(run_bin("cortex-stop", stdin=payload, env=env))
    # the installed hook's --client flag beats both
    assert_silent_success(run_bin("cortex-stop", "--client", "gemini", stdin=payload, env=env))
    got = []
    for n in names(home, "pending"):
        with open(os.path.join(home.inbox_dir("pending"), n)) as f:
            ev = json.load(f)
        got.append((ev["captured_at"], n, ev["client"]))
    assert sorted(c for *_, c in got) == ["claude-code", "codex", "gemini"]


def test_same_transcript_captured_twice_shares_one_blob(home, transcript):
    payload = json.dumps({"session_id": "abc", "transcript_path": str(transcript)}).encode()
    for _ in range(2):
        assert_silent_success(run_bin("cortex-stop", "--client", "claude-code", stdin=payload, home=home))
    assert len(names(home, "pending")) == 2
    assert len(os.listdir(home.blobs)) == 1


def test_transcript_path_with_spaces(home, tmp_path):
    folder = tmp_path / "my projects" / "a dir with  spaces"
    folder.mkdir(parents=True)
    t = folder / "session one.jsonl"
    t.write_bytes(copy_fixture("cc-1.0.98", tmp_path / "c").read_bytes())
    proc = run_bin("cortex-stop", "--client", "claude-code",
                   stdin=json.dumps({"session_id": "x y", "transcript_path": str(t)}).encode(), home=home)
    assert_silent_success(proc)
    ev = only_event(home)
    assert ev["transcript"]["path"] == str(t)
    assert ev["transcript"]["size"] == t.stat().st_size
    assert (Path(home.blobs) / ev["transcript"]["blob"]).read_bytes() == t.read_bytes()
    # and the normalizer reads it
    stats = normalize(home)
    assert stats["done"] == 1 and stats["failed"] == 0 and stats["created"] >= 1


# --------------------------------------------------------------------------- garbage in

GARBAGE = {
    "not-json": b"this is not json {",
    "empty": b"",
    "invalid-utf8": b'{"session_id": "\xff\xfe\x80"}',
    "json-list": b'[{"session_id": "a", "transcript_path": "/tmp/x.jsonl"}]',
    "json-string": b'"hello"',
    "truncated": b'{"session_id": "abc", "transcript_path": "/tm',
    "nul-bytes": b"\x00\x00\x00",
}


@pytest.mark.parametrize("script,kind", HOOKS)
@pytest.mark.parametrize("label", sorted(GARBAGE))
def test_garbage_stdin_is_kept_not_fatal(home, script, kind, label):
    raw = GARBAGE[label]
    proc = run_bin(script, stdin=raw, home=home)
    assert_silent_success(proc)
    event = only_event(home)
    assert validate("event", event) == []
    assert event["parsed"] is False
    assert event["payload"] is None
    assert event["kind"] == kind
    assert event["raw"] == raw.decode("utf-8", "backslashreplace")
    assert event["error"]
    assert os.listdir(home.blobs) == []


def test_unparsed_event_is_quarantined_with_its_raw_input(home):
    assert_silent_success(run_bin("cortex-stop", stdin=b"garbage here", home=home))
    name = names(home, "pending")[0]
    normalize(home)
    assert events_in(home, "failed") == [name]
    reason = Path(home.inbox_dir("failed"), name + ".reason.txt").read_text()
    assert "not a JSON object" in reason
    assert json.loads(Path(home.inbox_dir("failed"), name).read_text())["raw"] == "garbage here"


# --------------------------------------------------------------------------- paths the hook must not touch

@pytest.mark.parametrize("given", [
    "C:\\Users\\me\\proj\\x.jsonl",   # Windows-style: a relative name on POSIX
    "../x.jsonl",
    "x.jsonl",
    "./sub/../x.jsonl",
    "~/x.jsonl",
])
def test_non_absolute_transcript_paths_are_recorded_but_never_touched(home, tmp_path, given):
    work = tmp_path / "work"
    inner = work / "inner"
    (inner / "sub").mkdir(parents=True)
    # make every candidate resolve to a real file, so touching it would be possible
    bait = {}
    for p in (inner / given, (inner / given).resolve(), work / "x.jsonl", inner / "x.jsonl"):
        if not p.parent.exists():
            continue
        p.write_text('{"type":"user"}\n')
        bait[p] = p.stat()
    proc = run_bin("cortex-stop", "--client", "claude-code",
                   stdin=json.dumps({"session_id": "s1", "transcript_path": given}).encode(), home=home,
                   cwd=str(inner), env=clean_env(home, HOME=str(inner)))
    assert_silent_success(proc)
    ev = only_event(home)
    assert validate("event", ev) == []
    assert ev["transcript"] == {"path": given, "size": None, "mtime": None, "blob": None, "blob_kind": None}
    assert os.listdir(home.blobs) == []
    for p, st in bait.items():
        assert p.stat().st_nlink == 1 and p.stat().st_ino == st.st_ino, p
    # the normalizer refuses it with a reason, and does not read the file either
    normalize(home)
    failed = events_in(home, "failed")
    assert len(failed) == 1
    assert "not an absolute path" in Path(home.inbox_dir("failed"), failed[0] + ".reason.txt").read_text()


@pytest.mark.parametrize("kind", ["no-suffix", "directory", "missing", "fifo"])
def test_absolute_paths_that_are_not_transcripts_are_not_linked(home, tmp_path, kind):
    if kind == "no-suffix":
        target = tmp_path / "secrets.txt"
        target.write_text("s3cret")
    elif kind == "directory":
        target = tmp_path / "dir.jsonl"
        target.mkdir()
    elif kind == "fifo":
        target = tmp_path / "pipe.jsonl"
        os.mkfifo(target)
    else:
        target = tmp_path / "nowhere" / "gone.jsonl"
    proc = run_bin("cortex-stop", "--client", "claude-code", timeout=20,
                   stdin=json.dumps({"session_id": "s1", "transcript_path": str(target)}).encode(), home=home)
    assert_silent_success(proc)
    ev = only_event(home)
    assert ev["transcript"]["blob"] is None and ev["transcript"]["size"] is None
    assert os.listdir(home.blobs) == []
    if kind == "no-suffix":
        assert target.stat().st_nlink == 1


@pytest.mark.parametrize("kind", ["json-lines", "json-document", "empty", "package-json"])
def test_json_files_that_are_no_client_s_transcript_are_not_linked(home, tmp_path, kind):
    """Only a file that opens like a Claude Code, Codex or Gemini transcript is kept: a hook payload naming
    any other JSON file (by mistake or on purpose) must not give Cortex a copy of it."""
    target = tmp_path / {"json-document": "config.json", "package-json": "package.json"}.get(kind, "data.jsonl")
    target.write_bytes({"json-lines": b'{"type": "user", "name": "a"}\n{"type": "row", "v": 2}\n',
                        "json-document": b'{"api_key": "not-for-cortex", "messages": []}\n',
                        "empty": b"",
                        "package-json": b'{\n  "name": "x",\n  "version": "1.0.0"\n}\n'}[kind])
    proc = run_bin("cortex-stop", "--client", "claude-code", timeout=20,
                   stdin=json.dumps({"session_id": "s1", "transcript_path": str(target)}).encode(), home=home)
    assert_silent_success(proc)
    ev = only_event(home)
    assert ev["transcript"]["blob"] is None and ev["transcript"]["path"] == str(target)
    assert os.listdir(home.blobs) == []
    assert target.stat().st_nlink == 1


@pytest.mark.parametrize("name", sorted(TRANSCRIPTS))
def test_every_real_transcript_is_linked_and_sniffed_as_its_own_client(home, tmp_path, name):
    from cortex.ingest import adapters
    from cortex.clients import sniff
    path = copy_fixture(name, tmp_path / "client")
    proc = run_bin("cortex-stop", timeout=20, home=home,
                   stdin=json.dumps({"session_id": "s1", "transcript_path": str(path)}).encode())
    assert_silent_success(proc)
    ev = only_event(home)
    assert ev["transcript"]["blob_kind"] == "link"
    client = TRANSCRIPTS[name][2]
    assert sniff.client_of_file(str(path)) == client
    assert adapters.detect(str(path)).client == client


# --------------------------------------------------------------------------- broken homes

@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_home_is_silent(tmp_path, transcript):
    root = tmp_path / "ro"
    Home(str(root)).ensure()
    os.chmod(root / "inbox" / "pending", 0o500)
    os.chmod(root / "inbox" / "tmp", 0o500)
    try:
        proc = run_bin("cortex-stop", stdin=json.dumps({"transcript_path": str(transcript)}).encode(), home=root)
        assert_silent_success(proc)
        assert os.listdir(root / "inbox" / "pending") == []
    finally:
        os.chmod(root / "inbox" / "pending", 0o700)
        os.chmod(root / "inbox" / "tmp", 0o700)


def test_home_below_a_regular_file_is_silent(tmp_path, transcript):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    for script, _ in HOOKS:
        proc = run_bin(script, stdin=json.dumps({"transcript_path": str(transcript)}).encode(),
                       home=blocker / "home")
        assert_silent_success(proc)
    assert blocker.read_text() == "x"


def test_inbox_that_cannot_take_events_is_silent_and_logged(tmp_path, transcript):
    root = tmp_path / "home"
    (root / "inbox").mkdir(parents=True)
    (root / "inbox" / "pending").write_text("a file where a folder should be")
    proc = run_bin("cortex-stop", stdin=json.dumps({"transcript_path": str(transcript)}).encode(), home=root)
    assert_silent_success(proc)
    lines = [json.loads(l) for l in (root / "logs" / "cortex.log").read_text().splitlines()]
    assert lines and lines[-1]["event"] == "capture_failed" and lines[-1]["level"] == "error"
    assert lines[-1]["hook"] == "stop"
    assert os.listdir(root / "inbox" / "tmp") == []  # no half-written event left behind


def test_closed_stdin_is_silent(home):
    proc = subprocess.run([sys.executable, str(BIN / "cortex-stop")], stdin=subprocess.DEVNULL,
                          capture_output=True, env=clean_env(home), timeout=30)
    assert_silent_success(proc)
    assert only_event(home)["parsed"] is False


# --------------------------------------------------------------------------- concurrency and permissions

def test_fifty_parallel_hooks_give_fifty_distinct_events(home, transcript):
    procs = []
    for i in range(50):
        script = HOOKS[i % 2][0]
        p = subprocess.Popen([sys.executable, str(BIN / script), "--client", "claude-code"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=clean_env(home))
        procs.append((i, p))
    for i, p in procs:
        p.stdin.write(json.dumps({"session_id": "s%02d" % i, "transcript_path": str(transcript)}).encode())
        p.stdin.close()
    for i, p in procs:
        assert p.wait(timeout=60) == 0
        assert p.stdout.read() == b"" and p.stderr.read() == b""
        p.stdout.close()
        p.stderr.close()
    pending = names(home, "pending")
    assert len(pending) == 50 and len(set(pending)) == 50
    assert names(home, "tmp") == []
    sessions = set()
    for n in pending:
        with open(os.path.join(home.inbox_dir("pending"), n), encoding="utf-8") as f:
            ev = json.load(f)
        assert validate("event", ev) == []
        sessions.add(ev["payload"]["session_id"])
    assert sessions == {"s%02d" % i for i in range(50)}


def test_event_file_and_home_folders_are_private(home, transcript):
    proc = subprocess.run([sys.executable, str(BIN / "cortex-stop")], input=json.dumps(
        {"session_id": "s", "transcript_path": str(transcript)}).encode(), capture_output=True,
        env=clean_env(home), preexec_fn=lambda: os.umask(0o022), timeout=30)
    assert_silent_success(proc)
    ev_path = os.path.join(home.inbox_dir("pending"), names(home, "pending")[0])
    assert stat.S_IMODE(os.stat(ev_path).st_mode) == 0o600
    for d in (home.root, home.inbox, home.inbox_dir("pending"), home.inbox_dir("tmp"), home.blobs):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d


# --------------------------------------------------------------------------- hot path: standard library only

def _modules_after(code: str, home, stdin: bytes) -> set:
    proc = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, env=clean_env(home),
                          cwd=str(REPO), timeout=30)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stderr.decode().strip().splitlines()[-1]))


@pytest.mark.parametrize("kind", ["stop", "pre_compact"])
def test_capture_imports_only_the_standard_library(home, transcript, kind):
    baseline = _modules_after("import sys, json; sys.stderr.write(json.dumps(sorted(sys.modules)))", home, b"")
    code = ("import sys, json; sys.path.insert(0, %r); from cortex.capture import hook as capture; capture.capture(%r, []); "
            "sys.stderr.write(json.dumps(sorted(sys.modules)))" % (str(REPO), kind))
    mods = _modules_after(code, home, json.dumps({"session_id": "s", "transcript_path": str(transcript)}).encode())
    assert len(names(home, "pending")) == 1
    extra = mods - baseline
    assert {m.split(".")[0] for m in extra} <= set(sys.stdlib_module_names) | {"cortex"}, sorted(extra)
    assert {m for m in extra if m.startswith("cortex")} <= {"cortex", "cortex.capture", "cortex.core", "cortex.clients", "cortex.capture.hook", "cortex.clients.spec", "cortex.inbox", "cortex.inbox.maildir", "cortex.core.fsutil", "cortex.core.home",
                                                              "cortex.clients.sniff"}
    assert not [m for m in mods if m.split(".")[0] in HEAVY_MODULES]


def test_capture_script_imports_nothing_heavy(home, transcript):
    proc = run_bin("cortex-stop", stdin=json.dumps({"transcript_path": str(transcript)}).encode(), home=home,
                   python_flags=("-X", "importtime"))
    assert proc.returncode == 0 and proc.stdout == b""
    imported = {l.rsplit("|", 1)[1].strip() for l in proc.stderr.decode().splitlines()
                if l.startswith("import time:") and "|" in l}
    assert "cortex.capture.hook" in imported
    assert not [m for m in imported if m.split(".")[0] in HEAVY_MODULES]
