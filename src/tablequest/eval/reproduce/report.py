"""The report of a reproduction, laid out like the paper's table, ours beside the paper's.

``OUT/NAME.report.md``: one row per paper row in the paper's order and one column per paper column;
each cell reads ``ours / paper`` (ours ×100 where the paper prints percentages; "–" where a
value is missing; "n/i" for rows not implemented, "error" for rows that failed here). The
paper's numbers are those of one backbone, the comparison model: the paper model whose name
appears in the served model's name (``Qwen/Qwen3-8B`` → ``Qwen3-8B``), else the first the
paper lists, else the one named by ``--paper-model``. Below the table: the rows not
implemented and why, the rows that failed and why, each row's run files and question count.
``OUT/NAME.report.json`` holds every value, including the paper's for every backbone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tablequest.errors import BadValue
from tablequest.eval.reproduce.execute import RowOutcome
from tablequest.eval.reproduce.spec import Cell, Missing, Reproduction

__all__ = ["comparison_model", "render_markdown", "to_json", "write_report"]


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def comparison_model(rep: Reproduction, served: str, wanted: str | None = None) -> str | None:
    """The paper backbone whose numbers sit beside ours (see module doc).

    Raises:
        BadValue: `wanted` is not one of the paper's backbones.
    """
    if wanted is not None:
        match = [m for m in rep.models if _norm(m) == _norm(wanted)]
        if not match:
            known = ", ".join(rep.models) or "none"
            raise BadValue(f"{rep.name}: the paper has no backbone {wanted!r} (it has {known})")
        return match[0]
    served_key = _norm(served.rsplit("/", 1)[-1])
    for model in sorted(rep.models, key=len, reverse=True):
        if served_key and _norm(model) in served_key:
            return model
    return rep.models[0] if rep.models else None


def _num(value: float | None, percent: bool = True) -> str:
    if value is None:
        return "–"
    return f"{value * 100:.1f}" if percent else f"{value:.3f}"


def _paper(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def _paper_value(cell: Cell, model: str | None) -> float | None:
    if model is not None and model in cell.paper:
        return cell.paper[model]
    if len(cell.paper) == 1:
        return next(iter(cell.paper.values()))
    return None


def _missing_value(missing: Missing, column: str, model: str | None) -> float | None:
    if model is not None and f"{column} · {model}" in missing.paper:
        return missing.paper[f"{column} · {model}"]
    return missing.paper.get(column)


def render_markdown(
    rep: Reproduction,
    outcomes: Sequence[RowOutcome],
    *,
    model: str,
    paper_model: str | None,
    limit: int | None,
) -> str:
    """The report as markdown (see module doc)."""
    done = {o.key: o for o in outcomes}
    columns = rep.columns
    against = f"the paper's {paper_model}" if paper_model else "the paper"
    lines = [
        f"# {rep.paper} · {rep.table} — {rep.title}",
        "",
        f"Reproduction `{rep.name}`: ours with {model or 'no model'} / {against}"
        + (f"; the first {limit} questions of each benchmark" if limit else "")
        + ". Ours ×100 where the paper prints percentages.",
        "",
        *_judge_line(rep, model),
        "| Row | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row in rep.rows:
        outcome = done.get(row.key)
        by_column = {c.column: c for c in row.cells}
        cells = []
        for column in columns:
            cell = by_column.get(column)
            if cell is None:
                cells.append("")
                continue
            ours = _ours(cell, outcome)
            cells.append(f"{ours} / {_paper(_paper_value(cell, paper_model))}")
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    for missing in rep.missing:
        cells = [
            f"n/i / {_paper(_missing_value(missing, c, paper_model))}"
            if _missing_value(missing, c, paper_model) is not None
            else "n/i"
            for c in columns
        ]
        lines.append(f"| {missing.label} | " + " | ".join(cells) + " |")
    lines += _sections(rep, outcomes)
    return "\n".join(lines) + "\n"


def _judge_line(rep: Reproduction, model: str) -> list[str]:
    judged = any(c.metric.startswith("llm_eval") for r in rep.rows for c in r.cells)
    if not judged:
        return []
    return [
        f"LLM-EVAL cells are judged by {model or 'the served model'} with RealHiTBench's "
        "prompts (the paper's judge: GPT-4o).",
        "",
    ]


def _ours(cell: Cell, outcome: RowOutcome | None) -> str:
    if outcome is None:
        return "not run"
    if outcome.error is not None:
        return "error"
    return _num(outcome.values.get(cell.metric), cell.percent)


def _sections(rep: Reproduction, outcomes: Sequence[RowOutcome]) -> list[str]:
    lines: list[str] = []
    if rep.missing:
        lines += ["", "## Rows not implemented", ""]
        lines += [f"- **{m.label}**: {m.why}" for m in rep.missing]
    failed = [o for o in outcomes if o.error is not None]
    if failed:
        lines += ["", "## Rows that failed here", ""]
        lines += [f"- `{o.key}`: {o.error}" for o in failed]
    labels = {r.key: r for r in rep.rows}
    ran = [o for o in outcomes if o.error is None]
    if ran:
        lines += ["", "## Runs", "", "| Row | Method | Dataset | Questions | Status | Files |"]
        lines.append("|---|---|---|---|---|---|")
        for o in ran:
            row = labels[o.key]
            status = ", ".join(f"{k} {v}" for k, v in sorted(o.status.items())) or "–"
            where = f"{row.dataset} ({row.fmt})" if row.kind == "answer" else row.dataset
            files = ", ".join(Path(f).name for f in o.files)
            lines.append(f"| {row.label} | {row.method} | {where} | {o.n} | {status} | {files} |")
    notes = [*rep.notes, *(f"{r.label}: {r.note}" for r in rep.rows if r.note)]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return lines


def to_json(
    rep: Reproduction,
    outcomes: Sequence[RowOutcome],
    *,
    model: str,
    paper_model: str | None,
    limit: int | None,
) -> dict[str, Any]:
    """Every value of the report, the paper's for each backbone included."""
    done = {o.key: o for o in outcomes}
    rows = []
    for row in rep.rows:
        outcome = done.get(row.key)
        rows.append({
            "key": row.key, "label": row.label, "method": row.method, "dataset": row.dataset,
            "options": dict(row.options), "format": row.fmt,
            "cells": [{"column": c.column, "metric": c.metric, "paper": dict(c.paper),
                       "ours": None if outcome is None else outcome.values.get(c.metric)}
                      for c in row.cells],
            "outcome": None if outcome is None else outcome.to_json(),
        })  # fmt: skip
    return {
        "name": rep.name, "paper": rep.paper, "table": rep.table, "title": rep.title,
        "model": model, "paper_model": paper_model, "limit": limit, "rows": rows,
        "not_implemented": [{"label": m.label, "why": m.why, "paper": dict(m.paper)}
                            for m in rep.missing],
    }  # fmt: skip


def write_report(
    rep: Reproduction,
    outcomes: Sequence[RowOutcome],
    out_dir: Path,
    *,
    model: str,
    paper_model: str | None,
    limit: int | None,
) -> tuple[Path, Path]:
    """Write ``NAME.report.md`` and ``NAME.report.json`` into `out_dir`; return their paths.

    Configurations may share one output folder: their runs are keyed by row key, and a row
    key names the same run (method, options, benchmark, format) in every configuration, so a
    run made for one table is reused by the others.
    """
    kwargs: dict[str, Any] = {"model": model, "paper_model": paper_model, "limit": limit}
    md_path, json_path = out_dir / f"{rep.name}.report.md", out_dir / f"{rep.name}.report.json"
    md_path.write_text(render_markdown(rep, outcomes, **kwargs), encoding="utf-8")
    payload = to_json(rep, outcomes, **kwargs)
    json_path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return md_path, json_path
