"""The merge rule of `cortex sync`: two versions of one record -> one, field by field, without a person.

A pure function on record dicts (no files, no git).  It is a *join*: commutative, associative and
idempotent on its result, so machines that exchange versions in any order and any grouping end with the
same record (the same bytes once `records.dump` writes it).  The rule, per field:

  seen, provenance          union (provenance entries compared whole)
  used                      union keeping repeats: each time as often as the side that has it most
  related, supersedes,      union, sorted
  superseded_by, conflicts_with
  created / updated         earliest / latest
  confidence, salience,     the larger
  priority, redactions
  pinned                    pinned if either side is pinned
  status                    superseded if either side is superseded; else archived (forgotten) when the
                            latest `archived_at` of an archived side is not older than every seen/used
                            time (a use after the forget restores it, as `cortex recall` does locally);
                            else active; `archived_at` only on an archived result
  merged_into               the larger non-empty value
  everything else           (text, plan, files, file_state, branch, tokens, project, unknown keys) taken
                            together from the side whose `updated` is later; on a tie, the side whose
                            fields sort later as JSON (arbitrary, but the same on every machine)

`cortex sync` applies it only when both sides changed a record since the last sync; a change on one side
alone is simply taken (three-way, against the last synced version).
"""
import json

LINK_FIELDS = ("related", "supersedes", "superseded_by", "conflicts_with")
_MAX_FIELDS = ("confidence", "salience", "priority", "redactions")
_OWN = {"id", "scope", "scope_id", "seen", "used", "provenance", "status", "archived_at", "pinned", "created",
        "updated", "merged_into"} | set(LINK_FIELDS) | set(_MAX_FIELDS)
_STATUS_RANK = {"active": 0, "archived": 1, "superseded": 2}


class MergeError(Exception):
    """Two versions the rule cannot combine (not the same record)."""


def _canon(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _times(rec, key):
    v = rec.get(key)
    return [str(t) for t in v] if isinstance(v, list) else []


def _multiset_union(a: list, b: list) -> list:
    from collections import Counter
    ca, cb = Counter(a), Counter(b)
    out = []
    for t in sorted(set(ca) | set(cb)):
        out += [t] * max(ca[t], cb[t])
    return out


def _group(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k not in _OWN}


def merge(a: dict, b: dict) -> dict:
    """The join of two versions of one record."""
    if a.get("id") != b.get("id") or a.get("scope") != b.get("scope") or a.get("scope_id") != b.get("scope_id"):
        raise MergeError("%s/%s and %s/%s are not the same record" % (a.get("scope_id"), a.get("id"),
                                                                     b.get("scope_id"), b.get("id")))
    ga, gb = _group(a), _group(b)
    ka = (str(a.get("updated") or ""), _canon(ga))
    kb = (str(b.get("updated") or ""), _canon(gb))
    win = ga if ka >= kb else gb
    out = {"id": a["id"], "scope": a["scope"], "scope_id": a["scope_id"]}
    out.update({k: v for k, v in win.items()})
    for k in ("created",):
        vals = [str(r[k]) for r in (a, b) if r.get(k)]
        if vals:
            out[k] = min(vals)
    vals = [str(r["updated"]) for r in (a, b) if r.get("updated")]
    if vals:
        out["updated"] = max(vals)
    for k in _MAX_FIELDS:
        vals = [r[k] for r in (a, b) if isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool)]
        if vals:
            out[k] = max(vals)
    if "pinned" in a or "pinned" in b:
        out["pinned"] = bool(a.get("pinned")) or bool(b.get("pinned"))
    provs = {}
    for r in (a, b):
        for p in r.get("provenance") or []:
            provs[_canon(p)] = p
    if provs:
        out["provenance"] = [provs[c] for c in sorted(provs, key=lambda c: (
            str(provs[c].get("at")) if isinstance(provs[c], dict) else "",
            str(provs[c].get("session") or "") if isinstance(provs[c], dict) else "",
            str(provs[c].get("ref") or "") if isinstance(provs[c], dict) else "", c))]
    if "seen" in a or "seen" in b:
        out["seen"] = sorted(set(_times(a, "seen")) | set(_times(b, "seen")))
    if "used" in a or "used" in b:
        out["used"] = _multiset_union(_times(a, "used"), _times(b, "used"))
    for k in LINK_FIELDS:
        if k in a or k in b:
            out[k] = sorted(set(a.get(k) or ()) | set(b.get(k) or ()))
    into = [str(r["merged_into"]) for r in (a, b) if r.get("merged_into")]
    if into:
        out["merged_into"] = max(into)
    elif "merged_into" in a or "merged_into" in b:
        out["merged_into"] = None
    out["status"], archived_at = _status(a, b, out)
    if archived_at:
        out["archived_at"] = archived_at  # (a superseded or active result has none: that keeps the rule a join)
    return out


def _status(a, b, out):
    statuses = [r.get("status") or "active" for r in (a, b)]
    if "superseded" in statuses:
        return "superseded", None
    arch = [str(r.get("archived_at") or "") for r in (a, b) if r.get("status") == "archived"]
    if arch:
        when = max(arch)
        latest = max(out.get("seen", []) + out.get("used", []) + [""])
        if when >= latest:
            return "archived", when or None
    return "active", None


def drop_links(rec: dict, gone) -> bool:
    """Remove links to deleted records (tombstones).  True when something changed."""
    hit = False
    for k in LINK_FIELDS:
        links = rec.get(k)
        if isinstance(links, list) and set(links) & gone:
            rec[k] = [x for x in links if x not in gone]
            hit = True
    if rec.get("merged_into") in gone:
        rec["merged_into"] = None
        hit = True
    return hit
