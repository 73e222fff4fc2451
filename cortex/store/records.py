"""Records: one Markdown file each, YAML front matter on top, the text as the body.

    records/L0/<project id>/<record id>.md
    records/L1/<domain>/<record id>.md

Every change goes through `RecordStore.upsert`, the one record writer: it
redacts secrets, gives the record a deterministic id (scope + type + normalised
text, or an explicit key), merges a record seen again instead of duplicating it,
and writes atomically.  All times come from the transcript, never the clock, so
processing the same session twice -- or after a crash -- yields the same files.
"""
import hashlib
import os
import re

from cortex.store.frontmatter import emit, fast_parse
from cortex.core.fsutil import atomic_write_text
from cortex.model.clip import LINE_OVERHEAD_TOKENS

TYPES = ("decision", "rejected", "learned", "gotcha", "plan", "preference", "todo", "fix", "progress", "summary")
# Types other memory tools use, and what Cortex stores them as (docs/records.md, "Types").  Settled rules
# (architecture, conventions, constraints, requirements) are decisions: they never decay and are
# superseded by later rules on the same subject; background and insights are learned facts; bugs and
# pitfalls are gotchas; alternatives ruled out are rejections.
TYPE_ALIASES = {
    "architecture": "decision", "design": "decision", "convention": "decision", "pattern": "decision",
    "constraint": "decision", "requirement": "decision", "rule": "decision", "policy": "decision",
    "context": "learned", "insight": "learned", "note": "learned", "fact": "learned", "lesson": "learned",
    "knowledge": "learned", "discovery": "learned", "finding": "learned",
    "bug": "gotcha", "pitfall": "gotcha", "warning": "gotcha", "caveat": "gotcha", "issue": "gotcha",
    "workaround": "fix", "solution": "fix",
    "antipattern": "rejected", "anti-pattern": "rejected", "avoid": "rejected", "alternative": "rejected",
    "style": "preference", "task": "todo", "goal": "plan",
}
STATUSES = ("active", "superseded", "archived")


def canonical_type(name) -> str:
    """The Cortex type a type name means: a Cortex type itself, an alias of TYPE_ALIASES (any case,
    plural or singular), or None when it is neither."""
    t = str(name or "").strip().lower().replace("_", "-")
    if t in TYPES:
        return t
    if t in TYPE_ALIASES:
        return TYPE_ALIASES[t]
    if t.endswith("s") and (t[:-1] in TYPES or t[:-1] in TYPE_ALIASES):
        return canonical_type(t[:-1])
    return None
FIELD_ORDER = ("id", "scope", "scope_id", "project", "type", "status", "confidence", "salience", "pinned",
               "priority", "created", "updated", "seen", "used", "tokens", "branch", "files", "plan", "provenance")
MAX_FRONT_MATTER = 256 * 1024


class RecordError(Exception):
    pass


def normalize_text(text: str) -> str:
    """The form used to tell whether two texts say the same thing."""
    t = text.lower()
    t = re.sub(r"[`*_~\"'“”‘’]+", "", t)
    t = re.sub(r"[^\w\s./:-]+", " ", t)
    return re.sub(r"\s+", " ", t).strip(" .:-")


def make_id(scope_id: str, rtype: str, key: str) -> str:
    h = hashlib.sha256(("%s\x1f%s\x1f%s" % (scope_id, rtype, key)).encode("utf-8", "surrogatepass")).hexdigest()
    return "r" + h[:16]


def record_path(root: str, rec: dict) -> str:
    return os.path.join(root, rec["scope"], rec["scope_id"], rec["id"] + ".md")


def _yaml():
    import yaml
    return yaml


def front_matter(rec: dict) -> dict:
    """The mapping `dump` writes above the text: FIELD_ORDER first, then any other key but the text."""
    front = {k: rec[k] for k in FIELD_ORDER if k in rec}
    front.update({k: v for k, v in rec.items() if k not in front and k != "text"})
    return front


def dump_yaml(front: dict) -> str:
    """The front matter as PyYAML writes it (the definition of the format; `frontmatter.emit` writes the
    same text without importing YAML)."""
    yaml = _yaml()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(front, Dumper=dumper, sort_keys=False, allow_unicode=True, width=1000, default_flow_style=None)


