"""Real-looking fake secrets, generated from a seed (nothing here is a live credential).

`corpus(seed)` returns FakeSecret items: `text` is how the secret appears in a transcript (with its key name,
prefix or header), `value` is the part that must never be stored (the random part: public prefixes such as
`sk-ant-api03-` or `AKIA` are not secret and are left out of it; `fragments` when there are several such
parts).  `survivors(haystack, secrets)` says which secrets show up in a text, whole or in part (any
12-character window of a fragment).

The samples of tests/secret_corpus.py (the redaction work's generator, `samples(seed, per_kind)`: every kind
in several surrounding forms) are added when that module is there.
"""
from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

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
    try:
        from secret_corpus import samples  # tests/secret_corpus.py, owned by the redaction work
    except Exception:  # noqa: BLE001 - absent: our own corpus is enough
        return []
    extra = []
    try:
        for smp in samples(seed=seed, per_kind=per_kind):
            frags = tuple(f for f in smp.fragments if len(f) >= 8)
            if frags:
                extra.append(FakeSecret("ext-%s-%s" % (smp.kind, smp.form), smp.text, frags[0], pathsafe=False,
                                        fragments=frags))
    except Exception:  # noqa: BLE001 - a different API: skip it rather than fail the corpus
        return []
    return extra


def windows(value: str, size: int = 12, step: int = 4):
    if len(value) <= size:
        return [value]
    return [value[i:i + size] for i in range(0, len(value) - size + 1, step)] + [value[-size:]]


def survivors(haystack: str, secrets) -> list:
    """The secrets whose value (or any 12-character window of it) occurs in haystack."""
    return [s for s in secrets if any(w in haystack for v in s.parts() for w in windows(v))]
