"""A decision settled in conversation names the files its exchange read or changed.

The rule is about the code the assistant had open when it was settled: the file read before the proposal,
the file changed before the summing-up.  Files of an earlier, unrelated request in the same session are not
the rule's; at most three are kept; the state that carries them travels with the cursor, so a proposal
read in one run and agreed in the next gives the record the same files, and a rerun from scratch writes
the same record files.
"""
import os
import time

import pytest

import cortex_testkit as testkit

from cortex.ingest.adapters import base as B
from cortex.ingest.extract import Context, extract
from cortex.store.records import iter_paths, read

T0 = time.time() - 10 * 86400


@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def decisions(home, rtype="decision"):
    return [r for r in (read(p) for p in iter_paths(home.records)) if r["type"] == rtype]


def test_an_agreed_proposal_names_the_file_read_before_it_and_not_an_earlier_requests_files(env):
    home, project, root = env
    c = testkit.Chat(root, project, "f1", T0)
    c.user("please bump the copyright year in the footer template")
    c.tool("Edit", file_path=os.path.join(project, "web/templates/footer.html"), old_string="2024", new_string="2025")
    c.say("Bumped.")
    c.user("Shipments to PO boxes keep bouncing. What should `pick_carrier()` do about them?")
    c.tool("Read", file_path=os.path.join(project, "shipping/carriers.py"))
    c.say("I'd route every PO-box address to the postal carrier in `pick_carrier()`, since couriers can't "
          "deliver there. Sound good?")
    c.user("yes, but only for domestic addresses")
    c.stop(home, run=True)
    dec, = decisions(home)
    assert "postal carrier" in dec["text"] and "domestic" in dec["text"]
    assert dec["files"] == ["shipping/carriers.py"]


def test_the_summing_up_keeps_the_agreements_files_first_and_at_most_three(env):
    home, project, root = env
    c = testkit.Chat(root, project, "f2", T0)
    c.user("The cache for exchange rates serves stale values after midnight.")
    c.tool("Read", file_path=os.path.join(project, "fx/cache.py"))
    c.say("I'd expire cached rates at 00:05 UTC every day in `RateCache`, after the bank publishes. "
          "Does that work?")
    c.user("go with that")
    for name in ("fx/cache.py", "fx/clock.py", "tests/fx/test_cache.py", "tests/fx/conftest.py"):
        c.tool("Edit", file_path=os.path.join(project, name), old_string="a", new_string="b")
    c.say("Agreed rule: `RateCache` expires cached rates at 00:05 UTC every day, after the bank publishes.")
    c.stop(home, run=True)
    dec, = decisions(home)
    assert dec["text"].startswith("`RateCache` expires")
    assert len(dec["files"]) == 3 and "fx/cache.py" in dec["files"]


def test_a_rejection_names_the_file_too(env):
    home, project, root = env
    c = testkit.Chat(root, project, "f3", T0)
    c.user("Uploads of big scans time out.")
    c.tool("Read", file_path=os.path.join(project, "media/upload.py"))
    c.say("I'd stream the upload to object storage in chunks of 8 MB. Sound good?")
    c.user("no, not a bigger timeout instead — it only hides the problem and the proxy cuts at 60 s anyway. "
           "Streaming is right, go with that.")
    c.stop(home, run=True)
    rej = decisions(home, "rejected")
    assert rej and all(r["files"] == ["media/upload.py"] for r in rej)


def test_files_carry_across_runs_and_a_rerun_writes_the_same_records(env):
    home, project, root = env
    c = testkit.Chat(root, project, "f4", T0)
    c.user("Invoices get numbered twice when two workers run at once.")
    c.tool("Read", file_path=os.path.join(project, "billing/numbering.py"))
    c.say("I'd take the next invoice number from a database sequence in `next_invoice_number()` instead of "
          "max()+1. Does that work?")
    c.stop(home, run=True)
    assert decisions(home) == []  # nothing settled yet
    c.user("yes, do it")
    c.stop(home, run=True)
    dec, = decisions(home)
    assert dec["files"] == ["billing/numbering.py"]
    before = sorted((os.path.basename(p), open(p).read()) for p in iter_paths(home.records))
    os.unlink(home.cursors)
    c.stop(home, run=True)
    assert sorted((os.path.basename(p), open(p).read()) for p in iter_paths(home.records)) == before


def _entries(*items):
    out = []
    for i, (kind, text, action, files) in enumerate(items):
        out.append(B.Entry(kind=kind, text=text, ref="L%d" % (i + 1), ts="2026-03-01T10:%02d:00Z" % i,
                           action=action, files=tuple(files)))
    return out


def test_extraction_state_keeps_the_touched_files_between_batches():
    ctx = Context(client="claude-code", session="s", transcript=None, project="p", domain="d",
                  fallback_time="2026-03-01T10:00:00Z", cwd="/w/proj")
    first = _entries((B.USER, "Password reset links never expire, is that on purpose?", None, ()),
                     (B.TOOL_CALL, "", B.READ, ["/w/proj/auth/reset.py"]),
                     (B.ASSISTANT, "I'd make reset links expire after 30 minutes in `issue_reset_link()`. "
                                   "Sound good?", None, ()))
    cands, st = extract(first, ctx)
    assert st["touched"] == [["auth/reset.py", 1]]
    cands, st = extract(_entries((B.USER, "yes, and single use", None, ())), ctx, st)
    dec = [c for c in cands if c.type == "decision"]
    assert dec and dec[0].files == ["auth/reset.py"]
    # a file outside the project keeps its path, as the session's edited files do
    cands, st = extract(_entries((B.TOOL_CALL, "", B.READ, ["/etc/hosts"])), ctx, st)
    assert st["touched"][-1] == ["/etc/hosts", 2]


def test_the_same_rejection_after_reading_other_files_reinforces_the_first(env):
    """Files are where a rule was settled, not what it says: near-duplicates are compared on the words."""
    home, project, root = env
    for sid, path, cut in (("r1", "media/upload.py", "cuts"), ("r2", "media/resize.py", "cuts every request")):
        c = testkit.Chat(root, project, sid, T0 + (0 if sid == "r1" else 3 * 86400))
        c.user("Big uploads fail.")
        c.tool("Read", file_path=os.path.join(project, path))
        c.say("I'd stream the upload to object storage in chunks of 8 MB. Sound good?")
        c.user("no, not a bigger timeout — it only hides the problem and the proxy %s at 60 s anyway." % cut)
        c.stop(home, run=True)
    rej, = decisions(home, "rejected")
    assert {p["session"] for p in rej["provenance"]} == {"r1", "r2"}
    assert rej["files"] == ["media/resize.py", "media/upload.py"]