def dump(rec: dict) -> str:
    front = front_matter(rec)
    head = emit(front)  # PyYAML's text, without importing it; None for anything it leaves to PyYAML
    if head is None:
        head = dump_yaml(front)
    return "---\n%s---\n%s\n" % (head, rec["text"].rstrip("\n"))


def parse(text: str, where: str = "record") -> dict:
    yaml = _yaml()
    if not text.startswith("---\n"):
        raise RecordError("%s: no YAML front matter (the file must start with a '---' line)" % where)
    end = text.find("\n---\n", 3)
    if end < 0:
        raise RecordError("%s: front matter is not closed by a '---' line" % where)
    head = text[4:end + 1]
    if len(head) > MAX_FRONT_MATTER or max(head.count("["), head.count("{")) > 10000:
        raise RecordError("%s: front matter too large or too deeply nested to be a Cortex record" % where)
    if "&" in head or "*" in head:  # a possible anchor or alias: look at the YAML events (linear, no expansion)
        problem = _anchors(yaml, head)
        if problem:
            raise RecordError("%s: %s; Cortex records never use them (a hand edit?), so it is not read" % (
                where, problem))
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        front = yaml.load(head, Loader=loader)
    except Exception as e:  # PyYAML's constructors raise ValueError, AttributeError, ... too
        raise RecordError("%s: invalid YAML front matter (%s)" % (where, (str(e).splitlines() or [type(e).__name__])[0]))
    if not isinstance(front, dict):
        raise RecordError("%s: front matter must be a mapping" % where)
    front["text"] = text[end + 5:].strip("\n")
    for k in ("created", "updated"):
        if k in front and not isinstance(front[k], str):
            front[k] = str(front[k])  # YAML may read an unquoted timestamp as a datetime
    return front


def _anchors(yaml, head: str):
    """Why this front matter is refused when it holds YAML anchors or aliases (an alias bomb expands a few
    hundred bytes into gigabytes), else None.  Reads the event stream only, which never expands anything."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for ev in yaml.parse(head, Loader=loader):
            if isinstance(ev, yaml.AliasEvent):
                return "front matter uses a YAML alias (*%s)" % ev.anchor
            if getattr(ev, "anchor", None):
                return "front matter uses a YAML anchor (&%s)" % ev.anchor
    except Exception:  # yaml.load below reports the syntax error
        return None
    return None


def read(path: str) -> dict:
    """One record file.  The front matter `dump` writes is read without YAML (frontmatter.fast_parse gives
    the same result as `parse`, checked by tests); anything else goes through the YAML parser."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:  # the same words as records.read
        raise RecordError("%s: not UTF-8 text (byte %d); fix or remove the file" % (path, e.start))
    if "\r" in text:  # as text mode reads it: universal newlines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    rec = fast_parse(text)
    return rec if rec is not None else parse(text, path)


def iter_paths(root: str):
    for scope in ("L0", "L1"):
        base = os.path.join(root, scope)
        if not os.path.isdir(base):
            continue
        for scope_id in sorted(os.listdir(base)):
            d = os.path.join(base, scope_id)
            if not os.path.isdir(d):
                continue
            for name in sorted(os.listdir(d)):
                if name.endswith(".md") and not name.startswith("."):
                    yield os.path.join(d, name)


def seen_times(prov: list) -> list:
    """One activation time per session that produced or repeated the record."""
    return sorted({p["at"] for p in prov})


