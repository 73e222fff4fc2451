"""The commands for people: recall, remember, forget, reset, pin, unpin, edit, show, why, doctor,
inbox (retry, show, list), export, import.

`cortex.cli.main` calls `add_commands(sub)` with its subparsers.  Each command is a thin function: parse,
call the library (cortex.ops.manage, cortex.ops.recall, cortex.brief.why, cortex.ops.doctor), print.  `--json` prints
the library's result (formats in docs/commands.md).  A problem a person can fix is one line on stderr
and exit status 1; colour only on a terminal and never when NO_COLOR is set.  Text from records, transcripts
and events goes through `printable` (cortex.brief.neutral) before it is written: no escape sequence or other
control character of it reaches the terminal (JSON output is escaped by json.dumps).
"""
import json
import os
import sys

from cortex.brief.neutral import printable
from cortex.core.home import Home
from cortex.core.errors import CortexError

STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36", "magenta": "35"}
PREVIEW_LEFT = 30


# -- output helpers ------------------------------------------------------------------------------

def use_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def paint(text: str, style: str, stream=None) -> str:
    stream = stream or sys.stdout
    if not style or not use_color(stream):
        return text
    return "\033[%sm%s\033[0m" % (";".join(STYLES[s] for s in style.split("+")), text)


def _width(stream):
    try:
        if stream.isatty():
            import shutil  # not at the top: it imports the compression modules (3 ms of a recall's start-up)
            return shutil.get_terminal_size((100, 24)).columns
    except (AttributeError, ValueError):
        pass
    return None


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:max(n - 1, 0)] + "…"


def table(headers, rows, stream=None, right=()) -> None:
    """Aligned columns, two spaces apart; the last column is cut to the terminal width on a terminal.
    A cell is a string or (string, style)."""
    stream = stream or sys.stdout
    rows = [[(printable(c[0]), c[1]) if isinstance(c, tuple) else (printable(str(c)), None) for c in r] for r in rows]
    n = len(headers)
    w = [max([len(headers[i])] + [len(r[i][0]) for r in rows]) for i in range(n)]
    width = _width(stream)
    last = None
    if width:
        last = max(width - sum(w[:-1]) - 2 * (n - 1), 16)

    def fmt(cells, header=False):
        parts = []
        for i, (text, style) in enumerate(cells):
            if i == n - 1:
                text = _cut(text, last) if last else text
                parts.append(paint(text, style, stream))
            else:
                pad = text.rjust(w[i]) if i in right else text.ljust(w[i])
                parts.append(paint(pad, style, stream))
        line = "  ".join(parts).rstrip()
        return paint(line, "bold", stream) if header else line

    stream.write(fmt([(h, None) for h in headers], header=True) + "\n")
    for r in rows:
        stream.write(fmt(r) + "\n")


def out_json(obj) -> None:
    from cortex.cli.output import print_json
    print_json(obj)


def progress(label: str, quiet: bool = False):
    """A progress callback that rewrites one stderr line after the first second, or None when stderr is
    not a terminal (cortex.cli.progress)."""
    from cortex.cli.progress import progress as make
    return make(label, quiet=quiet)


def _home(create=False) -> Home:
    from cortex.ops.manage import open_home
    return open_home(Home(), create=create)


def _cwd(args) -> str:
    cwd = getattr(args, "cwd", None)
    if cwd:
        if not os.path.isdir(cwd):
            # a project whose folder is gone still has its memory: its id comes from the path
            return os.path.abspath(os.path.expanduser(cwd))
        return os.path.abspath(cwd)
    return os.getcwd()


def _scope_label(rec, project=None, domain=None) -> str:
    if project and rec.get("scope") == "L0" and rec.get("scope_id") == project:
        return "project"
    if domain and rec.get("scope") == "L1" and rec.get("scope_id") == domain:
        return "domain"
    return "%s:%s" % (rec.get("scope"), rec.get("scope_id"))


def _one_line(text: str, n: int = 100) -> str:
    return _cut(printable(" ".join((text or "").split())), n)


def _confirm(question: str) -> bool:
    sys.stderr.write(question + " [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError):
        return False
    return answer.strip().lower() in ("y", "yes")


def _interactive() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def command(fn):
    """Run a command: a CortexError or ConfigError is one line on stderr; a closed pipe ends quietly."""
    def run(args):
        from cortex.core.config import ConfigError
        from cortex.core.log import error_line
        try:
            return fn(args) or 0
        except CortexError as e:
            error_line(str(e), e.hint)
            return e.code
        except ConfigError as e:
            error_line(str(e), "fix config.yaml (see docs/configuration.md)")
            return 2
        except BrokenPipeError:
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError, AttributeError):
                pass
            return 1
    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


