"""Secret redaction: nothing that looks like a credential leaves this module.

Cortex promises that no secret reaches a record, the search index, the logs or
the injected block.  Every piece of transcript text goes through `clean()`
(or at least `redact()`) before it is stored, indexed, logged or injected.

    redact(text)          -> (text with secrets replaced, number of replacements)
    strip_private(text)   -> text without <private>...</private> spans
    clean(text)           -> redact(strip_private(text))
    contains_secret(text) -> bool

A secret becomes ``[REDACTED:<kind>]``.  Surrounding text is kept so a memory
stays readable: for ``KEY=value`` forms only the value goes
(``API_KEY=[REDACTED:env_secret]``), for URLs only the password
(``postgres://user:[REDACTED:url_password]@host/db``).

Kinds
    anthropic_key openai_key aws_access_key aws_secret github_token
    gitlab_token npm_token huggingface_token pypi_token sendgrid_key
    slack_token slack_webhook
    stripe_key google_api_key google_oauth jwt bearer auth_header
    private_key url_password password env_secret high_entropy
  vendor formats (issue #18; shapes learned from public secret-scanning rule sets such as gitleaks' config):
    ai_api_key (Groq gsk_, xAI xai-, Perplexity pplx-, Replicate r8_, LangSmith lsv2_, Tavily tvly-,
    Fireworks fw_, Pinecone pcsk_) aws_bedrock_key azure_secret alibaba_key digitalocean_token
    (dop_v1_ doo_v1_ dor_v1_) cloudflare_key flyio_token heroku_key databricks_token planetscale_token
    supabase_token netlify_token render_key vercel_token scalingo_token tailscale_key pulumi_token
    terraform_token doppler_token vault_token (hvs. hvb. hvr.) age_key onepassword_token onepassword_key
    okta_token bitbucket_token atlassian_token ci_token (Buildkite, CircleCI) sourcegraph_token docker_token
    package_token (RubyGems, Clojars, Artifactory) octopus_key prefect_key infracost_key readme_key
    sentry_token linear_key postman_key figma_token notion_token contentful_token dynatrace_token
    newrelic_key grafana_token webhook_url (Discord, Teams) telegram_token discord_token twilio_key
    sendinblue_key mailchimp_key mailgun_key square_token facebook_token commerce_key (Shippo, EasyPost,
    Duffel, Flutterwave) shopify_token mapbox_token frameio_token openshift_token
  other shapes: a private key base64-encoded whole (LS0tLS1CRUdJTi...), PuTTY .ppk private lines and MAC;
    passwords of docker/podman login -p, sshpass -p, htpasswd -b, mysql -p'...', smbclient -U user%pass,
    .pgpass lines, "the password is X" (X must not read as a word), URL passwords holding '#'.
  partial_token: the last word of a text that was cut inside a vendor token (a known prefix and 6+
    characters of its body, optionally followed by "…", "..." or "[truncated]").

Cuts
    A rule that knows a secret by its whole shape no longer sees it once a cut took its end.  Cortex
    redacts before it cuts; `cut(text, limit)` never ends inside a word (so never inside a token); a
    private-key header with no END marker redacts to the end of the text (or of its JSON string); and
    partial_token above catches a cut made before Cortex saw the text.

Records
    `redact_fields(obj)` cleans every string in a nested dict/list: RecordStore.write and `cortex import`
    use it on whole records (plan items, files, branch, provenance.transcript ...), not only the text.

How it works
    1. Fixed-shape rules, most specific first: PEM blocks, JWTs, vendor key
       prefixes, URL passwords, Authorization headers, curl/netrc/mysql forms.
    2. Key/value rule: a key whose name says password/secret/token/api key/...
       followed by ``=`` ``:`` ``:=`` ``=>`` (or whitespace after a --flag),
       then a quoted or bare value.  Password/secret/api-key names redact any
       real-looking value; token/auth/credential names need a random-looking
       one (so ``max_tokens: 4096`` and ``auth_mode: "chatgpt"`` survive).
    3. Entropy rule: a token of 20+ characters that mixes upper case, lower
       case and digits like random strings do (Shannon entropy >= 3.5
       bits/char, not built from words, not hex) next to a trigger word (key,
       secret, token, password, credential, auth ...): starting within 48
       characters after it (then up to 3 more such tokens, each within 48
       characters of the previous one), or ending within 32 characters before
       it, in the same JSON string.

    Each rule sees the placeholders of the earlier ones and leaves them alone,
    so `redact` is idempotent.  Values that are obviously placeholders
    (``<your-key>``, ``xxx``, ``changeme``, ``${VAR}``, ``$VAR``,
    ``os.environ[...]``, ``None``, ``""``, ``***``, ``[REDACTED:...]``) are
    neither redacted nor counted.

    The text may be raw JSON (a transcript line): quotes may be escaped
    (``\\"password\\": \\"...\\"``) and line breaks may be the two characters
    ``\\n``; the rules allow for both and never eat the letter of an escape.

Precision
    Git SHAs, UUIDs, ``sha256:...`` hashes, message/tool ids (``msg_...``,
    ``toolu_...``, ``call_...``), paths, long identifiers and URLs without a
    password are left alone: hex strings never count for the entropy rule,
    and the entropy rule only fires next to a trigger word.

Speed
    Standard library only (``re``, ``math``).  Rule patterns are compiled on first use, not at import
    (most processes never need most of them).  The fixed-shape rules run on a short text only when one
    of their literals (a single trie-shaped alternation, `re` testing one character per level) or
    "password is" is present; on a long text each runs behind its lower-case gate.  The vendor rules run
    only when a word of 16+ token characters starts with one of their prefixes (looked up by its first
    two characters) or a few other literals are present; then one scan (a trie of every prefix, after a
    non-alphanumeric character) picks the vendor rules whose prefix actually starts a word, so a text pays
    one search per vendor rule it may hold rather than a gate test per rule.  Every vendor pattern starts
    with a literal so ``re`` can use its fast prefix search; boundary checks run in Python on the (rare)
    matches.  The key/value and entropy rules share one scan for trigger words over a lower-cased copy of
    the text.  `python -m cortex.bench.redact` measures throughput and import time (docs/benchmarks.md).
"""
from __future__ import annotations

import math
import re
from typing import Callable, Dict, List, Optional, Tuple

__all__ = ["redact", "strip_private", "clean", "contains_secret", "placeholder", "cut", "redact_fields"]

_PH_PREFIX = "[REDACTED:"
# One of our own placeholders, exactly.  Detection always needs the whole form: a stray
# "[REDACTED:" typed in front of a secret must not hide it.
_PH_RX = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")
_PH_MAX = 52
# Markers other tools leave where they removed something: REDACTED_API_KEY, [REDACTED], [REDACTED_TEXT ...]
_FOREIGN_MARKER = re.compile(r"\[?REDACTED(?:[_\] ]|$)", re.I)


def placeholder(kind: str) -> str:
    return f"{_PH_PREFIX}{kind}]"


def _alnum(ch: str) -> bool:
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ("0" <= ch <= "9")


def _lb_ok(text: str, i: int) -> bool:
    """Left boundary: text[i] is not glued to a preceding letter or digit,
    unless that letter ends a JSON escape such as \\n or \\t."""
    if i == 0:
        return True
    p = text[i - 1]
    if not _alnum(p):
        return True
    return p in "nrt" and i >= 2 and text[i - 2] == "\\"


# ---------------------------------------------------------------------------
# value helpers
# ---------------------------------------------------------------------------

def _entropy(s: str) -> float:
    n = len(s)
    if n == 0:
        return 0.0
    counts: Dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _classes(s: str) -> Tuple[bool, bool, bool]:
    up = lo = dg = False
    for ch in s:
        if "a" <= ch <= "z":
            lo = True
        elif "A" <= ch <= "Z":
            up = True
        elif "0" <= ch <= "9":
            dg = True
    return up, lo, dg


def _has_digit(s: str) -> bool:
    return any("0" <= ch <= "9" for ch in s)


def _mixed3(s: str) -> bool:
    up, lo, dg = _classes(s)
    return up and lo and dg


def _not_trivial(s: str) -> bool:
    return len(set(s)) > 4


def _two_classes(s: str) -> bool:
    """Two character classes or more and not a repeated filler (for bodies after a distinctive prefix)."""
    up, lo, dg = _classes(s)
    return (up + lo + dg) >= 2 and _not_trivial(s)


def _openai_ok(s: str) -> bool:
    # "sk-" is a short prefix: "sk-learn-compatible-estimator-2" must not count
    body = s[3:]
    return _mixed3(body) or (len(body) >= 40 and _two_classes(body) and not _wordy(body))


