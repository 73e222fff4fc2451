"""`cortex`: the umbrella command.  Each subcommand is a thin wrapper over a library call."""
import argparse
import os
import sys

from cortex import __version__
from cortex.cli.output import print_json
from cortex.core.errors import CortexError
from cortex.core.home import Home


def cmd_demo(args):
    from cortex.cli.demo import run_demo
    from cortex.core.log import error_line
    try:
        return run_demo(keep=args.keep, home_dir=args.home)
    except CortexError as e:
        error_line(str(e), e.hint)
        return e.code


def cmd_normalize(args):
    from cortex.cli.normalize import main
    return main((["--watch"] if args.watch else []) + (["--quiet"] if args.quiet else []))


def cmd_session_start(args):
    from cortex.brief.session_start import main
    return main((["--cwd", args.cwd] if args.cwd else []) + (["--client", args.client] if args.client else []))


def cmd_reindex(args):
    from cortex.core import config
    from cortex.store.indexer import reindex
    from cortex.core.log import get_logger
    home = Home().ensure()
    cfg = config.load(home, fast=False)
    from cortex.cli.progress import progress
    res = reindex(home, cfg, log=get_logger(home, component="reindex"),
                  progress=progress("reindexing: record", quiet=args.json or args.quiet))
    if args.json:
        print_json({"records": res["records"], "passages": res.get("passages", 0),
                    "unreadable": [{"path": p, "error": e} for p, e in res["unreadable"]]})
    else:
        print("reindexed %d records and %d episode passages into %s" % (res["records"], res.get("passages", 0),
                                                                         home.index_db))
        for path, err in res["unreadable"]:
            print("skipped (unreadable, left untouched): %s%s" % ("" if path in err else path + ": ", err),
                  file=sys.stderr)
    return 1 if res["unreadable"] else 0


def cmd_status(args):
    from cortex.ops.status import status
    info = status(Home())
    if args.json:
        print_json(info)
    else:
        from cortex.ops.status import format_status
        print(format_status(info))
    return 0


def _store_and_cfg():
    from cortex.core import config
    from cortex.store.records import RecordStore
    home = Home().ensure()
    return home, RecordStore(home.records), config.load(home, fast=False)


def _reindex_changed(home, store, cfg):
    if store.changed:
        from cortex.store.indexer import update_index
        from cortex.store.index import connect
        scopes = set()
        con = connect(home.index_db, readonly=True)
        try:
            scopes = {r[0] for r in con.execute("SELECT DISTINCT scope_id FROM records")}
        finally:
            con.close()
        update_index(home, cfg, set(store.changed), scopes)


def _maybe_locked(home, dry_run):
    import contextlib
    from cortex.store.journal import writing
    # the lock, the repair of a killed writer's change, and an intent kept until the index rows are refreshed
    return contextlib.nullcontext() if dry_run else writing(home, wait=60.0)


def cmd_consolidate(args):
    from cortex.curate.consolidate import consolidate_groups
    home, store, cfg = _store_and_cfg()
    with _maybe_locked(home, args.dry_run):  # the changes and their index rows under one hold of the run lock
        merges = consolidate_groups(home, store, cfg, dry_run=args.dry_run)
        if not args.dry_run:
            _reindex_changed(home, store, cfg)
    if args.json:
        print_json([{"keep": k, "merged": o} for k, o in merges])
    else:
        for keep, others in merges:
            print("%s %s <- %s" % ("would merge" if args.dry_run else "merged", keep, ", ".join(others)))
        print("%d group(s)%s" % (len(merges), " (dry run: nothing changed)" if args.dry_run else ""))
    return 0


def cmd_lifecycle(args):
    from cortex.curate.consolidate import lifecycle
    home, store, cfg = _store_and_cfg()
    with _maybe_locked(home, args.dry_run):
        actions = lifecycle(home, store, cfg, dry_run=args.dry_run)
        if not args.dry_run:
            _reindex_changed(home, store, cfg)
    if args.json:
        print_json([{"id": i, "action": a, "reason": r} for i, a, r in actions])
    else:
        for rid, action, why in actions:
            print("%-8s %s  %s" % (("would " if args.dry_run else "") + action, rid, why))
        print("%d change(s)%s" % (len(actions), " (dry run: nothing changed)" if args.dry_run else ""))
    return 0


def cmd_mcp(args):
    from cortex.cli.mcp_server import main as mcp_main
    return mcp_main()


def cmd_bench(args):
    from cortex.bench.run import run_args
    return run_args(args)


# Commands of cortex.cli.commands that need neither the bench's options nor the install/schedule commands:
# for these, main() builds the parser without importing cortex.bench, cortex.install.hooks, cortex.install.schedule
# (start-up time of `cortex recall`).  The arguments parse the same either way.
LIGHT_COMMANDS = frozenset({"recall", "remember", "show", "why", "forget"})


# Commands that do not use the Cortex home of CORTEX_HOME (the demo makes its own; bench uses temporary ones).
HOMELESS_COMMANDS = frozenset({"demo", "bench"})


