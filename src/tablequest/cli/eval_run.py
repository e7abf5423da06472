"""`tablequest eval run` and `tablequest eval retrieval`: thin skins over `tablequest.eval`.

`run` answers a benchmark's questions with a method over the benchmark's corpus and appends
one record per question to `--out` (resumable; see `tablequest.eval.runner`), then writes a
report next to it. `retrieval` measures R@k of an LLM-free ranking. Both are registered on
the `eval` sub-app with `register(eval_app)`.

Exit status of `run`: 0 when the run was evaluated (some or all questions may have failed
in the method: the report lists them by reason), 1 when every question failed before the
method ran — nothing was evaluated (an unreachable model, a crash; `eval.report.all_failed`)
— or the run could not be written, 2 for usage errors.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from tablequest.cli._defaults import ENCODER, HYBRID_ALPHA, RETRIEVAL_METHOD
from tablequest.cli._exit import FAILED
from tablequest.cli._llm import LLMFlags, settings_or_fail
from tablequest.cli._options import (
    ENCODER_NAMES,
    RETRIEVER_NAMES,
    ApiKeyOpt,
    ConfigFileOpt,
    ConfigOpt,
    DeadlineOpt,
    DeviceOpt,
    LLMSpecOpt,
    LLMUrlsOpt,
    MethodOpt,
    ModelOpt,
    NoCacheOpt,
    OptionOpt,
    PairCommand,
    RayOpt,
    StepsOpt,
    UsageCommand,
    option_pairs,
)
from tablequest.cli._output import fail, fail_on

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from tablequest.eval.corpora import BuildWork, BuiltCorpus
    from tablequest.eval.datasets import Dataset
    from tablequest.eval.runner import RecordLog, RunSpec

    err: Console

__all__ = ["register", "retrieval_command", "run_command"]


def __getattr__(name: str) -> Any:
    """`err`: the stderr console of the progress bars (`_output.err_console` unless a test
    sets another), made on first use."""
    if name == "err":
        from tablequest.cli._output import err_console

        return err_console
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _err() -> Console:
    found: Console = sys.modules[__name__].err
    return found


DataOpt = Annotated[Path, typer.Option("--data", help="Benchmark folder (read-only).")]
QuestionsOpt = Annotated[
    Path | None,
    typer.Option(
        "--questions",
        help="Question ids (one a line, or a JSON list), or the benchmark's own question file.",
    ),
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
ShardsOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Run on the corpus split into N shards (built next to it once)."),
]


def _fail(message: str | BaseException, json_out: bool = False) -> NoReturn:
    if isinstance(message, BaseException):
        fail_on(message, json_out=json_out)
    fail(message, json_out=json_out)


def _os_error(exc: OSError, out: Path) -> str:
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(out) else ""
    return f"cannot write the run {str(out)!r} or its report: {exc.strerror or exc}{where}"


def load_dataset(name: str, data: Path, split: str | None) -> Dataset:
    """Load a benchmark; `split` goes to the loader's `split` or `subset` option."""
    from tablequest.eval.datasets import DATASETS, DatasetError, load

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
    err = _err()
    if not enabled or not err.is_terminal:
        yield lambda *a, **k: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

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


def _corpus(
    dataset: Dataset, fmt: str, seed: int, cache_dir: Path | None, show: bool, work: Any = None
) -> BuiltCorpus:
    from tablequest.eval.corpora import build_corpus

    with _progress(f"building {dataset.name} {fmt} corpus", show) as update:
        return build_corpus(
            dataset, fmt, seed=seed, cache_dir=cache_dir, progress=update, work=work
        )


def _dense(
    corpus: BuiltCorpus, encoder: Any, cache_dir: Path | None, show: bool, views: Any = ("table",)
) -> None:
    """Encode the corpus once (vectors shared across the corpora of the cache folder)."""
    from tablequest.corpus import encoding_progress, with_rate
    from tablequest.eval.corpus_vectors import ensure_dense

    label = f"encoding the {corpus.dataset} corpus with {encoder.name}"
    with _progress(label, show) as update, encoding_progress(with_rate(update)):
        ensure_dense(corpus, encoder, cache_dir=cache_dir, views=views)