_ALPHA_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+")
_CONSONANTS5 = re.compile(r"[b-df-hj-np-tv-xz]{5}")
# The most frequent letter pairs of English text (about 185).
_COMMON_BIGRAMS = frozenset("""
th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de hi ri ro
ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot il tr ly nc et ut ss so
rs un lo wa ge ie wh ee wi em ad ol rt po we na ul ni ts mo ow pa im mi ai sh ir su id os iv ia am fi ci vi pl
ig tu ev ld ry mp fe bl ab gh ty op wo sa ay ex ke fr oo av ag if ap gr od bo sp rd do uc bu ei ov by rm ep tt
oc fa ef cu rn sc gi da yo cr cl du ga qu ue ff ba ey ls va um pp ua up lu go ht ru ug ds lt pi rc rr eg au ck
""".split())


def _wordy(s: str) -> bool:
    """Identifiers built from words (handleUserAuthToken2, my_api_key_name).

    Random base62/base64 strings switch case or class every one or two
    characters; identifiers are made of runs of 3+ letters.
    """
    runs = _ALPHA_RUN.findall(s)
    if not runs:
        return False
    letters = sum(len(r) for r in runs)
    if letters / len(runs) < 3.5:
        return False
    # words have vowels (~40% of letters; random letters ~19%) and no long consonant clusters
    vowels = sum(s.count(v) for v in "aeiouAEIOU")
    if vowels / letters < 0.25 or _CONSONANTS5.search(s) is not None:
        return False
    # and mostly common letter pairs (over 2 in 3 for identifiers made of English words, about 1 in 4
    # for random letters: 0 of 50 000 random 20-64 character tokens pass, all of 27 real identifiers do)
    pairs = common = 0
    for r in runs:
        r = r.lower()
        for i in range(len(r) - 1):
            pairs += 1
            common += r[i:i + 2] in _COMMON_BIGRAMS
    return pairs > 0 and common / pairs >= 0.65


