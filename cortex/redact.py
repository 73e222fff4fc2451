"""Secret redaction: nothing that looks like a credential leaves this module.

Cortex promises that no secret reaches a record, the search index, the logs or
the injected block.  Every piece of transcript text goes through `clean()`
(or at least `redact()`) before it is stored anywhere.

    redact(text)          -> (text with secrets replaced, number of replacements)
    strip_private(text)   -> text without <private>...</private> spans
    clean(text)           -> redact(strip_private(text))
    contains_secret(text) -> bool

A secret is replaced by ``[REDACTED:<kind>]``.  Surrounding text is kept so a
memory stays readable: for ``KEY=value`` forms only the value goes
(``API_KEY=[REDACTED:env_secret]``), for URLs only the password
(``postgres://user:[REDACTED:url_password]@host/db``).

Kinds: anthropic_key, openai_key, aws_access_key, aws_secret, github_token,
gitlab_token, npm_token, huggingface_token, slack_token, slack_webhook,
stripe_key, google_api_key, google_oauth, jwt, bearer, auth_header,
private_key, url_password, password, env_secret, high_entropy.

The rules run in a fixed order, most specific first; each later rule sees the
placeholders of the earlier ones and leaves them alone, so `redact` is
idempotent.  The text may be raw JSON (a transcript line), so quotes may be
escaped (``\\"password\\": \\"...\\"``) and line breaks may be the two
characters ``\\n``; the patterns allow for both.

Precision: git SHAs, UUIDs, hashes, message/tool ids, paths and long
identifiers are left alone.  The entropy rule only looks at tokens within a
few words *after* a trigger word (key, secret, token, password, credential,
auth) and needs upper case, lower case and digits mixed the way random
strings mix them.

Standard library only; every pattern is compiled once at import, and every
rule has a cheap substring pre-check so typical text skips most of them.
"""
from __future__ import annotations

import math
import re
from typing import Callable, List, Optional, Tuple

__all__ = ["redact", "strip_private", "clean", "contains_secret", "placeholder"]

_PH_PREFIX = "[REDACTED:"


def placeholder(kind: str) -> str:
    return f"{_PH_PREFIX}{kind}]"


# Left boundary: not glued to a preceding letter/digit, except that the
# letter may be the tail of a JSON escape such as \n or \t.
_LB = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt]))"
# Right boundary for fixed-length tokens.
_RB = r"(?![A-Za-z0-9])"


# ---------------------------------------------------------------------------
# value helpers
# ---------------------------------------------------------------------------

def _entropy(s: str) -> float:
    n = len(s)
    if n == 0:
        return 0.0
    counts: dict = {}
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


_ALPHA_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+")


def _wordy(s: str) -> bool:
    """True for identifiers built from words (handleUserAuthToken2, my_api_key).

    Random base62/base64 strings switch case and class every one or two
    characters; identifiers are made of runs of 3+ letters.
    """
    runs = _ALPHA_RUN.findall(s)
    if not runs:
        return False
    letters = sum(len(r) for r in runs)
    return letters / len(runs) >= 3.5


