"""`eval reproduce`: rows run and resume, failures are reported, the report is laid out like
the paper's table with the paper's numbers beside ours."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tablequest.errors import BadValue
from tablequest.eval.reproduce import Cell, Missing, Reproduction, Row
from tablequest.eval.reproduce.execute import RunContext, metric_value, run_reproduction
from tablequest.eval.reproduce.report import comparison_model, render_markdown, write_report
from tablequest.llm import Scripted

FIXTURES = Path(__file__).parent / "fixtures"

REP = Reproduction(
    name="test-t1",
    paper="A Paper",
    table="Table 1",
    title="Accuracy on WTQ",
    models=("Qwen3-8B", "GPT-4o"),
    rows=(
        Row("direct", "Direct QA", "wtq", "direct",
            (Cell("WTQ EM", "em", {"Qwen3-8B": 61.5, "GPT-4o": 70.0}),)),
        Row("bm25-r1", "BM25 R@1", "wtq", "bm25",
            (Cell("WTQ R@1", "recall@1", {"Qwen3-8B": 40.0}),), kind="retrieval"),
        Row("nodata", "On missing data", "tabfact", "direct", (Cell("TabFact Acc", "acc"),)),
    ),
    missing=(Missing("Chain-of-Table", "another paper's method", {"WTQ EM · GPT-4o": 67.3}),),
)  # fmt: skip


def _answer_one(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    return 'Final Answer: Alpha\n<answer>Alpha</answer>\n{"status": "answered", "answer": "Alpha"}'


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    shutil.copytree(FIXTURES / "wtq", root / "wtq")
    return root


def test_rows_run_resume_and_fail_alone(data: Path, tmp_path: Path) -> None:
    llm = Scripted(_answer_one)
    ctx = RunContext(data_root=data, out_dir=tmp_path / "out", llm=llm, model="Qwen/Qwen3-8B")
    first = {o.key: o for o in run_reproduction(REP, ctx)}
    assert first["direct"].error is None and first["direct"].n == 3 and first["direct"].ran == 3
    # nu-0 is "Alpha": the only right answer of the three
    assert first["direct"].values["em"] == pytest.approx(1 / 3)
    assert first["bm25-r1"].error is None and first["bm25-r1"].n == 3
    assert 0.0 <= (first["bm25-r1"].values["recall@1"] or 0.0) <= 1.0
    assert first["nodata"].error is not None and "no tabfact data at" in first["nodata"].error
    calls = len(llm.calls)
    assert calls >= 3
    again = {o.key: o for o in run_reproduction(REP, ctx)}
    assert len(llm.calls) == calls  # resumed: no question answered twice
    assert again["direct"].ran == 0 and again["direct"].values == first["direct"].values
    assert again["bm25-r1"].ran == 0


def test_limit_cuts_every_row(data: Path, tmp_path: Path) -> None:
    ctx = RunContext(data_root=data, out_dir=tmp_path / "out", llm=Scripted(_answer_one), limit=1)
    outcomes = run_reproduction(REP, ctx, rows=REP.select(["direct", "bm25-r1"]))
    assert [o.n for o in outcomes] == [1, 1]


def test_a_row_whose_every_question_failed_is_an_error(data: Path, tmp_path: Path) -> None:
    from tablequest.llm.base import ModelUnreachable

    def refused(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        raise ModelUnreachable("cannot reach the model server at http://dead/v1: refused")

    ctx = RunContext(data_root=data, out_dir=tmp_path / "out", llm=Scripted(refused))
    [outcome] = run_reproduction(REP, ctx, rows=REP.select(["direct"]))
    assert outcome.n == 3 and outcome.status == {"failed": 3}
    assert outcome.error is not None
    assert outcome.error.startswith("every question failed before the method ran (3)")
    assert "http://dead/v1" in outcome.error
    text = render_markdown(REP, [outcome], model="", paper_model="Qwen3-8B", limit=None)
    assert "- `direct`: every question failed before the method ran (3)" in text


def test_report_puts_the_papers_numbers_beside_ours(data: Path, tmp_path: Path) -> None:
    ctx = RunContext(data_root=data, out_dir=tmp_path / "out", llm=Scripted(_answer_one))
    outcomes = run_reproduction(REP, ctx)
    md_path, json_path = write_report(
        REP, outcomes, ctx.out_dir, model="Qwen/Qwen3-8B", paper_model="Qwen3-8B", limit=None
    )
    assert md_path.name == "test-t1.report.md" and json_path.name == "test-t1.report.json"
    text = md_path.read_text(encoding="utf-8")
    assert "| Row | WTQ EM | WTQ R@1 | TabFact Acc |" in text
    assert "| Direct QA | 33.3 / 61.5 |" in text
    assert "| On missing data |  |  | error / – |" in text
    assert "| Chain-of-Table | n/i | n/i | n/i |" in text  # its number is GPT-4o's only
    assert "**Chain-of-Table**: another paper's method" in text
    assert "`nodata`: nodata: no tabfact data at" in text
    payload = json.loads(json_path.read_text(encoding="utf-8"))
    direct = payload["rows"][0]
    assert direct["cells"][0]["paper"] == {"Qwen3-8B": 61.5, "GPT-4o": 70.0}
    assert direct["cells"][0]["ours"] == pytest.approx(1 / 3)
    gpt = render_markdown(REP, outcomes, model="gpt-4o", paper_model="GPT-4o", limit=3)
    assert "| Direct QA | 33.3 / 70 |" in gpt and "| Chain-of-Table | n/i / 67.3 |" in gpt
    assert "the first 3 questions" in gpt


def test_comparison_model_follows_the_served_model() -> None:
    assert comparison_model(REP, "Qwen/Qwen3-8B") == "Qwen3-8B"
    assert comparison_model(REP, "openai/gpt-4o-2024") == "GPT-4o"
    assert comparison_model(REP, "llama") == "Qwen3-8B"  # the first the paper lists
    assert comparison_model(REP, "llama", "gpt-4o") == "GPT-4o"
    with pytest.raises(BadValue, match="has no backbone 'mistral'"):
        comparison_model(REP, "x", "mistral")


def test_metric_value_reads_groups_tabfact_and_retrieval() -> None:
    summary = {
        "metrics": {"em": 0.5},
        "tabfact": {"acc_sup": 0.75},
        "breakdown": {"family": {"Fact Checking": {"metrics": {"em": 0.25}}}},
    }
    assert metric_value(summary, "em") == 0.5
    assert metric_value(summary, "acc_sup") == 0.75
    assert metric_value(summary, "em[family=Fact Checking]") == 0.25
    assert metric_value(summary, "em[family=Visualization]") is None
    assert metric_value({"recall": {"1": 0.4}}, "recall@1") == 0.4
    assert metric_value(summary, "f1") is None
    effort = {"effort": {"n": 2, "mean": {"usage.calls": 4.5, "steps": 3.0}, "total": {}}}
    assert metric_value(effort, "usage.calls") == 4.5 and metric_value(effort, "steps") == 3.0
    assert metric_value(effort, "usage.prompt_tokens") is None


def test_row_and_reproduction_validate_themselves() -> None:
    with pytest.raises(ValueError, match="row key"):
        Row("Bad Key", "x", "wtq", "direct", (Cell("c", "em"),))
    with pytest.raises(ValueError, match="fills no cell"):
        Row("x", "x", "wtq", "direct", ())
    with pytest.raises(ValueError, match="duplicate row keys"):
        Reproduction("r", "p", "t", "x", rows=(REP.rows[0], REP.rows[0]))
    with pytest.raises(BadValue, match="no row 'zzz'"):
        REP.select(["zzz"])


def test_a_row_key_names_one_run_in_every_configuration() -> None:
    """Configurations may share an output folder: a key must mean the same run everywhere."""
    from tablequest.eval.reproduce import all_reproductions

    seen: dict[str, tuple[object, ...]] = {}
    for rep in all_reproductions().values():
        for row in rep.rows:
            ident = (row.kind, row.dataset, row.data_folder, row.method,
                     sorted(row.options.items()), row.fmt, sorted(row.load_options.items()),
                     row.siblings)  # fmt: skip
            assert seen.setdefault(row.key, ident) == ident, f"{rep.name}: {row.key}"


def test_cli_lists_refuses_and_says_which_rows_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from tablequest.cli.app import app

    runner = CliRunner()
    listed = runner.invoke(app, ["eval", "reproduce", "--list", "--json"])
    assert listed.exit_code == 0
    names = {item["name"] for item in json.loads(listed.output)}
    assert {"tableseek-t2", "tablerag-t4", "tabscope-t5", "dtr-t3"} <= names
    unknown = runner.invoke(app, ["eval", "reproduce", "nope", "--out", str(tmp_path)])
    assert unknown.exit_code == 2 and "unknown reproduction 'nope'" in unknown.output
    no_out = runner.invoke(app, ["eval", "reproduce", "tablerag-t4"])
    assert no_out.exit_code == 2 and "--out is required" in no_out.output
    bad_row = runner.invoke(app, ["eval", "reproduce", "tablerag-t4", "--out", str(tmp_path),
                                  "--row", "zzz"])  # fmt: skip
    assert bad_row.exit_code == 2 and "no row 'zzz'" in bad_row.output
    for name in ("TABLEQUEST_LLM_URL", "TABLEQUEST_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "wtq", data / "wtq")
    no_model = runner.invoke(app, ["eval", "reproduce", "tablerag-t4", "--data", str(data),
                                   "--out", str(tmp_path / "out"), "--limit", "1"])  # fmt: skip
    assert no_model.exit_code == 1
    assert "needs a model: pass --llm-url and --model" in no_model.output
    assert (tmp_path / "out" / "tablerag-t4.report.md").exists()


def test_rows_run_with_the_runs_settings_less_its_config_files(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablequest.eval.pipeline import prepared_answer as real
    from tablequest.eval.reproduce import execute
    from tablequest.settings import Settings

    (tmp_path / "tablequest.toml").write_text("[methods.direct]\nmax_tokens = 16\n")
    settings = Settings.load({"sandbox.isolation": "degraded"}, env={}, cwd=tmp_path)
    assert settings.files  # the run read a config file…
    seen: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("settings"))
        return real(*args, **kwargs)

    monkeypatch.setattr(execute, "prepared_answer", spy)
    ctx = RunContext(data_root=data, out_dir=tmp_path / "out", llm=Scripted(_answer_one),
                     limit=1, settings=settings)  # fmt: skip
    [outcome] = run_reproduction(REP, ctx, rows=REP.select(["direct"]))
    assert outcome.error is None and outcome.n == 1
    assert seen == [settings] and seen[0].files == ()  # …its rows' options do not
    assert seen[0].sandbox.isolation == "degraded"
