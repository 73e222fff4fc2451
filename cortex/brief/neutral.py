"""The one neutraliser: what text from transcripts and records may look like once Cortex quotes it.

`line(text)` is for the block (`<cortex-memory>`, `<cortex-recall>`): every piece of text that enters it
(record text, plan items, file names, the branch, the project id) passes here, so it is one line and
cannot open or close a tag.  `printable(text)` is for people: the CLI passes record text through it before
writing to a terminal.  The rule (docs/session-start.md, "What the block quotes"):

1. Line breaks, i.e. everything `str.splitlines()` splits on (LF, CR, VT, FF, FS, GS, RS, NEL, U+2028,
   U+2029), fold with the blanks around them into one space: record text never starts a line.
2. Other C0 controls (tab excepted), DEL and C1 controls become visible: U+2400 + code (ESC -> U+241B),
   DEL -> U+2421, C1 -> U+FFFD.  No terminal escape, no hidden text.
3. A `<` becomes `‹` (U+2039) when it could start a tag, that is when, after optional whitespace and
   invisible format characters (zero-width, bidi, soft hyphen), it is followed by
     a. `/`, `!` or `?` (closing tags, comments, CDATA, doctype, processing instructions), or
     b. a role or control name: cortex*, system*, user, user_instructions, human, assistant, developer,
        tool_*, function_*, invoke, parameter, instruction(s), environment_context, antml:* -- any
        case, ending at a blank, `/`, `>` or the end, or
     c. a complete tag, `<name attr="v" ...>` or `<name/>` with no blank after `<`, unless the `<` is glued
        to a letter, digit, `_`, `:` or `<` before it (generics `List<String>`, `Vec<Option<T>>`,
        `foo::<T>`, heredocs `<<EOF`).
   Everything else is kept byte for byte: `>` is never changed (`2>&1`, `N>0`, `->`, `=>`, `>>>>>>>`),
   nor `<` in `a < b`, `<<<<<<<`, `<<EOF`, `<=`, `sort <in.txt`, `List<String>`, `Map<K, V>`.
"""
import re


_PICTURES = {c: 0x2400 + c for c in range(0x20) if c != 0x09}
_PICTURES[0x7F] = 0x2421
_PICTURES.update({c: 0xFFFD for c in range(0x80, 0xA0)})
_TERMINAL = _PICTURES
_TERMINAL_LINES = {k: v for k, v in _PICTURES.items() if k != 0x0A}

# whitespace and the invisible characters a tag name could hide behind (control pictures included: they
# are what controls became in step 2)
_SKIP = r"[\s\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\u2400-\u2421]*"
_ROLE = (r"(?:cortex[\w:.-]*|system[\w:.-]*|user|user_instructions|human|assistant|developer|tool_[\w:.-]*|"
         r"function_[\w:.-]*|invoke|parameter|instructions?|environment_context|antml:[\w:.-]*)(?=[\s/>]|$)")
_ATTR = r"""[^\s"'<>/=]+(?:\s*=\s*(?:"[^"<>]*"|'[^'<>]*'|[^\s"'<>=`]+))?"""
# every branch starts with the `<` itself, so the search skips from `<` to `<`; compiled on first use (0.4 ms),
# so a block without any `<` never pays for it
_TAG_SOURCE = (r"<(?:(?=%(skip)s(?:[/!?]|%(role)s))"
               r"|(?<![\w:<]<)(?=[A-Za-z][\w:-]*(?:\s+%(attr)s)*\s*/?>))" % {"skip": _SKIP, "role": _ROLE, "attr": _ATTR})
_tag = []
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
NEUTRAL_LT = "\u2039"


def fold(text) -> str:
    """Step 1 alone: one line (the line breaks str.splitlines() knows, with the blanks around them, become
    one space).  For pieces that are measured or cut before the whole line goes through `line`."""
    text = str(text or "")
    parts = text.splitlines()
    return " ".join(p for p in (p.strip() for p in parts) if p) if len(parts) > 1 else text.strip()


def line(text) -> str:
    """Text for the block: one line, no control characters, no `<` that could start a tag."""
    text = fold(text)
    if _CONTROL.search(text):
        text = text.translate(_PICTURES)
    if "<" not in text:
        return text
    if not _tag:
        _tag.append(re.compile(_TAG_SOURCE, re.I))
    return _tag[0].sub(NEUTRAL_LT, text)


def attribute(text) -> str:
    """A value for an attribute of the block's opening tag (the project id): `line`, without quotes or
    angle brackets."""
    return line(text).replace('"', "").replace("<", NEUTRAL_LT).replace(">", "\u203a")


def printable(text, newlines: bool = False) -> str:
    """Text for a terminal: C0 controls (tab kept, LF kept when `newlines`), DEL and C1 controls become
    visible pictures, so no escape sequence (OSC 52 clipboard writes, window titles, CSI cursor moves,
    hidden text, CR overwrites) reaches the terminal."""
    return str(text if text is not None else "").translate(_TERMINAL_LINES if newlines else _TERMINAL)
