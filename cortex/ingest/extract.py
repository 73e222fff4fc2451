"""Extraction: transcript entries in, record candidates out.  Pure functions, no model calls.

Three layers, each candidate tagged with the one that found it:
  structural -- what the session did: the active plan, files changed, commands that failed and
                what fixed them, the client's own compaction summary, where the user left off;
  keyword    -- decisions and rejections stated in the assistant's prose ("chose X over Y because Z");
  tag        -- explicit `[MEMORY: type] text` lines (confidence 1.0).
Injected text (hook output, AGENTS.md, Cortex's own block) and reasoning are never sources.
"""
import os
import re
from dataclasses import dataclass, field
from typing import List, Optional

from cortex.ingest.adapters import base as B

TAG_TYPES = ("decision", "rejected", "learned", "gotcha", "plan", "preference", "todo")
TAG_RE = re.compile(r"\[MEMORY:\s*(?P<type>[A-Za-z]+)(?:[\s,/:]+(?P<scope>domain|global|project))?\s*\]\s*(?P<text>.+)",
                    re.IGNORECASE)
CODE_FENCE_RE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
INLINE_CODE_RE = re.compile(r"`[^`\n]*`")
SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])|\n+")
MARKDOWN_NOISE_RE = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+|>\s+)|\*\*|__")
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
    (re.compile(r"\b(?:rejected|ruled out|abandoned|dropped|discarded|decided against|gave up on)\b", re.I), 0.7),
    (re.compile(r"\b(?:won't|will not|doesn't|does not|didn't|did not|can't|cannot)\s+work\s+(?:because|since|as|here|for|with|due)", re.I), 0.7),
    (re.compile(r"\b(?:instead of|rather than)\s+\S.{0,60}?\s+because\b", re.I), 0.6),
    (re.compile(r"\b(?:not|never)\s+(?:use|using)\s+\S.{0,60}?\s+because\b", re.I), 0.6),
    (re.compile(r"\b(?:was|is)\s+(?:the\s+)?wrong\s+(?:approach|way|idea|direction|design)\b", re.I), 0.7),
    (re.compile(r"\b(?:a dead end|doesn't scale|is a bad idea)\b", re.I), 0.6),
]
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
    s = MARKDOWN_NOISE_RE.sub("", s).strip()
    s = re.sub(r"\s+", " ", s)
    if len(s) > limit:
        cut = s.rfind(" ", 0, limit - 1)
        s = s[: cut if cut > limit // 2 else limit - 1].rstrip(",;: ") + "…"
    return s


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
        rtype = m.group("type").lower()
        if rtype not in TAG_TYPES:
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
        if TAG_RE.search(sent) or "?" in sent[-3:] or len(sent) < 20:
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
        if HEDGE_RE.search(sent):
            conf -= 0.3
        if REASON_RE.search(sent):
            conf += 0.15
        conf = round(min(conf, 0.95), 2)
        if conf < ctx.keyword_min_confidence:
            continue
        text = clean_sentence(original, ctx.max_chars)
        if len(text.split()) < 6 or text.rstrip().endswith(":"):
            continue  # a fragment, or an intro to a list/code that follows: the content is elsewhere
        out.append(Candidate(rtype, text, conf, "keyword", entry.ref, at, salience=0.6))
    return out


def _plan_text(items) -> str:
    marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
    return "; ".join("%s %s" % (marks.get(i.status, "[ ]"), i.text.strip()) for i in items)


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


PLACEHOLDER_RE = re.compile(r"\[REDACTED[^\]]*\]|\[[A-Z_]+ len=\d+[^\]]*\]")


def has_content(text: str, min_letters: int = 12) -> bool:
    """False for text that is only placeholders (redacted upstream) or punctuation."""
    return sum(c.isalpha() for c in PLACEHOLDER_RE.sub("", text)) >= min_letters


def extract(entries: list, ctx: Context, state: Optional[dict] = None):
    """Candidates from one batch of a session's entries, in transcript order.

    `state` carries what a session-level record needs across batches (the last prompt, files
    changed, commands still failing); pass back the returned state with the next batch.
    """
    st = {"last_prompt": None, "edited": [], "failures": {}, "last_at": ctx.fallback_time, "activity_at": "",
          "first_activity_at": "", "plan_since": "", "open_shell": {}}
    st.update(state or {})
    edited, failures = list(st["edited"]), dict(st["failures"])
    out = []
    calls = {}
    # shell commands whose result had not arrived when the last batch ended (a line cut mid-write, or
    # the session stopped between a call and its result): the result in this batch still finds them
    open_shell = dict(st.get("open_shell") or {})
    activity_at = st.get("activity_at") or ""
    first_activity_at = st.get("first_activity_at") or ""
    plan_since = st.get("plan_since") or ""
    latest_plan = None
    last_at = st["last_at"]
    new_activity = False

    for e in entries:
        at = e.ts or last_at or ctx.fallback_time
        last_at = at
        if e.kind in (B.INJECTED, B.THINKING) or CORTEX_MARK in (e.text or ""):
            continue
        if e.kind == B.USER:
            out.extend(tag_candidates(e, ctx, at))
            if not e.sidechain and len(e.text.strip()) >= 8 and has_content(e.text, 4):
                st["last_prompt"] = {"text": clean_sentence(e.text, 200), "ref": e.ref, "at": at}
                new_activity, activity_at = True, max(activity_at, at)
                first_activity_at = first_activity_at or at
        elif e.kind == B.ASSISTANT:
            out.extend(tag_candidates(e, ctx, at))
            if not e.sidechain:
                out.extend(keyword_candidates(e, ctx, at))
        elif e.kind == B.PLAN and e.plan and not e.sidechain:
            latest_plan = (e, at)
            plan_since = plan_since or at
        elif e.kind == B.COMPACT_SUMMARY and e.text.strip():
            out.append(Candidate("summary", summary_text(e.text, ctx.max_chars), 0.8, "structural", e.ref, at,
                                 key="summary:%s:%s" % (ctx.session, e.ref), salience=0.6))
        elif e.kind == B.TOOL_CALL:
            if e.call_id:
                calls[e.call_id] = e
                if e.action == B.SHELL and e.text:
                    open_shell[e.call_id] = e.text
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
        elif e.kind == B.TOOL_RESULT and e.action == B.SHELL:
            call = calls.get(e.call_id)
            cmd = ((call.text if call else "") or open_shell.get(e.call_id) or e.args and str(e.args.get("command", ""))
                   or "")
            open_shell.pop(e.call_id, None)
            key = _command_key(cmd)
            failed = e.is_error or (e.exit_code not in (None, 0))
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

    if latest_plan:
        e, at = latest_plan
        items = [{"text": i.text.strip(), "status": i.status} for i in e.plan if i.text.strip()]
        if items:
            out.append(Candidate("plan", _plan_text(e.plan), 0.9, "structural", e.ref, at, plan=items,
                                 key="plan:%s" % ctx.session, replace=True, salience=0.9, since=plan_since))
    edited = edited[-50:]
    if new_activity and (st["last_prompt"] or edited):
        lp = st["last_prompt"]
        parts = []
        if lp:
            parts.append('asked "%s"' % lp["text"])
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
    st.update(edited=edited, failures=dict(list(failures.items())[-20:]), last_at=last_at, activity_at=activity_at,
              first_activity_at=first_activity_at, plan_since=plan_since,
              open_shell=dict(list(open_shell.items())[-20:]))
    # the state is saved in state/cursors.json: it gets the same redaction as records
    from cortex.model import redact
    if st.get("last_prompt"):
        st["last_prompt"] = dict(st["last_prompt"], text=redact.clean(st["last_prompt"]["text"])[0])
    st["edited"] = [redact.clean(f)[0] for f in st["edited"]]
    st["open_shell"] = {k: redact.clean(v)[0] for k, v in st["open_shell"].items()}
    st["failures"] = {redact.clean(k)[0]: dict(f, cmd=redact.clean(f["cmd"])[0], err=redact.clean(f["err"] or "")[0])
                      for k, f in st["failures"].items()}
    return [c for c in out if c.type in ("plan", "progress") or has_content(c.text)], st
