"""Errors carry their codes (issue 38): two bases, class attributes read by the CLI and the
API, and any other exception reported as an internal error, never as bad input."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import tablequest
import tablequest.methods.run as run_module
import tablequest.serve.api as api_module
from tablequest.cli import _exit, app
from tablequest.cli._output import fail, fail_on
from tablequest.corpus import Store, ingest
from tablequest.corpus.dense.encoders import EncoderUnavailable
from tablequest.corpus.storage.sql import SqlRefused, SqlTimeout
from tablequest.corpus.storage.store import (
    NoStore,
    NotAStore,
    StoreError,
    StoreLocked,
    StoreOutdated,
)
from tablequest.errors import (
    BadValue,
    RunError,
    TablequestError,
    UsageError,
    error_code,
    exit_code,
    http_status,
    internal_message,
    trace_note,
)
from tablequest.llm.base import LLMError, ModelUnreachable
from tablequest.llm.cache import CacheError
from tablequest.llm.config import ConfigError
from tablequest.methods.options import OptionError
from tablequest.methods.registry import UnknownMethod
from tablequest.methods.research import MemoryUnavailable
from tablequest.methods.run import SourceError
from tablequest.sandbox import InvalidArgument, SandboxError
from tablequest.serve import ServeConfig, create_app
from tablequest.serve.uploads import EmptyUpload, UploadRejected
from tablequest.service import Busy, ServerOnlyOption
from tablequest.trace import UnreadableTrace, store_key
from tablequest.trace.retention import RetentionError

SANDBOX = Path(tablequest.__file__).parent / "sandbox"
BASES = {TablequestError, UsageError, RunError}
KEEP_VALUE_ERROR = {"InvalidArgument"}
"""The package's errors that are also ValueErrors: the sandbox's bad argument (its contract,
like a builtin's); no other (a surface catching ValueError would take a bug for bad input)."""
USAGE_BUT_503 = {NotAStore, NoStore}
"""Bad input that is a store error all the same: the API's 503, as for every store error."""
RUN_BUT_4XX = {Busy: 429, StoreOutdated: 409}


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


@pytest.fixture(scope="module")
def classes() -> list[type[TablequestError]]:
    """The package's exception classes but the three bases, by name."""
    found = [c for c in package_exceptions() if c not in BASES]
    assert len(found) >= 70  # the walk reached the whole package
    ours = cast(list[type[TablequestError]], found)  # a stray fails the first test
    return sorted(ours, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def instance(cls: type[TablequestError], message: str = "boom") -> TablequestError:
    """An instance of `cls` whatever its constructor takes (the attributes the surfaces read
    come from the class; `Busy`'s Retry-After from the instance)."""
    exc = cls.__new__(cls)
    exc.args = (message,)
    if isinstance(exc, Busy):
        exc.retry_after = 3
    return exc


def test_every_exception_of_the_package_is_a_usage_or_a_run_error(
    classes: list[type[BaseException]],
) -> None:
    assert ServerOnlyOption in classes and BadValue in classes
    stray = [f"{c.__module__}.{c.__qualname__}" for c in classes
             if not issubclass(c, (UsageError, RunError))]  # fmt: skip
    assert stray == []


def test_each_class_reports_as_its_base_says(classes: list[type[TablequestError]]) -> None:
    for cls in classes:
        usage = issubclass(cls, UsageError)
        assert cls.exit_code == (_exit.USAGE if usage else _exit.FAILED), cls
        assert isinstance(cls.code, str) and cls.code, cls
        if cls in USAGE_BUT_503:
            assert (usage, cls.http_status) == (True, 503)
        elif cls in RUN_BUT_4XX:
            assert (usage, cls.http_status) == (False, RUN_BUT_4XX[cls])
        elif usage:
            assert 400 <= cls.http_status < 500, cls
        else:
            assert cls.http_status == 503, cls  # 500 is kept for bugs


def test_only_the_sandboxs_argument_error_is_a_value_error(
    classes: list[type[BaseException]],
) -> None:
    assert {c.__qualname__ for c in classes if issubclass(c, ValueError)} == KEEP_VALUE_ERROR
    assert not issubclass(UsageError, ValueError) and not issubclass(RunError, RuntimeError)


def test_the_kinds_keep_their_families() -> None:
    assert issubclass(NotAStore, UsageError) and issubclass(NotAStore, StoreError)
    assert issubclass(ServerOnlyOption, OptionError) and issubclass(ModelUnreachable, LLMError)
    assert issubclass(NoStore, StoreError) and issubclass(StoreError, RunError)
    assert InvalidArgument.__mro__[1:4] == (UsageError, SandboxError, RunError)
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
        "LockdownFailed ['RunError', 'RuntimeError']",
        "LandlockUnsupported ['RunError', 'RuntimeError']",
        "SeccompUnsupported ['RunError', 'RuntimeError']",
    ]


def test_the_errors_module_is_the_lowest_layer() -> None:
    tree = ast.parse((SANDBOX.parent / "errors.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"__future__", "typing"}


@pytest.mark.parametrize(
    ("exc", "status", "http", "code"),
    [
        (BadValue("the question is empty"), _exit.USAGE, 400, "usage"),
        (UnknownMethod("unknown method 'x'"), _exit.USAGE, 400, "unknown_method"),
        (OptionError("unknown option 'x'"), _exit.USAGE, 400, "bad_option"),
        (ServerOnlyOption("option 'memory_path'"), _exit.USAGE, 422, "server_only_option"),
        (SourceError("no table 'x'"), _exit.USAGE, 400, "usage"),
        (ConfigError("bad toml"), _exit.USAGE, 400, "usage"),
        (EncoderUnavailable("pip install"), _exit.USAGE, 400, "usage"),
        (UploadRejected("over the limit"), _exit.USAGE, 413, "too_large"),
        (EmptyUpload("no file"), _exit.USAGE, 400, "usage"),
        (NotAStore("a text file"), _exit.USAGE, 503, "not_a_store"),
        (NoStore("no store"), _exit.USAGE, 503, "no_store"),
        (StoreLocked("held", holder=7), _exit.FAILED, 503, "store_locked"),
        (StoreOutdated("migrate it"), _exit.FAILED, 409, "store_outdated"),
        (SqlTimeout("past the time limit"), _exit.USAGE, 422, "sql_timeout"),
        (SqlRefused("only SELECT"), _exit.USAGE, 400, "sql_refused"),
        (Busy(4, retry_after=2), _exit.FAILED, 429, "busy"),
        (ModelUnreachable("refused", url="http://127.0.0.1:9"), _exit.FAILED, 503, "failed"),
        (UnreadableTrace("t.jsonl", "line 2 is not JSON"), _exit.USAGE, 422, "trace"),
        (RetentionError("TABLEQUEST_TRACE_KEEP='x'"), _exit.USAGE, 400, "bad_retention"),
        (CacheError(Path("cache.sqlite"), "locked"), _exit.FAILED, 503, "cache"),
        (MemoryUnavailable("cannot write memory.duckdb"), _exit.FAILED, 503, "failed"),
        (ValueError("a bug deep in pandas"), _exit.FAILED, 500, "internal"),
        (KeyError("a bug"), _exit.FAILED, 500, "internal"),
    ],
)
def test_the_classes_give_the_documented_codes(
    exc: BaseException, status: int, http: int, code: str
) -> None:
    assert (exit_code(exc), http_status(exc), error_code(exc)) == (status, http, code)


def test_an_instance_may_name_its_own_code() -> None:
    from tablequest.corpus.storage.ingest import IngestAborted, IngestReport

    aborted = IngestAborted("disk full", IngestReport(), code="disk_full")
    assert error_code(aborted) == "disk_full" and exit_code(aborted) == _exit.FAILED
    foreign = ValueError("x")
    foreign.code = "not_ours"  # type: ignore[attr-defined]
    assert error_code(foreign) == "internal"  # only tablequest's errors name their code


def test_fail_on_takes_the_status_from_the_class(capsys: pytest.CaptureFixture[str]) -> None:
    def ended(exc: BaseException) -> tuple[int | None, dict[str, Any]]:
        with pytest.raises(typer.Exit) as ended:
            fail_on(exc, json_out=True)
        return ended.value.exit_code, json.loads(capsys.readouterr().out)["error"]

    try:
        raise StoreLocked("the store is held by PID 7", holder=7)
    except StoreLocked as locked:
        wrapped = RuntimeError("could not open the store")
        wrapped.__cause__ = locked
    status, error = ended(wrapped)  # the store error in the chain names status and code
    assert (status, error["code"]) == (_exit.FAILED, "store_locked")
    assert error["message"] == "could not open the store"
    assert ended(UnknownMethod("unknown method 'x'"))[1]["code"] == "unknown_method"
    status, error = ended(BadValue("steps must be at least 1"))
    assert (status, error["code"]) == (_exit.USAGE, "usage")
    status, error = ended(ValueError("a bug"))
    assert (status, error["code"]) == (_exit.FAILED, "internal")
    assert error["message"].startswith("internal error: ValueError: a bug")
    with pytest.raises(typer.Exit):
        fail("cannot write the run", json_out=True, status=_exit.FAILED)
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "failed"  # never "usage"


def test_the_internal_message_names_the_trace() -> None:
    exc = ValueError("cannot reindex on an axis with duplicate labels")
    trace_note(exc, "/srv/traces/20260101-abc.jsonl")
    trace_note(exc, "/elsewhere.jsonl")  # noted once
    shown = internal_message(exc)
    assert shown.startswith("internal error: ValueError: cannot reindex on an axis")
    assert "(trace /srv/traces/20260101-abc.jsonl)" in shown and "a bug" in shown
    hidden = internal_message(exc, where="logged as 1234", detail=False)
    assert hidden.startswith("internal error: ValueError (trace 20260101-abc; logged as 1234)")
    assert "reindex" not in hidden and "/srv" not in hidden


@pytest.fixture
def comets(tmp_path: Path) -> Path:
    table = tmp_path / "comets.csv"
    table.write_text("Comet,Period years\nHalvorsen,76\n")
    return table


def test_the_cli_exits_2_on_an_unknown_method(comets: Path) -> None:
    result = CliRunner().invoke(app, ["ask", str(comets), "period?", "--method", "nope", "--json"])
    assert result.exit_code == UnknownMethod.exit_code == 2, result.output
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "unknown_method" and "unknown method 'nope'" in error["message"]


def test_a_value_error_deep_inside_the_cli_is_an_internal_error(
    comets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stray ValueError (here from the method run, after its trace began) is a bug: exit 1
    naming the trace and the file holding the traceback (not the terminal); never exit 2
    "bad input"."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        trace = args[-1]
        trace.event("decision", stage="ask", method="x")
        raise ValueError("cannot reindex on an axis with duplicate labels")

    monkeypatch.setattr(run_module, "_run", broken)
    result = CliRunner().invoke(app, ["ask", str(comets), "period?", "--json"])
    assert result.exit_code == _exit.FAILED, result.output
    assert not isinstance(result.exception, ValueError)  # reported, not raised
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "internal"
    assert error["message"].startswith("internal error: ValueError: cannot reindex")
    trace = error["message"].split("(trace ", 1)[1].split(")", 1)[0]
    assert Path(trace).is_file() and trace.endswith(".jsonl")
    details = Path(error["message"].split("; details in ", 1)[1])
    assert "Traceback" in details.read_text() and "_run" in details.read_text()
    assert "Traceback" not in result.stderr


def test_a_tablequest_error_no_command_catches_ends_with_its_code(
    comets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def held(*args: Any, **kwargs: Any) -> Any:
        raise StoreLocked("the store is held by PID 7", holder=7)

    monkeypatch.setattr(run_module, "_run", held)
    result = CliRunner().invoke(app, ["ask", str(comets), "period?", "--json"])
    assert result.exit_code == StoreLocked.exit_code == _exit.FAILED, result.output
    assert json.loads(result.stdout)["error"]["code"] == "store_locked"
    assert "Traceback" not in result.stderr


@pytest.fixture
def client(tmp_path: Path) -> Any:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "comets.csv").write_text("Comet,Period years\nHalvorsen,76\n")
    with Store(tmp_path / "s.duckdb") as store:
        assert ingest(store, [tmp_path / "corpus"]).ok
    config = ServeConfig(store=tmp_path / "s.duckdb", trace_dir=tmp_path / "t", token=None)
    app = create_app(config)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield client


def test_the_api_answers_from_the_classes(client: TestClient) -> None:
    research = {"question": "q?", "method": "research", "stream": False}
    unknown = client.get("/v1/methods/nope")
    magic = client.get("/v1/search", params={"q": "x", "method": "magic"})
    server_only = client.post("/v1/ask", json={**research, "options": {"memory_path": "/m"}})
    for response, cls in [(unknown, UnknownMethod), (magic, BadValue),
                          (server_only, ServerOnlyOption)]:  # fmt: skip
        assert response.status_code == cls.http_status, response.text
        assert response.json()["error"]["code"] == cls.code
    assert "unknown retrieval method 'magic'" in magic.json()["error"]["message"]
    assert "memory_path" in server_only.json()["error"]["message"]


def test_the_cli_and_the_api_agree_with_every_class(
    classes: list[type[TablequestError]],
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    raised: list[BaseException] = []

    def get_method(name: str) -> Any:
        raise raised[-1]

    monkeypatch.setattr(api_module, "get_method", get_method)
    for cls in classes:
        raised.append(instance(cls))
        response = client.get("/v1/methods/x")
        assert response.status_code == cls.http_status, (cls, response.text)
        assert response.json()["error"] == {"code": cls.code, "message": "boom"}, cls
        with pytest.raises(typer.Exit) as ended:
            fail_on(raised[-1], json_out=True)
        assert ended.value.exit_code == cls.exit_code, cls
        assert json.loads(capsys.readouterr().out)["error"]["code"] == cls.code, cls
    raised.append(instance(Busy))
    assert client.get("/v1/methods/x").headers["retry-after"] == "3"


def test_an_unreadable_trace_is_one_error_on_the_cli_and_the_api(client: TestClient) -> None:
    state = client.app.state.tq
    state.trace_dir.mkdir(parents=True, exist_ok=True)
    broken = state.trace_dir / "broken.jsonl"
    broken.write_text(json.dumps({"store": store_key(state.stores.path)}) + "\nnot json\n")
    response = client.get("/v1/traces/broken")
    shown = CliRunner().invoke(app, ["trace", "show", str(broken), "--json"])
    assert (response.status_code, response.json()["error"]["code"]) == (422, "trace")
    assert (shown.exit_code, json.loads(shown.stdout)["error"]["code"]) == (2, "trace")
    assert "is unreadable" in response.json()["error"]["message"]


def test_a_value_error_deep_inside_the_api_is_a_500(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def get_method(name: str) -> Any:
        raise ValueError("cannot reindex /srv/secret/store on an axis")

    monkeypatch.setattr(api_module, "get_method", get_method)
    response = client.get("/v1/methods/rag")
    assert response.status_code == 500, response.text
    error = response.json()["error"]
    assert error["code"] == "internal" and error["message"].startswith("internal error: ValueError")
    assert "/srv/secret" not in error["message"]  # the message stays in the log
    ref = error["message"].split("logged as ", 1)[1][:8]
    assert any(ref in r.getMessage() and r.exc_info for r in caplog.records)
