"""Record front matter written without importing YAML.

`emit(front)` returns the text PyYAML writes for `yaml.dump(front, Dumper=CSafeDumper, sort_keys=False,
allow_unicode=True, width=1000, default_flow_style=None)` -- the call `records.dump` makes -- or None
when it cannot be sure, and `records.dump` then asks PyYAML.  Importing PyYAML costs 15-25 ms, most
of what a recall's use spent writing its records (docs/benchmarks.md).

It is PyYAML's own emitter, cut down to what records hold:

- strings (printable: no line breaks, tabs, control characters, byte-order marks or characters above
  U+FFFF, which PyYAML writes double-quoted or where its C and pure-Python emitters differ), ints, finite
  floats, bools and None; lists and dicts with string keys, to any depth;
- a collection is written in flow style (`[a, b]`, `{k: v}`) when all its items are scalars, else in
  block style, as `default_flow_style=None` does;
- a string is written plain when YAML's resolver reads it back as a string and the emitter's analysis
  allows a plain scalar there (no indicator first, no ': ' or ' #', no leading or trailing space, ...),
  else single-quoted; the resolver's rules are PyYAML's (`_IMPLICIT`, a test compares them);
- long lines are broken where the emitter breaks them (at a single space or after a flow item's comma,
  once the column is past 1,000), with its indentation;
- None for everything else: other types, keys that are not short strings, a list or dict that appears
  twice (PyYAML would write an anchor), empty front matter.

Tests compare it with both PyYAML emitters (the C one and the pure-Python one) on every record of a demo
home, on bench records and on generated values (Hypothesis), and check that yaml.safe_load reads back
the data.
"""

WIDTH = 1000  # records.dump's width
_STR_TAG_LEN = 5  # "!!str": PyYAML counts it in a simple key's length (a key must stay under 128)

# PyYAML 6's implicit resolvers (yaml/resolver.py), first characters and patterns as it has them (re.X).
_IMPLICIT = (
    ("tag:yaml.org,2002:bool",
     r'''^(?:yes|Yes|YES|no|No|NO
                    |true|True|TRUE|false|False|FALSE
                    |on|On|ON|off|Off|OFF)$''', "yYnNtTfFoO"),
    ("tag:yaml.org,2002:float",
     r'''^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$''', "-+0123456789."),
    ("tag:yaml.org,2002:int",
     r'''^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+
                    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$''', "-+0123456789"),
    ("tag:yaml.org,2002:merge", r'^(?:<<)$', "<"),
    ("tag:yaml.org,2002:null",
     r'''^(?: ~
                    |null|Null|NULL
                    | )$''', "~nN"),
    ("tag:yaml.org,2002:timestamp",
     r'''^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
                    |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
                     (?:[Tt]|[ \t]+)[0-9][0-9]?
                     :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
                     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$''', "0123456789"),
    ("tag:yaml.org,2002:value", r'^(?:=)$', "="),
    ("tag:yaml.org,2002:yaml", r'^(?:!|&|\*)$', "!&*"),
)
_FIRST = frozenset("".join(first for _, _, first in _IMPLICIT))
_RULES = None  # first character -> compiled patterns, built on first need
_IS_STR = {}   # memo: plain string -> does the resolver read it as a string

# characters that make a scalar unusable as a plain one when first, and within a scalar ("," "?" "[" ...)
_LEADING = "#,[]{}&*!|>'\"%@`"
_FLOW_INSIDE = ",?[]{}"


class Unsure(Exception):
    """The value holds something this emitter leaves to PyYAML."""


def resolves_to_str(s: str) -> bool:
    """Whether PyYAML's resolver reads the plain scalar s as a string (its implicit rules, first
    character first, as yaml.resolver.Resolver.resolve does for a plain scalar)."""
    global _RULES
    if not s:
        return False  # the empty plain scalar is null
    if s[0] not in _FIRST:
        return True
    got = _IS_STR.get(s)
    if got is None and _iso_time(s):
        return False
    if got is None:
        if _RULES is None:
            import re
            rules = {}
            for _tag, pattern, first in _IMPLICIT:
                rx = re.compile(pattern, re.X)
                for c in first:
                    rules.setdefault(c, []).append(rx)
            _RULES = rules
        got = not any(rx.match(s) for rx in _RULES.get(s[0], ()))
        if len(_IS_STR) > 20000:
            _IS_STR.clear()
        _IS_STR[s] = got
    return got