# -- recall --------------------------------------------------------------------------------------

def _types(values):
    out = []
    for v in values or []:
        out += [t.strip() for t in v.split(",") if t.strip()]
    return out


@command
def cmd_recall(args):
    from cortex.ops.recall import recall
    home = _home()
    res = recall(home, " ".join(args.query), scope=args.scope, types=_types(args.type), k=args.k, cwd=_cwd(args),
                 include_archived=args.all, record_use=not args.no_use, kind=args.kind)
    if args.json:
        out_json(res)
        return 0
    where = ("project %s and domain %s" % (res["project"], res["domain"]) if not args.scope
             else {"project": "project %s" % res["project"], "domain": "domain %s" % res["domain"],
                   "all": "every scope"}[args.scope])
    if not res["hits"]:
        what = {"record": "records", "episode": "episode passages"}.get(args.kind, "records or episode passages")
        print("no %s%s match %r in %s" % ("" if args.all or args.kind == "episode" else "active ", what,
                                           res["query"], where))
        return 0
    rows = []
    for h in res["hits"]:
        if h["kind"] == "episode":
            rows.append([(h["id"], "cyan"), "episode", "turns %d-%d" % tuple(h["turns"]), h["age"] or "-", "-",
                         _scope_label(h, res["project"], res["domain"]), h["snippet"]])
            continue
        status = " (restored)" if h["restored"] else "" if h["status"] == "active" else " (%s)" % h["status"]
        if h.get("superseded_by"):
            status = " (superseded by %s%s)" % (", ".join(h["superseded_by"]),  # then the current end of a chain
                                                 "; now %s" % ", ".join(h["current"]) if h.get("current") else "")
        if h.get("via"):
            status += " (via %s, the rule it replaced)" % h["via"]
        rows.append([(h["id"], "cyan"), "record", h["type"] + status, h["age"] or "-", "%.2f" % h["effective_confidence"],
                     _scope_label(h, res["project"], res["domain"]) + (" *" if h["pinned"] else ""), h["snippet"]])
    table(["ID", "KIND", "TYPE", "AGE", "CONF", "SCOPE", "TEXT"], rows, right=(3, 4))
    tail = "%d hit%s in %s" % (len(rows), "" if len(rows) == 1 else "s", where)
    if res["used_at"] and any(h["kind"] == "record" for h in res["hits"]):
        tail += "; counted as a use"
    print(paint(tail, "dim"))
    if res.get("note"):
        sys.stderr.write("cortex: %s\n" % res["note"])
    return 0


# -- remember, pin, unpin, show, edit -------------------------------------------------------------

@command
def cmd_remember(args):
    from cortex.ops.manage import remember
    home = _home(create=True)
    scope = "global" if args.global_ else "domain" if args.domain else "project" if args.project else None
    res = remember(home, " ".join(args.text), rtype=args.type, scope=scope, pinned=args.pin, priority=args.priority,
                   cwd=_cwd(args))
    if args.json:
        out_json(res)
        return 0
    r = res["record"]
    verb = {"created": "remembered", "merged": "already known, merged", "unchanged": "already remembered",
            "updated": "already remembered, updated"}.get(res["action"], res["action"])
    print("%s %s  (%s, %s %s%s)" % (verb, paint(r["id"], "cyan"), r["type"], "project" if r["scope"] == "L0" else "domain",
                                    r["scope_id"], ", pinned" if r["pinned"] else ""))
    if res["redactions"]:
        print(paint("%d secret%s redacted before writing" % (res["redactions"], "" if res["redactions"] == 1 else "s"),
                    "yellow"))
    return 0


def _pin(args, value):
    from cortex.ops.manage import set_pinned
    home = _home()
    rec, changed = set_pinned(home, args.id, value)
    if args.json:
        out_json({"changed": changed, "record": rec})
        return 0
    word = "pinned" if value else "unpinned"
    if changed:
        print("%s %s  (%s, %s)" % (word, paint(rec["id"], "cyan"), rec["type"], _one_line(rec["text"], 70)))
    else:
        print("%s was already %s" % (rec["id"], word))
    return 0


@command
def cmd_pin(args):
    return _pin(args, True)


@command
def cmd_unpin(args):
    return _pin(args, False)


