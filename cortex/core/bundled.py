"""Files that ship with Cortex: the real transcripts `cortex demo` and the benchmarks run on
(tests/fixtures/transcripts in a checkout, share/cortex/demo when installed; see SOURCES.md there)."""
import glob
import os
import sys
import sysconfig

DEMO_SESSIONS = (
    # (folder under the transcript fixtures, client)
    ("claude-code/cc-1.0.98-init-todowrite", "claude-code"),
    ("claude-code/cc-1.0.108-task-multiedit", "claude-code"),
    ("claude-code/cc-2.1.39-hooks-compaction-subagents", "claude-code"),
    ("codex/codex-0.125.0-tui-apply-patch", "codex"),
)


def fixtures_dir() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.path.join(os.path.dirname(os.path.dirname(here)), "tests", "fixtures", "transcripts"),
             os.path.join(sys.prefix, "share", "cortex", "demo"),
             os.path.join(sysconfig.get_paths().get("data", sys.prefix), "share", "cortex", "demo")]
    try:
        import site
        cands.append(os.path.join(site.getuserbase(), "share", "cortex", "demo"))
    except Exception:
        pass
    for c in cands:
        if os.path.isdir(os.path.join(c, "claude-code")):
            return c
    raise FileNotFoundError("the demo transcripts are missing; reinstall Cortex from its checkout (pip install .)")


def main_transcript(folder: str) -> str:
    files = [f for f in sorted(glob.glob(os.path.join(folder, "*.json*"))) if not os.path.basename(f).startswith("agent-")]
    return max(files, key=os.path.getsize)
