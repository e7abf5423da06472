"""Configuration has one home: no module outside `tablequest.settings` and
`tablequest.configfile` reads a ``TABLEQUEST_*`` variable from the environment itself, and
no module writes the environment outside the sandbox (issue 38, item 1)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tablequest"

READERS_ALLOWED = {
    # the loader itself, and the trust rules' $TABLEQUEST_CONFIG
    "settings/_load.py",
    "configfile.py",
    # a test switch, not a setting: the suite sets it so no test reaches a real model
    # server; it must hold in every process, settings or not, so it is read where it acts
    "llm/guard.py",
}
"""Modules that may read a TABLEQUEST_* variable from the environment (why, each)."""

WRITERS_ALLOWED = {
    # third-party switches that only take effect through the environment: Ray's usage-stats
    # notice, Hugging Face's offline mode and the tokenizers' fork warning / threads
    "scale/cluster.py",
    "corpus/dense/encoder_base.py",
    "corpus/dense/torch_minilm.py",
}


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level NAME = "TABLEQUEST_..." constants."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    out[target.id] = node.value.value
    return out


def _is_environ(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _named(node: ast.expr, constants: dict[str, str]) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id, "")
    return ""


def _reads(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, variable) of each os.environ[X] / os.environ.get(X) / os.getenv(X) read of a
    TABLEQUEST_* name (a literal or a module constant)."""
    constants = _constants(tree)
    found = []
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and _is_environ(node.value):
            key = node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            owner, attr = node.func.value, node.func.attr
            if (attr in ("get", "pop", "setdefault") and _is_environ(owner)) or attr == "getenv":
                key = node.args[0]
        if key is not None and _named(key, constants).startswith("TABLEQUEST_"):
            found.append((getattr(node, "lineno", 0), _named(key, constants)))
    return found


def _writes(tree: ast.Module) -> list[int]:
    """Lines that write os.environ (item assignment, update, setdefault, pop, del)."""
    lines = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.Delete):
            targets = node.targets
        if any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets):
            lines.append(getattr(node, "lineno", 0))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("update", "setdefault", "pop", "clear")
            and _is_environ(node.func.value)
        ):
            lines.append(node.lineno)
    return lines


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(SRC).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(SRC.rglob("*.py"))
    ]


def test_only_the_settings_read_tablequest_variables() -> None:
    readers = {
        f"{name}:{line} {var}"
        for name, tree in _modules()
        if name not in READERS_ALLOWED and not name.startswith("settings/")
        for line, var in _reads(tree)
    }
    assert not readers, f"read through tablequest.settings instead: {sorted(readers)}"


def test_no_environment_writes_outside_the_sandbox() -> None:
    writers = {
        f"{name}:{line}"
        for name, tree in _modules()
        if name not in WRITERS_ALLOWED and not name.startswith("sandbox/")
        for line in _writes(tree)
    }
    assert not writers, f"pass values explicitly, not through os.environ: {sorted(writers)}"


def test_the_checks_see_what_they_look_for() -> None:
    tree = ast.parse(
        'import os\nV = "TABLEQUEST_X"\nos.environ.get(V)\nos.environ["TABLEQUEST_Y"]\n'
        'os.getenv("TABLEQUEST_Z")\nos.environ["A"] = "1"\nos.environ.setdefault("B", "1")\n'
    )
    assert [var for _, var in _reads(tree)] == ["TABLEQUEST_X", "TABLEQUEST_Y", "TABLEQUEST_Z"]
    assert _writes(tree) == [6, 7]