class RecordStore:
    """The one record writer.  `changed` collects the ids written in this store's lifetime."""

    def __init__(self, root: str, count_tokens=None, validate=True):
        self.root = root
        self.changed = set()
        self.count_tokens = count_tokens
        self.validate = validate
        self.rejected = []  # (candidate text, reason) for candidates that could not be stored

    def path_of(self, rec):
        return record_path(self.root, rec)

    def get(self, rec_id: str):
        for path in self.find_paths(rec_id):
            return read(path)
        return None

    def find_paths(self, rec_id: str):
        for scope in ("L0", "L1"):
            base = os.path.join(self.root, scope)
            if not os.path.isdir(base):
                continue
            for scope_id in os.listdir(base):
                p = os.path.join(base, scope_id, rec_id + ".md")
                if os.path.exists(p):
                    yield p

    def _tokens(self, text):
        if self.count_tokens is None:
            from cortex.store import tokencount as tokens
            self.count_tokens = tokens.count
        return self.count_tokens(text) + LINE_OVERHEAD_TOKENS

    def upsert(self, cand: dict, into: str = None):
        """Create or merge a candidate.  Returns (record, action) with action created|merged|unchanged|rejected.

        A candidate: scope, scope_id, project, type, text, confidence, salience, provenance (one entry),
        and optionally key (identity instead of the text), files, branch, plan, replace (the text and plan
        follow the latest provenance instead of staying as first written), related (ids to link).
        `into` names an existing record that says the same thing: the candidate reinforces it.
        """
        from cortex.model import redact
        cand = dict(cand, text=_utf8(cand["text"]).replace("\r\n", "\n").replace("\r", "\n"),
                    files=[redact.clean(_utf8(f))[0] for f in cand.get("files") or ()],
                    plan=None if cand.get("plan") is None else [
                        dict(i, text=redact.clean(_utf8(i["text"]))[0]) for i in cand["plan"]])
        text, n_secrets = redact.clean(cand["text"])
        text = text.strip()
        if not text:
            self.rejected.append(("(%d characters)" % len(cand["text"]), "empty after removing private spans"))
            return None, "rejected"
        key = cand.get("key") or normalize_text(text)
        rec_id = into or make_id(cand["scope_id"], cand["type"], key)
        path = os.path.join(self.root, cand["scope"], cand["scope_id"], rec_id + ".md")
        prov = dict(cand["provenance"])
        existing = None
        if os.path.exists(path):
            try:
                existing = read(path)
            except (RecordError, OSError, UnicodeDecodeError) as e:
                # a record broken by a hand edit is reported and never overwritten
                self.rejected.append((text[:80], "existing record unreadable, left as is: %s" % e))
                return None, "rejected"
        if existing is None:
            rec = {
                "id": rec_id, "scope": cand["scope"], "scope_id": cand["scope_id"], "project": cand.get("project"),
                "type": cand["type"], "status": "active",
                "confidence": round(float(cand.get("confidence", 0.5)), 3),
                "salience": round(float(cand.get("salience", 0.5)), 3),
                "pinned": bool(cand.get("pinned", False)), "priority": int(cand.get("priority", 0)),
                "created": min(cand.get("since") or prov["at"], prov["at"]), "updated": prov["at"],
                "seen": [prov["at"]], "used": [],
                "tokens": 0, "branch": cand.get("branch"), "files": sorted(set(cand.get("files") or ())),
                "provenance": [prov], "text": text,
            }
            if cand.get("plan") is not None:
                rec["plan"] = [dict(i) for i in cand["plan"]]
            if cand.get("file_state"):
                rec["file_state"] = cand["file_state"]
            if cand.get("related"):
                rec["related"] = sorted(set(cand["related"]))
            if n_secrets:
                rec["redactions"] = n_secrets
            rec["tokens"] = self._tokens(text)
            action = "created"
        else:
            rec = dict(existing)
            provs = list(rec.get("provenance") or [])
            same = [p for p in provs if p.get("client") == prov["client"] and p.get("session") == prov["session"]]
            if not same:
                provs.append(prov)
            elif cand.get("replace") and _later(prov, same[0]):
                provs[provs.index(same[0])] = prov
            provs.sort(key=lambda p: (p["at"], p.get("session") or "", p.get("ref") or ""))
            rec["provenance"] = provs
            rec["seen"] = seen_times(provs)
            rec["confidence"] = round(max(float(rec.get("confidence", 0)), float(cand.get("confidence", 0))), 3)
            rec["salience"] = round(max(float(rec.get("salience", 0)), float(cand.get("salience", 0))), 3)
            rec["files"] = sorted(set(rec.get("files") or ()) | set(cand.get("files") or ()))
            rec["updated"] = max([rec.get("updated") or prov["at"]] + [p["at"] for p in provs])
            if cand.get("since") and cand["since"] < (rec.get("created") or cand["since"] + "~"):
                rec["created"] = cand["since"]
            if cand.get("replace") and max(provs, key=_order) == prov:
                rec["text"] = text  # plans and progress follow the newest state of their session
                rec["files"] = sorted(set(cand.get("files") or ()))
                if cand.get("plan") is not None:
                    rec["plan"] = [dict(i) for i in cand["plan"]]
            if cand.get("branch"):
                rec["branch"] = cand["branch"]
            if cand.get("file_state"):
                rec["file_state"] = dict(rec.get("file_state") or {}, **cand["file_state"])
            if cand.get("related"):
                rec["related"] = sorted(set(rec.get("related") or ()) | set(cand["related"]) - {rec["id"]})
            if rec.get("status") == "archived":
                rec["status"] = "active"  # seen again: it matters after all
                rec.pop("archived_at", None)
            action = "merged"
            if rec["text"] != existing.get("text") or not existing.get("tokens"):
                rec["tokens"] = self._tokens(rec["text"])  # counted once: the text is not changed below
            if rec == existing:  # what it read, so the same bytes: no write, no fsync
                return rec, "unchanged"
        self.write(rec)
        return rec, action

    def update(self, rec_id: str, change) -> dict:
        """Read a record, apply change(rec) -> bool (True when it changed something), write it back.
        Returns the record, or None when it does not exist or cannot be read (never overwritten)."""
        for path in self.find_paths(rec_id):
            try:
                rec = read(path)
            except (RecordError, OSError, UnicodeDecodeError) as e:
                self.rejected.append((rec_id, "record unreadable, left as is: %s" % e))
                return None
            import copy
            before_rec = copy.deepcopy(rec)
            if change(rec):
                # read from a file this writer wrote (redacted then): only the changed fields can be new
                self.write(rec, redact_only=_changed_strings(before_rec, rec))
            return rec
        return None

    def write(self, rec: dict, redact_only=None, durable: bool = True):
        """Write a record (atomically).  Every string in it is redacted first, not only the text: a secret
        can sit in a plan item, a file name, a branch or the transcript path (a Claude Code transcript folder
        is named after the project folder).  `rec` is updated in place.  `redact_only` (field names) limits
        that to the fields `update` changed; an empty set skips it (and the import of the redactor, which
        `cortex recall` does without).  `durable=False` leaves the fsyncs to the caller (a batch)."""
        fields = [k for k in rec if k not in _STRUCTURAL and (redact_only is None or k in redact_only)]
        if fields:
            from cortex.model import redact
            clean, n = redact.redact_fields({k: rec[k] for k in fields})
            if n:
                rec.update(clean)
                rec["redactions"] = int(rec.get("redactions") or 0) + n
        if self.validate:
            from cortex.core.schemas import validate  # answers a valid record without importing jsonschema
            problems = validate("record", rec)
            if problems:
                raise RecordError("record %s does not match schemas/record.schema.json: %s" % (rec.get("id"), problems[0]))
        note_change(self.root, rec["id"], rec.get("scope_id"))
        atomic_write_text(record_path(self.root, rec), dump(rec), durable=durable)
        self.changed.add(rec["id"])


