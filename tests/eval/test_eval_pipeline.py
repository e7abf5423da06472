"""`eval.pipeline`: the answering part of a run (``eval run``'s thread path, ``eval reproduce``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tablequest.eval.corpora import build_corpus
from tablequest.eval.datasets import load
from tablequest.eval.pipeline import answer_questions, prepared_answer, run_state_dir
from tablequest.eval.runner import RecordLog, RunSpec, trace_file
from tablequest.llm import Scripted
from tablequest.methods import get_method
from tablequest.trace import read_trace, run_trace_dir


def test_state_folder_sits_beside_the_records() -> None:
    assert run_state_dir(Path("/r/wtq.jsonl")) == Path("/r/wtq.state")
    assert run_state_dir(Path("r/run")) == Path("r/run.state")


def test_a_run_answers_once_traces_beside_its_records_and_resumes(
    evalrun_wtq: Path, tmp_path: Path
) -> None:
    ds = load("wtq", evalrun_wtq)
    corpus = build_corpus(ds, "csv", in_memory=True)
    spec = get_method("direct")
    run = RunSpec("wtq", "direct", "gold", "csv", "scripted")
    out = tmp_path / "run.jsonl"
    calls: list[int] = []

    def reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        calls.append(1)
        return json.dumps({"answer": "42", "evidence": []})

    questions = ds.questions[:3]
    seen: list[str] = []
    for expected in (3, 0):  # the second run finds every record and answers nothing
        with (
            prepared_answer(spec, spec.make_options({}), Scripted(reply), corpus, out) as answer,
            RecordLog(out, run) as log,
        ):
            seen.clear()
            ran = answer_questions(
                questions, answer, log, spec=run, corpus=corpus, out=out,
                on_record=lambda r: seen.append(r["id"]),
            )  # fmt: skip
        assert ran == expected and len(seen) == expected
    assert len(calls) == 3 and sorted(log.records) == sorted(q.id for q in questions)
    events = read_trace(trace_file(run_trace_dir(out), questions[0].id))
    assert any(e["kind"] == "llm_call" for e in events)
