"""One exception base and one table of how the CLI and the API report errors (issue 27)."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import tablequest
from tablequest.cli import _exit, app
from tablequest.cli._output import fail, fail_on
from tablequest.corpus import Store, ingest
from tablequest.corpus.storage.store import NoStore, NotAStore, StoreError, StoreLocked
from tablequest.errors import (
    ERRORS,
    TablequestError,
    error_code,
    error_kind,
    exit_code,
    http_status,
)
from tablequest.llm.base import LLMError, ModelUnreachable
from tablequest.llm.config import ConfigError
from tablequest.methods.options import OptionError
from tablequest.methods.registry import UnknownMethod
from tablequest.methods.run import SourceError
from tablequest.serve import ServeConfig, create_app
from tablequest.serve.app import API_ERRORS
from tablequest.serve.asks import Busy
from tablequest.serve.state import ServerOnlyOption
from tablequest.serve.uploads import UploadRejected

SANDBOX = Path(tablequest.__file__).parent / "sandbox"


def package_exceptions() -> set[type[BaseException]]:
    """Every exception class defined in a module of the package (modules whose optional
    extra is missing are skipped; `__main__` modules run the CLI)."""
    found: set[type[BaseException]] = set()
    for info in pkgutil.walk_packages(tablequest.__path__, "tablequest."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and not issubclass(obj, Warning)  # warning categories are not errors
                and obj.__module__.startswith("tablequest.")
            ):
                found.add(obj)
    return found


def test_every_exception_of_the_package_is_a_tablequest_error() -> None:
    classes = package_exceptions()
    assert len(classes) >= 70  # the walk reached the whole package
    assert TablequestError in classes and ServerOnlyOption in classes
    stray = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes
                   if not issubclass(c, TablequestError))  # fmt: skip
    assert stray == []


def test_the_old_bases_still_catch() -> None:
    assert issubclass(SourceError, ValueError) and issubclass(ConfigError, ValueError)
    assert issubclass(UnknownMethod, ValueError) and issubclass(ServerOnlyOption, OptionError)
    assert issubclass(ModelUnreachable, LLMError) and issubclass(NoStore, StoreError)
    from tablequest.sandbox import InvalidArgument, SandboxError

    assert InvalidArgument.__mro__[1:4] == (SandboxError, TablequestError, RuntimeError)
    assert issubclass(InvalidArgument, ValueError) and issubclass(InvalidArgument, TypeError)


def test_the_sandbox_child_modules_still_import_only_the_standard_library() -> None:
    """The child loads these by path before lock-down: no `tablequest` import there."""
    code = (
        f"import sys; sys.path.insert(0, {str(SANDBOX)!r})\n"
        "import _bootstrap, _landlock, _seccomp\n"
        "assert not [m for m in sys.modules if m.startswith('tablequest')], 'imported'\n"
        "for c in (_bootstrap.LockdownFailed, _landlock.LandlockUnsupported,"
        " _seccomp.SeccompUnsupported):\n"
        "    print(c.__name__, [b.__name__ for b in c.__bases__])\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "LockdownFailed ['TablequestError', 'RuntimeError']",
        "LandlockUnsupported ['TablequestError', 'RuntimeError']",
        "SeccompUnsupported ['TablequestError', 'RuntimeError']",
    ]


def test_the_errors_module_is_the_lowest_layer() -> None:
    tree = ast.parse((SANDBOX.parent / "errors.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"__future__", "dataclasses"}


def test_every_row_names_one_class_of_the_package_or_a_builtin() -> None:
    by_name: dict[str, list[type[BaseException]]] = {}
    for cls in package_exceptions():
        by_name.setdefault(cls.__qualname__, []).append(cls)
    for name in ERRORS:
        if name in by_name:
            assert len(by_name[name]) == 1, f"{name} names {by_name[name]}"
        else:
            assert issubclass(getattr(builtins, name), Exception), name


@pytest.mark.parametrize(
    ("exc", "status", "http", "code"),
    [
        (ValueError("the question is empty"), _exit.USAGE, 400, None),
        (UnknownMethod("unknown method 'x'"), _exit.USAGE, 400, "unknown_method"),
        (OptionError("unknown option 'x'"), _exit.USAGE, 400, "bad_option"),
        (ServerOnlyOption("option 'memory_path'"), _exit.USAGE, 422, "server_only_option"),
        (SourceError("no table 'x'"), _exit.USAGE, 400, None),
        (ConfigError("bad toml"), _exit.USAGE, 400, None),  # by its ValueError base
        (UploadRejected(413, "over the limit"), _exit.USAGE, 413, None),
        (NotAStore("a text file"), _exit.USAGE, 503, "store"),
        (NoStore("no store"), _exit.USAGE, 503, "store"),
        (StoreLocked("held", holder=7), _exit.FAILED, 503, "store"),
        (Busy(4, retry_after=2), _exit.FAILED, 429, "busy"),
        (ModelUnreachable("refused"), _exit.FAILED, None, None),  # no row: a failed run
    ],
)
def test_the_table_gives_the_documented_codes(
    exc: BaseException, status: int, http: int | None, code: str | None
) -> None:
    assert exit_code(exc) == status and http_status(exc) == http
    kind = error_kind(exc)
    assert (kind.api_code if kind else None) == code


def test_the_api_registers_a_handler_for_every_row_it_answers() -> None:
    answered = {name for name, kind in ERRORS.items() if kind.http_status is not None}
    assert {cls.__qualname__ for cls in API_ERRORS} <= answered
    for cls in package_exceptions() | {ValueError}:
        if cls.__qualname__ in answered:
            assert issubclass(cls, API_ERRORS), cls  # a handler fires for it


def test_fail_on_takes_the_status_from_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        raise StoreLocked("the store is held by PID 7", holder=7)
    except StoreLocked as locked:
        wrapped = RuntimeError("could not open the store")
        wrapped.__cause__ = locked
    with pytest.raises(typer.Exit) as ended:
        fail_on(wrapped, json_out=True)
    assert ended.value.exit_code == exit_code(StoreLocked("x")) == _exit.FAILED
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "store_locked"
    with pytest.raises(typer.Exit) as ended:
        fail_on(UnknownMethod("unknown method 'x'"), json_out=True)
    assert ended.value.exit_code == _exit.USAGE
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "unknown_method"
    with pytest.raises(typer.Exit) as ended:
        fail_on(ValueError("steps must be at least 1"), json_out=True)
    assert ended.value.exit_code == _exit.USAGE
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "usage"  # no name: generic
    with pytest.raises(typer.Exit) as ended:
        fail("cannot write the run", json_out=True, status=_exit.FAILED)
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "failed"  # never "usage"


def test_one_code_on_both_surfaces() -> None:
    assert error_code(StoreLocked("held", holder=7)) == "store_locked"  # its own code
    assert error_code(UnknownMethod("x")) == "unknown_method"  # its row's
    assert error_code(ValueError("x")) is None  # each surface's generic code
    foreign = ValueError("x")
    foreign.code = "not_ours"  # type: ignore[attr-defined]
    assert error_code(foreign) is None  # only tablequest's errors name their code


def test_the_cli_exits_2_on_an_unknown_method(tmp_path: Path) -> None:
    table = tmp_path / "comets.csv"
    table.write_text("Comet,Period years\nHalvorsen,76\n")
    result = CliRunner().invoke(app, ["ask", str(table), "period?", "--method", "nope", "--json"])
    assert result.exit_code == exit_code(UnknownMethod("x")) == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "unknown_method" and "unknown method 'nope'" in error["message"]


def test_the_api_answers_from_the_table(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "comets.csv").write_text("Comet,Period years\nHalvorsen,76\n")
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [tmp_path / "corpus"]).ok
    config = ServeConfig(store=tmp_path / "s.duckdb", trace_dir=tmp_path / "t", token=None)
    research = {"question": "q?", "method": "research", "stream": False}
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        unknown = client.get("/v1/methods/nope")
        magic = client.get("/v1/search", params={"q": "x", "method": "magic"})
        server_only = client.post("/v1/ask", json={**research, "options": {"memory_path": "/m"}})
    for response, exc in [
        (unknown, UnknownMethod("x")),
        (magic, ValueError("x")),
        (server_only, ServerOnlyOption("x")),
    ]:
        kind = error_kind(exc)
        assert kind is not None and response.status_code == kind.http_status, response.text
        assert response.json()["error"]["code"] == (error_code(exc) or "bad_request")
    assert "memory_path" in server_only.json()["error"]["message"]
