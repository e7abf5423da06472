"""A `Result` as a notebook answer card (``_repr_html_``) and as Markdown.

`Result` delegates here so the data class stays free of presentation code; tables are drawn
by `tablequest.table.display` (merged headers kept, at most `MAX_ROWS` rows).

Choices (ours; no paper covers display):

- Everything from a result is untrusted text (the answer is model output, evidence cells and
  source names come from the user's files): all of it goes through `html.escape`.
- The card shows the status, the answer, the method, the reason when there is one, and
  each table the caller gave (`Result.tables`: the final table) cut to the rows that hold
  its evidence cells, which are highlighted; evidence without its table is listed as text.
- This module does not import `tablequest.methods.base` (which imports it for the reprs):
  results are typed by the `ResultLike` protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from tablequest.table.display import Grid, esc, grid_html, source_name, window
from tablequest.table.model import CellRef

__all__ = ["ResultLike", "result_html", "result_markdown"]

STATUS_COLOURS = {"answered": "#1a7f37", "failed": "#cf222e"}


class ResultLike(Protocol):
    """What the card reads of a `tablequest.methods.base.Result`."""

    @property
    def answer(self) -> str | None: ...
    @property
    def status(self) -> str: ...
    @property
    def method(self) -> str | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def evidence(self) -> Sequence[CellRef]: ...
    @property
    def sources(self) -> Mapping[str, str]: ...
    @property
    def tables(self) -> Mapping[str, Grid]: ...
    @property
    def trace_path(self) -> str | None: ...


def _table_part(result: ResultLike, tid: str, table: Grid) -> str:
    refs = [ref for ref in result.evidence if ref.table_id == tid]
    shown, left = window(table, [ref.row for ref in refs])
    marked = {(ref.row, ref.col) for ref in refs}
    name = result.sources.get(tid) or source_name(table)
    note = f"<br><small>… {left} more rows not shown</small>" if left else ""
    return (
        f"<div><small>{esc(name)} · {table.n_rows} rows x {table.n_cols} columns · "
        f"{len(refs)} evidence cells</small>{grid_html(shown, marked)}{note}</div>"
    )


def _loose_evidence(result: ResultLike) -> str:
    """Evidence cells of tables the result does not carry, as one line of text."""
    loose = [r for r in result.evidence if r.table_id not in result.tables]
    if not loose:
        return ""
    cells = ", ".join(
        f"{esc(result.sources.get(r.table_id, r.table_id))} "
        f"[row {r.row}, col {r.col}]: {esc(r.value)}"
        for r in loose
    )
    return f"<div><small>evidence: {cells}</small></div>"


def result_html(result: ResultLike) -> str:
    """The answer card: status, answer, method, reason, tables with evidence highlighted."""
    colour = STATUS_COLOURS.get(result.status, "#9a6700")
    answer = "(no answer)" if result.answer is None else result.answer
    parts = [
        '<div class="tq-result" style="border:1px solid #d0d7de;border-radius:6px;padding:8px">',
        f'<div><span style="color:{colour};font-weight:600">{esc(result.status)}</span>'
        f" · {esc(result.method or '')}</div>",
        f'<div class="tq-answer" style="font-size:1.3em;margin:4px 0">{esc(answer)}</div>',
    ]
    if result.reason:
        parts.append(f"<div><small>{esc(result.reason)}</small></div>")
    parts.append(_loose_evidence(result))
    parts += [_table_part(result, tid, table) for tid, table in result.tables.items()]
    if result.trace_path:
        parts.append(f"<div><small>trace: {esc(result.trace_path)}</small></div>")
    parts.append("</div>")
    return "".join(parts)


def result_markdown(result: ResultLike) -> str:
    """The answer, status, method and evidence cells as Markdown."""
    answer = "(no answer)" if result.answer is None else result.answer
    out = [f"**{answer}** ({result.status}, {result.method or 'method unknown'})"]
    if result.reason:
        out.append(f"\nreason: {result.reason}")
    if result.evidence:
        out.append("\nevidence:")
        out += [
            f"- {result.sources.get(r.table_id, r.table_id)} row {r.row}, col {r.col}: {r.value}"
            for r in result.evidence
        ]
    return "\n".join(out)
