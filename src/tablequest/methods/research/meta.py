"""The meta graph G_T = (V, E) of DTR §3.1 ("Meta Graph Construction"), built without an LLM.

Nodes are the table, its header labels on both axes (column headers, row headers, section
rows, the names of the row-header columns) and the implicit metadata found in them; edges are
containment and hierarchy: ``(table, has_column_header, X)``, ``(X, has_child, Y)``,
``(table, has_row_header, R)``, ``(X, has_unit, %)``, ``(R, is_aggregate, total)``, … Each data
cell sits under both its row-header path and its column-header path (`MetaGraph.cell_paths`).

Choices (ours; the paper is silent):
- Content nodes are implicit: a data cell is the pair (row leaf, column leaf), so the graph
  stays linear in the number of header labels; `MetaGraph.n_content` counts them.
- Header nodes are keyed by their path from the root: the same label under two parents
  ("apps" under "league" and under "fa cup") is two nodes, one label repeated in a merged
  span is one node.
- Units attach to the node whose label states them and hold for its descendants; a title unit
  ("[Numbers in thousands]") holds for the table; number cells with "%" or a currency sign give
  their column that unit. Temporal and aggregate markers come from `markers`; a data column is
  categorical when most of its values are text and they repeat.
- Header rows and stub columns come from `header` (a reader's guess extended), the rest of the
  layout (section rows, note rows, unit rows) from `layout`.
- `structure_key` is value-agnostic (shape class, not labels) so that experience learned on
  one spreadsheet applies to others laid out alike (the memory key, §3.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tablequest.methods.research.header import extend_header
from tablequest.methods.research.layout import Layout, analyze_layout, rebase_header
from tablequest.methods.research.markers import (
    clean_label,
    find_unit,
    is_aggregate_label,
    is_unit_label,
    parse_number,
    temporal_kind,
    value_unit,
)
from tablequest.table import Table

__all__ = ["MetaGraph", "Node", "build_meta_graph", "triples"]

NodeKind = Literal["table", "column_header", "row_header", "section", "dimension"]
Axis = Literal["column", "row"]


@dataclass(frozen=True, slots=True)
class Node:
    """A header or table node with its implicit metadata."""

    id: int
    kind: NodeKind
    label: str
    level: int
    parent: int | None
    unit: str | None = None
    temporal: str | None = None
    aggregate: bool = False
    categorical: bool = False


@dataclass
class MetaGraph:
    """G_T: header nodes on both axes, hierarchy edges, markers, and the layout behind them."""

    table: Table
    nodes: list[Node]
    edges: list[tuple[int, str, int]]
    layout: Layout
    col_path: dict[int, tuple[str, ...]]
    row_path: dict[int, tuple[str, ...]]
    col_leaf: dict[int, int]
    row_leaf: dict[int, int]
    dimensions: dict[int, str]
    table_unit: str | None
    column_units: dict[int, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    # -- queries ------------------------------------------------------------------------
    def cell_paths(self, row: int, col: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(row-header path, column-header path) of the data cell at body row / grid column."""
        return self.row_path.get(row, ()), self.col_path.get(col, ())

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id]

    @property
    def title(self) -> str | None:
        return self.table.title

    @property
    def n_header_rows(self) -> int:
        """Header rows of the graph's table (after `extend_header` and `rebase_header`)."""
        return self.table.n_header_rows

    @property
    def n_content(self) -> int:
        """Number of (implicit) content nodes: data rows × data columns."""
        return len(self.layout.data_rows) * len(self.layout.data_cols)

    @property
    def aggregate_rows(self) -> tuple[int, ...]:
        """Body rows whose row-header path ends in an aggregation label (Total, All, …)."""
        return tuple(r for r, leaf in self.row_leaf.items() if self.nodes[leaf].aggregate)

    @property
    def aggregate_cols(self) -> tuple[int, ...]:
        """Data columns whose column-header path holds an aggregation label."""
        return tuple(
            c for c, path in self.col_path.items() if any(is_aggregate_label(p) for p in path)
        )

    def depth(self, axis: Axis) -> int:
        paths = self.col_path if axis == "column" else self.row_path
        return max((len(p) for p in paths.values()), default=0)

    @property
    def both_axis_hierarchy(self) -> bool:
        """Multi-level headers on both axes (column depth ≥ 2 and row depth ≥ 2)."""
        return self.depth("column") >= 2 and self.depth("row") >= 2

    @property
    def units(self) -> dict[str, str]:
        """Every unit found: node label (or "table", "column N") → unit."""
        found = {n.label: n.unit for n in self.nodes if n.unit and n.kind != "table"}
        if self.table_unit:
            found["table"] = self.table_unit
        for col, unit in self.column_units.items():
            found.setdefault(" / ".join(self.col_path.get(col, ())) or f"column {col}", unit)
        return found

    def temporal_axes(self) -> dict[str, str]:
        """Axis → temporal kind, when most leaves of that axis are temporal labels."""
        out: dict[str, str] = {}
        for axis, leaves in (("column", self.col_leaf), ("row", self.row_leaf)):
            kinds = [self.nodes[n].temporal for n in leaves.values()]
            marked = [k for k in kinds if k]
            if kinds and len(marked) >= 0.6 * len(kinds):
                out[axis] = max(set(marked), key=marked.count)
        for name in self.dimensions.values():
            if name.lower() in ("year", "years", "date", "period", "month", "quarter"):
                out.setdefault("row", name.lower().rstrip("s"))
        return out

    def structure_key(self) -> str:
        """A value-agnostic signature of the layout (memory key of §3.4)."""
        parts = [
            f"c{min(self.depth('column'), 3)}",
            f"r{min(self.depth('row'), 3)}",
            "sec" if self.layout.section_rows else "",
            "agg" if self.aggregate_rows or self.aggregate_cols else "",
            "unit" if self.units else "",
            "time" if self.temporal_axes() else "",
        ]
        return "-".join(p for p in parts if p)

    def summary(self) -> dict[str, Any]:
        """Counts and markers (the preview's and the report's comprehension section)."""
        return {
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "content_cells": self.n_content,
            "column_depth": self.depth("column"),
            "row_depth": self.depth("row"),
            "both_axis_hierarchy": self.both_axis_hierarchy,
            "stub_columns": [self.dimensions.get(c, f"column {c}") for c in self.layout.stub_cols],
            "section_rows": len(self.layout.section_rows),
            "note_rows": len(self.layout.note_rows),
            "units": self.units,
            "temporal": self.temporal_axes(),
            "aggregate_rows": [" / ".join(self.row_path[r]) for r in self.aggregate_rows][:20],
            "aggregate_columns": [" / ".join(self.col_path[c]) for c in self.aggregate_cols][:20],
            "structure": self.structure_key(),
        }


