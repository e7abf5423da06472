"""`tablequest eval run` and `tablequest eval retrieval`: thin skins over `tablequest.eval`.

`run` answers a benchmark's questions with a method over the benchmark's corpus and appends
one record per question to `--out` (resumable; see `tablequest.eval.runner`), then writes a
report next to it. `retrieval` measures R@k of an LLM-free ranking. The lead registers both
on the `eval` sub-app with `register(eval_app)`.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from tablequest.corpus.rank import HYBRID_ALPHA
from tablequest.eval.corpora import Corpus, CorpusError, build_corpus, ensure_dense
from tablequest.eval.datasets import DATASETS, Dataset, DatasetError, load
from tablequest.eval.report import write_report
from tablequest.eval.retrieval import (
    RETRIEVAL_METHODS,
    evaluate_retrieval,
    make_encoder,
    make_ranker,
)
from tablequest.eval.runner import RecordLog, RunnerError, RunSpec, select_questions
from tablequest.eval.runs import RUN_METHODS, MethodOptions, build_answer
from tablequest.eval.siblings import with_siblings

__all__ = ["register", "retrieval_command", "run_command"]

err = Console(stderr=True)

DataOpt = Annotated[Path, typer.Option("--data", help="Benchmark folder (read-only).")]
QuestionsOpt = Annotated[
    Path | None, typer.Option("--questions", help="File of question ids (one a line).")
]
SplitOpt = Annotated[
    str | None, typer.Option("--split", help="Split/subset, e.g. training, small_test.")
]
FormatOpt = Annotated[
    str, typer.Option("--format", help="csv | markdown | html | mixed | transposed[-FMT]")
]
LimitOpt = Annotated[int | None, typer.Option("--limit", help="First N questions only.")]
CacheOpt = Annotated[Path | None, typer.Option("--cache-dir", help="Corpus cache folder.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _fail(message: str) -> NoReturn:
    err.print(f"[red]error:[/red] {message}", soft_wrap=True)
    raise typer.Exit(2)


def load_dataset(name: str, data: Path, split: str | None) -> Dataset:
    """Load a benchmark; `split` goes to the loader's `split` or `subset` option."""
    options: dict[str, Any] = {}
    if split:
        loader = DATASETS.get(name.lower())
        params = inspect.signature(loader).parameters if loader else {}
        option = next((p for p in ("split", "subset") if p in params), None)
        if option is None:
            raise DatasetError(f"{name}: the loader takes no --split")
        options[option] = split
    return load(name, data, **options)


@contextmanager
def _progress(label: str, enabled: bool) -> Iterator[Callable[..., None]]:
    """A rich progress bar on a terminal (bar, count, running metric, ETA); else silent."""
    if not enabled or not err.is_terminal:
        yield lambda *a, **k: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[metric]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(label, total=None, metric="")

        def update(done: int, total: int, metric: str = "") -> None:
            bar.update(task, completed=done, total=total, metric=metric)

        yield update


def _corpus(dataset: Dataset, fmt: str, seed: int, cache_dir: Path | None, show: bool) -> Corpus:
    with _progress(f"building {dataset.name} {fmt} corpus", show) as update:
        return build_corpus(dataset, fmt, seed=seed, cache_dir=cache_dir, progress=update)


def _dense(corpus: Corpus, encoder: Any, cache_dir: Path | None) -> None:
    if err.is_terminal:
        err.print(f"encoding the {corpus.dataset} corpus with {encoder.name} (cached)…")
    ensure_dense(corpus, encoder, cache_dir=cache_dir)


