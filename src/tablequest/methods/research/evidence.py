"""DTR's evidence: the cells its winning operation path computed the answer from.

The answer is the Eq. 6 vote over the paths' answers (`reflect.vote`); its evidence is read
from the lineage of the winning path's operations (newest first: the value of ``result`` that
the answer renders, `methods.evidence.evidence_of`) and verified by re-running that value's
recipe over the table. The execution frame's columns map to the table's columns through
`ExecFrame.grid_cols` (row-header, section and ``_aggregate`` columns are not cells of the
grid and are dropped); its index is the table's row ids. When no operation's value states the
answer, the fallback is value matching among the cells those operations read, each cell
``matched`` or ``ambiguous``; the non-code fallback (the model read the table as Markdown,
`conclude.direct_answer`) has no evidence: a cell found in the whole table by the answer's
value is no sign the model used it (ours; the paper shows no evidence, docs/methods.md
"Evidence").
"""

from __future__ import annotations

from tablequest.methods.evidence import code_evidence
from tablequest.methods.lineage import Binding
from tablequest.methods.recompute import Verdict
from tablequest.methods.research.execute import PathOutcome
from tablequest.methods.research.state import QuestionRun
from tablequest.table import CellRef

__all__ = ["research_evidence"]


def research_evidence(
    run: QuestionRun, answer: str, winner: PathOutcome | None
) -> tuple[list[CellRef], Verdict | None]:
    """The answer's cells and verdict (None: `Query.finish` gives it, "no evidence")."""
    if winner is None:  # no code path answered: the model's answer has no cells it used
        return [], None
    table = run.table
    columns = {
        name: table.col_ids[pos]
        for name, pos in run.comp.frame.grid_cols.items()
        if 0 <= pos < len(table.col_ids)
    }
    bindings = {"df": Binding("df", run.table_id, table, columns)}
    return code_evidence(answer, [op.lineage for op in reversed(winner.ops)], bindings)
