"""A `Result` as a notebook answer card (``_repr_html_``) and as Markdown.

`Result` delegates here so the data class stays free of presentation code; tables are drawn
by `tablequest.table.display` (merged headers kept, bounded).

Choices (ours; no paper covers display):

- Everything from a result is untrusted text (the answer is model output, evidence cells and
  source names come from the user's files): all of it goes through `html.escape`.
- The card shows the status, the answer, the method, whether the answer is verified against
  its evidence (`Result.verified`, the same words as the CLI and the web app, and
  `Result.verification`'s line), the reason when there is one, and each table the caller gave
  (`Result.tables`: the final table) cut to the rows that hold its evidence cells, which are
  highlighted by how each was found (`tablequest.table.display.grid_html`: ambiguous and
  untracked cells outlined, not highlighted as certain); every evidence cell is also listed
  as text with how it was found (tables the result does not carry have no grid).
- Bounded whatever the tables' size: each table is cut as `Table._repr_html_` cuts it
  (`tablequest.table.display.clip`: its evidence rows and columns first, at most 30 rows,
  20 columns and 200 characters a cell, its grid under 80,000 characters), and the evidence
  list names at most `MAX_LISTED` cells, each cut at 200 characters.
- This module does not import `tablequest.methods.result` (which imports it for the reprs):
  results are typed by the `ResultLike` protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from tablequest.table import (
    CellRef,
    Grid,
    clip,
    cut,
    esc,
    grid_rows,
    left_out,
    source_name,
)

__all__ = ["ResultLike", "result_html", "result_markdown"]

STATUS_COLOURS = {"answered": "#1a7f37", "failed": "#cf222e"}
MAX_LISTED = 20
"""Evidence cells listed as text (a computed mean may have thousands; the grid shows them)."""
VERIFIED_COLOURS = {"verified": "#1a7f37", "unverified": "#9a6700", "contradicted": "#cf222e"}


class ResultLike(Protocol):
    """What the card reads of a `tablequest.methods.result.Result`."""

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
    @property
    def verified(self) -> str | None: ...
    @property
    def verification(self) -> str | None: ...


def _table_part(result: ResultLike, tid: str, table: Grid) -> str:
    """One table cut to its evidence rows and columns (`clip`: bounded, module doc)."""
    refs = [ref for ref in result.evidence if ref.table_id == tid]
    shown, rows, cols = clip(table, [ref.row for ref in refs], [ref.col for ref in refs])
    marked = {(ref.row, ref.col): ref.how for ref in refs}
    grid, dropped = grid_rows(shown, marked)
    name = cut(result.sources.get(tid) or source_name(table))
    more = left_out(rows + dropped, cols)
    note = f"<br><small>{more} not shown</small>" if more else ""
    return (
        f"<div><small>{esc(name)} · {table.n_rows} rows x {table.n_cols} columns · "
        f"{len(refs)} evidence cells{_how_counts(refs)}</small>{grid}{note}</div>"
    )


def _how_counts(refs: Sequence[CellRef]) -> str:
    """How the cells were found, as `` (2 computed, 1 ambiguous)`` (in the order seen)."""
    counts: dict[str, int] = {}
    for ref in refs:
        counts[ref.how] = counts.get(ref.how, 0) + 1
    return f" ({', '.join(f'{n} {esc(how)}' for how, n in counts.items())})" if counts else ""


def _verified_part(result: ResultLike) -> str:
    """The verified word as a badge and the line saying why; nothing when not answered."""
    if result.verified is None:
        return ""
    colour = VERIFIED_COLOURS.get(result.verified, "#9a6700")
    why = f" {esc(result.verification)}" if result.verification else ""
    return (
        f'<div class="tq-verified"><span class="tq-verified-{esc(result.verified)}" '
        f'style="color:{colour};font-weight:600">{esc(result.verified)}</span>'
        f"<small>{why}</small></div>"
    )


def _cell_text(result: ResultLike, ref: CellRef) -> str:
    """``notes.csv [row 3, Q3]: 205 (computed)``, escaped (the column named when the
    result carries the table)."""
    table = result.tables.get(ref.table_id)
    column = f"col {ref.col}"
    if table is not None and ref.col in table.col_ids:
        column = table.columns[table.col_ids.index(ref.col)]
    name = cut(result.sources.get(ref.table_id, ref.table_id))
    return (
        f"{esc(name)} [row {ref.row}, {esc(cut(column))}]: {esc(cut(ref.value))} ({esc(ref.how)})"
    )


def _evidence_list(result: ResultLike) -> str:
    """Every evidence cell as text, each with how it was found, on one line."""
    if not result.evidence:
        return ""
    cells = "; ".join(_cell_text(result, ref) for ref in result.evidence[:MAX_LISTED])
    more = len(result.evidence) - MAX_LISTED
    cells += f"; … {more} more cells" if more > 0 else ""
    return f'<div class="tq-evidence-list"><small>evidence: {cells}</small></div>'


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
    parts.append(_verified_part(result))
    if result.reason:
        parts.append(f"<div><small>{esc(result.reason)}</small></div>")
    parts.append(_evidence_list(result))
    parts += [_table_part(result, tid, table) for tid, table in result.tables.items()]
    if result.trace_path:
        parts.append(f"<div><small>trace: {esc(result.trace_path)}</small></div>")
    parts.append("</div>")
    return "".join(parts)


def result_markdown(result: ResultLike) -> str:
    """The answer, status, method, verified line and evidence cells (with how each was
    found) as Markdown."""
    answer = "(no answer)" if result.answer is None else result.answer
    out = [f"**{answer}** ({result.status}, {result.method or 'method unknown'})"]
    if result.verified is not None:
        why = f" — {result.verification}" if result.verification else ""
        out.append(f"\nverified: **{result.verified}**{why}")
    if result.reason:
        out.append(f"\nreason: {result.reason}")
    if result.evidence:
        out.append("\nevidence:")
        out += [
            f"- {result.sources.get(r.table_id, r.table_id)} row {r.row}, col {r.col}: {r.value}"
            f" ({r.how})"
            for r in result.evidence[:MAX_LISTED]
        ]
        if len(result.evidence) > MAX_LISTED:
            out.append(f"- … {len(result.evidence) - MAX_LISTED} more cells")
    return "\n".join(out)
