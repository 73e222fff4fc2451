"""The people-facing commands (cortex.cli.commands), run through the CLI entry point on a home built from the
real fixture transcripts: each transcript goes through a stop event (capture.build_event + write_event)
and a normalizer run, exactly as in use.

The home is built once per module into a template and copied for each test (commands change it).
Fixtures live in this file on purpose (no conftest dependency).
"""
import glob
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
REPO = os.path.dirname(HERE)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from cortex.brief import session_start
from cortex.model import rank

from cortex.store import records
from cortex.cli.main import main  # noqa: E402
from cortex.core.home import Home  # noqa: E402

TRANSCRIPTS = os.path.join(HERE, "fixtures", "transcripts")
CODEMIE = "codex-0.125.0-tui-apply-patch"      # a codex session with an open plan about a compaction threshold
REPO_SESSION = "cc-2.0.76-compact-boundary"     # a claude-code session with decisions and a rejected approach
DEMO = "cc-1.0.98-init-todowrite"               # its project has finished plans only
# The normalizer archives and prunes records by age (cortex.curate.consolidate.lifecycle).  The template is
# built as of a day after the newest fixture session, so what the transcripts produced is all there;
# the commands themselves then run at the real time, as they would for a person.
BUILT_AT = 1778544000.0  # 2026-05-12T00:00:00Z
FAKE_KEY = "sk-ant-api03-" + "Zx9Qw3Er7Ty1Ui5Op2As6Df0Gh4Jk8Lz" * 3 + "AA"


