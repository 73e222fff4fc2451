"""The options the assistant set out and the session passed over are kept as rejected approaches, each with
the downside the assistant gave for it (ingest/options.py).

People rarely turn the other options down in words: the assistant lists them, the user picks one ("wicked_pdf
then"), and the session builds it.  A later "why didn't we use Grover?" should still find the answer."""
import time

import pytest

import cortex_testkit as testkit
from cortex.ingest import options as O

T0 = time.time() - 30 * 86400

OFFER = """Nothing PDF-related yet. The realistic options for Rails:

**Prawn**: pure Ruby, no external binaries, fast and light on memory. But it's a drawing API: you position text boxes and tables in Ruby code.

**wicked_pdf** (+ `wkhtmltopdf-binary`): renders our ERB to PDF through wkhtmltopdf. Reuses the template. Downsides: the WebKit is old.

**Grover**: Puppeteer driving headless Chromium. The PDF looks exactly like the browser. But it needs Node + a Chromium download in the build, and each render runs a Chrome process at ~200 MB RSS.

**DocRaptor / a hosted API**: excellent output, no infra. But it's priced per document, and we'd be sending our customers' invoices to a third party.

Which way do you want to go?"""


# -- the pieces --------------------------------------------------------------------------------------

def test_options_are_read_with_their_names_and_downsides():
    opts = O.offered(OFFER)
    assert [o["key"] for o in opts] == ["prawn", "wicked_pdf", "grover", "docraptor"]
    assert opts[2]["reason"].startswith("It needs Node + a Chromium download")
    assert opts[3]["head"] == "DocRaptor / a hosted API"


@pytest.mark.parametrize("prose", [
    # a report's headings, not a choice
    "Done. **Summary**: the job runs nightly.\n\n**Next steps**: watch the lag graph.",
    # bold leads in a turn that speaks of no choice
    "Here is what changed:\n\n- **`billing.py`**: rounds once.\n- **`invoice.py`**: uses Money.",
    # one option only
    "One option: **Redis** as the lock. It needs a server.",
    # the same name twice
    "Options:\n- **Redis** (a cluster)\n- **Redis** (one node)",
    # reasons against one option, not options ("vs" speaks of a comparison, not of a choice)
    "Why not Redis:\n- **Not atomic with the DB write**: a crash between the two.\n"
    "- **TTL vs retry window**: Stripe retries for 3 days.\n- **Redis is a cache for us**: it gets flushed.",
    # what a vendor does, with an option named only after the list
    "What Postmark does for us today that SES won't:\n\n1. **Templates**: hosted templates.\n"
    "2. **Bounces/complaints + suppression**: SES only reports them.\n\n"
    "An intermediate option would be to keep Postmark for auth emails only.",
    # the parts of one proposal
    "What I'd propose:\n- **Server-side sessions**: an opaque id in a cookie.\n"
    "- **Absolute lifetime of 12 hours** from login, no sliding, instead of a refresh flow.",
])
def test_what_is_not_a_choice_between_named_options(prose):
    assert O.offered(prose) is None


def test_a_choice_named_before_the_list_or_picked_after_it():
    assert O.offered("There are two consistent ways to go:\n\n1. **Everything stored is aware UTC**: convert at "
                     "the edges.\n2. **Store clinic-local wall-clock times**: no conversion on read.")
    assert O.offered("How should deletion behave?\n\n1. **Hard delete immediately**: simplest, but a mis-tap wipes "
                     "years.\n2. **Soft delete + purge later**: restorable for 30 days.\n\nI'd go with 2 and 30 days.")


