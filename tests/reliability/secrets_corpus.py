"""Real-looking fake secrets, generated from a seed (nothing here is a live credential).

`corpus(seed)` returns FakeSecret items: `text` is how the secret appears in a transcript (with its key name,
prefix or header), `value` is the part that must never be stored (the random part: public prefixes such as
`sk-ant-api03-` or `AKIA` are not secret and are left out of it; `fragments` when there are several such
parts).  `survivors(haystack, secrets)` says which secrets show up in a text, whole or in part (any
12-character window of a fragment).

`samples(seed, per_kind)` (below; the unit tests of tests/model/test_redact.py use it): every kind the redactor
names, in many surrounding forms (bare, KEY=, JSON, YAML, URL, header, sentence, code ...).

`catalog(seed)` (at the end): the vendor formats (FORMATS, over 100 of them, learned from public
secret-scanning rule sets) each in every position (POSITIONS: prose, KEY=value, JSON string, command line, URL,
config/code file, a cut text ending inside the secret, a line-split or wrapped form).  One generator for
all the secret tests.
"""
from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

B62 = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = B62 + "+/"
URLSAFE = B62 + "-_"


@dataclass(frozen=True)
class FakeSecret:
    kind: str
    text: str    # as it appears in a transcript
    value: str   # what must never be stored
    pathsafe: bool = True  # can be used inside a file or folder name
    fragments: tuple = ()  # several random parts (defaults to (value,))

    def parts(self):
        return self.fragments or (self.value,)


def _rand(r, alphabet, n):
    while True:
        s = "".join(r.choice(alphabet) for _ in range(n))
        # real keys mix classes; make sure every generated one does (a key of one class reads as a word)
        if alphabet in (B62, B64, URLSAFE) and not (any(c.isupper() for c in s) and any(c.islower() for c in s)
                                                    and any(c.isdigit() for c in s)):
            continue
        return s


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def corpus(seed: int = 7) -> list:
    r = random.Random(seed)
    out = []

    def add(kind, text, value, pathsafe=True):
        out.append(FakeSecret(kind, text, value, pathsafe))

    v = _rand(r, URLSAFE, 93) + "AA"
    add("anthropic", "sk-ant-api03-" + v, v)
    v = _rand(r, URLSAFE, 56)
    add("openai-project", "sk-proj-" + v, v)
    v = _rand(r, B62, 48)
    add("openai-legacy", "sk-" + v, v)
    v = _rand(r, UPPER_DIGITS, 16)
    add("aws-access-key", "AKIA" + v, v)
    v = _rand(r, B64, 40)
    add("aws-secret", "aws_secret_access_key = " + v, v, pathsafe=False)
    v = _rand(r, B62, 36)
    add("github-classic", "ghp_" + v, v)
    v = _rand(r, B62, 22) + "_" + _rand(r, B62, 59)
    add("github-fine-grained", "github_pat_" + v, v)
    v = _rand(r, B62, 20)
    add("gitlab", "glpat-" + v, v)
    v = "%d-%d-%s" % (r.randrange(10**10, 10**11), r.randrange(10**11, 10**12), _rand(r, B62, 24))
    add("slack-bot", "xoxb-" + v, v)
    v = "T%s/B%s/%s" % (_rand(r, UPPER_DIGITS, 8), _rand(r, UPPER_DIGITS, 8), _rand(r, B62, 24))
    add("slack-webhook", "https://hooks.slack.com/services/" + v, v.split("/")[-1], pathsafe=False)
    v = _rand(r, B62, 24)
    add("stripe-live", "sk_live_" + v, v)
    v = _rand(r, URLSAFE, 35)
    add("google-api", "AIza" + v, v)
    v = _rand(r, B62, 36)
    add("npm", "npm_" + v, v)
    v = _rand(r, B62, 34)
    add("huggingface", "hf_" + v, v)
    v = _rand(r, URLSAFE, 64)
    add("google-oauth", "ya29." + v, v)
    head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64url(json.dumps({"sub": _rand(r, B62, 12), "name": "Ada", "iat": 1767225600}).encode())
    sig = _rand(r, URLSAFE, 43)
    add("jwt", "eyJ" + head[3:] + ".eyJ" + body[3:] + "." + sig, sig)
    lines = [_rand(r, B64, 64) for _ in range(6)]
    pem = "-----BEGIN RSA PRIVATE KEY-----\n%s\n-----END RSA PRIVATE KEY-----" % "\n".join(lines)
    add("pem-private-key", pem, lines[2], pathsafe=False)
    v = _rand(r, B62, 18)
    add("url-password", "postgres://admin:%s@db.internal:5432/app" % v, v, pathsafe=False)
    v = _rand(r, URLSAFE, 40)
    add("bearer", "Authorization: Bearer " + v, v, pathsafe=False)
    v = _rand(r, B62, 14) + "!x9"
    add("env-password", "DATABASE_PASSWORD=" + v, v, pathsafe=False)
    v = _rand(r, B62, 32)
    add("export-api-key", 'export API_KEY="%s"' % v, v, pathsafe=False)
    v = _rand(r, B62, 32)
    add("json-client-secret", '{"client_secret": "%s"}' % v, v, pathsafe=False)
    v = _rand(r, B62, 32)
    add("token-in-prose", "the deploy token is " + v, v, pathsafe=False)
    v = _rand(r, B62, 16)
    add("curl-user", "curl -u deploy:%s https://api.internal/v1" % v, v, pathsafe=False)
    out.extend(_external(seed))
    return out


def _external(seed, per_kind=2):
    extra = []
    for smp in samples(seed=seed, per_kind=per_kind):
        frags = tuple(f for f in smp.fragments if len(f) >= 8)
        if frags:
            extra.append(FakeSecret("ext-%s-%s" % (smp.kind, smp.form), smp.text, frags[0], pathsafe=False,
                                    fragments=frags))
    return extra


def windows(value: str, size: int = 12, step: int = 4):
    if len(value) <= size:
        return [value]
    return [value[i:i + size] for i in range(0, len(value) - size + 1, step)] + [value[-size:]]