def _iso_time(s: str) -> bool:
    """2026-01-02T03:04:05Z, with or without a fraction of a second: YAML's timestamp rule matches it (the
    times records hold, decided without compiling the rules)."""
    return (20 <= len(s) and s.isascii() and s[4] == s[7] == "-" and s[10] == "T" and s[13] == s[16] == ":"
            and s[-1] == "Z" and (s[:4] + s[5:7] + s[8:10] + s[11:13] + s[14:16] + s[17:19]).isdigit()
            and (len(s) == 20 or (s[19] == "." and s[20:-1].isdigit())))


def _printable(s: str) -> bool:
    """Whether every character of s is one PyYAML's emitters (C and Python) write as it is in a plain or
    single-quoted scalar: U+0020..U+007E, U+00A0..U+D7FF but the line and paragraph separators, U+E000..
    U+FFFD but the byte-order mark.  (No regular expression: compiling one with these ranges takes 5 ms.)"""
    if s.isascii():
        return s.isprintable()  # ASCII: exactly U+0020..U+007E
    if s.isprintable() and max(s) <= "\ufffd":  # no Cc, Cf (U+FEFF), Cs, Zl, Zp, Cn (U+FFFE, U+FFFF)
        return True
    for c in s:  # printable to YAML but not to Python (U+00A0, U+200B, private use, ...) or not at all
        if not (" " <= c <= "~" or ("\xa0" <= c <= "\ud7ff" and c not in "\u2028\u2029")
                or ("\ue000" <= c <= "\ufffd" and c != "\ufeff")):
            return False
    return True


def _plain_allowed(s: str):
    """(allowed as a plain scalar in a flow collection, allowed as a plain scalar in block context):
    PyYAML's analyze_scalar for a non-empty printable string without line breaks."""
    if s.startswith(("---", "...")) or s[0] == " " or s[-1] == " " or s[0] in _LEADING or " #" in s:
        return False, False
    c, i = s[0], s.find(":", 1)
    after_space = len(s) == 1 or s[1] == " "
    if c == "-" and after_space:
        return False, False
    while i >= 0:
        if i + 1 == len(s) or s[i + 1] == " ":  # ": " or a final ":"
            return False, False
        i = s.find(":", i + 1)
    block = not (c in "?:" and after_space)
    flow = c not in "?:" and ":" not in s and not any(ch in s for ch in _FLOW_INSIDE)
    return flow, block


_STYLES = {}  # memo: (string, in a flow collection, as a simple key) -> "" (plain) or "'" (single-quoted)


def _style(s: str, flow: bool, key: bool) -> str:
    """How PyYAML writes the string s there: plain when its resolver reads it back as a string and the
    emitter's analysis allows it, else single-quoted; Unsure for what is left to PyYAML (characters
    outside _printable, a key that is empty or too long to be a simple key: "? key")."""
    got = _STYLES.get((s, flow, key))
    if got is None:
        if not _printable(s) or (key and (not s or len(s.encode("utf-8")) + _STR_TAG_LEN >= 128)):
            raise Unsure()
        got = "" if s and resolves_to_str(s) and _plain_allowed(s)[0 if flow else 1] else "'"
        if len(_STYLES) > 20000:
            _STYLES.clear()
        _STYLES[(s, flow, key)] = got
    return got


