"""The research report (DTR §3.5 "Outputs can be analysis reports and charts") and chart files.

The report is Markdown: the question and answer, the path taken operation by operation (the
[THINK] summary, the code, the key output), the key intermediate numbers, the charts (relative
links to PNG files written next to it), the candidate paths with their expectation statistics,
what comprehension found in the table, and the lessons learned. The paper shows report
examples but no template; this one is ours.

With ``llm_report`` the model writes the analysis part (`narrate`): its sections go between
the answer and the execution record (`ReportInput.narrative`); the record (path, code, key
numbers, charts, candidate paths, table, lessons) stays generated, so every report can be
checked against what ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tablequest.methods.research.execute import PathOutcome

__all__ = ["ReportInput", "build_report", "execution_record", "write_charts"]


@dataclass
class ReportInput:
    """Everything the report shows."""

    question: str
    answer: str | None
    status: str
    reason: str | None
    query_type: str
    winner: PathOutcome | None
    paths: list[dict[str, Any]]
    comprehension: dict[str, Any]
    lessons: list[str] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    fallback: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    narrative: str | None = None
    """The model's analysis sections (Markdown), when it wrote them."""


def write_charts(figures: Sequence[bytes], directory: Path, *, stem: str = "chart") -> list[Path]:
    """Save PNG figures as ``{stem}-1.png``, … in `directory` (created); the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, png in enumerate(figures, start=1):
        path = directory / f"{stem}-{i}.png"
        path.write_bytes(png)
        paths.append(path)
    return paths


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _numbers(outcome: PathOutcome) -> list[str]:
    out = []
    for record in outcome.ops:
        probe = record.probe
        if probe is None or not probe.items:
            continue
        items = probe.items[:8]
        if probe.kind in ("series", "dict") and probe.index:
            shown = ", ".join(f"{k}: {v}" for k, v in zip(probe.index, items, strict=False))
        else:
            shown = ", ".join(str(x) for x in items)
        more = f" … ({probe.size} in all)" if probe.size > len(items) else ""
        out.append(f"- after {record.op}: {shown[:300]}{more}")
    return out


def execution_record(outcome: PathOutcome, *, code_chars: int = 600) -> list[str]:
    """The winning path as the report prompt shows it: each operation's summary, code and
    key output (the numbers the model may use)."""
    lines = []
    for i, record in enumerate(outcome.ops, start=1):
        lines.append(f"{i}. {record.op}: {record.think or '(no summary)'}")
        if record.code:
            lines.append(f"   code: {record.code[:code_chars]}")
        if record.output.strip():
            lines.append(f"   printed: {' '.join(record.output.split())[:300]}")
    lines += [x.replace("- after", "   result after", 1) for x in _numbers(outcome)]
    return lines


def _path_section(outcome: PathOutcome) -> list[str]:
    lines = [f"Path taken: **{' → '.join(outcome.path)}** (reward r = {outcome.reward:.3f})", ""]
    for i, record in enumerate(outcome.ops, start=1):
        lines.append(f"{i}. **{record.op}** — {record.think or '(no summary)'}")
        if record.code:
            lines += ["", "   ```python"] + [f"   {x}" for x in record.code.splitlines()]
            lines += ["   ```", ""]
    return lines


def build_report(data: ReportInput) -> str:
    """The Markdown report (see the module docstring)."""
    lines = [f"# {data.question.strip()}", ""]
    if data.answer is not None:
        lines.append(f"**Answer:** {data.answer}")
    else:
        lines.append(f"**No answer** ({data.status}): {data.reason or 'no valid result'}")
    lines += ["", f"Query type: {data.query_type}."]
    if data.fallback:
        lines.append(f"Answered in non-code mode ({data.fallback}): no path gave a valid result.")
    lines.append("")
    if data.narrative:
        lines += [data.narrative.strip(), ""]
    if data.winner is not None:
        lines += ["## How it was answered", "", *_path_section(data.winner)]
        numbers = _numbers(data.winner)
        if numbers:
            lines += ["## Key intermediate numbers", "", *numbers, ""]
    if data.charts:
        lines += ["## Charts", ""]
        lines += [f"![Chart {i}]({name})" for i, name in enumerate(data.charts, start=1)]
        lines.append("")
    if data.paths:
        lines += ["## Candidate paths", "", "| path | P | E | R̂ | N | ran | reward | answer |"]
        lines.append("|---|---|---|---|---|---|---|---|")
        for p in data.paths:
            ran = "yes" if p.get("executed") else ""
            reward = f"{p['reward']:.3f}" if p.get("reward") is not None else ""
            lines.append(
                f"| {p['path']} | {p['prior']:.3f} | {p['expectation']:.3f} | {p['r_hat']:.3f} "
                f"| {p['n']} | {ran} | {reward} | {_md(str(p.get('answer') or ''))[:80]} |"
            )
        lines.append("")
    comp = data.comprehension
    lines += ["## What the table looks like", ""]
    lines.append(
        f"- headers: {comp.get('column_depth')} level(s) of column headers, "
        f"{comp.get('row_depth')} level(s) of row headers"
    )
    if comp.get("units"):
        units = ", ".join(f"{k}: {v}" for k, v in list(comp["units"].items())[:8])
        lines.append(f"- units: {units}")
    if comp.get("aggregate_rows"):
        lines.append(f"- aggregation rows: {', '.join(comp['aggregate_rows'][:8])}")
    lines.append("")
    if data.lessons:
        lines += ["## Lessons", "", *[f"- {x}" for x in data.lessons], ""]
    if data.usage:
        lines.append(
            f"_{data.usage.get('calls', 0)} LLM calls, {data.usage.get('completion_tokens', 0)} "
            f"output tokens._"
        )
    return "\n".join(lines).rstrip() + "\n"