def survivors(haystack: str, secrets, fold: bool = False) -> list:
    """The secrets whose value (or any 12-character window of it) occurs in haystack (`fold`: in any case,
    for the search engine's terms, which are lower-cased)."""
    if fold:
        haystack = haystack.lower()
        return [s for s in secrets if any(w.lower() in haystack for v in s.parts() for w in windows(v))]
    return [s for s in secrets if any(w in haystack for v in s.parts() for w in windows(v))]


# ---------------------------------------------------------------------------------------------------- samples(): every kind, many forms

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
B64URL = ALNUM + "-_"
B64S = ALNUM + "+/"  # (B64 above orders the letters differently: the seeded samples depend on it)
HEX = "0123456789abcdef"
B32 = UPPER + "234567"
PW_SPECIAL = "!%^*-_+.~@"


@dataclass(frozen=True)
class Sample:
    kind: str                   # expected [REDACTED:<kind>] for vendor tokens; family name otherwise
    exact_kind: bool            # True when the placeholder kind must be exactly `kind`
    secret: str                 # the whole secret as written
    fragments: Tuple[str, ...]  # random parts (>= 8 chars each) that must not survive redaction
    text: str                   # the secret in its surrounding form
    form: str                   # name of that form


def _plain(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """Random string that has upper case, lower case and a digit (as real keys almost always do)."""
    while True:
        s = _plain(rng, alphabet, n)
        if any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s):
            return s


def _frags(*parts: str) -> Tuple[str, ...]:
    return tuple(p for p in parts if len(p) >= 8)


# ---------------------------------------------------------------------------
# secret makers: (secret, fragments)
# ---------------------------------------------------------------------------

def anthropic_key(rng):
    kind = rng.choice(["api03", "api03", "admin01", "oat01"])
    body = _mixed(rng, B64URL, 93)
    s = f"sk-ant-{kind}-{body}AA"
    return s, _frags(body)


def openai_key(rng):
    style = rng.choice(["legacy", "proj", "svcacct", "admin"])
    if style == "legacy":
        a, b = _mixed(rng, ALNUM, 20), _mixed(rng, ALNUM, 20)
        return f"sk-{a}T3BlbkFJ{b}", _frags(a, b)
    body = _mixed(rng, B64URL, rng.choice([48, 64, 100, 156]))
    return f"sk-{style}-{body}", _frags(body)


def aws_access_key(rng):
    body = _plain(rng, B32, 16)
    return rng.choice(["AKIA", "AKIA", "ASIA"]) + body, _frags(body)


def aws_secret(rng):
    s = _mixed(rng, B64S, 40)
    return s, _frags(s)


def github_token(rng):
    if rng.random() < 0.2:
        a, b = _plain(rng, ALNUM, 22), _plain(rng, ALNUM, 59)
        return f"github_pat_{a}_{b}", _frags(a, b)
    body = _plain(rng, ALNUM, 36)
    return rng.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + body, _frags(body)


def gitlab_token(rng):
    body = _plain(rng, B64URL, 20)
    return "glpat-" + body, _frags(body)


def npm_token(rng):
    body = _plain(rng, ALNUM, 36)
    return "npm_" + body, _frags(body)


def huggingface_token(rng):
    body = _plain(rng, UPPER + LOWER, 34)
    return "hf_" + body, _frags(body)


def pypi_token(rng):
    body = _plain(rng, B64URL, rng.randint(120, 180))
    return "pypi-AgEIcHlwaS5vcmc" + body, _frags(body)


def sendgrid_key(rng):
    a, b = _plain(rng, B64URL, 22), _plain(rng, B64URL, 43)
    return f"SG.{a}.{b}", _frags(a, b)


def slack_token(rng):
    style = rng.choice(["xoxb", "xoxp", "xoxa", "xoxr", "xapp"])
    if style == "xoxb":
        a, b, c = _plain(rng, DIGITS, 12), _plain(rng, DIGITS, 13), _plain(rng, ALNUM, 24)
        return f"xoxb-{a}-{b}-{c}", _frags(a, b, c)
    if style == "xoxp":
        a, b, c, d = (_plain(rng, DIGITS, 12), _plain(rng, DIGITS, 12), _plain(rng, DIGITS, 13),
                      _plain(rng, HEX, 32))
        return f"xoxp-{a}-{b}-{c}-{d}", _frags(a, b, c, d)
    if style in ("xoxa", "xoxr"):
        a, b, c = _plain(rng, DIGITS, 12), _plain(rng, DIGITS, 13), _plain(rng, ALNUM, 32)
        return f"{style}-2-{a}-{b}-{c}", _frags(a, b, c)
    a, b, c = "A" + _plain(rng, UPPER + DIGITS, 10), _plain(rng, DIGITS, 13), _plain(rng, HEX, 64)
    return f"xapp-1-{a}-{b}-{c}", _frags(a, b, c)


def slack_webhook(rng):
    t, b, s = "T" + _plain(rng, UPPER + DIGITS, 10), "B" + _plain(rng, UPPER + DIGITS, 10), _plain(rng, ALNUM, 24)
    return f"https://hooks.slack.com/services/{t}/{b}/{s}", _frags(s)


def stripe_key(rng):
    prefix = rng.choice(["sk_live_", "rk_live_", "sk_test_", "pk_live_", "pk_test_", "rk_test_", "whsec_"])
    body = _mixed(rng, ALNUM, rng.choice([24, 32, 99]))
    return prefix + body, _frags(body)


def google_api_key(rng):
    body = _plain(rng, B64URL, 35)
    return "AIza" + body, _frags(body)


def google_oauth(rng):
    if rng.random() < 0.7:
        body = _mixed(rng, B64URL, rng.randint(100, 180))
        return "ya29." + body, _frags(body)
    body = _mixed(rng, B64URL, rng.randint(60, 100))
    return "1//0" + body, _frags(body)


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(rng):
    alg = rng.choice(["HS256", "RS256", "ES256"])
    header = {"alg": alg, "typ": "JWT"}
    if alg != "HS256":
        header["kid"] = _plain(rng, ALNUM, 16)
    payload = {"sub": _plain(rng, DIGITS, 10), "name": _plain(rng, LOWER, 8),
               "iat": rng.randint(1_600_000_000, 1_800_000_000), "exp": rng.randint(1_800_000_000, 1_900_000_000),
               "sid": _plain(rng, ALNUM, 20)}
    h = _b64u(json.dumps(header, separators=(",", ":")).encode())
    p = _b64u(json.dumps(payload, separators=(",", ":")).encode())
    sig = _b64u(bytes(rng.getrandbits(8) for _ in range(rng.choice([32, 64, 256]))))
    return f"{h}.{p}.{sig}", _frags(p, sig)