class _Emitter:
    """The state PyYAML's Emitter keeps while writing, for the events records produce."""

    def __init__(self):
        self.out = []
        self.column = 0
        self.whitespace = True
        self.indention = True
        self.indent = None
        self.indents = []
        self.flow_level = 0
        self.mapping_context = False
        self.simple_key_context = False

    # -- writing --------------------------------------------------------------------------------------

    def increase_indent(self, flow=False, indentless=False):
        self.indents.append(self.indent)
        if self.indent is None:
            self.indent = 2 if flow else 0
        elif not indentless:
            self.indent += 2

    def indicator(self, text, need_whitespace, whitespace=False, indention=False):
        if not self.whitespace and need_whitespace:
            text = " " + text
        self.whitespace = whitespace
        self.indention = self.indention and indention
        self.column += len(text)
        self.out.append(text)

    def write_indent(self):
        indent = self.indent or 0
        if not self.indention or self.column > indent or (self.column == indent and not self.whitespace):
            self.whitespace = self.indention = True
            self.column = 0
            self.out.append("\n")
        if self.column < indent:
            self.whitespace = True
            self.out.append(" " * (indent - self.column))
            self.column = indent

    # a long scalar: where it has a single space and the column is past the width, PyYAML breaks the line
    # (indented) instead of writing the space; a plain scalar is written from after a space when the
    # previous indicator needs one; spaces at either end of a quoted one are never replaced

    def folded_plain(self, text):
        if not self.whitespace:
            self.column += 1
            self.out.append(" ")
        self.whitespace = self.indention = False
        words = text.split(" ")
        self.column += len(words[0])
        self.out.append(words[0])
        i = 1
        while i < len(words):
            if words[i] != "" and self.column > WIDTH:
                self.write_indent()
                self.whitespace = self.indention = False
                chunk = words[i]
                i += 1
            else:
                j = i  # a run of n spaces: n - 1 empty words; written as it is
                while words[j] == "":
                    j += 1
                chunk = " " * (j - i + 1) + words[j]
                i = j + 1
            self.column += len(chunk)
            self.out.append(chunk)

    def folded_single_quoted(self, text):
        self.indicator("'", True)
        n = len(text)
        start = 0
        for end in range(n + 1):
            ch = text[end] if end < n else None
            if start < end and text[start] == " ":  # inside a run of spaces
                if ch != " ":
                    if start + 1 == end and self.column > WIDTH and start != 0 and end != n:
                        self.write_indent()
                    else:
                        self.column += end - start
                        self.out.append(text[start:end])
                    start = end
            elif ch is None or ch == " " or ch == "'":
                if start < end:
                    self.column += end - start
                    self.out.append(text[start:end])
                    start = end
            if ch == "'":
                self.column += 2
                self.out.append("''")
                start = end + 1
        self.indicator("'", False)

    # -- nodes ----------------------------------------------------------------------------------------

    def scalar(self, text, style):
        """A scalar event: text as the representer gives it, style "" (plain) or "'" (single-quoted)."""
        out = text if not style else "'%s'" % text.replace("'", "''")
        if self.simple_key_context or " " not in text or self.column + 1 + len(out) <= WIDTH:
            if not self.whitespace:  # no line break possible: written as it is
                out = " " + out
            self.whitespace = self.indention = False
            self.column += len(out)
            self.out.append(out)
            return
        self.increase_indent(flow=True)
        if style:
            self.folded_single_quoted(text)
        else:
            self.folded_plain(text)
        self.indent = self.indents.pop()

    def node(self, v, mapping=False, simple_key=False):
        self.mapping_context = mapping
        self.simple_key_context = simple_key
        t = type(v)
        if t is str:
            self.scalar(v, _style(v, self.flow_level > 0, simple_key))
        elif t is bool:
            self.scalar("true" if v else "false", "")
        elif t is int:
            self.scalar(str(v), "")
        elif t is float:
            text = repr(v).lower()
            if v != v or text in ("inf", "-inf"):
                raise Unsure()
            if "." not in text and "e" in text:
                text = text.replace("e", ".0e", 1)
            self.scalar(text, "")
        elif v is None:
            self.scalar("null", "")
        elif t is list:
            if self.flow_level or all(type(x) not in (list, dict) for x in v):
                self.flow_sequence(v)
            else:
                self.block_sequence(v)
        elif t is dict:
            if self.flow_level or all(type(x) not in (list, dict) for x in v.values()):
                self.flow_mapping(v)
            else:
                self.block_mapping(v)
        else:
            raise Unsure()

    def flow_sequence(self, items):
        self.indicator("[", True, whitespace=True)
        self.flow_level += 1
        self.increase_indent(flow=True)
        for i, x in enumerate(items):
            if i:
                self.indicator(",", False)
            if self.column > WIDTH:
                self.write_indent()
            self.node(x)
        self.indent = self.indents.pop()
        self.flow_level -= 1
        self.indicator("]", False)

    def flow_mapping(self, d):
        self.indicator("{", True, whitespace=True)
        self.flow_level += 1
        self.increase_indent(flow=True)
        for i, (k, v) in enumerate(d.items()):
            if i:
                self.indicator(",", False)
            if self.column > WIDTH:
                self.write_indent()
            self.pair(k, v)
        self.indent = self.indents.pop()
        self.flow_level -= 1
        self.indicator("}", False)

    def block_sequence(self, items):
        self.increase_indent(flow=False, indentless=self.mapping_context and not self.indention)
        for x in items:
            self.write_indent()
            self.indicator("-", True, indention=True)
            self.node(x)
        self.indent = self.indents.pop()

    def block_mapping(self, d):
        self.increase_indent(flow=False)
        for k, v in d.items():
            self.write_indent()
            self.pair(k, v)
        self.indent = self.indents.pop()

    def pair(self, k, v):
        """A mapping's key (a simple key: a string on one line, under 128 with its tag) and value."""
        if type(k) is not str:
            raise Unsure()
        self.node(k, mapping=True, simple_key=True)
        self.indicator(":", False)
        self.node(v, mapping=True)


