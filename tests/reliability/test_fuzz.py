"""Property tests (hypothesis) for the parsers that meet untrusted bytes.

* every adapter's `sniff` and `parse` (and `cortex.ingest.adapters.detect`) on generated files: real fixture lines
  mutated at random places, random JSON values, random bytes, cut last lines, random cursors: they never
  raise anything but OSError (base.Adapter.parse's contract); extraction of what they return never raises;
* `cortex.store.records.parse` on generated text (mutated real records, YAML-ish front matter with hostile
  tokens, random text) raises nothing but RecordError.

Examples per property: CORTEX_HYPOTHESIS_EXAMPLES (default 200; records.parse gets twice as many); each test prints how many inputs it tried.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cortex.ingest import adapters

from cortex.store import records
from cortex.ingest.adapters import base as B
from cortex.ingest.extract import Context, extract

from .helpers import FIXTURES, TRANSCRIPTS, env_int, report

EXAMPLES = env_int("CORTEX_HYPOTHESIS_EXAMPLES", 200)
SETTINGS = dict(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


def _fixture_files(client):
    return [FIXTURES / TRANSCRIPTS[k][0] / TRANSCRIPTS[k][1] for k in TRANSCRIPTS if TRANSCRIPTS[k][2] == client]


def _real_lines(client, limit=400):
    """Parsed JSON lines of the client's real fixtures (a sample, small lines first)."""
    out = []
    for p in _fixture_files(client):
        if p.suffix == ".json":
            doc = json.loads(p.read_text(encoding="utf-8"))
            out.append(doc)
            continue
        for line in p.read_bytes().splitlines():
            if 0 < len(line) < 20000:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    out.sort(key=lambda o: len(json.dumps(o)))
    step = max(len(out) // limit, 1)
    return out[::step][:limit]


def _keys(objs):
    seen = set()

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                seen.add(k)
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    for o in objs:
        walk(o)
    return sorted(seen)


REAL = {c: _real_lines(c) for c in ("claude-code", "codex", "gemini")}
KEYS = sorted(set().union(*(_keys(v) for v in REAL.values())))
WORDS = ["user", "assistant", "tool_use", "tool_result", "text", "thinking", "message", "response_item",
         "event_msg", "function_call", "function_call_output", "custom_tool_call", "apply_patch", "update_plan",
         "TodoWrite", "Edit", "Write", "Bash", "exec_command", "session_meta", "compacted", "gemini", "summary",
         "completed", "in_progress", "pending", "[MEMORY: decision] chose x over y because z",
         "<cortex-memory>", "</private>", "*** Update File: a.py", "Exit code 1", "2026-01-01T00:00:00Z", ""]

scalars = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=40) | st.sampled_from(WORDS))
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) |
                           st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), c, max_size=5),
                           max_leaves=20)


def _mutate(obj, r, pool, depth=0):
    """Replace one random subtree of a real record by a generated JSON value (or drop a key).
    `r` is a hypothesis-seeded Random and `pool` hypothesis-generated values: few draws, fast examples."""
    if depth < 8 and isinstance(obj, dict) and obj and r.random() < 0.75:
        k = r.choice(sorted(obj))
        if r.random() < 0.1:
            obj.pop(k)
        else:
            obj[k] = _mutate(obj[k], r, pool, depth + 1)
        return obj
    if depth < 8 and isinstance(obj, list) and obj and r.random() < 0.75:
        i = r.randrange(len(obj))
        obj[i] = _mutate(obj[i], r, pool, depth + 1)
        return obj
    return json.loads(json.dumps(r.choice(pool)))


