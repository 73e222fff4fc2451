"""frontmatter.emit: record front matter written without YAML, the same text as PyYAML's dump."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from cortex.bench import run as bench

from cortex.store import frontmatter, records
from cortex.core.home import Home
from cortex.model.freshness import file_state

from cortex_testkit import REPO, clean_env

DUMPERS = [yaml.SafeDumper] + ([yaml.CSafeDumper] if hasattr(yaml, "CSafeDumper") else [])


def pyyaml(front, dumper):
    return yaml.dump(front, Dumper=dumper, sort_keys=False, allow_unicode=True, width=1000, default_flow_style=None)


def same_as_pyyaml(front, must=True):
    """emit(front) is what both PyYAML emitters write and reads back as front; returns it (None if declined)."""
    got = frontmatter.emit(front)
    if got is None:
        assert not must, front
        return None
    for dumper in DUMPERS:
        assert got == pyyaml(front, dumper), dumper.__name__
    assert yaml.safe_load(got) == front
    return got


# -- the resolver ---------------------------------------------------------------------------------------------

def test_implicit_rules_are_pyyaml_s():
    mine = {}
    for tag, pattern, first in frontmatter._IMPLICIT:
        for c in first:
            mine.setdefault(c, []).append((tag, pattern))
    theirs = {c: [(tag, rx.pattern) for tag, rx in rules]
              for c, rules in yaml.resolver.Resolver.yaml_implicit_resolvers.items() if c}
    assert mine == theirs
    assert [t for t, _ in yaml.resolver.Resolver.yaml_implicit_resolvers[""]] == ["tag:yaml.org,2002:null"]
    assert frontmatter._FIRST == set(theirs)


def test_resolves_to_str_agrees_with_pyyaml():
    resolver = yaml.resolver.Resolver()
    samples = ["", "0", "-0", "00", "007", "12", "+12", "1.5", "1.", ".5", "1.5e3", "1.0e+3", "1_000", "0x1F", "0b1",
               "1:30", "190:20:30.15", "2024-01-01", "2024-1-1", "2024-01-01T00:00:00Z", "2024-01-01 00:00:00.5 +1",
               "true", "True", "yes", "No", "on", "OFF", "null", "Null", "~", "<<", "=", "!", "&", "*", ".nan",
               ".inf", "-.Inf", "fix", "onion", "yesterday", "nullable", "r27ac4201b3aa1c9b", "1-2.3", "--5"]
    rnd = random.Random(3)
    alpha = "0123456789.-+_:eExabTtFfNnOoYy~<=!&* Zz"
    samples += ["".join(rnd.choice(alpha) for _ in range(rnd.randint(1, 12))) for _ in range(20000)]
    for s in samples:
        want = resolver.resolve(yaml.nodes.ScalarNode, s, (True, False)) == "tag:yaml.org,2002:str"
        assert frontmatter.resolves_to_str(s) is want, s


def test_plain_allowed_is_pyyaml_s_analysis():
    emitter = yaml.emitter.Emitter(None, allow_unicode=True)
    rnd = random.Random(4)
    alpha = "ab -:?#,[]{}&*!|>'\"%@`.~=é"
    samples = ["---", "...", "--", "-", "?", ":", "- a", "a:", "a: b", "a:b", "a #b", "a#b", " a", "a "]
    samples += ["".join(rnd.choice(alpha) for _ in range(rnd.randint(1, 7))) for _ in range(20000)]
    for s in samples:
        a = emitter.analyze_scalar(s)
        assert frontmatter._plain_allowed(s) == (a.allow_flow_plain, a.allow_block_plain), s


def test_printable_is_what_pyyaml_writes_as_it_is():
    emitter = yaml.emitter.Emitter(None, allow_unicode=True)
    for cp in range(0x10000):
        s = "a%sb" % chr(cp)
        a = emitter.analyze_scalar(s)
        assert frontmatter._printable(s) == (a.allow_single_quoted and not a.multiline), hex(cp)
    for s in ("\U0001F600", "a\U00010000", "\U0010fffd"):  # the C emitter escapes these: left to PyYAML
        assert not frontmatter._printable(s)
    for s in ("2026-01-02T03:04:05Z", "2026-01-02T03:04:05.678Z", "2026-01-02T03:04:05.Z", "2026-1-02T03:04:05Z",
              "2026-01-02T03:04:05+01:00", "2026-01-02 03:04:05Z", "\u0662026-01-02T03:04:05Z"):
        assert frontmatter._iso_time(s) <= (not frontmatter.resolves_to_str(s)), s


# -- whole records --------------------------------------------------------------------------------------------

def _demo_records(tmp_path):
    """Every record the whole loop makes from the bundled real transcripts (plans, files, file states...)."""
    from cortex.capture import hook as capture
    from cortex.ingest import run as normalize
    home = Home(str(tmp_path / "real-home")).ensure()
    sessions, _ = bench.replay_sessions(str(tmp_path / "client"), 1)
    for client, path, sid, cwd in sessions:
        payload = {"session_id": sid, "transcript_path": path, "cwd": cwd or str(tmp_path),
                   "hook_event_name": "Stop"}
        capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), client, home))
    normalize.run(home)
    return home, list(records.iter_paths(home.records))


def test_every_record_of_a_demo_home_is_written_as_pyyaml_writes_it(tmp_path):
    home, paths = _demo_records(tmp_path)
    assert len(paths) > 10
    for path in paths:
        text = open(path, encoding="utf-8").read()
        rec = records.read(path)
        front = records.front_matter(rec)
        assert records.dump(rec) == text  # the files the normalizer wrote read back to the same bytes
        assert same_as_pyyaml(front) == records.dump_yaml(front)
        # a record used many times: its `used` list is folded over several lines, as PyYAML folds it
        used = dict(front, used=["2026-01-02T03:04:%02d.%03dZ" % (i % 60, i) for i in range(120)])
        folded = "---\n%s---\n%s\n" % (same_as_pyyaml(used), rec["text"])
        assert folded.count("\n") > text.count("\n") + 2
        fast = frontmatter.fast_parse(folded)
        if fast is None:  # by design, front matter with double quotes (a plan item quoting a heading) goes to YAML
            assert '"' in folded[:folded.index("\n---\n", 3)]
        else:
            assert fast == records.parse(folded)
        assert records.parse(folded) == dict(used, text=rec["text"])
        # what the normalizer adds when the files a record names exist (the fixtures' do not, here)
        same_as_pyyaml(dict(front, file_state=file_state(["cortex/records.py", "README.md"], str(REPO)),
                            related=["r0123456789abcdef"], redactions=2))


def test_bench_records_are_written_as_pyyaml_writes_them():
    rng = random.Random(11)
    vocab = bench.vocabulary()
    for i in range(300):
        rec = bench.bench_record(rng, i, "proj-1a2b3c4d", "personal", 1.7e9, vocab)
        same_as_pyyaml(records.front_matter(rec))


def test_a_use_writes_records_without_importing_yaml(tmp_path):
    """`cortex recall` counts a use by writing the record: the front matter goes out without PyYAML."""
    code = ("import sys, random; from cortex.bench import run as bench\nfrom cortex.store import records\n"
            "rec = bench.bench_record(random.Random(2), 1, 'p-1', 'personal', 1.7e9)\n"
            "rec['used'] = ['2026-01-02T03:04:05.678Z'] * 50\n"
            "rec['file_state'] = {'/src/app.py': {'size': 10, 'mtime': 1700000000, 'sha256': 'ab' * 32}}\n"
            "text = records.dump(rec)\n"
            "print('yaml' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=str(REPO),
                         env=clean_env()).stdout.split()
    assert out == ["False"]


# -- generated values -------------------------------------------------------------------------------------------

_ODD = ["yes", "No", "ON", "off", "null", "Null", "NULL", "~", "true", "False", "y", "n", "1", "01", "0x1f", "1e3",
        "1.5", "-2", "+3", ".inf", ".NaN", "<<", "=", "2024-01-02", "2024-01-02T03:04:05Z", "2024-01-02 03:04:05",
        "12:30", "1_000", "a: b", "a:b", "a:", ":a", ": a", "a #b", "a#b", "#x", "- x", "-x", "-", "--- x", "...",
        "? x", "?x", "[x]", "{x}", "x, y", "x,y", "'q'", '"dq"', "it's", "''", " lead", "trail ", "two  spaces", "",
        "é", "日本語", "a/b.c", "/abs/path.py", "C:\\dir", "@at", "`tick`", "&amp", "*star", "!bang", "%pct",
        "|pipe", ">gt", "L12", "s3", "\xa0nbsp", "x\u3000y"]
# what the emitter leaves to PyYAML: line breaks, tabs, control characters, BOM, astral characters
_LEFT = ["line\nbreak", "tab\there", "nul\x00", "del\x7f", "nel\x85", "ls\u2028", "bom\ufeff", "emoji\U0001F600",
         "bell\x07"]
_chars = st.characters(min_codepoint=0x20, max_codepoint=0x2fff, blacklist_categories=("Cs", "Cc"),
                       blacklist_characters="\x85\u2028\u2029")
_word = st.text(alphabet=st.sampled_from(list("ab xyz:#-',.[]{}?&*!|>%@`\"0123456789") + ["é", "日"]), max_size=12)
_text = st.one_of(st.sampled_from(_ODD), st.text(alphabet=_chars, max_size=30), _word)
_long = st.builds(lambda words, sep: sep.join(words), st.lists(_text, min_size=20, max_size=160),
                  st.sampled_from([" ", "  ", ", ", ": ", " '", "' "]))
_scalar = st.one_of(_text, st.none(), st.booleans(), st.integers(-10 ** 20, 10 ** 20),
                    st.floats(allow_nan=False, allow_infinity=False))
_key = st.one_of(st.sampled_from(["id", "on", "yes", "null", "1", "a b", "a: b", "- x", "x" * 122, "é" * 61, "/a/b.py"]),
                 _text)
_value = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(_key, inner, max_size=4)), max_leaves=12)


def _record_shaped(rng_text):
    at = "2026-01-02T03:04:05.678Z"
    return {"id": "r0123456789abcdef", "scope": "L0", "scope_id": "proj-1", "project": rng_text, "type": "plan",
            "status": "active", "confidence": 0.7, "salience": 0.5, "pinned": False, "priority": 0,
            "created": at, "updated": at, "seen": [at], "used": [], "tokens": 3}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=st.lists(st.one_of(_text, _long), max_size=4), branch=st.one_of(st.none(), _text),
       session=st.one_of(st.none(), _text), ref=st.one_of(st.none(), _text),
       plan=st.lists(st.tuples(st.one_of(_text, _long), st.sampled_from(["pending", "completed"])), max_size=3),
       used=st.lists(st.sampled_from(["2026-01-02T03:04:05.678Z", "2026-01-02T03:04:05Z"]), max_size=80),
       conf=st.one_of(st.floats(0, 1), st.integers(0, 1)), project=st.one_of(st.none(), _text, _long),
       file_state=st.dictionaries(st.one_of(_text, _long), st.fixed_dictionaries(
           {"size": st.integers(0, 10 ** 9), "mtime": st.integers(0, 2 ** 33)},
           optional={"sha256": st.text("0123456789abcdef", min_size=64, max_size=64)}), max_size=3),
       extra=st.dictionaries(_key, _value, max_size=3))
def test_record_shaped_data_round_trips_and_matches_pyyaml(files, branch, session, ref, plan, used, conf, project,
                                                           file_state, extra):
    rec = _record_shaped(project)
    rec.update(confidence=conf, branch=branch, files=files, used=used,
               plan=[{"text": t, "status": s} for t, s in plan],
               provenance=[{"client": "c", "session": session, "transcript": None, "ref": ref, "layer": "tag",
                            "at": "2026-01-02T03:04:05.678Z"}])
    if file_state:
        rec["file_state"] = file_state
    for k, v in extra.items():
        rec.setdefault(k, v)
    front = records.front_matter(rec)
    got = same_as_pyyaml(front, must=False)
    if got is None:  # declined: only for what the emitter leaves to PyYAML
        assert _holds_left_out(front), front
    dumped = records.dump(dict(rec, text="x"))
    assert records.parse(dumped) == dict(rec, text="x")
    fast = frontmatter.fast_parse(dumped)
    assert fast is None or fast == records.parse(dumped)


def _holds_left_out(v, key=False) -> bool:
    if isinstance(v, dict):
        return any(_holds_left_out(k, key=True) or _holds_left_out(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_holds_left_out(x) for x in v)
    if isinstance(v, str):
        return key and (not v or len(v.encode()) + 5 >= 128)
    return False


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(front=st.dictionaries(_key, _value, min_size=1, max_size=6))
def test_any_nesting_matches_pyyaml(front):
    got = same_as_pyyaml(front, must=False)
    if got is None:
        assert _holds_left_out(front), front


@pytest.mark.parametrize("odd", _LEFT)
def test_what_it_leaves_to_pyyaml_is_still_written_by_pyyaml(odd):
    rec = dict(_record_shaped("p"), branch=odd, text="x",
               provenance=[{"client": "c", "session": None, "at": "2026-01-02T03:04:05Z", "layer": "tag"}])
    front = records.front_matter(rec)
    assert frontmatter.emit(front) is None
    assert records.dump(rec) == "---\n%s---\nx\n" % records.dump_yaml(front)
    assert records.parse(records.dump(rec)) == rec


def test_shared_lists_and_odd_types_are_left_to_pyyaml():
    shared = ["a"]
    assert frontmatter.emit({"a": shared, "b": shared}) is None
    assert frontmatter.emit({"a": float("nan")}) is None
    assert frontmatter.emit({"a": (1, 2)}) is None
    assert frontmatter.emit({1: "a"}) is None
    assert frontmatter.emit({}) is None
    assert same_as_pyyaml({"a": ["x"], "b": ["x"]})  # equal but distinct lists are no aliases


def test_long_plain_and_quoted_values_fold_where_pyyaml_folds_them():
    for text in ("word " * 400 + "end", "it's " * 300 + "x", "a: b " * 300 + "c", "x" * 1500 + " y",
                 ("a  b " * 300).strip(), "'" + "q " * 600 + "'"):
        for front in ({"k": text}, {"k": [text, text]}, {"k": [{"t": text, "s": "x"}]},
                      {"k": {"/p": {"t": text}}}, {"k": [[text]]}):
            same_as_pyyaml(front)
    # a quoted value that starts or ends with a space past the width: those spaces are never folded
    for text in (" lead and more", "trail and more ", " both ", " ", "x'y z"):
        for pad in (990, 996, 1000, 1003):
            same_as_pyyaml({"k": ["x" * pad, text, "y"]})
            same_as_pyyaml({"k": "z" * pad + text})
            same_as_pyyaml({"k": [{"a": "x" * pad, "b" * 120: text}]})  # no width check before a value


def test_keys_of_up_to_122_bytes_are_simple_keys_longer_ones_go_to_pyyaml():
    for key in ("k" * 122, "\xe9" * 61, "/" + "a" * 121):
        same_as_pyyaml({key: 1, "n": {key: [key]}})
    for key in ("k" * 123, "\xe9" * 62, "\u65e5" * 41):  # PyYAML and libyaml differ here (characters + "!!str" / bytes)
        assert frontmatter.emit({key: 1}) is None
        assert frontmatter.emit({"n": {key: 1}}) is None


# -- reading folded lines back without YAML ---------------------------------------------------------------

_FOLDED = [
    "used: ['a', 'b',\n  'c']", "used: [a, b,\n  c]", "used: [a,\n    b]", "used: [a\n  b]", "k: a\n  b",
    "k: 'a\n  b'", "k: 'a\n  ''b'''", "k: a\n  - b", "k: a\n  ---", "k: a\n  #b", "k: 'a\n  #b'",
    "used: [a,\n  #b]", "k: a\n  b: c", "k: [a]\n  b", "k: 'a'\n  b", "k: a \n  b", "k: a\n b", "k:\n  b",
    "k:\n  - b", "k: a\n\n  b", "k: a\n  \n  b", "k: a\n  b\n  c", "k: a\nj: b\n  c",
    "p:\n- {a: b,\n  c: d}", "p:\n- {a: 'b\n    c', d: e}", "p:\n- {a: b\n    c, d: e}", "p:\n- [a,\n  b]",
    " k: a", "k: 1\n  2", "k: true\n  x", "k: [1,\n  2.5, null, true]", "k: a\n\t b", "k: a\n  \tb",
    "k: 'a\n  \tb'", "k: 'a\t\n  b'", "k: 'a\tb'", "k: 'a\x85b'", "k: 'a\u2028b'", "k: 'a\x01b'", "k: 'a\ufeffb'",
    "k: a\u2028b", "k: 'a\x7fb'", "k: '\xe9\u65e5'", "k: \xe9\u65e5", "k: ['\ud800']",
]


@pytest.mark.parametrize("front", _FOLDED)
def test_folded_lines_are_read_as_yaml_reads_them_or_left_to_it(front):
    text = "---\n%s\n---\nx\n" % front
    try:
        want = records.parse(text)
    except records.RecordError:
        want = None
    got = frontmatter.fast_parse(text)
    assert got is None or got == want, (got, want)