def _no_shared(v, seen) -> bool:
    """True when no list or dict appears twice (PyYAML would write an anchor and an alias)."""
    t = type(v)
    if t is list or t is dict:
        if id(v) in seen:
            return False
        seen.add(id(v))
        return all(_no_shared(x, seen) for x in (v.values() if t is dict else v))
    return True


def emit(front: dict):
    """The YAML document PyYAML writes for the mapping `front` (see the module's docstring), or None."""
    if type(front) is not dict or not front or not _no_shared(front, set()):
        return None
    e = _Emitter()
    try:
        e.node(front)
    except Unsure:
        return None
    e.write_indent()  # the document's end
    return "".join(e.out)


# -- reading what emit wrote, without YAML (records.read) -----------------------------------------------------------------------------

_FAST = None


def _fast_res():
    global _FAST
    if _FAST is None:
        import re
        # a plain scalar as records.dump may write one: no indicator first, printable, single inner spaces, no
        # character that ends a plain scalar in a flow collection (, [ ] { }) or starts a comment or a key
        # (fast_parse refuses the other odd characters first: see _odd_chars)
        odd = r"\x00-\x1f\x7f-\x9f"
        first = r"[^\s\-?:,\[\]{}#&*!|>'\"%@`" + odd + "]"
        rest = r"[^\s,\[\]{}#:'\"" + odd + "]"
        plain = r"%s%s*(?: %s+)*" % (first, rest, rest)
        quoted = r"'(?:[^'\n]|'')*'"
        scalar = r"(?:%s|%s)" % (quoted, plain)
        key = r"[A-Za-z_][A-Za-z0-9_]*"
        _FAST = {
            "line": re.compile(r"(%s):(?: (.*))?\Z" % key),
            "plain": re.compile(plain + r"\Z"),
            "quoted": re.compile(quoted + r"\Z"),
            "seq": re.compile(r"\[(%s(?:, %s)*)?\]\Z" % (scalar, scalar)),
            "map": re.compile(r"\{((?:%s: %s)(?:, %s: %s)*)?\}\Z" % (key, scalar, key, scalar)),
            "token": re.compile(r"(?:(%s): )?(%s)(?:, |\Z)" % (key, scalar)),
        }
    return _FAST


