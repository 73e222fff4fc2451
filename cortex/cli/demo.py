"""`cortex demo`: the whole loop on bundled real transcripts, in a temporary home.

Each transcript goes through the same path as in real use: a capture hook drops a
stop event, the normalizer turns the events into records and an index, and
session start prints the block the next session in that project would get.
"""
import json
import os
import shutil
import sys
import tempfile

from cortex.core.bundled import DEMO_SESSIONS, fixtures_dir, main_transcript  # noqa: F401


def run_demo(keep: bool = False, home_dir: str = None, out=None) -> int:
    """The demo in a temporary folder, removed at the end unless --keep (with --home, the home stays and
    only the temporary copies of the transcripts go)."""
    from cortex.core.errors import CortexError
    from cortex.core.home import home_problem
    out = out or sys.stdout
    if home_dir:
        problem = home_problem(os.path.abspath(os.path.expanduser(home_dir)))
        if problem:
            raise CortexError(problem[0].replace("the Cortex home", "the demo home"),
                              "give --home a folder (it is created if missing), or leave it out for a temporary one",
                              code=2)
    base = tempfile.mkdtemp(prefix="cortex-demo-")
    try:
        return _demo(base, home_dir, keep, out)
    finally:
        if not (keep and not home_dir):  # --keep without --home keeps the whole temporary folder
            shutil.rmtree(base, ignore_errors=True)


def _demo(base, home_dir, keep, out) -> int:
    from cortex.ingest import adapters, run as normalize
    from cortex.capture import hook as capture
    from cortex.brief import session_start
    from cortex.core.home import Home
    home = Home(home_dir or os.path.join(base, "home")).ensure()
    os.environ["CORTEX_HOME"] = home.root  # so every part of the loop agrees on the home
    src_root = fixtures_dir()
    client_dir = os.path.join(base, "client-transcripts")
    projects = []
    latest = {}  # cwd -> time of the project's last transcript entry
    for rel, client in DEMO_SESSIONS:
        src = os.path.join(src_root, rel)
        if not os.path.isdir(src):
            continue
        dst = os.path.join(client_dir, os.path.basename(rel))
        shutil.copytree(src, dst)
        path = main_transcript(dst)
        parsed = adapters.get(client).parse(path)
        meta = parsed.meta
        from cortex.store.index import iso_to_epoch
        cwd = meta.cwd or dst
        latest[cwd] = max([latest.get(cwd, 0.0)] + [iso_to_epoch(e.ts) for e in parsed.entries[-50:] if e.ts])
        payload = {"session_id": meta.session_id or os.path.basename(path), "transcript_path": path,
                   "cwd": meta.cwd or dst, "hook_event_name": "Stop", "stop_hook_active": False}
        event = capture.build_event("stop", json.dumps(payload).encode(), client, home)
        capture.write_event(home, event)
        projects.append((rel, client, payload["cwd"]))
    out.write("Cortex demo: %d real sessions captured into %s\n" % (len(projects), home.root))
    # The bundled sessions are months old: show the memory as the next session right after them would
    # see it, instead of letting today's clock decay it.
    stats = normalize.run(home, now=min(latest.values()) + 3600 if latest else None)
    out.write("normalized: %(events)d events, %(sessions)d sessions, %(created)d records, %(failed)d failed "
              "in %(duration_ms)d ms\n" % stats)
    shown = set()
    for rel, client, cwd in projects:
        text, info = session_start.build(home, cwd, now=latest.get(cwd, 0) + 3600 or None)
        pid = info["project"]["id"]
        if pid in shown:
            continue
        shown.add(pid)
        out.write("\n=== next session in %s (from %s, %s) ===\n" % (cwd, rel.split("/")[-1], client))
        out.write((text or "(no records for this project)") + "\n")
    if keep or home_dir:
        out.write("\nThe demo home is kept at %s (try: CORTEX_HOME=%s cortex status)\n" % (home.root, home.root))
    return 0