def test_ways_set_out_without_a_count_and_picked_with_id_use_are_a_choice():
    """"Ways to do that:" names the choice as "three ways" does, and "I'd use the path." after the list picks
    from it as "I'd go with" does (written apart, parking: the two versions passed over kept no rejection)."""
    prose = ("The request shape changes, so the new form has to live next to the old one. Ways to do that:\n\n"
             "- **Version in the path**: `/v2/scans` next to `/v1/scans`. Easy to route, visible in access logs.\n"
             "- **Version in a header** (`Accept: application/vnd.acme.v2+json`): cleaner URLs, but invisible in the "
             "load balancer's logs.\n"
             "- **Make the current endpoint tolerant**: works for this change, but gives us nothing for the next "
             "one.\n\nI'd use the path, with a fixed support window for v1.")
    assert [o["key"] for o in O.offered(prose)] == ["version in the path", "version in a header",
                                                     "make the current endpoint tolerant"]
    picked = prose.replace("Ways to do that:", "Here is what I found:")
    assert O.offered(picked)  # "I'd use" after the list
    assert O.offered(picked.replace("I'd use the path", "The path is used by the gateway")) is None


def test_numbered_and_lettered_options_go_by_their_names():
    opts = O.offered("Three options:\n\n**1. ChromicPDF**: Chrome via a port. Needs Chromium in the image.\n"
                     "**2. Typst**: a single static binary. Templates are a new language to learn.\n"
                     "**3. A hosted HTML-to-PDF API**: no infra, but patient data leaves us.")
    assert [o["key"] for o in opts] == ["chromicpdf", "typst", "a hosted html-to-pdf api"]
    lettered = O.offered("- **A. Bigger Fargate tasks**: 4 vCPU each, slow for 6 h videos.\n"
                         "- **B. AWS MediaConvert**: per-minute pricing, no workers to babysit.")
    assert [o["head"] for o in lettered] == ["Bigger Fargate tasks", "AWS MediaConvert"]   # lettered: a choice
    assert O.chosen(lettered, "Videos are encoded by AWS MediaConvert, same ladder.") == 1


def test_a_decision_naming_one_option_rejects_the_others_and_one_naming_two_rejects_none():
    opts = O.offered(OFFER)
    pick = O.chosen(opts, "PDFs are rendered with wicked_pdf from `invoices/pdf.html.erb` in a background job.")
    assert opts[pick]["key"] == "wicked_pdf"
    texts = O.not_taken(opts, pick)
    assert texts[1] == ("Not Grover (went with wicked_pdf): It needs Node + a Chromium download in the build, "
                        "and each render runs a Chrome process at ~200 MB RSS.")
    assert len(texts) == 3
    assert O.chosen(opts, "wicked_pdf now, Grover once the worker has 2 GB.") is None
    # an option the decision names as not taken is not the one it took
    assert O.chosen(opts, "Rendered with wicked_pdf; not Grover for now, and no Prawn.") == 1
    assert O.chosen(opts, "The totals box is right-aligned.") is None
    # an option the session already rejected in words is left to that rejection
    assert len(O.not_taken(opts, pick, said=["Not Prawn: every template change would be a rewrite."])) == 2


# -- the normalizer ----------------------------------------------------------------------------------

@pytest.fixture
def env(tmp_path, monkeypatch):
    return testkit.project_env(tmp_path, monkeypatch)


def rejected(home):
    return [r for r in testkit.all_records(home) if r["type"] == "rejected" and r["status"] == "active"]


def pdf_session(env, sid, reply, end="Summary of how PDFs work now: rendered with wicked_pdf from "
                                     "`invoices/pdf.html.erb` in a background job; the template is table-based."):
    home, project, root = env
    c = testkit.Chat(root, project, sid, T0)
    c.user("ok time for real pdf invoices. right now 'Download PDF' is window.print(). what do we use?")
    c.say(OFFER)
    c.user(reply)
    c.say("OK. I'll make the PDF template table-based so the old WebKit renders it.")
    c.tool("Write", file_path=project + "/app/jobs/generate_invoice_pdf_job.rb", content="class X; end\n")
    c.user("looks good, the totals are right-aligned now")
    if end:
        c.say(end)
    c.stop(home, run=True)
    return home


