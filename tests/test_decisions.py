"""Decisions that stay right: types users know, decisions settled in conversation, supersession.

Each scenario is scripted as real Claude Code transcript lines, captured through the stop hook and
normalized; the assertions read the records, the session-start block and `cortex recall`.
"""
import json
import os
import subprocess
import time

import pytest

from cortex.brief import session_start
from cortex.capture import hook as capture
from cortex.core.home import Home
from cortex.ingest import run as normalize
from cortex.store.records import canonical_type, iter_paths, read

T0 = time.time() - 40 * 86400


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))


class Chat:
    """A Claude Code JSONL transcript written turn by turn."""

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

    def tool(self, name, **inp):
        tid = "toolu_%s_%d" % (self.sid, self.n)
        self._line("assistant", {"id": "msg_%s_%d" % (self.sid, self.n), "role": "assistant",
                                 "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]})
        return self._line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                                "content": "ok"}]})

    def turns(self, *pairs):
        for role, text in pairs:
            (self.user if role == "user" else self.say)(text)
        return self

    def stop(self, home):
        payload = {"session_id": self.sid, "transcript_path": self.path, "cwd": self.project,
                   "hook_event_name": "Stop"}
        capture.write_event(home, capture.build_event("stop", json.dumps(payload).encode(), "claude-code", home))
        normalize.run(home)
        return self


@pytest.fixture
def env(tmp_path, monkeypatch):
    home = Home(str(tmp_path / "home")).ensure()
    monkeypatch.setenv("CORTEX_HOME", home.root)
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    return home, str(project), str(tmp_path)


def records(home, rtype=None):
    out = [read(p) for p in iter_paths(home.records)]
    return [r for r in out if rtype is None or r["type"] == rtype]


def one(home, rtype, *words):
    found = [r for r in records(home, rtype) if all(w.lower() in r["text"].lower() for w in words)]
    assert len(found) == 1, (words, [r["text"] for r in records(home)])
    return found[0]


# -- types users know -------------------------------------------------------------------------------

def test_type_names_of_other_memory_tools_map_onto_cortex_types():
    assert canonical_type("architecture") == canonical_type("Convention") == canonical_type("patterns") == "decision"
    assert canonical_type("constraint") == canonical_type("requirement") == "decision"
    assert canonical_type("context") == canonical_type("insight") == canonical_type("note") == "learned"
    assert canonical_type("bug") == "gotcha" and canonical_type("anti-pattern") == "rejected"
    assert canonical_type("decision") == "decision" and canonical_type("nonsense") is None


def test_memory_tags_and_remember_accept_the_known_type_names(env):
    from cortex.ops.manage import CortexError, remember
    home, project, root = env
    Chat(root, project, "t1", T0).turns(
        ("assistant", "[MEMORY: architecture] The HTTP handlers reach storage only through `RecordRepository`."),
        ("assistant", "[MEMORY: context] The nightly export runs on a box that sleeps between 01:00 and 05:00."),
        ("assistant", "[MEMORY: bug] `parse_date()` returns local time when the string has no offset."),
        ("user", "[MEMORY: convention] Test files are named after the module they cover."),
    ).stop(home)
    assert "RecordRepository" in one(home, "decision", "RecordRepository")["text"]
    one(home, "learned", "nightly export")
    one(home, "gotcha", "parse_date")
    one(home, "decision", "Test files are named")
    rec = remember(home, "Public endpoints are versioned in the path", rtype="requirement", cwd=project)
    assert rec["record"]["type"] == "decision"
    with pytest.raises(CortexError):
        remember(home, "x y z", rtype="nonsense", cwd=project)


# -- supersession on natural wording --------------------------------------------------------------

def current_decisions(home, project):
    text, details = session_start.build(home, project)
    return text, [r["text"] for r in details["kept"] if r["type"] == "decision"]


def test_reported_case_rest_then_graphql_for_the_public_api_lists_only_graphql(env):
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("user", "Which style for the public API?"),
        ("assistant", "[MEMORY: decision] Chose REST over gRPC for the public API because browsers and curl "
                      "can call it without generated stubs."),
    ).stop(home)
    Chat(root, project, "s2", T0 + 86400).turns(("user", "Let's fix the flaky test in the uploader."),
                                               ("assistant", "Fixed: the test waited on a real clock.")).stop(home)
    Chat(root, project, "s3", T0 + 9 * 86400).turns(
        ("user", "Mobile needs nested reads in one round trip."),
        ("assistant", "[MEMORY: decision] Switched the public API from REST to GraphQL because the mobile "
                      "client needs nested reads in one round trip."),
    ).stop(home)
    rest = one(home, "decision", "Chose REST")
    gql = one(home, "decision", "GraphQL because")
    assert rest["status"] == "superseded" and rest["superseded_by"] == [gql["id"]]
    assert gql["supersedes"] == [rest["id"]] and gql["status"] == "active"
    text, current = current_decisions(home, project)
    assert "GraphQL" in text and "Chose REST over gRPC" not in text
    assert current == [gql["text"]]


def test_a_switch_of_one_subject_leaves_decisions_about_another_subject_alone(env):
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("assistant", "[MEMORY: decision] Use REST for the admin console because it only lists and edits rows."),
        ("assistant", "[MEMORY: decision] Chose REST over gRPC for the public API because any client can call it."),
    ).stop(home)
    Chat(root, project, "s2", T0 + 86400).turns(
        ("assistant", "[MEMORY: decision] Switched the public API from REST to GraphQL for nested reads."),
    ).stop(home)
    assert one(home, "decision", "Chose REST")["status"] == "superseded"
    assert one(home, "decision", "admin console")["status"] == "active"


@pytest.mark.parametrize("later", [
    "[MEMORY: decision] Amendment to the `retry_upload()` rule: give up after 5 attempts, and 429 is retried too.",
    "[MEMORY: decision] From now on `retry_upload()` gives up after 5 attempts instead of the earlier 3.",
    "[MEMORY: decision] `retry_upload()` retries 5 times with exponential backoff and never retries 4xx responses.",
    "[MEMORY: decision] This replaces the earlier rule: `retry_upload()` retries forever with a capped backoff.",
])
def test_a_later_rule_on_the_same_function_supersedes_the_earlier_one(env, later):
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("assistant", "[MEMORY: decision] `retry_upload()` retries 3 times with exponential backoff and never "
                      "retries 4xx responses."),
        ("assistant", "[MEMORY: decision] `retry_upload()` writes each failed attempt to the audit log table."),
        ("assistant", "[MEMORY: decision] `fetch_manifest()` retries 3 times with exponential backoff."),
    ).stop(home)
    Chat(root, project, "s2", T0 + 20 * 86400).turns(("assistant", later)).stop(home)
    old = one(home, "decision", "retries 3 times", "retry_upload")
    new = [r for r in records(home, "decision") if r["provenance"][0]["session"] == "s2"]
    assert len(new) == 1
    assert old["status"] == "superseded" and old["superseded_by"] == [new[0]["id"]]
    assert new[0]["supersedes"] == [old["id"]]
    assert one(home, "decision", "audit log")["status"] == "active"  # another rule on the same function
    assert one(home, "decision", "fetch_manifest")["status"] == "active"  # the same rule on another function


def test_worded_alike_but_other_numbers_are_not_merged(env):
    home, project, root = env
    Chat(root, project, "s1", T0).turns(
        ("assistant", "[MEMORY: learned] The export job batches 500 rows per request to the warehouse API."),
        ("assistant", "[MEMORY: learned] The export job batches 200 rows per request to the warehouse API."),
    ).stop(home)
    assert len(records(home, "learned")) == 2
