"""The developer-chat benchmark's corpus (cortex/bench/devchats): deterministic per seed, labelled
consistently, and its evaluation runs end to end through the installed commands beside rank-bm25."""
import json
import os
import re
import subprocess
import sys

from cortex.bench.devchats import generate
from cortex.bench.devchats.generate import bare

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


def test_named_bug_reports_leave_the_chats_and_the_other_queries_as_they_were(tmp_path, monkeypatch):
    monkeypatch.setattr(generate, "add_second_amendments", lambda *a: None)   # tested on their own below
    with_named = _corpus(tmp_path, 6, "named")
    monkeypatch.setattr(generate, "add_named_bug_reports", lambda labels, seed: None)
    without = _corpus(tmp_path, 6, "without")
    files = sorted(p.name for p in (without / "transcripts").iterdir())
    assert files == sorted(p.name for p in (with_named / "transcripts").iterdir())
    assert all((without / "transcripts" / f).read_bytes() == (with_named / "transcripts" / f).read_bytes() for f in files)
    old = json.loads((without / "labels.json").read_text())["queries"]
    new = json.loads((with_named / "labels.json").read_text())["queries"]
    assert new[:len(old)] == old and {q["kind"] for q in new[len(old):]} == {"bug-named", "amend-bug-named"}


def _digest(out):
    """sha256 of the corpus as it was before second amendments: every other chat's file and bytes, then the
    query list without the amend2 kinds."""
    import hashlib
    labels = json.loads((out / "labels.json").read_text())
    h = hashlib.sha256()
    for c in labels["chats"]:
        if c["kind"] != "amendment2":
            h.update(c["file"].encode())
            h.update((out / c["file"]).read_bytes())
    h.update(json.dumps([q for q in labels["queries"] if not q["kind"].startswith("amend2-")], sort_keys=True).encode())
    return h.hexdigest()


def test_second_amendments_leave_the_chats_and_the_other_queries_as_they_were(tmp_path, monkeypatch):
    # seed 7's corpus before second amendments existed (generated at 42341c6): the figures of
    # docs/benchmarks.md were measured on it
    with_second = _corpus(tmp_path, 7, "second")
    assert _digest(with_second) == "d93bfd29917bd263958f2556e9d94f57e1ed46fa2889bf9182ecbbf174f1655f"
    monkeypatch.setattr(generate, "add_second_amendments", lambda *a: None)
    without = _corpus(tmp_path, 7, "without")
    old, new = (json.loads((d / "labels.json").read_text()) for d in (without, with_second))
    assert [q for q in new["queries"] if not q["kind"].startswith("amend2-")] == old["queries"]
    assert new["queries"][:len(old["queries"])] == old["queries"]   # the new queries come last
    assert new["chats"][:len(old["chats"])] == old["chats"] and new["rules"] == old["rules"]
    assert all((with_second / c["file"]).read_bytes() == (without / c["file"]).read_bytes() for c in old["chats"])