def _when(ts, now):
    from cortex.store.index import iso_to_epoch
    from cortex.brief.render import age
    if not ts:
        return "-"
    return "%s (%s ago)" % (ts, age(iso_to_epoch(ts), now))


@command
def cmd_show(args):
    import time
    from cortex.ops.manage import show
    home = _home()
    rec = show(home, args.id)
    if args.json:
        out_json(rec)
        return 0
    now = time.time()
    out = sys.stdout.write
    if rec.get("kind") == "episode":
        head = lambda k: paint(k.ljust(11), "bold")  # noqa: E731
        out("%s%s\n" % (head("passage"), paint(printable(rec["id"]), "cyan")))
        out("%s%s (%s)\n" % (head("session"), printable(rec["session"]), printable(rec.get("client") or "-")))
        out("%s%s\n" % (head("project"), printable(rec.get("project") or "-")))
        out("%sturns %d-%d of %d\n" % (head("turns"), rec["turns"][0], rec["turns"][1], rec.get("of") or 0))
        out("%s%s\n" % (head("at"), printable(_when(rec.get("at"), now))))
        out("%s%s\n" % (head("file"), printable(rec["path"])))
        for t in rec["text_turns"]:
            out("\n%s\n" % paint("turn %d — %s — %s" % (t["n"], t["role"], printable(t["at"] or "-")), "bold"))
            for line in t["text"].splitlines() or [""]:
                out("  %s\n" % printable(line))
        return 0
    label = lambda k: paint(k.ljust(11), "bold")  # noqa: E731

    def w(head, text):  # the record's text: printable, then the colour codes of the heading
        out(head + printable(text) + "\n")

    w(label("id"), rec["id"])
    w(label("type"), "%s, %s%s" % (rec["type"], rec.get("status"), ", pinned" if rec.get("pinned") else ""))
    learned_in = rec.get("project") if rec.get("project") and rec.get("project") != rec["scope_id"] else None
    w(label("scope"), "%s %s%s" % (rec["scope"], rec["scope_id"], "  (learned in %s)" % learned_in if learned_in else ""))
    w(label("weights"), "confidence %.2f, salience %.2f, priority %d, %d tokens" % (
        float(rec.get("confidence", 0)), float(rec.get("salience", 0)), int(rec.get("priority") or 0),
        int(rec.get("tokens") or 0)))
    w(label("created"), _when(rec.get("created"), now))
    w(label("updated"), _when(rec.get("updated"), now))
    if rec.get("branch"):
        w(label("branch"), rec["branch"])
    if rec.get("files"):
        w(label("files"), ", ".join(rec["files"]))
    if rec.get("redactions"):
        w(label("redactions"), "%d secret(s) redacted" % rec["redactions"])
    w(label("file"), rec["path"])
    if rec.get("plan"):
        marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
        out("\n%s\n" % paint("plan", "bold"))
        for item in rec["plan"]:
            w("  ", "%s %s" % (marks.get(item.get("status"), "[ ]"), item.get("text", "")))
    out("\n%s\n" % paint("text", "bold"))
    for line in (rec.get("text") or "").splitlines() or [""]:
        w("  ", line)
    provs = rec.get("provenance") or []
    out("\n%s\n" % paint("provenance (%d)" % len(provs), "bold"))
    for p in provs:
        w("  ", "%s  %s  session %s  %s  %s layer" % (p.get("at"), p.get("client"), p.get("session") or "-",
                                                     p.get("ref") or "-", p.get("layer")))
        if p.get("transcript"):
            out("    %s\n" % paint(printable(p["transcript"]), "dim"))
    seen = rec.get("seen") or []
    used = rec.get("used") or []
    out("\n")
    w(paint("seen (%d)" % len(seen), "bold") + " ", ", ".join(seen) or "-")
    w(paint("used (%d)" % len(used), "bold") + " ", ", ".join(used) or "never")
    return 0


