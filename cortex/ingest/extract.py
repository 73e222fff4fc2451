"""Extraction: transcript entries in, record candidates out.  Pure functions, no model calls.

Three layers, each candidate tagged with the one that found it:
  structural -- what the session did: the active plan, files changed, commands that failed and
                what fixed them, the client's own compaction summary, where the user left off;
  keyword    -- decisions and rejections stated in the assistant's prose ("chose X over Y because Z");
  conversation -- decisions settled between user and assistant: a proposal the user accepts (with its
                condition), the assistant's summing-up, rules the user states, alternatives turned
                down with a reason (cortex/ingest/decisions.py; its state travels with the cursor);
  tag        -- explicit `[MEMORY: type] text` lines (confidence 1.0).
Injected text (hook output, AGENTS.md, Cortex's own block) and reasoning are never sources.
"""
import json
import os
import re
from dataclasses import dataclass, field
from typing import List, Optional

from cortex.curate.subjects import mentions_any, technical, unmark
from cortex.ingest import options as O
from cortex.ingest import workarounds as W
from cortex.ingest.adapters import base as B
from cortex.ingest.value_edits import TEST_PATH_RE
from cortex.store.records import canonical_type

TAG_TYPES = ("decision", "rejected", "learned", "gotcha", "plan", "preference", "todo", "fix")
TAG_RE = re.compile(r"\[MEMORY:\s*(?P<type>[A-Za-z][A-Za-z_-]*)(?:[\s,/:]+(?P<scope>domain|global|project))?\s*\]\s*(?P<text>.+)",
                    re.IGNORECASE)
CODE_FENCE_RE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
INLINE_CODE_RE = re.compile(r"`[^`\n]*`")
SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])|\n+")
CORTEX_MARK = "<cortex-memory"

# Decisions: the assistant commits to a choice.  Each pattern gives a base confidence.
DECISION_PATTERNS = [
    (re.compile(r"\b(?:I|we)(?:'ve| have)?\s+(?:decided|chosen|chose|opted|settled)\s+(?:to|on|for)\s+(?:use|go with|keep|switch|adopt|store|implement|move)\b", re.I), 0.7),
    (re.compile(r"\b(?:chose|choose|choosing|picked|prefer(?:red)?|went with|going with|go with|settled on|opted for)\s+\S.{0,80}?\s+(?:over|instead of|rather than)\s+\S", re.I), 0.75),
    (re.compile(r"\b(?:switched|switching|migrated|migrating|moved|moving)\s+from\s+\S.{0,60}?\s+to\s+\S", re.I), 0.7),
    (re.compile(r"\b(?:the|our|my)\s+(?:decision|choice|approach)\s+(?:is|was|will be)\s+to\b", re.I), 0.65),
    (re.compile(r"\b(?:I|we)(?:'ll| will)\s+(?:use|go with|keep using|stick with|adopt)\s+\S.{0,80}?\s+(?:because|since|as it|so that)\b", re.I), 0.65),
    (re.compile(r"\b(?:decided|deciding)\s+(?:to|on|against)\b", re.I), 0.6),
    (re.compile(r"\bthe\s+(?:solution|fix|right approach|correct approach|better approach)\s+(?:is|was|will be)\b", re.I), 0.6),
    (re.compile(r"\b(?:use|using|leverage|rely on|keep)\s+\S.{0,60}?\s+instead of\s+\S", re.I), 0.55),
]
# Rejections: an approach ruled out, ideally with the reason.
REJECTION_PATTERNS = [
    (re.compile(r"\b(?:ruled out|decided against|gave up on|rejected|abandoned)\b", re.I), 0.7),
    # "dropped" and "discarded" say what happened to data far more often than to an idea ("the backlog is
    # dropped", "go mod tidy dropped zap"): a rejection only when we dropped it, or it is an approach
    (re.compile(r"\b(?:we|I)(?:'ve| have)?\s+(?:dropped|discarded)\b|\b(?:dropped|discarded)\s+(?:the\s+|that\s+|"
                r"this\s+|our\s+|my\s+)?(?:idea|approach|option|plan|alternative|proposal|design)s?\b", re.I), 0.7),
    (re.compile(r"\b(?:won't|will not|doesn't|does not|didn't|did not|can't|cannot)\s+work\s+(?:because|since|as|here|for|with|due)", re.I), 0.7),
    (re.compile(r"\b(?:instead of|rather than)\s+\S.{0,60}?\s+because\b", re.I), 0.6),
    (re.compile(r"\b(?:not|never)\s+(?:use|using)\s+\S.{0,60}?\s+because\b", re.I), 0.6),
    (re.compile(r"\b(?:was|is)\s+(?:the\s+)?wrong\s+(?:approach|way|idea|direction|design)\b", re.I), 0.7),
    (re.compile(r"\b(?:a dead end|doesn't scale|is a bad idea)\b", re.I), 0.6),
]
# what a system does to a request, not what the team turned down: "a reused key is rejected", "would be
# rejected by the bootloader", "a replay of a rotated token being rejected", "shows the 'rejected' message"
SYSTEM_REJECTS_RE = re.compile(r"\b(?:is|are|be|being|gets?|getting)\s+(?:\w+ly\s+)?(?:rejected|abandoned)\b|"
                               r"\b(?:rejected|abandoned)\s+(?:by|with|if|when|whenever|unless|on|at|from|after|until)\b|"
                               r"['\"‘“](?:rejected|abandoned)['\"’”]", re.I)
# Learned facts: a confirmed cause, not a guess.
LEARNED_PATTERNS = [
    (re.compile(r"\b(?:the\s+)?(?:root cause|underlying (?:issue|problem|cause))\s+(?:is|was)\b", re.I), 0.7),
    (re.compile(r"\b(?:turns out|it turned out)\b", re.I), 0.65),
    (re.compile(r"\bthe\s+(?:bug|issue|problem|error|failure)\s+(?:is|was)\s+(?:caused by|due to|that|because)\b", re.I), 0.65),
    (re.compile(r"\bthe\s+(?:real\s+)?(?:bug|issue|problem|culprit)\s+(?:is|was)\s+(?:the|a|an|that|our|my)\s", re.I), 0.6),
]
# A verb that only describes routine work: "decided to read the file" is not a decision.
WEAK_OBJECT_RE = re.compile(r"\b(?:decided|decide|chose|choose|going|opted)\s+to\s+(?:read|check|look|run|open|examine|take a look|"
                            r"inspect|start|begin|first|try|see|search|explore|investigate|review|verify|test|view|list|"
                            r"re-?run|continue|proceed|focus|understand|analy[sz]e|fix|update|create|add|write)\b", re.I)
HEDGE_RE = re.compile(r"\b(?:maybe|perhaps|might|may be|could be|possibly|probably|I think|I guess|let me|let's try|"
                      r"not sure|hypothes[ie]s|seems? like|if we|should we|would you|do you want)\b", re.I)
REASON_RE = re.compile(r"\b(?:because|since|due to|so that|as it|which means|given that)\b", re.I)
# Any of the patterns above, in one search: most sentences match none, and one pass over a sentence costs
# less than eighteen (the patterns are tried one by one only on a sentence this finds something in)
ANY_KEYWORD_RE = re.compile("|".join("(?:%s)" % p.pattern for group in (DECISION_PATTERNS, REJECTION_PATTERNS,
                                                                         LEARNED_PATTERNS) for p, _ in group), re.I)
