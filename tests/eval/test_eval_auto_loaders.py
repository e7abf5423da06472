"""`eval run --method auto` on every benchmark loader: one record per question, with its route."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tablequest.eval.corpora import build_corpus
from tablequest.eval.datasets import DATASETS, load
from tablequest.eval.report import summarize, to_markdown
from tablequest.eval.runner import RecordLog, RunSpec, run_questions
from tablequest.eval.runs import build_answer
from tablequest.llm import Scripted
from tablequest.methods import get_method

FIXTURES = Path(__file__).parent / "fixtures"


def reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """A deterministic model: patterns from the question, select the first table, answer 1."""
    prompt = "\n".join(m["content"] for m in messages)
    if "grep patterns" in prompt and "Candidate tables" not in prompt:
        words = re.findall(r"[A-Za-z]{4,}", prompt.split("Question:")[-1])[:3]
        return json.dumps({"patterns": words or ["total"]})
    if "Candidate tables" in prompt:
        return json.dumps({"action": "select", "selected_tables": ["Table_0"]})
    return 'Final Answer: 1\n<answer>1</answer>\n{"status": "answered", "answer": "1"}'


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DATASETS))
def test_auto_runs_on_every_loader(
    name: str, tmp_path: Path, realhitbench_tables: Callable[[Path], Path]
) -> None:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    if name == "realhitbench":
        realhitbench_tables(root)
    ds = load(name, root)
    corpus = build_corpus(ds, "csv", in_memory=True)
    spec = get_method("auto")
    answer = build_answer(spec, spec.make_options({}), Scripted(reply), corpus)
    run = RunSpec(ds.name, "auto", "default", "csv", "scripted")
    questions = ds.questions[:2]
    with RecordLog(tmp_path / "auto.jsonl", run) as log:
        run_questions(questions, answer.fn, log, spec=run, corpus=corpus, gate=answer.gate,
                      trace_dir=tmp_path / "traces")  # fmt: skip
    answer.close()
    records = [log.records[q.id] for q in questions]
    assert all(r["status"] in ("answered", "insufficient", "mismatch", "failed") for r in records)
    assert all(r["metrics"] for r in records)
    routes = [r["breakdown"]["route"] for r in records]
    assert all(route in ("qa", "scope", "rag", "research", "none") for route in routes)
    text = to_markdown(summarize(records))
    assert "## By route" in text
