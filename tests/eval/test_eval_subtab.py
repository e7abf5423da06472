"""WTQ-SubTab: silver references (App. E.3 with a scripted/stub model, and the LLM-free
approximation), sub-table scoring, and the `eval build-subtab` / `score-subtab` commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tablequest.cli.eval_subtab import register
from tablequest.eval.datasets import load
from tablequest.eval.datasets.common import Question
from tablequest.eval.subtab import (
    approx_reference,
    llm_reference,
    read_references,
    score_runs,
    table_with_row_ids,
)
from tablequest.llm import Scripted
from tablequest.llm.stub import StubServer
from tablequest.table import Table

MEDALS = Table.from_rows(
    [
        ["Nation", "Gold", "Silver", "Bronze"],
        ["Norway", "16", "8", "13"],
        ["Germany", "12", "10", "5"],
        ["Canada", "4", "8", "14"],
    ]
)
Q = Question("q1", "how many gold medals did germany win?", ["12"], ["medals.csv"])


def spec(rows: list[Any], columns: list[str], **extra: Any) -> str:
    return json.dumps(
        {
            "reasoning_type": "lookup",
            "evidence_policy": "answer_only",
            "rows": rows,
            "columns": columns,
            "reason": "the Germany row",
            **extra,
        }
    )


OK = json.dumps({"verdict": "ok", "issues": []})


# -- references ----------------------------------------------------------------------------------
def test_table_with_row_ids_shows_original_ids() -> None:
    text = table_with_row_ids(MEDALS.sub_table(rows=[1, 2]))
    assert text.splitlines()[0] == "| row_id | Nation | Gold | Silver | Bronze |"
    assert text.splitlines()[2].startswith("| 1 | Germany |")


def test_approx_reference_rows_of_answer_cells_and_named_columns() -> None:
    ref = approx_reference(Q, MEDALS, "medals.csv")
    assert ref is not None
    assert ref.rows == [1] and ref.columns == ["Gold"] and ref.method == "approx"
    nation = Question("q2", "which nation won 14 bronze medals?", ["Canada"], ["m"])
    ref2 = approx_reference(nation, MEDALS, "m")
    assert ref2 is not None and ref2.rows == [2] and ref2.columns == ["Nation", "Bronze"]


def test_approx_reference_none_when_the_answer_is_no_cell() -> None:
    count = Question("q3", "how many nations won more than 10 gold?", ["2"], ["m"])
    assert approx_reference(count, MEDALS, "m") is None


def test_llm_reference_direct_and_verified() -> None:
    llm = Scripted([spec([1], ["Nation", "Gold"]), OK])
    ref, report = llm_reference(llm, Q, MEDALS, "medals.csv")
    assert ref is not None and ref.rows == [1] and ref.col_ids == [0, 1]
    assert ref.reasoning_type == "lookup" and ref.calls == 2
    assert report["repaired"] is False and report["kept"] is True
    assert "Reference answer:\n12" in llm.calls[0].prompt
    assert "| 1 | Germany | 12 |" in llm.calls[0].prompt


def test_llm_reference_invalid_ids_are_repaired_with_feedback() -> None:
    llm = Scripted([spec(["row_9", 1], ["Gold", "Medal count"]), spec([1], ["Gold"]), OK])
    ref, report = llm_reference(llm, Q, MEDALS, "m")
    assert ref is not None and ref.rows == [1] and ref.columns == ["Gold"]
    assert report["repaired"] is True and report["calls"] == 3
    feedback = llm.calls[1].prompt
    assert "row id 'row_9' does not exist" in feedback and "'Medal count'" in feedback


def test_llm_reference_verifier_feedback_drives_the_repair() -> None:
    fix = json.dumps({"verdict": "fix", "issues": ["the Nation column is missing"]})
    llm = Scripted([spec([1], ["Gold"]), fix, spec([1], ["Nation", "Gold"]), OK])
    ref, _report = llm_reference(llm, Q, MEDALS, "m")
    assert ref is not None and ref.columns == ["Nation", "Gold"] and ref.calls == 4
    assert "the Nation column is missing" in llm.calls[2].prompt


@pytest.mark.parametrize(
    "replies",
    [
        ["I cannot do that."],
        [spec([7], ["Gold"]), spec([8], ["Gold"])],
        [
            spec([1], ["Gold"]),
            json.dumps({"verdict": "fix", "issues": ["x"]}),
            spec([1], ["Gold"]),
            json.dumps({"verdict": "fix"}),
        ],
    ],
    ids=["prose", "still-invalid", "never-verified"],
)
def test_unverified_specifications_are_not_kept(replies: list[str]) -> None:
    ref, report = llm_reference(Scripted(replies), Q, MEDALS, "m")
    assert ref is None and report["kept"] is False and report["problem"]


# -- scoring -------------------------------------------------------------------------------------
def test_score_runs_overall_and_by_breakdown(tmp_path: Path) -> None:
    refs = {
        "a": {"id": "a", "rows": [1], "col_ids": [0, 1]},
        "b": {"id": "b", "rows": [0, 1], "col_ids": [2]},
        "c": {"id": "c", "reference": None, "rows": None},
    }
    trace = tmp_path / "b.jsonl"
    end = {
        "kind": "decision",
        "stage": "end",
        "subtable": {"rows": [0], "col_ids": [2]},
        "breakdown": {"question_type": "compare", "scope": "local"},
    }
    trace.write_text(json.dumps({"kind": "decision", "stage": "start"}) + "\n" + json.dumps(end))
    records = [
        {
            "id": "a",
            "details": {
                "subtable": {"rows": [1], "col_ids": [0, 1]},
                "breakdown": {"question_type": "lookup", "scope": "local"},
            },
        },
        {"id": "b", "trace": str(trace)},
        {"id": "c", "subtable": {"rows": [0], "col_ids": [0]}},
        {"id": "d"},
    ]
    out = score_runs(records, refs)
    assert out["n"] == 2 and out["no_reference"] == 2 and out["no_subtable"] == 0
    # a: exact; b: rows {0} vs {0,1}: P=1, R=.5, F1=2/3; cols exact; cells 1 of 2
    assert out["scores"]["row_f1"] == pytest.approx((1 + 2 / 3) / 2)
    assert out["scores"]["col_f1"] == 1.0
    assert out["scores"]["cell_f1"] == pytest.approx((1 + 2 / 3) / 2)
    assert out["scores"]["cell_em"] == 0.5 and out["scores"]["row_em"] == 0.5
    assert out["by"]["question_type"]["lookup"]["cell_f1"] == 1.0
    assert out["by"]["question_type"]["compare"]["n"] == 1


# -- commands ------------------------------------------------------------------------------------
def app() -> typer.Typer:
    eval_app = typer.Typer()
    register(eval_app)
    return eval_app


def test_build_subtab_approx_and_score(evalrun_wtq: Path, tmp_path: Path) -> None:
    out = tmp_path / "ref.jsonl"
    runner = CliRunner()
    res = runner.invoke(
        app(),
        [
            "build-subtab",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--out",
            str(out),
            "--approx",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    counts = json.loads(res.output)
    assert counts["written"] + counts["no_reference"] == counts["questions"] == 12
    refs = read_references(out)
    assert refs["nu-2"]["rows"] == [1] and refs["nu-2"]["columns"] == ["Gold"]
    again = runner.invoke(
        app(),
        [
            "build-subtab",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--out",
            str(out),
            "--approx",
            "--json",
        ],
    )
    assert json.loads(again.output)["skipped_done"] == 12
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"id": "nu-2", "subtable": {"rows": [1], "col_ids": [1]}}) + "\n")
    scored = runner.invoke(app(), ["score-subtab", str(run), "--ref", str(out), "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output)["scores"]["cell_em"] == 1.0
    text = runner.invoke(app(), ["score-subtab", str(run), "--ref", str(out)])
    assert "cell 1.000" in text.output


def test_build_subtab_with_the_stub_server(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    gold = {q.id: q for q in ds.questions}

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("You are verifying"):
            return OK
        q = next(q for q in gold.values() if f"Question:\n{q.question}\n" in prompt)
        ref = approx_reference(q, ds.table(q.gold_table_ids[0]), "")
        if ref is None:
            return "no idea"
        return spec(ref.rows, ref.columns)

    out = tmp_path / "ref.jsonl"
    with StubServer(reply) as stub:
        res = CliRunner().invoke(
            app(),
            ["build-subtab", "wtq", "--data", str(evalrun_wtq), "--out", str(out),
             "--llm-url", stub.url, "--model", "m", "--limit", "4", "--json"],
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    counts = json.loads(res.output)
    assert counts["written"] == 4
    refs = read_references(out)
    assert refs["nu-2"]["method"] == "llm" and refs["nu-2"]["rows"] == [1]
    assert refs["nu-2"]["report"]["calls"] == 2


def test_build_subtab_without_a_model_says_how_to_configure(
    evalrun_wtq: Path, tmp_path: Path
) -> None:
    res = CliRunner().invoke(
        app(), ["build-subtab", "wtq", "--data", str(evalrun_wtq), "--out", str(tmp_path / "r")]
    )
    assert res.exit_code == 2 and "--approx" in res.output
