"""What a statement is about: the code identifiers it names.  Pure functions, no model calls.

Used by the conversation-decision layer (to name a decision's subject, also from the recent turns
when the agreeing turn is terse) and by the consolidator (a later rule on the same subject updates
an earlier one).
"""
import re

FILE_EXT = (r"py|pyi|js|jsx|mjs|cjs|ts|tsx|go|rs|rb|java|kt|kts|scala|swift|c|h|cc|cpp|hpp|cs|php|ex|exs|erl|"
            r"clj|lua|sql|sh|bash|zsh|yml|yaml|json|toml|ini|cfg|conf|md|rst|txt|html|css|scss|vue|svelte|"
            r"proto|graphql|gql|tf|lock|env|xml|gradle|dockerfile")
BACKTICK_RE = re.compile(r"`([^`\n]{1,80})`")
CALL_RE = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\(\))")
PATH_RE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/){2,}[\w.-]*|(?:[\w.-]+/)*[\w-]+\.(?:%s)|[\w.-]+/[\w.-]*[_.][\w.-]*)"
                     r"(?![\w/])" % FILE_EXT, re.I)
CAMEL_RE = re.compile(r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:[A-Z][a-z0-9]*)+)(?![\w(])")
SNAKE_RE = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(])")
DOTTED_RE = re.compile(r"(?<![\w.-])([a-z_][a-z0-9_]{1,}(?:\.[a-z_][a-z0-9_]{1,})+)(?![\w(])")
NOT_IDENT = {"e.g", "i.e", "etc", "vs", "a.m", "p.m"}
# CamelCase words that are ordinary English or product names rather than parts of this code base
COMMON_CAMEL = {"iPhone", "iOS", "macOS", "eBay", "YouTube", "GitHub", "GitLab", "JavaScript", "TypeScript",
                "PostgreSQL", "MySQL", "NoSQL", "OpenAI", "ChatGPT", "LinkedIn", "PowerPoint", "WiFi"}


AROUND_RE = re.compile(r"^['\",;:!?]+|['\".,;:!?]+$")
ARGS_RE = re.compile(r"\(.*\)$")
CODE_CHAR_RE = re.compile(r"[_./()=-]")
LETTER_RE = re.compile(r"[A-Za-z]")
# a setting written in backticks, `dispatch.same-day-cutoff: "15:30"` or `Stripe.api_version = "2024-06-20"`: what it
# names is its key; the value is what a later rule changes
SETTING_SPAN_RE = re.compile(r"([A-Za-z_][\w.-]*\w)\s*(?::=|=(?!=)|:(?=\s))\s*\S.*")


def _clean(tok: str) -> str:
    # punctuation around the name, never the dot that starts one (`.env`, `./scripts/deploy.sh`)
    tok = AROUND_RE.sub("", tok.strip())
    tok = ARGS_RE.sub("()", tok)  # foo(a, b) -> foo()
    return tok


def _looks_like_code(tok: str) -> bool:
    if not tok or len(tok) > 60 or tok.lower() in NOT_IDENT:
        return False
    if " " in tok:  # a command or a phrase in backticks: keep short ones that look like code
        return len(tok.split()) <= 3 and bool(CODE_CHAR_RE.search(tok))
    return bool(LETTER_RE.search(tok))


# each pattern with what every match of it holds, a string or a cheap pattern: a text without it is not
# searched (most prose names no path, CamelCase or dotted name, and those searches cost the most)
NAME_PATTERNS = ((BACKTICK_RE, "`"), (CALL_RE, "()"),
                 (PATH_RE, re.compile(r"/|\.(?:%s)(?![\w/])" % FILE_EXT, re.I)),  # a slash, or a file extension
                 (CAMEL_RE, re.compile(r"[a-z0-9][A-Z]")), (SNAKE_RE, "_"),
                 (DOTTED_RE, re.compile(r"[a-z0-9_]\.[a-z_]")))


def mentions_any(text: str, words) -> bool:
    """Whether a case-insensitive pattern, any match of which holds one of `words` (lower case ASCII; a space
    in one stands for a literal space of the pattern), may match in `text`: False only for an ASCII text
    that holds none of them.  A cheap test before an expensive search that seldom matches (re.IGNORECASE
    folds a few non-ASCII letters onto ASCII ones, so any other text may match)."""
    if not text.isascii():
        return True
    return any(map(text.lower().__contains__, words))