_PLACEHOLDER_WORDS = frozenset(
    """
    none null nil true false undefined yes no on off
    changeme change_me change-me changeit replaceme replace_me
    password passwd pass pwd secret secrets token apikey api_key api-key key
    example sample placeholder dummy fake test testing todo tbd fixme
    redacted hidden masked removed empty default required optional
    string str bytes int integer number bool boolean any object unknown
    value foo bar baz n/a na
    """.split()
)
_CODE_REF = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*[(\[]")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_YOUR = re.compile(r"(?:your|insert|enter|replace|put|add)[-_ ]?(?:own[-_ ]?|real[-_ ]?|actual[-_ ]?)?"
                   r"(?:[a-z]+[-_ ]?){0,3}(?:key|token|secret|password|pass|here|id)", re.I)


def _is_placeholder(v: str) -> bool:
    s = v.strip().strip("\"'`").strip()
    if not s:
        return True
    if s[0] in "$<{%" or _PH_RX.fullmatch(s) or _FOREIGN_MARKER.match(s):
        return True
    low = s.lower()
    if low in _PLACEHOLDER_WORDS or "placeholder" in low or "example" in low:
        return True
    if len(set(s)) <= 2:  # xxxx, ****, ...., abab
        return True
    if s.startswith(("***", "...", "\u2026", "xxx", "XXX", "<")):
        return True
    if _YOUR.match(s):
        return True
    if _CODE_REF.match(s):  # os.environ["X"], get_token()
        return True
    if _DOTTED.fullmatch(s) and not _has_digit(s) and _wordy(s):  # settings.SECRET_KEY, self.password
        return True
    return False


_PATHLIKE = re.compile(r"(?:~|\.{1,2})?/[\w.\-/]*|[\w.\-/]+\.(?:pem|key|json|p12|pfx|crt|cer|txt|env|ya?ml|toml|"
                       r"ini|cfg|conf|gpg|asc|js|ts|py|sh)")


def _is_pathlike(s: str) -> bool:
    if not _PATHLIKE.fullmatch(s):
        return False
    if s.startswith(("~/", "./", "../")) or "." in s.rsplit("/", 1)[-1]:
        return True
    return s.count("/") >= 2 and _wordy(s)


_WORDS_ONLY = re.compile(r"[a-z]+(?:[ _.:/\-]+[a-z]+)*")


def _looks_random(s: str, min_len: int = 8) -> bool:
    """A value that reads like a generated credential rather than a word or code."""
    if len(s) < min_len:
        return False
    for ch in " ()[]{}<>|":
        if ch in s:
            return False
    up, lo, dg = _classes(s)
    if (up + lo + dg) < 2:
        # one class only: long hex/numeric/lower tokens still count
        return len(s) >= 24 and _entropy(s) >= 3.0 and (dg or len(s) >= 32)
    if _wordy(s) and (not dg or _entropy(s) < 3.6):
        return False
    return _entropy(s) >= 2.5


# ---------------------------------------------------------------------------
# fixed-shape rules
# ---------------------------------------------------------------------------

class _Rule:
    __slots__ = ("kind", "pattern", "flags", "_rx", "gate", "group", "check", "lb", "_pre")

    def __init__(self, kind: str, pattern: str, group: int = 0, check: Optional[Callable[[str], bool]] = None,
                 gate: Tuple[str, ...] = (), lb: bool = False, flags: int = 0, pre: str = None):
        self.kind = kind
        self._pre = pre     # a cheap regex that must match first (for rules with no gate)
        self.pattern = pattern
        self.flags = flags
        self._rx = None     # compiled on first use: most processes never need most rules (import time)
        self.gate = gate    # lower-case substrings, one of which must be present (cheap pre-check)
        self.group = group  # the group that is replaced; 0 = the whole match
        self.check = check  # validator for the replaced text
        self.lb = lb        # the match must not be glued to a preceding letter/digit

    @property
    def rx(self) -> "re.Pattern[str]":
        rx = self._rx
        if rx is None:
            rx = self._rx = re.compile(self.pattern, self.flags)
            if isinstance(self._pre, str):
                self._pre = re.compile(self._pre)
        return rx

    @property
    def pre(self) -> "Optional[re.Pattern[str]]":
        if isinstance(self._pre, str):
            self._pre = re.compile(self._pre)
        return self._pre


def _bearer_ok(tok: str) -> bool:
    if len(tok) < 8 or _is_placeholder(tok):
        return False
    up, lo, dg = _classes(tok)
    if dg or len(tok) >= 24:
        return _not_trivial(tok)
    return up and lo and not _wordy(tok)


def _pw_ok(s: str) -> bool:
    return not _is_placeholder(s) and not (s.isdigit() and len(s) <= 4)


def _userinfo_token_ok(s: str) -> bool:
    return len(s) >= 20 and _entropy(s) >= 3.5 and _mixed3(s) and not _wordy(s)


def _auth_value_ok(s: str) -> bool:
    return not _is_placeholder(s) and (_looks_random(s, 6) or (s.endswith("=") and len(s) >= 8))


_PEM_HDR = r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"

_RULES: List[_Rule] = [
    # PEM private keys: the closed block, then a truncated one (header + base64 body)
    _Rule("private_key", _PEM_HDR + r".{0,40000}?" + _PEM_END, gate=("private key",), flags=re.S),
    # a header without its END marker (a cut text, a key pasted in part, newlines collapsed to spaces): the
    # key material runs to the end of the text, or of the JSON string it is in
    _Rule("private_key", _PEM_HDR + r"(?:[^\"\\]|\\.)*", gate=("private key",), flags=re.S),
    _Rule("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", gate=("eyj",), lb=True),
    _Rule("anthropic_key", r"sk-ant-[A-Za-z0-9_\-]{20,}", gate=("sk-",), check=_not_trivial),
    _Rule("openai_key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}", gate=("sk-",), lb=True,
          check=_openai_ok),
    _Rule("aws_access_key", r"A(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Za-z0-9])", lb=True,
          check=lambda s: _not_trivial(s[4:]) and not s.endswith("EXAMPLE")),  # AWS docs use ...EXAMPLE
    _Rule("github_token", r"g(?:h[pousr]_[A-Za-z0-9]{30,255}|ithub_pat_[A-Za-z0-9_]{30,255})", lb=True,
          check=lambda s: _two_classes(s[11:] if s.startswith("github_pat_") else s[4:])),
    _Rule("gitlab_token", r"gl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_\-]{20,}", lb=True, check=_not_trivial),
    _Rule("npm_token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", lb=True, check=lambda s: _two_classes(s[4:])),
    _Rule("huggingface_token", r"hf_[A-Za-z0-9]{34,40}(?![A-Za-z0-9])", lb=True,
          check=lambda s: _two_classes(s[3:])),
    _Rule("pypi_token", r"pypi-AgE[A-Za-z0-9_\-]{50,}", lb=True, check=_not_trivial),
    _Rule("sendgrid_key", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,50}", lb=True, check=_two_classes),
    _Rule("slack_webhook", r"(hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9_/+\-]{8,})", group=2),
    _Rule("slack_token", r"x(?:ox[abposre]-[A-Za-z0-9\-]{10,}|app-\d-[A-Za-z0-9\-]{10,})", lb=True,
          check=_has_digit),
    _Rule("stripe_key", r"[spr]k_(?:live|test)_[A-Za-z0-9]{10,}", gate=("_live_", "_test_"), lb=True,
          check=lambda s: _has_digit(s) and _not_trivial(s)),
    _Rule("stripe_key", r"whsec_[A-Za-z0-9+/=]{20,}", gate=("whsec_",), lb=True, check=_not_trivial),
    _Rule("google_api_key", r"AIza[0-9A-Za-z_\-]{30,}", lb=True),
    _Rule("google_oauth", r"ya29\.[0-9A-Za-z_\-]{20,}", lb=True, check=_not_trivial),
    _Rule("google_oauth", r"1//0[0-9A-Za-z_\-]{30,}", lb=True, check=_mixed3),
    # scheme://user:password@host -> keep scheme, user and host (the scheme before :// is checked in _apply_rule)
    _Rule("url_password", r"://[^\s:/?#@\"'`\\<>\[\]]*:([^\s/?\"'`\\<>]+?)@", group=1, gate=("@",), check=_pw_ok),
    # scheme://<token>@host (a token used as the user name)
    _Rule("url_password", r"://([A-Za-z0-9_\-]{20,})@", group=1, gate=("@",), check=_userinfo_token_ok),
    # Authorization: Bearer <token>, and "bearer <token>" anywhere
    _Rule("bearer", r"(?:[Bb]earer|BEARER)(?:\s|\\[nrt]|%20|\+)+([A-Za-z0-9\-._~+/]+=*)", group=1,
          gate=("bearer",), lb=True, check=_bearer_ok),
    # Authorization: Basic <base64 user:pass>
    _Rule("auth_header", r"(?i:authorization)\\*[\"']?\s*[:=]\s*\\*[\"']?\s*(?i:basic)\s+([A-Za-z0-9+/]{6,}={0,2})",
          group=1, gate=("authorization",), check=lambda s: not _is_placeholder(s) and _not_trivial(s)),
    # Authorization: Token/<raw> <credential>
    _Rule("auth_header",
          r"(?i:authorization)\\*[\"']?\s*[:=]\s*\\*[\"']?\s*(?:(?i:basic|token|digest|bot|apikey|key|sso-key)\s+)?"
          r"([A-Za-z0-9\-._~+/:]{6,}=*)", group=1, gate=("authorization",), check=_auth_value_ok),
    # curl -u user:pass / --user user:pass
    _Rule("password", gate=("-u",), pattern=r"-(?:u|-user)\s+\\*[\"']?[^\s:\"'\\]+:([^\s\"'\\]+)", group=1,
          check=lambda s: _pw_ok(s) and not s.isdigit()),
    # .netrc: machine h login u password p
    _Rule("password", r"login\s+\S+\s+password\s+([^\s\"'\\]+)", group=1, check=_pw_ok),
    # mysql -pSECRET
    _Rule("password", r"mysql(?:dump|admin|sh)?\b[^\n]{0,200}?\s-p([^\s\"'\\]+)", group=1, check=_pw_ok),
]


def _hexmix(s: str) -> bool:
    """A hex body: digits and letters both (a run of one is a placeholder or a number)."""
    return _has_digit(s) and any(c.isalpha() for c in s) and _not_trivial(s)


def _pem_b64_ok(s: str) -> bool:
    import base64
    import binascii
    head = re.sub(r"\\[nr]|\s", "", s)[:64]
    try:
        return b"PRIVATE KEY" in base64.b64decode(head[: len(head) // 4 * 4] + "")
    except (binascii.Error, ValueError):
        return False


def _V(kind: str, pattern: str, gate: Tuple[str, ...] = (), check: Optional[Callable[[str], bool]] = _not_trivial,
       group: int = 0, flags: int = 0) -> _Rule:
    """A vendor token: a literal prefix, then its body; never glued to a letter or digit on either side."""
    return _Rule(kind, pattern + r"(?![A-Za-z0-9])", group=group, check=check, gate=gate, lb=True, flags=flags)


# Vendor formats (learned from public secret-scanning rule sets and the vendors' docs).  Each starts with a
# literal that is its gate (lower-cased), so a text without it pays one substring test.
_VENDOR_RULES: List[_Rule] = [
    _V("ai_api_key", r"gsk_[A-Za-z0-9]{40,}", ("gsk_",), _two_classes),
    _V("ai_api_key", r"xai-[A-Za-z0-9]{60,}", ("xai-",), _two_classes),
    _V("ai_api_key", r"pplx-[A-Za-z0-9]{40,}", ("pplx-",), _two_classes),
    _V("ai_api_key", r"r8_[A-Za-z0-9]{30,}", ("r8_",), _two_classes),
    _V("ai_api_key", r"lsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}", ("lsv2_",)),
    _V("ai_api_key", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}", ("tvly-",), _two_classes),
    _V("ai_api_key", r"fw_[A-Za-z0-9]{20,}", ("fw_",), _mixed3),
    _V("ai_api_key", r"pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,}", ("pcsk_",)),
    _V("huggingface_token", r"api_org_[A-Za-z]{30,}", ("api_org_",), _two_classes),
    _V("aws_bedrock_key", r"ABSK[A-Za-z0-9+/]{100,}={0,2}", ("absk",), _mixed3),
    _Rule("azure_secret", r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
          gate=("q~",), check=_two_classes),
    _V("alibaba_key", r"LTAI[A-Za-z0-9]{12,30}", ("ltai",), _mixed3),
    _V("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}", ("_v1_",)),
    _V("cloudflare_key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", ("v1.0-",)),
    _V("flyio_token", r"f(?:o1_[\w\-]{43}|m[12][ar]?_[A-Za-z0-9+/]{100,}={0,3})", ("fo1_", "fm1", "fm2_"),
       _two_classes),
    _V("heroku_key", r"HRKU-[A-Za-z0-9_\-]{20,}", ("hrku-",), _two_classes),
    _V("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?", ("dapi",), _hexmix),
    _V("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[\w=.\-]{32,64}", ("pscale_",)),
    _V("supabase_token", r"sbp_[a-f0-9]{40}", ("sbp_",), _hexmix),
    _V("netlify_token", r"nfp_[A-Za-z0-9]{36}", ("nfp_",), _two_classes),
    _V("render_key", r"rnd_[A-Za-z0-9]{32}", ("rnd_",), _two_classes),
    _V("vercel_token", r"vc[pkari]_[A-Za-z0-9]{40,}", ("vcp_", "vck_", "vca_", "vcr_", "vci_"), _two_classes),
    _V("scalingo_token", r"tk-us-[\w\-]{48}", ("tk-us-",)),
    _V("tailscale_key", r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{20,}", ("tskey-",)),
    _V("pulumi_token", r"pul-[a-f0-9]{40}", ("pul-",), _hexmix),
    _V("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}", (".atlasv1.",)),
    _V("doppler_token", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}", ("dp.",), _two_classes),
    _V("vault_token", r"hv[sbr]\.[\w\-]{24,}", ("hvs.", "hvb.", "hvr."), _two_classes),
    _V("age_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("age-secret-key-1",)),
    _V("onepassword_token", r"ops_eyJ[A-Za-z0-9+/_\-]{50,}={0,3}", ("ops_eyj",)),
    _V("onepassword_key", r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
       ("a3-",)),
    _V("okta_token", r"00[A-Za-z0-9_\-]{40}", (), lambda s: _mixed3(s) and not _wordy(s[2:])),
    _V("gitlab_token", r"(?:gl(?:ft|imt|agent|soat|ffct)-[\w\-]{20,}|GR1348941[\w\-]{20,})",
       ("glft-", "glimt-", "glagent-", "glsoat-", "glffct-", "gr1348941")),
    _V("bitbucket_token", r"ATBB[A-Za-z0-9_=.\-]{32,}", ("atbb",), _two_classes),
    _V("atlassian_token", r"AT(?:ATT|CTT)3[A-Za-z0-9_\-=]{100,}", ("atatt3", "atctt3")),
    _V("ci_token", r"(?:bkua_[a-f0-9]{40}|CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40})", ("bkua_", "ccipat_")),
    _V("sourcegraph_token", r"sgp_(?:(?:[a-f0-9]{16}|local)_)?[a-f0-9]{40}", ("sgp_",), _hexmix),
    _V("docker_token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}", ("dckr_",)),
    _V("package_token", r"(?:rubygems_[a-f0-9]{48}|CLOJARS_[a-zA-Z0-9]{60}|AKCp[A-Za-z0-9]{60,})",
       ("rubygems_", "clojars_", "akcp")),
    _V("octopus_key", r"API-[A-Z0-9]{26}", ("api-",), lambda s: _has_digit(s) and _not_trivial(s)),
    _V("prefect_key", r"pnu_[A-Za-z0-9]{36}", ("pnu_",), _two_classes),
    _V("infracost_key", r"ico-[A-Za-z0-9]{32}", ("ico-",), _two_classes),
    _V("readme_key", r"rdme_[a-z0-9]{70}", ("rdme_",)),
    _V("sentry_token", r"sntry[us]_[A-Za-z0-9+/=_]{40,}", ("sntry",)),
    _V("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}", ("lin_",), _two_classes),
    _V("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", ("pmak-",)),
    _V("figma_token", r"fig[dou]_[A-Za-z0-9_\-]{32,}", ("figd_", "figo_", "figu_"), _two_classes),
    _V("notion_token", r"(?:secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})", ("secret_", "ntn_"), _mixed3),
    _V("contentful_token", r"CFPAT-[\w\-]{43}", ("cfpat-",)),
    _V("dynatrace_token", r"dt0c01\.[A-Z0-9]{24}\.[A-Za-z0-9]{64}", ("dt0c01.",)),
    _V("newrelic_key", r"NR(?:AK|II|JS|RA|IQ)-[A-Za-z0-9_\-]{19,40}", ("nrak-", "nrii-", "nrjs-", "nrra-", "nriq-"),
       lambda s: _has_digit(s) and _not_trivial(s)),
    _V("grafana_token", r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,3}|"
                        r"eyJrIjoi[A-Za-z0-9+/]{50,}={0,3})", ("glsa_", "glc_", "eyjrijoi"), _two_classes),
    _Rule("webhook_url", r"((?:discord(?:app)?\.com/api/webhooks/\d+/|webhook\.office\.com/webhookb2/))"
                         r"([A-Za-z0-9@/_\-]{30,})", group=2, gate=("/api/webhooks/", "webhookb2/")),
    _Rule("telegram_token", r"(?<![0-9])\d{6,12}:AA[A-Za-z0-9_\-]{30,40}(?![A-Za-z0-9_\-])", gate=(":aa",),
          check=_two_classes),
    _Rule("discord_token", r"(?<![A-Za-z0-9_\-.])[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}"
                           r"(?![A-Za-z0-9_\-.])", check=_mixed3, pre=r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27}"),
    _V("twilio_key", r"(?:SK|AC)[0-9a-f]{32}", ("sk", "ac"), lambda s: _hexmix(s[2:])),
    _V("sendinblue_key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}", ("xkeysib-",)),
    _Rule("mailchimp_key", r"(?<![A-Za-z0-9])[0-9a-f]{32}-us\d{1,2}(?![A-Za-z0-9])", gate=("-us",), check=_hexmix),
    _V("mailgun_key", r"key-[0-9a-f]{32}", ("key-",), lambda s: _hexmix(s[4:])),
    _V("square_token", r"(?:sq0(?:atp|csp)-[\w\-]{22,60}|EAAA[\w\-]{60,})", ("sq0", "eaaa"), _mixed3),
    _V("facebook_token", r"EAA[BCDGM][A-Za-z0-9]{80,}", ("eaa",), _mixed3),
    _V("commerce_key", r"(?:shippo_(?:live|test)_[a-f0-9]{40}|EZ[AT]K[A-Za-z0-9]{54}|duffel_(?:test|live)_[\w\-=]{43}|"
                       r"FLW(?:SECK|PUBK)(?:_TEST)?-[a-h0-9]{32}-X)", ("shippo_", "ezak", "eztk", "duffel_", "flw")),
    _V("shopify_token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}", ("shp",), _hexmix),
    _V("mapbox_token", r"sk\.eyJ[\w\-.]{50,}", ("sk.eyj",)),
    _V("frameio_token", r"fio-u-[\w\-=]{64}", ("fio-u-",)),
    _V("openshift_token", r"sha256~[\w\-]{43}", ("sha256~",), _two_classes),
    # a private key, base64-encoded as a whole (Kubernetes secrets, CI variables): "-----BEGIN" is LS0tLS1CRUdJTi
    _V("private_key", r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]*(?:(?:\r?\n|\\[rn])+[A-Za-z0-9+/=]{8,})*", ("ls0tls1crudjti",),
       _pem_b64_ok),
    # PuTTY .ppk: the private lines and their MAC
    _Rule("private_key", r"(Private-Lines:[ \t]*\d+)((?:(?:\s|\\[rn])+[A-Za-z0-9+/=]{16,}(?![\-:]))+)", group=2,
          gate=("private-lines",)),
    _Rule("private_key", r"Private-(?:MAC|Hash):[ \t]*([0-9a-fA-F]{16,})", group=1, gate=("private-",)),
]


_RULES.extend([
    # passwords on command lines
    _Rule("password", r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm\s+registry)\s+login\b[^\n]{0,200}?"
                      r"\s-p\s*\\*[\"']?([^\s\"'\\]+)", group=1, gate=("login",), check=_pw_ok),
    _Rule("password", r"sshpass\s+-p\s*\\*[\"']?([^\s\"'\\]+)", group=1, gate=("sshpass",), check=_pw_ok),
    _Rule("password", r"htpasswd\s+(?:-[a-zA-Z]*\s+)*?-[a-mo-zA-Z]*b[a-zA-Z]*\s+\S+\s+\S+\s+\\*[\"']?([^\s\"'\\]+)",
          group=1, gate=("htpasswd",), check=_pw_ok),
    _Rule("password", r"htpasswd\s+(?:-[a-zA-Z]*\s+)*?-[a-zA-Z]*(?:nb|bn)[a-zA-Z]*\s+\S+\s+\\*[\"']?([^\s\"'\\]+)",
          group=1, gate=("htpasswd",), check=_pw_ok),
    _Rule("password", r"mysql(?:dump|admin|sh)?\b[^\n]{0,200}?\s-p\\*[\"']([^\"'\\\s]+)", group=1, gate=("mysql",),
          check=_pw_ok),
    _Rule("password", r"(?m)^[A-Za-z0-9_.\-*]+:(?:\d{2,5}|\*):[^:\s]+:[^:\s]+:(\S+)$", group=1,
          gate=(":5432:", ":*:", "pgpass"), check=_pw_ok),  # ~/.pgpass lines: host:port:db:user:password
    _Rule("password", r"smbclient\b[^\n]{0,200}?-U\s*\\*[\"']?[^\s%\"'\\]+%([^\s\"'\\]+)", group=1,
          gate=("smbclient",), check=_pw_ok),
    # "the password is X", "password was X": a short value that reads like a password, not a word
    _Rule("password", r"(?i:pass(?:word|wd|phrase)?|pwd)\s+(?:is|was|will be|should be|=)\s+\\*[\"'`]?"
                      r"([^\s\"'`\\]{4,64}?)(?=[\"'`]|[.,;:!?)]*(?:\s|$|\\[nrt]))", group=1, gate=("pass", "pwd"),
          check=lambda s: _pw_ok(s) and _pw_prose_ok(s)),
])

def _pw_prose_ok(s: str) -> bool:
    """A value after "password is": it must not read as a word ("required", "bcrypt-hashed", "stored")."""
    up, lo, dg = _classes(s)
    if any(not _alnum(c) and c not in "-_." for c in s):
        return True
    if dg:
        return not s.isdigit() or len(s) >= 6
    return up and lo and not _wordy(s) and not s[1:].islower()



# Something every fixed-shape rule needs (it only decides whether to run them): one of these literals, or
# "password is".  The literals form one trie-shaped alternation, compiled below (`re` then tests one
# character per level, not every branch at every position); the prose form is a second search: its first
# letters (a, w) are common and would slow the literal scan down if they were in the same pattern.
_ANY_LITERALS = (
    "-----BEGIN eyJ sk- AKIA ASIA ABIA ACCA ghp_ gho_ ghu_ ghs_ ghr_ github_pat_ glpat- gldt- glrt- glptt- glcbt- "
    "gloas- npm_ hf_ pypi- SG. hooks.slack.com xox xapp- k_live_ k_test_ whsec_ AIza ya29. 1//0 :// Bearer bearer "
    "BEARER uthorization UTHORIZATION -u login mysql sshpass htpasswd smbclient :5432: :*: pgpass").split()
_ANY_PROSE = re.compile(r"(?:ass(?:word|wd|phrase)?|wd|WORD|WD)\s+(?:is|was|will|should|=)")


def _any_rule(text: str) -> bool:
    return _ANY_LITERAL.search(text) is not None or _ANY_PROSE.search(text) is not None


# The same for the vendor rules, plus the few rules with other gates: a word of 16+ token characters that
# starts with a vendor prefix (looked up by its first two characters: str.startswith over a tuple of a
# hundred prefixes costs more than the lookup), or one of a few other literals.
_VENDOR_RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-+/.~]{15,}")
_VENDOR_OTHER = (":AA", "Q~", "webhook", "Private-", ".atlasv1.")
_VENDOR_US = re.compile(r"-us\d")
_DISCORD_PRE = re.compile(r"\.[A-Za-z0-9_\-]{6}\.")
_VENDOR_MIN = 14  # the shortest match of any vendor rule


def _by_head(prefixes) -> Dict[str, Tuple[str, ...]]:
    out: Dict[str, List[str]] = {}
    for p in prefixes:
        out.setdefault(p[:2], []).append(p)
    return {k: tuple(v) for k, v in out.items()}


def _vendor_hit(text: str) -> bool:
    if len(text) < _VENDOR_MIN:
        return False
    for lit in _VENDOR_OTHER:
        if lit in text:
            return True
    if "-us" in text and _VENDOR_US.search(text) is not None:
        return True
    heads = _VENDOR_HEADS
    for m in _VENDOR_RUN.finditer(text):
        w = m.group(0)
        p = heads.get(w[:2])
        if p is not None and w.startswith(p):
            return True
        if "." in w and _DISCORD_PRE.search(w) is not None:
            return True
    return False


def _literal_prefixes(pattern: str, cap: int = 64) -> Tuple[str, ...]:
    """Every literal a match of `pattern` must start with (its leading literals, classes of a few characters
    and alternations expanded), or () when a match may start with anything."""
    try:
        from re import _parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover
        import sre_parse  # type: ignore
    c = sre_parse

    def walk(items, heads):
        # heads: prefixes so far; returns (prefixes, complete?) -- complete: the whole of items was literal
        for op, av in items:
            if op is c.LITERAL:
                heads = [h + chr(av) for h in heads]
            elif op is c.IN and all(o is c.LITERAL or o is c.RANGE for o, _ in av):
                chars = []
                for o, a in av:
                    chars.extend([chr(a)] if o is c.LITERAL else [chr(x) for x in range(a[0], a[1] + 1)])
                if len(chars) * len(heads) > cap:
                    return heads, False
                heads = [h + ch for h in heads for ch in chars]
            elif op is c.SUBPATTERN:
                if av[1] & c.SRE_FLAG_IGNORECASE:
                    return heads, False
                heads, done = walk(av[-1], heads)
                if not done:
                    return heads, False
            elif op is c.BRANCH:
                out, all_done = [], True
                for alt in av[1]:
                    sub, done = walk(alt, heads)
                    out.extend(sub)
                    all_done = all_done and done
                if len(out) > cap:
                    return heads, False
                heads = out
                if not all_done:
                    return heads, False
            else:
                return heads, False
        return heads, True

    parsed = sre_parse.parse(pattern)
    if parsed.state.flags & c.SRE_FLAG_IGNORECASE:
        return ()
    heads, _ = walk(parsed, [""])
    return () if any(not h for h in heads) else tuple(sorted(set(heads)))


def _trie_pattern(words) -> str:
    """A regex alternation of literals factored by their common prefixes (`re` tries a flat alternation of a
    hundred literals one by one at every position; a trie tests one character per level, and a run of
    single-child levels is one literal)."""
    first: Dict[str, List[str]] = {}
    for w in words:
        first.setdefault(w[0], []).append(w[1:])
    alts = []
    for ch in sorted(first):
        rest = first[ch]
        head = ch
        # a chain of nodes with one child each: one literal
        while len(rest) > 1 and "" not in rest and len({r[0] for r in rest}) == 1:
            head += rest[0][0]
            rest = [r[1:] for r in rest]
        if len(rest) == 1:
            alts.append(re.escape(head + rest[0]))
            continue
        sub = _trie_pattern(sorted({r for r in rest if r}))
        alts.append(re.escape(head) + "(?:" + sub + ")" + ("?" if "" in rest else ""))
    return "|".join(alts)


_ANY_LITERAL = re.compile(_trie_pattern(sorted(_ANY_LITERALS)))

_VENDOR_DISPATCH = None  # (scan regex, start regex, {prefix: [rule index]}, [always-run rule index]), built on first use


def _vendor_dispatch():
    global _VENDOR_DISPATCH
    if _VENDOR_DISPATCH is None:
        by_prefix: Dict[str, List[int]] = {}
        always: List[int] = []
        for i, rule in enumerate(_VENDOR_RULES):
            pre = _literal_prefixes(rule.pattern) if rule.lb and not rule.flags & re.I else ()
            if not pre:
                always.append(i)
                continue
            for p in pre:
                by_prefix.setdefault(p, []).append(i)
        # a prefix counts where a match may start: not glued to a letter or digit (as _lb_ok), and every
        # occurrence is found (a lookahead: the matches may overlap)
        trie = _trie_pattern(sorted(by_prefix))
        # a leading character class lets `re` skip ahead over letters and digits (the text's start is checked
        # apart); a JSON escape \n, \r or \t counts as a boundary, as in _lb_ok
        scan = re.compile(r"[^A-Za-z0-9](?:(?<=\\)[nrt])?(?=(" + trie + "))")
        _VENDOR_DISPATCH = (scan, re.compile(trie), by_prefix, always)
    return _VENDOR_DISPATCH


def _vendor_rules_for(text: str) -> List[_Rule]:
    """The vendor rules that may match text, in their order: those whose literal prefix starts a word of it,
    and those with no literal prefix (they keep their own gates)."""
    scan, head, by_prefix, always = _vendor_dispatch()
    picked = set(always)
    seen = set()
    m0 = head.match(text)
    found = [m.group(1) for m in scan.finditer(text)]
    if m0 is not None:
        found.append(m0.group(0))
    for lit in found:
        if lit in seen:
            continue
        seen.add(lit)
        for k in range(1, len(lit) + 1):
            idx = by_prefix.get(lit[:k])
            if idx:
                picked.update(idx)
    return [_VENDOR_RULES[i] for i in sorted(picked)]


_SHORT_TEXT = 2000
_SCHEME_TAIL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}$")


