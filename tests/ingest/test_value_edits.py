"""Values a session edited in code (cortex/ingest/value_edits.py): which edited lines replace a value."""
from cortex.ingest.value_edits import edit_pairs, value_edits


def test_a_number_replaced_on_a_line_is_a_value_edit_with_the_words_it_kept():
    [v] = value_edits({"old_string": "    ttl: 30m   # held reservations expire 30 minutes",
                       "new_string": "    ttl: 45m   # held reservations expire 45 minutes"})
    assert v["removed"] == ["30m", "30"] and v["added"] == ["45m", "45"]
    assert {"ttl", "held", "reservations", "expire"} <= set(v["kept"])


def test_one_code_name_swapped_for_another_is_a_value_edit():
    [v] = value_edits({"old_string": "  storage: createJSONStorage(() => mmkvStorage),",
                       "new_string": "  storage: createJSONStorage(() => AsyncStorage),"})
    assert (v["removed"], v["added"]) == (["mmkvStorage"], ["AsyncStorage"])


def test_reworded_lines_refactors_and_rewrites_are_not_value_edits():
    assert value_edits({"old_string": "# the cache is cleared at night", "new_string": "# a cache is cleared at night"}) == []
    # several words replaced, one of them a number: a refactor, not a value changed
    assert value_edits({"old_string": 'class Gone(id: Long) : RuntimeException("reservation expired")',
                        "new_string": "class Gone(id: Long) : DomainException(409)"}) == []
    # a line with nothing kept around the value
    assert value_edits({"old_string": "30", "new_string": "45"}) == []


def test_multiedit_and_codex_patches_are_read_line_by_line():
    multi = {"edits": [{"old_string": "POOL_MAX = 20  # per pod", "new_string": "POOL_MAX = 30  # per pod"},
                       {"old_string": "x", "new_string": "y"}]}
    assert [v["added"] for v in value_edits(multi)] == [["30"]]
    patch = ("*** Begin Patch\n*** Update File: app/config.py\n@@\n-RETRY_LIMIT = 3  # capture retries\n"
             "+RETRY_LIMIT = 5  # capture retries\n*** End Patch")
    assert edit_pairs({"input": patch}) == [("RETRY_LIMIT = 3  # capture retries", "RETRY_LIMIT = 5  # capture retries")]
    [v] = value_edits({}, patch)
    assert (v["removed"], v["added"]) == (["3"], ["5"])
