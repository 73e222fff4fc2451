"""`cortex-normalize [--watch] [--quiet]`: argument parsing and printing around cortex.ingest.run.run."""
import os
import sys

from cortex.core import config as config_mod
from cortex.core.home import Home
from cortex.ingest.run import out_of_space, run


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="cortex-normalize",
                                 description="Turn pending Cortex events into records and refresh the index.")
    ap.add_argument("--watch", action="store_true", help="keep running: normalize shortly after events arrive")
    ap.add_argument("--quiet", "-q", action="store_true", help="print nothing unless something failed")
    args = ap.parse_args(argv)
    os.umask(0o077)  # everything Cortex creates is the user's alone
    home = Home()
    if args.watch:
        from cortex.inbox.watch import watch
        return watch(home, run)
    try:
        stats = run(home)
    except config_mod.ConfigError as e:
        from cortex.core.log import error_line, get_logger
        get_logger(home, component="normalize").error("config_invalid", error=str(e))
        error_line(str(e), "see docs/configuration.md")
        return 2
    except Exception as e:
        if not (isinstance(e, OSError) or out_of_space(e)):
            raise
        from cortex.core.log import error_line
        error_line("cannot work in the Cortex home %s: %s" % (home.root, getattr(e, "strerror", None) or e),
                   "check that it is writable and the disk is not full; pending events are kept")
        return 1
    if "busy" in stats:
        if not args.quiet:
            print("cortex-normalize: another run is in progress (pid %s); nothing to do" % stats["busy"])
        return 0
    if not args.quiet:
        if stats.get("idle"):
            print("cortex-normalize: nothing pending")
        else:
            print("cortex-normalize: %(events)d events, %(sessions)d sessions, %(created)d records created, "
                  "%(merged)d merged, %(failed)d failed (%(duration_ms)d ms)" % stats)
    if stats.get("failed"):
        sys.stderr.write("cortex-normalize: %d event(s) quarantined in %s; see the .reason.txt files, "
                         "then `cortex inbox retry`\n" % (stats["failed"], home.inbox_dir("failed")))
    return 0


def run_main():
    sys.exit(main())