def _clip(text: str, a: int, b: int) -> Tuple[int, int]:
    """Shrink [a, b) so that it overlaps none of our own placeholders.

    A later rule may match across an earlier placeholder, e.g. `-u user:pass` over
    `-u [REDACTED:github_token]:hunter2`; only the part after it is still a secret.
    """
    for m in _PH_RX.finditer(text, max(0, a - _PH_MAX), min(len(text), b + _PH_MAX)):
        if m.start() >= b:
            break
        ps, pe = m.span()
        if pe <= a:
            continue
        if ps > a:
            return a, ps  # a placeholder inside the span: stop before it
        a = pe  # the span starts inside a placeholder: resume after it
        if a < b and text[a] not in ":@":
            return a, a  # glued to the placeholder, not a user:password pair
        while a < b and text[a] in ":@":
            a += 1
    return a, b


def _apply_rule(rule: _Rule, text: str, counter: List[int]) -> str:
    g = rule.group
    kind = rule.kind
    check = rule.check
    lb = rule.lb
    is_url = kind == "url_password"
    has_ph = _PH_PREFIX in text

    def repl(m: "re.Match[str]") -> str:
        start = m.start()
        whole = m.group(0)
        a, b = m.span(g)
        if has_ph:
            a, b = _clip(text, a, b)
            if a >= b:
                return whole
        val = text[a:b]
        if lb and not _lb_ok(text, start):
            return whole
        if is_url and not _SCHEME_TAIL.search(text, max(0, start - 31), start):
            return whole
        if check is not None and not check(val):
            return whole
        counter[0] += 1
        return whole[: a - start] + placeholder(kind) + whole[b - start:]

    return rule.rx.sub(repl, text)


