"""`cortex install`, `cortex uninstall`, `cortex schedule`: argument parsing and the printed reports
around cortex.install.hooks and cortex.install.schedule."""
import sys

from cortex.cli.output import print_json

from cortex.install import hooks, schedule


def format_install_report(r: dict) -> str:
    verb = r["action"]
    lines = []
    if not r["changed"]:
        if verb == "install":
            lines.append("cortex install %s: already installed in %s; nothing changed" % (r["client"], r["path"]))
        else:
            lines.append("cortex uninstall %s: no Cortex hooks in %s; nothing changed" % (r["client"], r["path"]))
    else:
        head = "would change" if r["dry_run"] else "changed"
        lines.append("cortex %s %s: %s %s" % (verb, r["client"], head, r["path"]))
        sign = {"add": "+", "update": "~", "remove": "-"}
        for c in r["changes"]:
            lines.append("  %s %s" % (sign[c["op"]], c["line"]))
        if r["dry_run"]:
            lines.append("dry run: nothing was written")
        elif r["backup"]:
            lines.append("backup of the previous file: %s" % r["backup"])
    for n in r["notes"]:
        lines.append(n)
    return "\n".join(lines)


def _install_cmd(args):
    from cortex.core.log import error_line
    if getattr(args, "mcp", False) and args.client == "claude-code" and args.user:
        from cortex.install import mcp
        try:  # refuse before the hooks change, not halfway
            mcp.apply(args.client, args.command, user=True, dry_run=True)
        except hooks.InstallError as e:
            error_line(str(e))
            return 1
    try:
        report = hooks.apply(args.client, args.command, project=args.project, user=args.user, dry_run=args.dry_run)
    except hooks.InstallError as e:
        if args.json:
            print_json({"client": args.client, "action": args.command, "error": str(e)})
        error_line(str(e))
        return 1
    mcp_report = None
    if getattr(args, "mcp", False):
        from cortex.install import mcp
        try:
            mcp_report = mcp.apply(args.client, args.command, project=args.project, user=args.user,
                                   dry_run=args.dry_run)
        except hooks.InstallError as e:
            error_line(str(e))
            return 1
    if args.json:
        out = dict(report)
        if not args.dry_run:
            out.pop("settings", None)
        if mcp_report is not None:
            out["mcp"] = mcp_report
        print_json(out)
    else:
        print(format_install_report(report))
        if mcp_report is not None:
            print(format_install_report(dict(mcp_report, client=mcp_report["client"] + " (MCP server)")))
    return 0


def _add_target_args(p):
    p.add_argument("client", choices=hooks.CLIENTS)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--project", metavar="DIR",
                       help="the project's settings (default for claude-code and gemini: the current directory)")
    where.add_argument("--user", action="store_true",
                       help="the user's settings in the home directory (default for codex: $CODEX_HOME/hooks.json)")
    p.add_argument("--mcp", action="store_true",
                   help="also register (or remove) `cortex mcp`, the MCP server (docs/clients.md)")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def add_commands(sub):
    """Add `install`, `uninstall` and `schedule` to the umbrella parser's subparsers."""
    p = sub.add_parser("install", help="register Cortex's hooks with a client (claude-code, codex, gemini)",
                       description="Merge Cortex's hooks into a client's settings file (backup first, atomic write).")
    _add_target_args(p)
    p.set_defaults(func=_install_cmd)
    p = sub.add_parser("uninstall", help="remove Cortex's hooks from a client's settings",
                       description="Remove exactly the hooks `cortex install` wrote; other hooks stay.")
    _add_target_args(p)
    p.set_defaults(func=_install_cmd)
    _add_schedule_commands(sub)


def format_schedule_report(r: dict) -> str:
    lines = []
    act = r["action"]
    if act == "install" and r["kind"] == "cron":
        lines.append("cortex schedule install: no systemd or launchd here; add this line with `crontab -e`:")
        lines.append("  " + r["cron"])
        return "\n".join(lines)
    if not r["files"] and act == "remove":
        return "cortex schedule remove: nothing to remove (no Cortex schedule files found)"
    verb = "would write" if r["dry_run"] else "wrote"
    for f in r["files"]:
        if act == "install":
            if f["state"] == "unchanged":
                lines.append("  = %s (unchanged)" % f["path"])
            else:
                lines.append("  %s %s (%s)" % ("+" if f["state"] == "added" else "~", f["path"], f["state"]))
        else:
            state = "would remove" if f["state"] == "removed" and r["dry_run"] else f["state"]
            lines.append("  %s %s (%s)" % ("-" if f["state"] == "removed" else "=", f["path"], state))
    if act == "install":
        head = ("cortex schedule install: already installed; nothing changed" if not r["changed"]
                else "cortex schedule install: %s %d file(s)" % (verb, sum(f["state"] != "unchanged" for f in r["files"])))
    else:
        head = "cortex schedule remove: %s %d file(s)" % ("would delete" if r["dry_run"] else "deleted",
                                                          sum(f["state"] == "removed" for f in r["files"]))
    lines.insert(0, head)
    if r["dry_run"]:
        lines.append("dry run: nothing was written or run; the commands %s would run:" % act)
        lines.extend("  " + c for c in r["commands"])
        return "\n".join(lines)
    if r["activation"] == "done":
        lines.append("%s: %s" % ("activated" if act == "install" else "deactivated", "; ".join(r["commands"])))
    elif r.get("activation_error") and (act == "install" or r["changed"]):
        lines.append("not %s: %s. Run these yourself:" % ("activated" if act == "install" else "deactivated",
                                                         r["activation_error"]))
        lines.extend("  " + c for c in r["commands"])
        if act == "install":
            lines.append("or, without systemd/launchd, add this line with `crontab -e`:")
            lines.append("  " + r["cron"])
    return "\n".join(lines)


def _schedule_cmd(args):
    activate = not args.no_activate
    if args.schedule_action == "install":
        r = schedule.install(dry_run=args.dry_run, activate=activate)
    else:
        r = schedule.remove(dry_run=args.dry_run, activate=activate)
    if args.json:
        print_json(r)
    else:
        print(format_schedule_report(r))
    # the files are written but the scheduler refused them: the schedule is not running
    return 1 if r.get("activation") == "failed" else 0


def _add_schedule_commands(sub):
    p = sub.add_parser("schedule", help="run the normalizer automatically (systemd path+timer, launchd, or cron)",
                       description="Install or remove the units that run cortex-normalize when events arrive "
                                   "and every %d minutes." % schedule.TIMER_MINUTES)
    ss = p.add_subparsers(dest="schedule_action", metavar="ACTION")
    # no action: the help on stderr and exit 2, as `cortex inbox` does
    p.set_defaults(func=lambda args, _p=p: _p.print_help(sys.stderr) or 2)
    for name, helptext in (("install", "write the units (or launchd agent) and activate them"),
                           ("remove", "deactivate and delete exactly what install wrote")):
        q = ss.add_parser(name, help=helptext)
        q.add_argument("--dry-run", action="store_true", help="show what would change, write and run nothing")
        q.add_argument("--no-activate", action="store_true",
                       help="write the files but do not call systemctl / launchctl (also: CORTEX_SCHEDULE_NO_ACTIVATE=1)")
        q.add_argument("--json", action="store_true")
        q.set_defaults(func=_schedule_cmd)
