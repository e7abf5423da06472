"""`run_research`: one library call behind ``tablequest research FILE "task" --out DIR``.

Reads the table (a file through `read_tables`, or a `Table`), runs DTR on it, and writes the
outputs into `out_dir`: ``report.md`` (Markdown, charts linked by relative path),
``chart-1.png`` … and ``result.json`` (`Result.to_json()`, with the chart paths). The command
only parses its arguments and prints what this returns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from tablequest.errors import BadValue
from tablequest.llm import LLM, StepBudget
from tablequest.methods.base import MethodContext, TableSet, Task
from tablequest.methods.research.method import DTR
from tablequest.methods.research.options import ResearchOptions
from tablequest.methods.research.report import write_charts
from tablequest.methods.result import Result
from tablequest.table import Table, read_tables
from tablequest.trace import Trace

__all__ = ["ResearchRun", "pick_table", "run_research"]


@dataclass
class ResearchRun:
    """What `run_research` wrote."""

    result: Result
    report_path: Path
    result_path: Path
    chart_paths: list[Path] = field(default_factory=list)


def pick_table(path: str | Path, sheet: str | int | None = None) -> Table:
    """The table of a file: the sheet named `sheet`, the `sheet`-th one (0-based), or the first.

    Raises:
        UnreadableTable: the file cannot be read.
        BadValue: no such sheet; the message lists the sheets.
    """
    tables = read_tables(Path(path))
    if sheet is None:
        return tables[0]
    if isinstance(sheet, int) or (isinstance(sheet, str) and sheet.isdigit()):
        index = int(sheet)
        if 0 <= index < len(tables):
            return tables[index]
    for table in tables:
        if table.source.sheet == sheet:
            return table
    names = ", ".join(repr(t.source.sheet or str(i)) for i, t in enumerate(tables))
    raise BadValue(f"no sheet {sheet!r} in {str(path)!r}; sheets: {names}")


def run_research(
    table: Table | str | Path,
    task: str,
    out_dir: str | Path,
    *,
    llm: LLM | None,
    options: ResearchOptions | None = None,
    context: MethodContext | None = None,
    sheet: str | int | None = None,
    budget: StepBudget | None = None,
    trace: Trace | None = None,
    mode: Task = "tableqa",
) -> ResearchRun:
    """Run DTR on `table` for `task` and write report.md, the charts and result.json."""
    if not isinstance(table, Table):
        source_path = str(table)
        table = pick_table(table, sheet)
    else:
        source_path = table.source.path or "table"
    context = context or MethodContext()
    if llm is not None:
        context.llm = llm
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    method = DTR(options or ResearchOptions(), context)
    try:
        run = method.research(task, TableSet([("table", table)]), task=mode, budget=budget,
                              trace=trace)  # fmt: skip
    finally:
        method.close()
    result = run.result
    result.sources = {"table": source_path}
    charts = write_charts(run.figures, out, stem="chart")
    result.details["charts"] = [str(p) for p in charts]
    report_path = out / "report.md"
    report_path.write_text(result.details.get("report") or run.report, encoding="utf-8")
    result_path = out / "result.json"
    result_path.write_text(json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n")
    return ResearchRun(result, report_path, result_path, charts)
