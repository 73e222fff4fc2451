"""Text analysis for Cortex search: record text and queries -> BM25 index terms.

One analyser serves both sides.  `tokenize` is used for records and
`query_terms` for queries, so a query word and the same word in a record
always give the same terms.

Pipeline
--------
1. Non-ASCII text is normalised to NFKC, so full-width ``ＡＰＩ`` becomes ``API``
   and ligatures are unfolded.  Accents are kept: ``café`` stays ``café``.
2. The text is cut into raw tokens.  A raw token is a *compound*: runs of
   word characters (letters of any script, digits, ``_``) joined by ``.``
   ``:`` ``::`` ``-`` ``/`` ``\\`` or an apostrophe, with no whitespace.
   Examples: ``src/auth/tokenStore.ts``, ``os.path.join``, ``Foo::bar``,
   ``read-only``, ``don't``.  Every other character separates tokens.  CJK
   runs inside a token are cut out and handled apart (see CJK below).
3. Each raw token is analysed as below.  The result depends only on the
   token itself, so it is memoised.

Identifier rule (splitting, and keeping the whole)
---------------------------------------------------
A compound has up to three levels:

* *segments*, split on ``/`` and ``\\`` (path components);
* *parts*, split on ``.`` and ``:`` (dotted names, extensions, ``::``);
* *subwords*, split on ``_``, ``-``, and at case changes
  (``HTTPServerError`` -> ``http``, ``server``, ``error``).  A digit run stays
  on the letters before it (``v2``, ``sha256``, ``base64Encode`` -> ``base64``,
  ``encode``).

Every **subword** is emitted as an ordinary word (see below).  On top of
that, the **whole** of any level that holds more than one piece is emitted
too:

* a part made of 2 or more subwords -> its subwords joined with no separator,
  then treated as an ordinary word.  So ``tokenStore``, ``TokenStore``,
  ``token_store``, ``token-store`` and ``tokenstore`` all give the same term
  (``tokenstor``, after stemming).  An identifier query matches across naming
  styles, and a record that holds the identifier ranks above one that only
  has the words ``token`` and ``store`` apart.
* a whole compound that has a ``/``, ``\\``, ``.`` or ``:``, and each path
  segment made of 2 or more parts (``tokenStore.ts``) -> its *literal* form.
  The literal form is lowercased, with ``\\`` turned into ``/`` and ``_`` and
  ``-`` removed.  It is not stemmed.  If the literal form of a compound is a
  stopword (``e.g``, ``i.e``, ``and/or``), the whole token gives nothing.

So ``src/auth/tokenStore.ts`` gives ``src/auth/tokenstore.ts``, ``src``,
``auth``, ``tokenstore.ts``, ``tokenstor``, ``token``, ``store``, ``ts``.  The
same token in a query gives the same terms, so a query for the exact path
matches every one of them and ranks that record first.

Ordinary words: lowercased and dropped if in `STOPWORDS`.  A word made only
of letters is stemmed.  Words with digits are kept as they are.  A word of 3
or more letters followed by digits (``python3``, ``utf8``, ``http2``) also
emits its letter part (``python``, ``utf``, ``http``).

Numbers and versions: a whole token of the form ``v?N.N[.N...]`` (``3.11``,
``v2.1.0``, ``127.0.0.1``) is one term, not split into its numbers.  Without
a leading ``v`` it is a second term, and with 3 or more numbers its
``major.minor`` prefix is a third: ``v3.11.7`` -> ``v3.11.7``, ``3.11.7``,
``3.11``.  So a query for ``3.11`` finds ``Python 3.11.7``.  Plain integers
(``404``, ``5432``) are kept.

CJK: a run of Han/Kana characters gives overlapping character bigrams
(``データベース`` -> ``デー``, ``ータ``, ``タベ``, ``ベー``, ``ース``).  A run of one
character gives that character.  The limit: a one-character query only
matches one-character runs.  Hangul, accented Latin, Cyrillic and other
scripts that put spaces between words go through the ordinary path.  Thai,
Lao and Khmer do not put spaces between words, so a whole phrase in them
becomes one term.

Length limits: a raw token longer than `MAX_TOKEN_LEN` characters gives no
terms at all.  Such a token is a blob (base64, a signature, minified data),
not words.  A single term longer than `MAX_TERM_LEN` characters (a very long
path's literal form, for example) is dropped.  The shorter terms from the
same token stay.

Stopwords: a compact English list (see `STOPWORDS`).  Negations (``not``,
``no``, ``nor``, ``don't``...) are stopwords too.  BM25 is a bag of words and
cannot use a negation.  "not" and "no" occur in a large share of records
and barely change which record should rank first.  Keeping them would only
add noise to query scores.  Apostrophes inside a word are removed before
the lookup (``don't`` -> ``dont``), so contractions are stopwords too.

Stemming: Snowball English (Porter2).  The fast C build is **PyStemmer**
(``import Stemmer``).  The pure-Python ``snowballstemmer`` package runs the
same algorithm and gives the same stems, and is used if PyStemmer is
missing.  If neither is installed, `_suffix_stem` is the fallback: a small
documented suffix stripper.  It gives different stems, so an index should
store `stemmer_name()` and be rebuilt when that changes.  The stemmer is
imported on first use, not when this module is imported.  Stems and
per-token analyses are memoised in bounded dicts.  These caches never
change a result.
"""
import re