# ---------------------------------------------------------------------------
# shared trigger scan (over the lower-cased text)
# ---------------------------------------------------------------------------

# str.find over a few literals beats one regex alternation of common letters by ~2x.
_TRIGGER_WORDS = ("pass", "pwd", "secret", "token", "key", "cred", "auth", "_pw", "cookie")


def _trigger_hits(low: str) -> List[Tuple[int, int]]:
    hits: List[Tuple[int, int]] = []
    for w in _TRIGGER_WORDS:
        i = low.find(w)
        if i < 0:
            continue
        k = len(w)
        while i >= 0:
            hits.append((i, i + k))
            i = low.find(w, i + k)
    hits.sort()
    return hits
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_SPLIT_KEY = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_KEY_SPLIT_SEP = re.compile(r"[_.\-]+")


def _key_parts(name: str) -> List[str]:
    out: List[str] = []
    for chunk in _KEY_SPLIT_SEP.split(name):
        out.extend(p.lower() for p in _SPLIT_KEY.findall(chunk))
    return out


# Key names that end like this describe a secret but do not hold one (token_url, password_file, ...).
_KEY_SUFFIX_SKIP = frozenset(
    """
    url uri urls endpoint path file filename dir name names type mode method header length len count limit
    expiry expires expiresin expiresat expiration ttl timeout provider scheme required enabled enable disabled
    version prefix id ids index size status env var field label hint policy rotation format location store
    storage cache source kind usage budget stats info error errors flow strategy manager service server
    client handler helper config settings options request response state ref refs class module fn func
    callback hook check validator validation stdin input prompt dialog form button page view screen
    modal component reset changed updated created at on by date time valid invalid missing set exists present
    counter max min total used left remaining tokens map list dict keys hash digest fingerprint salt rounds
    min_length regex pattern policy schema
    """.split()
)
_STRONG_KEY = re.compile(r"(?:api|access|private|session|signing|encryption|master|client|license|account|app|"
                         r"secret|auth|service|admin|deploy|storage|subscription)key")
_WEAK_PARTS = frozenset(("token", "auth", "authorization", "credential", "credentials", "cookie", "creds",
                         "authtoken", "apitoken", "accesstoken", "refreshtoken", "idtoken", "bearer", "oauth"))