_PLACEHOLDER_WORDS = frozenset(
    """
    none null nil true false undefined yes no on off
    changeme change_me change-me changeit replaceme replace_me
    password passwd pass pwd secret secrets token apikey api_key api-key key
    example sample placeholder dummy fake test testing todo tbd fixme
    redacted hidden masked removed empty default required optional
    string str bytes int integer number bool boolean any object unknown
    value foo bar baz xxx n/a na
    """.split()
)
_CODE_REF = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\s*[(\[]")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_YOUR = re.compile(r"(?:your|insert|enter|replace|put|add)[-_ ]?(?:own[-_ ]?|real[-_ ]?|actual[-_ ]?)?"
                   r"(?:[a-z]+[-_ ]?){0,3}(?:key|token|secret|password|pass|here|id)", re.I)


def _is_placeholder(v: str) -> bool:
    s = v.strip().strip("\"'`").strip()
    if not s:
        return True
    c = s[0]
    if c in "$<{%" or s.startswith(_PH_PREFIX):
        return True
    low = s.lower()
    if low in _PLACEHOLDER_WORDS or "redacted" in low or "placeholder" in low:
        return True
    if len(set(s)) <= 2:  # xxxx, ****, ...., ab
        return True
    if s.startswith(("***", "...", "\u2026", "xxx", "XXX")):
        return True
    if _YOUR.match(s):
        return True
    if _CODE_REF.match(s) or _DOTTED.fullmatch(s):  # os.environ["X"], get_token(), settings.KEY
        return True
    return False


_PATHLIKE = re.compile(r"(?:~|\.{1,2})?/[\w.\-/]*|[\w.\-/]+\.(?:pem|key|json|p12|pfx|crt|cer|txt|env|ya?ml|toml|ini|cfg|conf|gpg|asc)")


def _is_pathlike(s: str) -> bool:
    if not _PATHLIKE.fullmatch(s):
        return False
    if s.startswith(("~/", "./", "../")) or "." in s.rsplit("/", 1)[-1]:
        return True
    return s.count("/") >= 2 and _wordy(s)


def _looks_random(s: str, min_len: int = 8) -> bool:
    """Weak-key values: long enough, mixed, and not built from words."""
    if len(s) < min_len:
        return False
    up, lo, dg = _classes(s)
    if (up + lo + dg) < 2:
        # a long single-class value (e.g. 32+ hex digits or a numeric code) still counts
        return len(s) >= 24 and _entropy(s) >= 3.0 and (dg or len(s) >= 32)
    if _wordy(s) and not dg:
        return False
    if _wordy(s) and _entropy(s) < 3.6:
        return False
    return _entropy(s) >= 2.5


# ---------------------------------------------------------------------------
# rules with a fixed shape (prefix tokens, URLs, headers, PEM)
# ---------------------------------------------------------------------------

class _Rule:
    __slots__ = ("kind", "rx", "needles", "group", "check", "kind_of")

    def __init__(self, kind: str, pattern: str, needles: Tuple[str, ...], group: int = 0,
                 check: Optional[Callable[[str], bool]] = None, flags: int = 0,
                 kind_of: Optional[Callable[["re.Match[str]"], str]] = None):
        self.kind = kind
        self.rx = re.compile(pattern, flags)
        self.needles = needles
        self.group = group
        self.check = check
        self.kind_of = kind_of


def _mixed3(s: str) -> bool:
    up, lo, dg = _classes(s)
    return up and lo and dg


def _not_trivial(s: str) -> bool:
    return len(set(s)) > 3


def _has_digit(s: str) -> bool:
    return any("0" <= ch <= "9" for ch in s)


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
    return len(s) >= 20 and _entropy(s) >= 3.5 and _mixed3(s)


_PEM_HDR = r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"

_RULES: List[_Rule] = [
    # PEM private keys, closed form (whole block) then truncated form (header + base64 body)
    _Rule("private_key", _PEM_HDR + r".{0,40000}?" + _PEM_END, ("PRIVATE KEY",), flags=re.S),
    _Rule("private_key",
          _PEM_HDR + r"(?:[A-Za-z0-9+/=\r\n]|\\+[nrt]|(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\r\n\\]*)*",
          ("PRIVATE KEY",)),
    _Rule("jwt", _LB + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", ("eyJ",)),
    _Rule("anthropic_key", _LB + r"sk-ant-[A-Za-z0-9_\-]{20,}", ("sk-ant-",), check=_not_trivial),
    _Rule("openai_key", _LB + r"sk-(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_\-]{20,})", ("sk-",),
          check=lambda s: _mixed3(s[3:])),
    _Rule("aws_access_key",
          _LB + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}" + _RB,
          ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"),
          check=_not_trivial),
    _Rule("github_token", _LB + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{30,255})",
          ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), check=_mixed3),
    _Rule("gitlab_token", _LB + r"gl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_\-]{20,}", ("gl",),
          check=lambda s: _has_digit(s[5:]) or _mixed3(s)),
    _Rule("npm_token", _LB + r"npm_[A-Za-z0-9]{36}" + _RB, ("npm_",), check=_mixed3),
    _Rule("huggingface_token", _LB + r"hf_[A-Za-z0-9]{30,}" + _RB, ("hf_",), check=_mixed3),
    _Rule("slack_webhook", r"(https?://hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9_/+\-]{8,})",
          ("hooks.slack.com",), group=2),
    _Rule("slack_token", _LB + r"(?:xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,})", ("xox", "xapp-"),
          check=_has_digit),
    _Rule("stripe_key", _LB + r"(?:(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9+/=]{20,})",
          ("_live_", "_test_", "whsec_"), check=lambda s: _has_digit(s) and _not_trivial(s)),
    _Rule("google_api_key", _LB + r"AIza[0-9A-Za-z_\-]{30,}", ("AIza",)),
    _Rule("google_oauth", _LB + r"(?:ya29\.[0-9A-Za-z_\-]{20,}|1//0[0-9A-Za-z_\-]{30,})", ("ya29.", "1//0"),
          check=_not_trivial),
    # scheme://user:password@host  -> keep scheme, user and host
    _Rule("url_password",
          r"(?<![A-Za-z0-9+.\-])([a-zA-Z][a-zA-Z0-9+.\-]{1,30}://[^\s:/?#@\"'`\\<>\[\]]*):([^\s/?#\"'`\\<>]+)@",
          ("://",), group=2, check=_pw_ok),
    # scheme://<token>@host (token used as the user name)
    _Rule("url_password", r"(?<![A-Za-z0-9+.\-])[a-zA-Z][a-zA-Z0-9+.\-]{1,30}://([A-Za-z0-9_\-]{20,})@",
          ("://",), group=1, check=_userinfo_token_ok),
    # Authorization: Bearer <token>, and "bearer <token>" anywhere
    _Rule("bearer", _LB + r"(?i:bearer)(?:\s|\\[nrt]|%20|\+)+([A-Za-z0-9\-._~+/]+=*)",
          ("earer", "EARER"), group=1, check=_bearer_ok),
    # Authorization: Basic/Token/<raw> <credential>
    _Rule("auth_header",
          r"(?i:authorization)\\*[\"']?\s*[:=]\s*\\*[\"']?\s*(?:(?i:basic|token|digest|bot|apikey|key|sso-key)\s+)?"
          r"([A-Za-z0-9\-._~+/:]{6,}=*)",
          ("uthorization", "UTHORIZATION"), group=1,
          check=lambda s: not _is_placeholder(s) and (_looks_random(s, 6) or s.endswith("="))),
    # curl -u user:pass / --user user:pass
    _Rule("password", r"(?<=\s)(?:-u|--user)\s+\\*[\"']?[^\s:\"'\\]+:([^\s\"'\\]+)", ("-u", "--user"), group=1,
          check=lambda s: _pw_ok(s) and not s.isdigit()),
    # .netrc: machine h login u password p
    _Rule("password", r"\blogin\s+\S+\s+password\s+(\S+)", ("password",), group=1, check=_pw_ok),
    # mysql -pSECRET
    _Rule("password", r"\bmysql(?:dump|admin|sh)?\b[^\n]{0,200}?\s-p([^\s\"'\\]+)", ("mysql",), group=1,
          check=_pw_ok),
]


