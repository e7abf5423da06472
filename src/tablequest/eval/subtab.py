"""WTQ-SubTab: silver reference sub-tables and sub-table quality (TabScope,
arXiv:2609.03395 §4.1, App. E.2–E.3, Table 3).

Two ways to build a reference (one JSON line per question: rows, columns, col_ids, …):

- ``llm`` — the paper's (App. E.3): an LLM predicts the evidence specification
  E = (τ, p, R*, C*) from the question, the reference answer and the full table (prompt
  `SILVER_DIRECT`); the specification is checked (row ids and column names must exist) and a
  verifier judges it valid, sufficient and compact (`SILVER_VERIFY`, ours: the paper omits its
  text); on any issue the repair prompt (`SILVER_REPAIR`) gets the feedback, and the repaired
  specification is checked and verified again. Only verified specifications are kept (at most 4
  calls per question: direct, verify, repair, verify). Any configured model works; tests use
  the stub server.
- ``approx`` — an LLM-free approximation for local checks (ours): rows holding a cell equal
  to an answer item; columns named in the question (the header, or its last level, appears as
  whole words) plus the columns of those answer cells. Questions whose answer is in no cell
  (counts, sums, yes/no) get no reference. It favours lookups and under-selects comparison
  domains, so its scores are not comparable with the paper's.

The table is shown to the LLM as Markdown with a leading ``row_id`` column holding the
original row ids (ours: App. E.3 asks for row ids over "TABLE_MARKDOWN").

Scoring (`score_runs`) compares a run's sub-tables — ``subtable`` of each record, or of its
``details``, or the ``end`` event of its trace — with the references: row, column and cell
precision / recall / F1 and exact match (`tablequest.eval.metrics.subtable`), averaged over the
questions that have both, overall and per value of every ``breakdown`` key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablequest.eval.datasets.common import Dataset, Question
from tablequest.eval.metrics import mean, normalize_answer, subtable_scores
from tablequest.llm import LLM, LLMError, ParseError, extract_json
from tablequest.methods import locate_evidence
from tablequest.methods.scope import match_columns, prompts
from tablequest.table import Table, serialize

__all__ = [
    "Reference",
    "approx_reference",
    "build_references",
    "llm_reference",
    "read_references",
    "run_subtables",
    "score_runs",
    "table_with_row_ids",
]

_ROW = re.compile(r"^\s*(?:row)?[\s_#-]*(\d+)\s*$", re.I)


@dataclass
class Reference:
    """One silver sub-table (T* = T[R*, C*]) and how it was made."""

    id: str
    table: str
    rows: list[int]
    col_ids: list[int]
    columns: list[str]
    method: str
    reasoning_type: str | None = None
    evidence_policy: str | None = None
    reason: str = ""
    calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def table_with_row_ids(table: Table) -> str:
    """Markdown of `table` with a leading ``row_id`` column (original ids)."""
    rows = [["row_id", *table.columns]]
    rows += [[str(rid), *row] for rid, row in zip(table.row_ids, table.body, strict=True)]
    return serialize(Table.from_rows(rows), "markdown")


# -- LLM-free approximation ------------------------------------------------------------------------
def approx_reference(q: Question, table: Table, table_key: str) -> Reference | None:
    """Rows holding an answer cell; question-named and answer columns (None: answer not a cell)."""
    found = locate_evidence(table, table_key, " | ".join(q.answers), limit=10_000)
    cells = [(ref.row, ref.col) for ref in found]
    if not cells:
        return None
    words = f" {normalize_answer(q.question)} "
    named = []
    for pos, (name, cid) in enumerate(zip(table.columns, table.col_ids, strict=True)):
        path = table.header_path(pos)
        keys = {normalize_answer(name), normalize_answer(path[-1]) if path else ""} - {""}
        if any(f" {k} " in words for k in keys):
            named.append(cid)
    col_ids = sorted({c for _, c in cells} | set(named))
    by_id = dict(zip(table.col_ids, table.columns, strict=True))
    return Reference(
        id=q.id,
        table=table_key,
        rows=sorted({r for r, _ in cells}),
        col_ids=col_ids,
        columns=[by_id[c] for c in col_ids],
        method="approx",
        reason="rows holding the answer; columns named in the question or holding the answer",
    )


# -- the paper's construction (App. E.3) -----------------------------------------------------------
def _spec(text: str) -> dict[str, Any]:
    data: dict[str, Any] = extract_json(text, dict)
    if not isinstance(data.get("rows"), list) or not isinstance(data.get("columns"), list):
        raise ParseError("the specification needs 'rows' and 'columns' lists", text)
    return data


def _check(spec: Mapping[str, Any], table: Table) -> tuple[list[int], list[int], list[str]]:
    """(row ids, col ids, issues): ids that do not exist are issues."""
    issues: list[str] = []
    known = set(table.row_ids)
    rows: list[int] = []
    for item in spec["rows"]:
        m = _ROW.match(str(item))
        if m is None or int(m.group(1)) not in known:
            issues.append(f"row id {item!r} does not exist")
        elif int(m.group(1)) not in rows:
            rows.append(int(m.group(1)))
    cols, unknown = match_columns([str(c) for c in spec["columns"]], table)
    issues += [f"column {c!r} does not exist" for c in unknown]
    if not rows:
        issues.append("no valid row selected")
    if not cols:
        issues.append("no valid column selected")
    return rows, cols, issues


def _ask(llm: LLM, text: str, calls: list[int]) -> str:
    calls.append(1)
    return llm.chat([{"role": "user", "content": text}], temperature=0.0, max_tokens=2048)[0].text


def _verify(
    llm: LLM,
    base: dict[str, str],
    spec: Mapping[str, Any],
    table: Table,
    rows: list[int],
    cols: list[int],
    calls: list[int],
) -> list[str]:
    sub = table_with_row_ids(table.sub_table(rows, cols))
    text = prompts.fill(prompts.SILVER_VERIFY, SPEC=json.dumps(spec), SUBTABLE=sub, **base)
    try:
        verdict = extract_json(_ask(llm, text, calls), dict)
    except ParseError:
        return ["the verifier's reply was not JSON"]
    if str(verdict.get("verdict", "")).strip().lower() == "ok":
        return []
    issues = verdict.get("issues")
    return [str(i) for i in issues] if isinstance(issues, list) and issues else ["verifier: fix"]


def llm_reference(
    llm: LLM, q: Question, table: Table, table_key: str
) -> tuple[Reference | None, dict[str, Any]]:
    """App. E.3 with any model: (the verified reference or None, a report of the attempt)."""
    base = {
        "QUESTION": q.question,
        "GOLD_ANSWERS": " | ".join(q.answers),
        "TABLE_MARKDOWN": table_with_row_ids(table),
    }
    calls: list[int] = []
    report: dict[str, Any] = {"id": q.id, "repaired": False}
    try:
        spec = _spec(_ask(llm, prompts.fill(prompts.SILVER_DIRECT, **base), calls))
        rows, cols, issues = _check(spec, table)
        if not issues:
            issues = _verify(llm, base, spec, table, rows, cols, calls)
        if issues:
            report.update(repaired=True, feedback=issues)
            text = prompts.fill(
                prompts.SILVER_REPAIR,
                PREVIOUS_SPEC=json.dumps(spec),
                VERIFIER_FEEDBACK="\n".join(f"- {i}" for i in issues),
                **base,
            )
            spec = _spec(_ask(llm, text, calls))
            rows, cols, issues = _check(spec, table)
            if not issues:
                issues = _verify(llm, base, spec, table, rows, cols, calls)
    except (ParseError, LLMError) as exc:
        report.update(calls=len(calls), kept=False, problem=f"{type(exc).__name__}: {exc}"[:300])
        return None, report
    report.update(calls=len(calls), kept=not issues)
    if issues:
        report["problem"] = "not verified after one repair: " + "; ".join(issues)[:300]
        return None, report
    by_id = dict(zip(table.col_ids, table.columns, strict=True))
    ref = Reference(
        id=q.id,
        table=table_key,
        rows=sorted(rows),
        col_ids=sorted(cols),
        columns=[by_id[c] for c in sorted(cols)],
        method="llm",
        reasoning_type=str(spec.get("reasoning_type") or "") or None,
        evidence_policy=str(spec.get("evidence_policy") or "") or None,
        reason=str(spec.get("reason", ""))[:500],
        calls=len(calls),
    )
    return ref, report


def build_references(
    dataset: Dataset,
    questions: Sequence[Question],
    out: Path,
    *,
    llm: LLM | None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Write one reference per question to `out` (JSONL; ids already there are skipped).

    With `llm` None the LLM-free approximation is used. Returns counts.
    """
    done = {r["id"] for r in read_references(out).values()} if out.exists() else set()
    counts = {"questions": len(questions), "written": 0, "skipped_done": 0, "no_reference": 0}
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as fh:
        for i, q in enumerate(questions, start=1):
            if q.id in done:
                counts["skipped_done"] += 1
                continue
            key = q.gold_table_ids[0]
            table = dataset.table(key)
            if llm is None:
                ref, report = approx_reference(q, table, key), {"id": q.id}
            else:
                ref, report = llm_reference(llm, q, table, key)
            if ref is None:
                counts["no_reference"] += 1
                fh.write(json.dumps({"id": q.id, "reference": None, "report": report}) + "\n")
            else:
                counts["written"] += 1
                fh.write(json.dumps({**ref.to_json(), "report": report}) + "\n")
            fh.flush()
            if progress is not None:
                progress(i, len(questions))
    return counts