def private_key(rng):
    label = rng.choice(["RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY",
                        "DSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK"])
    lines = [_plain(rng, B64S, 64) for _ in range(rng.randint(4, 20))]
    lines.append(_plain(rng, B64S, rng.randint(8, 60)) + rng.choice(["", "=", "=="]))
    head = []
    if label == "RSA PRIVATE KEY" and rng.random() < 0.3:
        head = ["Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC," + _plain(rng, "0123456789ABCDEF", 32), ""]
    if label.startswith("PGP"):
        head = ["Version: GnuPG v2", ""]
    pem = "\n".join([f"-----BEGIN {label}-----", *head, *lines, f"-----END {label}-----"])
    return pem, _frags(*lines)


def password(rng):
    first = rng.choice(ALNUM)
    body = _plain(rng, ALNUM + PW_SPECIAL, rng.randint(9, 23))
    s = first + body
    if not any(c.isdigit() for c in s):
        s += str(rng.randint(0, 9))
    return s, _frags(s)


def url_password(rng):
    body = _plain(rng, ALNUM + "-_.~!*", rng.randint(9, 23))
    s = rng.choice(ALNUM) + body
    if rng.random() < 0.15:
        s = s[:4] + "%40" + s[4:]
    return s, _frags(s)


def opaque_token(rng):
    """A non-prefixed API token / env secret value."""
    style = rng.random()
    if style < 0.7:
        s = _mixed(rng, ALNUM, rng.randint(24, 64))
    elif style < 0.85:
        s = _mixed(rng, B64URL, rng.randint(24, 64))
    else:
        s = _plain(rng, HEX, rng.choice([32, 40, 64]))
    return s, _frags(s)


def entropy_token(rng):
    s = _mixed(rng, rng.choice([ALNUM, ALNUM, B64URL, B64S]), rng.randint(20, 64))
    return s, _frags(s)


def bearer_token(rng):
    s = _mixed(rng, ALNUM + "-._~", rng.randint(20, 80))
    s = rng.choice(ALNUM) + s  # do not start with punctuation
    return s, _frags(s)


# ---------------------------------------------------------------------------
# forms
# ---------------------------------------------------------------------------

# Standalone tokens are recognisable by shape alone, so every neutral context works.
TOKEN_FORMS: List[Tuple[str, Callable[[str, str], str]]] = [
    ("bare", lambda s, k: s),
    ("env", lambda s, k: f"{k}={s}"),
    ("export", lambda s, k: f"export {k}={s}"),
    ("env_quoted", lambda s, k: f'{k}="{s}"'),
    ("json", lambda s, k: json.dumps({k.lower(): s, "region": "eu-west-1"})),
    ("yaml", lambda s, k: f"credentials:\n  {k.lower()}: {s}\n  region: eu-west-1"),
    ("sentence", lambda s, k: f"I rotated the old one; the new value is {s} and it works now."),
    ("sentence_neutral", lambda s, k: f"Found {s} in the logs of the deploy job."),
    ("code_block", lambda s, k: f"```python\nclient = Client(api_key=\"{s}\")\n```"),
    ("line_start", lambda s, k: f"{s} <- this is what the CI printed"),
    ("line_end", lambda s, k: f"the CI printed: {s}"),
    ("parens", lambda s, k: f"(using {s})"),
    ("single_quotes", lambda s, k: f"key='{s}'"),
    ("backticks", lambda s, k: f"run with `{s}` set"),
    ("trailing_period", lambda s, k: f"It was {s}."),
    ("trailing_comma", lambda s, k: f"values: {s}, 42, true"),
    ("header", lambda s, k: f"-H 'X-Api-Key: {s}'"),
    ("url_query", lambda s, k: f"https://api.example.com/v1/items?key={s}&page=2"),
    ("python_dict", lambda s, k: f"config = {{'token': '{s}', 'retries': 3}}"),
    ("brackets", lambda s, k: f"[{s}]"),
]

ENV_NAMES = {
    "anthropic_key": "ANTHROPIC_API_KEY", "openai_key": "OPENAI_API_KEY", "aws_access_key": "AWS_ACCESS_KEY_ID",
    "github_token": "GITHUB_TOKEN", "gitlab_token": "GITLAB_TOKEN", "npm_token": "NPM_TOKEN",
    "huggingface_token": "HF_TOKEN", "pypi_token": "TWINE_PASSWORD", "sendgrid_key": "SENDGRID_API_KEY",
    "slack_token": "SLACK_BOT_TOKEN", "slack_webhook": "SLACK_WEBHOOK_URL",
    "stripe_key": "STRIPE_SECRET_KEY", "google_api_key": "GOOGLE_API_KEY", "google_oauth": "GOOGLE_ACCESS_TOKEN",
    "jwt": "SESSION_JWT",
}

STANDALONE: Dict[str, Callable] = {
    "anthropic_key": anthropic_key, "openai_key": openai_key, "aws_access_key": aws_access_key,
    "github_token": github_token, "gitlab_token": gitlab_token, "npm_token": npm_token,
    "huggingface_token": huggingface_token, "pypi_token": pypi_token, "sendgrid_key": sendgrid_key,
    "slack_token": slack_token, "slack_webhook": slack_webhook,
    "stripe_key": stripe_key, "google_api_key": google_api_key, "google_oauth": google_oauth, "jwt": jwt,
}