def _parser_of(ap, args):
    """The (sub)parser that parsed `args`: the deepest subcommand named in them."""
    parser = ap
    for dest in ("command", "inbox_command", "schedule_action"):
        name = getattr(args, dest, None)
        if not name:
            continue
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                parser = action.choices[name]
                break
    return parser


def build_parser(command: str = None):
    light = command in LIGHT_COMMANDS
    ap = argparse.ArgumentParser(prog="cortex", description="Cortex: memory across coding-assistant sessions.")
    ap.add_argument("--version", action="version", version="cortex %s" % __version__)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", help="run the whole loop on bundled real transcripts and print the block")
    p.add_argument("--keep", action="store_true", help="keep the temporary home and print its path")
    p.add_argument("--home", help="use this directory as the demo home instead of a temporary one")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("normalize", help="process pending events (same as cortex-normalize)")
    p.add_argument("--watch", action="store_true", help="keep running, normalizing as events arrive")
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=cmd_normalize)

    p = sub.add_parser("session-start", help="print the session-start block (same as cortex-session-start)")
    p.add_argument("--cwd", help="project directory (default: the hook payload's cwd, or this directory)")
    p.add_argument("--client", choices=["claude-code", "codex", "gemini"])
    p.set_defaults(func=cmd_session_start)

    p = sub.add_parser("reindex", help="rebuild the index from the record files alone")
    p.add_argument("--json", action="store_true", help="print the result as JSON (see docs/commands.md)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress line")
    p.set_defaults(func=cmd_reindex)

    p = sub.add_parser("status", help="inbox counts, last normalize run, records per scope")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("consolidate", help="merge groups of near-duplicate records (originals kept as superseded)")
    p.add_argument("--dry-run", action="store_true", help="show the merges without changing anything")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_consolidate)

    p = sub.add_parser("lifecycle", help="archive faded records and prune long-archived ones (normalize does this too)")
    p.add_argument("--dry-run", action="store_true", help="show what would change without changing anything")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_lifecycle)

    p = sub.add_parser("mcp", help="serve memory as MCP tools over stdio (search, timeline, get, remember, forget)",
                       description="A stdio MCP server for the client to start (needs pip install "
                                   "'cortex-memory[mcp]'); see docs/clients.md.")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("bench", help="benchmarks: hot paths beside python3 -c pass; --locomo for retrieval")
    if not light:
        from cortex.bench.run import add_arguments as add_bench_arguments
        add_bench_arguments(p)
    p.set_defaults(func=cmd_bench)

    try:  # the commands for people: recall, remember, forget, pin, show, why, doctor, inbox, export...
        from cortex.cli.commands import add_commands as add_human_commands
        add_human_commands(sub)
    except ImportError:
        pass

    if not light:
        from cortex.cli.sync import add_commands as add_sync_commands  # cortex sync [init|status|migrate]
        add_sync_commands(sub)

    if not light:
        try:  # client hook installation and scheduling live in their own modules
            from cortex.cli.clients import add_commands as add_install_commands
            add_install_commands(sub)
        except ImportError:
            pass
    return ap


def main(argv=None):
    os.umask(0o077)  # everything Cortex creates is the user's alone
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = build_parser(argv[0] if argv else None)
    args, extra = ap.parse_known_args(argv)
    if extra:  # a bad flag: the subcommand's usage, not the top-level one
        _parser_of(ap, args).error("unrecognized arguments: %s" % " ".join(extra))
    if not getattr(args, "func", None):
        ap.print_help()
        return 0
    from cortex.core.home import home_problem, relative_home_note
    from cortex.core.log import error_line
    if args.command not in HOMELESS_COMMANDS and args.command != "doctor":  # doctor reports it among its checks
        problem = home_problem(Home().root)
        if problem:
            error_line(*problem)
            return 2
        note = relative_home_note()
        if note:
            error_line(note)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130
    except CortexError as e:
        from cortex.core.log import error_line
        error_line(str(e), e.hint)
        return e.code
    except BrokenPipeError:  # output piped into head/less that closed early: not an error
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as e:
        from cortex.core.config import ConfigError
        from cortex.core.log import error_line, get_logger
        logged = False
        home = Home()
        if args.command not in HOMELESS_COMMANDS and os.path.isdir(home.root):  # never create a home to log
            try:
                get_logger(home, component="cli").exception("command_failed", command=args.command)
                logged = os.path.isfile(home.log_file)
            except Exception:
                pass
        if isinstance(e, ConfigError):
            error_line(str(e), "fix config.yaml (see docs/configuration.md)")
            return 2
        if isinstance(e, OSError) and getattr(e, "filename", None):
            error_line("%s failed: %s: %s" % (args.command, e.strerror or type(e).__name__, e.filename),
                       "check that path (permissions, free space)" + (
                           "; details are in the log (%s)" % home.log_file if logged else ""))
        else:
            error_line("%s failed: %s: %s" % (args.command, type(e).__name__, e),
                       "details are in the log (%s)" % home.log_file if logged else
                       "run `cortex doctor` to check the installation")
        return 1


def run():
    sys.exit(main())