def _apply_rule(rule: _Rule, text: str, counter: List[int]) -> str:
    g = rule.group
    kind = rule.kind
    check = rule.check

    def repl(m: "re.Match[str]") -> str:
        val = m.group(g)
        if val.startswith(_PH_PREFIX):
            return m.group(0)
        if check is not None and not check(val):
            return m.group(0)
        counter[0] += 1
        whole = m.group(0)
        if g == 0:
            return placeholder(kind)
        off = m.start()
        a, b = m.span(g)
        return whole[: a - off] + placeholder(kind) + whole[b - off:]

    return rule.rx.sub(repl, text)


# ---------------------------------------------------------------------------
# KEY=value / "key": "value" / key: value / --key value
# ---------------------------------------------------------------------------

# Keyword anywhere inside a key name; the whole name is then read around it.
_KV_TRIGGER = re.compile(r"(?i:passw|passphrase|pass\b|_pass|pwd|secret|token|api[_\-]?key|access[_\-]?key|"
                         r"private[_\-]?key|credential|auth|_pw\b|cookie|session[_\-]?key|signing[_\-]?key|"
                         r"encryption[_\-]?key|master[_\-]?key|client[_\-]?key|license[_\-]?key|account[_\-]?key|conn"
                         r"(?:ection)?[_\-]?str)")
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KV_NEEDLES = ("ass", "ASS", "wd", "WD", "ecret", "ECRET", "oken", "OKEN", "ey", "EY", "uth", "UTH", "redential",
               "REDENTIAL", "ookie", "OOKIE", "_pw", "_PW", "onn", "ONN")