def _sessions():
    out = []
    for client in ("claude-code", "codex"):
        for path in sorted(glob.glob(os.path.join(TRANSCRIPTS, client, "*", "*.jsonl"))):
            if not os.path.basename(path).startswith("agent-"):
                out.append((client, path))
    return out


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A home fed every Claude Code and Codex fixture through stop events and one normalizer run."""
    from cortex.ingest import adapters, run as normalize
    from cortex.capture import hook as capture
    base = tmp_path_factory.mktemp("cmd-template")
    info = {"base": str(base), "cwd": {}, "session": {}}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CORTEX_HOME", str(base / "home"))
        for k in list(os.environ):
            if k.startswith(("CODEX_", "GEMINI_")) or k in ("CLAUDECODE", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_SESSION_ID"):
                mp.delenv(k, raising=False)
        home = Home(str(base / "home")).ensure()
        for client, src in _sessions():
            folder = os.path.basename(os.path.dirname(src))
            dst = base / "transcripts" / folder
            shutil.copytree(os.path.dirname(src), str(dst), dirs_exist_ok=True)
            path = str(dst / os.path.basename(src))
            meta = adapters.get(client).parse(path).meta
            cwd = meta.cwd or str(dst)
            sid = meta.session_id or os.path.basename(path)
            payload = {"session_id": sid, "transcript_path": path, "cwd": cwd, "hook_event_name": "Stop"}
            capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), client, home))
            info["cwd"][folder] = cwd
            info["session"][folder] = sid
        try:
            stats = normalize.run(home, now=BUILT_AT)
        except TypeError:  # a normalizer without the `now` parameter
            stats = normalize.run(home)
        assert stats["failed"] == 0 and stats["created"] > 10, stats
    return info


@pytest.fixture
def env(template, tmp_path, monkeypatch):
    """A private copy of the template home, with HOME/XDG/PATH-free client and schedule lookups."""
    root = tmp_path / "home"
    shutil.copytree(os.path.join(template["base"], "home"), str(root), ignore=shutil.ignore_patterns("blobs"))
    os.makedirs(str(root / "inbox" / "blobs"), mode=0o700)
    monkeypatch.setenv("CORTEX_HOME", str(root))
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user / ".config"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("VISUAL", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(str(work))
    return dict(template, home=Home(str(root)), tmp=tmp_path, user=user)


def cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def cli_json(capsys, *argv):
    rc, out, err = cli(capsys, *argv, "--json")
    return rc, json.loads(out), err


def recs_of(home, scope_id, rtype=None):
    out = []
    for p in records.iter_paths(home.records):
        r = records.read(p)
        if r["scope_id"] == scope_id and (rtype is None or r["type"] == rtype):
            out.append((r, p))
    return out


def project_id(cwd):
    from cortex.model import scope
    return scope.project_for(cwd)["id"]


def index_row(home, rid):
    con = sqlite3.connect(home.index_db)
    try:
        return con.execute("SELECT status, times, pinned, text FROM records WHERE id=?", (rid,)).fetchone()
    finally:
        con.close()


def block(env, cwd):
    return session_start.build(env["home"], cwd)


# -- recall --------------------------------------------------------------------------------------

def test_recall_word_from_a_plan_returns_that_plan_first(env, capsys):
    cwd = env["cwd"][CODEMIE]
    (plan, _), = recs_of(env["home"], project_id(cwd), "plan")
    assert "compaction threshold" in plan["text"] and plan["status"] == "active"
    rc, res, _ = cli_json(capsys, "recall", "compaction", "threshold", "--cwd", cwd)
    assert rc == 0
    assert res["hits"][0]["id"] == plan["id"]
    assert res["hits"][0]["type"] == "plan" and res["hits"][0]["where"] == "project"
    assert res["project"] == project_id(cwd) and res["domain"] == "personal"
    # people's output: aligned columns, the plan on the first line after the header
    rc, out, _ = cli(capsys, "recall", "compaction", "threshold", "--cwd", cwd, "--no-use")
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "KIND", "TYPE", "AGE", "CONF", "SCOPE", "TEXT"]
    assert lines[1].startswith(plan["id"]) and " record " in lines[1] and " plan " in lines[1] and "0.90" in lines[1]
    assert lines[0].index("TEXT") == lines[1].index("[x]")  # columns line up
    assert "\033[" not in out


def test_recall_is_a_use_and_raises_activation(env, capsys):
    from cortex.core import config
    home = env["home"]
    cwd = env["cwd"][CODEMIE]
    (plan, path), = recs_of(home, project_id(cwd), "plan")
    assert plan["used"] == []
    times_before = json.loads(index_row(home, plan["id"])[1])
    rc, res, _ = cli_json(capsys, "recall", "compaction threshold", "--cwd", cwd)
    assert rc == 0 and res["used_at"]
    after = records.read(path)
    assert after["used"] == [res["used_at"]]
    assert after["text"] == plan["text"] and after["provenance"] == plan["provenance"]
    times_after = json.loads(index_row(home, plan["id"])[1])
    assert len(times_after) == len(times_before) + 1
    cfg = config.load(home)
    now = time.time() + 120
    a0 = rank.parts({"type": "plan", "times": times_before}, now, cfg)["activation"]
    a1 = rank.parts({"type": "plan", "times": times_after}, now, cfg)["activation"]
    assert a1 > a0 + 1.0
    # --no-use leaves the record alone
    rc, res2, _ = cli_json(capsys, "recall", "compaction threshold", "--cwd", cwd, "--no-use")
    assert res2["used_at"] is None and records.read(path)["used"] == [res["used_at"]]


def test_recall_json_shape_filters_and_k(env, capsys):
    cwd = env["cwd"][REPO_SESSION]
    ids = []
    for rtype, text in (("decision", "Chose the wombat cache over a plain dict because wombat evicts by size"),
                        ("gotcha", "The wombat cache drops wombat entries silently when the wombat key is empty"),
                        ("learned", "Wombat cache metrics live in the stats endpoint")):
        ids.append(cli_json(capsys, "remember", "--type", rtype, text, "--cwd", cwd)[1]["record"]["id"])
    rc, res, _ = cli_json(capsys, "recall", "wombat", "cache", "--cwd", cwd, "--no-use")
    assert rc == 0 and sorted(h["id"] for h in res["hits"]) == sorted(ids)
    hit = res["hits"][0]
    assert set(hit) == {"id", "type", "status", "scope", "scope_id", "where", "age", "last_touched", "confidence",
                        "effective_confidence", "pinned", "priority", "score", "bm25", "relevance", "activation",
                        "recency", "snippet", "text", "path", "restored", "kind", "session", "sessions", "at", "client"}
    assert hit["kind"] == "record"
    assert set(res) == {"query", "terms", "project", "domain", "scope", "hits", "used_at", "note"}
    assert max(h["relevance"] for h in res["hits"]) == 1.0 and all(0 < h["relevance"] <= 1 for h in res["hits"])
    scores = [h["score"] for h in res["hits"]]
    assert scores == sorted(scores, reverse=True)  # one tier (the project): by score
    assert res["hits"][0]["id"] == ids[1]  # "wombat" three times: the most relevant
    rc, res, _ = cli_json(capsys, "recall", "wombat", "cache", "--cwd", cwd, "--no-use", "-k", "1")
    assert [h["id"] for h in res["hits"]] == [ids[1]]
    rc, res, _ = cli_json(capsys, "recall", "wombat", "--cwd", cwd, "--no-use", "--type", "decision,learned")
    assert sorted(h["id"] for h in res["hits"]) == sorted([ids[0], ids[2]])
    # another project's words are not found from here, but are with --scope all
    rc, res, _ = cli_json(capsys, "recall", "compaction", "threshold", "--cwd", cwd, "--no-use")
    assert res["hits"] == []
    rc, res, _ = cli_json(capsys, "recall", "compaction", "threshold", "--cwd", cwd, "--no-use", "--scope", "all")
    assert res["hits"] and res["hits"][0]["where"] == "other"


def test_recall_lists_project_before_domain(env, capsys):
    cwd = env["cwd"][REPO_SESSION]
    cli(capsys, "remember", "--domain", "zebra zebra zebra: the zebra crossing rule for zebra tables", "--cwd", cwd)
    cli(capsys, "remember", "a zebra note about the local build", "--cwd", cwd)
    rc, res, _ = cli_json(capsys, "recall", "zebra", "--cwd", cwd, "--no-use")
    assert [h["where"] for h in res["hits"]] == ["project", "domain"]
    assert res["hits"][1]["bm25"] > res["hits"][0]["bm25"]  # the domain hit is more relevant, still second
    rc, res, _ = cli_json(capsys, "recall", "zebra", "--cwd", cwd, "--no-use", "--scope", "domain")
    assert [h["where"] for h in res["hits"]] == ["domain"]


def test_recall_errors_are_one_line(env, capsys):
    rc, out, err = cli(capsys, "recall", "the", "and", "--cwd", env["cwd"][CODEMIE])
    assert rc == 1 and err.count("\n") == 1 and err.startswith("cortex: ") and "searchable" in err
    rc, out, err = cli(capsys, "recall", "plan", "--type", "nonsense")
    assert rc == 1 and err.count("\n") == 1 and "unknown type" in err


def test_recall_over_10000_records(tmp_path, monkeypatch, capsys):
    from cortex.bench import run as bench
    root = str(tmp_path / "big")
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.setenv("CORTEX_HOME", root)  # build_home sets it too; monkeypatch restores it afterwards
    with monkeypatch.context() as m:
        m.setattr(os, "fsync", lambda fd: None)  # 10,000 durable writes only slow the set-up down
        info = bench.build_home(root, 10000, str(proj))
    assert info["records"] == 10000
    rc, res, _ = cli_json(capsys, "recall", "session", "token", "cache", "-k", "7", "--cwd", str(proj))
    assert rc == 0 and len(res["hits"]) == 7
    assert res["used_at"] and all(h["where"] == "project" for h in res["hits"][:1])


# -- remember ------------------------------------------------------------------------------------

def test_remember_then_recall_finds_it(env, capsys):
    cwd = env["cwd"][REPO_SESSION]
    rc, res, _ = cli_json(capsys, "remember", "The flaky login test needs the mock clock frozen", "--cwd", cwd)
    assert rc == 0 and res["action"] == "created"
    r = res["record"]
    assert r["type"] == "learned" and r["scope"] == "L0" and r["scope_id"] == project_id(cwd)
    rec = records.read(r["path"])
    assert rec["provenance"][0]["layer"] == "manual" and rec["provenance"][0]["client"] == "cli"
    assert rec["provenance"][0]["session"] is None and rec["confidence"] == 1.0
    rc, hits, _ = cli_json(capsys, "recall", "flaky login clock", "--cwd", cwd)
    assert hits["hits"][0]["id"] == r["id"]
    # the same text again is the same record
    rc, again, _ = cli_json(capsys, "remember", "The flaky login test needs the mock clock frozen", "--cwd", cwd)
    assert again["record"]["id"] == r["id"] and again["action"] == "unchanged"
    # and it is in the next session's block
    text, _ = block(env, cwd)
    assert "flaky login test" in text
    rc, out, _ = cli(capsys, "remember", "Run the migrations before the seed script", "--cwd", cwd)
    assert rc == 0 and out.startswith("remembered r")


def test_remember_redacts_a_secret(env, capsys):
    cwd = env["cwd"][REPO_SESSION]
    rc, res, _ = cli_json(capsys, "remember", "The staging API key is %s for now" % FAKE_KEY, "--cwd", cwd)
    assert rc == 0 and res["redactions"] == 1
    with open(res["record"]["path"], encoding="utf-8") as f:
        raw = f.read()
    assert FAKE_KEY not in raw and "sk-ant-api03" not in raw
    assert "[REDACTED:anthropic_key]" in raw
    assert FAKE_KEY not in index_row(env["home"], res["record"]["id"])[3]
    rc, out, _ = cli(capsys, "show", res["record"]["id"])
    assert FAKE_KEY not in out


def test_remember_scopes_pin_and_priority(env, capsys):
    cwd = env["cwd"][REPO_SESSION]
    rc, d, _ = cli_json(capsys, "remember", "--domain", "Always run black before committing", "--cwd", cwd)
    assert (d["record"]["scope"], d["record"]["scope_id"]) == ("L1", "personal")
    rc, g, _ = cli_json(capsys, "remember", "--global", "Commit messages in the imperative mood", "--cwd", cwd)
    assert (g["record"]["scope"], g["record"]["scope_id"]) == ("L1", "personal")
    rc, p, _ = cli_json(capsys, "remember", "--type", "preference", "Prefer small pull requests", "--cwd", cwd)
    assert p["record"]["scope"] == "L1" and p["record"]["type"] == "preference"
    rc, p2, _ = cli_json(capsys, "remember", "--type", "preference", "--project", "Prefer pnpm here", "--cwd", cwd)
    assert p2["record"]["scope"] == "L0"
    rc, pin, _ = cli_json(capsys, "remember", "--pin", "--priority", "3", "--type", "gotcha",
                          "The CI cache key ignores the lockfile", "--cwd", cwd)
    assert pin["record"]["pinned"] is True and pin["record"]["priority"] == 3
    _, details = block(env, cwd)
    assert details["kept"][0]["id"] == pin["record"]["id"]
    # the domain records show in another project of the same domain
    text, _ = block(env, env["cwd"][CODEMIE])
    assert "Always run black before committing" in text and "Prefer pnpm here" not in text
    rc, out, err = cli(capsys, "remember", "--type", "bogus", "x y z")
    assert rc == 1 and err.count("\n") == 1 and "unknown type 'bogus'" in err


# -- forget, reset -------------------------------------------------------------------------------

def _rejected(env):
    cwd = env["cwd"][REPO_SESSION]
    (rec, path), = recs_of(env["home"], project_id(cwd), "rejected")
    return cwd, rec, path


def test_forget_archives_then_recall_all_restores(env, capsys):
    cwd, rec, path = _rejected(env)
    text, _ = block(env, cwd)
    assert rec["text"] in text
    rc, res, _ = cli_json(capsys, "forget", rec["id"])
    assert rc == 0 and res["mode"] == "archive" and res["records"][0]["action"] == "archived"
    assert records.read(path)["status"] == "archived" and index_row(env["home"], rec["id"])[0] == "archived"
    assert records.read(path)["archived_at"].endswith("Z")
    text, _ = block(env, cwd)
    assert rec["text"] not in text
    rc, why, _ = cli_json(capsys, "why", "--cwd", cwd)
    assert rec["id"] not in {k["id"] for k in why["kept"]}
    assert {(e["id"], e["reason"]) for e in why["left"]} >= {(rec["id"], "archived")}
    rc, res, _ = cli_json(capsys, "recall", "wrong approach", "--cwd", cwd)
    assert rec["id"] not in [h["id"] for h in res["hits"]]
    rc, res, _ = cli_json(capsys, "recall", "wrong approach", "--cwd", cwd, "--all")
    assert res["hits"][0]["id"] == rec["id"] and res["hits"][0]["restored"] is True
    assert records.read(path)["status"] == "active"  # asked for, so it matters again
    assert "archived_at" not in records.read(path)
    assert rec["text"] in block(env, cwd)[0]
    rc, out, _ = cli(capsys, "forget", rec["id"][:8])
    assert rc == 0 and "archived" in out


def test_forget_hard_removes_file_and_index_rows(env, capsys):
    from cortex.ops import manage
    cwd, rec, path = _rejected(env)
    friend = cli_json(capsys, "remember", "Record types stay in the JSONL header", "--cwd", cwd)[1]["record"]
    manage.update(env["home"], friend["id"], lambda r: r.update(related=[rec["id"]]) or True)
    assert records.read(friend["path"])["related"] == [rec["id"]]
    rc, res, _ = cli_json(capsys, "forget", rec["id"], "--hard", "--dry-run")
    assert rc == 0 and res["records"][0]["action"] == "would delete" and os.path.exists(path)
    rc, res, _ = cli_json(capsys, "forget", rec["id"], "--hard")
    assert rc == 0 and res["records"][0]["action"] == "deleted"
    assert not os.path.exists(path)
    assert index_row(env["home"], rec["id"]) is None
    con = sqlite3.connect(env["home"].index_db)
    assert con.execute("SELECT COUNT(*) FROM postings WHERE id=?", (rec["id"],)).fetchone()[0] == 0
    con.close()
    rc, res, _ = cli_json(capsys, "recall", "wrong approach", "--cwd", cwd, "--all")
    assert rec["id"] not in [h["id"] for h in res["hits"]]
    rc, out, err = cli(capsys, "show", rec["id"])
    assert rc == 1 and "no record with id" in err
    assert "related" not in records.read(friend["path"])  # no link is left pointing at nothing


def test_forget_query_matching_several_needs_yes(env, capsys):
    cwd = env["cwd"][REPO_SESSION]
    made = [cli_json(capsys, "remember", text, "--cwd", cwd)[1]["record"]
            for text in ("The numbat importer skips blank rows", "Numbat exports need the UTF-8 BOM",
                         "Exports need a header row")]
    numbats = {r["path"]: open(r["path"], "rb").read() for r in made[:2]}
    other = open(made[2]["path"], "rb").read()
    rc, out, err = cli(capsys, "forget", "numbat", "--cwd", cwd)
    assert rc == 1 and "--yes" in err and err.count("\n") == 1
    assert all(r["id"] in out for r in made[:2]) and made[2]["id"] not in out  # listed
    assert {p: open(p, "rb").read() for p in numbats} == numbats
    rc, res, _ = cli_json(capsys, "forget", "numbat", "--cwd", cwd, "--dry-run")
    assert rc == 0 and res["dry_run"] and sorted(r["action"] for r in res["records"]) == ["would archive"] * 2
    assert {p: open(p, "rb").read() for p in numbats} == numbats
    rc, res, _ = cli_json(capsys, "forget", "numbat exports", "--cwd", cwd)  # every word must match: one record
    assert rc == 0 and [r["id"] for r in res["records"]] == [made[1]["id"]]
    rc, res, _ = cli_json(capsys, "forget", "numbat", "--cwd", cwd, "--yes")  # the archived one is not matched again
    assert rc == 0 and [(r["id"], r["action"]) for r in res["records"]] == [(made[0]["id"], "archived")]
    assert all(records.read(p)["status"] == "archived" for p in numbats)
    assert open(made[2]["path"], "rb").read() == other
    rc, res, _ = cli_json(capsys, "forget", "nothing-matches-this-xyzzy", "--cwd", cwd)
    assert rc == 0 and res["count"] == 0


def test_forget_asks_on_a_terminal(env, capsys, monkeypatch):
    import io
    from cortex.cli import commands
    cwd = env["cwd"][REPO_SESSION]
    made = [cli_json(capsys, "remember", t, "--cwd", cwd)[1]["record"]
            for t in ("The quokka job retries twice", "The quokka job logs to stderr")]
    monkeypatch.setattr(commands, "_interactive", lambda: True)
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    rc, out, err = cli(capsys, "forget", "quokka", "job", "--cwd", cwd)
    assert rc == 1 and "Archive these 2 records? [y/N]" in err and "nothing changed" in out
    assert all(records.read(r["path"])["status"] == "active" for r in made)
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    rc, out, err = cli(capsys, "forget", "quokka", "job", "--cwd", cwd)
    assert rc == 0 and all(records.read(r["path"])["status"] == "archived" for r in made)


def test_forget_session(env, capsys):
    home = env["home"]
    sid = env["session"][REPO_SESSION]
    mine = [p for p in records.iter_paths(home.records)
            if any(x.get("session") == sid for x in records.read(p)["provenance"])]
    others = {p: open(p, "rb").read() for p in records.iter_paths(home.records) if p not in mine}
    assert len(mine) >= 3
    rc, out, err = cli(capsys, "forget", "--session", sid)
    assert rc == 1 and "--yes" in err
    rc, res, _ = cli_json(capsys, "forget", "--session", sid, "--hard", "--yes")
    assert rc == 0 and res["count"] == len(mine)
    assert not any(os.path.exists(p) for p in mine)
    assert {p: open(p, "rb").read() for p in others} == others


def test_reset_project(env, capsys):
    home = env["home"]
    cwd = env["cwd"][REPO_SESSION]
    pid = project_id(cwd)
    n = len(recs_of(home, pid))
    assert n >= 5
    others = {p: open(p, "rb").read() for p in records.iter_paths(home.records) if os.sep + pid + os.sep not in p}
    assert others
    rc, res, _ = cli_json(capsys, "reset", "--project", "--cwd", cwd, "--dry-run")
    assert rc == 0 and res["count"] == n and len(recs_of(home, pid)) == n
    rc, out, err = cli(capsys, "reset", "--project", "--cwd", cwd)
    assert rc == 1 and "--yes" in err and len(recs_of(home, pid)) == n
    rc, out, err = cli(capsys, "reset", "--cwd", cwd)
    assert rc == 1 and "--project" in err
    rc, res, _ = cli_json(capsys, "reset", "--project", "--cwd", cwd, "--yes")
    assert rc == 0 and res["mode"] == "delete" and res["count"] == n
    assert recs_of(home, pid) == []
    con = sqlite3.connect(home.index_db)
    assert con.execute("SELECT COUNT(*) FROM records WHERE scope_id=?", (pid,)).fetchone()[0] == 0
    con.close()
    assert block(env, cwd)[0] == ""
    assert {p: open(p, "rb").read() for p in others} == others  # other projects untouched


# -- pin, show, edit -----------------------------------------------------------------------------

def test_pin_puts_a_record_first_in_the_block(env, capsys):
    cwd = env["cwd"][REPO_SESSION]
    _, details = block(env, cwd)
    last = details["kept"][-1]
    assert details["kept"][0]["id"] != last["id"]
    rc, res, _ = cli_json(capsys, "pin", last["id"])
    assert rc == 0 and res["changed"] and res["record"]["pinned"]
    text, details = block(env, cwd)
    assert details["kept"][0]["id"] == last["id"]
    pinned_lines = [ln for ln in text.splitlines() if ", pinned]" in ln]
    assert len(pinned_lines) == 1 and " ".join(last["text"].split())[:40] in pinned_lines[0]
    rc, why, _ = cli_json(capsys, "why", "--cwd", cwd)
    assert why["kept"][0]["id"] == last["id"] and why["kept"][0]["pinned"] is True
    rc, out, _ = cli(capsys, "pin", last["id"])
    assert "already pinned" in out
    rc, res, _ = cli_json(capsys, "unpin", last["id"])
    assert res["changed"] and block(env, cwd)[1]["kept"][0]["id"] != last["id"]


def test_show_full_record_with_provenance_and_uses(env, capsys):
    cwd = env["cwd"][CODEMIE]
    (plan, path), = recs_of(env["home"], project_id(cwd), "plan")
    cli(capsys, "recall", "compaction", "--cwd", cwd, "--all")
    rc, rec, _ = cli_json(capsys, "show", plan["id"])
    assert rc == 0 and rec["path"] == path and rec["text"] == plan["text"] and len(rec["used"]) == 1
    prov = rec["provenance"][0]
    assert prov["session"] == env["session"][CODEMIE] and prov["layer"] == "structural"
    assert prov["ref"].startswith("L") and prov["transcript"].endswith(".jsonl")
    assert rec["plan"] == plan["plan"]
    rc, out, _ = cli(capsys, "show", plan["id"][:7])
    assert rc == 0
    for part in (plan["id"], prov["session"], prov["ref"], "structural", "provenance (1)", "used (1)", "[>] Run focused"):
        assert part in out
    rc, out, err = cli(capsys, "show", "rffffffffffffffff")
    assert rc == 1 and err == "cortex: no record with id rffffffffffffffff; find ids with `cortex recall WORDS` or " \
                              "`cortex why`\n"
    rc, out, err = cli(capsys, "show", "not-an-id")
    assert rc == 1 and err.count("\n") == 1


def _editor(tmp_path, old, new):
    script = tmp_path / "ed.py"
    script.write_text("import sys\np = sys.argv[1]\ns = open(p, encoding='utf-8').read()\n"
                      "open(p, 'w', encoding='utf-8').write(s.replace(%r, %r))\n" % (old, new))
    return "%s %s" % (shlex.quote(sys.executable), shlex.quote(str(script)))


def test_edit_saves_a_valid_change_and_reindexes(env, capsys, monkeypatch):
    cwd, rec, path = _rejected(env)
    monkeypatch.setenv("EDITOR", _editor(env["tmp"], "wrong approach", "wrong approach for quokka exports"))
    rc, out, err = cli(capsys, "edit", rec["id"])
    assert rc == 0 and "saved" in out
    assert records.read(path)["text"].endswith("wrong approach for quokka exports")
    rc, res, _ = cli_json(capsys, "recall", "quokka", "--cwd", cwd, "--no-use")
    assert res["hits"][0]["id"] == rec["id"]


def test_edit_never_leaves_an_invalid_record(env, capsys, monkeypatch):
    cwd, rec, path = _rejected(env)
    before = open(path, "rb").read()
    for old, new, why in (("status: active", "status: forgotten", "status"),
                          ("---\nid:", "id:", "front matter"),
                          ("id: %s" % rec["id"], "id: r0000000000000000", "id cannot be changed")):
        monkeypatch.setenv("EDITOR", _editor(env["tmp"], old, new))
        rc, out, err = cli(capsys, "edit", rec["id"])
        assert rc == 1 and why in err and err.count("\n") == 1, err
        assert open(path, "rb").read() == before
    monkeypatch.setenv("EDITOR", "false")
    rc, out, err = cli(capsys, "edit", rec["id"])
    assert rc == 1 and "status 1" in err and open(path, "rb").read() == before


def test_edit_again_after_an_invalid_edit(env, tmp_path):
    from cortex.ops import manage
    cwd, rec, path = _rejected(env)
    script = tmp_path / "twice.py"
    script.write_text(
        "import os, sys\n"
        "p = sys.argv[1]\n"
        "flag = %r\n"
        "s = open(p, encoding='utf-8').read()\n"
        "if not os.path.exists(flag):\n"
        "    open(flag, 'w').close()\n"
        "    s = s.replace('status: active', 'status: nope')\n"
        "else:\n"
        "    s = s.replace('status: nope', 'status: active').replace('wrong approach', 'wrong approach (kept)')\n"
        "open(p, 'w', encoding='utf-8').write(s)\n" % str(tmp_path / "ran-once"))
    problems = []
    editor = "%s %s" % (shlex.quote(sys.executable), shlex.quote(str(script)))
    res = manage.edit_record(env["home"], rec["id"], editor=editor, ask=lambda problem: problems.append(problem) or "edit")
    assert res["changed"] and len(problems) == 1 and "status" in problems[0]
    assert records.read(path)["text"].endswith("wrong approach (kept)")
    assert records.read(path)["status"] == "active"


# -- why -----------------------------------------------------------------------------------------

def test_why_explains_the_block(env, capsys):
    from cortex.core import config
    cwd = env["cwd"][REPO_SESSION]
    text, details = block(env, cwd)
    rc, why, _ = cli_json(capsys, "why", "--cwd", cwd)
    assert rc == 0 and why["block"] == text and why["chars"] == len(text)
    assert [k["id"] for k in why["kept"]] == [r["id"] for r in details["kept"]]
    w = config.load(env["home"])["ranking"]
    for k in why["kept"]:
        assert k["line"] in text
        expect = (k["type_weight"] + w["activation_weight"] * k["activation"] + w["recency_weight"] * k["recency"]
                  + w["confidence_weight"] * k["confidence"] + 0.1 * k["priority"])
        assert abs(expect - k["score"]) < 1e-3
    rc, out, _ = cli(capsys, "why", "--cwd", cwd)
    assert out.startswith("project %s" % project_id(cwd)) and text in out and "In the block" in out


def test_why_lists_records_left_out_with_reasons(env, capsys, monkeypatch):
    from cortex.store.index import connect
    cwd = env["cwd"][REPO_SESSION]
    weak = cli_json(capsys, "remember", "--type", "gotcha", "The kiwi parser trims trailing tabs", "--cwd", cwd)[1]
    gone = cli_json(capsys, "remember", "--type", "gotcha", "The kiwi lexer folds case", "--cwd", cwd)[1]
    kept = cli_json(capsys, "remember", "--type", "gotcha", "The kiwi printer wraps at 80", "--cwd", cwd)[1]
    monkeypatch.setenv("EDITOR", _editor(env["tmp"], "confidence: 1.0", "confidence: 0.3"))
    assert cli(capsys, "edit", weak["record"]["id"])[0] == 0
    assert cli(capsys, "forget", gone["record"]["id"])[0] == 0
    rc, why, _ = cli_json(capsys, "why", "--cwd", cwd)
    left = {e["id"]: e["reason"] for e in why["left"]}
    assert left[weak["record"]["id"]] == "low confidence" and left[gone["record"]["id"]] == "archived"
    assert kept["record"]["id"] in {k["id"] for k in why["kept"]}
    # every record of the project and its domain is accounted for, kept or left out, once
    con = connect(env["home"].index_db, readonly=True)
    every = {r[0] for r in con.execute("SELECT id FROM records WHERE scope_id IN (?, ?)", (why["project"], why["domain"]))}
    con.close()
    accounted = [k["id"] for k in why["kept"]] + [e["id"] for e in why["left"]]
    assert sorted(accounted) == sorted(every)
    rc, out, _ = cli(capsys, "why", "--cwd", cwd)
    assert "Left out" in out and "low confidence" in out and "archived" in out
    rc, why, _ = cli_json(capsys, "why", "--cwd", str(env["tmp"] / "work"))
    assert rc == 0 and why["block"] == "" and why["kept"] == []


# -- export, import ------------------------------------------------------------------------------

def test_export_import_round_trip_is_byte_identical(env, capsys, tmp_path, monkeypatch):
    cwd = env["cwd"][CODEMIE]
    cli(capsys, "recall", "compaction", "--cwd", cwd, "--all")  # a used time, so it is exported too
    cli(capsys, "remember", "--pin", "Unicode survives: café データ ✓", "--cwd", cwd)
    first = tmp_path / "one.jsonl"
    rc, out, err = cli(capsys, "export", "-o", str(first))
    assert rc == 0
    data = first.read_bytes()
    lines = data.decode("utf-8").splitlines()
    n = len(list(records.iter_paths(env["home"].records)))
    assert len(lines) == n and all(json.loads(ln)["id"] for ln in lines)
    assert "café データ ✓" in data.decode("utf-8")
    rc, out, _ = cli(capsys, "export")
    assert out.encode("utf-8") == data  # stdout gives the same bytes
    new_home = tmp_path / "fresh"
    monkeypatch.setenv("CORTEX_HOME", str(new_home))
    rc, res, _ = cli_json(capsys, "import", str(first))
    assert rc == 0 and res["created"] == n and res["replaced"] == 0
    second = tmp_path / "two.jsonl"
    cli(capsys, "export", "-o", str(second))
    assert second.read_bytes() == data
    rc, res, _ = cli_json(capsys, "import", str(first))
    assert res["unchanged"] == n and res["created"] == 0
    rc, hits, _ = cli_json(capsys, "recall", "compaction threshold", "--cwd", cwd, "--no-use", "--all")
    assert hits["hits"][0]["type"] == "plan"  # the index of the new home was built
    rc, out, _ = cli(capsys, "export", "--scope", "project", "--cwd", cwd)
    assert {json.loads(ln)["scope_id"] for ln in out.splitlines()} == {project_id(cwd)}


def test_import_checks_every_line_before_writing(env, capsys, tmp_path, monkeypatch):
    good = tmp_path / "good.jsonl"
    cli(capsys, "export", "-o", str(good))
    lines = good.read_text(encoding="utf-8").splitlines()
    bad = dict(json.loads(lines[1]), confidence=7)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(bad)] + lines[2:]) + "\n", encoding="utf-8")
    monkeypatch.setenv("CORTEX_HOME", str(tmp_path / "fresh"))
    rc, out, err = cli(capsys, "import", str(path))
    assert rc == 1 and "line 2" in err and "confidence" in err and err.count("\n") == 1
    assert not os.path.exists(str(tmp_path / "fresh" / "records" / "L0"))
    rc, out, err = cli(capsys, "import", str(tmp_path / "missing.jsonl"))
    assert rc == 1 and "cannot read" in err


# -- inbox ---------------------------------------------------------------------------------------

def _failed_event(home):
    from cortex.capture import hook as capture
    from cortex.ingest import run as normalize
    capture.write_event(home, capture.build_event("stop", b"this is not json", "claude-code", home))
    stats = normalize.run(home)
    assert stats["failed"] == 1
    names = [n for n in os.listdir(home.inbox_dir("failed")) if not n.endswith(".reason.txt")]
    assert len(names) == 1
    return names[0]


def test_inbox_show_and_retry(env, capsys):
    home = env["home"]
    name = _failed_event(home)
    rc, info, _ = cli_json(capsys, "inbox", "show", name[:14])
    assert rc == 0 and info["name"] == name and info["state"] == "failed"
    assert "not a JSON object" in info["reason"] and info["event"]["raw"] == "this is not json"
    rc, out, _ = cli(capsys, "inbox", "show", name)
    assert "reason" in out and '"raw": "this is not json"' in out
    done = sorted(os.listdir(home.inbox_dir("done")))[0]
    rc, info, _ = cli_json(capsys, "inbox", "show", done)
    assert info["state"] == "done" and info["reason"] is None and info["event"]["kind"] == "stop"
    rc, lst, _ = cli_json(capsys, "inbox", "list")
    assert [(e["state"], e["name"]) for e in lst["events"]] == [("failed", name)]
    rc, res, _ = cli_json(capsys, "inbox", "retry", "--dry-run")
    assert res["retried"] == [name] and os.path.exists(os.path.join(home.inbox_dir("failed"), name))
    rc, out, _ = cli(capsys, "inbox", "retry")
    assert rc == 0 and "re-queued %s" % name in out
    assert os.listdir(home.inbox_dir("pending")) == [name]
    assert os.listdir(home.inbox_dir("failed")) == []
    rc, out, err = cli(capsys, "inbox", "show", "no-such-event")
    assert rc == 1 and err.count("\n") == 1
    rc, out, err = cli(capsys, "inbox", "retry", "no-such-event")
    assert rc == 1 and "no event" in err


# -- doctor --------------------------------------------------------------------------------------

HOOKS = {"hooks": {
    "SessionStart": [{"hooks": [{"type": "command", "command": "cortex-session-start --client claude-code"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "cortex-stop --client claude-code"}]}]}}


def _healthy_machine(env, monkeypatch):
    user = env["user"]
    (user / ".claude").mkdir()
    (user / ".claude" / "settings.json").write_text(json.dumps(HOOKS))
    units = user / ".config" / "systemd" / "user"
    (units / "timers.target.wants").mkdir(parents=True)
    (units / "cortex-normalize.service").write_text("[Service]\n")
    (units / "cortex-normalize.timer").write_text("[Timer]\n")
    os.symlink(str(units / "cortex-normalize.timer"), str(units / "timers.target.wants" / "cortex-normalize.timer"))
    empty = env["tmp"] / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no crontab: this machine's crontab never counts


def _checks(res):
    return {c["name"]: c for c in res["checks"]}


def test_doctor_healthy_home_exits_0(env, capsys, monkeypatch):
    _healthy_machine(env, monkeypatch)
    rc, res, _ = cli_json(capsys, "doctor")
    assert rc == 0 and res["ok"] and res["failures"] == 0, [c for c in res["checks"] if c["status"] != "ok"]
    c = _checks(res)
    assert c["hooks claude-code"]["status"] == "ok" and c["schedule"]["status"] == "ok"
    assert c["index"]["status"] == "ok" and c["records"]["status"] == "ok" and c["home"]["status"] == "ok"
    rc, out, _ = cli(capsys, "doctor")
    assert rc == 0 and "all good" in out and "FAIL" not in out


def test_doctor_failed_event_exits_1_and_says_how_to_fix(env, capsys, monkeypatch):
    _healthy_machine(env, monkeypatch)
    name = _failed_event(env["home"])
    rc, res, _ = cli_json(capsys, "doctor")
    assert rc == 1 and not res["ok"]
    bad = [c for c in res["checks"] if c["status"] == "fail"]
    assert [c["name"] for c in bad] == ["inbox failed"]
    assert name in bad[0]["details"][0] and "cortex inbox retry" in bad[0]["fix"]
    rc, out, _ = cli(capsys, "doctor")
    assert rc == 1 and "FAIL" in out and "fix: " in out and "1 problem" in out
    cli(capsys, "inbox", "retry")
    from cortex.ingest import run as normalize
    normalize.run(env["home"])  # fails again (the payload is still not JSON): doctor keeps saying so
    assert cli_json(capsys, "doctor")[0] == 1


def test_doctor_finds_stale_pending_index_and_broken_records(env, capsys, monkeypatch):
    _healthy_machine(env, monkeypatch)
    home = env["home"]
    from cortex.capture import hook as capture
    path = capture.write_event(home, capture.build_event("stop", b"{}", "claude-code", home))
    old = time.time() - 2 * 3600
    os.utime(path, (old, old))
    rc, res, _ = cli_json(capsys, "doctor")
    assert rc == 1 and _checks(res)["inbox pending"]["status"] == "fail"
    os.unlink(path)
    rec_path = next(records.iter_paths(home.records))
    with open(rec_path, "a", encoding="utf-8") as f:
        f.write("an extra line written after the index was built\n")
    future = time.time() + 60
    os.utime(rec_path, (future, future))
    rc, res, _ = cli_json(capsys, "doctor")
    assert rc == 1 and _checks(res)["index"]["status"] == "fail" and "reindex" in _checks(res)["index"]["fix"]
    with open(rec_path, "w", encoding="utf-8") as f:
        f.write("no front matter\n")
    rc, res, _ = cli_json(capsys, "doctor")
    assert _checks(res)["records"]["status"] == "fail" and rec_path in _checks(res)["records"]["details"][0]


def test_doctor_hooks_and_schedule_checks(env, capsys, monkeypatch):
    empty = env["tmp"] / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    rc, res, _ = cli_json(capsys, "doctor")
    c = _checks(res)
    assert rc == 1 and c["hooks"]["status"] == "fail" and c["schedule"]["status"] == "warn"
    # partial registration is a failure; a client installed without hooks a warning
    (env["user"] / ".codex").mkdir()
    (env["user"] / ".codex" / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"command": "cortex-stop"}]}}))
    (env["user"] / ".gemini").mkdir()
    c = _checks(cli_json(capsys, "doctor")[1])
    assert c["hooks codex"]["status"] == "fail" and "cortex-session-start" in c["hooks codex"]["summary"]
    assert c["hooks gemini"]["status"] == "warn"
    # hooks in the project's own .claude/settings.json count; a crontab line counts as a schedule
    (env["tmp"] / "work" / ".claude").mkdir()
    (env["tmp"] / "work" / ".claude" / "settings.json").write_text(json.dumps(HOOKS))
    crontab = empty / "crontab"
    crontab.write_text("#!/bin/sh\necho '*/5 * * * * cortex-normalize --quiet'\n")
    crontab.chmod(0o755)
    c = _checks(cli_json(capsys, "doctor")[1])
    assert c["hooks claude-code"]["status"] == "ok" and "hooks" not in c
    assert c["schedule"]["status"] == "ok" and "crontab" in c["schedule"]["summary"]


def test_doctor_home_problems(env, capsys, monkeypatch, tmp_path):
    os.chmod(env["home"].root, 0o755)
    c = _checks(cli_json(capsys, "doctor")[1])
    assert c["home"]["status"] == "fail" and "0755" in c["home"]["summary"] and "chmod 700" in c["home"]["fix"]
    os.chmod(env["home"].root, 0o700)
    with open(env["home"].config_yaml, "w") as f:
        f.write("session_start: {max_records: -3}\n")
    c = _checks(cli_json(capsys, "doctor")[1])
    assert c["config"]["status"] == "fail" and "max_records" in c["config"]["summary"]
    monkeypatch.setenv("CORTEX_HOME", str(tmp_path / "nowhere"))
    rc, res, _ = cli_json(capsys, "doctor")
    assert rc == 1 and _checks(res)["home"]["status"] == "fail"


# -- errors, locking, colour, the real executable --------------------------------------------------------

def test_unreadable_home_is_one_line(env, capsys, monkeypatch, tmp_path):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    monkeypatch.setenv("CORTEX_HOME", str(f))
    for argv in (["recall", "plan"], ["show", "r0000000000000000"], ["why"], ["forget", "x", "--yes"],
                 ["remember", "hello there"], ["export"], ["inbox", "retry"]):
        rc, out, err = cli(capsys, *argv)
        assert rc == 2 and err.startswith("cortex: ") and err.count("\n") == 1 and "is a file, not a folder" in err, argv
    monkeypatch.setenv("CORTEX_HOME", str(tmp_path / "missing"))
    rc, out, err = cli(capsys, "recall", "plan")
    assert rc == 1 and "no Cortex home" in err


def test_changes_wait_for_a_running_normalizer(env):
    from cortex.ops import manage
    from cortex.core.lock import RunLock
    with RunLock(env["home"].lock):
        with pytest.raises(manage.CortexError) as e:
            with manage.locked(env["home"], wait=0.3):
                pass
        assert "holds the lock" in str(e.value)
    with manage.locked(env["home"], wait=0.3):
        with manage.locked(env["home"], wait=0.3):  # re-entrant
            pass


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    from cortex.cli import commands
    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert commands.paint("x", "red", Tty()) == "\033[31mx\033[0m"
    assert commands.paint("x", "red", open(os.devnull, "w")) == "x"
    monkeypatch.setenv("NO_COLOR", "1")
    assert commands.paint("x", "red", Tty()) == "x"


def test_bin_cortex_subprocess(env):
    environ = dict(os.environ)
    cwd = env["cwd"][CODEMIE]
    p = subprocess.run([sys.executable, os.path.join(REPO, "bin", "cortex"), "recall", "compaction", "--cwd", cwd,
                        "--json"], capture_output=True, text=True, env=environ, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["hits"][0]["type"] == "plan"
    p = subprocess.run([sys.executable, os.path.join(REPO, "bin", "cortex"), "forget", "plan", "--cwd", cwd],
                       capture_output=True, text=True, env=environ, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, os.path.join(REPO, "bin", "cortex"), "show", "r123"],
                       capture_output=True, text=True, env=environ, timeout=120)
    assert p.returncode == 1 and p.stderr.startswith("cortex: ") and p.stderr.count("\n") == 1