@command
def cmd_edit(args):
    from cortex.ops.manage import edit_record
    home = _home()

    def ask(problem):
        sys.stderr.write("cortex: the edited record is invalid: %s\n" % problem)
        sys.stderr.write("[e]dit again, or [d]iscard your changes? ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        return "edit" if answer in ("e", "edit", "") else "discard"

    res = edit_record(home, args.id, ask=ask if _interactive() else None)
    if args.json:
        out_json(res)
        return 0
    r = res["record"]
    if not res["changed"]:
        print("no changes to %s" % r["id"])
    else:
        print("saved %s and updated the index" % paint(r["id"], "cyan"))
        if res["redactions"]:
            print(paint("%d secret(s) redacted" % res["redactions"], "yellow"))
    return 0


# -- forget, reset ------------------------------------------------------------------------------

def _list_targets(res, project=None, domain=None):
    rows = [[r["action"], (r["id"], "cyan"), r["type"], r["status"], _scope_label(r, project, domain),
             _one_line(r["text"], 120)] for r in res]
    table(["ACTION", "ID", "TYPE", "STATUS", "SCOPE", "TEXT"], rows)


def _print_also(extra: dict, dry_run: bool):
    inbox = extra.get("inbox")
    if inbox and any(inbox.values()):
        if "cursors" in inbox:
            print(paint("%s %d inbox event(s), %d transcript link(s) and %d cursor(s) of the project%s" % (
                "would remove" if dry_run else "also removed", inbox["events"], inbox["blobs"], inbox["cursors"],
                "" if dry_run else "; what its sessions wrote so far will not be read again"), "dim"))
        else:
            print(paint("%s %d processed inbox event(s) and %d transcript link(s) of the records' sessions" % (
                "would remove" if dry_run else "also removed", inbox["events"], inbox["blobs"]), "dim"))
    ep = extra.get("episodes")
    if ep and any(ep.values()):
        if "turns" in ep:
            print(paint("%s %d turn(s) holding the records' words in their sessions' episodes" % (
                "would blank" if dry_run else "also blanked", ep["turns"]), "dim"))
        else:
            print(paint("%s %d episode(s) (what was said in the session%s), %d passage(s) left the index" % (
                ep.get("verb", "would remove" if dry_run else "also removed"), ep["episodes"],
                "" if ep["episodes"] == 1 else "s", ep["passages"]), "dim"))


def _destroy(args, targets, how, what, also=None):
    """Shared by forget and reset: confirm when needed, act (or not, with --dry-run), print.
    `also` does the rest of the work once the records are gone; it returns what to add to the output."""
    from cortex.ops.manage import forget, summary
    hard = bool(getattr(args, "hard", False) or what == "reset")
    if not targets:
        extra = also() if also else {}
        if args.json:
            out_json(dict({"mode": "delete" if hard else "archive", "dry_run": args.dry_run, "count": 0,
                           "records": []}, **extra))
        else:
            print("nothing to %s: no record matches" % ("delete" if hard else "forget"))
            _print_also(extra, args.dry_run)
        return 0
    needs_ok = (len(targets) > 1 or (hard and how != "id")) and not args.yes and not args.dry_run
    if needs_ok:
        preview = [dict(summary(r, p), action="would delete" if hard else "would archive") for r, p in targets]
        if _interactive() and not args.json:
            _list_targets(preview)
            if not _confirm("%s these %d record%s?" % ("Delete" if hard else "Archive", len(targets),
                                                        "" if len(targets) == 1 else "s")):
                print("nothing changed")
                return 1
        else:
            if args.json:
                out_json({"mode": "delete" if hard else "archive", "dry_run": True, "count": len(preview),
                          "records": preview, "confirmed": False})
            else:
                _list_targets(preview)
            raise CortexError("%d record%s match%s and nothing was changed" % (
                len(targets), "" if len(targets) == 1 else "s", "es" if len(targets) == 1 else ""),
                ("pass --yes to delete every record of the project (--dry-run lists them)" if what == "reset" else
                 "pass --yes to %s %s, or name one record by id" % ("delete" if hard else "archive",
                                                                   "it" if len(targets) == 1 else "them all")),
                code=1)
    res = forget(_home(), targets, hard=hard, dry_run=args.dry_run)
    extra = also() if also else {}
    if args.json:
        out_json(dict({"mode": "delete" if hard else "archive", "dry_run": args.dry_run, "count": len(res),
                       "records": res}, **extra))
        return 0
    _list_targets(res)
    _print_also(extra, args.dry_run)
    if args.dry_run:
        print(paint("dry run: nothing changed", "dim"))
    elif not hard:
        print(paint("archived records stay on disk: `cortex recall --all` finds them, `cortex forget --hard` deletes "
                    "them", "dim"))
    return 0


@command
def cmd_forget(args):
    from cortex.ops.manage import find_targets, forget_episodes
    home = _home()
    if args.session and args.target:
        raise CortexError("give either --session SID or an id/query, not both")
    targets, how = find_targets(home, " ".join(args.target), session=args.session, cwd=_cwd(args), scope=args.scope,
                                hard=args.hard)
    also = None
    if args.hard:
        from cortex.ops.manage import forget_in_episodes, purge_session_inbox
        sessions = {p.get("session") for rec, _path in targets for p in rec.get("provenance") or []
                    if isinstance(p, dict)}

        def also():
            # the processed hook payloads of those sessions can hold the same text, and so can their episodes
            out = {"inbox": purge_session_inbox(home, sessions, dry_run=args.dry_run)}
            if args.session:
                out["episodes"] = forget_episodes(home, [args.session], hard=True, dry_run=args.dry_run)
            else:
                out["episodes"] = forget_in_episodes(home, targets, dry_run=args.dry_run)
            return out
    elif args.session:
        def also():
            res = forget_episodes(home, [args.session], hard=False, dry_run=args.dry_run)
            return {"episodes": dict(res, verb="would archive" if args.dry_run else "archived")}
    return _destroy(args, targets, how, "forget", also=also)


@command
def cmd_reset(args):
    from cortex.ops.manage import project_records, resolve_project
    if not args.project:
        raise CortexError("say what to reset: --project (every L0 record of the project of --cwd)")
    home = _home()
    project, _domain, _cfg = resolve_project(home, _cwd(args))
    targets = project_records(home, project["id"])
    from cortex.ops.manage import purge_project_inbox, reset_project_episodes
    # also what the inbox keeps of the project: raw hook payloads, transcript links, read state; and its episodes
    return _destroy(args, targets, "project", "reset",
                    also=lambda: {"inbox": purge_project_inbox(home, project["id"], dry_run=args.dry_run),
                                  "episodes": reset_project_episodes(home, project["id"], dry_run=args.dry_run)})


# -- why -----------------------------------------------------------------------------------------

@command
def cmd_why(args):
    from cortex.brief.why import reasons, why
    home = _home()
    info = why(home, _cwd(args))
    if args.json:
        out_json(info)
        return 0
    w = sys.stdout.write
    lim = info["limits"]
    w("%s %s\n" % (paint("project", "bold"), printable("%s  (root %s, domain %s)" % (
        info["project"], info["project_root"], info["domain"]))))
    if info["block"]:
        w("%s %d records, %d chars, %d tokens (limits %d records, %d tokens, %d chars)\n\n" % (
            paint("block", "bold"), len(info["kept"]), info["chars"], info["tokens"], lim["max_records"],
            lim["max_tokens"], lim["max_chars"]))
        w(printable(info["block"], newlines=True) + "\n\n")
        wt = info["weights"]
        w(paint("In the block, best first: score = TYPE_W + %g*ACTIV + %g*RECENCY + %g*CONF + 0.1*priority"
                % (wt["activation_weight"], wt["recency_weight"], wt["confidence_weight"]), "bold") + "\n")
        rows = [[str(i), (e["id"], "cyan"), e["type"], "%.2f" % e["score"], "%.2f" % e["activation"],
                 "%.2f" % e["recency"], "%.2f" % e["type_weight"], "%.2f" % e["confidence"], "yes" if e["pinned"] else "",
                 _one_line(e["text"], 120)] for i, e in enumerate(info["kept"], 1)]
        table(["#", "ID", "TYPE", "SCORE", "ACTIV", "RECENCY", "TYPE_W", "CONF", "PINNED", "TEXT"], rows,
              right=(0, 3, 4, 5, 6, 7))
    else:
        w("%s none: no record of this project or its domain qualifies for the block\n" % paint("block", "bold"))
    left = info["left"]
    if left:
        w("\n" + paint("Left out (%d): %s" % (len(left), ", ".join("%s %d" % kv for kv in sorted(reasons(left).items()))),
                       "bold") + "\n")
        shown = left if args.all else left[:PREVIEW_LEFT]
        rows = [[(e["id"], "cyan"), e["type"], "%.2f" % e["score"], (e["reason"], "yellow"), _one_line(e["text"], 120)]
                for e in shown]
        table(["ID", "TYPE", "SCORE", "REASON", "TEXT"], rows, right=(2,))
        if len(shown) < len(left):
            w(paint("... %d more (cortex why --all lists them)\n" % (len(left) - len(shown)), "dim"))
    return 0


# -- doctor --------------------------------------------------------------------------------------

@command
def cmd_doctor(args):
    from cortex.ops.doctor import run_checks
    info = run_checks(Home(), cwd=_cwd(args), progress=progress("checking records"))
    if args.json:
        out_json(info)
        return 0 if info["ok"] else 1
    style = {"ok": "green", "warn": "yellow", "fail": "red+bold"}
    namew = max(len(c["name"]) for c in info["checks"])
    for c in info["checks"]:
        mark = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}[c["status"]]
        print("%s  %s  %s" % (paint(mark, style[c["status"]]), c["name"].ljust(namew), printable(c["summary"])))
        pad = " " * (namew + 8)
        if c["status"] != "ok":
            for d in c["details"]:
                print(pad + printable(d))
            if c["fix"]:
                print(pad + paint("fix: " + c["fix"], "cyan"))
    f, wn = info["failures"], info["warnings"]
    print()
    if f:
        print(paint("%d problem%s, %d warning%s" % (f, "" if f == 1 else "s", wn, "" if wn == 1 else "s"), "red+bold"))
    else:
        print(paint("all good" + (" (%d warning%s)" % (wn, "" if wn == 1 else "s") if wn else ""), "green"))
    return 0 if info["ok"] else 1


