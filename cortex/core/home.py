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
    """The Cortex home, absolute.  A relative CORTEX_HOME is taken relative to the user's home directory,
    not the working directory: the hooks run in each project's folder, and a home per folder would
    scatter memory into the projects (`cortex doctor` and `cortex status` say when this happens)."""
    env = os.environ if environ is None else environ
    raw = os.path.expanduser(env.get("CORTEX_HOME") or DEFAULT_HOME)
    if not os.path.isabs(raw):
        raw = os.path.join(os.path.expanduser("~"), raw)
    return os.path.abspath(raw)


def relative_home_note(environ=None):
    """A one-line note when CORTEX_HOME is relative (and so resolved against ~), else None."""
    env = os.environ if environ is None else environ
    raw = env.get("CORTEX_HOME") or ""
    if raw and not os.path.isabs(os.path.expanduser(raw)):
        return ("CORTEX_HOME=%s is a relative path; Cortex uses %s (relative to your home directory, the same "
                "from every folder); set an absolute path to silence this note" % (raw, home_dir(env)))
    return None


def home_problem(root: str):
    """(message, hint) when `root` cannot be a Cortex home (a file, or under a file), else None."""
    path = root
    while True:
        if os.path.lexists(path):
            if not os.path.isdir(path):
                what = "is a file, not a folder" if path == root else "is under %s, which is a file" % path
                return ("the Cortex home %s %s" % (root, what),
                        "point CORTEX_HOME at a folder (it is created if missing), or unset it to use ~/.cortex")
            break
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return None


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

    def stored_path(self, path: str) -> str:
        """How the index stores a record file's path: relative to the home ("records/L0/<project>/<id>.md",
        '/' separated), so a home copied or moved elsewhere still names its own files."""
        rel = os.path.relpath(os.path.abspath(path), self.root)
        return rel.replace(os.sep, "/")

    def record_file(self, stored):
        """The file in THIS home an index row's path names, or None.  Relative paths are joined to the home;
        an absolute path (an index written before paths were relative, perhaps in another home this one
        was copied from) keeps only its last four parts, records/<L0|L1>/<scope id>/<id>.md.  The result
        always lies inside this home's records/ folder: nothing outside the home is ever named."""
        if not isinstance(stored, str) or not stored or "\x00" in stored:
            return None
        parts = [p for p in stored.replace("\\", "/").split("/") if p]
        if len(parts) < 4:
            return None
        parts = parts[-4:]
        if (parts[0] != "records" or parts[1] not in ("L0", "L1") or not parts[3].endswith(".md")
                or any(p in (".", "..") for p in parts)):
            return None
        path = os.path.join(self.root, *parts)
        return path if self.contains(path, self.records) else None

    def contains(self, path: str, folder: str = None) -> bool:
        """Whether `path` (symbolic links resolved) lies inside `folder` (default: the home)."""
        folder = os.path.realpath(folder or self.root)
        try:
            real = os.path.realpath(path)
            return os.path.commonpath([real, folder]) == folder and real != folder
        except ValueError:
            return False

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
