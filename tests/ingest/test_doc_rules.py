"""A rule the session writes into the project's documents is kept as a decision, in the document's words; a
later edit of the same lines retires it.

Teams ask for a settled rule to be written down ("this is the rule, write it down somewhere") and the
assistant adds a section to `docs/conventions.md`, `CONTRIBUTING.md` or the README.  The chat may state the
rule in loose turns no phrasing reader catches; the document states it once.  The first group checks the
pure pieces (ingest/doc_rules.py); the scenarios are Claude Code transcripts captured by the stop hook and
normalized."""
import os
import time

import pytest

import cortex_testkit as testkit
from cortex.ingest import doc_rules as R
from cortex.store.records import iter_paths, read

T0 = time.time() - 40 * 86400

MONEY = ("## Money\n"
         "- All amounts are int64 minor units (`pkg/money.Money`). DB columns: `amount_minor bigint` +\n"
         "  `currency char(3)`.\n"
         "- Never float64, never NUMERIC, no decimal library.\n"
         "\n"
         "```go\n"
         "m := money.New(1999, \"EUR\")\n"
         "```\n"
         "\n"
         "## Errors")


# -- the pieces --------------------------------------------------------------------------------------

@pytest.mark.parametrize("rel, doc", [
    ("docs/conventions.md", True), ("README.md", True), ("CONTRIBUTING.md", True), ("docs/ops/runbook.rst", True),
    ("handbook/Deploying.adoc", True), ("My Docs/style guide.md", True),
    ("CHANGELOG.md", False), ("docs/release-notes/1.2.md", False), ("tests/fixtures/sample.md", False),
    ("docs/proposals/item-embeddings.md", False), ("content/posts/hello.md", False),
    ("node_modules/x/README.md", False), ("src/app.py", False), ("requirements.txt", False),
    ("/home/u/.claude/plans/plan.md", False), ("../other/README.md", False), ("C:/Users/u/notes.md", False),
])
def test_which_files_are_the_projects_documents(rel, doc):
    assert R.is_doc(rel) is doc


def test_an_added_section_is_read_with_its_heading_and_wrapped_lines_joined():
    [sec] = R.doc_sections({"old_string": "## Errors", "new_string": MONEY})
    assert sec["heading"] == "Money"
    assert sec["lines"] == [
        "All amounts are int64 minor units (`pkg/money.Money`). DB columns: `amount_minor bigint` + "
        "`currency char(3)`.",
        "Never float64, never NUMERIC, no decimal library."]          # no code from the fence
    text = R.rule_text(sec, "docs/conventions.md")
    assert text.startswith("Money (`docs/conventions.md`): All amounts are int64 minor units")
    assert "; Never float64" in text and text.endswith("decimal library.")


def test_an_edit_of_one_line_reports_the_line_it_replaced():
    old = "- Public pages: `Cache-Control: public, s-maxage=300`.\n- Purge by surrogate key."
    new = "- Public pages: `Cache-Control: public, s-maxage=1800` (was 5 min).\n- Purge by surrogate key."
    [sec] = R.doc_sections({"old_string": old, "new_string": new})
    assert sec["heading"] is None
    assert sec["lines"] == ["Public pages: `Cache-Control: public, s-maxage=1800` (was 5 min)."]
    assert sec["removed"] == ["Public pages: `Cache-Control: public, s-maxage=300`."]
    assert R.rule_text(sec, "docs/caching.md").startswith("`docs/caching.md`: Public pages")


def test_a_table_row_reads_as_its_cells_and_the_header_is_left_out():
    content = ("# Retention\n\n| data | kept | notes |\n|---|---|---|\n"
               "| `readings` (raw) | 30 days | compressed after 7 days |\n")
    [sec] = R.doc_sections({"file_path": "docs/retention.md", "content": content}, write=True)
    assert (sec["heading"], sec["lines"]) == ("Retention", ["`readings` (raw): 30 days, compressed after 7 days"])


