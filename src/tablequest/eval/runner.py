"""Resumable, concurrent evaluation runs: one JSON record per question, appended to a JSONL file.

Durability (ours): each record is one line written with a single `os.write` to a file opened
with O_APPEND, then fsync'd, so a record is either wholly on disk or not at all. On start the
file is read back; a trailing partial line (a run killed mid-write) is truncated away, the
ids found are skipped, so a run killed (even with SIGKILL) and restarted ends with every
question exactly once. Records carry the run's identity (`run`: dataset, method, config,
format, model); resuming into a file of another run is refused.

Concurrency: questions run on a thread pool. Methods, the corpus store (one DuckDB
connection) and its indexes are not meant for concurrent use, so a worker holds one shared
lock while it computes and releases it only while it waits for the LLM (`GatedLLM`): LLM
calls overlap, everything else runs one thread at a time.

Per-question metrics: `tablequest.eval.scoring` (each benchmark's answer metric on the item
list the method parsed from its own answer format, then retrieval: `r_all`, `r_final`,
`r_at_1`, `gr_all`, `gr_final`; a failed question scores 0 on all but `r_at_1`). Each record
also carries the method's LLM-free verdict on an answered result, `verified`, and its
one-line `verification` (None when not answered or not given); the report groups answers by
it (`eval.calibration`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablequest.errors import UsageError
from tablequest.eval.corpora import BuiltCorpus
from tablequest.eval.datasets import (
    QUESTION_FORMATS,
    Dataset,
    DatasetError,
    Question,
    parse_id_list,
    reload_questions,
)
from tablequest.eval.metrics import tabfact_label
from tablequest.eval.scoring import (
    answer_metrics,
    question_breakdown,
    realhitbench_metrics,
    score_question,
    split_items,
    unscored_reason,
    wtq_items_match,
)
from tablequest.llm import LLM, Completion, Message
from tablequest.methods import Result, Task
from tablequest.trace import Trace
from tablequest.waits import Turns

__all__ = [
    "AnswerFn",
    "Gate",
    "GatedLLM",
    "RecordLog",
    "RunSpec",
    "RunnerError",
    "answer_metrics",
    "question_breakdown",
    "question_record",
    "realhitbench_metrics",
    "run_questions",
    "score_question",
    "select_questions",
    "split_items",
    "task_of",
    "trace_file",
    "unscored_reason",
    "wtq_items_match",
]

AnswerFn = Callable[[Question, Trace], Result]


class RunnerError(UsageError):
    """A run cannot start or resume; the message names the file or option and the fix."""


@dataclass(frozen=True)
class RunSpec:
    """Identity of a run, stored in every record so resumed files stay homogeneous."""

    dataset: str
    method: str
    config: str
    format: str
    model: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "dataset": self.dataset,
            "method": self.method,
            "config": self.config,
            "format": self.format,
            "model": self.model,
        }


# -- question selection ------------------------------------------------------------------------
def select_questions(
    dataset: Dataset, *, ids_file: Path | None = None, limit: int | None = None
) -> list[Question]:
    """The dataset's questions, or those of `ids_file`, cut to the first `limit`.

    `ids_file` is either an id list — one question id per line (blank lines and `#` comments
    ignored) or a JSON list of ids; the dataset's questions with those ids, in its order — or
    a question file in the benchmark's own format (a WTQ TSV, a TabFact JSON object, JSON
    lines, …; see `parse_id_list`): its questions, read by the dataset's loader with the same
    root and options (`reload_questions`, which adds any table they need to `dataset`).

    Raises:
        RunnerError: unreadable file, unknown ids, a file that is neither an id list nor a
            question file of the benchmark, or a limit below 1.
    """
    questions = list(dataset.questions)
    if ids_file is not None:
        where = f"--questions {str(ids_file)!r}"
        fmt = QUESTION_FORMATS.get(dataset.name, "the benchmark's question file format")
        try:
            text = ids_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RunnerError(f"cannot read {where}: {exc}") from exc
        try:
            ids = parse_id_list(text)
        except ValueError as exc:
            raise RunnerError(f"{where} {exc}") from exc
        if ids is None:
            try:
                questions = reload_questions(dataset, ids_file)
            except DatasetError as exc:
                raise RunnerError(
                    f"{where} is not an id list, and cannot be read as {dataset.name} "
                    f"questions ({fmt}): {exc}"
                ) from exc
        else:
            by_id = {q.id: q for q in questions}
            unknown = [i for i in ids if i not in by_id]
            if unknown:
                raise RunnerError(
                    f"{where}: {len(unknown)} id(s) not in {dataset.name}: "
                    + ", ".join(unknown[:5])
                    + ("" if len(unknown) < len(ids) else f"; nor is it a question file ({fmt})")
                )
            questions = [by_id[i] for i in dict.fromkeys(ids)]
    if limit is not None:
        if limit < 1:
            raise RunnerError(f"--limit must be >= 1, got {limit}")
        questions = questions[:limit]
    if not questions:
        raise RunnerError(f"{dataset.name}: no questions selected")
    return questions


# -- the record file ---------------------------------------------------------------------------
class RecordLog:
    """An append-only JSONL file of run records that survives being killed (see module doc)."""

    def __init__(self, path: Path, spec: RunSpec | None = None) -> None:
        self.path = path
        self.records: dict[str, dict[str, Any]] = {}
        self.truncated = 0
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._recover(spec)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _recover(self, spec: RunSpec | None) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a partial last line: the write it belonged to never finished
            with open(self.path, "r+b") as fh:
                fh.truncate(end)
                fh.flush()
                os.fsync(fh.fileno())
            self.truncated = len(data) - end
        for lineno, line in enumerate(data[:end].split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise RunnerError(
                    f"{self.path}:{lineno} is not a JSON record ({exc}); the file is not a "
                    "tablequest run (or was edited): pass another --out"
                ) from exc
            if not isinstance(record, dict) or "id" not in record:
                raise RunnerError(f"{self.path}:{lineno}: record without an 'id'")
            if spec is not None and record.get("run") != spec.to_json():
                raise RunnerError(
                    f"{str(self.path)!r} holds records of another run ({record.get('run')}); "
                    f"this run is {spec.to_json()}: pass another --out"
                )
            self.records.setdefault(str(record["id"]), record)

    @property
    def done(self) -> set[str]:
        with self._lock:
            return set(self.records)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line (single write, O_APPEND) and fsync it."""
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            view = memoryview(line)
            while view:  # regular files take the whole buffer; loop only for safety
                written = os.write(self._fd, view)
                view = view[written:]
            os.fsync(self._fd)
            self.records.setdefault(str(record["id"]), record)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- one lock for everything but LLM waits -----------------------------------------------------
