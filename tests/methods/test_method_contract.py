"""The method contract (methods/base.py): one constructor, typed capabilities, typed details,
one structured-call helper, one failed-Result builder, a router that asks the registry."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from tablequest.llm import Scripted
from tablequest.llm.base import LLMTimeout
from tablequest.llm.parse import ParseError
from tablequest.llm.parse_json import extract_json
from tablequest.llm.repair import Asked, ask_json
from tablequest.llm.usage import StepBudget
from tablequest.methods import (
    HasRetriever,
    MethodContext,
    Previewing,
    Priming,
    ResultDetails,
    failed,
    get_method,
    list_methods,
)
from tablequest.methods.result import Result
from tablequest.methods.run import failed_result, resolve_options
from tablequest.trace import Trace

SRC = Path(__file__).resolve().parents[2] / "src" / "tablequest"
PREVIEWING = {"auto", "rag", "research", "scope"}
RETRIEVING = {"bm25", "dense", "hybrid", "rerank"}
PRIMING = {"dense", "hybrid", "rerank"}


def _options(name: str) -> dict[str, Any] | None:
    """Options that build every method here: a hash encoder, a (never reached) rerank
    server."""
    fields = get_method(name).options.model_fields
    layer: dict[str, Any] = {}
    if "encoder" in fields:
        layer["encoder"] = "hash"
    if "rerank_url" in fields:
        layer.update(rerank_url="http://127.0.0.1:9/v1", rerank_model="m")
    return layer or None


def _built(name: str) -> Any:
    spec = get_method(name)
    context = MethodContext(llm=Scripted([]), cache=False)
    return spec.build(spec.make_options(_options(name)), context)


@pytest.mark.parametrize("name", [s.name for s in list_methods()])
def test_every_method_is_built_from_options_and_context(name: str) -> None:
    method = _built(name)
    try:
        cls = type(method)
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert [p.name for p in params[:2]] == ["options", "context"]
        assert all(p.default is not inspect.Parameter.empty for p in params)  # all optional
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[2:])
        assert method.context.llm is not None  # the context given is the one kept
        again = cls(get_method(name).make_options(_options(name)), MethodContext(cache=False))
        assert again.name == method.name
        again.close()
    finally:
        method.close()


@pytest.mark.parametrize("name", [s.name for s in list_methods()])
def test_capabilities_are_detected_by_protocol(name: str) -> None:
    method = _built(name)
    try:
        assert isinstance(method, Previewing) == (name in PREVIEWING)
        assert isinstance(method, HasRetriever) == (name in RETRIEVING)
        retriever = method.retriever if isinstance(method, HasRetriever) else None
        assert isinstance(retriever, Priming) == (name in PRIMING)
    finally:
        method.close()


def test_resolve_options_is_the_registry_s() -> None:
    spec = get_method("seek")
    ours = resolve_options(spec, config="5step-5s1-small", options={"temperature": 0.5})
    theirs = spec.resolve_options(config="5step-5s1-small", options={"temperature": 0.5})
    assert ours == theirs and ours.max_steps == 5 and ours.temperature == 0.5


def test_router_does_not_import_the_way_in_back() -> None:
    found: list[str] = []
    for path in (SRC / "methods" / "auto").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.append(node.module)
    assert found and "tablequest.methods.run" not in found


def _read_keys(text: str) -> set[str]:
    return set(re.findall(r"details\.get\(\s*\"(\w+)\"", text)) | set(
        re.findall(r"details\[\"(\w+)\"\]", text)
    )


def test_details_readers_go_through_the_typed_model() -> None:
    keys: set[str] = set()
    for folder in ("cli", "serve"):
        for path in (SRC / folder).rglob("*.py"):
            text = path.read_text()
            assert not re.search(r"\.details\.get\(|data\[\"details\"\]", text), path
            keys |= _read_keys(text)
    assert {"candidates", "routes", "report", "charts", "config"} <= keys
    assert keys <= set(ResultDetails.__annotations__)


def test_typed_details_is_the_same_dict() -> None:
    result = Result(answer=None, status="failed", details={"reason": "x", "own": 1})
    result.typed_details["routes"] = []
    assert result.details["routes"] == [] and result.details["own"] == 1


# -- ask_json ---------------------------------------------------------------------------------
def _parse(text: str) -> list[str]:
    value = extract_json(text, list)
    if not all(isinstance(v, str) for v in value):
        raise ParseError("not a list of strings", text)
    return [str(v) for v in value]


def test_ask_json_valid_first() -> None:
    llm, trace, budget = Scripted(['["a", "b"]']), Trace.in_memory(), StepBudget(5, reserve=0)
    asked = ask_json(llm, [{"role": "user", "content": "q"}], _parse, kind="gen", trace=trace,
                     budget=budget)  # fmt: skip
    assert asked == Asked(["a", "b"], 1) and asked.reason is None
    assert budget.spent == {"gen": 1} and not trace.events


def test_ask_json_repaired() -> None:
    llm, trace, budget = Scripted(["no json", '["c"]']), Trace.in_memory(), StepBudget(5, reserve=0)
    asked = ask_json(llm, [{"role": "user", "content": "q"}], _parse, kind="gen", trace=trace,
                     budget=budget, repair_kind="repair", repair_prompt="fix: {error}")  # fmt: skip
    assert (asked.value, asked.attempts, asked.error) == (["c"], 2, None)
    assert llm.calls[1].prompt.startswith("fix: ") and budget.spent == {"gen": 1, "repair": 1}
    assert [e["kind"] for e in trace.events] == ["error"]


def test_ask_json_unusable_twice_falls_back() -> None:
    llm, trace = Scripted(["nope", "still nope"]), Trace.in_memory()
    asked = ask_json(llm, [{"role": "user", "content": "q"}], _parse, kind="gen", trace=trace)
    assert (asked.value, asked.attempts, asked.error) == (None, 2, None)
    assert trace.events[-1]["kind"] == "fallback" and trace.events[-1]["attempts"] == 2


def test_ask_json_llm_error_is_a_recorded_fallback() -> None:
    llm, trace = Scripted(["bad", LLMTimeout("slow")]), Trace.in_memory()
    asked = ask_json(llm, [{"role": "user", "content": "q"}], _parse, kind="gen", trace=trace,
                     fallback_fields={"op": "SELECT"})  # fmt: skip
    assert asked.value is None and asked.attempts == 2
    assert isinstance(asked.error, LLMTimeout) and asked.reason == "LLMTimeout: slow"
    last = trace.events[-1]
    assert (last["kind"], last["stage"], last["reason"], last["op"]) == (
        "fallback", "gen", "LLMTimeout: slow", "SELECT",
    )  # fmt: skip


def test_ask_json_on_error_replaces_the_event() -> None:
    seen: list[str] = []
    trace = Trace.in_memory()
    asked = ask_json(Scripted([LLMTimeout("t")]), [{"role": "user", "content": "q"}], _parse,
                     kind="gen", trace=trace, on_error=seen.append)  # fmt: skip
    assert seen == ["LLMTimeout: t"] and asked.attempts == 1 and not trace.events


def test_ask_json_without_a_step_makes_no_call() -> None:
    llm, budget = Scripted(['["a"]']), StepBudget(1, reserve=1)
    asked = ask_json(llm, [{"role": "user", "content": "q"}], _parse, kind="gen", trace=None,
                     budget=budget)  # fmt: skip
    assert (asked.value, asked.attempts) == (None, 0) and not llm.calls


# -- failed Results ---------------------------------------------------------------------------
def test_failed_builds_every_failed_result(tmp_path: Path) -> None:
    trace = Trace.for_query(tmp_path)
    result = failed("no LLM configured", trace=trace, method="auto", tables_consulted=["t1"],
                    routes=[])  # fmt: skip
    assert (result.status, result.answer, result.reason) == ("failed", None, "no LLM configured")
    assert result.trace_path == str(trace.path) and result.tables_consulted == ["t1"]
    assert result.method == "auto" and result.details["routes"] == []


def test_failed_result_records_the_error() -> None:
    trace = Trace.in_memory()
    try:
        raise KeyError("boom")
    except KeyError as exc:
        result = failed_result(trace, exc)
    assert result.reason == "KeyError: 'boom'" and result.details["error"] == result.reason
    assert trace.events[-1]["kind"] == "error" and "KeyError" in trace.events[-1]["traceback"]