def read_references(path: Path) -> dict[str, dict[str, Any]]:
    """References by question id (lines without a reference are kept too)."""
    out: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            out[str(record["id"])] = record
    return out


# -- scoring ---------------------------------------------------------------------------------------
def _trace_end(path: Any) -> dict[str, Any]:
    try:
        lines = Path(str(path)).read_text(encoding="utf-8").splitlines()
    except (OSError, TypeError):
        return {}
    for line in reversed(lines):
        event = json.loads(line)
        if event.get("kind") == "decision" and event.get("stage") == "end":
            return dict(event)
    return {}


def run_subtables(record: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(sub-table, breakdown) of one run record: the record, its details, else its trace."""
    details = record.get("details") or {}
    sub = record.get("subtable") or details.get("subtable")
    breakdown = record.get("breakdown") or details.get("breakdown")
    if sub is None and record.get("trace"):
        end = _trace_end(record["trace"])
        sub, breakdown = end.get("subtable"), breakdown or end.get("breakdown")
    return sub, dict(breakdown or {})


def _scores(sub: Mapping[str, Any], ref: Mapping[str, Any]) -> dict[str, float]:
    s = subtable_scores(sub["rows"], sub["col_ids"], ref["rows"], ref["col_ids"])
    rows_em = set(sub["rows"]) == set(ref["rows"])
    cols_em = set(sub["col_ids"]) == set(ref["col_ids"])
    return {
        "cell_f1": s["cell_f1"],
        "row_f1": s["row_f1"],
        "col_f1": s["col_f1"],
        "cell_p": s["cell_p"],
        "cell_r": s["cell_r"],
        "cell_em": float(s["exact_match"]),
        "row_em": float(rows_em),
        "col_em": float(cols_em),
    }


def _average(rows: Iterable[dict[str, float]]) -> dict[str, float]:
    rows = list(rows)
    return {k: mean(r[k] for r in rows) for k in rows[0]} if rows else {}


def score_runs(
    records: Iterable[Mapping[str, Any]], references: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Sub-table quality of a run against references (Table 3), overall and by breakdown."""
    per: list[tuple[dict[str, float], dict[str, Any]]] = []
    missing_sub = missing_ref = 0
    for record in records:
        ref = references.get(str(record.get("id")))
        if ref is None or ref.get("rows") is None:
            missing_ref += 1
            continue
        sub, breakdown = run_subtables(record)
        if sub is None:
            missing_sub += 1
            continue
        per.append((_scores(sub, ref), breakdown))
    out: dict[str, Any] = {
        "n": len(per),
        "no_reference": missing_ref,
        "no_subtable": missing_sub,
        "scores": _average(s for s, _ in per),
        "by": {},
    }
    keys = sorted({k for _, b in per for k in b})
    for key in keys:
        values = sorted({str(b.get(key)) for _, b in per})
        out["by"][key] = {
            v: {
                "n": sum(1 for _, b in per if str(b.get(key)) == v),
                **_average(s for s, b in per if str(b.get(key)) == v),
            }
            for v in values
        }
    return out