class _Builder:
    def __init__(self, table: Table) -> None:
        self.nodes: list[Node] = [Node(0, "table", clean_label(table.title or "table"), 0, None)]
        self.edges: list[tuple[int, str, int]] = []
        self.index: dict[tuple[str, tuple[str, ...]], int] = {}

    def add(self, kind: NodeKind, label: str, parent: int, level: int, **marks: Any) -> int:
        node = Node(len(self.nodes), kind, label, level, parent, **marks)
        self.nodes.append(node)
        relation = "has_child" if parent else _ROOT_RELATION[kind]
        self.edges.append((parent, relation, node.id))
        return node.id

    def path(self, axis: Axis, path: tuple[str, ...], sections: int = 0) -> int:
        """The node of `path` on `axis`, creating missing ancestors; returns the leaf id.

        The first `sections` labels of a row path are section nodes.
        """
        parent = 0
        for depth in range(len(path)):
            key = (axis, path[: depth + 1])
            found = self.index.get(key)
            if found is None:
                label = path[depth]
                kind: NodeKind = "column_header" if axis == "column" else "row_header"
                found = self.add(
                    "section" if depth < sections else kind,
                    label,
                    parent,
                    depth + 1,
                    unit=find_unit(label),
                    temporal=temporal_kind(label),
                    aggregate=is_aggregate_label(label),
                )
                self.index[key] = found
            parent = found
        return parent