def subjects(text: str) -> list:
    """The identifiers `text` names, in order of appearance, each once: backticked spans, calls
    (`foo()`), file paths, CamelCase and snake_case names, dotted module names."""
    found = []
    text = text or ""
    for pat, needle in NAME_PATTERNS:
        if needle not in text if isinstance(needle, str) else needle.search(text) is None:
            continue
        for m in pat.finditer(text):
            tok = _clean(m.group(1))
            if pat is BACKTICK_RE:
                setting = SETTING_SPAN_RE.fullmatch(tok)
                tok = setting.group(1) if setting else tok
            if pat is CAMEL_RE and (tok in COMMON_CAMEL or len(tok) < 4):
                continue
            if _looks_like_code(tok):
                found.append((m.start(1), -len(m.group(1)), m.end(1), tok))
    out, seen, spans = [], set(), []
    for start, _, end, tok in sorted(found):
        key = tok.lower().rstrip("()")
        if key in seen or any(a <= start and end <= b for a, b in spans):
            continue  # named already, or part of a longer name (`a/b.py` holds b.py)
        seen.add(key)
        spans.append((start, end))
        out.append(tok)
    return out


# names mentioned on the way rather than as what a rule is about: tests, scratch files, standard library calls
TEST_PATH_RE = re.compile(r"(?:^|/)(?:tests?|specs?|__tests__|testing)/|(?:^|/)(?:test_[^/]*|[^/]*_test\.\w+|"
                          r"[^/]*\.(?:test|spec)\.\w+|conftest\.py)$", re.I)
SCRATCH_RE = re.compile(r"(?:^|/)(?:scratch|tmp|temp|junk|playground|sandbox|untitled)(?:[_.\d-][^/]*)?$|"
                        r"\.(?:tmp|bak|orig|swp|log)$", re.I)
STD_NAMESPACES = frozenset("datetime time os sys json re subprocess logging random math pathlib shutil typing "
                           "collections itertools functools asyncio threading uuid hashlib tempfile Math JSON "
                           "console Date Object Array Promise process fmt strings errors std".split())


def incidental(name: str, said_by_user: bool = False) -> bool:
    """Whether a name met in the talk around a rule is unlikely to be what the rule is about: a command-line
    flag (`-k name`); and, unless the user named it, a command (`pytest tests/api -q`), a test or scratch
    file (`tests/api/test_auth.py`, `scratch.py`, `tmp`) or a standard library call (`datetime.utcnow()`)
    the assistant mentioned on the way."""
    n = name.strip("`")
    if n.startswith("-"):
        return True
    if said_by_user:
        return False
    return bool(" " in n or TEST_PATH_RE.search(n) or SCRATCH_RE.search(n)
                or "." in n and n.split(".")[0] in STD_NAMESPACES and not is_path(n))


LINE_MARK_RE = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+|>\s+)")
CODE_SPAN_RE = re.compile(r"(`[^`\n]*`)")
EMPHASIS_RES = (
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), r"\1"),                        # **bold**
    (re.compile(r"\*\*(?![\w/(])"), ""),                                       # a ** left open ("**Decision:")
    (re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])"), r"\1"),  # *italic*
    (re.compile(r"(?<!\w)__(?=\S)([^_\n]*\s[^_\n]*?)(?<=\S)__(?!\w)"), r"\1"),  # __bold words__
)


def unmark(text: str) -> str:
    """`text` without Markdown's line marks (a bullet, a number, a heading, a quote) and emphasis
    (**bold**, *italic*, __bold words__).  Code names keep every character: `__init__.py`, **kwargs,
    `src/**/*.py` and anything in backticks are left as written."""
    text = LINE_MARK_RE.sub("", text or "")
    if "*" not in text and "__" not in text:  # no emphasis to drop (most sentences): 7% of a normalizer run
        return text
    out = []
    for i, part in enumerate(CODE_SPAN_RE.split(text)):
        if i % 2 == 0:
            for pat, repl in EMPHASIS_RES:
                part = pat.sub(repl, part)
        out.append(part)
    return "".join(out)


FIRST_TOKEN_RE = re.compile(r"^([\s\"'(\[]*)(\S+)")
ORDINARY_WORD_RE = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def cap_first(text: str) -> str:
    """`text` as a sentence: its first letter capitalised when it starts with an ordinary lower-case word
    ("make `x()` retry" -> "Make `x()` retry").  A code name keeps its exact case: `reserve_stock()`,
    `isEnabled`, `os.path`, `src/app.py`, `-k`, `x86` (anything but plain letters)."""
    m = FIRST_TOKEN_RE.match(text or "")
    if not m:
        return text
    word = m.group(2).rstrip(".,;:!?)]\"'")
    if not (ORDINARY_WORD_RE.fullmatch(word) and word.islower()):
        return text
    at = m.start(2)
    return text[:at] + text[at].upper() + text[at + 1:]


def subject_terms(ident: str) -> frozenset:
    """The index terms that stand for an identifier: its compound form (`retry_upload()` -> retryupload,
    a path as written), or every term when it has no compound form."""
    from cortex.store.terms import tokenize
    toks = tokenize(ident)
    if not toks:
        return frozenset()
    if len(toks) > 1 and (re.search(r"[_/.]|[a-z][A-Z]", ident)):
        return frozenset(toks[:1])
    return frozenset(toks)


