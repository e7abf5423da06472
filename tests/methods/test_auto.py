"""`auto`: routing signals, the route table, answerability across tables, budgets, chaos."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

import tablequest
from tablequest.cli import app
from tablequest.corpus import Store
from tablequest.llm import (
    CachedLLM,
    Fault,
    Instrumented,
    OpenAICompatible,
    Scripted,
    StubServer,
    UsageMeter,
)
from tablequest.llm.modelserver import ModelServer, _from_models, _from_props
from tablequest.llm.usage import StepBudget
from tablequest.methods import (
    MethodOptions,
    Result,
    TableSet,
    get_method,
    register_method,
    unregister_method,
)
from tablequest.methods.auto import AutoOptions, choose_route, question_signals, table_signals
from tablequest.methods.auto.router import AutoRouter
from tablequest.methods.base import MethodContext
from tablequest.methods.query import start_query
from tablequest.table import Merge, Source, Table
from tablequest.trace import Trace, read_trace

# ask's documented exit statuses (README, "Exit statuses")
EXIT_FOR = {"answered": 0, "failed": 1, "insufficient": 3}

runner = CliRunner()
FLAT = Table.from_rows(
    [["River", "Length (km)"], ["Varna", "412"], ["Osk", "230"]], source=Source(format="csv")
)
MESSY = Table.from_rows(
    [["Region", "2019", "2022"], ["", "Sales", "Sales"], ["North", "10", "14"],
     ["South", "8", "13"], ["Total", "18", "27"]],
    n_header_rows=2, merges=[Merge(0, 1, 0, 2)], source=Source(format="xlsx"),
)  # fmt: skip


def j(**data: object) -> str:
    return json.dumps(data)


def test_table_signals() -> None:
    flat, messy = table_signals(FLAT), table_signals(MESSY)
    assert (flat.rows, flat.cols, flat.cells, flat.messy) == (2, 2, 4, False)
    # characters: River 5 + "Length (km)" 11 + Varna 5 + 412 3 + Osk 3 + 230 3 = 30; 6 cells
    assert flat.tokens == (30 + 3 * 6 + 3) // 4 == 12
    assert (messy.header_rows, messy.merges, messy.aggregation_rows) == (2, 1, 1)
    assert messy.messy
    wide = Table.from_rows([["Item", "Q1", "Q2", "Total"], ["a", "1", "2", "3"]])
    assert table_signals(wide).aggregation_cols == 1 and not table_signals(wide).messy


def test_question_signals() -> None:
    assert question_signals("How long is the river Varna?").lookup
    assert not question_signals("Which river is the longest?").lookup
    assert not question_signals("How many rivers are longer than 300 km?").lookup
    chart = question_signals("Which region grew fastest between 2019 and 2022, and chart it")
    assert chart.analytical and not chart.lookup and "chart" in chart.words


def test_signals_are_fast_on_a_large_table() -> None:
    big = Table.from_rows([[f"r{i}c{j}" for j in range(10)] for i in range(10_001)])
    assert big.n_rows * big.n_cols == 100_000
    started = time.perf_counter()
    signals = table_signals(big)
    assert signals.cells == 100_000 and signals.seconds <= time.perf_counter() - started


def test_route_table_rules_in_order() -> None:
    opts = AutoOptions()
    flat, messy = table_signals(FLAT), table_signals(MESSY)
    lookup = question_signals("How long is the river Varna?")
    ranked = question_signals("Which river is the longest?")
    chart = question_signals("Plot the length of each river")
    assert choose_route(opts, flat, lookup, 32_768).method == "qa"
    assert choose_route(opts, flat, ranked, 32_768).method == "scope"
    assert choose_route(opts, flat, chart, 32_768).rule == "analytical"
    route = choose_route(opts, messy, ranked, 32_768)
    assert route.method == "research" and "2 header rows" in route.reason
    assert "aggregation rows" in route.reason
    big = choose_route(opts, flat, lookup, 20)  # fit limit 10 tokens < 12
    assert (big.rule, big.method) == ("big", "rag") and "12 tokens > 10" in big.reason
    small = AutoOptions(route_lookup_cells=3)
    assert choose_route(small, flat, lookup, 32_768).method == "scope"


def test_options_use_route_dot_names() -> None:
    opts = get_method("auto").make_options({"route_big": "scope", "route_fit_fraction": "0.25"})
    assert opts.routes()["big"] == "scope" and opts.route_fit_fraction == 0.25


@pytest.fixture()
def store() -> Iterator[Store]:
    st = Store()
    st.add_table(FLAT, key="/x/rivers.csv")
    st.add_table(MESSY, key="/x/sales.xlsx")
    yield st
    st.close()


class Fake:
    """A registered table method that answers from a script, to watch the router."""

    answers: ClassVar[list[str | None]] = []
    seen: ClassVar[list[str]] = []

    def __init__(self, options: MethodOptions, context: MethodContext) -> None:
        self.context = context

    def answer(self, question: str, source: TableSet, *, task: Any = "tableqa",
               budget: StepBudget | None = None, trace: Trace | None = None) -> Result:  # fmt: skip
        q = start_query(self.context, budget=budget, trace=trace, default_steps=2)
        assert q.llm is not None
        q.llm.chat([{"role": "user", "content": question}])  # one budgeted call
        tid, _ = source.one("fake")
        Fake.seen.append(tid)
        answer = Fake.answers.pop(0)
        status = "answered" if answer else "insufficient"
        res = Result(answer=answer, status=status, tables_consulted=[tid], final_table=tid)
        return q.finish(res, "fake")

    def close(self) -> None:
        pass


@pytest.fixture()
def fake() -> Iterator[type[Fake]]:
    register_method("fake", Fake, MethodOptions, input="table", description="test")
    Fake.answers, Fake.seen = [], []
    yield Fake
    unregister_method("fake")


def test_corpus_selection_then_lookup_route(store: Store, tmp_path: Path) -> None:
    llm = Scripted([j(patterns=["Varna"]), j(action="select", selected_tables=["Table_0"]),
                    j(status="answered", answer="412", evidence=[])])  # fmt: skip
    result = tablequest.ask("How long is the river Varna?", store, method="auto", llm=llm,
                            trace_dir=tmp_path)  # fmt: skip
    assert result.answer == "412" and result.status == "answered" and result.method == "auto"
    assert len(llm.calls) == 3  # patterns, refine, QA: no call spent on routing
    routes = result.details["routes"]
    assert [(r["route"], r["method"]) for r in routes] == [("lookup", "qa")]
    events = read_trace(result.trace_path or "")
    route = next(e for e in events if e["kind"] == "route")
    assert route["table"]["cells"] == 4 and route["context_source"] == "option"
    assert result.to_json()["details"]["breakdown"] == {"route": "qa"}


def test_fallback_moves_to_the_next_ranked_table(
    store: Store, tmp_path: Path, fake: type[Fake]
) -> None:
    fake.answers = [None, "27"]
    llm = Scripted([j(patterns=["Sales", "Varna"]), j(action="select",
                    selected_tables=["Table_0"]), "x", "y"])  # fmt: skip
    result = tablequest.ask("Which region sold most?", store, method="auto", llm=llm,
                            options={"route_default": "fake", "route_messy": "fake"},
                            trace_dir=tmp_path)  # fmt: skip
    assert result.answer == "27" and result.status == "answered"
    assert len(fake.seen) == 2 and fake.seen[0] != fake.seen[1]
    assert result.tables_consulted == fake.seen
    assert [r["status"] for r in result.details["routes"]] == ["insufficient", "answered"]
    fallbacks = [e for e in read_trace(result.trace_path or "") if e["kind"] == "fallback"]
    assert any(e.get("stage") == "route" for e in fallbacks)


def test_steps_cap_retrieval_and_routed_methods_together(
    store: Store, tmp_path: Path, fake: type[Fake]
) -> None:
    fake.answers = [None, None, None]
    llm = Scripted([j(patterns=["Sales"]), j(action="none"), "a", "b", "c"])
    result = tablequest.ask("Which region sold most?", store, method="auto", llm=llm, steps=3,
                            options={"route_messy": "fake", "route_default": "fake"},
                            trace_dir=tmp_path)  # fmt: skip
    assert result.steps <= 3 and len(llm.calls) <= 3
    assert result.status == "insufficient"


def test_unregistered_route_falls_back_to_qa(tmp_path: Path) -> None:
    llm = Scripted([j(status="answered", answer="Osk", evidence=[])])
    table = tmp_path / "rivers.csv"
    table.write_text("River,Length (km)\nVarna,412\nOsk,230\n")
    result = tablequest.ask("Which river is the shortest?", table, method="auto", llm=llm,
                            options={"route_default": "no-such-method"},
                            trace_dir=tmp_path)  # fmt: skip
    assert result.answer == "Osk" and len(llm.calls) == 1  # a table source: no retrieval
    route = result.details["routes"][0]
    assert route["method"] == "qa" and "no-such-method is not registered" in route["reason"]


def test_non_answers_are_not_answers(store: Store, tmp_path: Path, fake: type[Fake]) -> None:
    fake.answers = ["f_row([*])", "insufficient"]
    llm = Scripted([j(patterns=["Sales"]), j(action="none"), "a", "b"])
    result = tablequest.ask("Which region sold most?", store, method="auto", llm=llm,
                            options={"route_messy": "fake", "route_default": "fake"},
                            trace_dir=tmp_path)  # fmt: skip
    assert result.status == "insufficient" and result.answer in ("f_row([*])", "insufficient")


@pytest.mark.parametrize(
    "replies",
    [
        ["prose, no json", "{[", Fault.status(500), Fault.truncated('{"patterns": ["Va')] * 5,
        [Fault.malformed_json(), Fault.empty_choices(), Fault.status(429, retry_after=0)] * 5,
    ],
    ids=["malformed-text", "malformed-http"],
)
def test_chaotic_server_ends_with_json_and_a_trace(tmp_path: Path, replies: list[Any]) -> None:
    corpus = Path(__file__).resolve().parents[2] / "examples" / "corpus"
    with StubServer(replies, default_reply="???") as stub:
        out = runner.invoke(app, ["ask", str(corpus), "Which nation won the most gold medals?",
                                  "--method", "auto", "--llm-url", stub.url, "--model", "m",
                                  "--no-cache", "--json", "--trace-dir",
                                  str(tmp_path)])  # fmt: skip
    assert out.exit_code == EXIT_FOR[json.loads(out.stdout)["status"]], out.output
    payload = json.loads(out.stdout)
    assert (payload["answer"] is not None) == (payload["status"] == "answered"), payload
    assert payload["status"] != "failed" or payload["reason"], payload
    assert payload["method"] == "auto" and read_trace(payload["trace"])


def test_server_context_length_parsing() -> None:
    assert _from_models({"data": [{"id": "m", "max_model_len": 8192}]}, "m") == 8192
    assert _from_models({"data": [{"id": "m", "meta": {"n_ctx_train": 4096}}]}, None) == 4096
    assert _from_models({"data": [{"id": "other", "max_model_len": 1}]}, "m") is None
    assert _from_props({"default_generation_settings": {"n_ctx": 2048}}) == 2048
    assert _from_props({"n_ctx": True}) is None and _from_props(None) is None
    assert ModelServer("http://127.0.0.1:9/v1", model="m").context_length() is None
    with StubServer() as stub:
        llm = OpenAICompatible(stub.url, "stub-model")
        assert llm.context_length() is None  # the stub reports none
        llm.close()


def test_the_router_asks_the_model_for_its_context(tmp_path: Path) -> None:
    question = "How long is the river Varna?"
    with StubServer(max_model_len=20) as stub:  # FLAT's ~12 tokens > half of 20
        llm = Instrumented(CachedLLM(OpenAICompatible(stub.url, "stub-model"), tmp_path),
                           usage=UsageMeter())  # fmt: skip
        trace = Trace.in_memory()
        router = AutoRouter(AutoOptions(), MethodContext(llm=llm))
        router.preview(question, TableSet([("t1", FLAT)]), trace=trace)
        llm.close()
    route = next(e for e in trace.events if e["kind"] == "route")
    assert (route["context_source"], route["context_tokens"], route["rule"]) == ("server", 20,
                                                                                 "big")  # fmt: skip
    assert route["method"] == "rag"