# After the key: optional closing quote(s)/bracket, then a separator.
_KV_SEP = re.compile(r"(?P<close>\\*[\"'`]?\]?)(?P<sep>[ \t]*(?::=|=>|==|=|:)[ \t]*|[ \t]+)")
_QUOTE_OPEN = re.compile(r"\\*[\"'`]")
_UNQUOTED = re.compile(r"(?:[^\s\"'`\\&;,<>]|\\\\|\\/|\\u[0-9a-fA-F]{4}|,(?=\S))+")
_CLOSERS: dict = {}

_SECRET_KEY_SUFFIX_SKIP = (
    "url", "uri", "endpoint", "path", "file", "filename", "dir", "name", "type", "mode", "method", "header",
    "length", "len", "count", "limit", "expiry", "expires", "expiresin", "expiresat", "expiration", "ttl",
    "timeout", "provider", "scheme", "required", "enabled", "enable", "disabled", "version", "prefix", "id",
    "ids", "index", "size", "status", "env", "var", "field", "label", "hint", "policy", "rotation", "format",
    "location", "store", "storage", "cache", "source", "kind", "usage", "budget", "stats", "info", "error",
    "errors", "flow", "strategy", "manager", "service", "server", "client", "handler", "helper", "config",
    "settings", "options", "request", "response", "state", "store", "ref", "refs", "class", "module", "fn",
    "func", "callback", "hook", "test", "tests", "spec", "check", "validator", "validation", "input", "prompt",
    "dialog", "form", "button", "page", "view", "screen", "modal", "component", "reset", "changed", "updated",
    "created", "at", "on", "by", "date", "time", "valid", "invalid", "missing", "set", "exists", "present",
    "counter", "max", "min", "total", "used", "left", "remaining", "tokens",
)
_SPLIT_KEY = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _key_parts(name: str) -> List[str]:
    out: List[str] = []
    for chunk in re.split(r"[_.\-]+", name):
        out.extend(p.lower() for p in _SPLIT_KEY.findall(chunk))
    return out


def _key_kind(name: str) -> Optional[Tuple[str, bool]]:
    """(kind, strong) for a secret-bearing key name, or None.

    strong keys (password, secret, api_key ...) redact any real-looking value;
    weak keys (token, auth, credential, cookie) need a random-looking value.
    """
    bare = name.lstrip("-")
    low = bare.lower()
    if not low or low in ("pwd", "oldpwd"):
        return None
    parts = _key_parts(bare)
    if not parts:
        return None
    last = parts[-1]
    if last in _SECRET_KEY_SUFFIX_SKIP and len(parts) > 1:
        return None
    flat = "".join(parts)
    if ("passw" in flat or "passphrase" in flat or "pwd" in parts or "pass" in parts or "pw" in parts
            or flat.endswith("pass")):
        if last in ("passed", "passes", "passing", "through", "thru", "by"):
            return None
        return ("password", True)
    if "secret" in flat:
        if "aws" in flat or "secretaccesskey" in flat:
            return ("aws_secret", True)
        return ("env_secret", True)
    if re.search(r"(?:api|access|private|session|signing|encryption|master|client|license|account|auth|app)key",
                 flat):
        return ("env_secret", True)
    if "connstr" in flat or "connectionstring" in flat:
        return ("env_secret", True)
    if any(p in ("token", "auth", "authorization", "credential", "credentials", "cookie", "creds", "authtoken",
                 "apitoken", "accesstoken", "refreshtoken", "idtoken", "bearer", "oauth")
           for p in parts):
        return ("env_secret", False)
    if flat.endswith(("token", "auth", "credential", "credentials")):
        return ("env_secret", False)
    return None


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
    """(start, end, quoted) of the value beginning at pos."""
    m = _QUOTE_OPEN.match(text, pos)
    if m is not None:
        seq = m.group(0)
        start = m.end()
        cm = _closer(seq).search(text, start, min(len(text), start + 2048))
        if cm is not None:
            end = cm.start()
            nl = text.find("\n", start, end)
            if nl < 0:
                if seq == '"' or seq == "'":
                    # plain string: an escaped quote inside does not close it
                    j = start
                    while True:
                        k = text.find(seq, j, start + 2048)
                        if k < 0:
                            break
                        bs = 0
                        while k - 1 - bs >= start and text[k - 1 - bs] == "\\":
                            bs += 1
                        if bs % 2 == 0:
                            end = k
                            break
                        j = k + 1
                return start, end, True
        pos = start  # unclosed quote: read it as an unquoted value
    um = _UNQUOTED.match(text, pos)
    if um is None:
        return None
    v = _strip_trailing(um.group(0))
    if not v:
        return None
    return pos, pos + len(v), False


