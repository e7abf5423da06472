"""Run reports laid out like the TableSeek paper's tables (markdown + JSON next to the run).

- QA benchmarks (TCR-Bench, WTQ, …): ``Method | Config | Format | Recall | F1`` (Table 2; EM
  for WTQ), Recall being R@all for TableSeek and R@1 for retrieve-then-QA baselines (the
  paper's convention), R@all for oracle Direct QA.
- TabFact: ``Method | Config | Recall | Acc | Acc-Sup | Acc-Ref`` (Tables 3 and 26).
- Retrieval detail (Table 4): R@1, R@all, R@final, GR@all / GR@final and DS@all / DS@final
  when questions have sibling groups; Eff = F1 / R@all (Table 37).
- Effort: average steps, action counts, calls, tokens, seconds (`usage_summary`); TableSeek's
  top-1 hit rate per refinement round (Table 36).
- Calibration: answers per `verified` bucket, with how often a verified answer is right
  (`eval.calibration`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tablequest.eval.calibration import calibration, calibration_lines
from tablequest.eval.metrics import (
    efficiency,
    mean,
    top1_hit_rate_by_round,
    usage_summary,
)

__all__ = ["all_failed", "method_title", "report_paths", "summarize", "to_markdown", "write_report"]


def method_title(name: str) -> str:
    """The name a report shows for a registered method (its `title`), else `name`."""
    from tablequest.methods import UnknownMethod, get_method

    try:
        return get_method(name).title or name
    except UnknownMethod:
        return name


def report_paths(out: Path) -> tuple[Path, Path]:
    """(markdown, JSON) report files next to a run file: `x.jsonl` → `x.report.md/.json`."""
    stem = out.name.removesuffix(".jsonl")
    return out.with_name(f"{stem}.report.md"), out.with_name(f"{stem}.report.json")


def _mean_of(records: list[dict[str, Any]], name: str) -> float | None:
    values = [r["metrics"][name] for r in records if name in r.get("metrics", {})]
    return mean(values) if values else None


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate run records (one per question) into the report's numbers."""
    rows = list(records)
    if not rows:
        raise ValueError("no records to summarize")
    run = dict(rows[0].get("run", {}))
    names = sorted({m for r in rows for m in r.get("metrics", {})})
    metrics = {name: _mean_of(rows, name) for name in names}
    out: dict[str, Any] = {"run": run, "n": len(rows), "metrics": metrics}
    out["status"] = dict(Counter(str(r.get("status")) for r in rows))
    out["errors"] = sum(1 for r in rows if r.get("error"))
    out["not_answered"] = not_answered(rows)
    out["unscored"] = unscored(rows)
    recall_name = "r_at_1" if "r_at_1" in metrics else "r_all"
    out["recall"] = {"name": recall_name, "value": metrics.get(recall_name)}
    for level in ("all", "final"):
        r, gr = metrics.get(f"r_{level}"), metrics.get(f"gr_{level}")
        if r is not None and gr is not None:
            out["metrics"][f"ds_{level}"] = r / gr if gr > 0 else 0.0
    if "acc" in metrics and any("supported" in r for r in rows):
        # Acc-Sup / Acc-Ref: accuracy over supported / refuted claims (fact verification only)
        acc = [
            (r["metrics"]["acc"], bool(r.get("supported"))) for r in rows if "acc" in r["metrics"]
        ]
        sup = [a for a, flag in acc if flag]
        ref = [a for a, flag in acc if not flag]
        out["tabfact"] = {
            "acc": mean(a for a, _ in acc),
            "acc_sup": mean(sup),
            "acc_ref": mean(ref),
            "n_sup": len(sup),
            "n_ref": len(ref),
        }
    primary = next((m for m in ("f1", "em", "acc", "rouge_l", "pass_at_1") if m in metrics), None)
    out["primary"] = primary
    if primary == "f1" and metrics.get("r_all") is not None:
        out["metrics"]["eff"] = efficiency(metrics["f1"] or 0.0, metrics["r_all"] or 0.0)
    out["effort"] = usage_summary(rows)
    out["breakdown"] = breakdown(rows, primary)
    out["calibration"] = calibration(rows)
    rounds = [r.get("rounds_top1") or [] for r in rows]
    if any(rounds):
        golds = [r.get("gold_tables", []) for r in rows]
        out["top1_by_round"] = top1_hit_rate_by_round(rounds, golds)
    return out


