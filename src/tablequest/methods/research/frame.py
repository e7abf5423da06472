"""The execution frame: the table as a DataFrame the generated programs run on (DTR §3.3).

The paper executes operation paths over "DataFrames" and leaves the loading to the
implementation. Ours, from the meta graph (LLM-free):

- one row per data row (section rows and notes are not rows); the index is the table's row id,
  so cells the answer cites map back to the table;
- columns: one per row-header column, named by its dimension label ("Year") or ``row_header``,
  then ``section`` (the section path, when the table has sections) and ``row_path`` (the full
  row-header path, when it has two or more levels), then one per data column named by its
  flattened header path ("Employed / Agriculture"), made unique;
- a data column becomes numbers (float) when at least 80% of its filled cells parse as numbers
  ("1,234", "12%", "(3)", "$9"); placeholders ("..", "x", "n/a") become NaN, other text NaN too
  (counted in `ExecFrame.unparsed` so a CLEAN step can look at it);
- ``_aggregate`` marks aggregation rows (Total/All labels, and rows that are the sum of the
  rows under or above them): they stay in the frame, flagged, so that a sum over the frame does
  not silently count them twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tablequest.methods.research.markers import clean_label, is_missing, parse_number
from tablequest.methods.research.meta import MetaGraph
from tablequest.table import HEADER_SEP, unique_names

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AGGREGATE_COLUMN", "ExecFrame", "build_frame", "describe_frame"]

AGGREGATE_COLUMN = "_aggregate"
NUMERIC_SHARE = 0.8


@dataclass
class ExecFrame:
    """The frame and what was done to build it."""

    df: pd.DataFrame
    grid_cols: dict[str, int] = field(default_factory=dict)
    numeric: list[str] = field(default_factory=list)
    unparsed: dict[str, int] = field(default_factory=dict)


def _data_names(graph: MetaGraph) -> list[str]:
    return [
        HEADER_SEP.join(graph.col_path.get(c, ())) or f"column_{c + 1}"
        for c in graph.layout.data_cols
    ]


def build_frame(graph: MetaGraph) -> ExecFrame:
    """The execution frame of the graph's table (see the module docstring)."""
    import pandas as pd

    table, layout = graph.table, graph.layout
    body = table.body
    rows = list(layout.data_rows)
    stub_names = [graph.dimensions.get(c) or "row_header" for c in layout.stub_cols]
    extra = []
    if layout.section_rows:
        extra.append("section")
    if graph.depth("row") >= 2:
        extra.append("row_path")
    names = list(unique_names([*stub_names, *extra, *_data_names(graph), AGGREGATE_COLUMN]))
    columns: dict[str, list[object]] = {}
    grid_cols: dict[str, int] = {}
    for name, col in zip(names, layout.stub_cols, strict=False):
        columns[name] = _stub_values([clean_label(body[r][col]) for r in rows])
        grid_cols[name] = col
    offset = len(layout.stub_cols)
    for i, name in enumerate(extra):
        key = names[offset + i]
        if name == "section":
            columns[key] = [HEADER_SEP.join(layout.section_of.get(r, ())) for r in rows]
        else:
            columns[key] = [HEADER_SEP.join(graph.row_path.get(r, ())) for r in rows]
    offset += len(extra)
    frame = ExecFrame(pd.DataFrame())
    for i, col in enumerate(layout.data_cols):
        name = names[offset + i]
        texts = [body[r][col] for r in rows]
        columns[name] = _convert(texts, name, frame)
        grid_cols[name] = col
    aggregate = set(graph.aggregate_rows) | layout.additive_rows
    columns[names[-1]] = [r in aggregate for r in rows]
    df = pd.DataFrame(columns, index=pd.Index([table.row_ids[r] for r in rows], name="row_id"))
    frame.df, frame.grid_cols = df, grid_cols
    return frame


def _stub_values(labels: list[str]) -> list[object]:
    """Row labels; whole numbers (years) become ints when every label is one."""
    if labels and all(label.isdigit() and len(label) <= 9 for label in labels):
        return [int(label) for label in labels]
    return list(labels)


def _convert(texts: list[str], name: str, frame: ExecFrame) -> list[object]:
    filled = [t for t in texts if t.strip() and not is_missing(t)]
    values = [parse_number(t) for t in texts]
    parsed = sum(1 for t, v in zip(texts, values, strict=True) if v is not None and t in filled)
    if filled and parsed >= NUMERIC_SHARE * len(filled):
        frame.numeric.append(name)
        bad = len(filled) - parsed
        if bad:
            frame.unparsed[name] = bad
        return [float("nan") if v is None else v for v in values]
    return [clean_label(t) for t in texts]


def describe_frame(frame: ExecFrame, *, samples: int = 3, max_chars: int = 4000) -> str:
    """Columns with their type and sample values, for prompts."""
    df = frame.df
    lines = [f"df: {len(df)} rows × {len(df.columns)} columns (index: row_id)"]
    for name in df.columns:
        kind = "number" if name in frame.numeric else str(df[name].dtype).replace("object", "text")
        values = [str(v) for v in df[name].dropna().unique()[:samples]]
        note = (
            f"; {frame.unparsed[name]} non-numeric cells are NaN" if name in frame.unparsed else ""
        )
        lines.append(f"- {name!r} ({kind}{note}): " + ", ".join(v[:40] for v in values))
    flagged = int(df[AGGREGATE_COLUMN].sum()) if AGGREGATE_COLUMN in df.columns else 0
    if flagged:
        lines.append(
            f"{flagged} rows have {AGGREGATE_COLUMN} == True (totals/subtotals): "
            "exclude them before summing other rows"
        )
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[:max_chars] + "\n… (more columns)"