_KEY_CACHE: Dict[str, Optional[Tuple[str, bool]]] = {}


def _key_kind(name: str) -> Optional[Tuple[str, bool]]:
    """(kind, strong) for a secret-bearing key name, or None.

    Strong names (password, secret, api key ...) redact any real-looking
    value; weak names (token, auth, credential, cookie) need a random-looking
    value.
    """
    hit = _KEY_CACHE.get(name)
    if hit is not None or name in _KEY_CACHE:
        return hit
    res = _key_kind_uncached(name)
    if len(_KEY_CACHE) > 4096:
        _KEY_CACHE.clear()
    _KEY_CACHE[name] = res
    return res


def _key_kind_uncached(name: str) -> Optional[Tuple[str, bool]]:
    bare = name.lstrip("-")
    low = bare.lower()
    if not low or low in ("pwd", "oldpwd"):
        return None
    parts = _key_parts(bare)
    if not parts:
        return None
    last = parts[-1]
    if last in _KEY_SUFFIX_SKIP and len(parts) > 1:
        return None
    flat = "".join(parts)
    if "passw" in flat or "passphrase" in flat or "pwd" in parts:
        return ("password", True)
    if "pass" in parts or "pw" in parts or flat.endswith("pass"):
        return ("password", False)  # "pass" alone is also a word ("first pass: ...")
    if "secret" in flat:
        if "aws" in flat or "secretaccesskey" in flat:
            return ("aws_secret", True)
        return ("env_secret", True)
    if _STRONG_KEY.search(flat) or "connstr" in flat or "connectionstring" in flat:
        return ("env_secret", True)
    if any(p in _WEAK_PARTS for p in parts) or flat.endswith(("token", "auth", "credential", "credentials")):
        return ("env_secret", False)
    return None


# ---------------------------------------------------------------------------
# KEY=value / "key": "value" / key: value / --key value
# ---------------------------------------------------------------------------

# After the key: optional closing quote(s)/bracket, then a separator.
_KV_SEP = re.compile(r"(?P<close>\\*[\"'`]?\]?)(?P<sep>[ \t]*(?::=|=>|==|=|:)[ \t]*|[ \t]+)")
_QUOTE_OPEN = re.compile(r"\\*[\"'`]")
_UNQUOTED = re.compile(r"(?:[^\s\"'`\\&;,<>]|\\\\|\\/|\\u[0-9a-fA-F]{4}|,(?=[^\s\\]))+")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_CODE_FOLLOW = re.compile(r"[ \t]*(?:[?,;)}|&+*/(.]|\\n\s*[.?])")
_PROSE_FOLLOW = re.compile(r"[ \t]+[a-z]{2,}\b")
_CLOSERS: Dict[str, "re.Pattern[str]"] = {}
_BRACKET = re.compile(r"[()\[\]{}<>|]")


def _closer(open_seq: str) -> "re.Pattern[str]":
    rx = _CLOSERS.get(open_seq)
    if rx is None:
        rx = re.compile(r"(?<!\\)" + re.escape(open_seq))
        _CLOSERS[open_seq] = rx
    return rx


def _strip_trailing(v: str) -> str:
    while v and v[-1] in ".,:;!?":
        v = v[:-1]
    for o, c in (("(", ")"), ("[", "]"), ("{", "}")):
        while v.endswith(c) and v.count(c) > v.count(o):
            v = v[:-1]
    return v


def _read_value(text: str, pos: int) -> Optional[Tuple[int, int, bool]]:
    """(start, end, quoted) of the value that begins at pos."""
    m = _QUOTE_OPEN.match(text, pos)
    if m is not None:
        seq = m.group(0)
        start = m.end()
        stop = min(len(text), start + 2048)
        if seq in ('"', "'", "`"):
            # a plain string: a backslash-escaped quote does not close it
            j = start
            while True:
                k = text.find(seq, j, stop)
                if k < 0:
                    break
                bs = 0
                while k - 1 - bs >= start and text[k - 1 - bs] == "\\":
                    bs += 1
                if bs % 2 == 0:
                    if text.find("\n", start, k) < 0:
                        return start, k, True
                    break
                j = k + 1
        else:
            cm = _closer(seq).search(text, start, stop)
            if cm is not None and text.find("\n", start, cm.start()) < 0:
                return start, cm.start(), True
        pos = start  # unclosed quote: read what follows as a bare value
    um = _UNQUOTED.match(text, pos)
    if um is None:
        return None
    v = _strip_trailing(um.group(0))
    if not v:
        return None
    return pos, pos + len(v), False


def _kv_value_ok(text: str, kind: str, strong: bool, sep: str, vs: int, ve: int, quoted: bool) -> bool:
    val = text[vs:ve]
    if not val or _is_placeholder(val):
        return False
    if "://" in val:  # a URL: the URL rule has already dealt with any password in it
        return False
    if _is_pathlike(val):
        return False
    if not quoted:
        if val[0] in "{[(" and (len(val) == 1 or val[-1] in "}])"):
            return False  # a structure (`password: [a, b]`), not a value
        if _IDENT.fullmatch(val) and not _has_digit(val):
            s = sep.strip()
            # code, not a value: `password = password_input`, `apiKey: isLite ? a : b`, `token: token,`
            if (s in ("=", "==") and sep != s) or _CODE_FOLLOW.match(text, ve) or (
                    any(c.isupper() for c in val[1:]) and any(c.islower() for c in val)):
                return False
            if _PROSE_FOLLOW.match(text, ve) and val.islower():
                return False  # prose: "the password: must be 8 chars"
    if strong:
        if val.isdigit() and len(val) <= 4:
            return False
        if kind != "password" and _WORDS_ONLY.fullmatch(val):
            return False  # `apiKey: 'proxy-handled'`, `"validate:secrets": "node scripts/x.js"`
        return True
    return _looks_random(val)


def _kv_span(text: str, ks: int, ke: int) -> Optional[Tuple[int, int, str, bool]]:
    """(start, end, kind, redact?) of the value of the key text[ks:ke], if it holds a secret.

    redact? is False when the value is already one of our placeholders (a second pass).
    """
    if ks > 0 and text[ks - 1] in "${":  # $API_KEY / ${API_KEY} are references, not assignments
        return None
    info = _key_kind(text[ks:ke])
    if info is None:
        return None
    kind, strong = info
    sm = _KV_SEP.match(text, ke)
    if sm is None:
        return None
    sep = sm.group("sep")
    if not sep.strip() and not text.startswith("-", ks):
        return None  # whitespace as separator only for command-line flags (--password x)
    rv = _read_value(text, sm.end())
    if rv is None:
        return None
    vs, ve, quoted = rv
    pm = _PH_RX.match(text, vs)
    if pm is not None:
        return vs, pm.end(), kind, False
    pm = _PH_RX.search(text, vs, ve)
    if pm is not None:
        ve = pm.start()  # never swallow one of our own placeholders
    if not strong and not quoted:
        # a token has no brackets: `f(token=abc123)x` -> the value is abc123
        m = _BRACKET.search(text, vs, ve)
        if m is not None:
            if m.group(0) in "([{<":
                return None  # a call or subscript: `token = Base.url_encode64(...)`, code not a value
            ve = m.start()
    if not _kv_value_ok(text, kind, strong, sep, vs, ve, quoted):
        return None
    return vs, ve, kind, True


# - name: DB_PASSWORD \n value: hunter2   (docker-compose / k8s / GitHub Actions env lists)
_NAME_VALUE = re.compile(r"(?i:name)\\*[\"']?\s*[:=]\s*\\*[\"']?([A-Za-z0-9_.\-]{2,80})\\*[\"']?\s*,?"
                         r"(?:\s|\\[nrt])*-?\s*(?i:value)\\*[\"']?\s*[:=]\s*")


def _name_value_spans(text: str) -> List[Tuple[int, int, str]]:
    spans = []
    for m in _NAME_VALUE.finditer(text):
        info = _key_kind(m.group(1))
        if info is None:
            continue
        rv = _read_value(text, m.end())
        if rv is None:
            continue
        vs, ve, quoted = rv
        pm = _PH_RX.search(text, vs, ve)
        if pm is not None:
            ve = pm.start()
        if _kv_value_ok(text, info[0], info[1], ":", vs, ve, quoted):
            spans.append((vs, ve, info[0]))
    return spans


# ---------------------------------------------------------------------------
# high-entropy tokens after a trigger word
# ---------------------------------------------------------------------------

_ENT_WORDS = frozenset(("secret", "secrets", "token", "password", "passwd", "pwd", "passphrase", "credential",
                        "credentials", "creds", "key", "keys", "apikey", "auth", "bearer", "accesskey",
                        "privatekey", "secretkey", "authtoken", "accesstoken", "apitoken"))
