"""Layers import downward only: every import in src/tablequest — at module level or inside a
function, absolute or relative — names its own package or one of a lower layer
(docs/architecture.md, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tablequest"

#: lowest first; a unit may import itself and anything on an earlier line
LAYERS: list[set[str]] = [
    {"errors", "waits", "plugins"},  # import nothing of tablequest but `errors`
    {"configfile"},
    {"settings"},  # the one Settings: above configfile's trust rules, below every reader
    {"trace", "table"},
    {"llm"},
    {"sandbox"},
    {"corpus"},
    {"display"},
    {"methods"},
    {"notebook", "doctor", "eval"},
    {"__init__"},  # the public API: `import tablequest` from the surfaces
    {"scale"},
    {"serve"},
    {"mcpserver"},  # beside serve: it reuses serve's asks, search and guard
    {"cli"},
    {"__main__"},
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def _unit(module: str) -> str:
    """The layer unit of a module path: ``tablequest.corpus.x`` → ``corpus``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_of(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every import in `path`, relative ones resolved."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "tablequest":  # `from tablequest import configfile`: the submodule
                found += [(node.lineno, f"tablequest.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, base))
    return [(line, name) for line, name in found if name.split(".")[0] == "tablequest"]


def _unit_of_file(path: Path) -> str:
    return _unit(_module_of(path)) if path.parent != SRC else path.stem


def test_every_unit_has_a_layer() -> None:
    units = {p.stem if p.is_file() else p.name for p in SRC.iterdir()}
    units = {u for u in units if not u.startswith((".", "_")) or u in ("__init__", "__main__")}
    units -= {"py", "static", "templates"}
    assert units - set(RANK) == set(), "add the new package to LAYERS (and to docs)"


def test_imports_go_downward_only() -> None:
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        mine = _unit_of_file(path)
        for line, name in _imports(path):
            target = _unit(name)
            if target not in RANK:  # `tablequest.__version__` and the like: the root module
                target = "__init__"
            if target != mine and RANK[target] > RANK[mine]:
                upward.append(f"{path.relative_to(SRC)}:{line} imports {name} ({target})")
            elif target != mine and RANK[target] == RANK[mine]:
                upward.append(f"{path.relative_to(SRC)}:{line} imports its peer {name}")
    assert upward == []


def test_the_check_sees_relative_and_function_level_imports() -> None:
    store = {name for _, name in _imports(SRC / "corpus" / "storage" / "store.py")}
    assert "tablequest.corpus.storage.storefile" in store
    child = {name for _, name in _imports(SRC / "sandbox" / "_child.py")}
    assert "tablequest.sandbox" in child  # `from . import _audit, …` resolved to its package
    retrievers = _imports(SRC / "corpus" / "retrieval" / "retrievers.py")
    inner = [line for line, name in retrievers if name == "tablequest.corpus.dense.index"]
    assert inner and min(inner) > 100  # imported inside a function, far below the header
    assert _unit("tablequest.serve.app") == "serve" and _unit("tablequest") == "__init__"