class Gate(Turns):
    """One lock: held while a worker computes (`held`), released while it waits for the LLM
    (`released`). One turn of `tablequest.waits.Turns`."""

    def __init__(self) -> None:
        super().__init__(1)

    def held(self) -> contextlib.AbstractContextManager[None]:
        """Hold the lock for the block."""
        return self.turn()

    def released(self) -> contextlib.AbstractContextManager[None]:
        """Release the lock for the block if this thread holds it (else a no-op)."""
        return self.waiting()


class GatedLLM(LLM):
    """Releases the runner's compute lock while the inner model answers."""

    def __init__(self, inner: LLM, gate: Gate | None = None) -> None:
        self.inner = inner
        self.gate = gate or Gate()

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def context_length(self) -> int | None:
        return self.inner.context_length()

    def close(self) -> None:
        self.inner.close()

    def discard(self, reply: Completion) -> None:
        self.inner.discard(reply)

    def chat(self, messages: Sequence[Message], **params: Any) -> list[Completion]:
        with self.gate.released():
            return self.inner.chat(messages, **params)


def question_record(
    spec: RunSpec,
    q: Question,
    result: Result,
    corpus: BuiltCorpus,
    seconds: float,
    error: str | None,
) -> dict[str, Any]:
    """The run-file record of one answered question (metrics, usage, tables, identity)."""

    def key(tid: Any) -> Any:
        return corpus.key_of(tid) or tid if isinstance(tid, str) else tid

    details = result.details
    record: dict[str, Any] = {
        "id": q.id,
        "question": q.question,
        "prediction": result.answer,
        "status": result.status,
        "verified": result.verified if result.status == "answered" else None,
        "verification": result.verification if result.status == "answered" else None,
        "gold": q.answers,
        "gold_tables": q.gold_table_ids,
        "metrics": score_question(spec.dataset, q, result, corpus),
        "usage": result.usage.to_dict(),
        "steps": result.steps,
        "actions": dict(details.get("action_counts", {})),
        "rounds_top1": [key(t) for t in details.get("rounds_top1", [])],
        "tables_consulted": [key(t) for t in result.tables_consulted],
        "final_table": key(result.final_table),
        "trace": result.trace_path,
        "breakdown": question_breakdown(spec.dataset, q, result),
        "subtable": details.get("subtable"),
        "seconds": round(seconds, 3),
        "run": spec.to_json(),
    }
    if q.group:
        record["group"] = q.group
    if q.task == "fact_verification":
        record["supported"] = tabfact_label(q.answers[0]) is True if q.answers else False
    if result.status != "answered" and result.reason:
        record["reason"] = result.reason
    if stopped_by := result.typed_details.get("stopped_by"):
        record["stopped_by"] = stopped_by
    if unscored := unscored_reason(spec.dataset, q):
        record["unscored"] = unscored
    if error:
        record["error"] = error
    return record