_ROOT_RELATION: dict[NodeKind, str] = {
    "column_header": "has_column_header",
    "row_header": "has_row_header",
    "section": "has_row_header",
    "dimension": "has_row_dimension",
    "table": "has_table",
}


def _merged_units(table: Table, layout: Layout) -> set[tuple[int, int]]:
    """Header cells that are unit labels merged across columns (units, not header levels)."""
    rows = layout.column_header_rows
    if len(rows) < 2:
        return set()
    last = rows[-1]
    labels = {clean_label(table.cells[last][c]) for c in layout.data_cols} - {""}
    if not labels or not all(is_unit_label(v) for v in labels):
        return set()
    out: set[tuple[int, int]] = set()
    for m in table.merges:
        if m.top <= last <= m.bottom and m.right > m.left:
            out.update((last, c) for c in range(m.left + 1, m.right + 1))
    return out


def _column_paths(table: Table, layout: Layout) -> dict[int, tuple[str, ...]]:
    skip = _merged_units(table, layout)
    out: dict[int, tuple[str, ...]] = {}
    for col in layout.data_cols:
        path: list[str] = []
        for r in layout.column_header_rows:
            label = clean_label(table.cells[r][col])
            if label and (r, col) not in skip and (not path or path[-1] != label):
                path.append(label)
        out[col] = tuple(path)
    return out


def _dimensions(table: Table, layout: Layout) -> dict[int, str]:
    out: dict[int, str] = {}
    for col in layout.stub_cols:
        labels = [clean_label(table.cells[r][col]) for r in range(table.n_header_rows)]
        labels = [v for v in labels if v]
        out[col] = labels[-1] if labels else ""
    return out


def _categorical(table: Table, layout: Layout, col: int) -> bool:
    body = table.body
    values = [body[r][col].strip() for r in layout.data_rows]
    texts = [v for v in values if v and parse_number(v) is None and not temporal_kind(v)]
    return (
        len(texts) >= 2
        and len(texts) >= 0.6 * len([v for v in values if v])
        and (len(set(texts)) <= max(2, 0.7 * len(texts)))
    )