_SHOWN_IDS = 10


def not_answered(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions that were not answered, grouped by status and reason, most frequent
    first: ``[{"status", "reason", "count", "ids"}]`` (the reason as the method gave it, else
    the run's error; cut to 300 characters)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for record in records:
        status = str(record.get("status"))
        if status == "answered":
            continue
        reason = str(record.get("reason") or record.get("error") or "no reason recorded")
        groups.setdefault((status, reason[:300]), []).append(str(record.get("id")))
    found = [
        {"status": status, "reason": reason, "count": len(ids), "ids": ids}
        for (status, reason), ids in groups.items()
    ]
    return sorted(found, key=lambda g: (-g["count"], g["status"], g["reason"]))


def unscored(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Questions left out of the answer metrics because the released data cannot score them
    (``record["unscored"]``), grouped by reason: ``[{"reason", "count", "ids"}]``."""
    groups: dict[str, list[str]] = {}
    for record in records:
        if record.get("unscored"):
            groups.setdefault(str(record["unscored"]), []).append(str(record.get("id")))
    return [{"reason": r, "count": len(ids), "ids": ids} for r, ids in sorted(groups.items())]


def all_failed(records: Iterable[dict[str, Any]]) -> str | None:
    """A run in which every question failed without the method being tried — its model
    was unreachable (``stopped_by: model``) or the run crashed (``error``) — evaluated
    nothing: the message to exit non-zero with, naming the most frequent reason. None for
    any other run, including one whose method failed every question on its own (a table
    over the context budget is a result, as in TableRAG's Figure 4)."""
    rows = list(records)
    if not rows or any(
        r.get("status") != "failed" or not (r.get("stopped_by") == "model" or r.get("error"))
        for r in rows
    ):
        return None
    top = not_answered(rows)[0]
    more = f" ({top['count']} of them)" if len(rows) > top["count"] else ""
    return (
        f"every question failed before the method ran ({len(rows)}); the most frequent "
        f"reason{more}: {top['reason']}"
    )


def not_answered_lines(groups: list[dict[str, Any]]) -> list[str]:
    """One line per group: ``failed ×3: REASON (ids q1, q2, q3)``, at most 10 ids shown."""
    lines = []
    for g in groups:
        ids = ", ".join(g["ids"][:_SHOWN_IDS])
        more = f" and {g['count'] - _SHOWN_IDS} more" if g["count"] > _SHOWN_IDS else ""
        lines.append(f"{g['status']} ×{g['count']}: {g['reason']} (ids {ids}{more})")
    return lines


_ANSWER_METRICS = ("em", "f1", "list_f1", "acc", "rouge_l", "bleu", "ecr", "pass_at_1", "r_all")


def breakdown(rows: list[dict[str, Any]], primary: str | None) -> dict[str, Any]:
    """Per key of the records' ``breakdown`` (route, question type, task family, …): for each
    value, how many questions and the mean of every metric."""
    keys = sorted({k for r in rows for k in (r.get("breakdown") or {})})
    out: dict[str, Any] = {}
    for key in keys:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault(str((r.get("breakdown") or {}).get(key, "–")), []).append(r)
        out[key] = {
            value: {"n": len(group), "share": len(group) / len(rows),
                    "metrics": {m: _mean_of(group, m) for m in sorted(
                        {n for g in group for n in g.get("metrics", {})})}}
            for value, group in sorted(groups.items())
        }  # fmt: skip
    return out


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return lines


def to_markdown(summary: dict[str, Any]) -> str:
    """The report as markdown (main table, retrieval detail, effort)."""
    run = summary["run"]
    m = summary["metrics"]
    method = method_title(run.get("method", "?"))
    config = run.get("config", "")
    lines = [
        f"# {run.get('dataset', '?')} · {method} · {run.get('format', '')}",
        "",
        f"{summary['n']} questions; model {run.get('model') or '–'}; status "
        + ", ".join(f"{k} {v}" for k, v in sorted(summary["status"].items()))
        + (f"; {summary['errors']} errors" if summary["errors"] else ""),
        "",
    ]
    recall = summary["recall"]["value"]
    if "tabfact" in summary:
        t = summary["tabfact"]
        lines += _table(
            ["Method", "Config", "Recall", "Acc", "Acc-Sup", "Acc-Ref"],
            [[method, config, recall, t["acc"], t["acc_sup"], t["acc_ref"]]],
        )
    else:
        primary = summary["primary"] or "f1"
        label = {"f1": "F1", "em": "EM", "rouge_l": "ROUGE-L"}.get(primary, primary)
        lines += _table(
            ["Method", "Config", "Format", "Recall", label],
            [[method, config, run.get("format", ""), recall, m.get(primary)]],
        )
    lines += [
        "",
        f"Recall is {'R@1' if summary['recall']['name'] == 'r_at_1' else 'R@all'}.",
        "",
    ]
    if summary.get("calibration"):  # reports written before calibration have none
        lines += [*calibration_lines(summary["calibration"]), ""]
    lines += ["## Retrieval", ""]
    lines += _detail(summary)
    if summary.get("unscored"):
        lines += ["", "## Not scored (left out of the answer metrics)", ""]
        lines += [
            f"- ×{g['count']}: {g['reason']} (ids {', '.join(g['ids'][:_SHOWN_IDS])}"
            + (" …)" if g["count"] > _SHOWN_IDS else ")")
            for g in summary["unscored"]
        ]
    if summary.get("not_answered"):
        lines += ["", "## Not answered (by reason)", ""]
        lines += [f"- {line}" for line in not_answered_lines(summary["not_answered"])]
    return "\n".join(lines) + "\n"


def _detail(summary: dict[str, Any]) -> list[str]:
    """Markdown lines: retrieval metrics, breakdowns, effort, top-1 per round."""
    m = summary["metrics"]
    lines: list[str] = []
    names = [
        ("R@1", "r_at_1"),
        ("R@all", "r_all"),
        ("R@final", "r_final"),
        ("GR@all", "gr_all"),
        ("GR@final", "gr_final"),
        ("DS@all", "ds_all"),
        ("DS@final", "ds_final"),
        ("Eff", "eff"),
    ]
    lines += _table(["Metric", "Value"], [[label, m[key]] for label, key in names if key in m])
    for key, groups in summary.get("breakdown", {}).items():
        shown = [n for n in _ANSWER_METRICS if any(n in g["metrics"] for g in groups.values())]
        lines += ["", f"## By {key.replace('_', ' ')}", ""]
        lines += _table(
            [key, "n", "share", *shown],
            [[v, g["n"], g["share"], *(g["metrics"].get(n) for n in shown)]
             for v, g in groups.items()],
        )  # fmt: skip
    effort = summary["effort"]["mean"]
    lines += ["", "## Effort (mean per question)", ""]
    lines += _table(["Counter", "Mean"], [[k, v] for k, v in effort.items()])
    if summary.get("top1_by_round"):
        lines += ["", "## Top-1 hit rate per round", ""]
        lines += _table(
            ["Round", "Hit rate"], [[i, v] for i, v in enumerate(summary["top1_by_round"])]
        )
    return lines


def _clean(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def write_report(out: Path, records: Iterable[dict[str, Any]]) -> tuple[Path, Path]:
    """Write the markdown and JSON reports next to `out`; return their paths."""
    summary = summarize(records)
    md_path, json_path = report_paths(out)
    md_path.write_text(to_markdown(summary), encoding="utf-8")
    json_path.write_text(
        json.dumps(_clean(summary), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return md_path, json_path