@pytest.mark.parametrize("content", [
    "## Options\n- Option A: keep Redis for sessions and move the queue to SQS.\n",
    "## Session store\n- Redis or Postgres for sessions, still to be decided after the load test.\n",
    "## Smart-home integrations\nStatus: open, no decision. Revisit when the survey results are in.\n",
])
def test_a_section_that_weighs_options_or_leaves_them_open_is_no_rule(content):
    assert R.doc_sections({"content": content}, write=True) == []


def test_a_codex_patch_and_a_gemini_replace_are_read_too():
    patch = ("*** Begin Patch\n*** Update File: docs/deploy.md\n@@\n"
             "-- Production deploys run Monday to Friday before 16:00.\n"
             "+- Production deploys run Monday to Thursday, never on Fridays.\n*** End Patch")
    [sec] = R.doc_sections({"input": patch})
    assert sec["lines"] == ["Production deploys run Monday to Thursday, never on Fridays."]
    assert sec["removed"] == ["Production deploys run Monday to Friday before 16:00."]
    [sec] = R.doc_sections({"file_path": "README.md", "old_string": "## Setup\nRun it.",
                            "new_string": "## Setup\nRun it.\n\nUse uv for every dependency; never pip install into the env."})
    assert sec["heading"] == "Setup" and sec["lines"] == ["Use uv for every dependency; never pip install into the env."]


def test_a_long_section_is_cut_at_a_line():
    lines = ["- Rule number %d says something long enough to count as a statement of its own." % i for i in range(20)]
    [sec] = R.doc_sections({"content": "## Rules\n" + "\n".join(lines)}, write=True)
    text = R.rule_text(sec, "docs/rules.md")
    assert len(text) <= R.MAX_CHARS + 1 and text.endswith("of its own.")


# -- the normalizer ----------------------------------------------------------------------------------

@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def decisions(home):
    return [r for r in (read(p) for p in iter_paths(home.records)) if r["type"] == "decision"]


def with_words(home, *words):
    return [r for r in decisions(home) if all(w.lower() in r["text"].lower() for w in words)]


def session(env, sid, days, *edits, prompt="ok write it down in the docs"):
    home, project, root = env
    c = testkit.Chat(root, project, sid, T0 + days * 86400)
    c.user(prompt)
    for name, path, inp in edits:
        c.tool(name, file_path=os.path.join(project, *path.split("/")), **inp)
    c.say("Done.")
    c.stop(home, run=True)


def test_a_section_written_to_the_docs_is_a_decision_and_a_later_edit_of_its_line_retires_it(env):
    home = env[0]
    session(env, "s-money", 0, ("Edit", "docs/conventions.md", {"old_string": "## Errors", "new_string": MONEY}))
    [rec] = with_words(home, "int64 minor units")
    assert rec["status"] == "active" and rec["files"] == ["docs/conventions.md"]
    assert rec["text"].startswith("Money (`docs/conventions.md`)")
    old_line = "- Never float64, never NUMERIC, no decimal library."
    session(env, "s-money-2", 20, ("Edit", "docs/conventions.md", {
        "old_string": old_line, "new_string": "- Never float64; NUMERIC(20,0) is allowed for reporting views only."}))
    [new] = with_words(home, "NUMERIC(20,0)")
    assert new["status"] == "active"
    assert read_status(home, rec["id"]) == "superseded"


def read_status(home, rid):
    return next(r["status"] for r in (read(p) for p in iter_paths(home.records)) if r["id"] == rid)


def test_the_same_heading_written_again_in_a_later_session_replaces_the_section(env):
    home = env[0]
    session(env, "s-a", 0, ("Write", "docs/deploying.md", {
        "content": "# Deploying\n\n## Windows\n- Production deploys run Monday to Friday before 16:00 UK time.\n"}))
    [old] = with_words(home, "Monday to Friday")
    session(env, "s-b", 10, ("Edit", "docs/deploying.md", {
        "old_string": "## Windows\n- Production deploys run Monday to Friday before 16:00 UK time.",
        "new_string": "## Windows\n- Production deploys run Monday to Thursday, starting before 15:00 UK time."}))
    assert [r["status"] for r in with_words(home, "Monday to Thursday")] == ["active"]
    assert read_status(home, old["id"]) == "superseded"


