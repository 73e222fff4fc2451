"""Settings: `config.yaml` in the Cortex home, every key optional.

The normalizer validates config.yaml against schemas/config.schema.json and
writes the merged result to state/config.json; the hot paths read that JSON
(no YAML import), and only parse the YAML themselves when it is newer.
"""
import copy
import json
import os

DEFAULTS = {
    "session_start": {
        "max_records": 40,          # at most this many records in the block
        "max_tokens": 1500,         # token budget of the block (tiktoken cl100k_base, counted at normalize time)
        "max_chars": 9500,          # hard cap: Claude Code cuts SessionStart output above 10,000 characters
        "line_chars": 200,          # a record's line shows at most this much of its text (plans and resume whole)
        "min_confidence": 0.5,      # records below this confidence are left out of the block
        "candidates_per_scope": 400,  # how many records per scope the normalizer pre-ranks for session start
    },
    "prompt": {
        "max_records": 3,           # cortex-prompt prints at most this many lines (records and passages)
        "max_passages": 1,          # of which at most this many passages
        "max_tokens": 300,          # and at most this many tokens
        "min_score": 4.0,           # BM25 score a record needs to be worth interrupting the prompt
        "min_terms": 3,             # prompts with fewer distinct search terms get nothing (small talk)
        "passages": True,           # earlier passages may be printed beside the records
        "min_passage_score": 6.0,   # FTS5 bm25 a passage needs (passages are longer: a higher bar)
    },
    "ranking": {
        "decay": 0.5,               # ACT-R base-level decay d in ln(sum t_j^-d), t in hours
        "recency_half_life_days": 7.0,
        "activation_weight": 1.0,
        "recency_weight": 2.0,
        "confidence_weight": 1.0,
        "type_weights": {
            "plan": 3.0, "todo": 2.0, "progress": 1.5, "decision": 2.5, "rejected": 2.5,
            "preference": 2.0, "gotcha": 2.0, "learned": 1.8, "fix": 1.5, "summary": 1.2,
        },
        "never_decay": ["decision", "rejected", "preference"],
    },
    "domains": {
        "default": "personal",      # the L1 domain of a project that no rule names
        "rules": [],                # [{match: "<path glob or project id>", domain: "<name>"}], first match wins
    },
    "memory": {
        "merge_threshold": 0.9,     # Dice similarity of index terms at which a candidate reinforces a record
        "link_threshold": 0.6,      # at or above this (below merge) the two are linked as related
        "amend_min_similarity": 0.15,  # a rule that says it amends another on its subject shares at least this
        "half_life_days": {"progress": 3, "summary": 7, "plan": 14, "todo": 14, "fix": 30, "learned": 90,
                           "gotcha": 120},  # confidence halves this often since last seen/used
        "use_slowdown": 0.5,        # half-life x (1 + use_slowdown x ln(1 + uses + links))
        "archive_below": 0.25,      # decayed confidence under which a record counts down to the archive
        "archive_after_days": 7,    # archived after this long below it
        "prune_after_days": 180,    # archived and untouched this long: deleted
        "decisions_full": 25,       # decisions shown in a line of line_chars; the next get one short line each
        "decisions_max": 25,        # decisions beyond this stay out of the block (still recallable)
    },
    "extraction": {
        "keyword_min_confidence": 0.55,  # keyword-layer decisions below this are dropped
        "max_record_chars": 600,         # longer extracted text is cut at a sentence boundary
    },
    "normalize": {
        "window_bytes": 16777216,           # a transcript is read, stored and checkpointed this much at a time
        "max_line_bytes": 33554432,         # a JSON Lines line longer than this is skipped as a bad line
        "max_document_bytes": 67108864,     # a one-document transcript (Gemini) larger than this is not read
        "blob_retention_hours": 24,         # captured transcript links are removed this long after being read fully
        "done_retention_days": 7,           # processed events in inbox/done/ are deleted after this many days
        "lock_stale_seconds": 600,          # a lock older than this whose process is gone is taken over
    },
    "episodes": {
        "enabled": True,            # keep what was said in each session (episodes/<project>/<session>.md)
        "retention_days": 365,      # an episode whose last turn is older than this is deleted with its passages
    },
    "sync": {
        "after_normalize": False,   # run `cortex sync` after each cortex-normalize run (once `cortex sync init` ran)
        "domains": [],              # L1 domains (names or globs) whose records travel; nothing by default
        "projects": [],             # projects whose L0 records travel: ids, id globs or folder path globs
    },
    "log": {"level": "info"},
}


def deep_merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


class ConfigError(Exception):
    pass


def _unreadable(path: str, e: Exception) -> ConfigError:
    return ConfigError("cannot read %s: %s; fix the YAML or move the file away" % (path, str(e).splitlines()[0]))