def test_second_amendments_follow_the_first_and_their_queries_accept_them(tmp_path):
    from datetime import datetime, timedelta
    out = _corpus(tmp_path, 5, "x")
    labels = json.loads((out / "labels.json").read_text())
    when = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    chats = {c["session_id"]: c for c in labels["chats"]}
    seconds = labels["second_amendments"]
    assert len(seconds) == (len(labels["amendments"]) + 1) // 2 == 5
    first = {a["session_id"]: a for a in labels["amendments"]}
    rules = {r["session_id"]: r for r in labels["rules"]}
    end = max(when(c["end"]) for c in labels["chats"] if c["kind"] != "amendment2")
    spans = sorted((when(c["start"]), when(c["end"])) for c in labels["chats"])
    assert all(b < c for (_, b), (c, _) in zip(spans, spans[1:]))   # no two chats at once
    queries = {q["id"]: q for q in labels["queries"]}
    for a2 in seconds:
        c, a1 = chats[a2["session_id"]], first[a2["supersedes"]]
        assert c["kind"] == "amendment2" and a1["amended_by"] == a2["session_id"] and a1["key"] == a2["key"]
        assert rules[a2["rule_session"]]["amended_by"] == a1["session_id"]
        gap = (when(c["start"]).date() - when(chats[a1["session_id"]]["start"]).date()).days
        assert 10 <= gap <= 25 and when(c["end"]).date() <= end.date() + timedelta(days=1), (gap, c)
        decide = queries["%s/amend2-decide" % a2["key"]]
        assert (decide["target"], decide["accept"]) == (a2["session_id"], [a2["session_id"]])
        assert decide["superseded"] == [a1["session_id"], a2["rule_session"]]
        assert decide["text"] not in (a1["queries"]["decide"], rules[a2["rule_session"]]["queries"]["decide"])
        bugs = [q for q in labels["queries"] if q["kind"] == "amend2-bug" and q["rule"] == a2["key"]]
        assert [q["text"] for q in bugs] == a2["queries"]["bug_reports"] and bugs
        assert all(q["accept"] == [a2["session_id"], a1["session_id"], a2["rule_session"]] for q in bugs)
    transcript = (out / chats[seconds[0]["session_id"]]["file"]).read_text()
    assert seconds[0]["new_rule"] in transcript


def test_second_amendment_bug_reports_avoid_the_words_of_every_version_of_the_rule():
    from cortex.bench.devchats.specs import RULES, SECOND_AMENDMENTS
    words = lambda t: set(re.findall(r"[a-z0-9]+", t.lower()))  # noqa: E731
    for r in RULES:
        if not r["amend"]:
            continue
        a2 = SECOND_AMENDMENTS[r["key"]]
        rule_words = words(" ".join([r["rule"], r["proposal"], r["cond"], r["amend"]["new"], r["amend"]["change"],
                                     a2["new"], a2["change"], r["code"], r["prose"], r["file"]]))
        for bug in a2["bugs"]:
            shared = words(bug) & rule_words - _STOP
            assert len(shared) <= 2, (r["key"], shared)


_STOP = {"a", "an", "and", "are", "at", "be", "by", "for", "from", "get", "in", "is", "it", "of", "on", "one", "only",
         "over", "s", "that", "the", "their", "them", "time", "to", "up", "was", "with"}


_COMMON = {"a", "again", "are", "at", "be", "by", "can", "customer", "from", "i", "in", "is", "it", "s", "the", "up", "with"}


def test_named_bug_reports_name_the_subject_and_add_no_word_of_the_rule(tmp_path):
    from cortex.bench.devchats.specs import RULES
    labels = json.loads((_corpus(tmp_path, 5, "x") / "labels.json").read_text())
    spec = {r["key"]: r for r in RULES}
    by_id = {q["id"]: q for q in labels["queries"]}
    named = [q for q in labels["queries"] if q["kind"].endswith("-named")]
    plain = [q for q in labels["queries"] if q["kind"] in ("bug", "amend-bug")]
    assert len(named) == len(plain) and sorted(q["from"] for q in named) == sorted(q["id"] for q in plain)
    assert {q["subject_form"] for q in named} == set(generate.NAMED_FORMS)
    assert len({q["template"] for q in named}) >= 8
    words = lambda t: set(re.findall(r"[a-z0-9]+", t.lower()))  # noqa: E731
    for q in named:
        src, r = by_id[q["from"]], spec[q["rule"]]
        assert q["kind"] == src["kind"] + "-named" and (q["target"], q["accept"]) == (src["target"], src["accept"])
        text = q["text"].lower()
        assert src["text"].lower() in text and q["subject_text"].lower() in text, q
        assert q["subject_text"].strip("`") in (r["code"], bare(r["code"]), r["prose"], r["file"], r["file"].split("/", 1)[1],
                                                  "the %s module" % r["file"][:-3].split("/")[-1],
                                                  r["file"][:-3].replace("/", ".")), q
        rule_words = words(" ".join([r["rule"], r["proposal"], r["cond"]] +
                                    ([r["amend"]["new"], r["amend"]["change"]] if r["amend"] else [])))
        added = words(q["text"]) - words(src["text"]) - words(q["subject_text"])
        assert added & rule_words <= _COMMON, (q, added & rule_words)


