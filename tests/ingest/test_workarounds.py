"""Command workarounds (cortex.ingest.workarounds): a command failed, the same command with an option it
lacked worked, and the next session is told before it runs into it again."""
import glob
import json
import os
import time

import pytest

import cortex_testkit as testkit
from cortex.ingest import workarounds as W
from cortex.ingest.extract import FIXABLE_RE

GITIGNORED = ("Exit code 1\nThe following paths are ignored by one of your .gitignore files:\npriv/static/assets\n"
              "hint: Use -f if you really want to add them.")


def pair(failed_cmd, ok_cmd, output="Exit code 1\nerror: it failed"):
    calls = W.failed_calls(failed_cmd, output, "L1", "2026-01-01T00:00:00Z", FIXABLE_RE.search)
    return W.worked(ok_cmd, calls, FIXABLE_RE.search)


@pytest.mark.parametrize("failed_cmd, ok_cmd", [
    ("git add lib/a.ex priv/static/app.css && git commit -m 'wip'", "git add -f priv/static/app.css"),
    ("npm install", "npm install --legacy-peer-deps"),
    ("pip install requests", "pip install --break-system-packages requests"),
    ("docker ps", "sudo docker ps"),
    ("curl https://internal.example/api", "curl -k https://internal.example/api"),
    ("git commit -m 'x'", "git commit --no-verify -m 'x'"),
    ("node scripts/gen.js", "NODE_OPTIONS=--max-old-space-size=4096 node scripts/gen.js"),
])
def test_the_same_command_with_an_option_it_lacked_is_a_workaround(failed_cmd, ok_cmd):
    got = pair(failed_cmd, ok_cmd)
    assert len(got) == 1, got
    assert W.text_of(*got[0]).endswith("worked.")


@pytest.mark.parametrize("failed_cmd, ok_cmd, why", [
    ("grep -n needle src/a.py", "grep -rn needle src/a.py", "a search's exit 1 means nothing found"),
    ("ls build", "ls -la build", "a look"),
    ("pytest tests", "pytest -x tests", "test runs have fix records"),
    ("npm run build", "npm run build --verbose", "build runs have fix records"),
    ("git push", "git push -u origin main", "a new argument that is no option's value"),
    ("npm install", "npm install", "the same command again: flaky, no option added"),
    ("git add a.css", "git commit -f", "another subcommand"),
    ("git add a.css", "git add -f b.css", "another target"),
])
def test_other_pairs_are_not(failed_cmd, ok_cmd, why):
    assert pair(failed_cmd, ok_cmd) == [], why


def test_the_error_quoted_is_what_went_wrong_not_the_exit_code_banner():
    assert W.error_line(GITIGNORED) == ("The following paths are ignored by one of your .gitignore files: "
                                        "priv/static/assets")
    assert W.error_line("Exit code 2\n\nsomething odd happened") == "something odd happened"
    assert W.error_line("Error: Exit code 1") == ""


def test_a_heredoc_or_an_open_quote_leaves_out_only_its_own_part():
    cmd = "git add a.py b.py && git commit -m \"$(cat <<'EOF'\nfeat: x\nEOF\n)\""
    assert W.simple_commands(cmd) == [["git", "add", "a.py", "b.py"]]
    shaped = W.shape(["FOO=1", "sudo", "/usr/bin/docker", "compose", "up", "-d"])
    assert (shaped["program"], shaped["sub"], shaped["opts"]) == ("docker", "compose", {"FOO=", "sudo", "-d"})


# ----------------------------------------------------------------------------------------- end to end

@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def _records(home, rtype):
    out = []
    for p in glob.glob(os.path.join(home.records, "**", "*.md"), recursive=True):
        text = open(p, encoding="utf-8").read()
        if "\ntype: %s\n" % rtype in text:
            out.append(text)
    return out


def test_a_session_that_worked_round_a_failure_leaves_a_gotcha(env):
    home, project, root = env
    c = testkit.Chat(root, project, "s-css", time.time() - 3600)
    c.user("Commit the badge styles.")
    c.tool("Bash", _result=GITIGNORED, _error=True,
           command="git add lib/live.ex priv/static/assets/app.css && git commit -m 'badges'")
    c.say("The stylesheet is gitignored but tracked; forcing it.")
    c.tool("Bash", _result="[main 22450e1] badges", command="git add -f priv/static/assets/app.css")
    c.stop(home, run=True)
    got = _records(home, "gotcha")
    assert len(got) == 1 and "`git add -f priv/static/assets/app.css` worked" in got[0], got
    assert "ignored by one of your .gitignore files" in got[0]


def test_an_edit_in_between_makes_it_a_fix_not_a_workaround(env):
    home, project, root = env
    c = testkit.Chat(root, project, "s-edit", time.time() - 3600)
    c.user("Install the deps.")
    c.tool("Bash", _result="Exit code 1\nnpm ERR! ERESOLVE unable to resolve dependency tree", _error=True,
           command="npm install")
    c.tool("Edit", file_path=os.path.join(project, "package.json"), old_string="1", new_string="2")
    c.tool("Bash", _result="added 10 packages", command="npm install --no-audit")
    c.stop(home, run=True)
    assert _records(home, "gotcha") == []


def test_secrets_in_the_command_reach_neither_the_record_nor_the_cursor(env):
    home, project, root = env
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    c = testkit.Chat(root, project, "s-secret", time.time() - 3600)
    c.user("Fetch the release list.")
    c.tool("Bash", _result="Exit code 60\ncurl: (60) SSL certificate problem: self-signed certificate",
           _error=True, command="curl -H 'Authorization: token %s' https://git.internal/api/releases" % secret)
    c.stop(home, run=True)  # the failure waits in the cursor state between two runs
    cursors = open(os.path.join(home.root, "state", "cursors.json"), encoding="utf-8").read()
    assert "failed_calls" in cursors and secret not in cursors
    c.tool("Bash", _result="[]", command="curl -k -H 'Authorization: token %s' https://git.internal/api/releases"
           % secret)
    c.stop(home, run=True)
    got = _records(home, "gotcha")
    assert len(got) == 1 and "SSL certificate problem" in got[0] and "curl -k" in got[0], got
    assert secret not in got[0]