# a word every match of one of them holds (mentions_any): three sentences in four hold none
KEYWORD_WORDS = ("decid", "chose", "choos", "opted", "settled", "picked", "prefer", "with", "from", "decision", "choice",
                 "approach", "because", "since", "as it", "so that", "solution", "fix", "instead of", "rejected",
                 "ruled out", "abandoned", "dropped", "discarded", "gave up on", "work", "wrong", "dead end",
                 "doesn't scale", "bad idea", "root cause", "underlying", "turns out", "turned out", "bug", "issue",
                 "problem", "error", "failure", "culprit")


@dataclass
class Context:
    """Where the entries came from; goes into every candidate."""
    client: str
    session: Optional[str]
    transcript: Optional[str]
    project: str                  # L0 scope id
    domain: str                   # L1 scope id
    branch: Optional[str] = None
    fallback_time: str = ""       # used when an entry has no timestamp (the event's capture time)
    keyword_min_confidence: float = 0.55
    max_chars: int = 600
    cwd: Optional[str] = None


@dataclass
class Candidate:
    type: str
    text: str
    confidence: float
    layer: str
    ref: str
    at: str
    scope: str = "L0"
    files: List[str] = field(default_factory=list)
    plan: Optional[list] = None
    key: Optional[str] = None
    replace: bool = False
    salience: float = 0.5
    since: str = ""               # a record that sums up a session's state: when that state began
    if_replacing: bool = False    # kept only when it replaces an earlier rule (a confirmed change: decisions.py)
    edit: Optional[dict] = None   # a value edited in code (value_edits.py): kept only when it makes a rule stale
    doc: Optional[dict] = None    # a section of the project's documents (doc_rules.py): what it replaced there
    chosen: Optional["Candidate"] = None  # an option not taken (options.py): the decision that took another


    def to_store(self, ctx: Context) -> dict:
        return {
            "scope": self.scope, "scope_id": ctx.project if self.scope == "L0" else ctx.domain,
            "project": ctx.project, "type": self.type, "text": self.text, "confidence": self.confidence,
            "salience": self.salience, "files": self.files, "branch": ctx.branch, "plan": self.plan,
            "key": self.key, "replace": self.replace,
            "provenance": {"client": ctx.client, "session": ctx.session, "transcript": ctx.transcript,
                           "ref": self.ref, "layer": self.layer, "at": self.at},
            "since": self.since or None,
        }


def strip_code(text: str) -> str:
    """Prose only: code blocks and inline code never count as statements."""
    return INLINE_CODE_RE.sub(" ", CODE_FENCE_RE.sub("\n", text))


def clean_sentence(s: str, limit: int) -> str:
    """One line of at most `limit` characters.  Secrets are redacted before anything is cut or joined (a cut
    private key loses its END marker, a cut token its length: neither would be recognised afterwards), and
    the cut never ends inside a word (`redact.cut`)."""
    from cortex.model import redact
    s = redact.redact(s)[0]  # <private> spans stay for the writer (a cut one runs to the end)
    s = unmark(s).strip()  # Markdown's marks, never a code name's characters
    s = re.sub(r"\s+", " ", s)
    from cortex.model.clip import shorten
    return shorten(s, limit, redact.cut)


def sentences(text: str):
    for chunk in SENTENCE_SPLIT_RE.split(text):
        chunk = chunk.strip()
        if chunk:
            yield chunk


def _rel(path: str, cwd: Optional[str]) -> str:
    if cwd and path.startswith(cwd.rstrip("/\\") + os.sep):
        return path[len(cwd.rstrip("/\\")) + 1:]
    return path


def tag_candidates(entry: B.Entry, ctx: Context, at: str) -> list:
    out = []
    prose = CODE_FENCE_RE.sub("\n", entry.text)
    for line in prose.splitlines():
        m = TAG_RE.search(line)
        if not m:
            continue
        rtype = canonical_type(m.group("type"))
        if rtype not in TAG_TYPES:  # also architecture, convention, context, bug, ... (records.TYPE_ALIASES)
            continue
        text = clean_sentence(m.group("text").strip().strip("`"), ctx.max_chars)
        if len(text) < 3:
            continue
        scope_word = (m.group("scope") or "").lower()
        scope = "L1" if rtype == "preference" or scope_word in ("domain", "global") else "L0"
        out.append(Candidate(rtype, text, 1.0, "tag", entry.ref, at, scope=scope, salience=0.9))
    return out


def keyword_candidates(entry: B.Entry, ctx: Context, at: str) -> list:
    out = []
    prose = CODE_FENCE_RE.sub("\n", entry.text)
    for original in sentences(prose):
        sent = INLINE_CODE_RE.sub(" ", original)  # match on prose only; keep the identifiers in the text
        if ("?" in sent[-3:] or len(sent) < 20 or "[" in sent and TAG_RE.search(sent)
                or not mentions_any(sent, KEYWORD_WORDS) or not ANY_KEYWORD_RE.search(sent)):
            continue
        best = None
        for rtype, patterns in (("rejected", REJECTION_PATTERNS), ("decision", DECISION_PATTERNS),
                                ("learned", LEARNED_PATTERNS)):
            for pat, conf in patterns:
                if pat.search(sent):
                    if best is None or conf > best[1]:
                        best = (rtype, conf)
                    break
        if best is None:
            continue
        rtype, conf = best
        if rtype == "decision" and WEAK_OBJECT_RE.search(sent):
            continue
        if rtype == "rejected" and SYSTEM_REJECTS_RE.search(sent):
            continue
        if HEDGE_RE.search(sent):
            conf -= 0.3
        if REASON_RE.search(sent):
            conf += 0.15
        conf = round(min(conf, 0.95, KEYWORD_MAX.get(rtype, 0.95)), 2)
        if conf < ctx.keyword_min_confidence:
            continue
        text = clean_sentence(original, ctx.max_chars)
        if len(text.split()) < 6 or text.rstrip().endswith(":"):
            continue  # a fragment, or an intro to a list/code that follows: the content is elsewhere
        if not technical(original):
            continue  # "I decided to take a break", "let you know how it turns out": not about the work
        out.append(Candidate(rtype, text, conf, "keyword", entry.ref, at, salience=0.6))
    return out


def _plan_text(items) -> str:
    marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
    return "; ".join("%s %s" % (marks.get(i["status"], "[ ]"), i["text"].strip()) for i in items)


def _first_line(text: str, limit: int = 160) -> str:
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return clean_sentence(line, limit)
    return ""


NOISE_TAIL_RE = re.compile(r"\s*(?:2>&1|\|\s*(?:tail|head|grep|less|cat)\b.*|;\s*echo\b.*)\s*$")
FIXABLE_RE = re.compile(r"\b(?:test|tests|pytest|jest|vitest|mocha|rspec|go test|cargo (?:test|build|check|clippy)|"
                        r"mix (?:test|compile|credo|format)|npm (?:test|run)|yarn|pnpm|make|tsc|mypy|ruff|flake8|"
                        r"eslint|lint|build|compile|gradle|mvn|dotnet (?:test|build))\b", re.I)


def _command_key(cmd: str) -> str:
    """The same command run again, whatever output filtering was added around it."""
    cmd = re.sub(r"\s+", " ", cmd.strip())
    prev = None
    while prev != cmd:
        prev, cmd = cmd, NOISE_TAIL_RE.sub("", cmd)
    return cmd if FIXABLE_RE.search(cmd) else ""