def test_edits_of_one_section_in_one_session_make_one_record(env):
    home = env[0]
    session(env, "s-one", 0,
            ("Edit", "CONTRIBUTING.md", {"old_string": "## Tests", "new_string":
                                         "## Money\n- Store amounts as integer cents in `*_cents` bigint columns.\n\n## Tests"}),
            ("Edit", "CONTRIBUTING.md", {"old_string": "- Store amounts as integer cents in `*_cents` bigint columns.",
                                         "new_string": "- Store amounts as integer cents in `*_cents` bigint columns.\n"
                                                       "- Use money-rails `monetize` for arithmetic on amounts."}))
    found = [r for r in decisions(home) if "CONTRIBUTING.md" in r["text"]]
    assert len(found) == 1, [r["text"] for r in found]
    assert "integer cents" in found[0]["text"] and "money-rails" in found[0]["text"]


def test_a_changelog_or_an_open_question_keeps_no_decision(env):
    home = env[0]
    session(env, "s-log", 0,
            ("Edit", "CHANGELOG.md", {"old_string": "## 1.2.0", "new_string":
                                      "## 1.3.0\n- Switched the session store from Redis to Postgres tables.\n\n## 1.2.0"}),
            ("Write", "docs/session-store.md", {"content": "# Session store\n\n## Open questions\n"
                                                "- Should sessions move from Redis to Postgres tables at all?\n"}))
    assert decisions(home) == []


def test_a_secret_written_into_a_document_never_reaches_the_record(env):
    home = env[0]
    key = "sk_live_" + "51Hq8vXoPzT2kLmN0aBcDeFgHiJkLmNo"
    session(env, "s-secret", 0, ("Edit", "docs/payments.md", {"old_string": "## Refunds", "new_string":
                                 "## Keys\n- Production uses the key %s from SSM, never a local .env file.\n\n## Refunds" % key}))
    [rec] = with_words(home, "never a local .env file")
    assert key not in rec["text"]
    assert testkit.files_holding(home, key) == []


def test_a_codex_patch_of_several_files_reads_each_document_alone():
    patch = ("*** Begin Patch\n*** Update File: src/deploy.py\n@@\n-WINDOW = ('mon', 'fri')\n+WINDOW = ('mon', 'thu')\n"
             "*** Update File: docs/deploy.md\n@@\n-- Production deploys run Monday to Friday before 16:00.\n"
             "+- Production deploys run Monday to Thursday, never on Fridays.\n*** End Patch")
    parts = R.patch_files({"input": patch})
    assert [p for p, _ in parts] == ["src/deploy.py", "docs/deploy.md"]
    [sec] = R.doc_sections({"input": parts[1][1]})
    assert sec["lines"] == ["Production deploys run Monday to Thursday, never on Fridays."]
    assert R.patch_files({"input": "*** Begin Patch\n*** Update File: docs/a.md\n@@\n-x\n+y\n*** End Patch"}) == []