def _changed_strings(before: dict, after: dict) -> set:
    """The fields of `after` that differ from `before` and may hold text (not numbers or booleans)."""
    return {k for k, v in after.items() if before.get(k) != v and not isinstance(v, (bool, int, float))}


# Fields the store itself sets to ids, enums, numbers and times: nothing to redact (the path depends on some).
_STRUCTURAL = frozenset(("id", "scope", "type", "status", "confidence", "salience", "pinned", "priority",
                         "tokens", "redactions", "created", "updated", "seen", "used", "archived_at"))


# records root -> callable(id, scope_id), called before a record file is written or deleted while a maintenance
# change is under way (store/journal.py: the ids to re-index if the process dies before its index update)
JOURNALS = {}


def note_change(root: str, rec_id: str, scope_id: str = None) -> None:
    fn = JOURNALS.get(os.path.abspath(root))
    if fn is not None:
        fn(rec_id, scope_id)


def _utf8(s: str) -> str:
    """Text that can be written as UTF-8: a lone surrogate (half an emoji) becomes U+FFFD."""
    return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _order(p: dict):
    return (p["at"], _ref_num(p.get("ref")))


def _later(a: dict, b: dict) -> bool:
    return _order(a) > _order(b)


def _ref_num(ref):
    try:
        return int((ref or "")[1:])
    except ValueError:
        return -1
