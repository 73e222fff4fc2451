"""A deterministic generator of FAKE secrets for the redaction tests.

Every secret here is made up by a seeded `random.Random`: the right prefix,
length and alphabet for its kind, and a random body.  None of them is, or was
ever, a real credential.

    samples(seed=1234, per_kind=60) -> list[Sample]

Each `Sample` has the kind the redactor should report (for vendor tokens) or
a family name (for context-dependent kinds), the rendered text with the
secret in one of many surrounding forms (bare, KEY=, export, JSON, YAML, URL,
Authorization header, a sentence, a code block, start/end of line, next to
punctuation and quotes), and the random `fragments` that must not survive
redaction.
"""
from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
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


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, alphabet: str, n: int) -> str:
    """Random string that has upper case, lower case and a digit (as real keys almost always do)."""
    while True:
        s = _rand(rng, alphabet, n)
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
    body = _rand(rng, B32, 16)
    return rng.choice(["AKIA", "AKIA", "ASIA"]) + body, _frags(body)


def aws_secret(rng):
    s = _mixed(rng, B64, 40)
    return s, _frags(s)


def github_token(rng):
    if rng.random() < 0.2:
        a, b = _rand(rng, ALNUM, 22), _rand(rng, ALNUM, 59)
        return f"github_pat_{a}_{b}", _frags(a, b)
    body = _rand(rng, ALNUM, 36)
    return rng.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + body, _frags(body)


def gitlab_token(rng):
    body = _rand(rng, B64URL, 20)
    return "glpat-" + body, _frags(body)


def npm_token(rng):
    body = _rand(rng, ALNUM, 36)
    return "npm_" + body, _frags(body)


def huggingface_token(rng):
    body = _rand(rng, UPPER + LOWER, 34)
    return "hf_" + body, _frags(body)


def pypi_token(rng):
    body = _rand(rng, B64URL, rng.randint(120, 180))
    return "pypi-AgEIcHlwaS5vcmc" + body, _frags(body)


def sendgrid_key(rng):
    a, b = _rand(rng, B64URL, 22), _rand(rng, B64URL, 43)
    return f"SG.{a}.{b}", _frags(a, b)


def slack_token(rng):
    style = rng.choice(["xoxb", "xoxp", "xoxa", "xoxr", "xapp"])
    if style == "xoxb":
        a, b, c = _rand(rng, DIGITS, 12), _rand(rng, DIGITS, 13), _rand(rng, ALNUM, 24)
        return f"xoxb-{a}-{b}-{c}", _frags(a, b, c)
    if style == "xoxp":
        a, b, c, d = (_rand(rng, DIGITS, 12), _rand(rng, DIGITS, 12), _rand(rng, DIGITS, 13),
                      _rand(rng, HEX, 32))
        return f"xoxp-{a}-{b}-{c}-{d}", _frags(a, b, c, d)
    if style in ("xoxa", "xoxr"):
        a, b, c = _rand(rng, DIGITS, 12), _rand(rng, DIGITS, 13), _rand(rng, ALNUM, 32)
        return f"{style}-2-{a}-{b}-{c}", _frags(a, b, c)
    a, b, c = "A" + _rand(rng, UPPER + DIGITS, 10), _rand(rng, DIGITS, 13), _rand(rng, HEX, 64)
    return f"xapp-1-{a}-{b}-{c}", _frags(a, b, c)


def slack_webhook(rng):
    t, b, s = "T" + _rand(rng, UPPER + DIGITS, 10), "B" + _rand(rng, UPPER + DIGITS, 10), _rand(rng, ALNUM, 24)
    return f"https://hooks.slack.com/services/{t}/{b}/{s}", _frags(s)


def stripe_key(rng):
    prefix = rng.choice(["sk_live_", "rk_live_", "sk_test_", "pk_live_", "pk_test_", "rk_test_", "whsec_"])
    body = _mixed(rng, ALNUM, rng.choice([24, 32, 99]))
    return prefix + body, _frags(body)


def google_api_key(rng):
    body = _rand(rng, B64URL, 35)
    return "AIza" + body, _frags(body)


def google_oauth(rng):
    if rng.random() < 0.7:
        body = _mixed(rng, B64URL, rng.randint(100, 180))
        return "ya29." + body, _frags(body)
    body = _mixed(rng, B64URL, rng.randint(60, 100))
    return "1//0" + body, _frags(body)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(rng):
    alg = rng.choice(["HS256", "RS256", "ES256"])
    header = {"alg": alg, "typ": "JWT"}
    if alg != "HS256":
        header["kid"] = _rand(rng, ALNUM, 16)
    payload = {"sub": _rand(rng, DIGITS, 10), "name": _rand(rng, LOWER, 8),
               "iat": rng.randint(1_600_000_000, 1_800_000_000), "exp": rng.randint(1_800_000_000, 1_900_000_000),
               "sid": _rand(rng, ALNUM, 20)}
    h = _b64url(json.dumps(header, separators=(",", ":")).encode())
    p = _b64url(json.dumps(payload, separators=(",", ":")).encode())
    sig = _b64url(bytes(rng.getrandbits(8) for _ in range(rng.choice([32, 64, 256]))))
    return f"{h}.{p}.{sig}", _frags(p, sig)


def private_key(rng):
    label = rng.choice(["RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY",
                        "DSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK"])
    lines = [_rand(rng, B64, 64) for _ in range(rng.randint(4, 20))]
    lines.append(_rand(rng, B64, rng.randint(8, 60)) + rng.choice(["", "=", "=="]))
    head = []
    if label == "RSA PRIVATE KEY" and rng.random() < 0.3:
        head = ["Proc-Type: 4,ENCRYPTED", "DEK-Info: AES-128-CBC," + _rand(rng, "0123456789ABCDEF", 32), ""]
    if label.startswith("PGP"):
        head = ["Version: GnuPG v2", ""]
    pem = "\n".join([f"-----BEGIN {label}-----", *head, *lines, f"-----END {label}-----"])
    return pem, _frags(*lines)


def password(rng):
    first = rng.choice(ALNUM)
    body = _rand(rng, ALNUM + PW_SPECIAL, rng.randint(9, 23))
    s = first + body
    if not any(c.isdigit() for c in s):
        s += str(rng.randint(0, 9))
    return s, _frags(s)


def url_password(rng):
    body = _rand(rng, ALNUM + "-_.~!*", rng.randint(9, 23))
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
        s = _rand(rng, HEX, rng.choice([32, 40, 64]))
    return s, _frags(s)


def entropy_token(rng):
    s = _mixed(rng, rng.choice([ALNUM, ALNUM, B64URL, B64]), rng.randint(20, 64))
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
    user, pw = _rand(rng, LOWER, 6), _mixed(rng, ALNUM, 14)
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
        words = [_rand(rng, LOWER, rng.randint(4, 9)) for _ in range(4)]
        secret = " ".join(words)
        text = [json.dumps({"password": secret}), f"PASSPHRASE=\"{secret}\"", f"password: '{secret}'"][i % 3]
        out.append(Sample("password", False, secret, _frags(*[" ".join(words[j:j + 2]) for j in range(3)]),
                          text, "passphrase"))
    return out


def kinds() -> List[str]:
    return sorted({s.kind for s in samples(per_kind=3)})


if __name__ == "__main__":  # print a few, to eyeball
    import collections
    ss = samples()
    print(len(ss), collections.Counter(s.kind for s in ss))
    for s in ss[::97]:
        print(f"{s.kind:16} {s.form:16} {s.text[:110]!r}")