def read_yaml(path: str) -> dict:
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        return {}  # no settings (a new home): PyYAML is not even imported (20 ms of a normalizer run)
    except OSError as e:
        raise _unreadable(path, e)
    import yaml  # only when the YAML itself must be read
    try:
        with f:
            data = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise _unreadable(path, e)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("%s must hold a mapping of settings, not %s" % (path, type(data).__name__))
    return data


def validate(data: dict, schema_dir: str = None) -> dict:
    """Validate user settings against the config schema; returns the merged config."""
    from cortex.core.schemas import validate as schema_validate
    problems = schema_validate("config", data)
    if problems:
        raise ConfigError("config.yaml: %s" % problems[0])
    return deep_merge(DEFAULTS, data)


def load(home, fast: bool = True) -> dict:
    """The merged config.  `fast` (the hooks, session start, recall) reads the normalizer's snapshot when it
    is current, and never fails: a config.yaml that is invalid or unreadable gives the last valid settings
    (state/config.json) or the defaults, and says so once in the log.  `fast=False` raises ConfigError."""
    yaml_path, json_path = home.config_yaml, home.config_json
    if fast:
        try:
            js = os.stat(json_path).st_mtime
            try:
                ys = os.stat(yaml_path).st_mtime
            except FileNotFoundError:
                ys = 0
            if js >= ys:
                with open(json_path, encoding="utf-8") as f:
                    return json.load(f)
        except (OSError, ValueError):
            pass
        if not os.path.exists(yaml_path):
            return copy.deepcopy(DEFAULTS)  # nothing to read or validate
        known = _known_invalid(home)
        if known is not None:  # already found invalid and unchanged since: no YAML parsing, no second log line
            return fallback(home, known)[0]
        try:
            return validate(read_yaml(yaml_path))
        except ConfigError as e:
            return fallback(home, str(e))[0]
    return validate(read_yaml(yaml_path))


def load_checked(home):
    """(config, problem): the validated config.yaml and None, or the fallback settings and what is wrong.
    The normalizer uses it: memory is never silenced by a bad settings file."""
    try:
        cfg = validate(read_yaml(home.config_yaml))
    except ConfigError as e:
        return fallback(home, str(e))[0], str(e)
    try:
        os.unlink(_invalid_marker(home))
    except OSError:
        pass
    return cfg, None


def fallback(home, problem: str):
    """(settings, where they come from) for a config.yaml that cannot be used: the last valid snapshot
    the normalizer wrote (state/config.json), else the defaults.  Logged once per version of the file."""
    cfg, source = None, "the last valid settings (%s)" % home.config_json
    try:
        with open(home.config_json, encoding="utf-8") as f:
            cfg = json.load(f)
        if not isinstance(cfg, dict):
            cfg = None
    except (OSError, ValueError):
        pass
    if cfg is None:
        cfg, source = copy.deepcopy(DEFAULTS), "the default settings"
    if _known_invalid(home) != problem:
        _note_invalid(home, problem, source)
    return cfg, source


def fallback_source(home) -> str:
    """Which settings a broken config.yaml falls back to (for messages)."""
    return ("the last valid settings (%s)" % home.config_json if os.path.isfile(home.config_json)
            else "the default settings")


def _invalid_marker(home) -> str:
    return home.path("state", "config_invalid.json")


def _yaml_stamp(home):
    try:
        st = os.stat(home.config_yaml)
        return [st.st_mtime_ns, st.st_size]
    except OSError:
        return None


def _known_invalid(home):
    """The problem recorded for config.yaml as it is now, or None (never checked, or changed since)."""
    try:
        with open(_invalid_marker(home), encoding="utf-8") as f:
            m = json.load(f)
        if m.get("stamp") == _yaml_stamp(home):
            return m.get("problem")
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _note_invalid(home, problem: str, source: str) -> None:
    try:
        from cortex.core.log import get_logger
        get_logger(home, component="config").error(
            "config_invalid", error=problem, using=source,
            hint="fix config.yaml (docs/configuration.md); `cortex doctor` shows the problem")
    except Exception:
        pass
    try:
        from cortex.core.fsutil import atomic_write_text
        os.makedirs(os.path.dirname(_invalid_marker(home)), mode=0o700, exist_ok=True)
        atomic_write_text(_invalid_marker(home), json.dumps({"stamp": _yaml_stamp(home), "problem": problem,
                                                             "using": source}))
    except Exception:
        pass


def snapshot_current(home) -> bool:
    """state/config.json exists and config.yaml has not changed since (cheap: two stats)."""
    try:
        js = os.stat(home.config_json).st_mtime
    except OSError:
        return False
    try:
        return js >= os.stat(home.config_yaml).st_mtime
    except FileNotFoundError:
        return True
    except OSError:
        return False


def write_snapshot(home, cfg: dict) -> None:
    from cortex.core.fsutil import atomic_write_text
    atomic_write_text(home.config_json, json.dumps(cfg, indent=1, sort_keys=True))
