"""Layout analysis for the meta graph: which grid regions are headers, sections, data and notes.

DTR §3.1 ("Bi-directional Header Identification"): "we identify header regions along each
axis and resolve their scopes via span alignment". The table model gives header rows and
header columns (a reader's guess, which `header` extends and completes); the paper does not
say how the rest is resolved. Our deterministic rules, in order:

1. **Header rows.** The table's header rows after `header.extend_header`, except that a header
   row whose first cell is a temporal label ("1971-72") starts the body (readers take
   text-only first rows for headers).
2. **Stub (row-header) columns.** `header.stub_columns`.
   Blank stub cells of an outer level take the label above them when an inner level has one
   (an unmerged left tree); equal neighbouring stub labels collapse only inside a merge.
3. **Note rows.** Trailing body rows holding a single distinct non-numeric text (footnotes,
   "Source: …", "Notes") are notes, not data.
4. **Section rows.** A body row whose data cells are all blank but whose stub has a label
   (a *stub section*, "industry"), or whose data cells all hold one non-numeric text: a
   *spanning section* ("percent", "ROI 3") when the stub is blank, a stub section named by the
   stub when it is not (the spanning text is then the section's unit). Spanning sections are
   level 0 and last until the next spanning section; stub sections last until the next
   section row; a stub section directly under another one nests inside it, and one directly
   above another is a new outermost section (a super-section: "Health characteristics" over
   "Chronic conditions"), not a sibling of the section before it.
5. **Row-axis unit rows in the header.** When the header has two or more rows and its last
   row holds, over every data column (two or more: a lone data column keeps its unit in its
   column path), one unit word ("percent", "number") or one merged label under several
   labels, that row opens a section for the body (named by its own stub label, else by the
   value), as HiTab and StatCan tables mean it. The same text repeated in unmerged cells
   ("none" under each column) stays a column level.
6. **Additive nesting** (`additive`): a data row that is the sum of the rows under it is their
   parent; ancestors of a data row are ordered by where they start. Nesting stays between
   section rows (a "Total" row above "Age group" and "Sex" sections is their sibling, as
   tables print it; it is still flagged as an aggregation row), keeps a grand total flush
   with its subtotals only when they are labelled as totals, asks for evidence against a
   chance match (`additive.MIN_EVIDENCE`) and allows for counts randomly rounded to a
   multiple of 5 (`additive.rounding_steps`).
7. **Total labels.** When the first data row after a section row is labelled as a total
   ("All companies", "Total", "Provinces overall") and not found additive, it and each later
   such row head the unnested rows up to the next one: rates and percentages do not add up,
   yet the table still lists the parts of its total under it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tablequest.methods.research.additive import (
    MIN_EVIDENCE,
    additive_columns,
    nest,
    rounding_steps,
    row_numbers,
    trailing_totals,
)
from tablequest.methods.research.header import cell_kind, stub_columns
from tablequest.methods.research.markers import (
    clean_label,
    is_aggregate_label,
    is_unit_label,
    parse_number,
    temporal_kind,
)
from tablequest.table import Table

__all__ = ["Layout", "analyze_layout"]

_TOTAL_LABEL = re.compile(r"^(?:all|total)\b|\b(?:overall|total)$", re.I)


@dataclass
class Layout:
    """Where things are, in grid columns and body-row positions."""

    stub_cols: tuple[int, ...]
    data_cols: tuple[int, ...]
    column_header_rows: tuple[int, ...]
    unit_header_row: int | None
    data_rows: tuple[int, ...]
    note_rows: tuple[int, ...]
    section_of: dict[int, tuple[str, ...]] = field(default_factory=dict)
    section_rows: dict[int, tuple[str, ...]] = field(default_factory=dict)
    stub_labels: dict[int, tuple[str, ...]] = field(default_factory=dict)
    additive_rows: set[int] = field(default_factory=set)
    section_units: dict[int, str] = field(default_factory=dict)


def _merged_pairs(table: Table, stub: tuple[int, ...]) -> set[tuple[int, int]]:
    """(body row, stub column) cells merged with the stub cell to their left."""
    out: set[tuple[int, int]] = set()
    for m in table.merges:
        if m.right > m.left and m.bottom >= table.n_header_rows:
            for r in range(max(m.top, table.n_header_rows), m.bottom + 1):
                out.update((r - table.n_header_rows, c) for c in range(m.left + 1, m.right + 1))
    return {(r, c) for r, c in out if c in stub}


def _filled_stub(table: Table, stub: tuple[int, ...]) -> list[tuple[str, ...]]:
    """Stub path per body row (see rule 2 of the module docstring)."""
    merged = _merged_pairs(table, stub)
    out: list[tuple[str, ...]] = []
    above = [""] * len(stub)
    for pos, row in enumerate(table.body):
        labels = [clean_label(row[c]) for c in stub]
        for i, label in enumerate(labels):
            if label:
                above[i] = label
                above[i + 1 :] = [""] * (len(stub) - i - 1)
            elif any(labels[i + 1 :]):
                labels[i] = above[i]
        path: list[str] = []
        for i, label in enumerate(labels):
            if label and not (path and path[-1] == label and (pos, stub[i]) in merged):
                path.append(label)
        out.append(tuple(path))
    return out


def _unit_header_row(table: Table, data_cols: tuple[int, ...]) -> int | None:
    """The last header row when it only states units (or one label spanning the data)."""
    if table.n_header_rows < 2 or not data_cols:
        return None
    last = table.n_header_rows - 1
    values = [clean_label(table.cells[last][c]) for c in data_cols]
    distinct = {v for v in values if v}
    if not distinct or any(temporal_kind(v) or parse_number(v) is not None for v in distinct):
        return None
    if all(is_unit_label(v) for v in distinct) and len(data_cols) > 1:
        return last
    above = {clean_label(table.cells[last - 1][c]) for c in data_cols} - {""}
    merged = any(m.top <= last <= m.bottom and m.right > m.left for m in table.merges)
    if len(distinct) == 1 and all(values) and len(data_cols) > 1 and len(above) > 1 and merged:
        return last
    return None


def _spans_data(table: Table, row: int, data_cols: tuple[int, ...]) -> bool:
    values = [clean_label(table.cells[row][c]) for c in data_cols]
    return len({v for v in values if v}) == 1 and (all(values) or len(data_cols) == 1)


def _unit_section(
    table: Table, row: int, stub: tuple[int, ...], data_cols: tuple[int, ...]
) -> tuple[str, bool] | None:
    """The section a spanning unit header row opens: (label, spanning) or None.

    Its own stub label opens a stub section; else its one value opens a spanning section.
    """
    values = {clean_label(table.cells[row][c]) for c in data_cols} - {""}
    for col in stub:
        label = clean_label(table.cells[row][col])
        if label and label != clean_label(table.cells[row - 1][col]) and label not in values:
            return label, False
    return (values.pop(), True) if len(values) == 1 else None


def _note_rows(table: Table) -> list[int]:
    notes: list[int] = []
    body = table.body
    for pos in range(table.n_rows - 1, 0, -1):
        cells = [clean_label(v) for v in body[pos]]
        distinct = {v for v in cells if v}
        if len(distinct) > 1:
            break
        if distinct and parse_number(next(iter(distinct))) is not None:
            break
        notes.append(pos)
    return sorted(notes)


def _section_label(
    row: tuple[str, ...], stub_path: tuple[str, ...], data_cols: tuple[int, ...]
) -> tuple[str, bool, str | None] | None:
    """(label, spanning, unit) when the row is a section row (rule 4), else None."""
    values = [clean_label(row[c]) for c in data_cols]
    distinct = {v for v in values if v}
    if not distinct:
        return (stub_path[-1], False, None) if stub_path else None
    if len(distinct) != 1:
        return None
    value = next(iter(distinct))
    if cell_kind(value) != "text":
        return None
    if (not stub_path or stub_path[-1] == value) and (all(values) or len(data_cols) > 1):
        return value, True, None  # a label across the row (or the whole merged row)
    if stub_path and is_unit_label(value) and all(values) and len(data_cols) > 1:
        return stub_path[-1], False, value
    return None


def rebase_header(table: Table) -> Table:
    """`table` with header rows that start with a temporal label moved to the body (rule 1).

    Moved rows get negative row ids (-k … -1) so every body row keeps a unique id.
    """
    first = next(
        (r for r in range(1, table.n_header_rows) if temporal_kind(table.cells[r][0] or "")),
        None,
    )
    if first is None:
        return table
    moved = table.n_header_rows - first
    return Table(
        cells=table.cells,
        n_header_rows=first,
        n_header_cols=table.n_header_cols,
        merges=table.merges,
        title=table.title,
        source=table.source,
        row_ids=tuple(range(-moved, 0)) + table.row_ids,
        col_ids=table.col_ids,
    )


Event = tuple[str, str, int]  # (kind: "span" | "stub" | "data", label, body position)


def _events(
    table: Table, layout: Layout, stub_rows: list[tuple[str, ...]], skip: set[int]
) -> list[Event]:
    events: list[Event] = []
    for pos, row in enumerate(table.body):
        if pos in skip or not any(v.strip() for v in row):
            continue
        section = _section_label(row, stub_rows[pos], layout.data_cols)
        if section is None:
            events.append(("data", "", pos))
            continue
        label, spanning, unit = section
        events.append(("span" if spanning else "stub", label, pos))
        if unit:
            layout.section_units[pos] = unit
    return events


def _segments(events: list[Event], breaks: tuple[str, ...]) -> list[list[int]]:
    """Data rows between section rows of the `breaks` kinds ("span", "stub")."""
    out: list[list[int]] = [[]]
    for kind, _, pos in events:
        if kind in breaks:
            out.append([])
        elif kind == "data":
            out[-1].append(pos)
    return [seg for seg in out if seg]


def _total_heads(
    segment: list[int],
    stub_rows: list[tuple[str, ...]],
    parent: dict[int, int],
    skip: set[int],
) -> dict[int, int]:
    """Rule 7: a row labelled as a total ("All companies", "Provinces overall") heads the
    unnested rows after it, up to the next such row, when there are two or more of them."""
    out: dict[int, int] = {}
    starts = [
        i
        for i, r in enumerate(segment)
        if stub_rows[r] and _TOTAL_LABEL.search(stub_rows[r][-1]) and r not in parent
    ]
    if not starts or starts[0] != 0:
        return {}
    for n, i in enumerate(starts):
        head = segment[i]
        stop = starts[n + 1] if n + 1 < len(starts) else len(segment)
        rows = [r for r in segment[i + 1 : stop] if r not in parent]
        if head not in skip and len(rows) >= 2:
            out.update(dict.fromkeys(rows, head))
    return out


def analyze_layout(table: Table) -> Layout:
    """Stub, data columns, header rows, unit row, sections, data rows, notes and nesting.

    `table` should have been through `rebase_header` (the meta graph does this).
    """
    stub = stub_columns(table)
    data_cols = tuple(c for c in range(table.n_cols) if c not in stub)
    unit_row = _unit_header_row(table, data_cols)
    if unit_row is not None and not _spans_data(table, unit_row, data_cols):
        unit_row = None  # per-column units stay in the column paths (see meta)
    header_rows = tuple(r for r in range(table.n_header_rows) if r != unit_row)
    notes = set(_note_rows(table)) if table.n_rows > 2 else set()
    stub_rows = _filled_stub(table, stub)
    layout = Layout(stub, data_cols, header_rows, unit_row, (), tuple(sorted(notes)))
    events = _events(table, layout, stub_rows, notes)
    cols = additive_columns(table, header_rows, data_cols)
    body = table.body
    numbers = rounding_steps(
        {pos: row_numbers(body[pos], cols) for k, _, pos in events if k == "data"}
    )
    for segment in _segments(events, ("span",)):  # aggregation rows: totals over sections too
        layout.additive_rows |= nest(segment, numbers, min_evidence=MIN_EVIDENCE)[1]
        layout.additive_rows |= trailing_totals(segment, numbers, min_evidence=MIN_EVIDENCE)
    parent: dict[int, int] = {}

    def subtotal(pos: int) -> bool:
        return bool(stub_rows[pos]) and is_aggregate_label(stub_rows[pos][-1])

    for segment in _segments(events, ("span", "stub")):  # parents: inside one section
        found, heads = nest(segment, numbers, min_evidence=MIN_EVIDENCE, subtotal=subtotal)
        parent.update(found)
        trailing = trailing_totals(segment, numbers, min_evidence=MIN_EVIDENCE)
        layout.additive_rows |= heads | trailing
        parent.update(_total_heads(segment, stub_rows, found, heads | trailing))
    opened = None
    if unit_row is not None:
        opened = _unit_section(table, unit_row, stub, data_cols)
    _assign_paths(layout, events, stub_rows, parent, opened)
    return layout


def _assign_paths(
    layout: Layout,
    events: list[Event],
    stub_rows: list[tuple[str, ...]],
    parent: dict[int, int],
    opened: tuple[str, bool] | None,
) -> None:
    """Section paths and data-row paths: ancestors (sections, additive heads) by position."""
    span: list[tuple[int, str]] = []
    inner: list[tuple[int, str]] = []
    if opened is not None:
        (span if opened[1] else inner).append((-1, opened[0]))
    previous = ""
    pending: list[int] = []  # stub sections waiting for their first data row
    following = [kind for kind, _, _ in events[1:]] + [""] * bool(events)
    for (kind, label, pos), after in zip(events, following, strict=True):
        if kind == "span":
            span, inner = [(pos, label)], []
            layout.section_rows[pos] = (label,)
        elif kind == "stub":
            if previous == "stub":
                inner = [*inner, (pos, label)]
            elif len(inner) < 2 or after == "stub":  # a first or a super-section
                inner = [(pos, label)]
            else:  # after data rows under nested sections: a sibling of the innermost one
                inner = [*inner[:-1], (pos, label)]
            pending.append(pos)
        else:
            heads: list[tuple[int, str]] = []
            up = parent.get(pos)
            while up is not None:
                labels = stub_rows[up]
                heads.append((up, labels[-1] if labels else ""))
                up = parent.get(up)
            ancestors = sorted([*span, *inner, *heads])
            layout.data_rows += (pos,)
            layout.section_of[pos] = tuple(lab for _, lab in ancestors if lab)
            layout.stub_labels[pos] = stub_rows[pos]
            for section in pending:
                layout.section_rows[section] = tuple(
                    lab for p, lab in ancestors if p <= section and lab
                )
            pending = []
        previous = kind
    for section in pending:
        layout.section_rows[section] = tuple(lab for _, lab in [*span, *inner] if lab)