_ENT_CACHE: Dict[str, bool] = {}
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_=\-]{20,}")
_ENT_GAP = 48  # a token may start this many characters after the trigger word (or the previous token)
_ENT_HOPS = 4  # and at most this many tokens follow one trigger word
_ENT_BACK = 32  # a single token may also end this many characters before the trigger word
# Object ids of the model APIs (and Stripe's public object ids): random, but not secrets.
_ID_PREFIX = re.compile(r"(?:msg|toolu|srvtoolu|call|req|resp|rs|fc|ws|run|file|chatcmpl|evt|org|proj|asst|thread|"
                        r"batch|ft|step|cs|pi|ch|cus|sub|in|price|prod|acct)[_\-]")
_HEX_ISH = re.compile(r"[0-9a-fA-F\-]+")
_SSH_PUBKEY = re.compile(r"AAAA[A-Z][0-9](?:NzaC1|VjZHNh)")  # ssh-rsa/ssh-ed25519/ssh-dss/ecdsa public key blobs
_JSON_BOUNDARY = re.compile(r"\"\s*[,}\]]")
_JSON_BOUNDARY_BACK = re.compile(r"\"\s*[,}\]:]")  # also `"value": "token"`: a value before its key


def _is_ent_trigger(ident: str) -> bool:
    hit = _ENT_CACHE.get(ident)
    if hit is None:
        parts = _key_parts(ident)
        hit = any(p in _ENT_WORDS for p in parts) or "".join(parts[-2:]) in _ENT_WORDS
        if len(_ENT_CACHE) > 4096:
            _ENT_CACHE.clear()
        _ENT_CACHE[ident] = hit
    return hit


def _entropy_candidate_ok(tok: str) -> bool:
    core = tok.rstrip("=")
    if len(core) < 20 or len(core) > 512:
        return False
    if _ID_PREFIX.match(core):
        return False
    if _HEX_ISH.fullmatch(core):  # SHAs, UUIDs, hashes: a hex string alone is not a secret
        return False
    if _SSH_PUBKEY.match(core) or "EXAMPLE" in core:  # public keys; AWS documentation examples
        return False
    if not _mixed3(core):
        return False
    if _entropy(core) < min(3.5, math.log2(len(core)) - 1.2):  # 3.5 bits; a little less below 24 chars
        return False
    if _wordy(core):
        return False
    if "/" in core and _is_pathlike(core):
        return False
    return True


def _entropy_chain(text: str, start: int, out: List[Tuple[int, int, str]]) -> None:
    """Redact random-looking tokens that follow a trigger word closely.

    The window is a chain: an item (a token redacted here, or one of our own
    placeholders) may start at most _ENT_GAP characters after the previous item
    (the trigger word first), up to _ENT_HOPS items.  Measuring from item to
    item, rather than a fixed distance from the trigger, keeps the result the
    same on a second pass, when the tokens have become placeholders of another
    length.
    """
    n = len(text)
    item_end = start   # end of the last item: the gap is measured from here
    pos = start        # where to look next
    hops = 0
    while hops < _ENT_HOPS:
        limit = item_end + _ENT_GAP
        if pos >= limit:
            break
        c = _CANDIDATE.search(text, pos, min(n, limit + 600))
        pm = _PH_RX.search(text, pos, min(n, limit + _PH_MAX))
        if pm is not None and pm.start() < limit and (c is None or pm.start() < c.start()):
            if _JSON_BOUNDARY.search(text, item_end, pm.start()):
                break
            item_end = pos = pm.end()
            hops += 1
            continue
        if c is None or c.start() >= limit:
            break
        a = c.start()
        # never swallow the letter of a JSON escape (\n, \t), never cross a JSON string boundary
        if a > 0 and text[a - 1] == "\\" and text[a] in "nrt":
            a += 1
        if _JSON_BOUNDARY.search(text, item_end, a):
            break
        tok = text[a:c.end()]
        if (a == 0 or not _alnum(text[a - 1]) or text[a - 2:a - 1] == "\\") and _entropy_candidate_ok(tok):
            out.append((a, c.end(), "high_entropy"))
            item_end = c.end()
            hops += 1
        pos = c.end()


def _entropy_before(text: str, ks: int, out: List[Tuple[int, int, str]]) -> None:
    """The one token just before a trigger word: "Zx81hQ2m... is my api key"."""
    lo = max(0, ks - _ENT_BACK - 600)
    last = None
    for c in _CANDIDATE.finditer(text, lo, ks):
        last = c
    if last is None:
        return
    a, b = last.span()
    if b == ks or b < ks - _ENT_BACK:
        return  # glued to the trigger word (one token with it), or too far
    if a == lo and lo > 0 and (_alnum(text[lo - 1]) or text[lo - 1] in "+/_=-"):
        return  # the window cut a longer token
    if _PH_RX.search(text, b, ks) or _JSON_BOUNDARY_BACK.search(text, b, ks):
        return  # the nearest item is one of our placeholders, or another string
    if a > 0 and text[a - 1] == "\\" and text[a] in "nrt":
        a += 1
    if (a == 0 or not _alnum(text[a - 1]) or text[a - 2:a - 1] == "\\") and _entropy_candidate_ok(text[a:b]):
        out.append((a, b, "high_entropy"))


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------

def _lower(text: str) -> str:
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII characters change length when lower-cased
        low = text.translate(_ASCII_LOWER)
    return low


def _splice(text: str, spans: List[Tuple[int, int, str]], counter: List[int]) -> str:
    spans.sort()
    out: List[str] = []
    prev = 0
    for a, b, kind in spans:
        if a < prev:
            continue
        if _PH_RX.match(text, a):
            continue
        out.append(text[prev:a])
        out.append(placeholder(kind))
        prev = b
        counter[0] += 1
    out.append(text[prev:])
    return "".join(out)



def _apply_rules(rules, text: str, low: str, present: dict, counter: list):
    """Apply each rule whose gate words are in the text (`present` caches the look-ups on `low`, the
    lower-cased text) and whose pre-check and pattern match.  Returns (text, low)."""
    for rule in rules:
        if rule.gate:
            for g in rule.gate:
                hit = present.get(g)
                if hit is None:
                    hit = present[g] = g in low
                if hit:
                    break
            else:
                continue
        if rule.pre is not None and rule.pre.search(text) is None:
            continue
        if rule.rx.search(text) is None:
            continue
        before = counter[0]
        text = _apply_rule(rule, text, counter)
        if counter[0] != before:
            low = _lower(text)
            present.clear()
    return text, low

def redact(text: str) -> Tuple[str, int]:
    """Replace every secret in text with [REDACTED:<kind>]; return (text, count)."""
    if not text:
        return text, 0
    counter = [0]
    low = _lower(text)
    present: Dict[str, bool] = {}
    # Short texts (most transcript strings) pay one regex search instead of one per rule.
    long_text = len(text) > _SHORT_TEXT
    rules = _RULES if long_text or _any_rule(text) else ()
    vendor = _vendor_hit(text)
    text, low = _apply_rules(rules, text, low, present, counter)
    if vendor:
        # only the vendor rules whose literal prefix starts a word of the text (after the rules above)
        text, low = _apply_rules(_vendor_rules_for(text), text, low, present, counter)

    # key/value rule, then the entropy rule over the text with the key/value placeholders in place
    for _ in range(3):
        kv_spans, idents = _scan_idents(text, low)
        if not kv_spans:
            break
        text = _splice(text, kv_spans, counter)
        low = _lower(text)
    else:
        _, idents = _scan_idents(text, low)
    spans: List[Tuple[int, int, str]] = []
    for ks, ke in idents:
        _entropy_chain(text, ke, spans)
        _entropy_before(text, ks, spans)
    if spans:
        text = _splice(text, spans, counter)
    tail = _tail_span(text)
    if tail is not None:
        text = _splice(text, [tail], counter)
        # the tail's placeholder names a kind ("partial_token") that is a trigger word for the token before
        # it, as it will be when the text is redacted again: read it now, so a second pass changes nothing
        spans = []
        for ks, ke in _scan_idents(text, _lower(text))[1]:
            _entropy_before(text, ks, spans)
        if spans:
            text = _splice(text, spans, counter)
    return text, counter[0]