# -- inbox ---------------------------------------------------------------------------------------

def cmd_inbox(args):
    """`cortex inbox` with no action: its help on stderr, exit 2 (a usage error, like every command)."""
    args.usage_parser.print_help(sys.stderr)
    return 2


@command
def cmd_inbox_retry(args):
    from cortex.ops.manage import inbox_retry
    home = _home()
    names = inbox_retry(home, args.ids, dry_run=args.dry_run)
    if args.json:
        out_json({"retried": names, "count": len(names), "dry_run": args.dry_run})
        return 0
    if not names:
        print("no failed events to retry")
        return 0
    for n in names:
        print("%s %s" % ("would re-queue" if args.dry_run else "re-queued", n))
    if not args.dry_run:
        print(paint("%d event%s moved back to pending/; the next cortex-normalize run processes them"
                    % (len(names), "" if len(names) == 1 else "s"), "dim"))
    return 0


@command
def cmd_inbox_show(args):
    from cortex.ops.manage import inbox_show
    home = _home()
    info = inbox_show(home, args.id)
    if args.json:
        out_json(info)
        return 0
    w = sys.stdout.write
    w("%s %s\n%s %s\n%s %s (%d bytes)\n" % (paint("event", "bold"), printable(info["name"]), paint("state", "bold"),
                                             info["state"], paint("path ", "bold"), printable(info["path"]), info["size"]))
    if info["reason"]:
        w("%s %s\n" % (paint("reason", "red+bold"), printable(info["reason"], newlines=True).replace("\n", "\n       ")))
    w("\n")
    if info["event"] is not None:
        w(printable(json.dumps(info["event"], indent=2, ensure_ascii=False), newlines=True) + "\n")
    else:
        w(paint("(not JSON; the file as it is:)", "dim") + "\n" + printable(info["raw"], newlines=True) + "\n")
    return 0


