"""Transcript adapters, one module per client format, chosen by content (see base.py)."""
from __future__ import annotations

import importlib

from cortex.ingest.adapters.base import Adapter, Entry, ParseResult, PlanItem, SessionMeta  # noqa: F401

from cortex.clients.spec import CLIENTS

# client name -> "module:Class" (cortex/clients/spec.py); imported only when needed.
_ADAPTERS = {name: facts["adapter"] for name, facts in CLIENTS.items()}

HEAD_BYTES = 65536


def get(client: str) -> Adapter:
    mod, cls = _ADAPTERS[client].split(":")
    return getattr(importlib.import_module(mod), cls)()


def clients() -> list:
    return list(_ADAPTERS)


def detect(path: str, hint: str | None = None) -> Adapter | None:
    """The adapter whose format the file is in, or None.

    `hint` (the client named by the event) is tried first, but the content must agree:
    a wrong hint never makes a file parse with the wrong adapter.
    """
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    order = ([hint] if hint in _ADAPTERS else []) + [c for c in _ADAPTERS if c != hint]
    for client in order:
        try:
            adapter = get(client)
        except ImportError:
            continue
        if adapter.sniff(head, path):
            return adapter
    return None