__all__ = ["tokenize", "query_terms", "STOPWORDS", "MAX_TERM_LEN", "MAX_TOKEN_LEN", "stemmer_name"]

MAX_TERM_LEN = 64
MAX_TOKEN_LEN = 256

STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because
    been before being below between both but by can could did do does doing
    down during each few for from further had has have having he her here hers
    herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves
    out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would
    you your yours yourself yourselves also may might must shall us let lets
    yet ever via per etc e.g i.e and/or
    dont doesnt didnt isnt arent wasnt werent hasnt havent hadnt wont wouldnt
    shouldnt couldnt cant cannot mustnt neednt im ive youre youve youd
    youll hes shes weve were theyre theyve theyd theyll thats theres whats
    s t d ll m re ve
    """.split()
)

# --- regular expressions ----------------------------------------------------

# A raw token: word characters joined by connectors.  CJK characters are word
# characters here; `_analyze` separates them out.  (A character class with the
# big CJK ranges would cost ~3 ms to compile at import time, because the `re`
# compiler walks every code point of a BMP range; `_is_cjk` below does not.)
_TOKEN_RE = re.compile(r"\w+(?:(?:[./\\\-'\u2019]|::?)\w+)*")
_SEG_SPLIT = re.compile(r"[/\\]")
_PART_SPLIT = re.compile(r"[.:]+")
_WORD_SPLIT = re.compile(r"[_\-]+")
# Case-change splitting.  "Lower" = any word char that is not an ASCII capital,
# a digit or "_".  So every non-ASCII letter counts as lower: "École" stays
# one subword, and a split happens only before an ASCII capital.
_LOW = r"[^\W\dA-Z_]"
_SUBWORD_RE = re.compile(rf"[A-Z]+\d*(?!{_LOW})|[A-Z]?{_LOW}+\d*|\d+(?:{_LOW}+\d*)?")
_VERSION_RE = re.compile(r"v?\d+(?:\.\d+)+")
_ALPHA_DIGITS_RE = re.compile(r"([^\W\d_]{3,})\d+")
_LITERAL_TABLE = str.maketrans({"\\": "/", "_": None, "-": None})

# --- stemming -------------------------------------------------------------

_STEM_CACHE: dict[str, str] = {}
_STEM_CACHE_MAX = 50_000
_stem_impl = None  # set on first use by _load_stemmer()
_stem_name = ""


def _suffix_stem(word: str) -> str:
    """Last-resort stemmer, used only when no Snowball implementation exists.

    Rules, applied in order to alphabetic words longer than 3 characters:
    plural ``-sses``->``-ss``, ``-ies``->``-i``, or a final ``-s`` dropped
    (but not from ``-ss``/``-us``/``-is``); then one of ``-ingly``, ``-edly``, ``-ing``,
    ``-ed``, ``-ly``, only if a vowel is left in the remaining stem of 3 or
    more letters, and a doubled final consonant is undoubled (``runn`` ->
    ``run``); finally a trailing ``-e`` goes from stems longer than 4.
    It merges run/runs/running and decision/decisions, and is deterministic,
    but it is not Porter2.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    w = word
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            if len(stem) >= 3 and any(c in "aeiouy" for c in stem):
                w = stem
                if w[-1] == w[-2] and w[-1] not in "aeioulsz":
                    w = w[:-1]
            break
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


def _load_stemmer():
    global _stem_impl, _stem_name
    try:
        import Stemmer  # PyStemmer: C build of Snowball

        _stem_impl = Stemmer.Stemmer("english").stemWord
        _stem_name = "pystemmer"
    except ImportError:
        try:
            from snowballstemmer.english_stemmer import EnglishStemmer

            _stem_impl = EnglishStemmer().stemWord
            _stem_name = "snowballstemmer"
        except ImportError:
            _stem_impl = _suffix_stem
            _stem_name = "suffix"
    return _stem_impl


def stemmer_name() -> str:
    """Which stemmer is in use: "pystemmer", "snowballstemmer" or "suffix".

    Store it with an index: terms made by different stemmers do not match.
    """
    if _stem_impl is None:
        _load_stemmer()
    return _stem_name


def _stem(word: str) -> str:
    s = _STEM_CACHE.get(word)
    if s is None:
        impl = _stem_impl or _load_stemmer()
        s = impl(word)
        if len(_STEM_CACHE) >= _STEM_CACHE_MAX:
            _STEM_CACHE.clear()
        _STEM_CACHE[word] = s
    return s


# --- analysis of one raw token ------------------------------------------------


