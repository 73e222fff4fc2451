"""`cortex sync [init URL | status | migrate]`: argument parsing and printing around cortex.ops.sync."""
import json
import sys

from cortex.core.errors import CortexError
from cortex.core.home import Home


def _home():
    from cortex.ops.manage import open_home
    return open_home(Home(), create=True)


def _print_held(held):
    for h in held:
        sys.stderr.write("cortex sync: held back %s: %s\n" % (h["id"], h["reason"]))


def cmd_sync(args):
    from cortex.ops import sync as lib
    from cortex.core.log import get_logger
    home = _home()
    res = lib.sync(home, dry_run=args.dry_run, log=None if args.dry_run else get_logger(home, component="sync"))
    if args.json:
        print(json.dumps(res, indent=1, sort_keys=True))
        return 0
    if args.dry_run:
        for key, label in (("would_send", "would send"), ("would_receive", "would receive"),
                           ("would_delete_here", "would delete here"), ("would_delete_there", "would delete there")):
            for path in res[key]:
                print("%-18s %s" % (label, path))
        print("dry run: %d to send, %d to receive, %d to merge, %d held back; nothing changed" % (
            res["sent"], res["received"], res["merged"], len(res["held"])))
    else:
        print("synced with %s (%s): %d sent, %d received, %d merged, %d deleted here, %d deleted there%s" % (
            res["remote"], res["branch"], res["sent"], res["received"], res["merged"], res["deleted_here"],
            res["deleted_there"], ", %d held back" % len(res["held"]) if res["held"] else ""))
    _print_held(res["held"])
    return 0


def cmd_sync_init(args):
    from cortex.ops import sync as lib
    home = _home()
    res = lib.init(home, args.url, branch=args.branch)
    if args.json:
        print(json.dumps({"remote": res["remote"], "branch": res["branch"],
                          "migrated": [{"from": a, "to": b, "records": n} for a, b, n in res["migrated"]]}))
        return 0
    for old, new, n in res["migrated"]:
        print("moved %d record(s) of project %s to its repository id %s" % (n, old, new))
    print("sync set up with %s (branch %s); nothing was sent yet.\n"
          "Choose what travels in %s (sync.domains, sync.projects; docs/sync.md), check with "
          "`cortex sync --dry-run`, then run `cortex sync`." % (res["remote"], res["branch"], home.config_yaml))
    return 0


def cmd_sync_status(args):
    from cortex.ops import sync as lib
    from cortex.model.scope import project_for
    import os
    home = _home()
    info = lib.status(home)
    info["this_project"] = project_for(os.getcwd())["id"]
    if args.json:
        print(json.dumps(info, indent=1, sort_keys=True))
        return 0
    if not info["set_up"]:
        print("sync: not set up (nothing leaves this machine); `cortex sync init URL` sets it up")
    else:
        print("sync: %s, branch %s; last synced %s" % (info["remote"], info["branch"],
                                                       info.get("last_synced_at") or "never"))
    print("domains shared: %s" % (", ".join(info["domains"]) or "none"))
    print("projects shared: %s" % (", ".join(info["projects"]) or "none"))
    print("this folder's project id: %s" % info["this_project"])
    for scope, n in sorted(info["chosen"].items()):
        print("  %-50s %d record(s)" % (scope, n))
    if info.get("pending"):
        p = info["pending"]
        print("since the last sync: %d to send, %d to receive (as of the last fetch), %d held back" % (
            p["sent"], p["received"], len(p["held"])))
        _print_held(p["held"])
    return 0


def cmd_sync_migrate(args):
    from cortex.ops import sync as lib
    import os
    home = _home()
    moved = lib.migrate(home, folders=[os.path.abspath(f) for f in args.folders])
    if args.json:
        print(json.dumps([{"from": a, "to": b, "records": n} for a, b, n in moved]))
        return 0
    for old, new, n in moved:
        print("moved %d record(s) of project %s to %s" % (n, old, new))
    print("%d project(s) moved%s" % (len(moved), "; index rebuilt" if moved else ""))
    return 0


def after_normalize(home, quiet: bool = False) -> int:
    """cortex-normalize's hook: sync when `sync.after_normalize` is on and sync is set up.  A failure is one
    line on stderr (and in the log); the normalizer's own result stands.  Returns 1 on failure."""
    from cortex.core import config as config_mod
    try:
        cfg = config_mod.load(home)
    except config_mod.ConfigError:
        return 0
    if not (cfg.get("sync") or {}).get("after_normalize"):
        return 0
    from cortex.ops import sync as lib
    if lib.settings(home) is None:
        return 0
    from cortex.core.log import error_line, get_logger
    log = get_logger(home, component="sync")
    try:
        res = lib.sync(home, cfg=cfg, log=log)
    except CortexError as e:
        log.warning("sync_failed", error=str(e))
        error_line("sync after normalize: %s" % e, e.hint)
        return 1
    if not quiet:
        print("cortex sync: %d sent, %d received, %d merged" % (res["sent"], res["received"], res["merged"]))
    _print_held(res["held"])
    return 0


def add_commands(sub) -> None:
    from cortex.cli.commands import command
    p = sub.add_parser("sync", help="share chosen records with other machines and people over a git remote",
                       description="Exchange the chosen records with the git remote set by `cortex sync init URL` "
                                   "(docs/sync.md).")
    p.add_argument("--dry-run", action="store_true", help="show what would travel; change nothing (fetches)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=command(cmd_sync))
    ssub = p.add_subparsers(dest="sync_command", metavar="SUBCOMMAND")
    q = ssub.add_parser("init", help="set up syncing with a git remote (nothing is sent until `cortex sync`)")
    q.add_argument("url", help="a git repository you can push to (ssh, https, or a local path)")
    q.add_argument("--branch", default="main")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=command(cmd_sync_init))
    q = ssub.add_parser("status", help="what is set up, chosen, and waiting to travel (no network)")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=command(cmd_sync_status))
    q = ssub.add_parser("migrate", help="move records of git projects to ids that follow the repository")
    q.add_argument("folders", nargs="*", help="project folders to look at besides those Cortex has seen sessions in")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=command(cmd_sync_migrate))
