"""The normalizer's episode step: one transcript window's turns into the session's episode and its passages.

Called once per window, after the window's records are stored and before its cursor is saved (so a run
killed before the cursor save reads the window again and episodes.append rewrites the same bytes).
"""
import os


def record_window(home, cfg: dict, log, ctx, res, start: int, client: str) -> int:
    """Append the window's turns to episodes/<project>/<session>.md and index the changed passages.
    Returns the number of turns the episode holds (0 when nothing changed or episodes are off)."""
    conf = cfg.get("episodes") or {}
    if not conf.get("enabled", True) or not ctx.session:
        return 0
    from cortex.store import episodes
    from cortex.store.indexer import update_passages
    got = episodes.append(home, session=str(ctx.session), client=client, project=ctx.project,
                          transcript=ctx.transcript, cwd=ctx.cwd, entries=res.entries, start=int(start),
                          end=int(res.cursor), fallback_time=ctx.fallback_time or "")
    if got is None:
        return 0
    path, front, turns, since = got
    update_passages(home, front, turns, path, since)
    return len(turns)


def forget_paths(home, session: str = None, project: str = None) -> list:
    """The episode files of a session (any project) or of every session of a project."""
    from cortex.store import episodes
    out = []
    for p in episodes.iter_paths(home.episodes):
        if project is not None and os.path.basename(os.path.dirname(p)) == episodes.safe_name(project):
            out.append(p)
        elif session is not None and os.path.basename(p) == episodes.safe_name(session) + ".md":
            out.append(p)
    return out
