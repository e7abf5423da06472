"""Calibration of a run: its answers per `verified` bucket (issue 36, must 5).

Each run record carries the method's LLM-free verdict on its answer (`Result.verified`:
``verified`` — the answer recomputes from its evidence —, ``unverified`` or ``contradicted``)
and why (`verification`). A report groups the records by that verdict and gives, per bucket,
how many questions and the mean of every answer metric (EM, F1, Acc, … as the benchmark
scores them), so that "how often is a verified answer right" is one number. Records outside
the three verdicts get their own buckets: ``none`` (answered, but the method gave no verdict),
``not_recorded`` (answered, in a run file written before records carried the field: old or
resumed runs still report) and ``not_answered`` (insufficient or failed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tablequest.eval.metrics import mean

__all__ = [
    "BUCKETS",
    "VERDICTS",
    "calibration",
    "calibration_lines",
    "verified_bucket",
]

VERDICTS = ("verified", "unverified", "contradicted")
"""The verdicts of `tablequest.methods.result.Verified`: always shown, even when empty."""
BUCKETS = (*VERDICTS, "none", "not_recorded", "not_answered")
"""Every bucket in report order; the last three are shown only when they hold records."""
_METRICS = ("em", "f1", "list_f1", "acc", "rouge_l", "bleu", "ecr", "pass_at_1")
"""Answer metrics a bucket may report (retrieval metrics say nothing about the verdict)."""
_PRIMARY = ("em", "f1", "acc", "rouge_l", "pass_at_1")
_NOTES = {
    "none": "none: answered without a verdict from the method",
    "not_recorded": "not recorded: answered in a run written before records carried verdicts",
}
_LABELS = {"em": "EM", "f1": "F1", "acc": "Acc", "rouge_l": "ROUGE-L", "pass_at_1": "Pass@1"}


def verified_bucket(record: dict[str, Any]) -> str:
    """The bucket of one run record (see module doc)."""
    if record.get("status") != "answered":
        return "not_answered"
    if "verified" not in record:
        return "not_recorded"
    value = record["verified"]
    return value if value in VERDICTS else "none"


def _bucket_metrics(rows: list[dict[str, Any]], names: list[str]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in names:
        values = [r["metrics"][name] for r in rows if name in (r.get("metrics") or {})]
        out[name] = mean(values) if values else None
    return out


def calibration(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The run's answers per verified bucket::

        {"buckets": {bucket: {"n", "share", "metrics": {name: mean | None}}},
         "verified_right": {"metric", "value", "n"}}

    ``buckets`` holds the three verdicts always and the other buckets when they hold records;
    ``verified_right`` is the primary answer metric (EM, else F1, Acc, …) over the verified
    answers: how often a verified answer is right (value None when none was verified)."""
    rows = list(records)
    names = [m for m in _METRICS if any(m in (r.get("metrics") or {}) for r in rows)]
    groups: dict[str, list[dict[str, Any]]] = {b: [] for b in BUCKETS}
    for row in rows:
        groups[verified_bucket(row)].append(row)
    buckets = {
        b: _bucket(group, len(rows), names) for b, group in groups.items() if group or b in VERDICTS
    }
    metric = next((m for m in _PRIMARY if m in names), None)
    verified = groups["verified"]
    right = {
        "metric": metric,
        "value": _bucket_metrics(verified, [metric])[metric] if metric else None,
        "n": len(verified),
    }
    return {"buckets": buckets, "verified_right": right}


def _bucket(group: list[dict[str, Any]], total: int, names: list[str]) -> dict[str, Any]:
    """One bucket: its count, its share of the run and its answer metrics' means."""
    share = len(group) / total if total else 0.0
    return {"n": len(group), "share": share, "metrics": _bucket_metrics(group, names)}


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _headline(right: dict[str, Any]) -> str:
    label = _LABELS.get(right["metric"] or "", right["metric"] or "score")
    if not right["n"]:
        return (
            "No answer was verified (answers of a method that gives no verdict count under "
            "none, those of runs recorded before verdicts under not recorded)."
        )
    return f"Verified answers right: {label} {_cell(right['value'])} over {right['n']}."


def calibration_lines(cal: dict[str, Any]) -> list[str]:
    """Markdown lines of the report's calibration section (table, then the headline)."""
    buckets = cal["buckets"]
    names = list(next(iter(buckets.values()))["metrics"])
    header = ["verified", "n", "share", *(_LABELS.get(n, n) for n in names)]
    lines = ["## Calibration (answers by verified)", ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for bucket, b in buckets.items():
        cells = [bucket.replace("_", " "), b["n"], b["share"], *b["metrics"].values()]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines += ["", _headline(cal["verified_right"])]
    notes = [_NOTES[b] for b in _NOTES if b in buckets]
    return [*lines, "", "; ".join(notes) + "."] if notes else lines