SUMMARY_TAIL_RE = re.compile(r"\n\s*(?:If you need specific details from before compaction|Please continue the "
                             r"conversation from where we left|Continue the conversation from where it left off)")
SUMMARY_HEAD_RE = re.compile(r"^\s*(?:This session is being continued from a previous conversation[^.]*\.\s*|"
                             r"The summary below covers the earlier portion of the conversation\.\s*|"
                             r"The conversation is summarized below:\s*|Summary:\s*)+", re.I)


def summary_text(summary: str, limit: int) -> str:
    """The part of a compaction summary worth carrying: current work and pending tasks when marked.
    The client's instructions around it (where the transcript is, "continue without asking") are not memory."""
    summary = re.sub(r"<system-reminder>.*?</system-reminder>", " ", summary, flags=re.S)
    summary = SUMMARY_TAIL_RE.split(summary, 1)[0]
    summary = SUMMARY_HEAD_RE.sub("", summary)
    m = re.search(r"^\s*Summary:\s*$", summary, re.M)
    if m:  # Claude's summaries think aloud under "Analysis:" first; the summary proper follows
        summary = summary[m.end():]
    summary = re.sub(r"<analysis>.*?</analysis>", " ", summary, flags=re.S)
    wanted = []
    for heading in ("Current Work", "Pending Tasks", "Optional Next Step", "Next Step"):
        m = re.search(r"^\s*(?:#+\s*)?(?:\d+\.\s*)?\**%s\**:?\**\s*$(.*?)(?=^\s*(?:#{1,2}\s|\d+\.\s+\**[A-Z][a-z]+ "
                      r"[A-Z]?[a-z]*:?\**\s*$)|\Z)" % heading, summary, re.M | re.S | re.I)
        if m and m.group(1).strip():
            wanted.append("%s: %s" % (heading, re.sub(r"\s+", " ", m.group(1)).strip()))
    text = " | ".join(wanted) if wanted else re.sub(r"\s+", " ", summary).strip()
    text = re.sub(r"^This session is being continued from a previous conversation[^.]*\.\s*", "", text)
    return clean_sentence(text, limit)


# Prompts that ask for nothing new: a slash command alone (/compact, /clear, …), "continue", "ok",
# "thanks", "did you push?".  They are not what the user "asked": progress keeps the last substantive request.
CONTENT_FREE_RE = re.compile(
    r"^\W*(?:/[\w:-]+|!?\s*(?:ok(?:ay)?|k|yes|yep|yeah|y|no|nope|n|sure|thanks?(?: you)?|thx|ty|cool|nice|great|"
    r"perfect|good|lgtm|done|go(?: on| ahead)?|proceed|continue|keep going|carry on|next|retry|try again|"
    r"resume|do it|go for it|sounds good|looks good|ship it|(?:did|have) you (?:push(?:ed)?|commit(?:ted)?)"
    r"(?: it| that| this| the changes)?|push(?: it)?|commit(?: it)?|continue (?:until|till) (?:all|it|everything)"
    r"(?: is| are)? (?:done|finished|complete)|what else|anything else|status|and\?|hm+|hello|hi)"
    r"(?:[\s,]+(?:please|pls|then|now|thanks|thank you))*)\W*$", re.I)


def substantive(prompt: str) -> bool:
    """False for a prompt that asks for nothing new (see CONTENT_FREE_RE)."""
    return not CONTENT_FREE_RE.match(prompt.strip()) and has_content(prompt, 4)


# Claude Code's compaction summary: numbered sections under "Summary:".  Each is split into typed records.
SUMMARY_SECTION_RE = re.compile(
    r"^[ \t]*(?:#+[ \t]*)?(?:\d+\.[ \t]*)?\**[ \t]*(?P<name>Primary Request(?: and Intent)?|Key Technical Concepts|"
    r"Files and Code Sections|Errors and [Ff]ixes|Problem Solving|All [Uu]ser [Mm]essages|Pending Tasks|"
    r"Current Work|(?:Optional )?Next Step)[ \t]*\**:?\**[ \t]*$", re.M)
SUMMARY_KEYS = {"primary request": "intent", "primary request and intent": "intent", "pending tasks": "pending",
                "current work": "current", "optional next step": "next", "next step": "next",
                "errors and fixes": "errors", "problem solving": "solving", "key technical concepts": "concepts",
                "files and code sections": "files", "all user messages": "messages"}
BULLET_RE = re.compile(r"^([ \t]*)(?:[-*+•]|\d+[.)])[ \t]+(.*)$")
IN_PROGRESS_RE = re.compile(r"\((?:IN[ _]PROGRESS|in progress|current)\)|\bIN PROGRESS\b")
DONE_MARK_RE = re.compile(r"\((?:COMPLETED?|DONE|done|completed?)\)")


def summary_sections(summary: str) -> dict:
    """{intent, pending, current, next, errors, solving, …: body text} of a compaction summary; {} when it
    has no recognised sections.  The analysis before "Summary:" and the client's instructions are dropped."""
    summary = re.sub(r"<system-reminder>.*?</system-reminder>", " ", summary, flags=re.S)
    summary = SUMMARY_TAIL_RE.split(summary, 1)[0]
    m = re.search(r"^\s*Summary:\s*$", summary, re.M)
    if m:
        summary = summary[m.end():]
    summary = re.sub(r"<analysis>.*?</analysis>", " ", summary, flags=re.S)
    heads = list(SUMMARY_SECTION_RE.finditer(summary))
    out = {}
    for i, h in enumerate(heads):
        body = summary[h.end(): heads[i + 1].start() if i + 1 < len(heads) else len(summary)]
        key = SUMMARY_KEYS.get(h.group("name").lower())
        if key and body.strip():
            out[key] = body.strip("\n")
    return out


def summary_items(body: str) -> list:
    """The items of a summary section, each flattened to one line: `### ` blocks when there are any, else the
    top-level bullets with their sub-bullets and continuation lines.  Code blocks are left out."""
    body = CODE_FENCE_RE.sub("\n", body)
    lines = [ln for ln in body.splitlines() if ln.strip()]
    if any(ln.lstrip().startswith("###") for ln in lines):
        blocks, cur, before = [], None, []
        for ln in lines:
            if ln.lstrip().startswith("###"):
                cur = [ln.lstrip("# \t")]
                blocks.append(cur)
            elif cur is not None:
                cur.append(ln)
            else:
                before.append(ln)  # the section's own points, before its first sub-heading
        return (summary_items("\n".join(before)) if before else []) + [_flatten(b) for b in blocks]
    bullets = [(len(m.group(1).expandtabs()), i) for i, m in ((i, BULLET_RE.match(ln)) for i, ln in enumerate(lines)) if m]
    if not bullets:
        return [_flatten(lines)] if lines else []
    top = min(ind for ind, _ in bullets)
    items, cur = [], None
    for ln in lines:
        m = BULLET_RE.match(ln)
        if m and len(m.group(1).expandtabs()) == top:
            cur = [m.group(2)]
            items.append(cur)
        elif cur is not None:
            cur.append(ln)
        else:
            items.append([ln])
    return [_flatten(it) for it in items]


def _flatten(lines) -> str:
    parts = []
    for ln in lines:
        m = BULLET_RE.match(ln)
        t = (m.group(2) if m else ln).strip().replace("**", "")
        if t:
            parts.append(t)
    text = ""
    for t in parts:  # "Heading:" followed by its points reads "Heading: a; b", sentences stay sentences
        if not text:
            text = t
        elif text.endswith((":", ".", "!", "?")):
            text += " " + t
        else:
            text += "; " + t
    return re.sub(r"\s+", " ", text).strip()