def test_the_options_not_taken_are_kept_as_rejected_with_their_downsides(env):
    home = pdf_session(env, "s-pdf", "ines won't pay for bigger instances. wicked_pdf then")
    texts = sorted(r["text"] for r in rejected(home))
    assert any(t.startswith("Not Grover (went with wicked_pdf): It needs Node") for t in texts), texts
    assert any(t.startswith("Not DocRaptor / a hosted API (went with wicked_pdf)") for t in texts), texts
    assert any(t.startswith("Not Prawn") for t in texts), texts
    assert not any("Not wicked_pdf" in t for t in texts)
    [rec] = [r for r in rejected(home) if "Grover" in r["text"]]
    assert rec["confidence"] == pytest.approx(0.75) and rec["provenance"][0]["layer"] == "options"
    # a search for the option finds why it was passed over
    from cortex.ops.recall import recall
    hits = recall(home, "why didn't we use grover for the pdf invoices", cwd=env[1], k=3, kind="record")["hits"]
    assert hits and hits[0]["text"].startswith("Not Grover")


def test_options_left_open_keep_no_rejection(env):
    """A brainstorm: the options are set out and the user leaves it ("let me think about it"); nothing was
    chosen, so nothing was passed over."""
    home = pdf_session(env, "s-open", "hmm let me think about it and ask ines about the budget", end=None)
    assert rejected(home) == []


def test_an_offer_answered_in_a_later_batch_still_rejects_the_others(env):
    """The offer waits in the extraction state (saved with the cursor) for the decision that answers it."""
    home, project, root = env
    c = testkit.Chat(root, project, "s-later", T0)
    c.user("ok time for real pdf invoices. what do we use?")
    c.say(OFFER)
    c.stop(home, run=True)
    assert rejected(home) == []
    c.user("wicked_pdf then")
    c.say("Summary of how PDFs work now: rendered with wicked_pdf in a background job; the template is "
          "table-based.")
    c.stop(home, run=True)
    assert sum(t["text"].startswith("Not Grover (went with wicked_pdf)") for t in rejected(home)) == 1


def test_the_options_passed_over_are_retired_with_the_decision_that_passed_them_over(env):
    """A later session switches to an option the first passed over: "Not Grover (went with wicked_pdf)" no
    longer holds, so it is retired with the wicked_pdf decision (still found by `recall --all`)."""
    home = pdf_session(env, "s-pdf-1", "wicked_pdf then")
    assert len(rejected(home)) == 3
    home, project, root = env
    c = testkit.Chat(root, project, "s-pdf-2", T0 + 20 * 86400)
    c.user("the worker is on the 2 GB plan now. from now on invoice PDFs are rendered with Grover instead of "
           "wicked_pdf, css grid works there")
    c.say("Done: switched the PDF job from wicked_pdf to Grover; the template uses css grid again.")
    c.stop(home, run=True)
    decisions = [r for r in testkit.all_records(home) if r["type"] == "decision"]
    old = [r for r in decisions if "wicked_pdf" in r["text"] and "Grover" not in r["text"]]
    assert old and all(r["status"] == "superseded" for r in old)
    assert rejected(home) == []
    gone = [r for r in testkit.all_records(home) if r["type"] == "rejected"]
    assert len(gone) == 3 and all(r["status"] == "superseded" for r in gone)


def test_what_the_summing_up_says_was_not_done_is_kept_beside_its_decision(env):
    """The turn that states the decision often lists what was not done, with why: kept as rejections, unless
    the decision kept from that turn says it already (one record, not two)."""
    home = pdf_session(env, "s-pdf-sum", "wicked_pdf then", end=(
        "PDFs are now rendered with wicked_pdf from `invoices/pdf.html.erb`, in a background job.\n\n"
        "- not Grover for now (Chrome won't fit in the 512 MB worker), not Prawn (template duplication)\n"
        "- no errors in the log after the deploy"))
    decisions = [r["text"] for r in testkit.all_records(home) if r["type"] == "decision"]
    texts = sorted(r["text"] for r in rejected(home))
    assert not any("template duplication" in d for d in decisions), decisions
    assert "Not Grover for now (Chrome won't fit in the 512 MB worker), not Prawn (template duplication)" in texts
    assert not any(t.startswith(("Not Grover (went", "Not Prawn (went")) for t in texts)
    assert any(t.startswith("Not DocRaptor / a hosted API (went with wicked_pdf)") for t in texts)
    assert not any("errors" in t for t in texts)
    assert O.said_in("Not Prawn (template duplication).", "rendered with wicked_pdf; not prawn (template duplication)")
    assert not O.said_in("Not Prawn (template duplication).", "rendered with wicked_pdf")