def is_path(ident: str) -> bool:
    """Whether an identifier `subjects` found is a file or folder path rather than a name in the code."""
    return bool(PATH_RE.fullmatch(ident.strip("`"))) and ("/" in ident or "." in ident) and not ident.endswith("()")


def named_files(text: str) -> list:
    """The file paths a text names (`parcelwise/billing/invoice.py`, `invoice.py`), in order."""
    return [i for i in subjects(text) if is_path(i)]


def same_file(a: str, b: str) -> bool:
    """Two names of one file: equal, or one ends with the other at a folder boundary
    (`/srv/app/billing/invoice.py`, `billing/invoice.py` and `invoice.py` are one file in one project)."""
    a, b = a.replace("\\", "/").strip("/").lower(), b.replace("\\", "/").strip("/").lower()
    if not a or not b:
        return False
    if len(a) < len(b):
        a, b = b, a
    return a == b or a.endswith("/" + b)


def ident_words(ident: str) -> frozenset:
    """A code name as the words it is made of, stemmed as the index stems them: `reserve_stock()` ->
    {reserv, stock}, `TrackingWebhookDispatcher` -> {track, webhook, dispatch}; so prose that names the
    same thing ("the stock reservation") can be recognised.  Empty for paths and one-word names."""
    from cortex.store.terms import tokenize
    if is_path(ident):
        return frozenset()
    spaced = re.sub(r"[_\-.:/()`]+|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", ident)
    words = frozenset(tokenize(spaced))
    return words if len(words) >= 2 else frozenset()


def names_words(ident: str, text_terms: frozenset) -> bool:
    """Whether a text (its index terms) names `ident` in words: all its words, or all but one when it has
    three or more (`calculate_driver_payout()` ~ "the driver payout")."""
    words = ident_words(ident)
    if not words:
        return False
    return len(words - text_terms) <= (1 if len(words) >= 3 else 0)


# Words of software work: a statement that holds none of them and names no code is small talk, not a
# decision about the work ("I decided to take a break", "Always happy to help").  Lower-case, as written
# and in the plural; names of languages, stores and tools included.
TECH_WORDS = frozenset("""
api apis endpoint endpoints database databases db schema schemas migration migrations query queries cache
caching cached index indexes server servers client clients request requests response responses deploy
deploys deployed deployment release releases version versions versioning branch branches commit commits
merge merged rebase pr prs repo repos repository library libraries package packages dependency
dependencies module modules function functions method methods class classes interface interfaces
variable variables config configs configuration setting settings env environment environments docker
container containers kubernetes k8s cluster queue queues worker workers job jobs thread threads lock locks
locking async sync timeout timeouts retry retries error errors exception exceptions bug bugs crash crashes
log logs logging file files folder folders directory path paths command commands cli flag flags option
options parameter parameters param params argument arguments arg args code compile compiler lint linter
formatter parser parsing token tokens auth authentication oauth jwt hook hooks plugin plugins framework
runtime memory cpu disk latency throughput performance benchmark benchmarks regression fixture fixtures
mock mocks stub stubs prod production staging frontend backend ui css html json yaml yml toml csv sql
http https url urls webhook webhooks event events stream streams pipeline pipelines cron service services
component components endpoint store stores react vue node npm pip python rust golang java typescript
javascript ruby rails django flask fastapi postgres postgresql mysql sqlite redis kafka s3 aws gcp azure
terraform nginx git github gitlab bash shell test tests testing unit integration e2e coverage assertion
assert rollback build builds ci pytest jest tsc webpack vite cargo gradle maven makefile dockerfile
encoding utf-8 utf8 regex serializer serialization payload payloads header headers cookie cookies cors
ssl tls dns cdn bucket buckets lambda rpc grpc graphql rest websocket socket sockets port ports proxy
middleware orm model models table tables column columns row rows field fields key keys transaction
transactions replica replicas shard shards partition backup backups checksum hash hashes id ids uuid
string strings integer integers array arrays list lists dict map null none undefined boolean enum type
types typing generic generics struct structs trait traits closure callback callbacks promise promises
iterator generator decorator constructor refactor refactoring rename deprecate deprecated upgrade
downgrade patch hotfix changelog readme docs documentation spec specs issue issues ticket tickets
""".split())
WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9+#-]*")


def technical(text: str) -> bool:
    """Whether a statement is about software work: it names code (`subjects`: backticks, calls, paths,
    snake/camel/dotted names) or holds a word of software work (TECH_WORDS)."""
    if subjects(text):
        return True
    return any(w.lower() in TECH_WORDS for w in WORD_RE.findall(text or ""))