def retrieval_command(
    dataset: Annotated[str, typer.Argument(help="wtq | tabfact | tcrbench | …")],
    data: DataOpt,
    method: Annotated[str, typer.Option(help="bm25 | dense | grep | hybrid")] = "bm25",
    questions: QuestionsOpt = None,
    split: SplitOpt = None,
    fmt: FormatOpt = "csv",
    seed: Annotated[int, typer.Option(help="Seed of the mixed-format hash.")] = 0,
    limit: LimitOpt = None,
    siblings: Annotated[
        int, typer.Option(help="Add N generated sibling hard negatives per question.")
    ] = 0,
    encoder: Annotated[str, typer.Option(help="Dense encoder: minilm | hash")] = "minilm",
    fusion: Annotated[str, typer.Option(help="Hybrid fusion: score | rrf")] = "score",
    alpha: Annotated[
        float | None, typer.Option(help="Hybrid: weight of the dense score (default 0.7).")
    ] = None,
    cache_dir: CacheOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """LLM-free retrieval: R@1/2/3/5/10 of a ranking (GR@k and DS@k with sibling groups)."""
    if method not in RETRIEVAL_METHODS:
        _fail(f"unknown --method {method!r}; one of {', '.join(RETRIEVAL_METHODS)}")
    try:
        ds = load_dataset(dataset, data, split)
        chosen = select_questions(ds, ids_file=questions, limit=limit)
        if siblings:
            ds = with_siblings(ds, n=siblings, seed=seed, questions=chosen)
            chosen = ds.questions
        enc = make_encoder(encoder) if method in ("dense", "hybrid") else None
        if fusion not in ("score", "rrf"):
            raise ValueError(f"unknown --fusion {fusion!r}; use score or rrf")
        ranker = make_ranker(method, encoder=enc, fusion=fusion, alpha=alpha)
        corpus = _corpus(ds, fmt, seed, cache_dir, not json_out)
    except (DatasetError, RunnerError, CorpusError, ValueError) as exc:
        _fail(str(exc))
    with corpus.store:
        try:
            if enc is not None:
                _dense(corpus, enc, cache_dir)
            with _progress(f"{method} on {ds.name}", not json_out) as update:
                result = evaluate_retrieval(corpus, chosen, ranker, progress=update)
        except (ValueError, CorpusError) as exc:
            _fail(str(exc))
    payload = result.to_json()
    payload.update(dataset=ds.name, split=split, method=method, format=corpus.format)
    if method == "hybrid":
        weight = HYBRID_ALPHA if alpha is None else alpha
        payload.update(fusion=fusion, alpha=weight if fusion == "score" else None)
    if json_out:
        print(json.dumps(payload))
        return
    ks = list(payload["recall"])
    print(f"{ds.name} · {method} · {corpus.format} · n={payload['n']}")
    print("k      " + "  ".join(f"{k:>6}" for k in ks))
    for label, key in (("R@k", "recall"), ("GR@k", "group_recall"), ("DS@k", "ds")):
        if key in payload:
            print(f"{label:<7}" + "  ".join(f"{payload[key][k]:6.3f}" for k in ks))


def run_command(
    dataset: Annotated[str, typer.Argument(help="wtq | tabfact | tcrbench | …")],
    data: DataOpt,
    out: Annotated[Path, typer.Option("--out", help="Run file (JSONL, resumable).")],
    method: Annotated[str, typer.Option(help=" | ".join(RUN_METHODS))] = "seek",
    questions: QuestionsOpt = None,
    split: SplitOpt = None,
    fmt: FormatOpt = "csv",
    seed: Annotated[int, typer.Option(help="Seed of the mixed-format hash.")] = 0,
    steps: Annotated[int, typer.Option(help="TableSeek step budget S_max.")] = 5,
    strategy: Annotated[str, typer.Option(help="5s1 5s3 10s1 10s3 10s5 r3 r5 r10")] = "5s1",
    evidence: Annotated[str, typer.Option(help="small | medium | big | full")] = "small",
    no_refine: Annotated[bool, typer.Option("--no-refine")] = False,
    no_fallback: Annotated[bool, typer.Option("--no-fallback")] = False,
    no_select: Annotated[bool, typer.Option("--no-select")] = False,
    no_regenerate: Annotated[bool, typer.Option("--no-regenerate")] = False,
    match_only: Annotated[bool, typer.Option("--match-only")] = False,
    match_only_qa: Annotated[bool, typer.Option("--match-only-qa")] = False,
    top_k: Annotated[int, typer.Option(help="Tables given to QA by retrieval baselines.")] = 1,
    encoder: Annotated[str, typer.Option(help="Dense encoder: minilm | hash")] = "minilm",
    rerank_url: Annotated[str | None, typer.Option(help="Server with /v1/rerank.")] = None,
    rerank_model: Annotated[str | None, typer.Option(help="Reranker model name.")] = None,
    rerank_pool: Annotated[int, typer.Option(help="Dense candidates reranked.")] = 5,
    limit: LimitOpt = None,
    concurrency: Annotated[int, typer.Option(help="Questions answered at once.")] = 1,
    llm_url: Annotated[str | None, typer.Option("--llm-url", help="OpenAI-compatible URL.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name.")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="API key.")] = None,
    llm: Annotated[str | None, typer.Option("--llm", help="gguf:/path/model.gguf")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the LLM cache.")] = False,
    cache_dir: CacheOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Answer a benchmark's questions with a method; append records to --out; write a report."""
    from tablequest.llm.base import LLMError
    from tablequest.llm.config import NOT_CONFIGURED_HINT, ConfigError, build_llm, resolve_config

    options = MethodOptions(
        steps=steps,
        strategy=strategy,
        evidence=evidence,
        refine=not no_refine,
        fallback=not no_fallback,
        select=not no_select,
        regenerate=not no_regenerate,
        match_only=match_only,
        match_only_qa=match_only_qa,
        top_k=top_k,
        encoder=encoder,
        rerank_url=rerank_url,
        rerank_model=rerank_model,
        rerank_pool=rerank_pool,
        api_key=api_key,
    )
    try:
        config_name = options.config_name(method)
        ds = load_dataset(dataset, data, split)
        chosen = select_questions(ds, ids_file=questions, limit=limit)
        config = resolve_config(
            url=llm_url, model=model, api_key=api_key, cache=False if no_cache else None
        )
        model_llm = build_llm(config, llm_spec=llm)
    except (DatasetError, RunnerError, ConfigError, LLMError, ValueError) as exc:
        _fail(str(exc))
    if model_llm is None:
        _fail(NOT_CONFIGURED_HINT)
    try:
        corpus = _corpus(ds, fmt, seed, cache_dir, not json_out)
    except CorpusError as exc:
        _fail(str(exc))
    spec = RunSpec(
        ds.name, method, config_name, corpus.format, model_llm.describe().get("model", "")
    )
    with corpus.store, model_llm:
        try:
            log = RecordLog(out, spec)
            answer = build_answer(
                method,
                options,
                model_llm,
                corpus,
                on_dense=lambda enc: _dense(corpus, enc, cache_dir),
                questions=chosen,
            )
            ran = _run(chosen, answer, log, spec, corpus, concurrency, out, json_out)
        except (RunnerError, CorpusError, LLMError, ValueError) as exc:
            _fail(str(exc))
    records = [log.records[q.id] for q in chosen if q.id in log.records]
    md_path, json_path = write_report(out, records)
    if json_out:
        summary = json.loads(json_path.read_text(encoding="utf-8"))
        print(json.dumps({"out": str(out), "ran": ran, "report": str(md_path), **summary}))
    else:
        print(md_path.read_text(encoding="utf-8"))
        print(f"records: {out} ({ran} run now, {len(records) - ran} resumed)\nreport: {md_path}")


def _run(
    chosen: list[Any],
    answer: Any,
    log: RecordLog,
    spec: RunSpec,
    corpus: Corpus,
    concurrency: int,
    out: Path,
    json_out: bool,
) -> int:
    from tablequest.eval.runner import run_questions
    from tablequest.eval.runs import running_metric

    trace_dir = out.with_name(out.name.removesuffix(".jsonl") + ".traces")
    wanted = {q.id for q in chosen}
    seen = [r for qid, r in log.records.items() if qid in wanted]
    with log, _progress(f"{spec.method} on {spec.dataset}", not json_out) as update:
        update(len(seen), len(chosen), running_metric(seen))

        def on_record(record: dict[str, Any]) -> None:
            seen.append(record)
            update(len(seen), len(chosen), running_metric(seen))

        return run_questions(
            chosen,
            answer.fn,
            log,
            spec=spec,
            corpus=corpus,
            gate=answer.gate,
            concurrency=concurrency,
            trace_dir=trace_dir,
            on_record=on_record,
        )


def register(app: typer.Typer) -> None:
    """Add the `run` and `retrieval` commands to the given (eval) sub-app."""
    app.command("run")(run_command)
    app.command("retrieval")(retrieval_command)


if __name__ == "__main__":  # pragma: no cover - `python -m tablequest.cli.eval_run`
    _app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)
    register(_app)
    _app(sys.argv[1:])