# A text that ends inside a vendor token (cut upstream, before Cortex saw it): the prefix and at least 6
# characters of the body, as the last word, optionally followed by a cut marker.
_TAIL_PREFIXES = tuple("""
sk-ant- sk-proj- sk-svcacct- sk-admin- sk- gsk_ xai- pplx- r8_ hf_ api_org_ lsv2_ tvly- fw_ pcsk_ AKIA ASIA ABIA ACCA
ABSK AIza ya29. 1//0 LTAI dop_v1_ doo_v1_ dor_v1_ v1.0- fo1_ fm1 fm2_ HRKU- dapi pscale_ sbp_ nfp_ rnd_ vcp_ vck_
tk-us- tskey- pul- dp.pt. dp.st. dp.ct. dp.sa. hvs. hvb. hvr. AGE-SECRET-KEY-1 ops_eyJ A3- ghp_ gho_ ghu_ ghs_ ghr_
github_pat_ glpat- gldt- glrt- glptt- glcbt- gloas- glft- glimt- glagent- glsoat- GR1348941 ATBB ATATT3 ATCTT3 bkua_
CCIPAT_ sgp_ dckr_pat_ dckr_oat_ npm_ pypi- rubygems_ CLOJARS_ AKCp pnu_ ico- rdme_ sntryu_ sntrys_ lin_api_
lin_oauth_ PMAK- figd_ secret_ ntn_ CFPAT- dt0c01. NRAK- NRII- NRJS- glsa_ glc_ eyJ SG. xoxb- xoxp- xoxa- xoxr-
xoxe- xoxs- xoxo- xapp- sk_live_ rk_live_ pk_live_ sk_test_ rk_test_ whsec_ xkeysib- sq0atp- sq0csp- EAAA shpat_
shpss_ shpca_ shppa_ shippo_ EZAK EZTK duffel_ FLWSECK fio-u- sha256~ sk.eyJ LS0tLS1CRUdJTi
""".split())
# shapes with no long literal prefix (group 1: short prefixes whose body must be hex)
_TAIL_SHAPES = re.compile(r"(SK|AC|key-)|API-(?=[A-Z0-9]+$)|[A-Za-z0-9_~.]{3}\dQ~|\d{6,12}:AA|00(?=[A-Za-z0-9_\-]*[A-Z])|"
                          r"[A-Za-z0-9]{14}\.atlasv1\.|[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.|EAA[BCDGM]")
_VENDOR_HEADS = _by_head(_TAIL_PREFIXES + ("00", "SK", "AC", "API-", "key-", "EAA", "ATBB", "LTAI"))
_TAIL_WORD = re.compile(r"[A-Za-z0-9_\-+/.=~:]*\Z")
_TAIL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/.=~:")


def _tail_span(text: str) -> Optional[Tuple[int, int, str]]:
    t = text.rstrip()
    if t.endswith("[truncated]"):
        t = t[:-11].rstrip(" \t")
    if t.endswith("\u2026"):
        t = t[:-1]
    elif t.endswith("..."):
        t = t[:-3]
    b = len(t)
    if b < 8 or not _TAIL_CHARS.issuperset(t[-8:]):  # the token is 8+ token characters at the very end
        return None
    word = t[-1200:].rsplit(None, 1)[-1]
    m = _TAIL_WORD.search(word)
    a = b - (len(word) - m.start())
    if b - a < 8:
        return None
    tok = text[a:b]
    while tok and tok[-1] in ".:":
        tok, b = tok[:-1], b - 1
    if a > 0 and _alnum(text[a - 1]) and text[a - 2:a - 1] != "\\":
        return None
    if not tok.startswith(_TAIL_PREFIXES):
        m2 = _TAIL_SHAPES.match(tok)
        if m2 is None or len(tok) - m2.end() < 6:
            return None
        body = tok[m2.end():]
        if m2.group(1) and (len(body) < 10 or not _HEX_ISH.fullmatch(body)):
            return None  # SK/AC/key- prefixes are short: a hex body only
        return (a, b, "partial_token") if _not_trivial(body) and _has_digit(tok) else None
    body = next(tok[len(p):] for p in _TAIL_PREFIXES if tok.startswith(p))
    if len(body) < 6 or not _not_trivial(body) or _PH_RX.search(tok):
        return None
    up, lo, dg = _classes(body)
    if not dg and not (up and lo):
        return None
    if _wordy(body):
        return None
    return a, b, "partial_token"


def _scan_idents(text: str, low: str) -> Tuple[List[Tuple[int, int, str]], List[Tuple[int, int]]]:
    """One pass over the trigger words: (key/value spans to redact, entropy trigger words)."""
    spans: List[Tuple[int, int, str]] = []
    idents: List[Tuple[int, int]] = []
    n = len(text)
    last_ident_end = -1
    for ts, te in _trigger_hits(low):
        if ts < last_ident_end:
            continue
        ks = ts
        while ks > 0 and text[ks - 1] in _IDENT_CHARS:
            ks -= 1
        if ks > 0 and text[ks - 1] == "\\" and text[ks] in "nrt":
            ks += 1  # "\nAPI_KEY" inside JSON: the n belongs to the escape
        ke = te
        while ke < n and text[ke] in _IDENT_CHARS:
            ke += 1
        while ke > ks and text[ke - 1] in ".-":
            ke -= 1
        last_ident_end = ke
        if ke <= ks:
            continue
        # (the kind inside one of our placeholders is a trigger too: secrets come in pairs,
        # e.g. an access key id followed by its secret)
        kv = _kv_span(text, ks, ke)
        if kv is not None:
            vs, ve, kind, todo = kv
            if todo:
                spans.append((vs, ve, kind))
            last_ident_end = max(ke, ve)
        if _is_ent_trigger(text[ks:ke]):
            idents.append((ks, ke))
    if "alue" in low:
        spans.extend(_name_value_spans(text))
    return spans, idents


_PRIVATE_TAG = re.compile(r"(?:<|\\u003[cC])(/?)(?i:private)(?:>|\\u003[eE])")


def strip_private(text: str) -> str:
    """Remove <private>...</private> spans (nested, multi-line; an unclosed one runs to the end)."""
    if "rivate" not in text and "RIVATE" not in text:
        return text
    out: List[str] = []
    depth = 0
    prev = 0
    for m in _PRIVATE_TAG.finditer(text):
        if not m.group(1):  # <private>
            if depth == 0:
                out.append(text[prev:m.start()])
            depth += 1
        elif depth == 0:  # stray </private>: drop the tag, keep the text
            out.append(text[prev:m.start()])
            prev = m.end()
        else:
            depth -= 1
            if depth == 0:
                prev = m.end()
    if depth == 0:
        out.append(text[prev:])
    return "".join(out)


_MEMO: Optional[Dict[str, Tuple[str, int]]] = None  # text -> clean(text), inside `remembered()`


class remembered:
    """`with remembered():` clean() answers a text it has already cleaned from memory (it is a pure
    function of the text).  The normalizer holds one per transcript window, whose prompts and replies
    are cleaned twice: for the decision layer and for the episode."""

    def __enter__(self):
        global _MEMO
        self.outer = _MEMO
        if _MEMO is None:
            _MEMO = {}
        return self

    def __exit__(self, *exc):
        global _MEMO
        _MEMO = self.outer


def clean(text: str) -> Tuple[str, int]:
    """strip_private, then redact."""
    memo = _MEMO
    if memo is None or type(text) is not str:
        return redact(strip_private(text))
    got = memo.get(text)
    if got is None:
        got = memo[text] = redact(strip_private(text))
    return got


def contains_secret(text: str) -> bool:
    return redact(text)[1] > 0


def redact_fields(obj, private: bool = True):
    """(copy of obj with every string in it cleaned, number of replacements): dict keys and values, list and
    tuple items, at any depth.  For whole records and imported lines, where a secret may sit in any field
    (a plan item, a file name, the transcript path)."""
    fn = clean if private else redact
    n = [0]

    def walk(x):
        if isinstance(x, str):
            out, k = fn(x)
            n[0] += k
            return out
        if isinstance(x, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(walk(v) for v in x)
        return x

    return walk(obj), n[0]


_CUT_TOKEN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-.~%")
_CUT_WORD_BACK = 512
_CUT_TOKEN_BACK = 400
_SPACE_REV = re.compile(r"\s|[nt]\\")  # a whitespace (or JSON \\n, \\t) in a reversed text


def _last_space(head: str, start: int) -> int:
    r"""Where the last whitespace (or JSON \n, \t escape) at or after `start` begins in `head`, else -1: what
    re.search(r".*(\s|\\[nt])", head, start) finds, without its backtracking over the whole tail from every
    start when there is none (2.4 ms for 512 characters of a blob; a reversed search takes microseconds)."""
    tail = head[start:][::-1]
    m = _SPACE_REV.search(tail)
    return -1 if m is None else start + len(tail) - m.end()


def cut(text: str, limit: int, ellipsis: str = "") -> str:
    """text cut to at most `limit` characters (plus `ellipsis`) without keeping part of a secret.

    A rule that knows a secret by its whole shape (a token's full length, a private key's END marker) no
    longer sees it once a cut has taken its end, so a plain text[:limit] can keep a prefix and enough of a
    token to matter.  Here the cut never ends inside a word: it backs off to the last whitespace (within
    512 characters), else over the last run of token characters (up to 400).  A private key cut in half is handled by
    `redact` (a header without END runs to the end of the text).  Redacting before cutting is still the
    rule; this keeps a cut that comes first from making a secret unrecognisable.
    """
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ellipsis if text else text
    head = text[:limit]
    if not text[limit].isspace():
        i = _last_space(head, max(0, limit - _CUT_WORD_BACK))
        if i >= limit - _CUT_WORD_BACK and i > 0:
            head = head[:i]
        else:
            j = limit
            while j > 0 and head[j - 1] in _CUT_TOKEN:
                j -= 1
            if limit - j <= _CUT_TOKEN_BACK:  # a longer run is a blob (base64 data, minified code), kept
                head = head[:j]
    return head.rstrip() + ellipsis