def _kv_pass(text: str, counter: List[int]) -> str:
    spans: List[Tuple[int, int, str]] = []
    last_key_end = -1
    n = len(text)
    for t in _KV_TRIGGER.finditer(text):
        ks = t.start()
        if ks < last_key_end:
            continue
        while ks > 0 and text[ks - 1] in _KEY_CHARS:
            ks -= 1
        # "\nAPI_KEY" inside JSON: drop the escape's letter from the key
        if ks > 0 and text[ks - 1] == "\\" and text[ks] in "nrt":
            ks += 1
        ke = t.end()
        while ke < n and text[ke] in _KEY_CHARS:
            ke += 1
        last_key_end = ke
        key = text[ks:ke].rstrip(".-")
        ke = ks + len(key)
        if not key or (ks > 0 and text[ks - 1] in "${"):  # $API_KEY is a reference, not an assignment
            continue
        info = _key_kind(key)
        if info is None:
            continue
        kind, strong = info
        sm = _KV_SEP.match(text, ke)
        if sm is None:
            continue
        sep = sm.group("sep")
        if not sep.strip():
            # whitespace only: allowed for command-line flags (--password x)
            if not key.startswith("-"):
                continue
        vs_pos = sm.end()
        rv = _read_value(text, vs_pos)
        if rv is None:
            continue
        vs, ve, quoted = rv
        val = text[vs:ve]
        if not val or val.startswith(_PH_PREFIX) or _is_placeholder(val):
            continue
        if "://" in val:  # a URL: the URL rule already dealt with any password in it
            continue
        if not quoted:
            if sep.strip() in ("=", "==") and sep != sep.strip() and re.fullmatch(r"[A-Za-z_]\w*", val) \
                    and not _has_digit(val):
                continue  # code: `password = password_input`
            if val in ("{", "[", "(") or val[0] in "{[(":
                continue
        if _is_pathlike(val):
            continue
        if strong:
            if val.isdigit() and len(val) <= 4:
                continue
        else:
            if not _looks_random(val):
                continue
        spans.append((vs, ve, kind))
    if not spans:
        return text
    out: List[str] = []
    prev = 0
    for vs, ve, kind in spans:
        if vs < prev:
            continue
        out.append(text[prev:vs])
        out.append(placeholder(kind))
        prev = ve
        counter[0] += 1
    out.append(text[prev:])
    return "".join(out)


# - name: DB_PASSWORD \n value: hunter2   (docker-compose / k8s / GitHub Actions env lists)
_NAME_VALUE = re.compile(r"(?i:name)\\*[\"']?\s*[:=]\s*\\*[\"']?([A-Za-z0-9_.\-]{2,80})\\*[\"']?\s*,?"
                         r"(?:\s|\\[nrt])*(?i:value)\\*[\"']?\s*[:=]\s*")


def _name_value_pass(text: str, counter: List[int]) -> str:
    spans = []
    for m in _NAME_VALUE.finditer(text):
        info = _key_kind(m.group(1))
        if info is None:
            continue
        rv = _read_value(text, m.end())
        if rv is None:
            continue
        vs, ve, _ = rv
        val = text[vs:ve]
        if not val or _is_placeholder(val) or (not info[1] and not _looks_random(val)):
            continue
        spans.append((vs, ve, info[0]))
    if not spans:
        return text
    out, prev = [], 0
    for vs, ve, kind in spans:
        out.append(text[prev:vs])
        out.append(placeholder(kind))
        prev = ve
        counter[0] += 1
    out.append(text[prev:])
    return "".join(out)


# ---------------------------------------------------------------------------
# high-entropy tokens near a trigger word
# ---------------------------------------------------------------------------

_ENT_TRIGGER = re.compile(r"(?<![a-z])(?i:secret|token(?!s|iz)|passw(?:or)?d|passwd|pwd|credentials?|"
                          r"api[-_ ]?key|access[-_ ]?key|private[-_ ]?key|keys?|auth|passphrase|bearer)(?![a-rt-z])")