AWS_SECRET_FORMS = [
    ("ini", lambda s: f"[default]\naws_access_key_id = AKIA{'X' * 16}\naws_secret_access_key = {s}"),
    ("env", lambda s: f"AWS_SECRET_ACCESS_KEY={s}"),
    ("export_quoted", lambda s: f'export AWS_SECRET_ACCESS_KEY="{s}"'),
    ("json", lambda s: json.dumps({"AccessKeyId": "ASIA" + "Q" * 16, "SecretAccessKey": s})),
    ("yaml", lambda s: f"aws:\n  secret_access_key: {s}\n  region: us-east-1"),
    ("prose", lambda s: f"The aws secret is {s} (rotate it tomorrow)."),
    ("prose_key", lambda s: f"and the secret key: {s}"),
    ("cli", lambda s: f"aws configure set aws_secret_access_key {s}"),
    ("python", lambda s: f"boto3.client('s3', aws_secret_access_key='{s}')"),
]

PASSWORD_FORMS = [
    ("json", lambda s: json.dumps({"username": "admin", "password": s})),
    ("yaml", lambda s: f"database:\n  user: app\n  password: {s}\n  host: db"),
    ("env", lambda s: f"DB_PASSWORD={s}"),
    ("env_single_quoted", lambda s: f"POSTGRES_PASSWORD='{s}'"),
    ("flag_space", lambda s: f"./manage.py createsuperuser --password {s} --noinput"),
    ("flag_eq", lambda s: f"vault login --password={s}"),
    ("mysql", lambda s: f"mysql -u root -p{s} -h 127.0.0.1 app"),
    ("curl", lambda s: f"curl -u admin:{s} https://api.example.com/v1/me"),
    ("netrc", lambda s: f"machine api.example.com login bob password {s}"),
    ("python", lambda s: f'conn = connect(host="db", user="app", password="{s}")'),
    ("python_assign", lambda s: f'PASSWORD = "{s}"'),
    ("pwd_key", lambda s: f"db_pwd: {s}"),
    ("passwd_json", lambda s: json.dumps({"passwd": s})),
    ("pgpassword", lambda s: f"PGPASSWORD={s} psql -h localhost -U app"),
    ("docker", lambda s: f"docker run -e MYSQL_ROOT_PASSWORD={s} -d mysql:8"),
    ("k8s", lambda s: f"env:\n  - name: DB_PASSWORD\n    value: \"{s}\""),
    ("connstr", lambda s: f"Server=db;User Id=sa;Password={s};Encrypt=true"),
    ("sentence", lambda s: f"Set the admin password: {s}"),
    ("ts_object", lambda s: f"const opts = {{ user: 'app', password: '{s}' }};"),
]

URL_PASSWORD_FORMS = [
    ("postgres", lambda s: f"postgres://app_user:{s}@db.internal:5432/app"),
    ("database_url", lambda s: f"DATABASE_URL=postgresql://admin:{s}@localhost/app_dev"),
    ("mysql", lambda s: f"mysql://root:{s}@127.0.0.1:3306/test"),
    ("redis", lambda s: f"redis://:{s}@cache:6379/0"),
    ("mongo", lambda s: f"mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/?retryWrites=true"),
    ("https", lambda s: f"git clone https://deploy:{s}@git.example.com/team/repo.git"),
    ("amqp", lambda s: f"broker_url = 'amqp://guest:{s}@rabbit:5672//'"),
    ("json", lambda s: json.dumps({"url": f"postgres://u:{s}@h/db"})),
    ("sentence", lambda s: f"connect with postgres://me:{s}@10.0.0.5/db then run migrations"),
]

ENV_SECRET_FORMS = [
    ("dotenv", lambda s: f"SECRET_KEY={s}"),
    ("export", lambda s: f"export API_KEY={s}"),
    ("export_quoted", lambda s: f'export AUTH_TOKEN="{s}"'),
    ("client_secret_json", lambda s: json.dumps({"client_id": "web-app", "client_secret": s})),
    ("python", lambda s: f'api_key = "{s}"'),
    ("python_kw", lambda s: f'client = Client(api_key="{s}", timeout=30)'),
    ("yaml", lambda s: f"service:\n  apikey: {s}\n  url: https://example.com"),
    ("camel", lambda s: f"const apiKey = '{s}';"),
    ("header", lambda s: f'curl -H "X-API-Key: {s}" https://api.example.com'),
    ("flag", lambda s: f"deploy --api-key {s} --env prod"),
    ("flag_token", lambda s: f"gh auth login --with-token={s}"),
    ("access_token_json", lambda s: json.dumps({"access_token": s, "token_type": "bearer", "expires_in": 3600})),
    ("jwt_secret", lambda s: f"JWT_SECRET={s}"),
    ("private_key_var", lambda s: f"ENCRYPTION_KEY='{s}'"),
    ("credentials", lambda s: f"credentials: {s}"),
    ("toml", lambda s: f'[auth]\ntoken = "{s}"'),
    ("session_secret", lambda s: f'app.secret_key = "{s}"'),
    ("github_actions", lambda s: f"  env:\n    NPM_AUTH_TOKEN: {s}"),
]

HIGH_ENTROPY_FORMS = [
    ("my_key_is", lambda s: f"my api key is {s} for the staging box"),
    ("secret_leaked", lambda s: f"the secret {s} was committed by mistake"),
    ("token_bare", lambda s: f"token {s}"),
    ("credential_for", lambda s: f"use credential {s} for the build"),
    ("password_was", lambda s: f"the password was {s} yesterday"),
    ("deploy_token", lambda s: f"The deploy token for prod is {s}."),
    ("access_key_dash", lambda s: f"access key - {s}"),
    ("in_json_text", lambda s: f"Here is the secret you asked for: '{s}'"),
    ("key_arrow", lambda s: f"private key -> {s}"),
    ("before_key", lambda s: f"{s} is my api key, do not share"),
    ("before_paren", lambda s: f"use {s} (the deploy token) for CI"),
]

BEARER_FORMS = [
    ("header", lambda s: f"Authorization: Bearer {s}"),
    ("curl", lambda s: f'curl -H "Authorization: Bearer {s}" https://api.example.com/v1/me'),
    ("python", lambda s: f'headers = {{"Authorization": "Bearer {s}"}}'),
    ("prose", lambda s: f"send it as bearer {s} in the header"),
    ("token_scheme", lambda s: f"Authorization: token {s}"),
    ("js", lambda s: f"fetch(url, {{ headers: {{ Authorization: `Bearer {s}` }} }})"),
    ("json", lambda s: json.dumps({"headers": {"Authorization": f"Bearer {s}"}})),
]

