"""schemas.validate answers valid events, configs and records without jsonschema, and always as jsonschema
would: the compiled check is sound (it never passes what jsonschema rejects) and passes what Cortex writes."""
import json
import subprocess
import sys

from hypothesis import given, settings, strategies as st

from cortex.capture import hook as capture

from cortex.core import config, schemas
from cortex_testkit import REPO, TRANSCRIPTS, copy_fixture, hook_payload, make_home

_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                  st.text(max_size=5), st.sampled_from(["stop", "pre_compact", "codex", "link", "copy", "x/y",
                                                        "cortex.event/1", "2026-01-02T03:04:05.123Z", 0, 1, 1.0]))
_any = st.recursive(_leaf, lambda c: st.one_of(st.lists(c, max_size=2),
                                               st.dictionaries(st.text(max_size=3), c, max_size=2)), max_leaves=4)


def _event(parsed=True):
    raw = json.dumps({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/w"}).encode() if parsed \
        else b"not json"
    return capture.build_event("stop", raw, "claude-code")


def test_every_schema_of_cortex_is_compiled():
    for name in ("event", "config", "record"):
        assert schemas.fast_check(name) is not None, "%s.schema.json uses a keyword the check lacks" % name


def test_events_the_hooks_write_pass_the_compiled_check(tmp_path):
    home = make_home(tmp_path / "home").ensure()
    events = [_event(True), _event(False), capture.build_event("pre_compact", b"[1]", None)]
    for name, (_folder, _main, client) in TRANSCRIPTS.items():
        path = copy_fixture(name, tmp_path / "client")
        raw = json.dumps(hook_payload(path, client)).encode()
        events.append(capture.build_event("stop", raw, client, home))
    check = schemas.fast_check("event")
    for ev in events:
        assert schemas.jsonschema_problems("event", ev) == []
        assert check(ev), ev


@settings(max_examples=600, deadline=None)
@given(parsed=st.booleans(), top=st.dictionaries(st.sampled_from(
    ["schema", "kind", "captured_at", "client", "parsed", "payload", "transcript", "raw", "error", "other"]),
    _any, max_size=3), payload=st.dictionaries(st.sampled_from(["session_id", "cwd", "transcript_path", "x"]),
                                               _any, max_size=2),
    transcript=st.dictionaries(st.sampled_from(["path", "size", "mtime", "blob", "blob_kind"]), _any, max_size=2),
    drop=st.lists(st.sampled_from(["schema", "kind", "parsed", "payload", "raw", "transcript"]), max_size=2))
def test_the_event_check_never_passes_what_jsonschema_rejects(parsed, top, payload, transcript, drop):
    ev = _event(parsed)
    if isinstance(ev.get("payload"), dict):
        ev["payload"].update(payload)
    ev["transcript"].update(transcript)
    ev.update(top)
    for k in drop:
        ev.pop(k, None)
    want = schemas.jsonschema_problems("event", ev)
    if schemas.fast_check("event")(ev):
        assert want == [], (ev, want)
    assert schemas.validate("event", ev) == want


@settings(max_examples=400, deadline=None)
@given(section=st.sampled_from(sorted(config.DEFAULTS)), key=st.text(max_size=12), value=_any, known=st.booleans())
def test_the_config_check_never_passes_what_jsonschema_rejects(section, key, value, known):
    data = json.loads(json.dumps(config.DEFAULTS))
    assert schemas.fast_check("config")(data) and schemas.jsonschema_problems("config", data) == []
    part = data[section]
    if isinstance(part, dict) and known and part:
        key = sorted(part)[len(key) % len(part)]
    if isinstance(part, dict):
        part[key] = value
    else:
        data[section] = value
    want = schemas.jsonschema_problems("config", data)
    if schemas.fast_check("config")(data):
        assert want == [], (section, key, value, want)
    assert schemas.validate("config", data) == want


def test_a_normalizer_run_with_an_event_does_not_import_jsonschema(tmp_path):
    """The point of the check: reading a valid event and a valid config.yaml costs no jsonschema import."""
    home = make_home(tmp_path / "home").ensure()
    with open(home.config_yaml, "w", encoding="utf-8") as f:
        f.write("session_start:\n  max_records: 30\n")
    path = copy_fixture("cc-2.1.4", tmp_path / "client")
    capture.write_event(home, capture.build_event("stop", json.dumps(hook_payload(path)).encode(), "claude-code",
                                                  home))
    code = ("import sys, json; sys.path.insert(0, %r); from cortex.ingest import run as normalize; s = normalize.run("
            "__import__('cortex.core.home', fromlist=['Home']).Home(%r)); print(json.dumps(["
            "'jsonschema' in sys.modules, s.get('sessions'), sorted(s)]))" % (str(REPO), home.root))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    imported, sessions, _keys = json.loads(out.stdout.strip().splitlines()[-1])
    assert sessions == 1 and imported is False


def test_constructs_the_check_cannot_decide_exactly_turn_it_off():
    """Where an exact answer is needed (the condition of an if, which branch of a oneOf), a check that is
    only sound would be wrong, so such schemas are left to jsonschema."""
    import pytest
    for schema in ({"if": {"type": "integer"}, "then": {"required": ["a"]}},   # 1.0 is an integer in JSON Schema
                   {"if": {"minimum": 3}, "then": {"required": ["a"]}},
                   {"oneOf": [{"type": "string"}, {"type": ["string", "null"]}]},
                   {"oneOf": [{"type": "object"}, {"required": ["a"]}]},
                   {"enum": [1, "a"]}, {"anyOf": [{"type": "string"}]}):
        with pytest.raises(schemas._Unsupported):
            schemas._compile(schema)
    check = schemas._compile({"if": {"properties": {"p": {"const": True}}}, "then": {"required": ["raw"]},
                              "else": {"required": ["payload"]}})
    assert check({"p": True, "raw": 1}) and not check({"p": True}) and not check({"p": 1})
    assert check({"p": 1, "payload": 0}) and check({"payload": 0, "raw": 0})  # no p: the if holds
