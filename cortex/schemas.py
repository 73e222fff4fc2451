"""Validation against the JSON Schemas in schemas/ (the contracts between stages)."""
import functools
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def schema_dir() -> str:
    """schemas/ beside the package in a checkout or editable install; share/cortex/schemas when installed."""
    for cand in (os.path.join(os.path.dirname(_HERE), "schemas"),
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
    """Readable problems (empty when valid): 'at transcript.size: -1 is less than the minimum of 0'."""
    out = []
    for err in sorted(_validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path) or "top level"
        out.append("at %s: %s" % (where, err.message[:300]))
    return out
