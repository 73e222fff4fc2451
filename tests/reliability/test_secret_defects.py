"""Issue #18, defects 14-17: the paths by which a secret reached a record although `redact` knew its format.

14  text cut before it was redacted: a private key in a compaction summary lost its END marker and newlines to
    the cut and its base64 lines survived; a `ghp_` token cut at 200 characters was too short for its rule.
16  `provenance.transcript` (the transcript path, whose folder Claude Code names after the project folder) was
    never redacted.
17  `cortex import` redacted only `text`: a token in a plan item or in `files` reached records, index and block.

Each test runs the real pipeline (capture, normalizer, records, index, session start, export) in-process and
looks for the secret's random part in every output.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from cortex.ingest import run as norm
from cortex_testkit import append_turns, drop_event, hook_payload, transcript_meta

from .helpers import copy_fixture, db_raw_bytes, db_text, make_home, read_log, record_files
from .secrets_corpus import B62, B64, _rand, windows


def _outputs(home, cwd=None) -> dict:
    from cortex.brief import session_start
    from cortex.ops import manage
    out = {
        "records": "\n".join(b.decode("utf-8", "replace") for b in record_files(home).values()),
        "index": db_text(home.index_db) + "\n" + db_raw_bytes(home.index_db).decode("utf-8", "replace"),
        "logs": read_log(home),
        "export": "\n".join(manage.export_line(r) for r in manage.export_records(home)),
    }
    if cwd:
        out["block"] = session_start.build(home, cwd)[0]
    return out


def _leaks(outputs: dict, secret: str, size: int = 12) -> dict:
    ws = windows(secret, size)
    return {k: [w for w in ws if w in v][:2] for k, v in outputs.items() if any(w in v for w in ws)}


# ------------------------------------------------------------------------------------------------ 14

def test_private_key_in_a_compaction_summary_is_redacted_before_the_cut(tmp_path):
    r = random.Random(14)
    lines = [_rand(r, B64, 64) for _ in range(20)]
    pem = "-----BEGIN RSA PRIVATE KEY-----\n%s\n-----END RSA PRIVATE KEY-----" % "\n".join(lines)
    summary = ("This session is being continued from a previous conversation that ran out of context.\n"
               "Summary:\n1. Primary Request and Intent:\n   Deploy the staging box.\n\n"
               "2. Current Work:\n   We set up the deploy user on staging and wrote its key to ~/.ssh/deploy "
               "so that the pipeline can push over SSH; the key we generated is below and the pipeline reads it "
               "from the secret store from now on:\n%s\n   Then we checked the pipeline.\n" % pem)
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, [("user", summary)])
    raw = path.read_text(encoding="utf-8").splitlines()
    last = json.loads(raw[-1])
    last["isCompactSummary"] = True
    raw[-1] = json.dumps(last)
    path.write_text("\n".join(raw) + "\n", encoding="utf-8")
    drop_event(home, hook_payload(path))
    assert norm.run(home)["failed"] == 0
    cwd = transcript_meta(path, "claude-code").cwd
    out = _outputs(home, cwd)
    assert "deploy user on staging" in out["records"]  # the summary record was written
    leaks = {k: v for k, v in ((k, _leaks({k: o}, "".join(lines[1:]), 16)) for k, o in out.items()) if v}
    assert not leaks, leaks


def test_token_cut_at_the_prompt_limit_is_redacted(tmp_path):
    r = random.Random(141)
    body = _rand(r, B62, 36)
    # no space after the first 90 characters: clean_sentence cuts at 199, 24 characters into the token body
    head = "Please wire the nightly job to the release webhook, it has to run after the tests pass and "
    url = "https://ci.example.com/hooks/release?ref=main&job=nightly&attempt=3&notify=ops&channel=rel&x=1&token="
    prompt = head + url[: 199 - len(head) - 4 - 24] + "ghp_" + body + " and tell me when it is done."
    assert prompt.index("ghp_") + 4 + 24 == 199
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    append_turns(path, [("user", prompt), ("assistant", "On it.")])
    drop_event(home, hook_payload(path))
    assert norm.run(home)["failed"] == 0
    out = _outputs(home, transcript_meta(path, "claude-code").cwd)
    out["state"] = Path(home.root, "state", "cursors.json").read_text(encoding="utf-8")
    assert "release webhook" in out["records"] + out["state"]
    assert not _leaks(out, body[:24], 8)


def test_cut_keeps_no_partial_secret():
    from cortex.model import redact
    r = random.Random(142)
    cases = []
    for prefix, n in (("ghp_", 36), ("sk-ant-api03-", 95), ("xoxb-1234567890-", 30), ("glpat-", 20),
                      ("AKIA", 16), ("hvs.", 90), ("dckr_pat_", 27)):
        body = _rand(r, B62, n)
        text = "set it to " + prefix + body + " now"
        for cut in range(len("set it to ") + len(prefix) + 6, len(text) - 4):
            cases.append((body, redact.cut(text, cut)))
    lines = [_rand(r, B64, 64) for _ in range(8)]
    pem = "key: -----BEGIN OPENSSH PRIVATE KEY-----\n%s\n-----END OPENSSH PRIVATE KEY-----" % "\n".join(lines)
    for cut in range(60, len(pem), 37):
        cases.append(("".join(lines), redact.clean(redact.cut(pem, cut))[0]))
        cases.append(("".join(lines), redact.clean(redact.cut(pem.replace("\n", " "), cut))[0]))
    bad = [(c, b) for b, c in cases if any(w in redact.clean(c)[0] for w in windows(b, 8))]
    assert not bad, bad[:3]


# ------------------------------------------------------------------------------------------------ 16

def test_token_in_the_transcript_path_is_redacted(tmp_path):
    r = random.Random(16)
    body = _rand(r, B62, 36)
    folder = tmp_path / "client" / ("-home-ada-deploy-ghp_" + body)
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", folder)
    drop_event(home, hook_payload(path))
    assert norm.run(home)["failed"] == 0
    out = _outputs(home, transcript_meta(path, "claude-code").cwd)
    assert out["records"] and "transcript:" in out["records"]
    assert not _leaks(out, body), _leaks(out, body)


# ------------------------------------------------------------------------------------------------ 17

def test_import_redacts_every_field(tmp_path):
    from cortex.brief import session_start
    from cortex.ops import manage
    r = random.Random(17)
    tokens = [_rand(r, B62, 36) for _ in range(4)]
    home = make_home(tmp_path / "home")
    path = copy_fixture("cc-1.0.98", tmp_path / "client")
    drop_event(home, hook_payload(path))
    assert norm.run(home)["failed"] == 0
    cwd = transcript_meta(path, "claude-code").cwd
    recs = list(manage.export_records(home))
    plan = next((x for x in recs if x.get("plan")), recs[0])
    plan = dict(plan, plan=[dict(i) for i in (plan.get("plan") or [{"text": "x", "status": "pending"}])],
                files=list(plan.get("files") or []))
    plan["plan"][0]["text"] = "push with ghp_%s to the mirror" % tokens[0]
    plan["files"].append("deploy/ghp_%s.env" % tokens[1])
    plan["branch"] = "fix/ghp_%s" % tokens[2]
    plan["provenance"] = [dict(p, transcript="/tmp/ghp_%s/s.jsonl" % tokens[3]) for p in plan["provenance"]]
    stats = manage.import_records(home, manage.parse_import([json.dumps(plan)]))
    assert stats["replaced"] + stats["created"] == 1
    out = _outputs(home, cwd)
    out["block"] = session_start.build(home, cwd)[0]
    leaks = {t[:8]: _leaks(out, t) for t in tokens if _leaks(out, t)}
    assert not leaks, leaks