def _first_sentence(text: str, limit: int) -> str:
    items = summary_items(text)
    first = next(sentences(items[0]), "") if items else ""
    return clean_sentence(re.sub(r"[:;]\s*(?:\d+[.)]?)?\s*$", "", first), limit)


# A closing message that reports the whole task finished ("Epic X complete.", "All 4 subtasks done").
# A reply that turns down what was just proposed or concluded: "no, ...", "it's a bad idea, since ...",
# "that won't work", "I disagree", "not like that", "don't do that".
TURNED_DOWN_RE = re.compile(
    r"\s*(?:no\b|nope\b|nah\b|wrong\b|(?:i\s+)?disagree\b|not\s+(?:like\s+that|that|a\s+good\s+idea)\b|"
    r"(?:it'?s|it\s+is|that'?s|that\s+is|this\s+is)\s+(?:a\s+)?(?:bad|terrible|wrong|not\s+(?:a\s+)?(?:good|right)|"
    r"a\s+no)\b|(?:that|this|it)\s+(?:won'?t|will\s+not|doesn'?t|does\s+not)\s+work\b|don'?t\s+do\s+(?:that|this|it)\b)",
    re.I)
DONE_CLAIM_RE = re.compile(r"\ball\b[^.\n]{0,60}?\b(?:done|complete|completed|finished)\b|"
                           r"^\W*(?:\S+\s+){0,4}(?:complete|completed|done|finished)\W*$", re.I | re.M)
DONE_WORDS = ("done", "complete", "finished")  # every match of DONE_CLAIM_RE holds one (mentions_any)
# A sentence that reports an action as done ("I've simplified …", "… has been updated").
DID_RE = re.compile(r"\b(?:I've|I have|we've|has been|have been|now|successfully)\b|^\W*(?:Done|Updated|Simplified|"
                    r"Removed|Added|Created|Fixed|Implemented|Wrote|Closed|Committed|Pushed)\b", re.I)


def summary_plan(sections: dict) -> list:
    """The plan a compaction summary leaves: its pending tasks, with what was being done (the item marked IN
    PROGRESS, else the first sentence of "Current Work") as the in-progress item."""
    items = []
    for text in summary_items(sections.get("pending") or ""):
        status = "in_progress" if IN_PROGRESS_RE.search(text) else "completed" if DONE_MARK_RE.search(text) else "pending"
        text = clean_sentence(text, 300)
        if has_content(text, 4) and not re.match(r"^(?:none|n/a|nothing)\b", text, re.I):
            items.append({"text": text, "status": status})
    if items and not any(i["status"] == "in_progress" for i in items):
        doing = _first_sentence(sections.get("next") or sections.get("current") or "", 240)
        if has_content(doing, 4):
            items.insert(0, {"text": doing, "status": "in_progress"})
    return items


STATUS_WORDS_RE = re.compile(r"\b(?:completed?|in progress|done|pending|finished)\b", re.I)


def summary_goal(body: str) -> str:
    """What the session set out to do: the intent's points, or its first sentences, without the sentences
    that report progress (those go stale; the plan carries the state)."""
    items = summary_items(body)
    if len(items) > 1:
        return clean_sentence("; ".join(i.rstrip(".;") for i in items[:4]), 300)
    kept = [x for x in sentences(" ".join(items)) if not STATUS_WORDS_RE.search(re.sub(r'"[^"]*"', "", x))][:2]
    return clean_sentence(" ".join(kept), 300)


# A problem-solving item that names a choice is a decision ("Chose upsert with identity for ..."), one that
# names an approach given up is a rejection; the rest are what was learned.
CHOICE_START_RE = re.compile(r"^(?:chose|chosen|picked|opted (?:for|to)|decided (?:to|on)|went with|settled on|"
                             r"selected|switched to)\b", re.I)
GIVEN_UP_START_RE = re.compile(r"^(?:decided against|rejected|ruled out|abandoned|gave up on)\b", re.I)
# A list the summary labels as the work's decisions or its rejected approaches, in its analysis or in a
# section of its own: "Key technical decisions:", "### Design decisions", "Decisions made:", "Rejected
# approaches:".  "Open decisions:" or "Decisions needed:" label questions, not decisions: no match.
LABELED_LIST_RE = re.compile(
    r"^[ \t]*(?:#+[ \t]*)?(?:\d+\.[ \t]*)?\**[ \t]*(?:(?P<dec>(?:key |main |important |final )?(?:technical |design |"
    r"architectur(?:e|al) |implementation )?decisions?(?: made)?)|(?P<rej>(?:rejected|discarded|ruled[- ]out)"
    r"(?: approaches| alternatives| options| ideas)?|approaches rejected|alternatives rejected))"
    r"[ \t]*\**:?\**[ \t]*$", re.I | re.M)
LABELED_MAX = 8  # items taken from one labeled list
LABELED_WORDS = ("decision", "rejected", "discarded", "ruled")  # every match of LABELED_LIST_RE holds one


def labeled_lists(summary: str) -> list:
    """[(type, item)] of the lists a compaction summary labels as decisions ("decision") or rejected
    approaches ("rejected"): the bullets right under the label, each with its sub-bullets."""
    if not mentions_any(summary, LABELED_WORDS):
        return []
    summary = SUMMARY_TAIL_RE.split(re.sub(r"<system-reminder>.*?</system-reminder>", " ", summary, flags=re.S), 1)[0]
    out = []
    for m in LABELED_LIST_RE.finditer(summary):
        rtype = "decision" if m.group("dec") else "rejected"
        body, top, marker = [], None, None
        for ln in summary[m.end():].splitlines()[1:]:
            if not ln.strip():
                if body and body[-1] == "":
                    break  # two blank lines end the list
                if body:
                    body.append("")
                continue
            b = BULLET_RE.match(ln)
            indent = len(ln) - len(ln.lstrip())
            mark = ln.lstrip()[:1].isdigit() if b else None  # numbered or not: "7. Pending Tasks:" after "- ..."
            if top is None:
                if not b:
                    break  # the label is not followed by a list
                top, marker = indent, mark
            elif (not b and indent <= top or ln.lstrip().startswith("#") or b and indent < top
                  or b and indent == top and mark != marker or SUMMARY_SECTION_RE.match(ln)):
                break  # the text after the list, the next heading or section
            body.append(ln)
        out += [(rtype, item) for item in summary_items("\n".join(body))[:LABELED_MAX]]
    return out


def labeled_candidates(text: str, ctx: "Context", ref: str, at: str) -> list:
    """A decision (or rejected) record per item of the lists `text` labels as decisions (labeled_lists)."""
    out = []
    for rtype, item in labeled_lists(text):
        item = clean_sentence(item, ctx.max_chars)
        if len(item.split()) >= 4 and has_content(item):
            out.append(Candidate(rtype, item, 0.7, "structural", ref, at, salience=0.7))
    return out


