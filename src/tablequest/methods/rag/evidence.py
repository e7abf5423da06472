"""TableRAG's evidence: the cells its solver's code computed the answer from.

The answer is the one the samples voted for (`solver.voted_result`); its evidence is read from
the lineage of the agreeing samples' actions (newest first: the value the Final Answer states,
`methods.evidence.evidence_of`), and verified by re-running that value's recipe over the
table. When no action's value states the answer (the model answered from the retrieved cells,
or read a value and rewrote it), the fallback is value matching among the cells the method
read: the cells the actions' values were computed from, and the cells of the retrieved
(column, value) pairs the prompt showed — never the whole table (ours; the paper shows no
evidence, docs/methods.md "Evidence").
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow.compute as pc

from tablequest.methods.evidence import code_evidence
from tablequest.methods.lineage import Binding
from tablequest.methods.rag.prepared import PreparedTable
from tablequest.methods.rag.solver import SolveOutcome
from tablequest.methods.recompute import Verdict
from tablequest.table import CellRef

__all__ = ["rag_evidence"]

MAX_RETRIEVED_CELLS = 200


def rag_evidence(
    answer: str,
    agreeing: Sequence[SolveOutcome],
    prepared: PreparedTable,
    table_id: str,
    retrieved: Sequence[Sequence[str]] = (),
) -> tuple[list[CellRef], Verdict]:
    """The answer's cells and verdict (see the module docstring)."""
    bindings = {"df": Binding.of("df", table_id, prepared.table, list(prepared.frame.columns))}
    lineages = [lineage for o in agreeing for lineage in reversed(o.lineages)]
    shown = retrieved_cells(prepared, table_id, retrieved)
    return code_evidence(answer, lineages, bindings, shown)


def retrieved_cells(
    prepared: PreparedTable, table_id: str, retrieved: Sequence[Sequence[str]]
) -> list[CellRef]:
    """The cells of retrieved (column, value) pairs (the cell database's entries)."""
    table, raw = prepared.table, prepared.raw
    out: list[CellRef] = []
    for pair in retrieved:
        if len(pair) != 2 or pair[0] not in raw.column_names:
            continue
        j = raw.column_names.index(pair[0])
        mask = pc.equal(pc.utf8_trim_whitespace(raw.column(j)), str(pair[1]).strip())
        rows = pc.indices_nonzero(pc.fill_null(mask, False)).to_numpy(zero_copy_only=False)
        for r in rows[:MAX_RETRIEVED_CELLS].tolist():
            value = str(raw.column(j)[int(r)].as_py())
            out.append(CellRef(table_id, table.row_ids[int(r)], table.col_ids[j], value))
    return out
