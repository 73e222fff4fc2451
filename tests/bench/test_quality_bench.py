"""The block-quality benchmark (cortex.bench.quality) and its labeled corpus (tests/corpora/fixture_labels.json)."""
from cortex.bench import quality
from cortex_testkit import TRANSCRIPTS


def test_every_bundled_fixture_session_is_labeled():
    labels = quality.load_labels()["fixtures"]
    assert sorted(labels) == sorted(TRANSCRIPTS)
    for name, (folder, main, client) in TRANSCRIPTS.items():
        lab = labels[name]
        assert (lab["folder"], lab["main"], lab["client"]) == (folder, main, client)
        for item in lab["facts"] + lab["wrong_as_current"]:
            assert item["what"] and 1 <= len(item["keywords"]) <= 3


def test_a_fact_counts_when_all_its_keywords_are_in_one_line():
    label = {"facts": [{"what": "a", "keywords": ["mix format", "pre-commit"]},
                       {"what": "b", "keywords": ["ash.codegen", "identity"]}],
             "wrong_as_current": [{"what": "w", "keywords": ["[>] Ship"]}]}
    block = ("<cortex-memory>\n- [fix, 1d, 0.70] The pre-commit hook wants MIX FORMAT first.\n"
             "- [learned, 1d, 0.70] ash.codegen\n- [plan, 1d, 0.9] Plan: [x] Ship\n</cortex-memory>")
    s = quality.score(block, label)
    assert s["present_what"] == ["a"] and s["missing"] == ["b"] and s["wrong_shown"] == []


def test_the_long_compacted_sessions_give_a_block_worth_its_budget():
    """Sessions over 1 MB: at least 80% of the labeled facts in the block; nothing wrong shown as current
    (the decision of cc-2.0.76 the user turned down at once used to be)."""
    rows = quality.run("none", ["cc-2.0.76", "cc-2.1.39"])
    facts = sum(r["after"]["facts"] for r in rows)
    present = sum(r["after"]["present"] for r in rows)
    assert present >= 0.8 * facts
    wrong = [w for r in rows for w in r["after"]["wrong_shown"]]
    assert wrong == []
    for r in rows:
        assert r["after"]["chars"] <= 9500
