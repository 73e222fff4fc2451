"""Values a session edited in code: the lines an edit changes in one or a few words ("ttl: 30m  # held
reservations expire 30 minutes" -> "ttl: 45m  # ... 45 minutes", `DISPATCH_RADIUS_METERS = 3000` -> `5000`,
`mmkvStorage` -> `AsyncStorage`).

Weeks after a rule is settled, the chat that changes it rarely says it the way the rule was said ("Marta wants
them to have 45 min before the stock goes back on the shelf"), and the assistant's report of the change takes
a hundred shapes.  The edit is the one thing every such chat has, whatever its wording: a line of code or
config whose value was replaced.  curate/consolidate.py `edited_targets` finds the earlier rule that still
states the replaced value about that line's subject; the normalizer then retires it (ingest/run.py).

Pure functions over a tool call's arguments as the client recorded them (Claude Code Edit / MultiEdit, Gemini
replace, Codex apply_patch).
"""
import difflib
import re

# a test's file: its values follow the rule (fixtures, boundaries) and do not set it; nor do its documents
TEST_PATH_RE = re.compile(r"(?:^|/)(?:tests?|spec|specs|__tests__|testdata|fixtures)/|(?:^|/)test_[^/]*$|"
                          r"[_.-](?:test|spec)\.[^/.]+$|(?-i:(?:Test|Tests|IT|Spec))\.[^/.]+$", re.I)
MAX_LINES = 400          # an edit longer than this rewrites a file; its lines are not read one by one
MAX_CHANGED_TOKENS = 3   # a line whose value changed: at most this many words replaced on either side
MIN_SHARED_TOKENS = 2    # ... and at least this many kept
TOKEN_RE = re.compile(r"\d+(?:[.:,]\d+)*[A-Za-z%]*|[A-Za-z_][\w.-]*[\w]|[A-Za-z]")
VALUE_TOKEN_RE = re.compile(r"\d")
CODE_NAME_RE = re.compile(r"^[A-Za-z_][\w.-]*(?:[a-z][A-Z]|_|\.\w)")  # camelCase, snake_case, dotted.name
STOP = frozenset("a an the of to in on for and or is are be by at as it this that with from per each max min "
                 "val var const let def set new old true false null none return if else".split())


def edit_pairs(args: dict, text: str = "") -> list:
    """[(old text, new text)] of an edit tool call: Edit / replace (old_string, new_string), MultiEdit
    (edits), or a Codex patch (its "-" and "+" lines)."""
    if not isinstance(args, dict):
        args = {}
    pairs = []
    if isinstance(args.get("old_string"), str) and isinstance(args.get("new_string"), str):
        pairs.append((args["old_string"], args["new_string"]))
    for e in args.get("edits") or ():
        if isinstance(e, dict) and isinstance(e.get("old_string"), str) and isinstance(e.get("new_string"), str):
            pairs.append((e["old_string"], e["new_string"]))
    patch = args.get("input") if isinstance(args.get("input"), str) else text
    if not pairs and patch and "*** Begin Patch" in patch:
        for hunk in re.split(r"(?m)^@@.*$|^\*\*\* (?:Update|Add|Delete) File:.*$", patch):
            lines = hunk.splitlines()
            old = [x[1:] for x in lines if x.startswith("-")]
            new = [x[1:] for x in lines if x.startswith("+")]
            if old and new:
                pairs.append(("\n".join(old), "\n".join(new)))
    return pairs


def _tokens(line: str) -> list:
    return TOKEN_RE.findall(line)


def changed_lines(old: str, new: str) -> list:
    """[{"old": line, "new": line, "removed": [...], "added": [...], "kept": [...]}] for each line of `old`
    that `new` replaces with the same words but one to three, a value among the replaced ones."""
    a, b = old.splitlines(), new.splitlines()
    if not a or not b or len(a) > MAX_LINES or len(b) > MAX_LINES:
        return []
    out = []
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag != "replace":
            continue
        for o, n in zip(a[i1:i2], b[j1:j2]):
            ot, nt = _tokens(o), _tokens(n)
            ol, nl = [t.lower() for t in ot], [t.lower() for t in nt]
            removed = [t for t, low in zip(ot, ol) if low not in nl]
            added = [t for t, low in zip(nt, nl) if low not in ol]
            kept = [t for t, low in zip(ot, ol) if low in nl and low not in STOP and len(low) > 1]
            if not removed or not added or len(removed) > MAX_CHANGED_TOKENS or len(added) > MAX_CHANGED_TOKENS:
                continue
            if len(set(k.lower() for k in kept)) < MIN_SHARED_TOKENS:
                continue
            # a value: a number, or one code name swapped for another (`mmkvStorage` -> `AsyncStorage`), not a
            # reworded comment nor a refactor ("RuntimeException reservation expired" -> "DomainException")
            numeric = any(VALUE_TOKEN_RE.search(t) for t in removed) and any(VALUE_TOKEN_RE.search(t) for t in added)
            swapped = len(removed) == 1 and len(added) == 1 and all(CODE_NAME_RE.search(t) for t in removed + added)
            if not (numeric or swapped):
                continue
            out.append({"old": o.strip(), "new": n.strip(), "removed": removed, "added": added, "kept": kept})
    return out


def value_edits(args: dict, text: str = "") -> list:
    """The changed value lines of one edit tool call (see changed_lines), in order."""
    out = []
    for old, new in edit_pairs(args, text):
        out.extend(changed_lines(old, new))
    return out