def _cold_work(ranker: Any, questions: Sequence[str], sharded: bool) -> BuildWork:
    """What a cold corpus build does for `ranker` (`eval.corpora.BuildWork`): its vectors
    and the questions' encoded on a second thread while the indexes are built, its own
    indexes built and kept with the corpus."""
    from tablequest.corpus import View
    from tablequest.eval.corpora import BuildWork

    encoder = getattr(ranker, "encoder", None)
    views: tuple[View, ...] = getattr(ranker, "views", ("table",))
    indexes, prime = getattr(ranker, "build_indexes", None), getattr(ranker, "prime", None)
    base = sharded or getattr(ranker, "base_indexes", True)
    return BuildWork(encoder, views, indexes, prime, tuple(questions), base_indexes=base)


def _sharded(corpus: BuiltCorpus, shards: int | None) -> BuiltCorpus:
    """The corpus on N shards (`scale.evalrun.shard_corpus`), or as it is."""
    if shards is None:
        return corpus
    from tablequest.scale import shard_corpus

    return shard_corpus(corpus, shards)


def retrieval_command(
    dataset: Annotated[str, typer.Argument(help="wtq | tabfact | tcrbench | …")],
    data: DataOpt,
    method: Annotated[str, typer.Option("--method", "-m", help=RETRIEVER_NAMES)] = RETRIEVAL_METHOD,
    questions: QuestionsOpt = None,
    split: SplitOpt = None,
    fmt: FormatOpt = "csv",
    seed: Annotated[int, typer.Option(help="Seed of the mixed-format hash.")] = 0,
    limit: LimitOpt = None,
    siblings: Annotated[
        int, typer.Option(help="Add N generated sibling hard negatives per question.")
    ] = 0,
    encoder: Annotated[str, typer.Option(help=ENCODER_NAMES)] = ENCODER,
    device: DeviceOpt = None,
    fusion: Annotated[str, typer.Option(help="Hybrid fusion: score | rrf")] = "score",
    alpha: Annotated[float, typer.Option(help="Hybrid: weight of the dense score.")] = HYBRID_ALPHA,
    cache_dir: CacheOpt = None,
    shards: ShardsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """LLM-free retrieval: R@1/2/3/5/10 of a ranking (GR@k and DS@k with sibling groups)."""
    from tablequest.cli._settings import loaded_or_fail
    from tablequest.corpus import EncoderSettings, RetrieverSettings
    from tablequest.errors import TablequestError
    from tablequest.eval.retrieval import evaluate_retrieval, make_ranker
    from tablequest.eval.runner import select_questions
    from tablequest.eval.siblings import with_siblings

    if fusion not in ("score", "rrf"):
        _fail(f"unknown --fusion {fusion!r}; use score or rrf", json_out)
    try:
        loaded = loaded_or_fail({"embeddings.device": device}, json_out=json_out)
        settings = RetrieverSettings(
            encoder=encoder,
            embeddings=EncoderSettings.from_settings(loaded),  # [embeddings], else [llm]
            fusion=fusion,  # type: ignore[arg-type]
            alpha=alpha,
        )
        ranker = make_ranker(method, settings)
        ds = load_dataset(dataset, data, split)
        chosen = select_questions(ds, ids_file=questions, limit=limit)
        if siblings:
            ds = with_siblings(ds, n=siblings, seed=seed, questions=chosen)
            chosen = ds.questions
        work = _cold_work(ranker, [q.question for q in chosen], shards is not None)
        corpus = _sharded(_corpus(ds, fmt, seed, cache_dir, not json_out, work), shards)
    except TablequestError as exc:  # the benchmark, questions, corpus or retriever (2)
        _fail(exc, json_out)
    encoder_impl = getattr(ranker, "encoder", None)
    with corpus.store:
        try:
            if encoder_impl is not None:
                _dense(corpus, encoder_impl, cache_dir, not json_out, work.views)
            with _progress(f"{method} on {ds.name}", not json_out) as update:
                result = evaluate_retrieval(corpus, chosen, ranker, progress=update)
        except TablequestError as exc:  # a question whose gold table is missing (2), …
            _fail(exc, json_out)
    payload = result.to_json()
    payload.update(dataset=ds.name, split=split, method=method, format=corpus.format)
    if encoder_impl is not None:
        payload.update(encoder=encoder_impl.name)
    if method == "hybrid":
        payload.update(fusion=fusion, alpha=alpha if fusion == "score" else None)
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
    method: MethodOpt = "auto",
    option: OptionOpt = None,
    config: ConfigOpt = None,
    steps: StepsOpt = None,
    questions: QuestionsOpt = None,
    split: SplitOpt = None,
    fmt: FormatOpt = "csv",
    seed: Annotated[int, typer.Option(help="Seed of the mixed-format hash.")] = 0,
    limit: LimitOpt = None,
    concurrency: Annotated[
        int, typer.Option(help="Questions answered at once (with --ray: per LLM endpoint).")
    ] = 1,
    llm_url: LLMUrlsOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    llm: LLMSpecOpt = None,
    deadline: DeadlineOpt = None,
    no_cache: NoCacheOpt = False,
    cache_dir: CacheOpt = None,
    shards: ShardsOpt = None,
    ray: RayOpt = None,
    device: DeviceOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Answer a benchmark's questions with a method; append records to --out; write a report.

    Exits 1 when every question failed before the method ran (stderr says why)."""
    from tablequest.cli._scale import endpoint_urls
    from tablequest.errors import TablequestError
    from tablequest.eval.pipeline import prepared_answer
    from tablequest.eval.runner import RecordLog, RunSpec, select_questions
    from tablequest.llm import NOT_CONFIGURED_HINT
    from tablequest.methods import get_method, resolve_options
    from tablequest.scale import EvalJob, ray_address
    from tablequest.trace.runs import run_trace_dir

    flags = LLMFlags(llm_url[0] if llm_url else None, model, api_key, llm,
                     no_cache=no_cache, deadline=deadline, config_file=config_file)  # fmt: skip
    more = {"scale.llm_urls": llm_url or None, "scale.ray_address": ray,
            "embeddings.device": device}  # fmt: skip
    settings = settings_or_fail(flags, more, json_out=json_out)  # the command's one load
    try:
        spec = get_method(method)
        files = settings.files
        options = resolve_options(spec, config=config, options=option_pairs(option),
                                  config_paths=files)  # fmt: skip
        ds = load_dataset(dataset, data, split)
        chosen = select_questions(ds, ids_file=questions, limit=limit)
        llm_config, model_llm = flags.build(settings)
    except TablequestError as exc:  # the method, options, benchmark, model flags
        _fail(exc, json_out)
    if model_llm is None and spec.needs_llm:
        _fail(NOT_CONFIGURED_HINT, json_out)
    try:
        corpus = _sharded(_corpus(ds, fmt, seed, cache_dir, not json_out), shards)
    except TablequestError as exc:
        _fail(exc, json_out)
    spec_label = options.label()
    model_name = model_llm.describe().get("model", "") if model_llm is not None else ""
    run_spec = RunSpec(ds.name, spec.name, spec_label, corpus.format, model_name)
    with corpus.store, contextlib.ExitStack() as stack:
        if model_llm is not None:
            stack.enter_context(model_llm)
        try:
            log = RecordLog(out, run_spec)
            with prepared_answer(
                spec, options, model_llm, corpus, out, llm_config=llm_config, steps=steps,
                cache=not no_cache, questions=chosen, settings=settings,
                on_encoder=lambda enc: _dense(corpus, enc, cache_dir, not json_out),
            ) as answer:  # fmt: skip
                address = ray_address(settings.scale.ray_address)
                if address is None:
                    ran = _run(chosen, answer, log, run_spec, corpus, concurrency, out, json_out)
                else:  # `answer` was built here to prepare the corpus (vectors) once
                    job = EvalJob.detached(
                        corpus, spec=run_spec, method=spec.name, options=options,
                        llm=llm_config, steps=steps, cache=not no_cache,
                        trace_dir=str(run_trace_dir(out)), settings=settings,
                    )  # fmt: skip
                    urls = endpoint_urls(settings)
                    ran = _run_ray(chosen, job, log, urls, concurrency, address, json_out)
        except TablequestError as exc:  # the run file (2), the model (1), …
            _fail(exc, json_out)
        except OSError as exc:  # --out on read-only media, a full disk, …
            _fail(_os_error(exc, out), json_out)
    _report([log.records[q.id] for q in chosen if q.id in log.records], out, ran, json_out)


def _report(records: list[Any], out: Path, ran: int, json_out: bool) -> None:
    """Write the run's report beside `out` and print it (or its JSON summary)."""
    from tablequest.eval.report import all_failed, write_report

    try:
        md_path, json_path = write_report(out, records)
    except OSError as exc:
        _fail(_os_error(exc, out), json_out)
    if json_out:
        summary = json.loads(json_path.read_text(encoding="utf-8"))
        print(json.dumps({"out": str(out), "ran": ran, "report": str(md_path), **summary}))
    else:
        print(md_path.read_text(encoding="utf-8"))
        print(f"records: {out} ({ran} run now, {len(records) - ran} resumed)\nreport: {md_path}")
    failed = all_failed(records)
    if failed is not None:  # nothing was evaluated: say so and exit 1, as `batch` does
        _err().print(failed, soft_wrap=True, markup=False)
        raise typer.Exit(FAILED)


def _run(
    chosen: list[Any],
    answer: Any,
    log: RecordLog,
    spec: RunSpec,
    corpus: BuiltCorpus,
    concurrency: int,
    out: Path,
    json_out: bool,
) -> int:
    from tablequest.eval.pipeline import answer_questions
    from tablequest.eval.runs import running_metric

    wanted = {q.id for q in chosen}
    seen = [r for qid, r in log.records.items() if qid in wanted]
    with log, _progress(f"{spec.method} on {spec.dataset}", not json_out) as update:
        update(len(seen), len(chosen), running_metric(seen))

        def on_record(record: dict[str, Any]) -> None:
            seen.append(record)
            update(len(seen), len(chosen), running_metric(seen))

        return answer_questions(
            chosen, answer, log, spec=spec, corpus=corpus, out=out, concurrency=concurrency,
            on_record=on_record,
        )  # fmt: skip


def _run_ray(
    chosen: list[Any],
    job: Any,
    log: RecordLog,
    urls: list[str],
    concurrency: int,
    address: str | None,
    json_out: bool,
) -> int:
    from tablequest.eval.runs import running_metric
    from tablequest.scale import Endpoint, RayUnavailable, run_eval_ray

    wanted = {q.id for q in chosen}
    seen = [r for qid, r in log.records.items() if qid in wanted]
    try:
        with log, _progress(f"{job.method} on {job.spec.dataset} (Ray)", not json_out) as update:
            update(len(seen), len(chosen), running_metric(seen))

            def on_record(record: dict[str, Any]) -> None:
                seen.append(record)
                update(len(seen), len(chosen), running_metric(seen))

            endpoints = [Endpoint(u, concurrency) for u in urls]
            outcome = run_eval_ray(
                chosen, job, endpoints, log, address=address or "local", on_record=on_record
            )
    except RayUnavailable as exc:
        _fail(exc, json_out)
    if outcome.lost:
        _err().print(f"{len(outcome.lost)} question(s) lost to worker failures: run again")
    return outcome.ran


def register(app: typer.Typer) -> None:
    """Add the `run` and `retrieval` commands to the given (eval) sub-app."""
    app.command("run", cls=PairCommand)(run_command)
    app.command("retrieval", cls=UsageCommand)(retrieval_command)  # fills its lazy help


if __name__ == "__main__":  # pragma: no cover - `python -m tablequest.cli.eval_run`
    _app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)
    register(_app)
    _app(sys.argv[1:])
