"""Calibration in evaluation (issue 36, must 5): run records carry `verified` and the report
gives count, EM and F1 per verified bucket — hand-built records, old run files, a stub run."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from tablequest.cli import eval_run
from tablequest.eval.calibration import calibration, calibration_lines, verified_bucket
from tablequest.eval.corpora import build_corpus
from tablequest.eval.datasets import Question, load
from tablequest.eval.report import summarize, to_markdown
from tablequest.eval.runner import Gate, RecordLog, RunSpec, run_questions
from tablequest.llm import StubServer
from tablequest.methods.result import Result, Verified
from tablequest.trace import Trace


def rec(qid: str, status: str, em: float, f1: float, **extra: Any) -> dict[str, Any]:
    return {"id": qid, "status": status, "metrics": {"em": em, "f1": f1, "r_all": 1.0}, **extra}


HAND_BUILT = [
    rec("a", "answered", 1.0, 1.0, verified="verified", verification="205 equals its cell"),
    rec("b", "answered", 1.0, 1.0, verified="verified"),
    rec("c", "answered", 0.0, 0.5, verified="verified"),
    rec("d", "answered", 1.0, 1.0, verified="unverified"),
    rec("e", "answered", 0.0, 0.0, verified="contradicted"),
    rec("f", "answered", 1.0, 1.0, verified=None),  # a method that gives no verdict
    rec("g", "answered", 0.0, 0.25),  # a record written before the field existed
    rec("h", "failed", 0.0, 0.0, verified=None, reason="deadline"),
    rec("i", "insufficient", 0.0, 0.0),
]


def test_buckets_count_em_and_f1_of_hand_built_records() -> None:
    assert [verified_bucket(r) for r in HAND_BUILT] == [
        "verified", "verified", "verified", "unverified", "contradicted", "none",
        "not_recorded", "not_answered", "not_answered",
    ]  # fmt: skip
    cal = calibration(HAND_BUILT)
    buckets = cal["buckets"]
    assert list(buckets) == [
        "verified", "unverified", "contradicted", "none", "not_recorded", "not_answered",
    ]  # fmt: skip
    assert {b: v["n"] for b, v in buckets.items()} == {
        "verified": 3, "unverified": 1, "contradicted": 1, "none": 1, "not_recorded": 1,
        "not_answered": 2,
    }  # fmt: skip
    verified = buckets["verified"]
    assert verified["metrics"]["em"] == 2 / 3 and verified["metrics"]["f1"] == 2.5 / 3
    assert verified["share"] == 3 / 9 and set(verified["metrics"]) == {"em", "f1"}
    assert buckets["unverified"]["metrics"] == {"em": 1.0, "f1": 1.0}
    assert buckets["contradicted"]["metrics"] == {"em": 0.0, "f1": 0.0}
    assert buckets["not_recorded"]["metrics"] == {"em": 0.0, "f1": 0.25}
    assert cal["verified_right"] == {"metric": "em", "value": 2 / 3, "n": 3}
    lines = calibration_lines(cal)
    assert "| verified | n | share | EM | F1 |" in lines
    assert "| verified | 3 | 0.333 | 0.667 | 0.833 |" in lines
    assert "| not recorded | 1 | 0.111 | 0.000 | 0.250 |" in lines
    assert lines[-3] == "Verified answers right: EM 0.667 over 3."
    assert lines[-1].startswith("none: answered without a verdict from the method; not recorded")


def test_old_run_files_report_with_every_verdict_shown() -> None:
    old = [r for r in HAND_BUILT if "verified" not in r]  # g and i
    summary = summarize(old)
    buckets = summary["calibration"]["buckets"]
    assert {b: v["n"] for b, v in buckets.items()} == {
        "verified": 0, "unverified": 0, "contradicted": 0, "not_recorded": 1, "not_answered": 1,
    }  # fmt: skip
    assert buckets["verified"]["metrics"] == {"em": None, "f1": None}
    assert summary["calibration"]["verified_right"]["value"] is None
    text = to_markdown(summary)
    assert "## Calibration (answers by verified)" in text
    assert "| verified | 0 | 0.000 | – | – |" in text and "No answer was verified" in text


def test_records_carry_the_methods_verdict(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    corpus = build_corpus(ds, "csv", in_memory=True)
    spec = RunSpec("wtq", "direct", "gold", "csv", "scripted")
    verdicts: list[tuple[Verified, str]] = [
        ("verified", "1 equals its cell"),
        ("contradicted", "the cell holds 2"),
    ]

    def answer(q: Question, trace: Trace) -> Result:
        i = int(q.id.split("-")[1])
        if i == 2:  # a method's stray verdict on an unanswered result is not recorded
            return Result(answer=None, status="failed", verified="verified", verification="x")
        verified, why = verdicts[i]
        return Result(answer="1", status="answered", verified=verified, verification=why)

    with RecordLog(tmp_path / "r.jsonl", spec) as log:
        run_questions(ds.questions[:3], answer, log, spec=spec, corpus=corpus, gate=Gate())
    got = {r["id"]: (r["verified"], r["verification"]) for r in log.records.values()}
    assert got == {
        "nu-0": ("verified", "1 equals its cell"),
        "nu-1": ("contradicted", "the cell holds 2"),
        "nu-2": (None, None),
    }
    reread = RecordLog(tmp_path / "r.jsonl", spec)
    reread.close()
    assert [verified_bucket(r) for r in reread.records.values()].count("not_answered") == 1


RUN = {"dataset": "wtq", "method": "direct", "config": "gold", "format": "csv",
       "model": "stub-model"}  # fmt: skip
ANSWERS = {"what was the score against the wanderers?": "2-1",  # wrong (nu-4)
           "how high is the eiger?": "3,967"}  # fmt: skip


def reply(body: dict[str, Any]) -> str:
    match = re.search(r"Question: (.*)", str(body["messages"][-1]["content"]))
    question = match.group(1).strip() if match else ""
    return json.dumps({"answer": ANSWERS.get(question, "?"), "evidence": []})


def test_cli_run_reports_calibration_of_resumed_old_and_new_records(
    evalrun_wtq: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run.jsonl"
    earlier = [  # four questions already in the run file, one from before the field existed
        {"id": "nu-0", "status": "answered", "verified": "verified", "metrics": {"em": 1.0}},
        {"id": "nu-1", "status": "answered", "verified": "verified", "metrics": {"em": 0.0}},
        {"id": "nu-2", "status": "answered", "verified": "contradicted", "metrics": {"em": 0.0}},
        {"id": "nu-3", "status": "answered", "metrics": {"em": 1.0}},
    ]
    out.write_text("".join(json.dumps({**r, "run": RUN}) + "\n" for r in earlier), "utf-8")
    cli = typer.Typer()
    eval_run.register(cli)
    with StubServer(reply, model="stub-model") as stub:
        args = ["run", "wtq", "--data", str(evalrun_wtq), "--method", "direct", "--out",
                str(out), "--llm-url", stub.url, "--model", "stub-model", "--no-cache",
                "--cache-dir", str(tmp_path / "c"), "--limit", "6"]  # fmt: skip
        done = CliRunner().invoke(cli, [*args, "--json"])
        assert done.exit_code == 0, done.output
        text = CliRunner().invoke(cli, args)  # resumed: nothing runs, the report is printed
    assert text.exit_code == 0, text.output
    payload = json.loads(done.stdout)
    assert payload["ran"] == 2 and payload["n"] == 6
    new = [json.loads(line) for line in out.read_text("utf-8").splitlines()[4:]]
    assert [r["id"] for r in sorted(new, key=lambda r: r["id"])] == ["nu-4", "nu-5"]
    assert all("verified" in r and "verification" in r for r in new)  # never "not recorded"
    assert {r["id"]: r["metrics"]["em"] for r in new} == {"nu-4": 0.0, "nu-5": 1.0}
    expected = Counter({"verified": 2, "contradicted": 1, "not_recorded": 1})
    expected.update(verified_bucket(r) for r in new)
    buckets = payload["calibration"]["buckets"]
    assert {b: v["n"] for b, v in buckets.items() if v["n"]} == dict(expected)
    assert buckets["contradicted"]["metrics"]["em"] == 0.0
    assert buckets["not_recorded"] == {"n": 1, "share": 1 / 6, "metrics": {"em": 1.0}}
    right = payload["calibration"]["verified_right"]
    new_verified = [r["metrics"]["em"] for r in new if r["verified"] == "verified"]
    assert right["n"] == 2 + len(new_verified)
    assert right["value"] == (1.0 + sum(new_verified)) / right["n"]
    assert "0 run now, 6 resumed" in text.stdout
    assert "## Calibration (answers by verified)" in text.stdout
    assert "| not recorded | 1 | 0.167 | 1.000 |" in text.stdout
    assert f"Verified answers right: EM {right['value']:.3f} over {right['n']}." in text.stdout