def summary_candidates(sections: dict, ctx: "Context", ref: str, at: str) -> list:
    """Knowledge records from a compaction summary, one per item: errors and fixes -> fix, problem solving
    -> learned (decision or rejected when the item starts by naming a choice or an approach given up), the
    optional next step -> todo (kept with the session's plan, retired with it)."""
    out = []
    for rtype, key, conf in (("fix", "errors", 0.7), ("learned", "solving", 0.65)):
        for text in summary_items(sections.get(key) or ""):
            text = clean_sentence(text, ctx.max_chars)
            if len(text.split()) >= 5 and has_content(text):
                kind = rtype
                if LABELED_LIST_RE.match(re.split(r"[;:]", text, 1)[0]):
                    continue  # "### Rejected approaches" in the section: its items are taken by labeled_lists
                if key == "solving":
                    kind = ("decision" if CHOICE_START_RE.match(text) else
                            "rejected" if GIVEN_UP_START_RE.match(text) else rtype)
                out.append(Candidate(kind, text, conf, "structural", ref, at, salience=0.6))
    nxt = sections.get("next")
    if nxt and any(i["status"] == "in_progress" for i in summary_plan(dict(sections, next=None, current=None))):
        # otherwise the next step is the plan's in-progress item
        text = clean_sentence(_flatten(CODE_FENCE_RE.sub("\n", nxt).splitlines()), ctx.max_chars)
        text = re.sub(r"\s*Direct quote from (?:the )?most recent work:.*$", "", text, flags=re.I | re.S).strip()
        if has_content(text):
            out.append(Candidate("todo", "Next step (at compaction): " + text, 0.75, "structural", ref, at,
                                 key="todo:%s:next" % ctx.session, replace=True, salience=0.8))
    return out


def _mark_reported_done(plan: dict, text: str):
    """An item of a summary's plan that a later assistant message reports done ("I've simplified the …")
    is marked completed: most of the item's terms appear in one such sentence."""
    from cortex.store.terms import tokenize
    open_items = [i for i in plan["items"] if i["status"] != "completed"]
    if not open_items:
        return
    said = [frozenset(tokenize(s)) for s in sentences(strip_code(text)) if DID_RE.search(s)]
    for item in open_items:
        want = frozenset(tokenize(item["text"]))
        if len(want) >= 3 and any(len(want & got) >= 0.6 * len(want) for got in said):
            item["status"] = "completed"


PLACEHOLDER_RE = re.compile(r"\[REDACTED[^\]]*\]|\[[A-Z_]+ len=\d+[^\]]*\]")


def has_content(text: str, min_letters: int = 12) -> bool:
    """False for text that is only placeholders (redacted upstream) or punctuation."""
    return sum(map(str.isalpha, PLACEHOLDER_RE.sub("", text))) >= min_letters


KEYWORD_MAX = {"decision": 0.75, "rejected": 0.75}  # stated by the assistant alone: below an agreement


DECISION_FILES = 3    # files a decision settled in conversation keeps: those the exchange read or changed
TOUCHED_KEEP = 20     # files read or changed lately, kept in the extraction state


def touch(touched: list, rel: str, turn: int) -> list:
    """The session's recently read or changed files, [[path, user turn]] oldest first, `rel` now last."""
    return [t for t in touched if t[0] != rel][-(TOUCHED_KEEP - 1):] + [[rel, turn]]


def exchange_files(touched: list, turn: int, user: bool, since=None) -> list:
    """The files the exchange that settles a decision read or changed, most recent first, at most
    DECISION_FILES.  The exchange: the assistant's work since the user's last prompt, for a decision the
    assistant states (a summing-up, a restated rule); its work before the user's reply, for a decision the
    user's reply settles; and in both cases since the proposal it settles when that came earlier (what
    the assistant read before proposing is what the rule is about)."""
    start = turn - 1 if user else turn
    if since is not None:
        start = min(since, start)
    return [f for f, t in reversed(touched) if t >= start][:DECISION_FILES]


def decision_files(cand, touched: list, turn: int, user: bool, since, dfiles: dict) -> list:
    """`files` of a decision or rejection from the conversation layer.  A keyed decision (the agreement,
    then the summing-up or an afterthought that rewrites the same record) keeps the files of its first
    statement first, so the record names the same files whichever statement wrote it last."""
    files = exchange_files(touched, turn, user, since)
    if cand.key:
        before = dfiles.pop(cand.key, [])
        files = (before + [f for f in files if f not in before])[:DECISION_FILES]
        dfiles[cand.key] = files
        while len(dfiles) > 4:
            dfiles.pop(next(iter(dfiles)))
    return files


# what the user says out of the blue (no proposal answered): a rule, an approach ruled out up front
UNASKED_KINDS = ("rule", "ruled-out")


def conversation_candidates(entry: B.Entry, ctx: Context, at: str, dstate: dict, worked: bool = True):
    """Decisions settled between the user and the assistant (cortex/ingest/decisions.py).  `worked`: the
    session has used a tool (read a file, ran a command) by now."""
    from cortex.ingest import decisions as D
    if CORTEX_MARK in (entry.text or "") or (entry.kind == B.USER and TAG_RE.search(entry.text or "")
                                             and not D.AGREE_RE.match(entry.text or "")):
        return [], dstate
    from cortex.model import redact
    # redacted first: what the state keeps (the proposal, recent identifiers) is cut from the text, and a
    # fragment of a secret cut out of its context would no longer be recognised as one
    text = redact.clean(entry.text or "")[0]
    found, dstate = D.step("user" if entry.kind == B.USER else "assistant", text, dstate,
                           "%s:%s" % (ctx.session, entry.ref))
    found, dstate = _settle(entry, text, found, dstate, ctx)
    out = []
    for rtype, text, conf, kind, key in found:
        text = clean_sentence(text, ctx.max_chars)
        if len(text.split()) < 4 or not has_content(text):
            continue
        if (kind in UNASKED_KINDS or not worked) and not technical(text):
            # a rule the user states out of the blue must be about the work ("Always happy to help"), and so
            # must an accepted proposal before any work was done: talk between friends has proposals too
            # ("how about we go to McGee's pub then?" "Great idea")
            continue
        out.append(Candidate(rtype, text, conf, "conversation", entry.ref, at, key=key, replace=bool(key),
                             salience=0.8, if_replacing=kind == "changed"))
    return out, dstate


SETTLED = 0.8  # a choice the user took up from the assistant's offer, stated once the code changed (settle.py)


def _settle(entry: B.Entry, text: str, found: list, dstate: dict, ctx: Context):
    """The exchange reader of settle.py beside the phrasings of decisions.py: a pick they did not catch is
    kept when the assistant states it after an edit; a change they read while a pick waited answers a
    choice, so it is kept even when it replaces no rule."""
    from cortex.ingest import decisions as D
    from cortex.ingest import settle as S
    ss = dstate.get("settle") or S.initial()
    if entry.kind == B.USER:
        ss = S.user_turn(text, entry.ref, ss)
        if any(f[0] == "decision" for f in found):
            ss = S.caught(ss)
        return found, dict(dstate, settle=ss)
    said, ss = S.assistant_turn(text, ss, [f[1] for f in found if f[3] == "changed"])
    if any(f[0] == "decision" and f[3] != "changed" for f in found):
        ss = S.caught(ss)  # decisions.py kept this exchange's decision in its own words
    elif said:
        key = "settle:%s:%s" % (ctx.session, said["ref"])
        found = [f for f in found if f[3] != "changed" or f[1] not in said["used"]] + [
            ("decision", said["text"], SETTLED, "settled", key)]
        dstate = dict(dstate)
        D.remember(dstate, key, said["text"])  # a report of the work the user approves may restate it
    return found, dict(dstate, settle=ss)


EDITED = 0.8  # a value the session edited in code, where a rule stated the old one
EDIT_LINE_CHARS = 200


