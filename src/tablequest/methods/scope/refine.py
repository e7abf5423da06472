"""Sub-table refinement: one verifier round (TabScope §3.4, App. C.2).

The verifier sees the question, the current sub-table (linearized with original row ids) and
the original table, and returns ``{action: keep|expand, final_rows, final_columns, reason}``.

Choices (ours): refinement only adds — §3.4 says "the missing evidence is added to T′" — so
``expand`` yields the union of the current selection and the valid ids it names (ids it leaves
out are not removed); ``keep`` keeps the selection whatever lists come with it. Row ids may be
written as 7, "7", "row 7" or "row_7"; names not in the table and unknown ids are dropped and
recorded. An unparsable reply gets one repair request, then the selection is kept (recorded);
a prompt that would not fit the context is not sent (recorded, selection kept).
"""

from __future__ import annotations

import re
from typing import Any

from tablequest.llm import ask_json, extract_json
from tablequest.methods.scope import prompts
from tablequest.methods.scope.policy import BadOutput
from tablequest.methods.scope.retrieval import match_columns, match_rows
from tablequest.methods.scope.state import ScopeRun, linearize

__all__ = ["Refinement", "parse_refinement", "refine"]

_ROW = re.compile(r"^\s*(?:row)?[\s_#-]*(\d+)\s*$", re.I)

Refinement = dict[str, Any]


def parse_refinement(text: str) -> Refinement:
    """The verifier's JSON with a valid action (raises `ParseError` otherwise)."""
    data = extract_json(text, dict)
    action = str(data.get("action", "")).strip().lower()
    if action not in ("keep", "expand"):
        raise BadOutput(f"action must be keep or expand, got {action!r}", text)
    rows = data.get("final_rows") or []
    cols = data.get("final_columns") or []
    if not isinstance(rows, list) or not isinstance(cols, list):
        raise BadOutput("final_rows and final_columns must be lists", text)
    return {"action": action, "rows": rows, "cols": cols, "reason": str(data.get("reason", ""))}


def _row_ids(items: list[Any]) -> tuple[list[int], list[str]]:
    ids: list[int] = []
    bad: list[str] = []
    for item in items:
        m = _ROW.match(str(item))
        if m is None or isinstance(item, bool):
            bad.append(str(item))
        else:
            ids.append(int(m.group(1)))
    return ids, bad


def refine(
    run: ScopeRun, rows: frozenset[int], cols: frozenset[int]
) -> tuple[frozenset[int], frozenset[int], dict[str, Any]]:
    """(rows, cols, report) after one refinement round."""
    opts, table = run.options, run.table
    current = linearize(table.sub_table(sorted(rows), sorted(cols)))
    text = prompts.fill(
        prompts.REFINE,
        QUESTION=run.question,
        CURRENT_SUBTABLE_WITH_ROW_IDS=current,
        TABLE_CONTEXT=run.table_text,
    )
    messages = prompts.user(text)
    tokens = run.table_tokens + run.count(current)
    fit = run.fit(messages, tokens, len(current) + len(run.table_text), opts.max_tokens)
    report: dict[str, Any] = {"action": "keep", "applied": False}
    if not fit.ok:
        run.fallback("refine", "the refinement prompt does not fit the model context → keep")
        return rows, cols, report
    asked = ask_json(
        run.query.llm,  # type: ignore[arg-type]
        messages,
        parse_refinement,
        repair_prompt=prompts.REPAIR_JSON,
        budget=run.query.budget,
        kind="refine",
        trace=run.query.trace,
        on_error=lambda reason: run.fallback("refine", f"{reason} → keep"),
        temperature=opts.temperature,
        max_tokens=fit.max_tokens,
    )
    value = asked.value
    if asked.error is not None:
        return rows, cols, report
    if value is None:
        run.fallback("refine", "no usable refinement after one repair → keep")
        return rows, cols, report
    report.update(action=value["action"], reason=value["reason"][:500], applied=True)
    if value["action"] == "keep":
        run.decision("refine", **report)
        return rows, cols, report
    ids, bad = _row_ids(value["rows"])
    new_rows, invented = match_rows(ids, table)
    new_cols, unknown = match_columns([str(c) for c in value["cols"]], table)
    dropped = bad + [str(r) for r in invented] + unknown
    if dropped:
        run.error("refine", "invented ids dropped", items=dropped)
    out_rows, out_cols = rows | frozenset(new_rows), cols | frozenset(new_cols)
    report.update(
        added_rows=sorted(out_rows - rows), added_cols=sorted(out_cols - cols), dropped=dropped
    )
    run.decision("refine", **report)
    return out_rows, out_cols, report