_ENT_NEEDLES = ("ecret", "ECRET", "oken", "OKEN", "ass", "ASS", "wd", "WD", "redential", "REDENTIAL",
                "ey", "EY", "uth", "UTH")
_CANDIDATE = re.compile(r"(?:(?<=\\[nrt])|(?<![A-Za-z0-9+/_=\-\\]))[A-Za-z0-9+/_=\-]{20,}")
_ENT_WINDOW = 48  # characters after the trigger word in which a token may start
_ID_PREFIX = re.compile(r"(?:msg|toolu|call|req|resp|rs|fc|ws|run|file|chatcmpl|evt|org|proj|user|asst|thread|"
                        r"batch|ft|ctx|sess|session|agent|task|step|item|srvtoolu|bdrk)[_\-]")
_HEX_ISH = re.compile(r"[0-9a-fA-F\-]+")


def _entropy_candidate_ok(tok: str) -> bool:
    core = tok.rstrip("=")
    if len(core) < 20 or len(core) > 512:
        return False
    if _ID_PREFIX.match(core):
        return False
    if _HEX_ISH.fullmatch(core):  # SHAs, UUIDs, hashes: a hex string alone is not a secret
        return False
    if not _mixed3(core):
        return False
    if _entropy(core) < 3.5:
        return False
    if _wordy(core):
        return False
    if "/" in core and _is_pathlike(core):
        return False
    return True


def _entropy_pass(text: str, counter: List[int]) -> str:
    spans: List[Tuple[int, int]] = []
    scanned_to = 0
    n = len(text)
    for t in _ENT_TRIGGER.finditer(text):
        start = max(t.end(), scanned_to)
        limit = t.end() + _ENT_WINDOW
        if start >= limit:
            continue
        pos = start
        while pos < limit:
            c = _CANDIDATE.search(text, pos, min(n, limit + 600))
            if c is None or c.start() >= limit:
                break
            tok = c.group(0)
            # candidate must not be inside a redaction placeholder
            if _entropy_candidate_ok(tok) and not text.startswith(_PH_PREFIX, max(0, c.start() - 10)):
                spans.append((c.start(), c.end()))
            pos = c.end()
        scanned_to = max(scanned_to, pos, limit)
    if not spans:
        return text
    out, prev = [], 0
    for a, b in spans:
        if a < prev:
            continue
        out.append(text[prev:a])
        out.append(placeholder("high_entropy"))
        prev = b
        counter[0] += 1
    out.append(text[prev:])
    return "".join(out)


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------

def redact(text: str) -> Tuple[str, int]:
    """Replace every secret in text with [REDACTED:<kind>]; return (text, count)."""
    if not text:
        return text, 0
    counter = [0]
    for rule in _RULES:
        for nd in rule.needles:
            if nd in text:
                text = _apply_rule(rule, text, counter)
                break
    if any(nd in text for nd in _KV_NEEDLES):
        text = _kv_pass(text, counter)
        if "alue" in text or "ALUE" in text:
            text = _name_value_pass(text, counter)
    if any(nd in text for nd in _ENT_NEEDLES):
        text = _entropy_pass(text, counter)
    return text, counter[0]


_PRIVATE_TAG = re.compile(r"(?:<|\\u003[cC])(/?)(?i:private)(?:>|\\u003[eE])")


def strip_private(text: str) -> str:
    """Remove <private>...</private> spans (nested, multi-line; unclosed runs to the end)."""
    if "rivate" not in text and "RIVATE" not in text:
        return text
    out: List[str] = []
    depth = 0
    prev = 0
    for m in _PRIVATE_TAG.finditer(text):
        closing = bool(m.group(1))
        if not closing:
            if depth == 0:
                out.append(text[prev:m.start()])
            depth += 1
        else:
            if depth == 0:
                # stray closing tag: drop the tag, keep the text
                out.append(text[prev:m.start()])
                prev = m.end()
                continue
            depth -= 1
            if depth == 0:
                prev = m.end()
    if depth == 0:
        out.append(text[prev:])
    return "".join(out)


def clean(text: str) -> Tuple[str, int]:
    """strip_private, then redact."""
    return redact(strip_private(text))


def contains_secret(text: str) -> bool:
    return redact(text)[1] > 0
