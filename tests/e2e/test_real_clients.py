"""Cortex end to end with the real Claude Code and Codex CLIs, offline, against local mock models.

Each test gets its own sandbox (HOME, TMPDIR, CODEX_HOME, Cortex home, git project) and its own mock
servers.  The loop under test is the product's: `cortex install` writes the hooks, the client runs
them, `cortex-normalize` turns the captured events into records, and the next session's request to
the model carries the memory.  A memory is a `[MEMORY: decision] …` line the mock writes in session
one, with a marker unique to the test; the check is that the decision's text is in the body of the
request a later, new session sends to the model (and, as a control, that it is not there before
the normalizer ran).

    python3 -m pytest -q tests/e2e -s          # prints the measured hook times
    python3 -m pytest -q -m "not e2e"          # everything else
"""
import json
import os
import secrets
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clients import Sandbox, body_has
from mock_models import SUMMARY_WORK, MockModel, decision_line, decision_text

pytestmark = pytest.mark.e2e

RUNS = max(int(os.environ.get("CORTEX_E2E_RUNS", "5") or 5), 1)


def marker(word: str) -> str:
    return "%s%s" % (word, secrets.token_hex(3))


def say(*lines):
    for line in lines:
        print("[e2e] %s" % line, flush=True)


@pytest.fixture
def sandbox(tmp_path, clis):
    sb = Sandbox(tmp_path / "sandbox", clis)
    sb.anthropic = MockModel("anthropic", log_path=str(tmp_path / "anthropic-requests.jsonl"), max_seconds=1200).start()
    sb.openai = MockModel("openai", log_path=str(tmp_path / "openai-requests.jsonl"), max_seconds=1200).start()
    sb.write_codex_config()
    try:
        yield sb
    finally:
        sb.anthropic.stop()
        sb.openai.stop()


