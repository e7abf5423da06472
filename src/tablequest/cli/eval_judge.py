"""`tablequest eval judge RUN.jsonl [--against OTHER.jsonl]`: DTR's LLM-as-judge metrics.

A thin skin over `tablequest.eval.metrics.judge`. Without ``--against``: LLM-EVAL of the run
(RealHiTBench's judge protocol, DTR Table 2); judgments go to ``RUN.judge.jsonl``. With it:
Win Rate / Score Rate of RUN against OTHER per dimension (DTR Table 1); judgments go to
``RUN.vs-OTHER.judge.jsonl``. ``--out`` names another judgment file. Judging again resumes: a
question already judged by the same judge model is not asked again. The summary is written
beside the judgments (``….judge.report.md`` and ``.json``) and printed.

Exit statuses: 0 done (judge failures are reported, not fatal), 1 the judge model failed
(unreachable, timed out: run again to resume), 2 bad input (run file, --data, --prompt, no
model configured). The lead registers it on the `eval` sub-app with `register(eval_app)`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tablequest.cli._defaults import EVAL_PROMPTS
from tablequest.cli._exit import FAILED
from tablequest.cli._llm import LLMFlags, required_model
from tablequest.cli._options import ApiKeyOpt, ConfigFileOpt, LLMSpecOpt, LLMUrlOpt, ModelOpt
from tablequest.cli._output import fail, fail_on

if TYPE_CHECKING:
    from tablequest.eval.datasets import Dataset
    from tablequest.eval.metrics.judge import JudgeItem

__all__ = ["judge_command", "judgment_path", "register", "render"]


def judgment_path(run: Path, against: Path | None) -> Path:
    """``RUN.judge.jsonl``, or ``RUN.vs-OTHER.judge.jsonl`` for a pairwise judgment."""
    stem = run.name.removesuffix(".jsonl")
    if against is not None:
        stem += ".vs-" + against.name.removesuffix(".jsonl")
    return run.with_name(f"{stem}.judge.jsonl")


def _num(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}"


def _grouped(reasons: dict[str, str]) -> list[str]:
    groups: dict[str, list[str]] = {}
    for qid, reason in reasons.items():
        groups.setdefault(reason, []).append(qid)
    return [
        f"- ×{len(ids)}: {reason} (ids {', '.join(ids[:10])}{' …' if len(ids) > 10 else ''})"
        for reason, ids in sorted(groups.items(), key=lambda g: -len(g[1]))
    ]


def render(summary: dict[str, Any]) -> str:
    """The summary as markdown (LLM-EVAL or Win/Score Rate tables, then what was left out)."""
    from tablequest.eval.metrics.judge import DIMENSIONS

    head = f"# {summary['run']} · judge {summary['model']}"
    if "dimensions" in summary:
        lines = [head, "", f"vs {summary['against']}: {summary['n']} questions judged", ""]
        lines += ["| Dimension | Wins | Ties | Losses | Win Rate (Tie=0) | Score Rate (Tie=0.5) |"]
        lines += ["|---|---|---|---|---|---|"]
        for dim in DIMENSIONS:
            d = summary["dimensions"][dim]
            lines.append(
                f"| {dim} | {d['wins']} | {d['ties']} | {d['losses']} | "
                f"{_num(d['win_rate'])} | {_num(d['score_rate'])} |"
            )
        for key in ("only_a", "only_b"):
            if summary[key]:
                side = "the run" if key == "only_a" else "--against"
                lines += ["", f"{len(summary[key])} question(s) only in {side}: not compared"]
    else:
        over = f"{summary['n']} questions ({summary['n_no_answer']} without an answer: 0)"
        lines = [head, "", f"LLM-EVAL (0–100): {_num(summary['llm_eval'])} over {over}", ""]
        lines += ["| Sub-type | n | LLM-EVAL |", "|---|---|---|"]
        lines += [f"| {k} | {g['n']} | {_num(g['llm_eval'])} |"
                  for k, g in summary["by_sub_type"].items()]  # fmt: skip
        if summary["not_judged"]:
            lines += ["", "## Not judged", "", *_grouped(summary["not_judged"])]
    if summary["judge_failed"]:
        lines += ["", "## Judge failed (left out of the scores)", ""]
        lines += _grouped(summary["judge_failed"])
    return "\n".join(lines) + "\n"


def _dataset(records: list[dict[str, Any]], data: Path) -> Dataset:
    from tablequest.eval.datasets import DatasetError, load

    name = str((records[0].get("run") or {}).get("dataset") or "")
    if not name:
        raise DatasetError("the run's records do not name their dataset ('run.dataset')")
    return load(name.split("+")[0], data)


def _judgeable(item: JudgeItem) -> bool:
    from tablequest.eval.metrics.judge import JudgeError, eval_prompt

    try:
        eval_prompt(item, "")
    except JudgeError:
        return False
    return True


def judge_command(
    run: Annotated[Path, typer.Argument(help="Run file (JSONL) from `tablequest eval run`.")],
    against: Annotated[
        Path | None,
        typer.Option("--against", help="Another run: Win/Score Rate of RUN against it."),
    ] = None,
    data: Annotated[
        Path | None,
        typer.Option("--data", help="The benchmark folder (RealHiTBench: sub-types, tables)."),
    ] = None,
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            help="LLM-EVAL prompt for questions without a sub-type: " + " | ".join(EVAL_PROMPTS),
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Judgment file (JSONL).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Questions judged at once.")] = 1,
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    llm: LLMSpecOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the LLM cache.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """LLM-EVAL of a run, or Win/Score Rate against another run, by an LLM judge (DTR)."""
    from tablequest.eval.datasets import DatasetError
    from tablequest.eval.metrics.judge import (
        EVAL_PROMPTS,
        JudgeError,
        JudgeLog,
        judge_items,
        judge_records,
        read_run,
        win_rate,
    )
    from tablequest.llm import LLMError

    if prompt is not None and prompt not in EVAL_PROMPTS:
        fail(f"--prompt {prompt!r}: one of {', '.join(EVAL_PROMPTS)}", json_out=json_out)
    try:
        records = read_run(run)
        other = read_run(against) if against is not None else None
        if not records:
            raise JudgeError(f"{str(run)!r} holds no records")
        ds = _dataset(records, data) if data is not None else None
        items = judge_items(records, dataset=ds, sub_type=prompt)
    except (JudgeError, DatasetError) as exc:
        fail_on(exc, json_out=json_out)
    if other is None and not any(_judgeable(item) for item in items.values()):
        fail("no question of the run has an LLM-EVAL prompt (RealHiTBench's Data Analysis "
             "sub-types): pass --data with the benchmark folder, or --prompt TYPE",
             json_out=json_out)  # fmt: skip
    path = out or judgment_path(run, against)
    flags = LLMFlags(llm_url, model, api_key, llm, no_cache=no_cache, config_file=config_file)
    judge = required_model(flags, json_out=json_out)[1]
    try:
        with judge, JudgeLog(path) as log:
            if other is None:
                summary = judge_records(
                    records, judge, items=items, log=log, concurrency=concurrency
                ).summary()
            else:
                summary = win_rate(
                    records, other, judge, items=items, log=log, concurrency=concurrency
                ).summary()
                summary["against"] = str(against)
    except JudgeError as exc:
        fail_on(exc, json_out=json_out)
    except LLMError as exc:
        fail(f"the judge model failed: {exc} (run again to resume)", json_out=json_out,
             code="llm", status=FAILED)  # fmt: skip
    except OSError as exc:
        fail(f"cannot write {str(path)!r}: {exc.strerror or exc}", json_out=json_out, status=FAILED)
    summary = {"run": str(run), "model": judge.describe().get("model", ""),
               "judgments": str(path), **summary}  # fmt: skip
    _report(summary, path, json_out)


def _report(summary: dict[str, Any], path: Path, json_out: bool) -> None:
    """Write the summary beside the judgments (markdown and JSON) and print it."""
    from tablequest.eval.report import report_paths

    md_path, json_path = report_paths(path)
    try:
        md_path.write_text(render(summary), encoding="utf-8")
        json_path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", "utf-8")
    except OSError as exc:
        fail(f"cannot write the report {str(md_path)!r}: {exc.strerror or exc}",
             json_out=json_out, status=FAILED)  # fmt: skip
    if json_out:
        print(json.dumps({**summary, "report": str(md_path)}, ensure_ascii=False))
    else:
        print(render(summary) + f"\njudgments: {path}\nreport: {md_path}")


def register(app: typer.Typer) -> None:
    """Add the `judge` command to the given (eval) sub-app."""
    app.command("judge")(judge_command)


if __name__ == "__main__":  # pragma: no cover - `python -m tablequest.cli.eval_judge`
    _app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)
    register(_app)
    _app(sys.argv[1:])