def edit_candidates(e: B.Entry, ctx: Context, at: str, asked: str = "") -> list:
    """A decision candidate for each line of an edit that replaces a value (value_edits.py): "`ttl: 45m  # held
    reservations expire 45 minutes` in `inventory-svc/application.yml` (was 30)".  The normalizer keeps one
    only when an earlier rule states the replaced value (consolidate.edited_targets), and then only when no
    decision of the session states the new value already (that one replaces the rule)."""
    from cortex.ingest.value_edits import value_edits
    out = []
    rel = _rel(e.files[0], ctx.cwd) if e.files else ""
    if TEST_PATH_RE.search(rel.replace("\\", "/")):
        return out  # a test's values follow the rule (fixtures, boundaries); they do not set it
    for i, ve in enumerate(value_edits(e.args or {}, e.text or "")):
        line = clean_sentence(ve["new"], EDIT_LINE_CHARS).replace("`", "'")
        removed = [t for t in ve["removed"] if not any(t != u and t in u for u in ve["removed"])]  # 30m, not 30m, 30
        was = clean_sentence(", ".join(removed), 80).replace("`", "'")
        text = "`%s`%s (was %s)." % (line, " in `%s`" % rel if rel else "", was)
        # the user's words for it, when the last request says the new value ("they want 45 min before ...")
        said = [x for x in re.split(r"(?<=[.!?])\s+|\n+", asked or "") if any(
            re.search(r"(?<![\w.])%s(?![\d.])" % re.escape(n), x) for n in re.findall(r"\d+(?:[.:]\d+)?", " ".join(ve["added"])))]
        if said:
            text = "%s: %s" % (text.rstrip("."), clean_sentence(said[-1], 160))
        out.append(Candidate("decision", text, EDITED, "edit", e.ref, at, files=[rel] if rel else [],
                             key="edit:%s:%s:%d" % (ctx.session, e.ref, i), replace=True, salience=0.8,
                             edit={k: ve[k] for k in ("removed", "added", "kept", "old", "new")}))
    return out


DOC = 0.9          # a rule the session wrote into the project's documents: as firm as an agreed proposal
DOC_SECTIONS = 30  # sections of documents a session's state remembers, the latest
DOC_LINES = 12     # statement lines one section keeps
DOC_PER_FILE = 3   # sections of one document a session keeps: past them it is writing the document


def doc_candidates(e: B.Entry, ctx: Context, at: str, docs: dict):
    """A decision candidate for each section of a project document that the edit adds to or changes
    (doc_rules.py): "Money (`docs/conventions.md`): All amounts are int64 minor units ...".  The session's
    earlier edits of the same section are part of it (`docs`: "path\nheading" -> lines, returned updated);
    an edit that shows no heading belongs to the section whose lines it replaces or shows around it."""
    from cortex.ingest import doc_rules
    parts = doc_rules.patch_files(e.args or {}, e.text or "")  # a Codex patch of several files: each alone
    if parts:
        out = []
        for path, patch in parts:
            found, docs = doc_candidates(B.Entry(kind=e.kind, ref=e.ref, action=e.action, args={"input": patch},
                                                 files=(path,)), ctx, at, docs)
            out.extend(found)
        return out, docs
    rel = _rel(e.files[0], ctx.cwd).replace("\\", "/") if e.files else ""
    if not doc_rules.is_doc(rel):
        return [], docs
    out, docs = [], dict(docs)
    for sec in doc_rules.doc_sections(e.args or {}, e.text or "", e.action == B.WRITE):
        head, removed = sec["heading"], sec["removed"]
        if head is None:
            head = next((k.split("\n", 1)[1] for k, v in docs.items() if k.startswith(rel + "\n") and k != rel + "\n"
                         and any(x in v for x in removed + sec["context"])), None)
        key = "%s\n%s" % (rel, head or "")
        if key not in docs and sum(k.startswith(rel + "\n") for k in docs) >= DOC_PER_FILE:
            continue
        before = [] if e.action == B.WRITE else [x for x in docs.get(key, []) if x not in removed]
        lines = (before + [x for x in sec["lines"] if x not in before])[-DOC_LINES:]
        docs.pop(key, None)
        docs[key] = lines
        text = doc_rules.rule_text({"heading": head, "lines": lines}, rel)
        if text:
            out.append(Candidate("decision", text, DOC, "doc", e.ref, at, files=[rel],
                                 key="doc:%s:%s:%s" % (ctx.session, rel, head or ""), replace=True, salience=0.8,
                                 doc={"path": rel, "heading": head, "removed": removed}))
    return out, dict(list(docs.items())[-DOC_SECTIONS:])


def _redact_tree(obj, redact):
    if isinstance(obj, str):
        return redact.clean(obj)[0]
    if isinstance(obj, list):
        return [_redact_tree(x, redact) for x in obj]
    if isinstance(obj, dict):
        return {k: _redact_tree(v, redact) for k, v in obj.items()}
    return obj


def after_capture(captured: str, ts: str) -> bool:
    """Whether ISO time `ts` is after `captured` (the event's capture time), by more than a second.  The
    text comparison decides the common case (both UTC); a time that looks later is checked as a time."""
    if ts[:19] <= captured[:19]:
        return False
    from cortex.store.index import iso_to_epoch
    t, c = iso_to_epoch(ts), iso_to_epoch(captured)
    return bool(t and c) and t > c + 1.0


OPTION_NOT_TAKEN = 0.75  # an option the assistant set out that the session's decision passed over: the user
                         # rarely says no to it in words, so it stands below a rejection said (0.9)


RULED_OUT_BY_SUMMARY = 0.8  # "- not Grover for now (Chrome won't fit ...)" in the turn that states the decision: the
                            # assistant's summing-up, as firm as the summed-up decision itself (decisions.SUMMED)


def _answer_offer(offer: dict, out: list, mark: int, ctx: Context):
    """The offer still waiting, or None once a decision among out[mark:] (made after the offer) names one of
    its options: the others are appended to `out` as rejected candidates (options.py)."""
    new = out[max(mark, offer.get("since", 0)):]
    for c in new:
        if c.type != "decision":
            continue
        pick = O.chosen(offer["options"], c.text)
        if pick is None:
            continue
        said = [x.text for x in out[offer.get("since", 0):] if x.type == "rejected"]
        for text in O.not_taken(offer["options"], pick, said):
            out.append(Candidate("rejected", clean_sentence(text, ctx.max_chars), OPTION_NOT_TAKEN, "options",
                                 offer["ref"], offer["at"], files=list(c.files), salience=0.6, chosen=c))
        return None
    return offer