def _dumps(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")


def _line(client, r, pool, blobs) -> bytes:
    kind = r.randrange(10)
    if kind <= 5:
        obj = json.loads(json.dumps(r.choice(REAL[client])))
        for _ in range(r.randint(1, 3)):
            obj = _mutate(obj, r, pool)
        return _dumps(obj)
    if kind <= 7:
        return _dumps(r.choice(pool))
    if kind == 8:
        return r.choice(blobs)
    return _dumps(r.choice(REAL[client]))  # an intact real line


def _file_bytes(client, data) -> bytes:
    r = data.draw(st.randoms(use_true_random=False))
    pool = data.draw(st.lists(json_values, min_size=1, max_size=6))
    blobs = data.draw(st.lists(st.binary(max_size=200), min_size=1, max_size=2))
    if client == "gemini":
        doc = json.loads(json.dumps(REAL["gemini"][0]))
        choice = r.randrange(6)
        if choice == 0:
            return blobs[0]
        if choice == 1:
            return _dumps(pool[0])
        for _ in range(r.randint(1, 4)):
            doc = _mutate(doc, r, pool)
        raw = _dumps(doc)
        if r.randrange(6) == 0:
            raw = raw[:r.randint(0, len(raw))]  # caught mid-rewrite
        return raw
    lines = [_line(client, r, pool, blobs) for _ in range(r.randint(0, 12))]
    raw = b"\n".join(lines)
    if lines and r.random() < 0.5:
        raw += b"\n"
    return raw


_tmp = tempfile.mkdtemp(prefix="cortex-fuzz-")
atexit.register(shutil.rmtree, _tmp, True)


def _extract_all(res, client):
    ctx = Context(client=client, session=res.meta.session_id, transcript="/fuzz.jsonl", project="fuzz-00000000",
                  domain="personal", fallback_time="2026-01-01T00:00:00.000Z", cwd=res.meta.cwd)
    cands, state = extract(res.entries, ctx, None)
    json.dumps(state)  # the state goes into cursors.json
    for c in cands:
        c.to_store(ctx)


# Failures the fuzzing found, each reproduced by an xfail test below; (stage, exception, file, function).
KNOWN = {
    ("sniff", "TypeError", "codex.py", "sniff"): "test_codex_sniff_of_a_non_string_type_does_not_raise",
    ("extract", "TypeError", "extract.py", "extract"): "test_a_non_string_timestamp_does_not_lose_the_session",
    ("parse", "TypeError", "claude_code.py", "finish"): "test_claude_code_summary_with_a_list_leaf_uuid_does_not_raise",
    ("parse", "TypeError", "claude_code.py", "<listcomp>"): "test_claude_code_summary_with_a_list_leaf_uuid_does_not_raise",
}


def _signature(stage, exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/cortex/" in f.filename.replace("\\", "/")]
    f = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return (stage, type(exc).__name__, os.path.basename(f.filename), f.name)


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini"])
def test_fuzz_adapter_parse_never_raises(client):
    """Every input is tried through sniff/detect, parse and extraction; an exception other than OSError is a
    failure, unless it is one of the KNOWN bugs (reproduced by their own xfail tests)."""
    adapter = adapters.get(client)
    counts = {"tried": 0, "entries": 0, "bad_lines": 0, "sniffed": 0, "extracted": 0}
    found = {}
    path = os.path.join(_tmp, "t-%s%s" % (client, ".json" if client == "gemini" else ".jsonl"))

    @settings(**SETTINGS)
    @given(data=st.data())
    def prop(data):
        raw = _file_bytes(client, data)
        Path(path).write_bytes(raw)
        cursor = data.draw(st.integers(0, 40) if client == "gemini" else
                           st.sampled_from([0, 0, 0, len(raw), len(raw) + 7]) | st.integers(0, len(raw) + 2))
        counts["tried"] += 1
        stage = "sniff"
        try:
            counts["sniffed"] += bool(adapter.sniff(raw[:adapters.HEAD_BYTES], path))
            adapters.detect(path, client)
            stage = "parse"
            res = adapter.parse(path, cursor)
            assert isinstance(res, B.ParseResult)
            assert all(isinstance(e, B.Entry) and e.kind in B.ENTRY_KINDS for e in res.entries)
            counts["entries"] += len(res.entries)
            counts["bad_lines"] += res.bad_lines
            stage = "extract"
            _extract_all(res, client)
            counts["extracted"] += 1
        except OSError:
            pass
        except Exception as e:  # noqa: BLE001
            sig = _signature(stage, e)
            found.setdefault(sig, [0, raw[:300], cursor, "%s: %s" % (type(e).__name__, str(e)[:120])])[0] += 1

    prop()
    unknown = {k: v for k, v in found.items() if k not in KNOWN}
    report("fuzz: %s adapter" % client, max_examples=EXAMPLES, inputs_tried=counts["tried"],
           detected_as_own_format=counts["sniffed"], entries=counts["entries"], bad_lines=counts["bad_lines"],
           extracted_ok=counts["extracted"], known_bug_hits={KNOWN[k][5:40]: v[0] for k, v in found.items() if k in KNOWN},
           unknown_failures=len(unknown))
    assert counts["tried"] >= min(EXAMPLES, 50)
    assert not unknown, "\n".join("%s x%d: %s\n   input %r cursor %d" % (k, v[0], v[3], v[1], v[2])
                                  for k, v in unknown.items())


def _jsonl(tmp_path, name, lines) -> str:
    p = tmp_path / name
    p.write_bytes(b"".join(json.dumps(l).encode() + b"\n" for l in lines))
    return str(p)


def test_codex_sniff_of_a_non_string_type_does_not_raise(tmp_path):
    path = _jsonl(tmp_path, "odd.jsonl", [{"timestamp": "2026-01-01T00:00:00Z", "type": ["event_msg"], "payload": {}}])
    assert adapters.detect(path) is None


def test_a_non_string_timestamp_does_not_lose_the_session(tmp_path):
    from cortex_testkit import copy_fixture, drop_event, events_in, hook_payload, make_home
    from cortex.ingest import run as norm
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    lines = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
    for rec in lines:
        if rec.get("type") == "user" and isinstance(rec.get("message", {}).get("content"), str):
            rec["timestamp"] = 1767225600000  # epoch milliseconds instead of ISO text
    path.write_text("".join(json.dumps(l) + "\n" for l in lines), encoding="utf-8")
    res = adapters.get("claude-code").parse(str(path))
    assert all(e.ts is None or isinstance(e.ts, str) for e in res.entries)
    home = make_home(tmp_path / "home")
    drop_event(home, hook_payload(path))
    norm.run(home)
    assert events_in(home, "failed") == []


def test_claude_code_summary_with_a_list_leaf_uuid_does_not_raise(tmp_path):
    path = _jsonl(tmp_path, "s.jsonl", [{"type": "summary", "summary": "A title", "leafUuid": ["x"]}])
    adapters.get("claude-code").parse(path)


# ----------------------------------------------------------------------------------------- records.parse

def _sample_records():
    base = {"id": "r0123456789abcdef", "scope": "L0", "scope_id": "demo-1234abcd", "project": "demo-1234abcd",
            "type": "decision", "status": "active", "confidence": 0.9, "salience": 0.6, "pinned": False,
            "priority": 0, "created": "2026-05-11T09:30:12.345Z", "updated": "2026-05-11T09:41:50.120Z",
            "seen": ["2026-05-11T09:41:50.120Z"], "used": [], "tokens": 41, "branch": "main", "files": ["a.py"],
            "provenance": [{"client": "codex", "session": "019e", "transcript": "/x/rollout.jsonl", "ref": "L3",
                            "layer": "tag", "at": "2026-05-11T09:41:50.120Z"}],
            "text": "Chose SQLite over Postgres because zero-config"}
    plan = dict(base, type="plan", plan=[{"text": "Add tests", "status": "completed"},
                                         {"text": "Ship: it", "status": "in_progress"}], text="[x] Add tests")
    return [records.dump(base), records.dump(plan)]


SAMPLES = _sample_records()
YAML_TOKENS = ["!!python/object/apply:os.system ['true']", "!!python/name:os.system", "&a [*a]", "*undefined",
               "[", "]", "{", "}", "'", '"', "|", ">", "? ", "- ", "---", "...", "%YAML 1.1", "!!binary x",
               "!!binary aGVsbG8=", "0x1F", "0o17", "1e400", ".inf", ".nan", "~", "null", "yes", "on", "2026-05-11",
               "2026-05-11T09:30:12Z", "!!set {a}", "!!omap [a: 1]", "!!str", "\t", "\x00", "\ufeff", "\u2028",
               "é", "<<: *a", "key: value", ": ", "#", "@", "`"]
RECORD_KEYS = list(records.FIELD_ORDER) + ["text", "redactions", "related", "x"]


@st.composite
def record_texts(draw):
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(st.text(max_size=300))
    if kind == 1:
        lines = []
        for _ in range(draw(st.integers(0, 10))):
            key = draw(st.sampled_from(RECORD_KEYS) | st.text(max_size=6))
            val = "".join(draw(st.lists(st.sampled_from(YAML_TOKENS) | st.text(max_size=8), max_size=4)))
            indent = draw(st.sampled_from(["", " ", "  ", "- "]))
            lines.append("%s%s: %s" % (indent, key, val))
        body = draw(st.text(max_size=50))
        return "---\n%s\n---\n%s" % ("\n".join(lines), body)
    text = draw(st.sampled_from(SAMPLES))
    for _ in range(draw(st.integers(1, 6))):  # character-level edits, as a careless hand edit would make
        i = draw(st.integers(0, len(text)))
        op = draw(st.integers(0, 2))
        ins = draw(st.sampled_from(YAML_TOKENS) | st.text(max_size=4))
        if op == 0:
            text = text[:i] + ins + text[i:]
        elif op == 1:
            text = text[:i] + text[i + draw(st.integers(1, 20)):]
        else:
            text = text[:i] + ins + text[i + len(ins):]
    return text


def _from_yaml_constructor(exc) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith("yaml/constructor.py"):
            return True
        tb = tb.tb_next
    return False


def test_fuzz_records_parse_raises_only_record_error():
    counts = {"tried": 0, "parsed": 0, "record_error": 0, "known_bug": 0}
    known = []

    @settings(**dict(SETTINGS, max_examples=EXAMPLES * 2))
    @given(text=record_texts())
    def prop(text):
        counts["tried"] += 1
        try:
            rec = records.parse(text)
            assert isinstance(rec, dict) and "text" in rec
            counts["parsed"] += 1
        except records.RecordError:
            counts["record_error"] += 1
        except (ValueError, TypeError, AttributeError) as e:
            if not _from_yaml_constructor(e):
                raise
            # the known bug below (test_records_parse_turns_yaml_value_errors_into_record_error)
            counts["known_bug"] += 1
            known.append((text[:120], type(e).__name__, str(e)[:80]))

    prop()
    report("fuzz: records.parse", max_examples=EXAMPLES * 2, inputs_tried=counts["tried"], parsed=counts["parsed"],
           record_error=counts["record_error"], non_record_error_from_yaml_constructors=counts["known_bug"])
    for k in known[:3]:
        print("    known bug example:", k)


@pytest.mark.parametrize("front", ["updated: 2026-13-45", "x: !!int nope", "x: !!float nope", "x: !!timestamp foo",
                                   "created: 2026-02-30 10:00:00"])
def test_records_parse_turns_yaml_value_errors_into_record_error(front):
    with pytest.raises(records.RecordError):
        records.parse("---\nid: r0123456789abcdef\n%s\n---\ntext\n" % front)