PEM_FORMS = [
    ("raw", lambda s: s),
    ("in_output", lambda s: f"$ cat ~/.ssh/id_rsa\n{s}\n$ ls"),
    ("code_block", lambda s: f"```\n{s}\n```"),
    ("env_escaped", lambda s: "PRIVATE_KEY=\"" + s.replace("\n", "\\n") + "\""),
    ("json", lambda s: json.dumps({"type": "service_account", "private_key": s, "client_email": "x@y.iam"})),
    ("truncated", lambda s: "\n".join(s.split("\n")[:-3])),
]


def _basic_auth(rng):
    user, pw = _plain(rng, LOWER, 6), _mixed(rng, ALNUM, 14)
    b = base64.b64encode(f"{user}:{pw}".encode()).decode()
    return b, _frags(b.rstrip("="))


def samples(seed: int = 1234, per_kind: int = 60) -> List[Sample]:
    rng = random.Random(seed)
    out: List[Sample] = []

    for kind, make in STANDALONE.items():
        for i in range(per_kind):
            form, render = TOKEN_FORMS[i % len(TOKEN_FORMS)]
            secret, frags = make(rng)
            out.append(Sample(kind, True, secret, frags, render(secret, ENV_NAMES[kind]), form))

    def add(family, exact, make, forms):
        for i in range(per_kind):
            form, render = forms[i % len(forms)]
            secret, frags = make(rng)
            out.append(Sample(family, exact, secret, frags, render(secret), form))

    add("private_key", True, private_key, PEM_FORMS)
    add("aws_secret", False, aws_secret, AWS_SECRET_FORMS)
    add("password", False, password, PASSWORD_FORMS)
    add("url_password", True, url_password, URL_PASSWORD_FORMS)
    add("env_secret", False, opaque_token, ENV_SECRET_FORMS)
    add("high_entropy", False, entropy_token, HIGH_ENTROPY_FORMS)
    add("bearer", False, bearer_token, BEARER_FORMS)
    for i in range(per_kind):
        secret, frags = _basic_auth(rng)
        form, text = [("basic", f"Authorization: Basic {secret}"),
                      ("basic_curl", f"curl -H 'Authorization: Basic {secret}' https://x.example.com")][i % 2]
        out.append(Sample("auth_header", True, secret, frags, text, form))
    # a passphrase with spaces, in quoted forms only
    for i in range(per_kind // 3):
        words = [_plain(rng, LOWER, rng.randint(4, 9)) for _ in range(4)]
        secret = " ".join(words)
        text = [json.dumps({"password": secret}), f"PASSPHRASE=\"{secret}\"", f"password: '{secret}'"][i % 3]
        out.append(Sample("password", False, secret, _frags(*[" ".join(words[j:j + 2]) for j in range(3)]),
                          text, "passphrase"))
    return out


def kinds() -> List[str]:
    return sorted({s.kind for s in samples(per_kind=3)})


# ---------------------------------------------------------------------------------------------------- catalog()
# Vendor formats, learned from public secret-scanning rule sets (gitleaks' config, MIT) and the vendors' docs:
# the prefix, the alphabet and the length of the random part.  Only the shapes are used; every value is random.

HEXU = "0123456789ABCDEF"
B32U = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _tok(prefix, alphabet, n, suffix=""):
    def make(r):
        body = _rand(r, alphabet, n) if alphabet in (B62, B64, URLSAFE) else _plain(r, alphabet, n)
        return prefix + body + suffix, (body,)
    return make


def _parts(*spec):
    """Literal strings and (alphabet, n) random parts, concatenated."""
    def make(r):
        out, frags = [], []
        for p in spec:
            if isinstance(p, str):
                out.append(p)
            else:
                v = _plain(r, p[0], p[1])
                out.append(v)
                if p[1] >= 8 and (len(p) < 3 or p[2]):  # (alphabet, n, False): a public part (an id)
                    frags.append(v)
        return "".join(out), tuple(frags)
    return make


def _pem(label, n=12, head=()):
    def make(r):
        lines = [_rand(r, B64, 64) for _ in range(n)] + [_rand(r, B64, 40) + "=="]
        text = "\n".join(["-----BEGIN %s-----" % label, *head, *lines, "-----END %s-----" % label])
        return text, tuple(lines)
    return make


def _pem_b64(r):
    pem, frags = _pem("RSA PRIVATE KEY", 6)(r)
    b = base64.b64encode((pem + "\n").encode()).decode()
    return b, tuple(b[i:i + 40] for i in range(60, len(b) - 40, 40))


def _ppk(r):
    pub = [_rand(r, B64, 64) for _ in range(2)]
    priv = [_rand(r, B64, 64) for _ in range(5)] + [_rand(r, B64, 20) + "="]
    mac = _plain(r, HEX, 40)
    text = "\n".join(["PuTTY-User-Key-File-2: ssh-rsa", "Encryption: none", "Comment: deploy@ci",
                      "Public-Lines: %d" % len(pub), *pub, "Private-Lines: %d" % len(priv), *priv,
                      "Private-MAC: " + mac])
    return text, tuple(priv) + (mac,)


def _telegram(r):
    a = str(r.randrange(10 ** 8, 10 ** 10))
    b = "AA" + _rand(r, URLSAFE, 33)
    return a + ":" + b, (b[2:],)


def _discord(r):
    uid = str(r.randrange(10 ** 17, 10 ** 19))
    a = base64.b64encode(uid.encode()).decode().rstrip("=")
    b, c = _rand(r, URLSAFE, 6), _rand(r, URLSAFE, 38)
    return "%s.%s.%s" % (a, b, c), (c,)


def _jwt_like(prefix):
    def make(r):
        body = _b64url(json.dumps({"k": _rand(r, B62, 32), "n": _rand(r, B62, 12), "id": r.randrange(10 ** 6)})
                       .encode())
        sig = _rand(r, B62, 40)
        return prefix + body + sig, (body[12:], sig)
    return make


def _jwt(r):
    head = _b64url(json.dumps({"alg": "RS256", "kid": _rand(r, B62, 12)}).encode())
    body = _b64url(json.dumps({"sub": _rand(r, B62, 24), "iat": r.randrange(10 ** 9, 2 * 10 ** 9)}).encode())
    sig = _rand(r, URLSAFE, 86)
    return "%s.%s.%s" % (head, body, sig), (body[10:], sig)


FORMATS: List[Tuple[str, Callable]] = [
    # model providers
    ("anthropic-api03", _tok("sk-ant-api03-", URLSAFE, 93, "AA")),
    ("anthropic-admin01", _tok("sk-ant-admin01-", URLSAFE, 93, "AA")),
    ("openai-project", _tok("sk-proj-", URLSAFE, 156)),
    ("openai-svcacct", _tok("sk-svcacct-", URLSAFE, 120)),
    ("openai-legacy", _parts("sk-", (ALNUM, 20), "T3BlbkFJ", (ALNUM, 20))),
    ("groq", _tok("gsk_", B62, 52)),
    ("xai", _tok("xai-", B62, 80)),
    ("perplexity", _tok("pplx-", B62, 48)),
    ("replicate", _tok("r8_", B62, 37)),
    ("huggingface", _tok("hf_", B62, 34)),
    ("huggingface-org", _parts("api_org_", (UPPER + LOWER, 34))),
    ("langsmith", _parts("lsv2_pt_", (HEX, 32), "_", (HEX, 10))),
    ("tavily", _tok("tvly-", B62, 32)),
    ("fireworks", _tok("fw_", B62, 24)),
    ("pinecone", _parts("pcsk_", (ALNUM, 5), "_", (ALNUM, 65))),
    # cloud
    ("aws-akia", _parts("AKIA", (B32U, 16))),
    ("aws-asia", _parts("ASIA", (B32U, 16))),
    ("aws-bedrock", _tok("ABSK", B64, 120)),
    ("google-api", _tok("AIza", URLSAFE, 35)),
    ("google-oauth-access", _tok("ya29.", URLSAFE, 150)),
    ("google-oauth-refresh", _tok("1//0", URLSAFE, 90)),
    ("azure-ad-client-secret", _parts((ALNUM, 3), "8Q~", (ALNUM + "_~.-", 34))),
    ("alibaba", _tok("LTAI", B62, 20)),
    ("digitalocean-pat", _parts("dop_v1_", (HEX, 64))),
    ("digitalocean-oauth", _parts("doo_v1_", (HEX, 64))),
    ("digitalocean-refresh", _parts("dor_v1_", (HEX, 64))),
    ("cloudflare-origin-ca", _parts("v1.0-", (HEX, 24), "-", (HEX, 146))),
    ("flyio", _tok("fo1_", URLSAFE, 43)),
    ("flyio-macaroon", _tok("fm2_", B64, 120)),
    ("heroku-v2", _tok("HRKU-AA", URLSAFE, 58)),
    ("databricks", _parts("dapi", (HEX, 32))),
    ("planetscale-token", _tok("pscale_tkn_", URLSAFE, 43)),
    ("planetscale-password", _tok("pscale_pw_", URLSAFE, 43)),
    ("planetscale-oauth", _tok("pscale_oauth_", URLSAFE, 43)),
    ("supabase", _parts("sbp_", (HEX, 40))),
    ("netlify", _tok("nfp_", B62, 36)),
    ("render", _tok("rnd_", B62, 32)),
    ("vercel", _tok("vcp_", B62, 56)),
    ("scalingo", _tok("tk-us-", URLSAFE, 48)),
    ("tailscale", _parts("tskey-auth-", (ALNUM, 17), "-", (ALNUM, 33))),
    ("pulumi", _parts("pul-", (HEX, 40))),
    ("terraform-cloud", _parts((ALNUM, 14), ".atlasv1.", (ALNUM, 67))),
    ("doppler", _tok("dp.pt.", B62, 43)),
    ("doppler-service", _tok("dp.st.", B62, 43)),
    ("vault-service", _tok("hvs.", URLSAFE, 95)),
    ("vault-batch", _tok("hvb.", URLSAFE, 150)),
    ("age-secret-key", _parts("AGE-SECRET-KEY-1", (BECH32, 58))),
    ("onepassword-service", _jwt_like("ops_eyJ")),
    ("onepassword-secret-key", _parts("A3-", (UPPER_DIGITS, 6), "-", (UPPER_DIGITS, 11), "-", (UPPER_DIGITS, 5), "-",
                                      (UPPER_DIGITS, 5), "-", (UPPER_DIGITS, 5))),
    ("okta", _parts("00", (URLSAFE, 40))),
    # code hosting and CI
    ("github-pat", _tok("ghp_", B62, 36)),
    ("github-oauth", _tok("gho_", B62, 36)),
    ("github-user-to-server", _tok("ghu_", B62, 36)),
    ("github-server-to-server", _tok("ghs_", B62, 36)),
    ("github-refresh", _tok("ghr_", B62, 36)),
    ("github-fine-grained", _parts("github_pat_", (ALNUM, 22), "_", (ALNUM, 59))),
    ("gitlab-pat", _tok("glpat-", URLSAFE, 20)),
    ("gitlab-deploy", _tok("gldt-", URLSAFE, 20)),
    ("gitlab-runner", _tok("glrt-", URLSAFE, 20)),
    ("gitlab-pipeline-trigger", _parts("glptt-", (HEX, 40))),
    ("gitlab-oauth-secret", _tok("gloas-", URLSAFE, 64)),
    ("gitlab-feed", _tok("glft-", URLSAFE, 20)),
    ("gitlab-agent", _tok("glagent-", URLSAFE, 50)),
    ("gitlab-scim", _tok("glsoat-", URLSAFE, 20)),
    ("gitlab-runner-registration", _tok("GR1348941", URLSAFE, 20)),
    ("bitbucket", _parts("ATBB", (ALNUM, 24), (HEXU, 8))),
    ("atlassian", _parts("ATATT3xFfGF0", (URLSAFE, 170), "=", (HEXU, 8))),
    ("buildkite", _parts("bkua_", (HEX, 40))),
    ("circleci", _parts("CCIPAT_", (ALNUM, 22), "_", (HEX, 40))),
    ("sourcegraph", _parts("sgp_", (HEX, 16), "_", (HEX, 40))),
    ("docker-pat", _tok("dckr_pat_", URLSAFE, 27)),
    ("npm", _tok("npm_", B62, 36)),
    ("pypi", _tok("pypi-AgEIcHlwaS5vcmc", URLSAFE, 150)),
    ("rubygems", _parts("rubygems_", (HEX, 48))),
    ("clojars", _parts("CLOJARS_", (HEX, 60))),
    ("artifactory", _tok("AKCp", B62, 69)),
    ("octopus", _parts("API-", (UPPER_DIGITS, 26))),
    ("prefect", _tok("pnu_", B62, 36)),
    ("infracost", _tok("ico-", B62, 32)),
    ("readme", _parts("rdme_", (HEX + "ghijklmnopqrstuvwxyz", 70))),
    ("sentry-user", _parts("sntryu_", (HEX, 64))),
    ("linear-api", _tok("lin_api_", B62, 40)),
    ("linear-oauth", _parts("lin_oauth_", (HEX, 64))),
    ("postman", _parts("PMAK-", (HEX, 24), "-", (HEX, 34))),
    ("figma", _tok("figd_", URLSAFE, 40)),
    ("notion-secret", _tok("secret_", B62, 43)),
    ("notion-ntn", _parts("ntn_", (DIGITS, 11), (ALNUM, 35))),
    ("contentful", _tok("CFPAT-", URLSAFE, 43)),
    ("dynatrace", _parts("dt0c01.", (UPPER_DIGITS, 24), ".", (UPPER_DIGITS + LOWER, 64))),
    ("newrelic-user", _parts("NRAK-", (UPPER_DIGITS, 27))),
    ("newrelic-insert", _parts("NRII-", (URLSAFE, 32))),
    ("newrelic-browser", _parts("NRJS-", (HEX, 19))),
    ("grafana-service-account", _parts("glsa_", (ALNUM, 32), "_", (HEX, 8))),
    ("grafana-cloud", _tok("glc_", B64, 80)),
    ("grafana-api-key", _jwt_like("eyJrIjoi")),
    # messaging, payments, commerce
    ("slack-bot", _parts("xoxb-", (DIGITS, 12), "-", (DIGITS, 13), "-", (ALNUM, 24))),
    ("slack-user", _parts("xoxp-", (DIGITS, 12), "-", (DIGITS, 12), "-", (DIGITS, 13), "-", (HEX, 32))),
    ("slack-app", _parts("xapp-1-A", (UPPER_DIGITS, 10), "-", (DIGITS, 13), "-", (HEX, 64))),
    ("slack-config-refresh", _parts("xoxe-1-", (UPPER_DIGITS, 146))),
    ("slack-webhook", _parts("https://hooks.slack.com/services/T", (UPPER_DIGITS, 10), "/B", (UPPER_DIGITS, 10), "/",
                             (ALNUM, 24))),
    ("discord-webhook", _parts("https://discord.com/api/webhooks/", (DIGITS, 18, False), "/", (URLSAFE, 68))),
    ("teams-webhook", _parts("https://acme.webhook.office.com/webhookb2/", (HEX, 8), "-aaaa-bbbb-cccc-", (HEX, 12),
                             "@", (HEX, 8), "-dddd-eeee-ffff-", (HEX, 12), "/IncomingWebhook/", (HEX, 32), "/",
                             (HEX, 8), "-1111-2222-3333-", (HEX, 12))),
    ("telegram-bot", _telegram),
    ("discord-bot", _discord),
    ("twilio-api-key", _parts("SK", (HEX, 32))),
    ("twilio-account-sid", _parts("AC", (HEX, 32))),
    ("sendgrid", _parts("SG.", (URLSAFE, 22), ".", (URLSAFE, 43))),
    ("sendinblue", _parts("xkeysib-", (HEX, 64), "-", (ALNUM, 16))),
    ("mailchimp", _parts((HEX, 32), "-us", (DIGITS, 2))),
    ("mailgun", _parts("key-", (HEX, 32))),
    ("stripe-secret", _tok("sk_live_", B62, 99)),
    ("stripe-restricted", _tok("rk_live_", B62, 99)),
    ("stripe-webhook", _tok("whsec_", B62, 32)),
    ("square-access", _tok("EAAA", URLSAFE, 60)),
    ("square-oauth", _tok("sq0atp-", URLSAFE, 22)),
    ("square-secret", _tok("sq0csp-", URLSAFE, 43)),
    ("shopify-access", _parts("shpat_", (HEX, 32))),
    ("shopify-shared-secret", _parts("shpss_", (HEX, 32))),
    ("shopify-custom", _parts("shpca_", (HEX, 32))),
    ("shopify-private-app", _parts("shppa_", (HEX, 32))),
    ("shippo", _parts("shippo_live_", (HEX, 40))),
    ("easypost", _tok("EZAK", B62, 54)),
    ("duffel", _tok("duffel_live_", URLSAFE, 43)),
    ("flutterwave", _parts("FLWSECK-", (HEX, 32), "-X")),
    ("facebook-page", _tok("EAAC", B62, 120)),
    ("mapbox-secret", _jwt_like("sk.eyJ")),
    ("frameio", _tok("fio-u-", URLSAFE, 64)),
    ("openshift", _tok("sha256~", URLSAFE, 43)),
    ("jwt", _jwt),
    # keys and files
    ("pem-rsa", _pem("RSA PRIVATE KEY")),
    ("pem-openssh", _pem("OPENSSH PRIVATE KEY")),
    ("pem-pkcs8", _pem("PRIVATE KEY")),
    ("pem-ec", _pem("EC PRIVATE KEY", 4)),
    ("pem-encrypted", _pem("RSA PRIVATE KEY", 10, ("Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC,0A1B2C3D4E5F6A7B"
                                                   "8C9D0E1F2A3B4C5D", ""))),
    ("pgp-private", _pem("PGP PRIVATE KEY BLOCK", 12, ("Version: GnuPG v2", ""))),
    ("pem-base64", _pem_b64),
    ("putty-ppk", _ppk),
]

# Password forms with no vendor shape: the value is random but short, the context tells.
PASSWORD_CONTEXTS: List[Tuple[str, Callable[[str], str]]] = [
    ("docker-login", lambda s: "docker login -u ci -p %s registry.example.com" % s),
    ("docker-login-long", lambda s: "docker login --username ci --password '%s' ghcr.io" % s),
    ("sshpass", lambda s: "sshpass -p '%s' ssh deploy@10.0.0.7" % s),
    ("sshpass-bare", lambda s: "sshpass -p %s scp dump.sql db:/tmp" % s),
    ("htpasswd", lambda s: "htpasswd -b /etc/nginx/.htpasswd admin %s" % s),
    ("htpasswd-n", lambda s: "htpasswd -nbB admin %s" % s),
    ("mysql-p", lambda s: "mysql -uroot -p%s -e 'show databases'" % s),
    ("mysql-p-quoted", lambda s: "mysqldump -u app -p'%s' app > app.sql" % s),
    ("password-is", lambda s: "the wifi password is %s, ask IT for the guest one" % s),
    ("password-was", lambda s: "Root password was %s before the rotation." % s),
    ("url-hash", lambda s: "redis://default:%s@cache.internal:6379/0" % (s[:4] + "#" + s[4:])),
    ("pgpass", lambda s: "db.internal:5432:app:app_user:%s" % s),
    ("psql-conn", lambda s: "psql \"host=db user=app password=%s dbname=app\"" % s),
    ("smbclient", lambda s: "smbclient //files/share -U admin%%%s" % s),
]


def _short_password(r):
    s = _plain(r, ALNUM + "!@%^*_-", r.randint(6, 10))
    s = r.choice(UPPER) + s + str(r.randint(0, 9))
    return s, (s,)


def _single_line(text):
    return "\n" not in text


# Positions: (name, render(secret, fragments, rng) -> (text, fragments that must not survive)).
def _pos_prose(s, fr, r):
    return "I rotated it this morning; the new one is %s and the old one is revoked." % s, fr


def _pos_kv(s, fr, r):
    if not _single_line(s):
        return "PRIVATE_KEY=\"%s\"" % s.replace("\n", "\\n"), fr
    return "%s=%s" % (r.choice(["DEPLOY_CREDENTIAL", "SERVICE_TOKEN", "API_KEY", "UPSTREAM_AUTH"]), s), fr


def _pos_json(s, fr, r):
    return json.dumps({"name": "deploy", "value": s, "region": "eu-west-1"}), fr


def _pos_command(s, fr, r):
    if not _single_line(s):
        return "cat > ~/.ssh/deploy_key <<'EOF'\n%s\nEOF\nchmod 600 ~/.ssh/deploy_key" % s, fr
    return r.choice(["curl -sS -H 'X-Auth: %s' https://api.example.com/v1/ping",
                     "deployctl push --credential %s --env prod",
                     "echo %s | gh secret set DEPLOY"]) % s, fr


def _pos_url(s, fr, r):
    if s.startswith("https://"):
        return "POST it to %s when the job ends" % s, fr
    if not _single_line(s):
        return "fetch it with https://vault.example.com/v1/raw?data=%s" % base64.urlsafe_b64encode(
            s.encode()).decode()[:40] + " (encoded)", ()
    return "https://api.example.com/v2/items?page=2&access_token=%s&sort=asc" % s, fr


def _pos_config(s, fr, r):
    if not _single_line(s):
        body = "\n".join("    " + l for l in s.split("\n"))
        return "apiVersion: v1\nkind: Secret\nstringData:\n  id_rsa: |\n%s\n" % body, fr
    return r.choice(["[default]\nregion = eu-west-1\ncredential = %s\n",
                     "services:\n  worker:\n    environment:\n      UPSTREAM_CREDENTIAL: \"%s\"\n",
                     "const client = new Client({ baseUrl: BASE, auth: \"%s\" });\n",
                     "settings = {\n    'retries': 3,\n    'upstream': '%s',\n}\n"]) % s, fr


def _pos_cut(s, fr, r):
    """The text ends inside the secret, as after a cut somewhere upstream: the kept part must go."""
    big = max(fr, key=len) if fr else s
    at = s.find(big) + max(8, int(len(big) * r.uniform(0.4, 0.8)))
    kept = s[:at]
    frags = tuple(f for f in fr if f in kept) + ((big[:at - s.find(big)],) if big not in kept else ())
    return "Logged by the job before the output was cut: " + kept + r.choice(["", "…", "... [truncated]"]), tuple(
        f for f in frags if len(f) >= 8)


def _pos_split(s, fr, r):
    """Line-split: a key wrapped, CRLF line ends, or JSON-escaped newlines; a token wrapped in a JSON string."""
    if not _single_line(s):
        return r.choice([s.replace("\n", "\r\n"), json.dumps({"private_key": s})[1:-1], "key:\n" + s]), fr
    return json.dumps({"stdout": "creating credential...\nvalue: %s\ndone" % s}), fr


POSITIONS = [("prose", _pos_prose), ("kv", _pos_kv), ("json", _pos_json), ("command", _pos_command),
             ("url", _pos_url), ("config", _pos_config), ("cut", _pos_cut), ("split", _pos_split)]


def catalog(seed: int = 18) -> List[Sample]:
    """Every format of FORMATS in every position, plus the short-password contexts; one Sample each."""
    r = random.Random(seed)
    out: List[Sample] = []
    for name, make in FORMATS:
        for pos, render in POSITIONS:
            secret, frags = make(r)
            text, must = render(secret, tuple(f for f in frags if len(f) >= 8), r)
            if must:
                out.append(Sample(name, False, secret, must, text, pos))
    for name, render in PASSWORD_CONTEXTS:
        for _ in range(4):
            secret, frags = _short_password(r)
            out.append(Sample("password", False, secret, frags, render(secret), name))
    return out
