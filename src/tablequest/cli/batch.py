"""`tablequest batch QUESTIONS.jsonl --out RUN.jsonl`: a question list answered on Ray.

One library call (`tablequest.scale.batchrun.run_batch`); see `tablequest.scale.batch` for
the file format, the scheduling over endpoints, the shared cache and resuming.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    ConfigOpt,
    DeviceOpt,
    LLMUrlsOpt,
    MethodOpt,
    ModelOpt,
    NoCacheOpt,
    OptionOpt,
    RayOpt,
    StepsOpt,
    TaskOpt,
    option_pairs,
    task_name,
)
from tablequest.cli._output import fail, fail_on

if TYPE_CHECKING:
    from tablequest.scale import BatchOutcome


def batch_command(
    questions: Annotated[
        Path,
        typer.Argument(help='JSON lines: {"id", "question", "source"?, "table_id"?, "method"?}.'),
    ],
    out: Annotated[Path, typer.Option("--out", help="Run file (JSONL, resumable).")],
    source: Annotated[
        str | None,
        typer.Option(
            "--store",
            "-s",
            "--source",
            metavar="STORE",
            help="What questions without a source answer from: a store, a manifest, a table "
            "file or a folder (--source: the older name).",
        ),
    ] = None,
    method: MethodOpt = "auto",
    option: OptionOpt = None,
    config: ConfigOpt = None,
    steps: StepsOpt = None,
    task: TaskOpt = "tableqa",
    llm_url: LLMUrlsOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    concurrency: Annotated[
        int, typer.Option(min=1, help="Questions in flight per LLM endpoint.")
    ] = 4,
    ray: RayOpt = None,
    device: DeviceOpt = None,
    no_cache: NoCacheOpt = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Answer every question of QUESTIONS on Ray; append one record per question to --out.

    Exit status 0 when every question ran and none failed (insufficient evidence is not a
    failure); 1 when one failed or was lost (the summary names them); 2 on bad input.
    """
    from tablequest.cli._llm import LLMFlags, settings_or_fail
    from tablequest.cli._output import err_console
    from tablequest.cli._scale import endpoint_urls
    from tablequest.errors import UsageError
    from tablequest.eval.runner import RecordLog, RunSpec
    from tablequest.llm import ConfigError
    from tablequest.scale import (
        BatchError,
        BatchJob,
        Endpoint,
        ray_address,
        read_questions,
        run_batch,
    )
    from tablequest.trace.runs import run_trace_dir

    flags = LLMFlags(model=model, api_key=api_key, no_cache=no_cache, config_file=config_file)
    more = {"scale.llm_urls": llm_url or None, "scale.ray_address": ray,
            "embeddings.device": device}  # fmt: skip
    settings = settings_or_fail(flags, more, json_out=json_out)  # the command's one load
    try:
        chosen = read_questions(questions)
        llm_config = flags.config(settings)
    except (BatchError, ConfigError) as exc:
        fail_on(exc, json_out=json_out)
    urls = endpoint_urls(settings)
    if not urls or not llm_config.model:
        fail("batch needs an LLM: --llm-url URL (repeatable) and --model NAME", json_out=json_out)
    endpoints = [Endpoint(u, concurrency) for u in urls]
    job = BatchJob(
        method=method,
        options=option_pairs(option),
        config=config,
        steps=steps,
        task=task_name(task),
        source=source,
        llm=llm_config,
        cache=llm_config.cache,
        trace_dir=str(run_trace_dir(out)),
        settings=settings,  # the workers' only settings (they read no environment)
    )
    spec = RunSpec(f"batch:{questions.name}", method, config or "", "", llm_config.model)
    shown = {"n": 0}

    def progress(record: dict[str, object]) -> None:
        shown["n"] += 1
        if not json_out and err_console.is_terminal:
            err_console.print(f"{shown['n']}: {record['id']} → {record.get('status')}")

    try:
        with RecordLog(out, spec) as log:
            outcome = run_batch(
                chosen, job, endpoints, log,
                address=ray_address(settings.scale.ray_address) or "local",
                run=spec.to_json(), on_record=progress,
            )  # fmt: skip
            records = [log.records[q.id] for q in chosen if q.id in log.records]
    except UsageError as exc:  # the --out file, Ray, no endpoint
        fail_on(exc, json_out=json_out)
    _report(out, len(chosen), outcome, records, urls, json_out=json_out)
    if outcome.lost or any(r.get("status") == "failed" for r in records):
        raise typer.Exit(1)  # the summary names the failed questions and why


def _report(
    out: Path,
    n: int,
    outcome: BatchOutcome,
    records: list[dict[str, Any]],
    urls: list[str],
    *,
    json_out: bool,
) -> None:
    """Print the batch summary (JSON with --json): counts by status, and the questions not
    answered grouped by reason with their ids."""
    from tablequest.eval.report import not_answered, not_answered_lines

    statuses = [str(r.get("status")) for r in records]
    groups = not_answered(records)
    summary = {
        "out": str(out),
        "questions": n,
        "ran": outcome.ran,
        "resumed": outcome.resumed,
        "lost": outcome.lost,
        "answered": statuses.count("answered"),
        "insufficient": statuses.count("insufficient"),
        "failed": statuses.count("failed"),
        "not_answered": groups,
        "endpoints": urls,
    }
    if json_out:
        print(json.dumps(summary))
        return
    print(
        f"{summary['answered']}/{n} answered, {summary['insufficient']} insufficient, "
        f"{summary['failed']} failed ({outcome.ran} run now, {outcome.resumed} resumed) → {out}"
    )
    for line in not_answered_lines(groups):
        print(f"  {line}")
    if outcome.lost:
        print(f"{len(outcome.lost)} question(s) lost to worker failures: run again")
