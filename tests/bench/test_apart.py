"""`python -m cortex.bench.apart --baseline REF`: a corpus of one's own, run by the code of a git ref and by
this tree in the same invocation, printed side by side with rank-bm25 (docs/benchmarks.md, "Chats written
apart")."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _corpus(folder):
    rule = {"id": "c01", "day": 20, "turns": [
        {"user": "the export job runs at 2am and collides with the nightly backup. move it"},
        {"tool": "Read", "input": {"file_path": "{P}/jobs/schedule.yml"}, "result": "export: '0 2 * * *'"},
        {"assistant": "Two options: 04:30, after the backup window ends, or run it on the replica at any time."},
        {"user": "04:30, the replica lags too much in the morning"},
        {"tool": "Edit", "input": {"file_path": "{P}/jobs/schedule.yml", "old_string": "export: '0 2 * * *'",
                                   "new_string": "export: '30 4 * * *'"}, "result": "ok"},
        {"assistant": "Done: the nightly export now starts at 04:30 UTC, after the backup window."}]}
    other = {"id": "c02", "day": 5, "turns": [
        {"user": "the readme still says python 3.8"},
        {"tool": "Edit", "input": {"file_path": "{P}/README.md", "old_string": "3.8", "new_string": "3.11"},
         "result": "ok"},
        {"assistant": "Fixed: the README now says Python 3.11, as the CI image does."}]}
    labels = {"project": "exports (a test corpus, fictional)",
              "decisions": [{"id": "d01", "chat": "c01", "subject": "when the nightly export runs",
                             "rule_words": ["04:30"], "stale_words": [], "amends": None,
                             "rejected": [{"words": ["replica"]}],
                             "questions": ["when does the export run?", "what time is the nightly export?",
                                           "why not run the export on the replica?", "did we move the export job?",
                                           "the backup and the export fight over disk at night again"]}],
              "undecided": [], "undecided_questions": [], "unrelated": ["c02"]}
    os.makedirs(folder)
    with open(os.path.join(folder, "chats.json"), "w") as f:
        json.dump([rule, other], f)
    with open(os.path.join(folder, "labels.json"), "w") as f:
        json.dump(labels, f)


def test_a_corpus_of_ones_own_runs_beside_a_git_ref_and_rank_bm25(tmp_path):
    pytest.importorskip("rank_bm25")
    if subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("not a git clone: no ref to compare with")
    corpus, keep = str(tmp_path / "exports"), str(tmp_path / "kept")
    _corpus(corpus)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("CORTEX_HOME", None)
    p = subprocess.run([sys.executable, "-m", "cortex.bench.apart", "--corpus", corpus, "--baseline", "HEAD",
                        "--keep", keep], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    side = p.stdout[p.stdout.index("measure                                                        HEAD"):]
    rows = {ln[:62].strip(): ln[62:].split() for ln in side.splitlines()[2:] if ln.strip()}
    # both columns were measured (the same code in a clean clone: the same records), rank-bm25 beside them
    assert rows["a. decisions in force captured (active, all rule_words)"][:4] == ["1/1", "(100%)", "1/1", "(100%)"]
    assert rows["f. sessions the normalizer failed (want 0; see its log)"][:2] == ["0", "0"]
    assert len(rows["b. all questions: right chat in top 5"]) == 6  # HEAD, this tree, rank-bm25
    for run in (os.path.join(keep, "baseline", "exports"), os.path.join(keep, "exports")):
        assert json.load(open(os.path.join(run, "results.json")))["decisions"][0]["captured"]