def settings_commands(path) -> dict:
    """{event: [command, ...]} of a client settings / hooks file."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {ev: [h["command"] for g in groups for h in g["hooks"]] for ev, groups in data.get("hooks", {}).items()}


def install(sb: Sandbox, client: str, *where) -> str:
    r = sb.cortex("install", client, *where).check("cortex install %s" % client)
    assert "+ SessionStart" in r.stdout, r.stdout
    again = sb.cortex("install", client, *where).check("second cortex install %s" % client)
    assert "nothing changed" in again.stdout, again.stdout
    return r.stdout


def agent_messages(result) -> list:
    return [o["item"]["text"] for o in result.json_lines()
            if o.get("type") == "item.completed" and (o.get("item") or {}).get("type") == "agent_message"]


def where_found(requests, text) -> str:
    """Which part of a request carries text: 'messages[3] role=system', 'input[2] role=developer', …"""
    for r in requests:
        body = r.get("body") or {}
        for key in ("messages", "input"):
            for i, m in enumerate(body.get(key) or []):
                if isinstance(m, dict) and text in json.dumps(m, ensure_ascii=False):
                    return "%s[%d] role=%s" % (key, i, m.get("role") or m.get("type"))
        if text in json.dumps(body.get("system"), ensure_ascii=False):
            return "system"
    return "nowhere"


# ----------------------------------------------------------------------------------------- Claude Code

def test_claude_code_memory_reaches_a_new_session(sandbox):
    sb = sandbox
    out = install(sb, "claude-code", "--project", str(sb.project))
    cmds = settings_commands(sb.project / ".claude" / "settings.json")
    assert sorted(cmds) == ["PreCompact", "SessionEnd", "SessionStart", "Stop", "UserPromptSubmit"]
    assert all(c.endswith("--client claude-code") for cs in cmds.values() for c in cs), out

    m = marker("orchid")
    mark = sb.anthropic.mark()
    r1 = sb.claude("MEMO:%s RUN_TOOL set up the cache" % m, "--allowedTools", "Bash")
    sid1 = sb.claude_session_id(r1)
    kinds = [q["reply_kind"] for q in sb.anthropic.model_requests(mark)]
    assert "tool_call" in kinds and "after_tool" in kinds, "the Bash tool call did not round-trip: %s" % kinds
    assert decision_line(m) in json.loads(r1.stdout)["result"]

    evs = sb.event_docs()
    assert [e["payload"]["hook_event_name"] for e in evs] == ["Stop", "SessionEnd"], evs
    for e in evs:
        assert (e["kind"], e["client"], e["parsed"]) == ("stop", "claude-code", True)
        assert e["payload"]["session_id"] == sid1
        assert e["transcript"]["blob"], "the transcript was not linked into the inbox"

    mark = sb.anthropic.mark()
    sb.claude("what should we do next?")
    assert not body_has(sb.anthropic.model_requests(mark), decision_text(m)), \
        "control failed: the decision reached a session before the normalizer ran"

    sb.normalize()
    assert any(decision_text(m) in r["text"] and r["type"] == "decision" for r in sb.records())

    mark = sb.anthropic.mark()
    r2 = sb.claude("what did we decide about the cache?")
    reqs = sb.anthropic.model_requests(mark)
    assert sb.claude_session_id(r2) != sid1
    assert body_has(reqs, decision_text(m)), "the decision from session 1 is not in session 2's request"
    say("claude-code: decision from session 1 found in session 2's request at %s" % where_found(reqs, decision_text(m)))

    r = sb.cortex("uninstall", "claude-code", "--project", str(sb.project)).check()
    assert r.stdout.count("\n  - ") == 5, r.stdout
    assert settings_commands(sb.project / ".claude" / "settings.json") == {}
    before = len(sb.events())
    mark = sb.anthropic.mark()
    sb.claude("anything else?")
    assert len(sb.events()) == before, "hooks still fired after cortex uninstall"
    assert not body_has(sb.anthropic.model_requests(mark), decision_text(m))


def test_claude_code_compaction(sandbox):
    sb = sandbox
    install(sb, "claude-code", "--project", str(sb.project))
    m = marker("maple")
    sid = sb.claude_session_id(sb.claude("MEMO:%s first steps" % m))
    sb.normalize()

    mark = sb.anthropic.mark()
    r = sb.claude("/compact", "--resume", sid, stream=True)
    assert "compact_summary" in [q["reply_kind"] for q in sb.anthropic.model_requests(mark)]
    hooks = [o for o in r.json_lines() if o.get("type") == "system" and o.get("subtype") == "hook_response"]
    compact = [o for o in hooks if o.get("hook_name") == "SessionStart:compact"]
    assert compact, "SessionStart(compact) did not run: %s" % [o.get("hook_name") for o in hooks]
    assert compact[0]["exit_code"] == 0
    assert decision_text(m) in compact[0]["output"], "SessionStart(compact) did not print the decision"

    pre = [e for e in sb.event_docs() if e["kind"] == "pre_compact"]
    assert len(pre) == 1, [e["kind"] for e in sb.event_docs()]
    p = pre[0]["payload"]
    assert (p["hook_event_name"], p["trigger"], p["session_id"], pre[0]["client"]) == \
        ("PreCompact", "manual", sid, "claude-code")

    sb.normalize()
    done = [json.load(open(f)) for f in sb.events("done")]
    assert any(e["kind"] == "pre_compact" for e in done)
    # the summary is split by its sections (docs/memory.md): current work and pending tasks become the
    # session's plan (what was being done, what remains), not one clipped paragraph
    kept = {r["type"]: r for r in sb.records() if r["type"] in ("plan", "todo", "summary", "progress")}
    plans = [r for r in sb.records() if r["type"] == "plan"]
    say("claude-code: after /compact the normalizer kept: %s" % sorted(kept))
    assert any(SUMMARY_WORK.rstrip(".") in json.dumps(r) for r in plans), "the summary's current work is not the plan"
    assert any("Add the cache eviction test" in json.dumps(r) for r in plans), "the summary's pending task is lost"

    # the installed SessionStart hook, run as Claude runs it after a compaction, now that the
    # pre_compact event is normalized: the session's own decision leads the block
    start_cmd = settings_commands(sb.project / ".claude" / "settings.json")["SessionStart"][0]
    payload = dict(p, hook_event_name="SessionStart", source="compact")
    out = subprocess.run(start_cmd, shell=True, input=json.dumps(payload), capture_output=True, text=True,
                         env=sb.env(), cwd=str(sb.project), timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("<cortex-memory"), out
    assert decision_text(m) in out.stdout

    mark = sb.anthropic.mark()
    sb.claude("continue where we left off", "--resume", sid)
    assert body_has(sb.anthropic.model_requests(mark), decision_text(m)), \
        "the decision is not in the request of the session resumed after compaction"


# ----------------------------------------------------------------------------------------- Codex

def test_codex_memory_reaches_a_new_session(sandbox):
    sb = sandbox
    out = install(sb, "codex", "--user")
    assert "/hooks" in out and "--dangerously-bypass-hook-trust" in out, "the trust instructions are missing"
    hooks_file = sb.codex_home / "hooks.json"
    cmds = settings_commands(hooks_file)
    assert sorted(cmds) == ["PreCompact", "SessionEnd", "SessionStart", "Stop", "UserPromptSubmit"]
    with open(hooks_file) as f:
        assert json.load(f)["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] <= 3

    m = marker("cedar")
    mark = sb.openai.mark()
    r1 = sb.codex("MEMO:%s RUN_TOOL set up the cache" % m)
    kinds = [q["reply_kind"] for q in sb.openai.model_requests(mark)]
    assert "tool_call" in kinds and "after_tool" in kinds, "the shell tool call did not round-trip: %s" % kinds
    assert any(decision_line(m) in t for t in agent_messages(r1))

    evs = sb.event_docs()
    names = [e["payload"]["hook_event_name"] for e in evs]
    assert names[0] == "Stop" and set(names) <= {"Stop", "SessionEnd"}, names
    for e in evs:
        assert (e["kind"], e["client"]) == ("stop", "codex")
        assert e["payload"]["transcript_path"].startswith(str(sb.codex_home / "sessions"))
    say("codex: hooks captured %s" % names)

    mark = sb.openai.mark()
    sb.codex("what should we do next?")
    assert not body_has(sb.openai.model_requests(mark), decision_text(m)), "control failed"

    sb.normalize()
    assert any(decision_text(m) in r["text"] for r in sb.records())

    mark = sb.openai.mark()
    sb.codex("what did we decide about the cache?")
    reqs = sb.openai.model_requests(mark)
    assert body_has(reqs, decision_text(m)), "the decision from session 1 is not in session 2's request"
    say("codex: decision from session 1 found in session 2's request at %s" % where_found(reqs, decision_text(m)))

    sb.cortex("uninstall", "codex", "--user").check()
    before = len(sb.events())
    mark = sb.openai.mark()
    sb.codex("anything else?")
    assert len(sb.events()) == before, "hooks still fired after cortex uninstall"
    assert not body_has(sb.openai.model_requests(mark), decision_text(m))


def test_codex_prompt_tag_is_kept(sandbox):
    """A [MEMORY: …] line the user writes in a Codex prompt becomes a record."""
    sb = sandbox
    install(sb, "codex", "--user")
    m = marker("birch")
    fact = "The %s service listens on port 7777" % m
    sb.codex("Note this.\n[MEMORY: gotcha] %s" % fact)
    sb.normalize()
    assert any(fact in r["text"] for r in sb.records()), [r["text"] for r in sb.records()]


# ----------------------------------------------------------------------------------------- both

def test_memory_crosses_clients_in_one_project(sandbox):
    sb = sandbox
    install(sb, "claude-code", "--project", str(sb.project))
    install(sb, "codex", "--user")

    from_codex = marker("aspen")
    sb.codex("MEMO:%s decide the cache" % from_codex)
    sb.normalize()
    mark = sb.anthropic.mark()
    sb.claude("what did we decide earlier?")
    assert body_has(sb.anthropic.model_requests(mark), decision_text(from_codex)), \
        "a memory written in a Codex session did not reach Claude Code"

    from_claude = marker("willow")
    sb.claude("MEMO:%s decide the cache" % from_claude)
    sb.normalize()
    mark = sb.openai.mark()
    sb.codex("what did we decide earlier?")
    reqs = sb.openai.model_requests(mark)
    assert body_has(reqs, decision_text(from_claude)), "a memory written in Claude Code did not reach Codex"
    assert body_has(reqs, decision_text(from_codex))

    by_text = {r["text"]: r for r in sb.records()}
    assert by_text[decision_text(from_codex)]["provenance"][0]["client"] == "codex"
    assert by_text[decision_text(from_claude)]["provenance"][0]["client"] == "claude-code"
    say("cross-client: codex -> claude-code and claude-code -> codex, one Cortex home, one project")


# ----------------------------------------------------------------------------------------- timings

def _median(xs):
    return round(statistics.median(xs), 3) if xs else None


def _replay(sb: Sandbox, command: str, payload: dict, cortex_home: Path, runs: int):
    """Run an installed hook command as the client does (through the shell, payload on stdin),
    each run followed by `python3 -c pass` through the shell under the same load.
    Returns (hook times, floor times)."""
    env = sb.env(CORTEX_HOME=str(cortex_home))
    data = json.dumps(payload)
    floor_cmd = "%s -c pass" % shlex.quote(sys.executable)
    hook, floor = [], []
    for _ in range(runs):
        for cmd, into in ((command, hook), (floor_cmd, floor)):
            t0 = time.perf_counter()
            p = subprocess.run(cmd, shell=True, input=data, capture_output=True, text=True, env=env,
                               cwd=str(sb.project), timeout=60)
            into.append(time.perf_counter() - t0)
            assert p.returncode == 0, (cmd, p.stderr)
    return hook, floor


def test_hook_timings(sandbox, tmp_path):
    """Wall time of each hook, and of whole client runs with and without the Cortex hooks."""
    sb = sandbox
    bare = sb.root / "bare-proj"
    from clients import _git_init
    _git_init(bare)
    bare_codex_home = sb.root / "codex_home_bare"
    sb.write_codex_config(bare_codex_home)
    install(sb, "claude-code", "--project", str(sb.project))
    install(sb, "codex", "--user")

    # memory to inject, so SessionStart does its real work
    sid = sb.claude_session_id(sb.claude("MEMO:%s seed" % marker("larch")))
    sb.codex("MEMO:%s seed" % marker("alder"))
    stop_payloads = {(e["client"], e["payload"]["hook_event_name"]): e["payload"] for e in sb.event_docs()}
    sb.normalize()

    # 1. the client's own view: hook_started -> hook_response in Claude's stream-json output
    in_client = {}
    with_hooks, without = {"claude-code": [], "codex": []}, {"claude-code": [], "codex": []}
    sb.claude("warm up", cwd=bare)
    sb.codex("warm up", codex_home=bare_codex_home)
    for i in range(RUNS):
        r = sb.claude("timing run %d" % i, stream=True)
        with_hooks["claude-code"].append(r.wall)
        started = {}
        for t, line in r.lines:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if o.get("subtype") == "hook_started":
                started[o["hook_id"]] = t
            elif o.get("subtype") == "hook_response" and o.get("hook_id") in started:
                in_client.setdefault(o["hook_name"], []).append(t - started[o["hook_id"]])
        without["claude-code"].append(sb.claude("timing run %d" % i, stream=True, cwd=bare).wall)
        with_hooks["codex"].append(sb.codex("timing run %d" % i).wall)
        without["codex"].append(sb.codex("timing run %d" % i, codex_home=bare_codex_home).wall)

    # 2. each installed hook command replayed with a real payload, as the client runs it
    scratch = tmp_path / "scratch-home"
    replay, floors = {}, {}
    for client, settings in (("claude-code", sb.project / ".claude" / "settings.json"),
                             ("codex", sb.codex_home / "hooks.json")):
        stop = stop_payloads[(client, "Stop")]
        base = {k: stop[k] for k in ("session_id", "transcript_path", "cwd") if k in stop}
        payloads = {
            "SessionStart": dict(base, hook_event_name="SessionStart", source="startup"),
            "PreCompact": dict(base, hook_event_name="PreCompact", trigger="manual"),
            "Stop": stop,
            "SessionEnd": stop_payloads.get((client, "SessionEnd"), dict(base, hook_event_name="SessionEnd",
                                                                         reason="other")),
            "UserPromptSubmit": dict(base, hook_event_name="UserPromptSubmit",
                                     prompt="which database did we choose and why"),
        }
        for event, commands in settings_commands(settings).items():
            home = sb.cortex_home if event in ("SessionStart", "UserPromptSubmit") else scratch
            key = "%s %s" % (client, event)
            replay[key], floors[key] = _replay(sb, commands[0], payloads[event], home, RUNS)
    floor = [t for ts in floors.values() for t in ts]

    figures = {
        "runs": RUNS,
        "versions": sb.clis["versions"],
        "python_c_pass_s": _median(floor),
        "hook_replay_median_s": {k: _median(v) for k, v in replay.items()},
        "hook_replay_vs_python_c_pass": {k: round(statistics.median(v) / statistics.median(floors[k]), 2)
                                         for k, v in replay.items()},
        "claude_in_client_hook_median_s": {k: _median(v) for k, v in in_client.items()},
        "client_run_median_s": {c: {"with_cortex": _median(with_hooks[c]), "without": _median(without[c]),
                                    "overhead": round(_median(with_hooks[c]) - _median(without[c]), 3)}
                                for c in with_hooks},
    }
    say("hook timings, medians of %d runs (python3 -c pass: %.3f s)" % (RUNS, figures["python_c_pass_s"]))
    for k, v in sorted(figures["hook_replay_median_s"].items()):
        say("  hook %-26s %.3f s = %.2fx python3 -c pass   (the installed command, through the shell)"
            % (k, v, figures["hook_replay_vs_python_c_pass"][k]))
    for k, v in sorted(figures["claude_in_client_hook_median_s"].items()):
        say("  claude-code in-client %-19s %.3f s   (hook_started -> hook_response)" % (k, v))
    for c, v in figures["client_run_median_s"].items():
        say("  %-11s run: %.3f s with Cortex hooks, %.3f s without (%+.3f s)"
            % (c, v["with_cortex"], v["without"], v["overhead"]))
    path = tmp_path / "last_timings.json"
    path.write_text(json.dumps(figures, indent=1))
    if os.environ.get("CORTEX_E2E_TIMINGS"):
        Path(os.environ["CORTEX_E2E_TIMINGS"]).write_text(json.dumps(figures, indent=1))
    say("timings written to %s" % path)

    # sanity, not benchmarks: every hook well inside the timeout it was installed with
    # (a loaded machine slows everything alike, so the limit grows with python3 -c pass)
    for k, v in figures["hook_replay_median_s"].items():
        limit = 10.0 if k.endswith("SessionStart") else max(1.5, 5 * statistics.median(floors[k]))
        assert v < limit, "%s took %.2f s (median), over %.1f s" % (k, v, limit)
