"""Command workarounds: a shell command failed, and the same command with an option it lacked worked.

    git add src/app.css             -> "The following paths are ignored by one of your .gitignore files"
    git add -f src/app.css          -> worked

is a gotcha the next session should know before it runs into it again: "`git add src/app.css` failed (The
following paths are ignored by one of your .gitignore files: src); `git add -f src/app.css` worked."  The
same for `npm install` and `--legacy-peer-deps`, `git commit` and `--no-verify`, `curl` and `-k`, a command
run again under `sudo` or with an environment variable set.  Pure functions over command lines; the
extraction loop (extract.py) keeps the failed calls of a session in its cursor state.

A later call counts as the workaround of a failed one when (`workaround`):
- both are the same program and subcommand (`git add`, `npm install`, `docker compose`, `curl`);
- the later one has an option, an environment assignment or `sudo` the failed one lacked;
- every other argument of the later one was in the failed one (the same target or fewer), or may be the
  value of a new option; and when the failed one named targets, the later one names one of them;
- no file was edited in between (then the edit fixed it: a `fix` record says so, extract.py);
- the program is not a search or a look (grep, find, ls, cat, test, diff...: their non-zero exit means
  "nothing found", not "failed") and not a test or build run (those have `fix` records).
"""
import re
import shlex

# programs whose non-zero exit is an answer, not a failure; and shell built-ins that change nothing
LOOKS = frozenset("grep egrep fgrep rg ag ack find fd ls cat head tail less more test [ [[ which type command "
                  "whereis diff cmp comm wc stat file sleep cd pwd echo printf true false read wait kill pgrep "
                  "jq yq awk sed sort uniq tr cut tee xargs env export set unset source . exit".split())
# programs that take a subcommand as their first word
SUBCOMMANDED = frozenset("git npm npx pnpm yarn pip pip3 uv poetry docker podman kubectl helm cargo go gh "
                         "brew apt apt-get dnf yum conda mix bundle gem rails composer dotnet terraform "
                         "systemctl launchctl gcloud aws az heroku flyctl vercel supabase bun deno".split())
SPLIT_RE = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# the first line of an error worth quoting: not the client's "Exit code 1" banner
BANNER_RE = re.compile(r"^(?:Error:\s*)?Exit code \d+\s*$|^\s*$", re.I)
ERRORISH_RE = re.compile(r"error|denied|ignored|not found|no such|invalid|refused|failed|conflict|cannot|can't|"
                         r"unable|rejected|forbidden|unauthori[sz]ed|permission|timed? ?out|certificate|eresolve|"
                         r"externally.managed|not allowed|requires", re.I)
MAX_FAILED = 20


def simple_commands(cmd: str) -> list:
    """The simple commands of a command line's first line ("a && b | c" -> [[a...], [b...], [c...]]), each
    as its words; a part the shell syntax of which cannot be read (an open quote, a heredoc) is left out."""
    first = (cmd or "").strip().split("\n", 1)[0]
    out = []
    for part in SPLIT_RE.split(first):
        if not part:
            continue
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        if words:
            out.append(words)
    return out


def shape(words: list) -> dict:
    """{program, sub, opts, args, text} of a simple command: environment assignments and `sudo` count as
    options; the program is the first other word's base name."""
    opts, i = set(), 0
    while i < len(words) and (ENV_RE.match(words[i]) or words[i] == "sudo"):
        opts.add(words[i].split("=", 1)[0] + "=" if "=" in words[i] else "sudo")
        i += 1
    if i >= len(words):
        return {}
    program = re.split(r"[/\\]", words[i])[-1].lower()
    rest = words[i + 1:]
    sub = ""
    if program in SUBCOMMANDED and rest and re.match(r"^[a-z][a-z0-9-]*$", rest[0]):
        sub, rest = rest[0], rest[1:]
    args, values = [], set()
    for n, w in enumerate(rest):
        if w.startswith("-") and len(w) > 1:
            opts.add(w.split("=", 1)[0])
            if n + 1 < len(rest) and not rest[n + 1].startswith("-"):
                values.add(n + 1)  # may be the option's value
        else:
            args.append((n in values, w))
    return {"program": program, "sub": sub, "opts": opts, "args": args,
            "text": " ".join(shlex.quote(w) for w in words)}


def eligible(s: dict, fixable) -> bool:
    return bool(s) and s["program"] not in LOOKS and not fixable("%s %s" % (s["program"], s["sub"]))


def error_line(output: str, limit: int = 160) -> str:
    """The line of a failed command's output that says what went wrong: the first that sounds like an error
    (joined with the next one when it ends with ':', as "ignored by ...:" + the path), else the first line
    that is not the client's exit-code banner."""
    lines = [ln.strip() for ln in (output or "").splitlines()]
    real = [i for i, ln in enumerate(lines) if not BANNER_RE.match(ln)]
    pick = next((i for i in real if ERRORISH_RE.search(lines[i])), real[0] if real else None)
    if pick is None:
        return ""
    line = lines[pick]
    if line.endswith(":") and pick + 1 < len(lines) and lines[pick + 1] and not BANNER_RE.match(lines[pick + 1]):
        line += " " + lines[pick + 1]
    return line[:limit].rstrip()


def failed_calls(cmd: str, output: str, ref: str, at: str, fixable) -> list:
    """What a failed command line leaves to remember: each eligible simple command, with the error."""
    err = error_line(output)
    out = []
    for words in simple_commands(cmd):
        s = shape(words)
        if eligible(s, fixable):
            out.append({"program": s["program"], "sub": s["sub"], "opts": sorted(s["opts"]),
                        "args": [w for _, w in s["args"]], "cmd": s["text"][:160], "err": err, "ref": ref,
                        "at": at, "edited": False})
    return out


def workaround(s: dict, failed: dict) -> bool:
    """True when the command `s` (shape) is the failed call `failed` run again with an option it lacked."""
    if (s["program"], s["sub"]) != (failed["program"], failed["sub"]) or failed.get("edited"):
        return False
    new = s["opts"] - set(failed["opts"])
    if not new:
        return False
    before = set(failed["args"])
    if before and not any(w in before for _, w in s["args"]):
        return False  # another target ("git add -f b.css" after "git add a.css" failed)
    return all(w in before or is_value for is_value, w in s["args"])


def worked(cmd: str, failed: list, fixable) -> list:
    """[(failed call, the command that worked)] for a command line that succeeded; each failed call once."""
    out = []
    first = (cmd or "").split("\n", 1)[0]
    if not any(f["program"] in first for f in failed):
        return out  # no failed program in it: not worth reading its shell syntax
    for words in simple_commands(cmd):
        s = shape(words)
        if not eligible(s, fixable):
            continue
        for f in reversed(failed):
            if workaround(s, f) and all(f is not g for g, _ in out):
                out.append((f, s["text"][:160]))
                break
    return out


def text_of(failed: dict, command: str) -> str:
    return "`%s` failed (%s); `%s` worked." % (failed["cmd"], failed["err"] or "non-zero exit", command)
