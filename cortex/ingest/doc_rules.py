"""Rules a session wrote into the project's own documents: the sections of a Markdown / reStructuredText /
AsciiDoc file that an edit adds or changes ("## Money\n- All amounts are int64 minor units ...").

A team that settles a rule often asks for it to be written down ("this is the rule, write it down
somewhere"), and the assistant puts it in `docs/conventions.md`, `CONTRIBUTING.md`, a runbook or the README.
The chat around it may say it in a dozen loose turns; the document says it once, in the words the team chose
to keep.  A later change to the rule edits the same lines ("s-maxage=300" -> "s-maxage=1800"), which is what
tells the normalizer the earlier statement is stale (curate/consolidate.py `doc_targets`).

Pure functions over a tool call's arguments as the client recorded them (Claude Code Edit / MultiEdit /
Write, Gemini replace / write_file, Codex apply_patch).
"""
import difflib
import re

from cortex.ingest.value_edits import TEST_PATH_RE, edit_pairs

DOC_SUFFIX_RE = re.compile(r"\.(?:md|mdx|markdown|rst|adoc|asciidoc)$", re.I)
# documents that record what happened or what others wrote, not how the project works
NOT_RULES_RE = re.compile(
    r"(?:^|/)(?:CHANGELOG|CHANGES|HISTORY|NEWS|RELEASE[-_ ]?NOTES?|AUTHORS|CONTRIBUTORS|LICEN[SC]E|COPYING|"
    r"CODE_OF_CONDUCT|SECURITY|TODO)[^/]*$|"
    r"(?:^|/)(?:node_modules|vendor|third[-_]party|site-packages|\.git|_posts|posts|blog|content|changelog|"
    r"changes|release-notes|\.changeset|ISSUE_TEMPLATE|PULL_REQUEST_TEMPLATE|proposals?|rfcs?|drafts?|brainstorm\w*|ideas)/|"
    # working papers: a plan, a proposal, notes, a refactoring under way
    r"(?:^|/)[^/]*(?:refactor|plan|proposal|rfc|draft|notes|todo|scratch|wip|brainstorm|spike)[^/]*$|"
    # the client's own instruction files: it reads them into every session itself, so they need no memory
    r"(?:^|/)(?:CLAUDE|AGENTS|GEMINI|CLAUDE\.local)\.md$|(?:^|/)copilot-instructions\.md$", re.I)
HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(?:```|~~~)")
TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
RST_UNDERLINE_RE = re.compile(r"^\s*([=\-~^\"'`#*+])\1{2,}\s*$")
# a line of code shown without its fence (an edit inside a code block shows no fence)
CODE_LINE_RE = re.compile(r"^\s*(?://|/\*|\*/|#!|<!--|[{}\])]|(?:const|let|var|def|func|fn|return|import|export|"
                          r"class|public|private|async|await)\s)|[{(]\s*$|\)\s*;\s*$|^\s*[\w.$\[\]]+\s*[+-]?=\s*[^=].*;\s*$")
BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# a section that weighs options or lists what is still open records no rule (yet)
UNSETTLED_RE = re.compile(r"\b(?:options?|alternatives?(?:\s+considered)?|proposals?|proposed|open\s+questions?|"
                          r"\(open\)|TBD|TODO|undecided|to\s+be\s+decided|not\s+decided|draft|RFC|pros|cons|brainstorm\w*|"
                          r"ideas?|considered|rejected)\b", re.I)
# a section that tells a story or sets the scene: what the project is, what went wrong, how things compare
NARRATIVE_RE = re.compile(r"^(?:.*\b(?:comparison|analysis|root\s+cause|impact|background|context|motivation|"
                          r"history|timeline|post-?mortem|retrospective|examples?|faq|references?|links|"
                          r"acknowledge?ments?|(?:table\s+of\s+)?contents|phase\s+\d[\w.]*|implementation|solution|deliverables|"
                          r"success\s+criteria|next\s+steps|edge\s+cases|migration\s+path|steps)\b.*|(?:project\s+)?(?:overview|"
                          r"introduction|purpose|status|summary|problem|about|notes?))$", re.I)
# a statement of how the project works names something (code, a number) or binds (must, never, only, ...)
STATES_RE = re.compile(r"`[^`]+`|\d|\b(?:always|never|must|only|don'?t|do\s+not|doesn'?t|does\s+not|no|not|"
                       r"none|required?|requires|should|shall|every|each|at\s+(?:most|least)|instead\s+of|"
                       r"rather\s+than|unless|except)\b", re.I)
OPEN_RE = re.compile(r"\b(?:TBD|undecided|to\s+be\s+decided|not\s+decided(?:\s+yet)?|no\s+decision|open\s+questions?|"
                     r"status\s*:\s*(?:open|proposed|draft|under\s+discussion))\b", re.I)
MAX_LINES = 400      # an edit longer than this rewrites a whole document: its sections are not read
MAX_SECTIONS = 3     # an edit that changes more sections than this writes a document, not a rule: none kept
MAX_CHARS = 420      # a section's statement, cut at a line
MIN_WORDS = 4        # an added line shorter than this is a label or a link, not a statement


def is_doc(rel: str) -> bool:
    """Whether a path inside the project is one of its documents (not a changelog, a post, a test fixture
    or a vendored file).  A path outside the project (a plan file under the user's home) is not."""
    rel = (rel or "").replace("\\", "/")
    if not rel or rel.startswith(("/", "../", "~")) or re.match(r"^[A-Za-z]:/", rel):
        return False
    return bool(DOC_SUFFIX_RE.search(rel)) and not NOT_RULES_RE.search(rel) and not TEST_PATH_RE.search(rel)


def _plain(line: str) -> str:
    """A document line as prose: no bullet, emphasis or trailing colon; a table row as its cells."""
    s = line.strip()
    if s.startswith("|"):
        cells = [c.strip() for c in s.strip("|").split("|")]
        cells = [c for c in cells if c]
        s = (cells[0] + ": " + ", ".join(cells[1:])) if len(cells) > 1 else (cells[0] if cells else "")
    s = BULLET_RE.sub("", s)
    s = re.sub(r"\*\*(.+?)\*\*", r"\1", s)
    s = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", s)  # a link as its words
    return re.sub(r"\s+", " ", s).strip()


def _headings(lines: list) -> list:
    """For each line, the heading it stands under within `lines` (None above the first)."""
    out, cur, fenced = [], None, False
    for i, ln in enumerate(lines):
        if FENCE_RE.match(ln):
            fenced = not fenced
        elif not fenced:
            m = HEADING_RE.match(ln)
            if m:
                cur = _plain(m.group(2))
            elif RST_UNDERLINE_RE.match(ln) and i and lines[i - 1].strip() and not RST_UNDERLINE_RE.match(lines[i - 1]):
                cur = _plain(lines[i - 1])
        out.append(cur)
    return out


def _units(lines: list) -> list:
    """The document's statements: [(first line, last line, heading, text)], a bullet or paragraph with the
    lines that continue it (Markdown wraps them), a table row alone; fences, headings, table rules, table
    headers and RST underlines say nothing themselves."""
    heads = _headings(lines)
    out, cur, fenced = [], None, False
    for i, ln in enumerate(lines):
        starts_fence = bool(FENCE_RE.match(ln))
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        quiet = (fenced or starts_fence or not ln.strip() or HEADING_RE.match(ln) or TABLE_RULE_RE.match(ln)
                 or RST_UNDERLINE_RE.match(ln) or TABLE_RULE_RE.match(nxt)
                 or (RST_UNDERLINE_RE.match(nxt) and not ln.strip().startswith("|")))
        if starts_fence:
            fenced = not fenced
        if quiet:
            cur = None
            continue
        row = ln.strip().startswith("|")
        if cur is not None and not row and not BULLET_RE.match(ln) and not cur[4]:
            cur[1], cur[3] = i, cur[3] + " " + ln.strip()  # a wrapped line continues its statement
            continue
        if CODE_LINE_RE.search(ln):
            cur = None
            continue
        cur = [i, i, heads[i], ln, row]
        out.append(cur)
    units = []
    for first, last, head, text, row in out:
        s = _plain(text)
        if len(s.split()) >= MIN_WORDS or (row and len(s.split()) >= 2):
            units.append((first, last, head, s))
    return units


def _touched(units: list, idx: set) -> list:
    return [u for u in units if any(i in idx for i in range(u[0], u[1] + 1))]


PATCH_FILE_RE = re.compile(r"(?m)^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$")


def patch_files(args: dict, text: str = "") -> list:
    """[(path, the patch of that file alone)] of a Codex patch that changes several files; [] for any other
    edit (one file: the call's own)."""
    patch = args.get("input") if isinstance(args, dict) and isinstance(args.get("input"), str) else text
    if not patch or "*** Begin Patch" not in patch:
        return []
    heads = list(PATCH_FILE_RE.finditer(patch))
    if len(heads) < 2:
        return []
    return [(m.group(1), "*** Begin Patch\n" + patch[m.start():heads[i + 1].start() if i + 1 < len(heads) else len(patch)])
            for i, m in enumerate(heads)]


def doc_sections(args: dict, text: str = "", write: bool = False) -> list:
    """[{"heading": str or None, "lines": [statement lines added], "removed": [statement lines replaced],
    "context": [statement lines the edit shows unchanged]}] of one edit or write of a document: the lines it
    adds or changes, grouped under the heading they stand under (in the edit's own text; None when the edit
    shows none).  None at all when it changes more than MAX_SECTIONS: a design document or a reference
    being written (on the thirteen written corpora, 80 of 85 edits of a document change one section)."""
    if not isinstance(args, dict):
        args = {}
    pairs = edit_pairs(args, text)
    if write or not pairs:
        content = args.get("content") if isinstance(args.get("content"), str) else None
        if content is None and "*** Add File" in (args.get("input") or text or ""):
            patch = args.get("input") or text
            content = "\n".join(x[1:] for x in patch.splitlines() if x.startswith("+"))
        if content is not None:
            pairs = [("", content)]
    sections, order = {}, []
    for old, new in pairs:
        a, b = old.splitlines(), new.splitlines()
        if len(a) > MAX_LINES or len(b) > MAX_LINES or not b:
            continue
        if not old and sum(1 for ln in b if HEADING_RE.match(ln)) > MAX_SECTIONS + 1:
            return []  # a whole document written at once, past its title and three sections: not read line by line
        added, removed = set(), set()
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag in ("replace", "insert"):
                added.update(range(j1, j2))
            if tag in ("replace", "delete"):
                removed.update(range(i1, i2))
        units_a = _units(a)
        gone = [u[3] for u in _touched(units_a, removed)]
        for _, _, head, line in _touched(_units(b), added):
            if head not in sections:
                sections[head] = {"heading": head, "lines": [], "removed": [], "context": []}
                order.append(head)
            if line not in sections[head]["lines"]:
                sections[head]["lines"].append(line)
        for head in {u[2] for u in _touched(_units(b), added)}:
            sections[head]["removed"].extend(x for x in gone if x not in sections[head]["removed"]
                                             and x not in sections[head]["lines"])
            sections[head]["context"].extend(u[3] for u in units_a if u[3] not in gone)
    out = []
    for key in order:
        s = sections[key]
        if s["heading"] and (UNSETTLED_RE.search(s["heading"]) or NARRATIVE_RE.match(s["heading"])):
            continue
        if any(OPEN_RE.search(x) for x in s["lines"]) or not any(STATES_RE.search(x) for x in s["lines"]):
            continue
        out.append(s)
    return out if len(out) <= MAX_SECTIONS else []


def carried_lines(text: str, removed: list) -> list:
    """The statement lines of an earlier section record (`rule_text`'s output) that an edit did not replace:
    they still hold, so the section's new record carries them."""
    body = re.split(r"`\): |^`[^`]+`: ", text, maxsplit=1)
    lines = [x.strip() for x in (body[-1] if len(body) > 1 else "").rstrip(".").split("; ") if x.strip()]
    gone = [r.rstrip(" .;:")[:60].lower() for r in removed or () if r.strip()]
    return [x for x in lines if not any(x[:60].lower().startswith(g[:len(x[:60])]) or
                                        x.lower().startswith(g) for g in gone)]


def rule_text(section: dict, rel: str) -> str:
    """The statement a section keeps: "Money (`docs/conventions.md`): All amounts are ...; DB columns: ...".
    Cut at a line so that no statement ends mid-word."""
    head = section.get("heading")
    lead = "%s (`%s`): " % (head, rel) if head else "`%s`: " % rel
    parts, size = [], len(lead)
    for ln in section["lines"]:
        ln = ln.rstrip(" .;:")
        if parts and size + len(ln) + 2 > MAX_CHARS:
            break
        if not parts and size + len(ln) > MAX_CHARS:
            ln = ln[:MAX_CHARS - size].rsplit(" ", 1)[0]
        parts.append(ln)
        size += len(ln) + 2
    return (lead + "; ".join(parts) + ".") if parts else ""