@command
def cmd_inbox_list(args):
    import time
    from cortex.inbox import maildir as inbox
    from cortex.ops.manage import read_reason
    from cortex.brief.render import age
    home = _home()
    states = [args.state] if args.state else ["pending", "claimed", "failed"]
    out, now = [], time.time()
    for state in states:
        for name in inbox.list_names(home, state):
            if name.endswith(".reason.txt"):
                continue
            path = os.path.join(home.inbox_dir(state), name)
            try:
                mtime = os.path.getmtime(path)
            except OSError:
                continue
            reason = read_reason(home, name) if state == "failed" else None
            out.append({"state": state, "name": name, "age": age(mtime, now),
                        "reason": reason.splitlines()[0] if reason else None})
    if args.json:
        out_json({"events": out, "count": len(out)})
        return 0
    if not out:
        print("no events in %s" % ", ".join(states))
        return 0
    table(["STATE", "AGE", "EVENT", "REASON"], [[(e["state"], "red" if e["state"] == "failed" else None), e["age"],
                                                e["name"], e["reason"] or ""] for e in out], right=(1,))
    return 0


# -- export, import ------------------------------------------------------------------------------

@command
def cmd_export(args):
    from cortex.ops.manage import export_line, export_records, resolve_project, where
    home = _home()
    scope_ids = None
    if args.scope != "all":
        project, domain, _cfg = resolve_project(home, _cwd(args))
        scope_ids = where(project["id"], domain, args.scope)
    errors = []
    n = 0
    if args.output:
        from cortex.core.fsutil import atomic_write_bytes
        lines = [export_line(r) + "\n" for r in export_records(home, scope_ids, errors, progress("exporting"))]
        n = len(lines)
        if args.episodes:
            from cortex.ops.manage import export_episodes
            lines += [json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n"
                      for e in export_episodes(home, scope_ids, errors)]
        atomic_write_bytes(os.path.abspath(args.output), "".join(lines).encode("utf-8"), mode=0o600)
    else:
        buf = getattr(sys.stdout, "buffer", None)
        for rec in export_records(home, scope_ids, errors, progress("exporting")):
            line = export_line(rec) + "\n"
            if buf is not None:
                buf.write(line.encode("utf-8"))
            else:
                sys.stdout.write(line)
            n += 1
        if args.episodes:
            from cortex.ops.manage import export_episodes
            for e in export_episodes(home, scope_ids, errors):
                line = json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n"
                if buf is not None:
                    buf.write(line.encode("utf-8"))
                else:
                    sys.stdout.write(line)
        sys.stdout.flush()
    for path, err in errors:
        sys.stderr.write("cortex: skipped an unreadable record: %s\n" % err)
    if args.output:
        sys.stderr.write("exported %d records to %s\n" % (n, args.output))
    if errors:
        raise CortexError("%d record file(s) could not be exported" % len(errors),
                          "fix or move them, then export again (see `cortex doctor`)")
    return 0