def test_a_codex_patch_keeps_the_document_it_changes_and_not_the_code_beside_it(env):
    home, project, root = env
    from cortex.ingest.adapters import base as B
    from cortex.ingest.extract import Context, doc_candidates
    patch = ("*** Begin Patch\n*** Update File: src/deploy.py\n@@\n-# deploys run any weekday before 16:00 on the cluster\n"
             "+# deploys run Monday to Thursday only, never on a Friday\n"
             "*** Update File: docs/deploy.md\n@@\n-- Production deploys run Monday to Friday before 16:00.\n"
             "+- Production deploys run Monday to Thursday, never on Fridays.\n*** End Patch")
    e = B.Entry(kind=B.TOOL_CALL, ref="L9", action=B.EDIT, args={"input": patch},
                files=(os.path.join(project, "src", "deploy.py"), os.path.join(project, "docs", "deploy.md")))
    ctx = Context(project="p", domain="d", client="codex", session="s", transcript="t", fallback_time="2026-01-01T00:00:00Z",
                  branch=None, max_chars=600, cwd=project)
    found, docs = doc_candidates(e, ctx, "2026-01-01T00:00:00Z", {})
    assert [c.text for c in found] == ["`docs/deploy.md`: Production deploys run Monday to Thursday, never on Fridays."]
    assert found[0].files == ["docs/deploy.md"]


def test_the_chats_own_statement_of_a_rule_it_wrote_down_is_folded_into_the_section(env):
    home, project, root = env
    c = testkit.Chat(root, project, "s-twin", T0)
    c.user("all money is integer pence, IntegerFields named *_pence, never float or Decimal money. write it down")
    c.say("[MEMORY: decision] All money is integer pence: `IntegerField`s named `*_pence`, never float or Decimal "
          "money, VAT rounded half-up per line.")
    c.tool("Edit", file_path=os.path.join(project, "CONTRIBUTING.md"), old_string="## Tests", new_string=
           "## Money\n- All money is integer pence: `IntegerField`s named `*_pence`, never float or Decimal money.\n"
           "- VAT is rounded half-up per line.\n\n## Tests")
    c.say("Done.")
    c.stop(home, run=True)
    active = [r for r in decisions(home) if r["status"] == "active"]
    assert [r["text"][:25] for r in active] == ["Money (`CONTRIBUTING.md`)"], [r["text"] for r in decisions(home)]
    [folded] = [r for r in decisions(home) if r["status"] != "active"]
    assert folded["merged_into"] == active[0]["id"]


def test_a_statement_of_another_rule_in_the_same_session_stays(env):
    home, project, root = env
    c = testkit.Chat(root, project, "s-two", T0)
    c.user("ok")
    c.say("[MEMORY: decision] Retry a failed capture 3 times with backoff 1, 10 and 60 minutes.")
    c.tool("Edit", file_path=os.path.join(project, "CONTRIBUTING.md"), old_string="## Tests", new_string=
           "## Money\n- All money is integer pence: `IntegerField`s named `*_pence`, never float money.\n\n## Tests")
    c.stop(home, run=True)
    assert sorted(r["status"] for r in decisions(home)) == ["active", "active"]


def test_a_later_edit_of_a_section_keeps_the_lines_it_did_not_change(env):
    """A section's record is replaced by the later one, which carries the lines the later edit left alone:
    adding a rule or changing one must not drop the others from what is in force."""
    home = env[0]
    session(env, "s-1", 0, ("Edit", "docs/conventions.md", {"old_string": "## Errors", "new_string": MONEY}))
    session(env, "s-2", 10, ("Edit", "docs/conventions.md", {
        "old_string": "- Never float64, never NUMERIC, no decimal library.",
        "new_string": "- Never float64, never NUMERIC, no decimal library.\n"
                      "- Rounding only through `Money.MulRate`, half to even."}))
    def in_force():
        return " | ".join(r["text"] for r in decisions(home) if r["status"] == "active")
    for words in ("int64 minor units", "Never float64", "Money.MulRate"):  # an added line replaces nothing
        assert words in in_force(), in_force()
    session(env, "s-3", 20, ("Edit", "docs/conventions.md", {
        "old_string": "- Never float64, never NUMERIC, no decimal library.",
        "new_string": "- Never float64; NUMERIC(20,0) only in reporting views."}))
    for words in ("NUMERIC(20,0)", "int64 minor units", "Money.MulRate"):
        assert words in in_force(), in_force()
    assert "no decimal library" not in in_force()