_SCALARS = {}
_NO = object()
_RESOLVE = None


# The first characters for which PyYAML's resolver has implicit rules (bool, float, int, merge, null,
# timestamp, value; a test checks this covers yaml.resolver.Resolver's): a plain scalar starting with
# any other character is a string.  And the only words starting with a letter that it reads as other
# than a string (bool and null); "true", "false" and "null" are read here, the others go to YAML.
_RESOLVER_FIRST = frozenset("!&*+-.0123456789<=FNOTYfnoty~")
_WORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
                   "null Null NULL".split())
_NUMBER = None


def _plain_value(s: str):
    """_plain_value_yaml(s), without importing YAML for the scalars records hold: strings that start with
    a character no implicit rule starts with, words that are no bool or null, "true", "false", "null",
    plain decimal integers and decimal fractions (which the resolver reads as int and float: its float
    rule is tried first and needs a dot, its int rule matches these whole).  Anything else asks YAML."""
    global _NUMBER
    if s:
        c = s[0]
        if c not in _RESOLVER_FIRST:
            return s
        if c.isalpha():
            if s not in _WORDS:
                return s
            if s in ("true", "false"):
                return s == "true"
            if s == "null":
                return None
            return _NO
        if _NUMBER is None:
            import re
            _NUMBER = re.compile(r"-?(?:(0|[1-9][0-9]*)|[0-9]+\.[0-9]+)\Z")
        m = _NUMBER.match(s)
        if m:
            return int(s) if m.group(1) is not None else float(s)
    return _plain_value_yaml(s)


def _plain_value_yaml(s: str):
    """A plain scalar's value, decided by PyYAML's own resolver (the one its safe loader uses): a string,
    or an int / float / bool / null when it resolves to those and reads back unambiguously; _NO otherwise
    (timestamps, octal, sexagesimal, ... go to YAML)."""
    global _RESOLVE
    if _RESOLVE is None:
        import yaml
        resolver = yaml.resolver.Resolver()
        _RESOLVE = lambda v: resolver.resolve(yaml.nodes.ScalarNode, v, (True, False))  # noqa: E731
    tag = _RESOLVE(s)
    if tag == "tag:yaml.org,2002:str":
        return s
    if tag == "tag:yaml.org,2002:null" and s == "null":
        return None
    if tag == "tag:yaml.org,2002:bool" and s in ("true", "false"):
        return s == "true"
    if tag == "tag:yaml.org,2002:int" and s.lstrip("-").isdigit() and (s.lstrip("-") == "0"
                                                                       or not s.lstrip("-").startswith("0")):
        return int(s)
    if tag == "tag:yaml.org,2002:float" and all(c in "0123456789.-" for c in s) and s.count(".") == 1 \
            and s.lstrip("-")[:1].isdigit() and not s.endswith("."):
        return float(s)
    return _NO


def _scalar(s: str, r):
    """The value of one scalar as PyYAML's safe loader reads it, or _NO when unsure (memoised: values
    are immutable)."""
    v = _SCALARS.get(s, _NO)
    if v is _NO:
        if s[:1] == "'":
            v = s[1:-1].replace("''", "'") if r["quoted"].match(s) else _NO
        elif r["plain"].match(s):
            v = _plain_value(s)
        if v is not _NO:
            if len(_SCALARS) > 50000:
                _SCALARS.clear()
            _SCALARS[s] = v
    return v


def _flow(s: str, r):
    """A flow sequence of scalars or a flow mapping of identifier keys to scalars, or _NO."""
    kind = "seq" if s[:1] == "[" else "map" if s[:1] == "{" else None
    if kind is None or not r[kind].match(s):
        return _NO
    inner = s[1:-1]
    out = [] if kind == "seq" else {}
    for m in r["token"].finditer(inner):
        key, raw = m.group(1), m.group(2)
        v = _scalar(raw, r)
        if v is _NO or (kind == "seq") != (key is None) or (key is not None and _scalar(key, r) != key):
            return _NO
        if kind == "seq":
            out.append(v)
        else:
            out[key] = v
    return out


