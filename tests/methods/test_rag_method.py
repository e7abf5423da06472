"""TableRAG end to end with a scripted LLM and a fake REPL: Alg. 1, sc voting, baselines."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

import pytest

from tablequest.corpus.dense.encoders import EncoderUnavailable, HashEncoder, Matrix
from tablequest.llm import Scripted
from tablequest.llm.base import LLMUnavailable
from tablequest.methods import get_method
from tablequest.methods.base import MethodContext
from tablequest.methods.options import OptionError
from tablequest.methods.rag import BASELINES, RagConfig, TableRAG
from tablequest.methods.rag import baselines as bl
from tablequest.methods.rag.schema_db import build_schema_db, raw_frame
from tablequest.sandbox import ExecResult, SandboxUnavailable
from tablequest.table import Table
from tablequest.trace import Trace

ROWS = [["wallet", "$10.00", "Pune"], ["belt", "$5.00", "Delhi"], ["wallet", "$20.00", "Pune"],
        ["bag", "$7.50", "Agra"], ["hat", "$3.00", "Pune"]]  # fmt: skip
SHOP = Table.from_rows([["product", "price", "city"], *ROWS], title="shop orders")
Q = "What is the average price for wallets?"


class FakeSession:
    def __init__(self, owner: FakeSandbox) -> None:
        self.owner = owner

    def run(self, code: str, timeout: float = 10.0) -> ExecResult:
        self.owner.ran.append(code)
        return self.owner.results.get(code, self.owner.default)

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.owner.closed += 1


class FakeSandbox:
    """Duck-typed `Sandbox`: records frames and code, executes nothing; answers `results`
    for the code they name, else `default` (15.0)."""

    def __init__(
        self,
        results: dict[str, ExecResult] | None = None,
        fail: bool = False,
        default: ExecResult | None = None,
    ):
        self.results = results or {}
        self.default = default or ExecResult(ok=True, value="15.0")
        self.fail = fail
        self.frames: list[dict[str, Any]] = []
        self.ran: list[str] = []
        self.closed = 0

    def session(self, frames: dict[str, Any]) -> FakeSession:
        if self.fail:
            raise SandboxUnavailable("bubblewrap refused")
        self.frames.append(frames)
        return FakeSession(self)

    def close(self) -> None:
        pass

    def __exit__(self, *a: type[BaseException] | BaseException | TracebackType | None) -> None:
        pass


def make(llm: Scripted, sandbox: FakeSandbox | None = None, **cfg: Any) -> TableRAG:
    config = RagConfig(encoder=cfg.pop("encoder", "bm25"), **cfg)
    context = MethodContext(llm=llm, cache=False)
    return TableRAG(config, context, encoder=HashEncoder(), sandbox=sandbox or FakeSandbox())  # type: ignore[arg-type]


def test_algorithm_1_in_order() -> None:
    code = "df[df['product']=='wallet']['price'].str.strip('$').astype(float).mean()"
    llm = Scripted([
        '["product", "price"]', '["wallet"]',
        f"Thought: filter\nAction: {code}",
        "Thought: done\nFinal Answer: 15.0",
    ])  # fmt: skip
    # only the model's Action gets 15.0 back; any other code would be an error
    unexpected = ExecResult(ok=False, error="NameError: unexpected code")
    sandbox = FakeSandbox({code: ExecResult(ok=True, value="15.0")}, default=unexpected)
    trace = Trace.in_memory()
    rag = make(llm, sandbox)
    result = rag.answer(Q, SHOP, trace=trace, table_id="t1")
    assert (result.answer, result.status, result.steps) == ("15.0", "answered", 4)
    assert result.tables_consulted == ["t1"] and result.final_table == "t1"
    assert result.usage.calls == 4
    assert 'Given a large table regarding "shop orders"' in llm.calls[0].prompt
    solver_prompt = llm.calls[2].prompt
    assert '"column_name": "product"' in solver_prompt and '"column_name": "price"' in solver_prompt
    assert "Cell Retrieval Queries: wallet\n" in solver_prompt
    assert '{"column_name": "product", "cell_value": "wallet"}' in solver_prompt
    frame = sandbox.frames[0]["df"]
    assert list(frame.columns) == ["product", "price", "city"]
    assert frame.values.tolist() == ROWS  # the whole table, not the retrieved part
    assert sandbox.ran == [code]  # the Action, verbatim, and nothing else
    assert eval(code, {"df": frame}) == 15.0  # what that code gives on the frame sent
    assert llm.calls[3].prompt.endswith(f"Action: {code}\nObservation: 15.0\nThought: ")
    sample = result.details["samples"][0]
    assert sample["retrieved_cells"] == [["product", "wallet"]]
    assert sample["retrieved_columns"][:2] == ["product", "price"]
    assert result.details["solver_prompt_tokens"] > 100
    # product 4 + price 5 + city 3: "$10.00" is text (Fig. 8), so price is in the cell DB
    assert result.details["databases"]["kept_pairs"] == 12
    kinds = [e["kind"] for e in trace.events]
    assert kinds[0] == "decision" and "rank" in kinds and "exec" in kinds and "qa" in kinds
    assert trace.events[-1]["stage"] == "end"
    rag.close()


def test_self_consistency_votes_over_full_samples() -> None:
    def sample(answer: str) -> list[str]:
        return ['["price"]', '["wallet"]', f"Final Answer: {answer}"]

    llm = Scripted([*sample("15"), *sample("$15.00"), *sample("12")])
    rag = make(llm, sc=3)
    result = rag.answer(Q, SHOP)
    assert result.answer == "15" and result.details["votes"] == {"15": 2, "12": 1}
    assert {c.params["temperature"] for c in llm.calls} == {0.8}  # official sampling temp
    assert len(result.details["samples"]) == 3 and result.usage.calls == 9
    tie = Scripted([*sample("12"), *sample("15")])
    assert make(tie, sc=2).answer(Q, SHOP).answer == "12"  # a tie goes to the first sample


def test_insufficient_and_failed_statuses() -> None:
    acting = Scripted(['["price"]', '["wallet"]', *["Thought: look\nAction: df.shape"] * 2])
    result = make(acting, max_depth=2).answer(Q, SHOP)
    assert (result.status, result.answer) == ("insufficient", None)
    assert "no Final Answer within 2 steps" in result.details["reason"]
    silent = Scripted(['["price"]', '["wallet"]', "hmm", "hmm"])  # issue 36: not the format
    result = make(silent, max_depth=2).answer(Q, SHOP)
    assert (result.status, result.answer) == ("failed", None)
    assert result.reason == "the model's reply had no answer in the expected format"
    down = Scripted([LLMUnavailable("refused")] * 5)
    failed = make(down).answer(Q, SHOP)
    assert failed.status == "failed" and "refused" in failed.details["reason"]
    assert failed.details["samples"][0]["query_sources"] == ["fallback", "fallback"]
    action = "Thought: look\nAction: df['price'].head()"
    no_box = make(Scripted(['["price"]', '["wallet"]', action]), FakeSandbox(fail=True))
    boxed = no_box.answer(Q, SHOP)
    assert boxed.status == "failed" and "sandbox unavailable" in boxed.details["reason"]
    # a sample answered without code never starts the (here unavailable) sandbox
    direct = make(Scripted(['["price"]', '["wallet"]', "Final Answer: 15"]), FakeSandbox(fail=True))
    assert direct.answer(Q, SHOP).answer == "15"
    with pytest.raises(ValueError, match="needs an LLM"):
        TableRAG(RagConfig(encoder="bm25")).answer(Q, SHOP)


def test_ablations_and_evidence() -> None:
    llm = Scripted(["Final Answer: Pune"])
    result = make(llm, expansion=False, schema_mode="all", cell_mode="none").answer(
        "Which city?", SHOP, table_id="t"
    )
    prompt = llm.calls[0].prompt
    assert "Cell Retrieval" not in prompt and prompt.count('"column_name"') == 3
    # issue 36: answered without code and without retrieved cells, the method read no cell:
    # no evidence (never the three cells anywhere in the table that say "Pune"), unverified
    assert result.evidence == [] and result.verified == "unverified"


class BrokenEncoder:
    name = "broken"

    def encode(self, texts: Sequence[str]) -> Matrix:
        raise EncoderUnavailable("install the [dense] extra")


def test_encoder_failure_falls_back_to_bm25() -> None:
    llm = Scripted(['["price"]', '["wallet"]', "Final Answer: 15"])
    trace = Trace.in_memory()
    rag = TableRAG(RagConfig(encoder="minilm"), MethodContext(llm=llm, cache=False),
                   encoder=BrokenEncoder(),
                   sandbox=FakeSandbox())  # type: ignore[arg-type]  # fmt: skip
    assert rag.answer(Q, SHOP, trace=trace).answer == "15"
    assert any(e["kind"] == "fallback" and e.get("encoder") == "bm25" for e in trace.events)
    with pytest.raises(OptionError, match="embed_model"):
        get_method("rag").build(RagConfig(encoder="api"))


def test_config_names_and_validation() -> None:
    assert RagConfig().name == "B=10000,K=5"
    assert RagConfig.named("K=3, B=500") == RagConfig(budget=500, top_k=3)
    assert RagConfig(baseline="rand-rows").name == "rand-rows,K=30"
    assert RagConfig(baseline="read-table").name == "read-table"
    assert RagConfig(sc=1).sampling_temperature == 0.0
    assert RagConfig(sc=2, temperature=0.3).sampling_temperature == 0.3
    for bad in ("B=x", "C=3"):
        with pytest.raises(OptionError, match="cannot read TableRAG config"):
            RagConfig.named(bad)
    bad_args: list[dict[str, Any]] = [{"budget": 0}, {"encoder": "w2v"}, {"baseline": "x"},
                                      {"action_timeout": 0}, {"temperature": -1},
                                      {"hybrid_weight": 2}]  # fmt: skip
    for kwargs in bad_args:
        with pytest.raises(ValueError):
            RagConfig(**kwargs)


# -- baselines ---------------------------------------------------------------------------


def test_read_table_baseline_and_its_context_gate() -> None:
    llm = Scripted(["Final Answer: 15"])
    result = make(llm, baseline="read-table").answer(Q, SHOP)
    assert result.answer == "15" and len(llm.calls) == 1  # no expansion
    assert "| wallet | $10.00 | Pune |" in llm.calls[0].prompt
    assert 'You are working with the following table regarding "shop orders":' in (
        llm.calls[0].prompt
    )
    small_context = Scripted([])
    refused = make(small_context, baseline="read-table", context_tokens=40).answer(Q, SHOP)
    assert (
        refused.status == "failed"
        and "over the context budget of 40" in (refused.details["reason"])
    )
    assert small_context.calls == []


def test_read_schema_and_rand_rows() -> None:
    _, frame = build_schema_db(raw_frame(SHOP))
    text = bl.read_schema(frame).text or ""
    assert "product" in text and "price" in text and "city" in text and "Dtype" in text
    assert bl.sample_rows(5, 10, 0) == [0, 1, 2, 3, 4]
    picked = bl.sample_rows(100, 30, seed=7)
    assert picked == sorted(picked) and len(set(picked)) == 30
    assert picked == bl.sample_rows(100, 30, 7)
    ctx = bl.rand_rows(SHOP, k=2, seed=1, context_tokens=10_000)
    assert ctx.text is not None and len(ctx.rows) == 2 and ctx.text.count("\n") == 3
    assert bl.rand_rows(SHOP, k=2, seed=1, context_tokens=5).text is None
    llm = Scripted(["Final Answer: 15"])
    make(llm, baseline="read-schema").answer(Q, SHOP)
    assert "RangeIndex" in llm.calls[0].prompt or "Data columns" in llm.calls[0].prompt
    llm2 = Scripted(["Final Answer: 15"])
    make(llm2, baseline="rand-rows", baseline_k=2).answer(Q, SHOP)
    assert (
        llm2.calls[0].prompt.count("| Pune |")
        + llm2.calls[0].prompt.count("| Delhi |")
        + (llm2.calls[0].prompt.count("| Agra |"))
        == 2
    )


def test_rowcol_truncates_to_budget_and_retrieves() -> None:
    n_keep, rows, cols = bl.row_col_docs(SHOP, budget=12)  # 12 // 2 // 3 = 2 rows
    assert n_keep == 2 and rows == ["wallet|$10.00|Pune", "belt|$5.00|Delhi"]
    assert cols == ["wallet|belt", "$10.00|$5.00", "Pune|Delhi"]
    ctx = bl.rowcol(SHOP, "wallet", k=1, budget=100, kind="bm25", encoder=None, store=None,
                    content_hash="h")  # fmt: skip
    assert ctx.rows == [0] and ctx.columns == ["product"]
    assert ctx.text is not None and "| wallet |" in ctx.text and "Pune" not in ctx.text
    none = bl.rowcol(SHOP, "zebra", k=1, budget=100, kind="bm25", encoder=None, store=None,
                     content_hash="h")  # fmt: skip
    assert none.rows == [] and none.text == "(no rows or columns retrieved)"
    assert bl.shown_cells(SHOP, [0, 1], ["product", "nope"]) == {("product", "wallet"),
                                                                 ("product", "belt")}  # fmt: skip
    llm = Scripted(["Final Answer: 15"])
    result = make(llm, baseline="rowcol", encoder="hash", retrieval="hybrid", baseline_k=2).answer(
        Q, SHOP
    )
    assert result.details["baseline_context"]["rows_encoded"] == 5
    assert set(BASELINES) == {"read-table", "read-schema", "rand-rows", "rowcol"}
