"""Where Cortex keeps its files.

Imported by the hooks, so it uses nothing but `os`.  One directory, the Cortex
home, holds everything Cortex writes:

    $CORTEX_HOME/                 (default ~/.cortex)
      config.yaml                 user settings (optional; every key has a default)
      inbox/tmp|pending|claimed|done|failed/   the event queue, Maildir style
      inbox/blobs/                hard links / copies of transcripts taken at capture
      records/L0/<project>/…md    one Markdown file per record, one folder per project
      records/L1/<domain>/…md     records shared by a domain of projects
      episodes/<project>/<session>.md   what was said in each session (prompts, replies, tool lines)
      index/cortex.sqlite         the search + ranking index (derived; `cortex reindex` rebuilds it)
      state/cursors.json          how far each transcript has been read
      state/config.json           the validated config, as the hot paths read it
      state/lock                  the normalizer's run lock
      logs/cortex.log             structured log, JSON lines
"""
import os

DEFAULT_HOME = os.path.join("~", ".cortex")
INBOX_STATES = ("tmp", "pending", "claimed", "done", "failed")


def home_dir(environ=None) -> str:
    env = os.environ if environ is None else environ
    raw = env.get("CORTEX_HOME") or DEFAULT_HOME
    return os.path.abspath(os.path.expanduser(raw))


class Home:
    """The paths of one Cortex home.  Creating a Home touches nothing on disk."""

    def __init__(self, root=None):
        self.root = os.path.abspath(os.path.expanduser(root)) if root else home_dir()

    def path(self, *parts) -> str:
        return os.path.join(self.root, *parts)

    @property
    def inbox(self):
        return self.path("inbox")

    def inbox_dir(self, state: str) -> str:
        return self.path("inbox", state)

    @property
    def blobs(self):
        return self.path("inbox", "blobs")

    @property
    def records(self):
        return self.path("records")

    @property
    def episodes(self):
        return self.path("episodes")

    @property
    def index_db(self):
        return self.path("index", "cortex.sqlite")

    @property
    def config_yaml(self):
        return self.path("config.yaml")

    @property
    def config_json(self):
        return self.path("state", "config.json")

    @property
    def cursors(self):
        return self.path("state", "cursors.json")

    @property
    def lock(self):
        return self.path("state", "lock")

    @property
    def log_file(self):
        return self.path("logs", "cortex.log")

    def ensure(self) -> "Home":
        """Create the home's folders, readable by the user only."""
        old = os.umask(0o077)
        try:
            for sub in [("inbox", s) for s in INBOX_STATES] + [("inbox", "blobs"), ("records",), ("records", "L0"),
                                                                ("records", "L1"), ("episodes",), ("index",), ("state",), ("logs",)]:
                os.makedirs(self.path(*sub), mode=0o700, exist_ok=True)
        finally:
            os.umask(old)
        return self