@command
def cmd_import(args):
    from cortex.ops.manage import import_records, parse_import
    if args.file == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode("utf-8")
    else:
        try:
            with open(args.file, "rb") as f:
                data = f.read()
        except OSError as e:
            raise CortexError("cannot read %s: %s" % (args.file, e.strerror or e))
    lines, eps = [], []
    for line in data.split(b"\n"):
        if line.startswith(b'{"episode":'):  # a line of `cortex export --episodes`
            try:
                eps.append(json.loads(line.decode("utf-8")))
                continue
            except ValueError:
                pass
        lines.append(line)
    recs = parse_import(lines)
    home = _home(create=True)
    stats = import_records(home, recs, progress=progress("importing"), dry_run=args.dry_run)
    if eps:
        from cortex.ops.manage import import_episode
        for e in eps:
            import_episode(home, e, dry_run=args.dry_run)
        stats["episodes"] = len(eps)
    if args.json:
        out_json(stats)
        return 0
    print("%s %d records: %d created, %d replaced, %d unchanged%s" % (
        "would import" if args.dry_run else "imported", stats["records"], stats["created"], stats["replaced"],
        stats["unchanged"], "; %d episodes" % stats["episodes"] if stats.get("episodes") else ""))
    return 0


# -- wiring --------------------------------------------------------------------------------------

def _json_flag(p):
    p.add_argument("--json", action="store_true", help="print the result as JSON (see docs/commands.md)")


def _cwd_flag(p):
    p.add_argument("--cwd", metavar="DIR", help="the project directory (default: the current directory)")


