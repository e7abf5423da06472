"""`tablequest research FILE "task" --out DIR` and `tablequest memory show|clear`."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import openpyxl
import pytest
import typer
from typer.testing import CliRunner

from tablequest.cli import research
from tablequest.llm.stub import StubServer
from tablequest.methods.research import ExperienceMemory
from tablequest.methods.research.memory import FeedbackRecord, Lesson
from tablequest.sandbox import Sandbox, SandboxUnavailable


def app() -> typer.Typer:
    application = typer.Typer()
    research.register(application)
    return application


def sheet(path: Path) -> Path:
    """A small RealHiTBench-like sheet: a title row, merged two-level headers, a total row."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "employment"
    ws.append(["Employment by sector [Numbers in thousands]"])
    ws.append(["Year", "Employed", None, "Unemployed"])
    ws.append([None, "Agriculture", "Industry", "Number"])
    for row in ([2019, 2668, 56423, 6260], [2020, 2600, 57000, 4744], [2021, 2550, 58100, 4521]):
        ws.append(row)
    ws.merge_cells("A1:D1")
    ws.merge_cells("B2:C2")
    ws.merge_cells("A2:A3")
    wb.save(path)
    return path


def stub_reply(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if "Operation bank:" in prompt:
        return json.dumps({
            "query_type": "chart",
            "sub_queries": [{"text": "plot it", "operations": ["SELECT", "CHART"]}],
        })  # fmt: skip
    op = re.search(r"Now carry out operation \d+: (\S+)", prompt)
    if op and op.group(1) == "SELECT":
        return "[THINK] take the agriculture column\n[CODE]\n```python\nresult = df\n```"
    if op:
        code = (
            "fig, ax = plt.subplots()\n"
            "ax.plot(result['Year'], result['Employed / Agriculture'], marker='o')\n"
            "ax.set_ylabel('thousands')\nresult = 'line chart'"
        )
        return f"[THINK] draw the line\n[CODE]\n```python\n{code}\n```"
    return "Final Answer: none"


@pytest.mark.slow
def test_research_writes_a_markdown_report_with_charts_next_to_it(tmp_path: Path) -> None:
    try:
        Sandbox(prewarm=False).close()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox here: {exc}")
    xlsx = sheet(tmp_path / "employment.xlsx")
    out = tmp_path / "out"
    with StubServer(stub_reply) as stub:
        result = CliRunner().invoke(
            app(),
            [
                "research", str(xlsx), "Chart agricultural employment by year", "--out", str(out),
                "--llm-url", stub.url, "--model", "stub-model", "--no-cache",
                "-o", "top_k", "1", "-o", "memory=off",
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    assert report.startswith("# Chart agricultural employment by year")
    assert "![Chart 1](chart-1.png)" in report
    assert (out / "chart-1.png").read_bytes().startswith(b"\x89PNG")
    data = json.loads((out / "result.json").read_text())
    assert data["status"] == "answered" and data["details"]["chart_data"]["lines"] == [
        [2668.0, 2600.0, 2550.0]
    ]
    assert data["trace"] == str(out / "trace.jsonl") and (out / "trace.jsonl").is_file()
    assert "report: " in result.output and "chart-1.png" in result.output


def test_research_without_a_model_writes_the_comprehension(tmp_path: Path) -> None:
    xlsx = sheet(tmp_path / "employment.xlsx")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app(), ["research", str(xlsx), "Total employed?", "--out", str(out)]
    )
    assert result.exit_code == 4, result.output  # as `ask` without a model: the LLM-free part ran
    assert "(failed: no LLM configured)" in result.stdout
    data = json.loads((out / "result.json").read_text())
    assert data["status"] == "failed" and data["reason"] == "no LLM configured"
    assert data["details"]["comprehension"]["units"]["table"] == "thousands"
    assert "**No answer** (failed): no LLM configured" in (out / "report.md").read_text()
    as_json = CliRunner().invoke(
        app(), ["research", str(xlsx), "Total employed?", "--out", str(out), "--json"]
    )
    assert as_json.exit_code == 4 and json.loads(as_json.stdout)["status"] == "failed"


def test_research_with_an_unreachable_model_exits_1_as_ask_does(tmp_path: Path) -> None:
    xlsx = sheet(tmp_path / "employment.xlsx")
    out = tmp_path / "out"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # closed: connection refused
    result = CliRunner().invoke(
        app(),
        ["research", str(xlsx), "Total employed?", "--out", str(out), "--llm-url", url,
         "--model", "m", "--no-cache", "--json"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)  # the result is printed first
    assert payload["status"] == "failed" and "connection refused" in payload["reason"]
    assert json.loads((out / "result.json").read_text())["status"] == "failed"


def test_research_rejects_bad_options_and_files(tmp_path: Path) -> None:
    xlsx = sheet(tmp_path / "employment.xlsx")
    bad = CliRunner().invoke(
        app(), ["research", str(xlsx), "q", "--out", str(tmp_path), "-o", "alpah=1"]
    )
    assert bad.exit_code == 2 and "unknown option 'alpah'" in bad.output
    shape = CliRunner().invoke(
        app(), ["research", str(xlsx), "q", "--out", str(tmp_path), "-o", "k"]
    )
    assert shape.exit_code == 2 and "NAME VALUE" in shape.output
    missing = CliRunner().invoke(app(), ["research", str(tmp_path / "no.xlsx"), "q", "--out", "x"])
    assert missing.exit_code == 2
    no_sheet = CliRunner().invoke(
        app(), ["research", str(xlsx), "q", "--out", str(tmp_path), "--sheet", "nope"]
    )
    assert no_sheet.exit_code == 2 and "sheets: 'employment'" in no_sheet.output


def test_memory_show_and_clear(tmp_path: Path) -> None:
    path = tmp_path / "memory.duckdb"
    ExperienceMemory(path=path).record(
        "c2-r1", "chart", [FeedbackRecord("SELECT>CHART", 1, 0.2, 1, 0.98)], [Lesson("sort once")]
    )
    shown = CliRunner().invoke(app(), ["memory", "show", "--path", str(path), "--json"])
    assert shown.exit_code == 0
    data = json.loads(shown.output)
    assert (
        data["paths"][0]["path"] == "SELECT>CHART" and data["lessons"][0]["lesson"] == "sort once"
    )
    text = CliRunner().invoke(app(), ["memory", "show", "--path", str(path)])
    assert "SELECT>CHART" in text.output and "sort once" in text.output
    cleared = CliRunner().invoke(app(), ["memory", "clear", "--path", str(path), "--yes"])
    assert cleared.exit_code == 0 and "cleared 1 feedback records and 1 lessons" in cleared.output
    empty = CliRunner().invoke(app(), ["memory", "show", "--path", str(path)])
    assert "(empty)" in empty.output
    both = CliRunner().invoke(app(), ["memory", "show", "--path", "a", "--store", "b"])
    assert both.exit_code == 2