def test_the_evaluation_runs_end_to_end_beside_rank_bm25(tmp_path):
    out = tmp_path / "fig.json"
    env = clean_env(None)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    kept = tmp_path / "kept"
    p = subprocess.run([sys.executable, "-m", "cortex.bench.devchats", "--seed", "2", "--chats", "60", "--json",
                        str(out), "--keep", str(kept)], capture_output=True, text=True, env=env, cwd=str(REPO),
                       timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    fig = json.loads(out.read_text())["figures"]
    bug = fig["recall@5 bug"]
    assert bug["bm25"][1] == bug["cortex"][1] > 0  # both scored on the same queries
    named = fig["recall@5 bug-named"]
    assert named["bm25"][1] == named["cortex"][1] == bug["cortex"][1]
    n_old = sum(fig["recall@5 " + k]["cortex"][1] for k in ("bug", "decide", "amend-bug", "amend-decide"))
    n_named = named["cortex"][1] + fig["recall@5 amend-bug-named"]["cortex"][1]
    assert fig["recall@5 all"]["cortex"][1] == fig["prompt shows right session"]["cortex"][1] == n_old
    assert fig["recall@5 all incl. named"]["cortex"][1] == n_old + n_named
    n_amend2 = sum(fig["recall@5 " + k]["cortex"][1] for k in ("amend2-decide", "amend2-bug"))
    assert fig["recall@5 amend2-decide"]["cortex"][1] >= 1 and n_amend2 > fig["recall@5 amend2-decide"]["cortex"][1]
    assert fig["recall@5 all incl. named, amend2"]["cortex"][1] == n_old + n_named + n_amend2
    second = fig["second amendment ranks above both earlier rules' chats"]
    assert second["cortex"][1] == second["bm25"][1] == fig["recall@5 amend2-decide"]["cortex"][1]


    # "what did we decide about X?" asked many ways on the kept corpus (cortex.bench.devchats.questions)
    from cortex.bench.devchats import questions
    res = questions.evaluate(str(kept))
    rules = len(json.loads((kept / "corpus" / "labels.json").read_text())["rules"])
    for name, templates in (("generator", questions.GENERATOR), ("apart", questions.APART)):
        t = res["totals"][name]
        assert t["questions"] == rules * len(templates)
        assert 0 < t["decision first"] <= t["decision in 3"] <= t["questions"]
        assert t["bm25 chat first"] <= t["bm25 chat in 5"] <= t["questions"]


def test_each_rules_chain_runs_from_its_chat_through_its_amendments(tmp_path):
    from cortex.bench.devchats import questions
    labels = json.loads((_corpus(tmp_path, 7, "q") / "labels.json").read_text())
    got = questions.chains(labels)
    amended = {a["supersedes"]: a for a in labels["amendments"]}
    twice = {a["supersedes"]: a["session_id"] for a in labels["second_amendments"]}
    assert len(got) == len(labels["rules"])
    for key, (rule, chain) in got.items():
        assert chain[0] == rule["session_id"]
        first = amended.get(rule["session_id"])
        assert chain[1:] == ([first["session_id"]] + ([twice[first["session_id"]]] if first["session_id"] in twice
                                                      else []) if first else [])
    rule = labels["rules"][0]
    q = questions.phrase("{prose}: what was the decision?", rule)
    assert q[0].isupper() and not q.lower().startswith("the ")
    assert "`%s`" % rule["subject"] in questions.phrase("what did we land on for {code}?", rule)