def add_commands(sub) -> None:
    """Add the people-facing subcommands to the umbrella parser's subparsers."""
    from cortex.store.records import TYPES

    p = sub.add_parser("recall", help="search memory by words (counts as a use of each hit)",
                       description="Search the records of this project and its domain, best first. "
                                   "Each hit returned counts as a use (raises its activation).")
    p.add_argument("query", nargs="+", metavar="QUERY", help="words to look for")
    p.add_argument("--scope", choices=["project", "domain", "all"],
                   help="only the project, only its domain, or every scope (default: the project, then its domain)")
    p.add_argument("--type", action="append", metavar="T", help="only records of this type (repeat or comma-separate)")
    p.add_argument("-k", type=int, default=10, metavar="N", help="at most N hits (default 10)")
    _cwd_flag(p)
    p.add_argument("--all", action="store_true", help="include archived and superseded records")
    p.add_argument("--no-use", action="store_true", help="do not count this recall as a use of the hits")
    p.add_argument("--kind", choices=["record", "episode"],
                   help="only records, or only episode passages (what was said in earlier sessions)")
    _json_flag(p)
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("remember", help="write a record now",
                       description="Write a record now (secrets are redacted; the same text twice is one record). "
                                   "Default type: learned. Default scope: the project (preferences: its domain).")
    p.add_argument("text", nargs="+", metavar="TEXT")
    p.add_argument("--type", default="learned", metavar="T", help="one of %s (default learned); also architecture, convention, pattern, constraint, "
                        "requirement (stored as decision), context, insight, note (learned), bug (gotcha): "
                        "see docs/records.md" % ", ".join(TYPES))
    g = p.add_mutually_exclusive_group()
    g.add_argument("--project", action="store_true", help="keep it in this project (L0; the default but for preferences)")
    g.add_argument("--domain", action="store_true", help="share it with every project of this project's domain (L1)")
    g.add_argument("--global", dest="global_", action="store_true",
                   help="the same as --domain: Cortex has no scope wider than a domain")
    p.add_argument("--pin", action="store_true", help="pin it: it always leads the block")
    p.add_argument("--priority", type=int, metavar="N", help="adds 0.1*N to its score")
    _cwd_flag(p)
    _json_flag(p)
    p.set_defaults(func=cmd_remember)

    p = sub.add_parser("forget", help="archive records (or delete them with --hard)",
                       description="Archive a record (by id) or the records matching every word of a query, or every "
                                   "record of a session. Archived records leave the block and recall (recall --all "
                                   "still finds them); --hard deletes the files and index rows.")
    p.add_argument("target", nargs="*", metavar="ID|QUERY")
    p.add_argument("--session", metavar="SID", help="every record whose provenance names this session")
    p.add_argument("--hard", action="store_true", help="delete for good instead of archiving")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask before changing several records")
    p.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    p.add_argument("--scope", choices=["project", "domain", "all"], help="where a query looks (default: project + domain)")
    _cwd_flag(p)
    _json_flag(p)
    p.set_defaults(func=cmd_forget)

    p = sub.add_parser("reset", help="delete every record of a project (--project)",
                       description="Delete every L0 record of the project of --cwd (its files and index rows).")
    p.add_argument("--project", action="store_true", help="the project's own records (L0)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask")
    p.add_argument("--dry-run", action="store_true", help="show what would be deleted, delete nothing")
    _cwd_flag(p)
    _json_flag(p)
    p.set_defaults(func=cmd_reset)

    for name, fn, help_ in (("pin", cmd_pin, "pin a record: it always leads the block"),
                            ("unpin", cmd_unpin, "unpin a record")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("id", metavar="ID", help="a record id or a unique prefix of one")
        _json_flag(p)
        p.set_defaults(func=fn)

    p = sub.add_parser("edit", help="edit a record in $EDITOR (validated before it is saved)")
    p.add_argument("id", metavar="ID")
    _json_flag(p)
    p.set_defaults(func=cmd_edit)

    p = sub.add_parser("show", help="a record in full, with its provenance and uses; or an episode passage")
    p.add_argument("id", metavar="ID", help="a record id (or unique prefix), or SESSION:TURN for an episode passage")
    _json_flag(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("why", help="the session-start block and why each record is in it or not")
    _cwd_flag(p)
    p.add_argument("--all", action="store_true", help="list every record left out (default: the first %d)" % PREVIEW_LEFT)
    _json_flag(p)
    p.set_defaults(func=cmd_why)

    p = sub.add_parser("doctor", help="check the home, inbox, index, hooks and schedule; say how to fix problems")
    _cwd_flag(p)
    _json_flag(p)
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("inbox", help="look at and re-queue inbox events (retry, show, list)")
    isub = p.add_subparsers(dest="inbox_command", metavar="ACTION")
    q = isub.add_parser("retry", help="move failed events back to pending/ (all when no name is given)")
    q.add_argument("ids", nargs="*", metavar="ID", help="event file names or unique prefixes")
    q.add_argument("--dry-run", action="store_true")
    _json_flag(q)
    q.set_defaults(func=cmd_inbox_retry)
    q = isub.add_parser("show", help="print one event file and, if it failed, why")
    q.add_argument("id", metavar="ID", help="an event file name or a unique prefix")
    _json_flag(q)
    q.set_defaults(func=cmd_inbox_show)
    q = isub.add_parser("list", help="events waiting, claimed or failed")
    q.add_argument("--state", choices=["tmp", "pending", "claimed", "done", "failed"])
    _json_flag(q)
    q.set_defaults(func=cmd_inbox_list)
    p.set_defaults(func=cmd_inbox, usage_parser=p)

    p = sub.add_parser("export", help="write records as JSON Lines (stdout, or -o FILE)")
    p.add_argument("--scope", choices=["project", "domain", "all"], default="all",
                   help="the project of --cwd, its domain, or every record (default all)")
    _cwd_flag(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically, mode 600) instead of stdout")
    p.add_argument("--episodes", action="store_true",
                   help="also one line per episode (what was said in each session); `cortex import` reads them")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import", help="read records from a JSON Lines export, keeping their ids")
    p.add_argument("file", metavar="FILE", help="the export file, or - for stdin")
    p.add_argument("--dry-run", action="store_true", help="check the file and count, write nothing")
    _json_flag(p)
    p.set_defaults(func=cmd_import)
