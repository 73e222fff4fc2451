"""The package's layer rule, enforced on every import (function-level ones included): see
docs/architecture.md.  A lower layer never imports a higher one, and sibling stages never import each
other, so data flows one way: capture -> inbox -> ingest -> store -> brief."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "cortex"

# package -> layer; a module may import its own package and any package of a LOWER layer only
LAYERS = {
    "core": 0,
    "model": 1, "clients": 1,
    "store": 2, "inbox": 2,
    "curate": 3,
    "capture": 4, "ingest": 4, "brief": 4, "install": 4,
    "ops": 5,
    "bench": 6,
    "cli": 7,
}
ROOT_MODULES = {"__init__", "__main__"}  # cortex/__main__.py runs the CLI


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).with_suffix("")
        yield path, ("cortex." + ".".join(rel.parts)).replace(".__init__", "")


def _imports(path: Path, modname: str):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg_parts = modname.split(".") if path.name == "__init__.py" else modname.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(pkg_parts[: len(pkg_parts) - node.level + 1])
                mod = base + ("." + node.module if node.module else "")
            else:
                mod = node.module or ""
            yield node.lineno, mod
            for a in node.names:  # `from cortex import store` names a package
                if mod == "cortex":
                    yield node.lineno, "cortex." + a.name


def violations():
    found = []
    for path, mod in _modules():
        parts = mod.split(".")
        if len(parts) < 3:
            if parts[-1] in ROOT_MODULES or mod == "cortex" or path.name == "__init__.py":
                continue
            found.append("%s: a module directly under cortex/ (put it in a stage or layer package)" % mod)
            continue
        own = parts[1]
        assert own in LAYERS, "cortex/%s/ has no layer in tests/test_layers.py: give it one" % own
        for line, target in _imports(path, mod):
            tparts = target.split(".")
            if tparts[0] != "cortex" or len(tparts) < 2:
                continue
            other = tparts[1]
            if other == own or other not in LAYERS:
                continue
            if LAYERS[other] >= LAYERS[own]:
                found.append("%s:%d imports %s (layer %s %d -> %s %d)" % (
                    path.relative_to(PKG.parent), line, target, own, LAYERS[own], other, LAYERS[other]))
    return found


def test_every_import_follows_the_layer_rule():
    assert violations() == []


def test_the_rule_catches_an_upward_import(tmp_path, monkeypatch):
    # the checker itself can fail: a store module importing brief is reported
    src = "def f():\n    from cortex.brief import render\n"
    p = PKG / "store" / "_layer_probe_tmp.py"
    p.write_text(src)
    try:
        assert any("_layer_probe_tmp" in v for v in violations())
    finally:
        p.unlink()


def test_no_import_cycles_between_packages():
    edges = {}
    for path, mod in _modules():
        parts = mod.split(".")
        if len(parts) < 3:
            continue
        for _, target in _imports(path, mod):
            t = target.split(".")
            if t[0] == "cortex" and len(t) > 1 and t[1] != parts[1] and t[1] in LAYERS:
                edges.setdefault(parts[1], set()).add(t[1])
    seen, stack = set(), []

    def visit(n):
        if n in stack:
            pytest.fail("import cycle: " + " -> ".join(stack[stack.index(n):] + [n]))
        if n in seen:
            return
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            visit(m)
        stack.pop()
        seen.add(n)

    for n in sorted(edges):
        visit(n)


def test_no_import_cycles_between_modules():
    mods = {m for _, m in _modules()}

    def owner(name):  # `from cortex.store import records` names a module through its package
        while name not in mods and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph = {}
    for path, mod in _modules():
        for _, target in _imports(path, mod):
            t = owner(target)
            if target.startswith("cortex.") and t != mod and t in mods and not t.count(".") < 2:
                graph.setdefault(mod, set()).add(t)
    state = {}

    def visit(n, stack):
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                pytest.fail("import cycle: " + " -> ".join(stack[stack.index(m):] + [n, m]))
            if m not in state:
                visit(m, stack + [n] if m not in stack else stack)
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n, [])