def test_not_bullets_without_a_decision_keep_nothing(env):
    """A brainstorm's "- No Apple: HomeKit has no cloud-to-cloud path." settles nothing."""
    home, project, root = env
    c = testkit.Chat(root, project, "s-brain", T0)
    c.user("which voice assistants could we support for the thermostat? just thinking out loud")
    c.say("Quick survey:\n- Alexa smart home skill: cloud-to-cloud, fits our MQTT cmd path.\n"
          "- Google Home: same model.\n- No Apple: HomeKit has no cloud-to-cloud path.")
    c.user("ok, let me think about it")
    c.stop(home, run=True)
    assert rejected(home) == []


def test_a_not_bullet_keeps_its_inline_code_and_its_first_sentence():
    assert O.ruled_out("- not Redis `SETNX`: not atomic with the DB write. You need to flush it.\n"
                       "- no errors in the log\n- No dependency.") == ["Not Redis `SETNX`: not atomic with the DB write."]


def test_a_secret_in_an_option_never_reaches_a_record_or_the_saved_offer(env):
    """The offer waits in the cursor state between runs: it is read from redacted text, like every record."""
    key = "sk_live_" + "51Hq8vXoPzT2kLmN0aBcDeFgHiJkLmNo"
    home, project, root = env
    c = testkit.Chat(root, project, "s-secret-offer", T0)
    c.user("how do we call the payment provider from the worker?")
    c.say("Two options:\n\n**Stripe SDK**: typed, retries built in. But it needs the key %s in the worker env.\n\n"
          "**Raw HTTP**: no dependency. But we write retries ourselves.\n\nWhich one?" % key)
    c.stop(home, run=True)                      # the offer waits, unanswered
    c.user("Stripe SDK then")
    c.tool("Write", file_path=project + "/worker/payments.py", content="import stripe\n")
    c.say("Summary: payments are called through the Stripe SDK from the worker, with its built-in retries.")
    c.stop(home, run=True)
    assert any(r["text"].startswith("Not Raw HTTP (went with Stripe SDK)") for r in rejected(home))
    assert testkit.files_holding(home, key) == []


def test_a_way_picked_by_one_word_keeps_the_ways_passed_over(env):
    """Ways set out without a count, the assistant's "I'd use the path.", the user's "path yes.": the two other
    ways are kept as rejected, each with its downside."""
    home, project, root = env
    c = testkit.Chat(root, project, "s-ways", T0)
    c.user("the scan endpoint needs a breaking change: officers take several photos now")
    c.say("The request shape changes, so the new form has to live next to the old one. Ways to do that:\n\n"
          "- **Version in the path**: `/v2/scans` next to `/v1/scans`. Easy to route, visible in access logs.\n"
          "- **Version in a header**: cleaner URLs, but invisible in the load balancer's logs and easy to get "
          "wrong in the handheld's HTTP client.\n"
          "- **Make the current endpoint tolerant**: works for this change, but gives us nothing for the next "
          "breaking change.\n\nI'd use the path, and keep v1 up for 90 days after v2 ships.")
    c.user("path yes. write it down somewhere so nobody deletes v1 early")
    c.say("I'll put it in `docs/api/versioning.md` and add the v2 routes first.")
    c.tool("Write", file_path=project + "/docs/api/versioning.md", content="# versions\n")
    c.stop(home, run=True)
    texts = sorted(r["text"] for r in rejected(home))
    assert any(t.startswith("Not version in a header") and "load balancer" in t for t in texts), texts
    assert any(t.startswith("Not make the current endpoint tolerant") for t in texts), texts
    assert not any("in the path" in t for t in texts), texts