def trace_file(trace_dir: Path, qid: str) -> Path:
    """The trace file of one question: a safe name plus a hash of the id (no collisions)."""
    safe = re.sub(r"[^\w.-]+", "_", qid)[:80]
    return trace_dir / f"{safe}-{hashlib.sha1(qid.encode()).hexdigest()[:8]}.jsonl"


def run_questions(
    questions: Sequence[Question],
    answer: AnswerFn,
    log: RecordLog,
    *,
    spec: RunSpec,
    corpus: BuiltCorpus,
    gate: Gate,
    concurrency: int = 1,
    trace_dir: Path | None = None,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> int:
    """Answer every question not yet in `log`; return how many were run now.

    `answer(question, trace)` must make its LLM calls through a `GatedLLM` built on `gate`.
    An exception inside `answer` becomes a "failed" record with the error (and a trace event),
    never a crash of the run.
    """
    if concurrency < 1:
        raise RunnerError(f"--concurrency must be >= 1, got {concurrency}")
    done = log.done
    pending = [q for q in questions if q.id not in done]

    def work(q: Question) -> dict[str, Any]:
        path = trace_file(trace_dir, q.id) if trace_dir is not None else None
        if path is not None:
            path.unlink(missing_ok=True)  # a run killed mid-question left a partial trace
        trace = Trace(path)
        start = time.monotonic()
        error = None
        with gate.held():
            try:
                result = answer(q, trace)
            except Exception as exc:  # recorded, never a traceback
                error = f"{type(exc).__name__}: {exc}"
                trace.event(
                    "error", stage="eval", error=error, traceback=traceback.format_exc(limit=8)
                )
                result = Result(
                    answer=None, status="failed", trace_path=str(path) if path else None
                )
            record = question_record(spec, q, result, corpus, time.monotonic() - start, error)
        log.append(record)
        return record

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(work, q) for q in pending]
        for future in as_completed(futures):
            record = future.result()
            if on_record is not None:
                on_record(record)
    return len(pending)


def task_of(q: Question) -> Task:
    """The method task for a benchmark question (free-form answers are table QA)."""
    return "fact_verification" if q.task == "fact_verification" else "tableqa"
