"""Secrets: fake credentials put into every position of real transcripts never reach a record, the index, the
log, the session-start block, the episodes (episodes/<project>/<session>.md, what was said) or
`cortex export --episodes`; <private> spans are never stored; and the redaction's false
positives on the real fixtures are counted.

Pipeline per position: copy real fixtures of the three clients, inject the corpus (tests/reliability/
secrets_corpus.py) at that position, capture with the real hook (bin/cortex-stop), normalize, build the block
for each project, export; then look for every secret (whole, or any 12-character window of its random part)
in each output.
"""
from __future__ import annotations

import json
import os
import random
import zlib
from pathlib import Path

import pytest

from cortex.ingest import run as norm
from cortex_testkit import transcript_meta

from .helpers import (TRANSCRIPTS, copy_fixture, db_raw_bytes, db_text, env_for, make_home, read_log, record_files,
                      search_vocabulary,
                      report, run_measured, script)
from .inject import POSITIONS, inject_file
from .secrets_corpus import corpus, survivors

SECRET_FIXTURES = ("cc-1.0.98", "cc-2.0.64", "cc-1.0.108", "codex-0.125", "codex-0.77", "gemini")
SECRETS = corpus(seed=7)
OUTPUTS = ("records", "index", "search", "logs", "block", "export", "episodes")


