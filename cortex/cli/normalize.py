"""`cortex-normalize [--watch] [--quiet]`: argument parsing and printing around cortex.ingest.run.run.

Exit status: 0 done (or nothing to do, or another run holds the lock); 1 the run failed, or every event
it took failed; 2 usage, an unusable Cortex home, or an invalid config.yaml (the events are still
processed, with the last valid settings or the defaults, so memory is never silenced)."""
import os
import sys

from cortex.core.home import Home
from cortex.ingest.run import out_of_space, run


def _summary(stats) -> str:
    if "busy" in stats:
        return "cortex-normalize: another run is in progress (pid %s); nothing to do" % stats["busy"]
    if stats.get("idle") or not stats.get("events"):
        return "cortex-normalize: nothing pending"
    return ("cortex-normalize: %(events)d events, %(sessions)d sessions, %(created)d records created, "
            "%(merged)d merged, %(failed)d failed (%(duration_ms)d ms)" % stats)


def _report(home, stats, quiet: bool) -> int:
    """Print what a run did (stdout) and what went wrong (stderr); returns the exit status."""
    from cortex.core.log import error_line
    if not quiet:
        print(_summary(stats), flush=True)
    code = 0
    if stats.get("failed"):
        sys.stderr.write("cortex-normalize: %d event(s) quarantined in %s; see the .reason.txt files, "
                         "then `cortex inbox retry`\n" % (stats["failed"], home.inbox_dir("failed")))
        if stats["failed"] >= stats.get("events", 0):
            code = 1  # nothing this run took succeeded
    if stats.get("config_error"):
        error_line("%s (this run used %s)" % (stats["config_error"], stats.get("config_used", "the defaults")),
                   "fix config.yaml (see docs/configuration.md) and run `cortex doctor`")
        code = 2
    return code


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="cortex-normalize",
                                 description="Turn pending Cortex events into records and refresh the index.",
                                 epilog="Exit status: 0 ok; 1 the run failed or every event failed; "
                                        "2 usage, unusable home, or invalid config.yaml (events still processed).")
    ap.add_argument("--watch", action="store_true",
                    help="keep running: normalize shortly after events arrive (one line per run)")
    ap.add_argument("--quiet", "-q", action="store_true",
                    help="print nothing unless something failed (and no progress line)")
    args = ap.parse_args(argv)
    os.umask(0o077)  # everything Cortex creates is the user's alone
    from cortex.core.home import home_problem
    from cortex.core.log import error_line
    home = Home()
    problem = home_problem(home.root)
    if problem:
        error_line(*problem)
        return 2
    from cortex.core.guard import exit_on_bus_error
    exit_on_bus_error(home.root, 1, b"cortex-normalize: bus error (is the disk full?); free disk space, pending events "
                                     b"are kept\n", low_free=None)
    from cortex.cli.progress import progress
    if args.watch:
        from cortex.inbox.watch import watch
        if not args.quiet:
            print("cortex-normalize: watching %s (Ctrl-C to stop)" % home.inbox_dir("pending"), flush=True)

        def once(h):
            try:
                return run(h, progress=progress("normalizing: session", args.quiet))
            except Exception as e:
                if not (isinstance(e, OSError) or out_of_space(e, home)):
                    raise
                error_line("cannot work in the Cortex home %s: %s" % (home.root, getattr(e, "strerror", None) or e),
                           "check that it is writable and the disk is not full; pending events are kept")
                return {"events": 0, "error": True}

        return watch(home, _and_sync(once, args.quiet),
                     on_run=lambda stats: stats.get("error") or _report(home, stats, args.quiet))
    try:
        stats = run(home, progress=progress("normalizing: session", args.quiet))
    except Exception as e:
        if not (isinstance(e, OSError) or out_of_space(e, home)):
            raise
        error_line("cannot work in the Cortex home %s: %s" % (home.root, getattr(e, "strerror", None) or e),
                   "check that it is writable and the disk is not full; pending events are kept")
        return 1
    code = _report(home, stats, args.quiet)
    if "busy" not in stats and not stats.get("error"):
        _sync_after(home, args.quiet)
    return code


def _sync_after(home, quiet):
    """`sync.after_normalize`: the same path for a person's run, the timer's and --watch (cortex/cli/sync.py)."""
    from cortex.cli.sync import after_normalize
    try:
        after_normalize(home, quiet=quiet)
    except Exception as e:  # a sync problem never fails the normalizer run
        from cortex.core.log import error_line
        error_line("sync after normalize failed: %s: %s" % (type(e).__name__, e), "run `cortex sync` to see why")


def _and_sync(run, quiet):
    def run_then_sync(home):
        stats = run(home)
        if "busy" not in stats:
            _sync_after(home, True)
        return stats
    return run_then_sync


def run_main():
    sys.exit(main())