def _column_unit(table: Table, layout: Layout, col: int) -> str | None:
    body = table.body
    units = [value_unit(body[r][col]) for r in layout.data_rows[:200]]
    marked = [u for u in units if u]
    return max(set(marked), key=marked.count) if len(marked) >= max(1, len(units) // 2) else None


def build_meta_graph(table: Table) -> MetaGraph:
    """G_T of `table` (deterministic; see the module docstring for the rules).

    The graph's `table` may differ from `table` in where its header ends (`extend_header`,
    `rebase_header`); body positions in the graph refer to the graph's table.
    """
    table = rebase_header(extend_header(table))
    layout = analyze_layout(table)
    b = _Builder(table)
    dims = _dimensions(table, layout)
    for name in dims.values():
        if name:
            b.add("dimension", name, 0, 1, temporal=temporal_kind(name))
    col_path = _column_paths(table, layout)
    col_leaf: dict[int, int] = {}
    for col, path in col_path.items():
        if path:
            col_leaf[col] = b.path("column", path)
            if _categorical(table, layout, col):
                b.nodes[col_leaf[col]] = replace(b.nodes[col_leaf[col]], categorical=True)
    row_path: dict[int, tuple[str, ...]] = {}
    row_leaf: dict[int, int] = {}
    for pos in sorted(layout.section_rows):
        sections = layout.section_rows[pos]
        b.path("row", sections, len(sections))
    for pos in layout.data_rows:
        sections = layout.section_of.get(pos, ())
        path = sections + layout.stub_labels.get(pos, ())
        row_path[pos] = path
        if path:
            row_leaf[pos] = b.path("row", path, len(sections))
    for pos, unit in layout.section_units.items():
        key = ("row", layout.section_rows.get(pos, ()))
        if key in b.index:
            b.nodes[b.index[key]] = replace(b.nodes[b.index[key]], unit=unit)
    for pos in layout.additive_rows:
        if pos in row_leaf:
            b.nodes[row_leaf[pos]] = replace(b.nodes[row_leaf[pos]], aggregate=True)
    column_units = {
        c: u for c in layout.data_cols if (u := _column_unit(table, layout, c)) is not None
    }
    body = table.body
    notes = tuple(clean_label(" ".join(dict.fromkeys(body[r]))) for r in layout.note_rows)
    return MetaGraph(
        table=table,
        nodes=b.nodes,
        edges=b.edges,
        layout=layout,
        col_path=col_path,
        row_path=row_path,
        col_leaf=col_leaf,
        row_leaf=row_leaf,
        dimensions=dims,
        table_unit=find_unit(table.title or "") if table.title else None,
        column_units=column_units,
        notes=notes,
    )


def _quote(label: str) -> str:
    text = clean_label(label).replace('"', "'")
    return f'"{text}"' if any(ch in text for ch in ",()") else text


def triples(graph: MetaGraph, *, max_children: int = 12, max_chars: int = 6000) -> list[str]:
    """G_T linearized as relational triples (DTR §3.2), structure first, within `max_chars`.

    Children beyond `max_children` per node are summarised by a ``has_more_children`` triple.
    """
    nodes = graph.nodes
    children: dict[int, list[int]] = {}
    for src, _, dst in graph.edges:
        children.setdefault(src, []).append(dst)
    out: list[str] = []
    if graph.title:
        out.append(f"(table, has_title, {_quote(graph.title)})")
    if graph.table_unit:
        out.append(f"(table, has_unit, {_quote(graph.table_unit)})")
    queue = [n for n in children.get(0, []) if nodes[n].kind == "dimension"]
    queue += [n for n in children.get(0, []) if nodes[n].kind == "column_header"]
    queue += [n for n in children.get(0, []) if nodes[n].kind in ("section", "row_header")]
    relation = {
        "dimension": "has_row_dimension",
        "column_header": "has_column_header",
        "section": "has_row_header",
        "row_header": "has_row_header",
    }
    shown = queue[:]
    for node_id in queue[: max_children * 4]:
        out.append(f"(table, {relation[nodes[node_id].kind]}, {_quote(nodes[node_id].label)})")
    if len(queue) > max_children * 4:
        out.append(f"(table, has_more_headers, {len(queue) - max_children * 4})")
    i = 0
    while i < len(shown):
        node = nodes[shown[i]]
        i += 1
        out.extend(_markers(node))
        kids = children.get(node.id, [])
        for kid in kids[:max_children]:
            out.append(f"({_quote(node.label)}, has_child, {_quote(nodes[kid].label)})")
            shown.append(kid)
        if len(kids) > max_children:
            out.append(f"({_quote(node.label)}, has_more_children, {len(kids) - max_children})")
    out.extend(f"(table, has_note, {_quote(note[:120])})" for note in graph.notes[:5])
    return _fit(out, max_chars)


def _markers(node: Node) -> list[str]:
    label = _quote(node.label)
    out = []
    if node.unit:
        out.append(f"({label}, has_unit, {_quote(node.unit)})")
    if node.temporal:
        out.append(f"({label}, is_temporal, {node.temporal})")
    if node.aggregate:
        out.append(f"({label}, is_aggregate, true)")
    if node.categorical:
        out.append(f"({label}, is_categorical, true)")
    return out


def _fit(lines: list[str], max_chars: int) -> list[str]:
    total = 0
    for i, line in enumerate(lines):
        total += len(line) + 1
        if total > max_chars:
            return [*lines[:i], f"(table, has_more_triples, {len(lines) - i})"]
    return lines
