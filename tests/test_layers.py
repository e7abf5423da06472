"""Layers import downward only: every import in src/tablequest — at module level or inside a
function, absolute or relative — names its own package or one of a lower layer
(docs/architecture.md, "Layers"). Packages are used through their surface: code outside a
package of `SURFACES` imports only its declared public modules, and from them only the names
their `__all__` lists (docs/architecture.md, "Packages")."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tablequest"

#: lowest first; a unit may import itself and anything on an earlier line
LAYERS: list[set[str]] = [
    {"errors", "waits", "plugins", "lazy", "gendoc"},  # import nothing of tablequest but `errors`
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
    {"service"},  # what serve and mcpserver share: state, asks, search, guard, connections
    {"serve", "mcpserver"},  # peers: neither imports the other
    {"cli"},
    {"__main__"},
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}

#: package → its public surface. The rule: a package's surface is its `__init__` plus the
#: sub-packages listed here (the method packages, which plugins and users import); code outside
#: the package imports only these modules, and only names in their `__all__`. Code inside the
#: package (its sub-packages included) imports any of its modules. Only src/ is checked: tests
#: may import internals.
_METHOD_PACKAGES = ("seek", "rag", "scope", "research", "auto")
SURFACES: dict[str, tuple[str, ...]] = {
    "tablequest.table": ("tablequest.table",),
    "tablequest.settings": ("tablequest.settings",),
    "tablequest.llm": ("tablequest.llm",),
    "tablequest.sandbox": ("tablequest.sandbox",),
    "tablequest.corpus": ("tablequest.corpus",),
    "tablequest.methods": (
        "tablequest.methods",
        *(f"tablequest.methods.{name}" for name in _METHOD_PACKAGES),
    ),
    "tablequest.scale": ("tablequest.scale",),
    "tablequest.service": ("tablequest.service",),
}


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


def _imported_names(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every `from … import names` in `path`, and (line, module, [])
    of every `import module`, relative ones resolved."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [alias.name for alias in node.names]
            if base == "tablequest":  # `from tablequest import table`: the package itself
                found += [(node.lineno, f"tablequest.{name}", []) for name in names]
            else:
                found.append((node.lineno, base, names))
    return found


def _package_file(module: str) -> Path:
    return SRC.parent.joinpath(*module.split("."), "__init__.py")


def _all_of(module: str) -> set[str]:
    """The names a surface module lists in `__all__` (read from its source, not imported)."""
    for node in ast.parse(_package_file(module).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                assert node.value is not None
                return set(ast.literal_eval(node.value))
    raise AssertionError(f"{module} has no __all__")


def _owner(module: str) -> str | None:
    return next((p for p in SURFACES if module == p or module.startswith(p + ".")), None)


def _unit_of_file(path: Path) -> str:
    return _unit(_module_of(path)) if path.parent != SRC else path.stem


def test_every_unit_has_a_layer() -> None:
    units = {p.stem if p.is_file() else p.name for p in SRC.iterdir()}
    units = {u for u in units if not u.startswith((".", "_")) or u in ("__init__", "__main__")}
    units -= {"py", "static", "templates"}
    assert units - set(RANK) == set(), "add the new package to LAYERS (and to docs)"


def test_mcpserver_imports_nothing_of_serve() -> None:
    """The MCP server stands on `tablequest.service`, not on the web app (issue 38): no
    module of `mcpserver` imports `tablequest.serve` or any of its modules."""
    found = [
        f"{path.relative_to(SRC)}:{line} imports {name}"
        for path in sorted((SRC / "mcpserver").rglob("*.py"))
        for line, name in _imports(path)
        if name == "tablequest.serve" or name.startswith("tablequest.serve.")
    ]
    assert found == []
    seen = {name for _, name in _imports(SRC / "mcpserver" / "service.py")}
    assert "tablequest.service" in seen  # the check reads mcpserver's imports


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


def test_packages_are_used_through_their_surface() -> None:
    """Outside a package of `SURFACES`, src/ imports only its surface modules, and only names
    their `__all__` lists (a submodule imported by name, `from tablequest.methods import run`,
    is an inner module too)."""
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        here = _module_of(path)
        for line, module, names in _imported_names(path):
            package = _owner(module)
            if package is None or here == package or here.startswith(package + "."):
                continue
            surfaces = SURFACES[package]
            where = f"{path.relative_to(SRC)}:{line}"
            if module not in surfaces:
                use = " or ".join(surfaces)
                wrong.append(f"{where} imports {module}, inside {package}: import from {use}")
                continue
            hidden = sorted(set(names) - _all_of(module))
            if hidden:
                init = _package_file(module).relative_to(SRC.parent)
                wrong.append(
                    f"{where} imports {', '.join(hidden)} from {module}, which its __all__ "
                    f"does not list: add it to the surface ({init})"
                )
    assert wrong == [], "\n".join(wrong)


def test_every_surface_name_resolves() -> None:
    """Each name a surface lists is there (a lazy `__init__` maps it to the right module)."""
    import importlib

    for surfaces in SURFACES.values():
        for module in surfaces:
            package = importlib.import_module(module)
            missing = [name for name in sorted(_all_of(module)) if not hasattr(package, name)]
            assert missing == [], f"{module}.__all__ lists names it does not have: {missing}"


def test_the_surface_check_sees_inner_modules_and_hidden_names() -> None:
    assert _owner("tablequest.corpus.storage.store") == "tablequest.corpus"
    assert _owner("tablequest.methods.rag.method") == "tablequest.methods"
    assert _owner("tablequest.serve.api") is None
    assert _owner("tablequest.service.state") == "tablequest.service"
    assert "tablequest.methods.rag" in SURFACES["tablequest.methods"]
    assert "open_corpus" in _all_of("tablequest.corpus") and "run" not in _all_of(
        "tablequest.methods"
    )
    imports = _imported_names(SRC / "cli" / "_scale.py")
    assert any(
        module == "tablequest.scale" and "ray_address" in names for _, module, names in imports
    )
