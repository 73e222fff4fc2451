"""The developer-chat benchmark's corpus (cortex/bench/devchats): deterministic per seed, labelled
consistently, and its evaluation runs end to end through the installed commands beside rank-bm25."""
import json
import os
import subprocess
import sys

from cortex.bench.devchats import generate

from cortex_testkit import REPO, clean_env


def _corpus(tmp_path, seed, name):
    out = tmp_path / name
    generate.main([str(out), "--seed", str(seed)])
    return out


def test_the_same_seed_gives_the_same_corpus_and_another_seed_a_different_one(tmp_path):
    a, b, c = _corpus(tmp_path, 3, "a"), _corpus(tmp_path, 3, "b"), _corpus(tmp_path, 4, "c")
    files = sorted(p.name for p in (a / "transcripts").iterdir())
    assert files == sorted(p.name for p in (b / "transcripts").iterdir())
    assert all((a / "transcripts" / f).read_bytes() == (b / "transcripts" / f).read_bytes() for f in files)
    assert (a / "labels.json").read_bytes() == (b / "labels.json").read_bytes()
    assert (a / "labels.json").read_bytes() != (c / "labels.json").read_bytes()


def test_labels_name_real_sessions_and_queries_avoid_the_rule_words(tmp_path):
    out = _corpus(tmp_path, 5, "x")
    labels = json.loads((out / "labels.json").read_text())
    sessions = {p.stem for p in (out / "transcripts").iterdir()}
    rules = labels["rules"]
    assert len(rules) >= 30 and all(r["session_id"] in sessions for r in rules)
    bugs = [q for q in labels["queries"] if q["kind"] == "bug"]
    assert len(bugs) >= len(rules) and all(q["target"] in sessions and q["text"].strip() for q in bugs)
    rule_words = {r["key"]: set(r["rule"].lower().split()) for r in rules}
    for q in bugs:  # a bug report shares at most a few (common) words with the rule it is about
        assert len(set(q["text"].lower().split()) & rule_words[q["rule"]]) <= 6, q
    decoys = [d["session_id"] for d in labels["decoys"]]
    assert set(decoys) <= sessions and len(decoys) >= 10


def test_the_evaluation_runs_end_to_end_beside_rank_bm25(tmp_path):
    out = tmp_path / "fig.json"
    env = clean_env(None)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    p = subprocess.run([sys.executable, "-m", "cortex.bench.devchats", "--seed", "2", "--chats", "60", "--json",
                        str(out)], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    fig = json.loads(out.read_text())["figures"]
    bug = fig["recall@5 bug"]
    assert bug["bm25"][1] == bug["cortex"][1] > 0  # both scored on the same queries