def test_carried_lines_leave_out_the_replaced_ones():
    text = "Money (`docs/conventions.md`): All amounts are int64; Never float64, never NUMERIC; Round half to even."
    assert R.carried_lines(text, ["Never float64, never NUMERIC."]) == ["All amounts are int64", "Round half to even"]
    assert R.carried_lines("`README.md`: Idle sessions end after 15 minutes.", []) == ["Idle sessions end after 15 minutes"]


def test_a_later_section_of_the_same_document_leaves_the_other_sections_in_force(env):
    """Two sections of one document share its file and many words ("MQTT topics", then "QoS" in
    `docs/mqtt.md`): the second is another rule, not the first one replaced."""
    home = env[0]
    topics = ("# MQTT\n\n## MQTT topics\n- All topics live under `hl/v1/{device_id}/`; `device_id` is the base MAC.\n"
              "- `hl/v1/{device_id}/telemetry`: device to cloud, periodic readings of the thermostat.\n")
    session(env, "s-topics", 0, ("Write", "docs/mqtt.md", {"content": topics}))
    [first] = with_words(home, "hl/v1/{device_id}/")
    qos = ("\n## QoS\n- `hl/v1/{device_id}/telemetry`: QoS 0, superseded by the next reading of the device.\n"
           "- `hl/v1/{device_id}/cmd`: QoS 1, carries `cmd_id`; the device drops repeats of the last 16.\n")
    session(env, "s-qos", 20, ("Edit", "docs/mqtt.md", {"old_string": "periodic readings of the thermostat.\n",
                                                        "new_string": "periodic readings of the thermostat.\n" + qos}))
    assert [r["status"] for r in with_words(home, "QoS 1", "cmd_id")] == ["active"]
    assert read_status(home, first["id"]) == "active"


def _partial_section_session(env):
    home, project, root = env
    c = testkit.Chat(root, project, "s-part", T0)
    c.user("ok so: sms templates and the ticket timeline render in the building's own time zone, never the "
           "server's. write the storage part down")
    c.say("[MEMORY: decision] SMS templates and the ticket timeline render in `Building.timezone`, never the "
          "server's zone; Postgres stores instants in UTC (`timestamptz`) and the API sends UTC with a `Z`.")
    c.tool("Edit", file_path=os.path.join(project, "CONTRIBUTING.md"), old_string="## Tests", new_string=
           "## Times\n- Postgres stores instants in UTC (`timestamptz`); the API sends UTC with a `Z`.\n\n## Tests")
    c.say("Done.")
    c.stop(home, run=True)


def test_a_section_that_holds_only_part_of_what_the_chat_settled_leaves_the_chats_statement(env):
    """The section says where times are stored; the chat settled that and how they are shown: folded into the
    section, the chat's statement would take the rest of the rule with it (stop 31)."""
    home = env[0]
    _partial_section_session(env)
    active = [r for r in decisions(home) if r["status"] == "active"]
    chat = [r for r in active if r["text"].startswith("SMS templates and the ticket timeline render")]
    section = [r for r in active if r["text"].startswith("Times (`CONTRIBUTING.md`)")]
    assert chat and section, [r["text"] for r in decisions(home)]
    assert section[0]["id"] in chat[0].get("related", []) and chat[0]["id"] in section[0].get("related", [])


def test_the_section_replaced_later_retires_the_chats_statement_it_held_part_of(env):
    home = env[0]
    _partial_section_session(env)
    [chat] = with_words(home, "SMS templates and the ticket timeline")
    session(env, "s-part-2", 20, ("Edit", "CONTRIBUTING.md", {
        "old_string": "## Times\n- Postgres stores instants in UTC (`timestamptz`); the API sends UTC with a `Z`.",
        "new_string": "## Times\n- Postgres stores instants in UTC (`timestamptz`); the API sends local time with "
                      "its offset."}))
    assert read_status(home, chat["id"]) == "superseded"
    assert [r["status"] for r in with_words(home, "local time with its offset")] == ["active"]
