"""Sub-table quality (TabScope §Evaluation): row / column / cell P, R, F1 and exact match.

A sub-table is a set of row ids and a set of column ids; its cells are their cross product.
Predicted and reference sub-tables are compared as sets. Choices where the paper is silent
(ours): an empty prediction against an empty reference scores 1.0, an empty side against a
non-empty one scores 0.0; "all rows" (`f_row([*])`) must be expanded by the caller; exact
match needs both the row set and the column set to be equal.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable
from typing import TypedDict

__all__ = ["SubTableScores", "set_prf", "subtable_scores"]


def set_prf(
    predicted: Collection[Hashable], reference: Collection[Hashable]
) -> tuple[float, float, float]:
    """Precision, recall and F1 of a predicted set against a reference set."""
    pred, ref = set(predicted), set(reference)
    if not pred and not ref:
        return 1.0, 1.0, 1.0
    tp = len(pred & ref)
    if tp == 0:
        return 0.0, 0.0, 0.0
    precision, recall = tp / len(pred), tp / len(ref)
    return precision, recall, 2 * precision * recall / (precision + recall)


class SubTableScores(TypedDict):
    row_p: float
    row_r: float
    row_f1: float
    col_p: float
    col_r: float
    col_f1: float
    cell_p: float
    cell_r: float
    cell_f1: float
    exact_match: bool


def subtable_scores(
    pred_rows: Collection[Hashable],
    pred_cols: Collection[Hashable],
    gold_rows: Collection[Hashable],
    gold_cols: Collection[Hashable],
) -> SubTableScores:
    """Row, column and cell P/R/F1 and exact match of a predicted (rows, cols) selection."""
    row = set_prf(pred_rows, gold_rows)
    col = set_prf(pred_cols, gold_cols)
    pred_cells = {(r, c) for r in set(pred_rows) for c in set(pred_cols)}
    gold_cells = {(r, c) for r in set(gold_rows) for c in set(gold_cols)}
    cell = set_prf(pred_cells, gold_cells)
    return SubTableScores(
        row_p=row[0],
        row_r=row[1],
        row_f1=row[2],
        col_p=col[0],
        col_r=col[1],
        col_f1=col[2],
        cell_p=cell[0],
        cell_r=cell[1],
        cell_f1=cell[2],
        exact_match=set(pred_rows) == set(gold_rows) and set(pred_cols) == set(gold_cols),
    )