def extract(entries: list, ctx: Context, state: Optional[dict] = None):
    """Candidates from one batch of a session's entries, in transcript order.

    `state` carries what a session-level record needs across batches (the last prompt, files
    changed, commands still failing); pass back the returned state with the next batch.
    """
    st = {"last_prompt": None, "edited": [], "failures": {}, "last_at": ctx.fallback_time, "activity_at": "",
          "first_activity_at": "", "plan_since": "", "open_shell": {}, "prompts": [], "goal": None, "plan": None,
          "turn": 0, "touched": [], "proposal_turn": None, "dfiles": {}}
    st.update(state or {})
    edited, failures = list(st["edited"]), dict(st["failures"])
    failed_calls = [dict(f) for f in st.get("failed_calls") or ()]  # for command workarounds (workarounds.py)
    # the files the conversation's exchanges read or changed, by user turn: a decision keeps those of its own
    turn, proposal_turn = int(st.get("turn") or 0), st.get("proposal_turn")
    touched = [list(t) for t in st.get("touched") or []]
    dfiles = {k: list(v) for k, v in (st.get("dfiles") or {}).items()}
    worked = bool(st.get("worked") or touched or edited)  # a tool was used in the session by now
    out = []
    calls = {}
    # shell commands whose result had not arrived when the last batch ended (a line cut mid-write, or
    # the session stopped between a call and its result): the result in this batch still finds them
    open_shell = dict(st.get("open_shell") or {})
    activity_at = st.get("activity_at") or ""
    first_activity_at = st.get("first_activity_at") or ""
    plan_since = st.get("plan_since") or ""
    plan = st.get("plan")
    plan_before = json.dumps(plan, sort_keys=True)
    told_before = (st.get("goal"), st.get("outcome"))
    prompts = list(st.get("prompts") or [])
    last_at = st["last_at"]
    docs = dict(st.get("docs") or {})
    from cortex.ingest import decisions as D
    dstate = dict(D.initial_state(), **(st.get("decisions") or {}))
    new_activity = False

    unanswered = set()  # the decision candidates of the last assistant turn, until the user answers it
    offer = dict(st["offer"], since=0) if st.get("offer") else None  # options set out, waiting (options.py)
    mark = 0
    for e in entries:
        if offer and len(out) > mark:
            offer = _answer_offer(offer, out, mark, ctx)
        mark = len(out)
        at = e.ts or last_at or ctx.fallback_time
        if e.ts and ctx.fallback_time and after_capture(ctx.fallback_time, e.ts):
            at = ctx.fallback_time  # dated after its capture (a skewed clock): never ahead of later sessions
        last_at = at
        if e.kind in (B.INJECTED, B.THINKING) or CORTEX_MARK in (e.text or ""):
            continue
        if e.kind in (B.USER, B.ASSISTANT) and not e.sidechain:
            turn += e.kind == B.USER
            had = dstate.get("proposal")
            found, dstate = conversation_candidates(e, ctx, at, dstate, worked)
            for c in found:  # (an agreement clears the proposal it answers: its turn is still the exchange's start)
                if c.type in ("decision", "rejected"):
                    c.files = decision_files(c, touched, turn, e.kind == B.USER, proposal_turn if had else None,
                                             dfiles)
            if dstate.get("proposal") is None:
                proposal_turn = None
            elif e.kind == B.ASSISTANT and dstate["proposal"] != had:
                proposal_turn = turn
            out.extend(found)
        else:
            found = []
        if e.kind == B.USER:
            if offer and not e.sidechain:
                offer["turns"] += 1
                if offer["turns"] > O.OFFER_USER_TURNS:
                    offer = None
            if unanswered and not e.sidechain and TURNED_DOWN_RE.match(strip_code(e.text or "")):
                # the user turned down what the assistant just concluded ("it's a bad idea, since ..."): that
                # conclusion was never settled, so it is not kept as a decision (the conversation layer keeps
                # the rejection with its reason)
                out = [c for c in out if id(c) not in unanswered]
            unanswered = set()
            out.extend(tag_candidates(e, ctx, at))
            if not e.sidechain and len(e.text.strip()) >= 8 and substantive(e.text):
                st["last_prompt"] = {"text": clean_sentence(e.text, 200), "ref": e.ref, "at": at}
                short = clean_sentence(e.text, 120)
                prompts = [p for p in prompts if p != short][-2:] + [short]
                new_activity, activity_at = True, max(activity_at, at)
                first_activity_at = first_activity_at or at
        elif e.kind == B.ASSISTANT:
            out.extend(tag_candidates(e, ctx, at))
            if not e.sidechain:
                kw = keyword_candidates(e, ctx, at)
                if mentions_any(e.text, LABELED_WORDS):
                    unfenced = CODE_FENCE_RE.sub("\n", e.text).strip()
                    if not unfenced.endswith("?") or DONE_CLAIM_RE.search(unfenced):
                        # a report's "Key decisions:" list counts as the keyword layer's statements do; one in
                        # a turn that ends by asking the user (and reports nothing done) is still a proposal
                        kw += labeled_candidates(unfenced, ctx, e.ref, at)
                if found or dstate.get("proposal"):
                    # a turn that sums up an agreement says it once (the conversation layer has it); a turn
                    # that puts a proposal to the user has not settled anything yet
                    kw = [c for c in kw if c.type not in ("decision", "rejected")]
                out.extend(kw)
                unanswered = {id(c) for c in kw if c.type == "decision"}
                prose = strip_code(e.text)
                from cortex.model import redact
                clean_prose = redact.clean(CODE_FENCE_RE.sub("\n", e.text))[0]  # inline code names the options
                made = next((c for c in out[mark:] if c.type == "decision"), None)
                if made is not None:
                    # the turn that states the decision lists what was not done: rejections, with the decision
                    said = [x.text.lower() for x in out[mark:] if x.type == "rejected"]
                    stated = " ".join(x.text.lower() for x in out[mark:] if x.type == "decision")
                    for text in O.ruled_out(clean_prose):
                        # (a summing-up the decision keeps whole says it already: one record, not two)
                        if text.lower() not in said and not O.said_in(text, stated):
                            out.append(Candidate("rejected", clean_sentence(text, ctx.max_chars), RULED_OUT_BY_SUMMARY,
                                                 "options", e.ref, at, files=list(made.files), salience=0.6,
                                                 chosen=made))
                laid_out = O.offered(clean_prose)
                if laid_out:
                    if offer and len(out) > mark:
                        _answer_offer(offer, out, mark, ctx)
                    offer = {"options": laid_out, "turns": 0, "ref": e.ref, "at": at, "since": len(out)}
                claim = DONE_CLAIM_RE.search(prose) if mentions_any(prose, DONE_WORDS) else None
                # the session's closing report of the whole task ("Epic X complete."), kept in progress
                st["outcome"] = clean_sentence(claim.group(0).strip(" *#:-"), 160) if claim else None
                if plan and plan.get("source") == "summary":
                    _mark_reported_done(plan, e.text)
                    plan["claimed_done"] = bool(claim)
        elif e.kind == B.PLAN and e.plan and not e.sidechain:
            items = [{"text": i.text.strip(), "status": i.status} for i in e.plan if i.text.strip()]
            if items:
                plan = {"items": items, "ref": e.ref, "at": at, "source": "tool"}
            plan_since = plan_since or at
        elif e.kind == B.COMPACT_SUMMARY and e.text.strip():
            sections = summary_sections(e.text)
            out.extend(labeled_candidates(e.text, ctx, e.ref, at))
            if not sections.get("pending") and not sections.get("next") and not sections.get("errors"):
                out.append(Candidate("summary", summary_text(e.text, ctx.max_chars), 0.8, "structural", e.ref, at,
                                     key="summary:%s:%s" % (ctx.session, e.ref), salience=0.6))
            else:
                out.extend(summary_candidates(sections, ctx, e.ref, at))
                if sections.get("intent"):
                    st["goal"] = summary_goal(sections["intent"])
                items = summary_plan(sections)
                if items:
                    plan = {"items": items, "ref": e.ref, "at": at, "source": "summary"}
                    plan_since = plan_since or at
        elif e.kind == B.TOOL_CALL:
            worked = worked or not e.sidechain
            if e.call_id:
                calls[e.call_id] = e
                if e.action == B.SHELL and e.text:
                    open_shell[e.call_id] = e.text
            if e.action in (B.EDIT, B.WRITE, B.READ) and not e.sidechain:
                for f in e.files:
                    touched = touch(touched, _rel(f, ctx.cwd), turn)
            if e.action in (B.EDIT, B.WRITE) and not e.sidechain and dstate.get("settle"):
                from cortex.ingest import settle as S
                dstate = dict(dstate, settle=S.edited(dstate["settle"]))
            if e.action in (B.EDIT, B.WRITE) and not e.sidechain:
                found, docs = doc_candidates(e, ctx, at, docs)
                out.extend(found)
            if e.action == B.EDIT and not e.sidechain:
                out.extend(edit_candidates(e, ctx, at, (st.get("last_prompt") or {}).get("text") or ""))
            if e.action in (B.EDIT, B.WRITE):
                for f in e.files:
                    rel = _rel(f, ctx.cwd)
                    if rel in edited:
                        edited.remove(rel)
                    edited.append(rel)
                    new_activity, activity_at = True, max(activity_at, at)
                    first_activity_at = first_activity_at or at
                    for f in failures.values():
                        if rel not in f["since"]:
                            f["since"] = (f["since"] + [rel])[-10:]
                    for f in failed_calls:
                        f["edited"] = True
        elif e.kind == B.TOOL_RESULT and e.action == B.SHELL:
            call = calls.get(e.call_id)
            cmd = ((call.text if call else "") or open_shell.get(e.call_id) or e.args and str(e.args.get("command", ""))
                   or "")
            open_shell.pop(e.call_id, None)
            key = _command_key(cmd)
            failed = e.is_error or (e.exit_code not in (None, 0))
            if not e.sidechain and cmd:
                if failed:
                    failed_calls = (failed_calls + W.failed_calls(cmd, e.text, e.ref, at, FIXABLE_RE.search))[
                        -W.MAX_FAILED:]
                elif failed_calls:
                    for f, command in W.worked(cmd, failed_calls, FIXABLE_RE.search):
                        failed_calls.remove(f)
                        out.append(Candidate("gotcha", W.text_of(f, command), 0.6, "structural", f["ref"], f["at"],
                                             key="workaround:%s %s:%s" % (f["program"], f["sub"], f["err"][:60]),
                                             salience=0.5))
            if failed and key:
                failures[key] = {"ref": e.ref, "err": _first_line(e.text), "cmd": clean_sentence(cmd, 120), "at": at,
                                 "since": []}
            elif key in failures and not failed:
                f = failures.pop(key)
                if not f["since"]:
                    continue  # passed again without any change: flaky, not fixed
                fixed_by = f["since"][-3:]
                how = "after changing %s" % ", ".join(fixed_by)
                text = "`%s` failed (%s); it passed %s." % (f["cmd"], f["err"] or "non-zero exit", how)
                out.append(Candidate("fix", text, 0.6, "structural", f["ref"], f["at"], files=list(fixed_by),
                                     key="fix:%s:%s" % (key, (f["err"] or "")[:60]), salience=0.5))

    if offer and len(out) > mark:
        offer = _answer_offer(offer, out, mark, ctx)
    if offer:
        st["offer"] = {k: v for k, v in offer.items() if k != "since"}
    else:
        st.pop("offer", None)
    if plan and plan.get("claimed_done"):  # the session's last word reports the whole task finished
        plan["items"] = [dict(i, status="completed") for i in plan["items"]]
    if plan and json.dumps(plan, sort_keys=True) != plan_before:
        items = [{"text": i["text"], "status": i["status"]} for i in plan["items"]]
        out.append(Candidate("plan", _plan_text(items), 0.9, "structural", plan["ref"], plan["at"], plan=items,
                             key="plan:%s" % ctx.session, replace=True, salience=0.9, since=plan_since))
    edited = edited[-50:]
    # a new goal or closing report changes the progress record too, even in a batch with no prompt or edit
    if (new_activity or (st.get("goal"), st.get("outcome")) != told_before) and (st["last_prompt"] or edited):
        lp = st["last_prompt"]
        parts = []
        if lp:
            earlier = [p for p in prompts[:-1] if p != lp["text"]][-2:]
            parts.append('asked "%s"%s' % (lp["text"], " (before that: %s)" % "; ".join(
                '"%s"' % p for p in reversed(earlier)) if earlier else ""))
        if st.get("goal"):
            parts.append("goal: %s" % st["goal"])
        if st.get("outcome"):
            parts.append('ended with "%s"' % st["outcome"])
        if edited:
            shown = edited[-8:]
            more = len(edited) - len(shown)
            parts.append("changed %s%s" % (", ".join(shown), " (+%d more)" % more if more else ""))
        # dated by the last prompt or edit, not by the batch's last line: where a read happens to stop
        # (a line cut mid-write, a run between two stops) must not change the record
        out.append(Candidate("progress", "; ".join(parts) + ".", 0.7, "structural", lp["ref"] if lp else "",
                             activity_at or last_at, files=edited[-20:],
                             key="progress:%s" % ctx.session, replace=True, salience=0.5,
                             since=first_activity_at))
    st.pop("failed_calls", None)
    st.update(edited=edited, failures=dict(list(failures.items())[-20:]), last_at=last_at, activity_at=activity_at,
              first_activity_at=first_activity_at, plan_since=plan_since,
              open_shell=dict(list(open_shell.items())[-20:]), prompts=prompts, plan=plan, decisions=dstate,
              turn=turn, touched=touched, proposal_turn=proposal_turn, dfiles=dfiles)
    if worked:
        st["worked"] = True
    # the state is saved in state/cursors.json: it gets the same redaction as records
    from cortex.model import redact
    if st.get("last_prompt"):
        st["last_prompt"] = dict(st["last_prompt"], text=redact.clean(st["last_prompt"]["text"])[0])
    st["edited"] = [redact.clean(f)[0] for f in st["edited"]]
    st["touched"] = [[redact.clean(f)[0], t] for f, t in st["touched"]]
    st["dfiles"] = {k: [redact.clean(f)[0] for f in v] for k, v in st["dfiles"].items()}
    st["prompts"] = [redact.clean(p)[0] for p in st["prompts"]]
    for k in ("goal", "outcome"):
        if st.get(k):
            st[k] = redact.clean(st[k])[0]
    if st.get("plan"):
        st["plan"] = dict(st["plan"], items=[dict(i, text=redact.clean(i["text"])[0]) for i in st["plan"]["items"]])
    st["decisions"] = _redact_tree(st["decisions"], redact)
    if docs:  # only when there are some: other sessions' cursors stay as they were
        st["docs"] = {redact.clean(k)[0]: [redact.clean(x)[0] for x in v] for k, v in docs.items()}
    st["open_shell"] = {k: redact.clean(v)[0] for k, v in st["open_shell"].items()}
    if failed_calls:  # only when there are some: other sessions' cursors stay as they were
        st["failed_calls"] = [dict(f, cmd=redact.clean(f["cmd"])[0], err=redact.clean(f["err"])[0],
                                   args=[redact.clean(a)[0] for a in f["args"]]) for f in failed_calls]
    st["failures"] = {redact.clean(k)[0]: dict(f, cmd=redact.clean(f["cmd"])[0], err=redact.clean(f["err"] or "")[0])
                      for k, f in st["failures"].items()}
    return [c for c in out if c.type in ("plan", "progress") or has_content(c.text)], st