_LINES = {}  # front-matter line -> (key, value) or (key, None) for "key:" or _NO; values copied on use


def _line(line: str, r):
    """One top-level line "key: value" or "key:" parsed (memoised: most lines repeat across records)."""
    got = _LINES.get(line)
    if got is None:
        got = _NO
        m = r["line"].match(line)
        if m and _scalar(m.group(1), r) == m.group(1):  # not a key YAML reads as a bool or null ("on:")
            raw = m.group(2)
            if raw is None:
                got = (m.group(1), None)
            else:
                v = _flow(raw, r) if raw[:1] in "[{" else _scalar(raw, r)
                if v is not _NO:
                    got = (m.group(1), v)
        if len(_LINES) > 50000:
            _LINES.clear()
        _LINES[line] = got
    return got


def _copy(v):
    return list(v) if type(v) is list else dict(v) if type(v) is dict else v


def _unfold(lines: list):
    """The lines with the folded ones joined back, or None.  records.dump (as PyYAML) breaks a line longer
    than 1,000 characters where a single space stood, and indents what follows: a long `used` list, a
    long plain or quoted value.  In a flow collection or a plain or single-quoted scalar, YAML reads such
    a line break, with the next line's leading spaces, as one space, so the joined line reads the same.
    Only a line indented by at least two spaces after a line that carries a value and does not end with
    a space is joined; anything else (a nested block, a blank line) is left to YAML."""
    out = []
    for line in lines:
        if line[:1] != " ":
            out.append(line)
            continue
        rest = line.lstrip(" ")
        if not out or line[:2] != "  " or rest[:1] in ("", "\t") or out[-1][-1:] in ("", " ", "\t", ":"):
            return None
        out[-1] = out[-1] + " " + rest
    return out


_CONTROL = None


def _odd_chars(s: str) -> bool:
    """Whether s holds a character YAML reads otherwise than as itself inside a quoted scalar, or refuses: a
    control character but tab and line feed, a line or paragraph separator, a byte-order mark, U+FFFE,
    U+FFFF, a surrogate.  (Checked here once per file: in the patterns' character classes the characters
    above U+00FF would make compiling them take 6 ms instead of 1.)"""
    global _CONTROL
    if _CONTROL is None:
        import re
        _CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
    if _CONTROL.search(s):
        return True
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return any(c in s for c in "\u2028\u2029\ufeff\ufffe\uffff")


def fast_parse(text: str):
    """records.parse(text) for the front matter records.dump writes (top-level keys with scalars, flow
    lists of scalars, block lists of flow mappings, long lines folded), without YAML; None when the file
    holds anything else (nested mappings, double quotes, ...), and records.parse then reads it.  About
    10x faster; tests check it against records.parse on real and generated records."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 3)
    if end < 0:
        return None
    head = text[4:end]
    if _odd_chars(head):
        return None
    r = _fast_res()
    front = {}
    lines = head.split("\n")
    if "\n " in text[3:end]:
        lines = _unfold(lines)
        if lines is None:
            return None
    i, n = 0, len(lines)
    while i < n:
        got = _line(lines[i], r)
        if got is _NO:
            return None
        key, v = got
        i += 1
        if v is None and lines[i - 1].endswith(":"):  # "key:" and a block sequence follows
            items = []
            while i < n and lines[i].startswith("- "):
                it = lines[i][2:]
                v = _flow(it, r) if it[:1] in "[{" else _scalar(it, r)
                if v is _NO:
                    return None
                items.append(v)
                i += 1
            if not items:
                return None
            front[key] = items
            continue
        front[key] = _copy(v)
    if not front:
        return None
    front["text"] = text[end + 5:].strip("\n")
    for k in ("created", "updated"):
        if k in front and not isinstance(front[k], str):
            front[k] = str(front[k])
    return front