class Injector:
    """Makes the text for each site, cycling through the corpus; remembers what went where."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.used = []   # (secret, where)
        self.i = 0

    def pick(self, pathsafe=False, own=False):
        pool = [s for s in SECRETS if s.pathsafe] if pathsafe else \
            [s for s in SECRETS if not s.kind.startswith("ext-")] if own else SECRETS
        s = pool[self.i % len(pool)]
        self.i += 1
        return s

    def __call__(self, where, original):
        if where in ("file", "cwd"):
            s = self.pick(pathsafe=True)
            self.used.append((s, where))
            return (s.text + "-" + original) if where == "file" else original.rstrip("/") + "/" + s.text
        a, b = self.pick(own=where == "prompt"), self.pick()  # a one-line secret first in every prompt
        self.used += [(a, where), (b, where)]
        if where == "assistant":
            return ("%s\n\n[MEMORY: decision] Deploy staging with %s from now on.\nWe chose %s over the old "
                    "credential because it rotates daily.\n" % (original, a.text, b.text))
        if where == "prompt":
            return "Use %s for the deploy. %s\n[MEMORY: learned] The staging credential is %s\n" % (a.text, original,
                                                                                                    b.text)
        if where == "command":
            return "echo %s >/dev/null; %s\n# %s" % (a.text, original, b.text)
        if where == "todo":
            return "%s with %s (and %s)" % (original, a.text, b.text)
        if where == "output":
            return "Error: request rejected for %s\n%s\nhint: %s" % (a.text, original, b.text)
        raise AssertionError(where)


def _transcripts(folder: Path, client: str):
    if client == "gemini":
        return [p for p in folder.rglob("*.json")]
    return [p for p in folder.rglob("*.jsonl")]


def _export(home) -> str:
    rc, out, err, _rss, _s = run_measured(script("cortex", "export", "--episodes"), env_for(home))
    if rc == 2 and b"invalid choice" in err:
        return None  # no export command in this build
    assert rc == 0, err[-1000:]
    return out.decode("utf-8", "replace")


def _episode_text(home) -> str:
    out = []
    for dirpath, _dirs, files in os.walk(home.episodes):
        for n in files:
            out.append(Path(dirpath, n).read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


def _haystacks(home, cwds) -> dict:
    from cortex.brief import session_start
    hay = {
        "records": "\n".join(b.decode("utf-8", "replace") for b in record_files(home).values()),
        "episodes": _episode_text(home),
        "index": db_text(home.index_db) + "\n" + db_raw_bytes(home.index_db).decode("utf-8", "replace"),
        "search": search_vocabulary(home),  # the engine's terms (it keeps no text), compared in any case
        "logs": read_log(home),
        "block": "\n".join(session_start.build(home, c)[0] for c in sorted(cwds)),
        "export": _export(home),
    }
    other = []
    for dirpath, _dirs, files in os.walk(home.root):
        rel = os.path.relpath(dirpath, home.root)
        if rel.split(os.sep)[0] in ("inbox", "records", "index", "logs", "episodes"):
            # (index/search/ holds the engine's binary segments: its terms are checked as "search" above)
            continue  # inbox/ holds the raw captured input by design; the others are checked above
        for n in files:
            other.append(Path(dirpath, n).read_bytes().decode("utf-8", "replace"))
    hay["elsewhere"] = "\n".join(other)
    return hay


def _run_position(base: Path, position: str):
    home = make_home(base / "home")
    inj = Injector(seed=zlib.crc32(position.encode()))
    cwds = set()
    env = env_for(home)
    for name in SECRET_FIXTURES:
        client = TRANSCRIPTS[name][2]
        main = copy_fixture(name, base / "client")
        for p in _transcripts(main.parent, client):
            inject_file(p, client, position, inj)
        meta = transcript_meta(main, client)
        cwd = meta.cwd or "/fixture/%s" % name
        if position == "cwd" and client == "gemini":
            cwd = inj("cwd", cwd)
        cwds.add(cwd)
        payload = {"session_id": meta.session_id or main.stem, "transcript_path": str(main), "cwd": cwd,
                   "hook_event_name": "Stop"}
        rc, out, err, _rss, _s = run_measured(script("cortex-stop", "--client", client), env,
                                              json.dumps(payload).encode())
        assert rc == 0 and not out and not err
    stats = norm.run(home)
    assert stats["failed"] == 0, stats
    hay = _haystacks(home, cwds)
    secrets = sorted({s for s, _w in inj.used}, key=lambda s: s.kind)
    found = {k: survivors(v, secrets, fold=k == "search") for k, v in hay.items() if v is not None}
    placeholders = hay["records"].count("[REDACTED:")
    return {"home": home, "injected_sites": len(inj.used), "secrets": secrets, "found": found,
            "placeholders": placeholders, "records": len(record_files(home)), "export": hay["export"] is not None,
            "episodes": hay["episodes"].count("\n## Turn ")}


_cache = {}


def _result(tmp_path_factory, position):
    if position not in _cache:
        _cache[position] = _run_position(tmp_path_factory.mktemp("secrets-" + position), position)
    return _cache[position]


LEAKS = {
}


@pytest.mark.parametrize("position", [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=LEAKS[p])) if p in LEAKS else p
    for p in POSITIONS])
def test_no_injected_secret_reaches_records_index_logs_block_or_export(tmp_path_factory, position):
    res = _result(tmp_path_factory, position)
    leaks = {k: sorted({s.kind for s in v}) for k, v in res["found"].items() if v and k in OUTPUTS}
    report("secrets: position %s" % position, injected_sites=res["injected_sites"],
           distinct_secrets=len(res["secrets"]), records=res["records"], redaction_placeholders=res["placeholders"],
           survived_in={k: len(v) for k, v in res["found"].items() if k in OUTPUTS},
           export_checked=res["export"])
    assert res["injected_sites"] > 0
    assert res["episodes"] > 0
    assert not leaks, leaks


ELSEWHERE_LEAKS = {
}


@pytest.mark.parametrize("position", [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=ELSEWHERE_LEAKS[p])) if p in ELSEWHERE_LEAKS else p
    for p in POSITIONS])
def test_no_injected_secret_is_kept_elsewhere_in_the_home(tmp_path_factory, position):
    """state/ (cursors with the extraction state, config snapshot, last run) and anything else outside inbox/."""
    res = _result(tmp_path_factory, position)
    assert not res["found"]["elsewhere"], sorted({s.kind for s in res["found"]["elsewhere"]})


def test_secret_positions_summary(tmp_path_factory):
    """One line with the totals over every position (runs them all if not done yet)."""
    total_sites = total_secrets = survived = 0
    per = {}
    for p in POSITIONS:
        res = _result(tmp_path_factory, p)
        total_sites += res["injected_sites"]
        total_secrets += len(res["secrets"])
        s = {x.kind for k, v in res["found"].items() if k in OUTPUTS for x in v}
        survived += len(s)
        per[p] = len(s)
    report("secrets: all positions", corpus_items=len(SECRETS), injected_sites=total_sites,
           secrets_injected=total_secrets, survived=survived, survived_by_position=per)
    assert total_sites and survived == 0, per


# ----------------------------------------------------------------------------------------- false positives

def test_redaction_false_positive_rate_on_the_real_fixtures(tmp_path):
    home = make_home(tmp_path / "home")
    from cortex_testkit import drop_event, hook_payload
    for name in TRANSCRIPTS:
        client = TRANSCRIPTS[name][2]
        drop_event(home, hook_payload(copy_fixture(name, tmp_path / "client"), client), client=client)
    stats = norm.run(home)
    assert stats["failed"] == 0
    files = record_files(home)
    flagged = {k: v.decode() for k, v in files.items() if b"[REDACTED:" in v}
    kinds = sorted({line.split("[REDACTED:")[1].split("]")[0] for v in flagged.values()
                    for line in v.split("\n") if "[REDACTED:" in line})
    rate = len(flagged) / max(len(files), 1)
    report("secrets: redaction false positives on real fixtures", fixtures=len(TRANSCRIPTS), records=len(files),
           records_with_placeholder=len(flagged), false_positive_rate="%.1f%%" % (100 * rate), kinds=kinds)
    for k, v in sorted(flagged.items()):
        body = v.split("\n---\n", 1)[-1]
        print("    %s: %s" % (k, body.strip()[:200]))
    assert rate <= 0.05


def test_redaction_flags_on_every_real_transcript_entry():
    """A finer false-positive figure: redact every prompt, reply, tool call and tool output of every fixture (the
    text extraction sees) and count the entries it changes.  Some may be real tokens the upstream authors left
    in their test data, so the bound is a rate (1%), not zero."""
    from cortex.ingest import adapters
    from cortex.model import redact
    from .helpers import FIXTURES
    total = flagged = 0
    kinds, examples = {}, []
    for name, (folder, main, client) in TRANSCRIPTS.items():
        res = adapters.get(client).parse(str(FIXTURES / folder / main))
        for e in res.entries:
            if not e.text:
                continue
            total += 1
            out, n = redact.clean(e.text)
            if n:
                flagged += 1
                for part in out.split("[REDACTED:")[1:]:
                    k = part.split("]")[0]
                    kinds[k] = kinds.get(k, 0) + 1
                if len(examples) < 6:
                    i = out.find("[REDACTED:")
                    examples.append("%s %s %s: ...%s..." % (name, e.ref, e.kind, out[max(i - 60, 0):i + 40]))
    report("secrets: redaction on every real transcript entry", entries=total, entries_changed=flagged,
           rate="%.2f%%" % (100.0 * flagged / max(total, 1)), kinds=kinds)
    for x in examples:
        print("    " + x.replace("\n", " "))
    assert total and flagged / total <= 0.01, (flagged, total, kinds)


# ----------------------------------------------------------------------------------------- <private>

PRIVATE = ("prv-hunter2-Priv8-XYZ", "078-05-1120-prv", "prv-multi-line-secret", "prv-whole-tag-only")


def _private_home(tmp_path):
    from cortex_testkit import append_turns, drop_event, hook_payload
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, [
        ("user", "Note <private>my ssn is 078-05-1120-prv</private> and remember where staging lives."),
        ("assistant", "[MEMORY: learned] The staging host is db.internal <private>root password prv-hunter2-Priv8-XYZ"
                      "</private> and it is slow.\n<private>\nprv-multi-line-secret\nspans lines\n</private>\nDone."),
        ("assistant", "[MEMORY: gotcha] <private>prv-whole-tag-only is the whole note</private>"),
    ])
    drop_event(home, hook_payload(path))
    norm.run(home)
    return home, path


def test_private_spans_never_reach_records_index_block_or_export(tmp_path):
    from cortex.brief import session_start
    home, path = _private_home(tmp_path)
    cwd = transcript_meta(path, "claude-code").cwd
    hay = {"records": "\n".join(b.decode() for b in record_files(home).values()),
           "index": db_text(home.index_db) + db_raw_bytes(home.index_db).decode("utf-8", "replace"),
           "block": session_start.build(home, cwd)[0], "export": _export(home) or "", "episodes": _episode_text(home)}
    assert "staging host is db.internal" in hay["records"]  # the rest of the note is kept
    assert "staging host is db.internal" in hay["episodes"] and "remember where staging lives" in hay["episodes"]
    found = {k: [p for p in PRIVATE if p in v] for k, v in hay.items()}
    # the engine keeps terms, not text: no term of a private span's own (one the rest of the home never uses)
    from cortex.store.terms import tokenize
    vocab = set(search_vocabulary(home).split("\n"))
    kept = set(tokenize(hay["records"] + "\n" + hay["episodes"]))
    found["search"] = [p for p in PRIVATE if (set(tokenize(p)) - kept) & vocab]
    assert vocab
    report("secrets: <private> spans", spans=len(PRIVATE), found_in={k: len(v) for k, v in found.items()})
    assert not any(found.values()), found
    assert "<private>" not in hay["records"] and "<private>" not in hay["block"] and "<private>" not in hay["episodes"]


def test_private_spans_never_reach_the_log(tmp_path):
    home, _path = _private_home(tmp_path)
    log = read_log(home)
    assert not [p for p in PRIVATE if p in log]


# ----------------------------------------------------------------------------------------- the vendor catalog

def _catalog_leaked(sample, out: str) -> bool:
    return any(f[i:i + 8] in out for f in sample.fragments for i in range(len(f) - 7))


def test_catalog_recall_of_redact_over_every_format_and_position():
    """Every format of secrets_corpus.FORMATS (over 100 vendor formats, keys and key files) in every position
    (prose, KEY=value, JSON, command line, URL, config/code file, a text cut inside the secret, line-split),
    plus passwords on command lines: `redact` alone."""
    from cortex.model import redact
    from .secrets_corpus import FORMATS, POSITIONS, catalog
    cat = catalog()
    missed = [s for s in cat if _catalog_leaked(s, redact.clean(s.text)[0])]
    recall = 1 - len(missed) / len(cat)
    report("secrets: catalog, redact", formats=len(FORMATS), positions=len(POSITIONS), samples=len(cat),
           missed=len(missed), recall="%.1f%%" % (100 * recall),
           missed_by=sorted({"%s/%s" % (s.kind, s.form) for s in missed}))
    assert len(FORMATS) >= 100 and len(POSITIONS) >= 8
    assert recall >= 0.98, [(s.kind, s.form, s.text[:80]) for s in missed[:10]]


def test_catalog_recall_through_the_pipeline(tmp_path):
    """The same samples written by the assistant as `[MEMORY: learned]` notes (one line each, as a tag line is)
    in a real Claude Code transcript; then the hook, the normalizer,
    session start and export.  A sample is recalled when no 8-character window of it is in any record field,
    the index bytes, the block, the export or the log."""
    from cortex.brief import session_start
    from cortex.ops import manage
    from cortex_testkit import append_turns, drop_event, hook_payload
    from .secrets_corpus import catalog
    cat = catalog()[::5]  # every 5th sample: every format, every position (5 and 8 are coprime); all take minutes
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    turns = [("assistant", "[MEMORY: learned] Deploy credential note %d: %s" % (i, " ".join(s.text.split())))
             for i, s in enumerate(cat)]
    append_turns(path, turns)
    drop_event(home, hook_payload(path))
    stats = norm.run(home)
    assert stats["failed"] == 0
    cwd = transcript_meta(path, "claude-code").cwd
    recs = list(manage.export_records(home))
    hay = {
        "records": "\n".join(b.decode("utf-8", "replace") for b in record_files(home).values()),
        "index": db_text(home.index_db) + "\n" + db_raw_bytes(home.index_db).decode("utf-8", "replace"),
        "logs": read_log(home),
        "block": session_start.build(home, cwd)[0],
        "export": "\n".join(manage.export_line(r) for r in recs),
    }
    everything = "\n".join(hay.values())
    missed = [s for s in cat if _catalog_leaked(s, everything)]
    notes = sum(1 for r in recs if "Deploy credential note" in r["text"])
    recall = 1 - len(missed) / len(cat)
    report("secrets: catalog, real pipeline", samples=len(cat), note_records=notes, missed=len(missed),
           recall="%.1f%%" % (100 * recall), missed_in={k: sum(1 for s in missed if _catalog_leaked(s, v))
                                                        for k, v in hay.items()})
    assert notes >= 0.5 * len(cat)  # the notes did become records (some merge: same type, close text)
    assert recall >= 0.98, [(s.kind, s.form) for s in missed[:10]]


def _ordinary_strings():
    """Strings that are not secrets: code identifiers (from Cortex's own source and the fixtures' code),
    git SHAs, hashes, UUIDs."""
    import hashlib
    import re
    import uuid
    from .helpers import REPO
    idents = set()
    for p in sorted((REPO / "cortex").rglob("*.py")):
        idents.update(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]{7,}\b", p.read_text(encoding="utf-8")))
    for p in sorted((REPO / "tests" / "fixtures" / "transcripts").rglob("*.jsonl"))[:6]:
        idents.update(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]{7,40}\b", p.read_text(encoding="utf-8"))[:4000])
    r = random.Random(99)
    ids = []
    for i in range(400):
        seed = str(r.random()).encode()
        ids += [hashlib.sha1(seed).hexdigest(), hashlib.sha256(seed).hexdigest(), str(uuid.UUID(int=r.getrandbits(128))),
                hashlib.sha1(seed).hexdigest()[:7], "sha256:" + hashlib.sha256(seed).hexdigest(),
                hashlib.md5(seed).hexdigest()]
    return sorted(idents), ids


def test_false_positives_on_identifiers_hashes_uuids_and_shas():
    from cortex.model import redact
    idents, ids = _ordinary_strings()
    forms = ("{}", "call {}() next", "x = {}", "see {} in the diff", "commit {}", "the key is {}",
             '{{"id": "{}", "ok": true}}', "ended at {}", "ended at {}…")
    texts = [f.format(x) for i, x in enumerate(idents + ids) for f in forms[i % len(forms):][:3]]
    flagged = [t for t in texts if redact.redact(t)[1]]
    rate = len(flagged) / len(texts)
    report("secrets: false positives on ordinary strings", identifiers=len(idents), hashes_uuids_shas=len(ids),
           texts=len(texts), flagged=len(flagged), rate="%.2f%%" % (100 * rate), examples=flagged[:5])
    assert len(idents) >= 1000
    assert rate <= 0.01, flagged[:20]
