"""Validation against the JSON Schemas in schemas/ (the contracts between stages)."""
import functools
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def schema_dir() -> str:
    """schemas/ beside the package in a checkout or editable install; share/cortex/schemas when installed."""
    for cand in (os.path.join(os.path.dirname(os.path.dirname(_HERE)), "schemas"),
                 os.path.join(sys.prefix, "share", "cortex", "schemas")):
        if os.path.isfile(os.path.join(cand, "record.schema.json")):
            return cand
    raise FileNotFoundError("Cortex schemas not found; reinstall Cortex (pip install .) from its checkout")


@functools.lru_cache(maxsize=None)
def _validator(name: str):
    import jsonschema
    with open(os.path.join(schema_dir(), name + ".schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def validate(name: str, instance) -> list:
    """Readable problems (empty when valid): 'at transcript.size: -1 is less than the minimum of 0'.

    A valid instance is answered by the compiled check (fast_check) without importing jsonschema (about
    100 ms, on every normalizer run that reads an event); anything it does not pass goes to jsonschema,
    which finds the problems, so the answer is always jsonschema's."""
    check = fast_check(name)
    if check is not None and check(instance):
        return []
    return jsonschema_problems(name, instance)


def jsonschema_problems(name: str, instance) -> list:
    """validate() by jsonschema alone."""
    out = []
    for err in sorted(_validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path) or "top level"
        out.append("at %s: %s" % (where, err.message[:300]))
    return out


# -- the compiled check ------------------------------------------------------------------------------

class _Unsupported(Exception):
    pass


_IGNORED = {"description", "title", "$schema", "$id", "$comment", "default", "examples"}
_TYPE_EXPR = {"string": "isinstance({v}, str)",
              "number": "(isinstance({v}, (int, float)) and not isinstance({v}, bool))",
              "integer": "type({v}) is int",
              "boolean": "isinstance({v}, bool)",
              "null": "{v} is None",
              "object": "isinstance({v}, dict)",
              "array": "isinstance({v}, list)"}
# the types whose expression above is exactly JSON Schema's ("integer" is stricter: 1.0 is an integer there)
_EXACT_TYPES = {"string", "number", "boolean", "null", "object", "array"}
_MISSING = object()


def _type_test(v: str, val, exact: bool = False) -> str:
    """The test that v has one of these JSON types; exact: only types whose test is exactly JSON Schema's."""
    names = val if isinstance(val, list) else [val]
    if not names or not all(isinstance(n, str) and n in (_EXACT_TYPES if exact else _TYPE_EXPR) for n in names):
        raise _Unsupported("type %r" % (val,))
    return "(%s)" % " or ".join(_TYPE_EXPR[n].format(v=v) for n in names)


def _value_test(v: str, values) -> str:
    """An exact test that v is one of these JSON values (strings, booleans, null: compared by type too,
    since True == 1 in Python and not in JSON)."""
    parts = []
    strs = [x for x in values if isinstance(x, str)]
    if strs:
        parts.append("(isinstance(%s, str) and %s in %r)" % (v, v, frozenset(strs)))
    for b in (True, False):
        if any(x is b for x in values):
            parts.append("%s is %r" % (v, b))
    if any(x is None for x in values):
        parts.append("%s is None" % v)
    if len(strs) + sum(1 for x in values if x is None or isinstance(x, bool)) != len(values):
        raise _Unsupported("a value that is not a string, boolean or null: %r" % (values,))
    return "(%s)" % " or ".join(parts) if parts else "False"


def _exact(sch, v: str) -> str:
    """An expression that is True exactly when v is valid against sch (for the conditions of if/then),
    for schemas of properties, const, enum and exact types only."""
    if not isinstance(sch, dict):
        raise _Unsupported(repr(sch))
    conds = []
    for key, val in sch.items():
        if key in _IGNORED:
            continue
        if key == "const":
            conds.append(_value_test(v, [val]))
        elif key == "enum":
            conds.append(_value_test(v, list(val)))
        elif key == "type":
            conds.append(_type_test(v, val, exact=True))
        elif key == "properties":
            for name, sub in val.items():
                item = "%s[%r]" % (v, name)
                conds.append("(not isinstance(%s, dict) or %r not in %s or %s)" % (v, name, v, _exact(sub, item)))
        else:
            raise _Unsupported("%s in a condition" % key)
    return "(%s)" % " and ".join(conds) if conds else "True"


def _compile(schema: dict):
    """A function value -> bool for the subset of JSON Schema that Cortex's schemas use (type, enum, const,
    pattern, minLength, minimum, maximum, exclusiveMinimum/Maximum, required, properties,
    additionalProperties, items, minItems, allOf, if/then/else, and oneOf of branches of different types),
    generated as straight-line Python.  It is *sound*: True only when jsonschema would find no error (it is
    stricter where that is simpler: an "integer" must be an int).  When it says False the caller asks
    jsonschema, so results never differ.  Any other keyword raises _Unsupported (jsonschema does all the
    work)."""
    import re
    consts = {"_MISSING": _MISSING}
    lines = ["def check(v0):"]
    depth = [0]

    def const(value):
        name = "_C%d" % len(consts)
        consts[name] = value
        return name

    def fresh():
        depth[0] += 1
        return "v%d" % depth[0]

    def block(sch, v, ind):
        """gen, with a `pass` when it added nothing (the body of an if or for)."""
        n = len(lines)
        gen(sch, v, ind)
        if len(lines) == n:
            lines.append("%spass" % (" " * ind))

    def gen(sch, v, ind):
        pad = " " * ind
        if not isinstance(sch, dict):
            raise _Unsupported(repr(sch))
        for key, val in sch.items():
            if key in _IGNORED or key in ("properties", "additionalProperties", "then", "else"):
                continue
            if key == "type":
                lines.append("%sif not %s: return False" % (pad, _type_test(v, val)))
            elif key in ("enum", "const"):
                lines.append("%sif not %s: return False" % (pad, _value_test(v, list(val) if key == "enum"
                                                                               else [val])))
            elif key == "pattern":
                lines.append("%sif isinstance(%s, str) and %s.search(%s) is None: return False"
                             % (pad, v, const(re.compile(val)), v))
            elif key == "minLength":
                lines.append("%sif isinstance(%s, str) and len(%s) < %d: return False" % (pad, v, v, int(val)))
            elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                op = {"minimum": "<", "maximum": ">", "exclusiveMinimum": "<=", "exclusiveMaximum": ">="}[key]
                lines.append("%sif %s and %s %s %s: return False" % (pad, _TYPE_EXPR["number"].format(v=v), v, op,
                                                                  const(val)))
            elif key == "minItems":
                lines.append("%sif isinstance(%s, list) and len(%s) < %d: return False" % (pad, v, v, int(val)))
            elif key == "required":
                lines.append("%sif isinstance(%s, dict) and not (%s): return False"
                             % (pad, v, " and ".join("%r in %s" % (k, v) for k in val) or "True"))
            elif key == "items":
                x = fresh()
                lines.append("%sif isinstance(%s, list):" % (pad, v))
                lines.append("%s    for %s in %s:" % (pad, x, v))
                block(val, x, ind + 8)
            elif key == "allOf":
                for sub in val:
                    gen(sub, v, ind)
            elif key == "if":
                lines.append("%sif %s:" % (pad, _exact(val, v)))
                block(sch.get("then", {}), v, ind + 4)
                lines.append("%selse:" % pad)
                block(sch.get("else", {}), v, ind + 4)
            elif key == "oneOf":
                # branches told apart by their exact types: the one of v's type must pass, the others
                # fail on their type, so exactly one passes
                seen = set()
                for i, sub in enumerate(val):
                    types = sub.get("type") if isinstance(sub, dict) else None
                    cond = _type_test(v, types, exact=True)
                    names = set([types] if isinstance(types, str) else types)
                    if seen & names:
                        raise _Unsupported("oneOf whose branches share a type")
                    seen |= names
                    lines.append("%s%s %s:" % (pad, "if" if i == 0 else "elif", cond))
                    block(sub, v, ind + 4)
                lines.append("%selse: return False" % pad)
            else:
                raise _Unsupported(key)
        props = sch.get("properties") or {}
        extra = sch.get("additionalProperties", True)
        if props or extra is not True:
            lines.append("%sif isinstance(%s, dict):" % (pad, v))
            n0 = len(lines)
            for name, sub in props.items():
                x = fresh()
                lines.append("%s    %s = %s.get(%r, _MISSING)" % (pad, x, v, name))
                lines.append("%s    if %s is not _MISSING:" % (pad, x))
                block(sub, x, ind + 8)
            if extra is False:
                lines.append("%s    if any(k not in %s for k in %s): return False" % (pad, const(frozenset(props)), v))
            elif extra is not True:
                x = fresh()
                k = "k%d" % depth[0]
                lines.append("%s    for %s, %s in %s.items():" % (pad, k, x, v))
                lines.append("%s        if %s in %s: continue" % (pad, k, const(frozenset(props))))
                gen(extra, x, ind + 8)
            if len(lines) == n0:
                lines.append("%s    pass" % pad)

    gen(schema, "v0", 4)
    lines.append("    return True")
    ns = dict(consts)
    exec(compile("\n".join(lines), "<schema check>", "exec"), ns)
    return ns["check"]


_FAST_CHECKS = {}


def fast_check(name: str):
    """The compiled sound check of schemas/<name>.schema.json, or None if it uses keywords it does not handle."""
    if name not in _FAST_CHECKS:
        try:
            with open(os.path.join(schema_dir(), name + ".schema.json"), encoding="utf-8") as f:
                _FAST_CHECKS[name] = _compile(json.load(f))
        except (_Unsupported, OSError, ValueError, KeyError):
            _FAST_CHECKS[name] = None
    return _FAST_CHECKS[name]