def _word_terms(word: str, out: list[str]) -> None:
    """Append the terms of one lowercased ordinary word."""
    if word in STOPWORDS or len(word) > MAX_TERM_LEN:
        return
    if word.isalpha():
        out.append(_stem(word))
        return
    out.append(word)
    m = _ALPHA_DIGITS_RE.fullmatch(word)
    if m:
        prefix = m.group(1)
        if prefix not in STOPWORDS:
            out.append(_stem(prefix) if prefix.isalpha() else prefix)


def _literal(piece: str, out: list[str]) -> None:
    lit = piece.lower().translate(_LITERAL_TABLE)
    if len(lit) <= MAX_TERM_LEN and lit not in STOPWORDS:
        out.append(lit)


# Code point ranges that count as CJK: the iteration marks, Hiragana, Katakana
# (with the prolonged sound mark), Katakana extensions, Han (extension A, the
# unified block, compatibility ideographs, and the supplementary planes up to
# extension G) and half-width Katakana.  Hangul is left out on purpose: Korean
# puts spaces between words.
_CJK_RANGES = (
    (0x3005, 0x3007),
    (0x3040, 0x30FF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    if o < 0x3005:
        return False
    for lo, hi in _CJK_RANGES:
        if lo <= o <= hi:
            return True
    return False


def _cjk_terms(run: str, out: list[str]) -> None:
    if len(run) == 1:
        out.append(run)
    else:
        out.extend(run[i : i + 2] for i in range(len(run) - 1))


def _analyze_mixed(tok: str) -> tuple[str, ...]:
    """A token with CJK characters: bigram the CJK runs, analyse the rest."""
    out: list[str] = []
    i, n = 0, len(tok)
    while i < n:
        j = i
        cjk = _is_cjk(tok[i])
        while j < n and _is_cjk(tok[j]) == cjk:
            j += 1
        piece = tok[i:j]
        if cjk:
            _cjk_terms(piece, out)
        else:
            # The rest may start or end with a connector ("src/" in
            # "src/データ"): cut it into tokens again.
            for sub in _TOKEN_RE.findall(piece):
                out.extend(_analyze(sub))
        i = j
    return tuple(out)


def _analyze(tok: str) -> tuple[str, ...]:
    if not tok.isascii() and any(map(_is_cjk, tok)):
        return _analyze_mixed(tok)  # CJK runs may be long: no length limit
    if len(tok) > MAX_TOKEN_LEN:
        return ()  # a blob (base64, a signature, minified data), not words
    if "'" in tok or "\u2019" in tok:
        tok = tok.replace("'", "").replace("\u2019", "")
    low = tok.lower()
    if _VERSION_RE.fullmatch(low):
        out = [low]
        bare = low[1:] if low[0] == "v" else low
        if bare != low:
            out.append(bare)
        nums = bare.split(".")
        if len(nums) >= 3:
            out.append(nums[0] + "." + nums[1])
        return tuple(t for t in out if len(t) <= MAX_TERM_LEN)

    out: list[str] = []
    segs = _SEG_SPLIT.split(tok) if ("/" in tok or "\\" in tok) else (tok,)
    if len(segs) > 1 or "." in tok or ":" in tok:
        if low.translate(_LITERAL_TABLE) in STOPWORDS:
            return ()  # "e.g", "i.e", "and/or": drop the pieces too
        _literal(tok, out)
    for seg in segs:
        parts = _PART_SPLIT.split(seg) if ("." in seg or ":" in seg) else (seg,)
        if len(segs) > 1 and len(parts) > 1:
            _literal(seg, out)
        for part in parts:
            if part.isalpha() and (part.islower() or part[1:].islower()):
                # Fast path: a plain word ("running", "Decision").
                _word_terms(part.lower(), out)
                continue
            subs = [
                s.lower()
                for w in _WORD_SPLIT.split(part)
                if w
                for s in _SUBWORD_RE.findall(w)
            ]
            if len(subs) > 1:
                _word_terms("".join(subs), out)
            for s in subs:
                _word_terms(s, out)
    return tuple(out)


# --- public API -------------------------------------------------------------

_TOKEN_CACHE: dict[str, tuple[str, ...]] = {}
_TOKEN_CACHE_MAX = 50_000


def tokenize(text: str) -> list[str]:
    """Index terms of `text`, in order, with repeats (term frequency counts)."""
    if not text:
        return []
    if not text.isascii():
        import unicodedata

        text = unicodedata.normalize("NFKC", text)
    cache = _TOKEN_CACHE
    out: list[str] = []
    extend = out.extend
    for tok in _TOKEN_RE.findall(text):
        terms = cache.get(tok)
        if terms is None:
            terms = _analyze(tok)
            if len(cache) >= _TOKEN_CACHE_MAX:
                cache.clear()
            cache[tok] = terms
        extend(terms)
    return out


def query_terms(text: str) -> list[str]:
    """Terms of a query: the same analysis as `tokenize`, de-duplicated in order.

    De-duplicated because BM25 sums over query terms, and a repeated query word
    should not count twice.
    """
    return list(dict.fromkeys(tokenize(text)))
