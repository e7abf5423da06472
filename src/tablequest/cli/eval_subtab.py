"""`tablequest eval build-subtab` and `tablequest eval score-subtab`: thin skins over
`tablequest.eval.subtab` (TabScope's WTQ-SubTab, arXiv:2609.03395 App. E.3, Table 3).

``build-subtab wtq --data DIR --out REF.jsonl`` builds silver reference sub-tables with the
configured model (the paper's direct generation + verifier-guided repair), or with
``--approx`` the LLM-free approximation. ``score-subtab RUN.jsonl --ref REF.jsonl`` scores a
run's sub-tables (row / column / cell F1 and exact match, overall and per breakdown value).
The lead registers both on the `eval` sub-app with `register(eval_app)`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tablequest.cli._exit import FAILED
from tablequest.cli._options import ConfigFileOpt
from tablequest.cli._output import fail, fail_on

__all__ = ["build_subtab_command", "register", "score_subtab_command"]


def build_subtab_command(
    dataset: Annotated[
        str, typer.Argument(help="Benchmark with one gold table per question (wtq).")
    ],
    data: Annotated[Path, typer.Option("--data", help="Benchmark folder (read-only).")],
    out: Annotated[Path, typer.Option("--out", help="Reference file (JSONL; resumable).")],
    split: Annotated[str | None, typer.Option("--split", help="Split, e.g. training.")] = None,
    questions: Annotated[
        Path | None, typer.Option("--questions", help="File of question ids (one a line).")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="First N questions only.")] = None,
    approx: Annotated[
        bool, typer.Option("--approx", help="LLM-free approximation (answer cells, named columns).")
    ] = False,
    llm_url: Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible URL.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name.")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="API key.")] = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    llm: Annotated[str | None, typer.Option("--llm", help="gguf:/path/model.gguf")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the LLM cache.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Build silver reference sub-tables (WTQ-SubTab, App. E.3) for a benchmark's questions."""
    from tablequest.cli._llm import LLMFlags
    from tablequest.errors import TablequestError
    from tablequest.eval.datasets import DatasetError, load
    from tablequest.eval.runner import select_questions
    from tablequest.eval.subtab import build_references
    from tablequest.llm import NOT_CONFIGURED_HINT

    try:
        ds = load(dataset, data, **({"split": split} if split else {}))
        chosen = select_questions(ds, ids_file=questions, limit=limit)
        model_llm = None
        if not approx:
            flags = LLMFlags(
                llm_url, model, api_key, llm, no_cache=no_cache, config_file=config_file
            )
            model_llm = flags.build()[1]
            if model_llm is None:
                fail(
                    NOT_CONFIGURED_HINT + " (or pass --approx for the LLM-free references)",
                    json_out=json_out,
                )
    except TablequestError as exc:  # the benchmark, the questions, the model's flags
        fail_on(exc, json_out=json_out)
    try:
        counts = build_references(ds, chosen, out, llm=model_llm)
    except DatasetError as exc:
        fail_on(exc, json_out=json_out)
    except OSError as exc:  # the output folder cannot be written: a run that failed
        fail(str(exc), json_out=json_out, status=FAILED)
    finally:
        if model_llm is not None:
            model_llm.close()
    payload: dict[str, Any] = {"out": str(out), "method": "approx" if approx else "llm", **counts}
    if json_out:
        print(json.dumps(payload))
    else:
        print(
            f"{counts['written']} references written to {out} "
            f"({counts['no_reference']} without one, {counts['skipped_done']} already there)"
        )


def _read_run(path: Path, *, json_out: bool) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]
    except (OSError, ValueError) as exc:
        fail(f"cannot read run {str(path)!r}: {exc}", json_out=json_out)


def score_subtab_command(
    run: Annotated[Path, typer.Argument(help="Run records (JSONL from eval run).")],
    ref: Annotated[Path, typer.Option("--ref", help="References from build-subtab.")],
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Sub-table quality of a run: row / column / cell F1 and exact match (Table 3)."""
    from tablequest.eval.subtab import read_references, score_runs

    try:
        references = read_references(ref)
    except (OSError, ValueError, KeyError) as exc:
        fail(f"cannot read references {str(ref)!r}: {exc}", json_out=json_out)
    result = score_runs(_read_run(run, json_out=json_out), references)
    if json_out:
        print(json.dumps(result))
        return
    s = result["scores"]
    print(
        f"{result['n']} questions scored ({result['no_reference']} without reference, "
        f"{result['no_subtable']} without sub-table)"
    )
    if not s:
        return
    print("        F1: cell {cell_f1:.3f}  row {row_f1:.3f}  column {col_f1:.3f}".format(**s))
    print("  exact match: cell {cell_em:.3f}  row {row_em:.3f}  column {col_em:.3f}".format(**s))
    for key, values in result["by"].items():
        print(f"by {key}:")
        for value, v in values.items():
            print(
                f"  {value:<20} n={v['n']:<5} cell F1 {v['cell_f1']:.3f}  row F1 "
                f"{v['row_f1']:.3f}  column F1 {v['col_f1']:.3f}"
            )


def register(eval_app: typer.Typer) -> None:
    """Add `build-subtab` and `score-subtab` to the given (eval) sub-app."""
    eval_app.command("build-subtab")(build_subtab_command)
    eval_app.command("score-subtab")(score_subtab_command)


if __name__ == "__main__":  # pragma: no cover - `python -m tablequest.cli.eval_subtab`
    _app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)
    register(_app)
    _app(sys.argv[1:])
