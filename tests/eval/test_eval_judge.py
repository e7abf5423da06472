"""DTR's LLM-as-judge metrics: LLM-EVAL (RealHiTBench's judge protocol) and Win / Score Rate,
with scripted judges (hand-computed scores), position swapping, malformed replies, resuming,
and the `eval judge` command against the stub server."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tablequest.cli.eval_judge import judgment_path, register
from tablequest.eval.datasets import load
from tablequest.eval.metrics import judge_records, win_rate
from tablequest.eval.metrics.judge import (
    EVAL_PROMPTS,
    SCORE_REPAIR,
    JudgeError,
    JudgeItem,
    JudgeLog,
    eval_prompt,
    judge_items,
    parse_score,
    parse_verdicts,
    read_run,
)
from tablequest.llm import ParseError, Scripted
from tablequest.llm.stub import StubServer

FIXTURES = Path(__file__).parent / "fixtures"

# RealHiTBench inference/gpt_eval_prompt.py, Rudimentary_Analysis, as upstream has it
RUDIMENTARY = (
    "\nSuppose you are an expert in table analysis and your task is to rate the user answer on"
    " one metric based on the table content, question and corresponding reference answer.  \n"
    "You will be given table content and a question about rudimentary analysis of the table."
    " And the corresponding reference answer to a question and the answer from the user.  \n"
    "Your task is to rate the answer on one metric.  \n"
    "Please make sure you read and understand these instructions carefully. Please keep this"
    " document open while reviewing, and refer to it as needed.  \n"
    "Evaluation Criteria:  \n"
    "Correctness (1-100) - the answer should be as close as possible to the reference answer,"
    " with perfectly equal answers receiving full marks, smaller differences receiving higher"
    " marks, and larger differences receiving only lower marks.\n"
    "Evaluation Steps:  \n"
    "1. Read the table carefully and fully understand the contents of the table.\n"
    "2. Read the result and compare it to the reference answer and the table. Determine if the"
    " answer is correct and if not score it based on how different it is from the correct"
    " answer.\n"
    "3. Assign a score for correctness on a scale of 0 to 100, where 0 is the lowest and 100 is"
    " the highest based on the Evaluation Criteria.   \n"
    "Question:\n{Question}\nReference Answer:\n{Reference_Answer}\nUser Answer:\n{User_Answer}\n"
    "Emphasize: you need to make sure your final answer is formatted in this way: "
    "[Score]: xx/100\n"
)


def rec(qid: str, prediction: str | None, status: str = "answered", **extra: Any) -> dict[str, Any]:
    return {"id": qid, "question": f"question {qid}?", "prediction": prediction,
            "status": status, "gold": [f"gold {qid}"], "metrics": {"rouge_l": 0.5},
            "run": {"dataset": "realhitbench"}, **extra}  # fmt: skip


ITEMS = {
    "r": JudgeItem("Mean rate?", "5.80", "Rudimentary Analysis"),
    "s": JudgeItem("Summarise.", "Falling.", "Summary Analysis", table="<table>T</table>"),
    "p": JudgeItem("Next year?", "6.1", "Predictive Analysis"),
}


# -- prompts and parsing -------------------------------------------------------------------------
def test_the_judge_prompts_are_realhitbench_verbatim() -> None:
    assert EVAL_PROMPTS["Rudimentary Analysis"] == RUDIMENTARY
    assert EVAL_PROMPTS["Exploratory Analysis"] == RUDIMENTARY.replace("rudimentary", "exploratory")
    # Predictive's step 3 has no trailing spaces; Anomaly says "exploratory" and shows the table
    assert "Criteria.\nQuestion:" in EVAL_PROMPTS["Predictive Analysis"]
    assert "about exploratory analysis" in EVAL_PROMPTS["Anomaly Analysis"]
    assert "Criteria.   \nTable:\n{Table}\nQuestion:" in EVAL_PROMPTS["Summary Analysis"]
    assert "Coherence (1-100)" in EVAL_PROMPTS["Summary Analysis"]
    prompt = eval_prompt(ITEMS["s"], "It falls.")
    assert "<table>T</table>\nQuestion:\nSummarise.\nReference Answer:\nFalling." in prompt
    assert "User Answer:\nIt falls.\n" in prompt


def test_a_table_prompt_without_the_table_or_an_unknown_sub_type_is_refused() -> None:
    with pytest.raises(JudgeError, match="shows the table"):
        eval_prompt(JudgeItem("q", "r", "Anomaly Analysis"), "a")
    with pytest.raises(JudgeError, match="no LLM-EVAL prompt for sub-type 'Value-Matching'"):
        eval_prompt(JudgeItem("q", "r", "Value-Matching"), "a")


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Close to the reference.\n[Score]: 85/100", 85.0),
        ("Score: 72.5/100", 72.5),
        ("**[Score]:** 90/100", 90.0),
        ("[Score]: 40/100 at first, but on reflection [Score]: 60/100", 60.0),
        ("<think>[Score]: 10/100</think>[Score]: 70", 70.0),
        ("[Score]: 0/100", 0.0),
    ],
)
def test_parse_score_follows_realhitbench(reply: str, score: float) -> None:
    assert parse_score(reply) == score


@pytest.mark.parametrize(
    ("reply", "why"),
    [("A fine answer.", "no '\\[Score\\]"), ("[Score]: high", "no number"),
     ("[Score]: 150/100", "outside 0-100")],
)  # fmt: skip
def test_parse_score_rejects_replies_without_a_usable_score(reply: str, why: str) -> None:
    with pytest.raises(ParseError, match=why):
        parse_score(reply)


def test_parse_verdicts() -> None:
    reply = (
        'Here: {"accuracy": "a", "analysis_depth": "B", "feasibility": "Tie", "aesthetics": "A"}'
    )
    assert parse_verdicts(reply) == {
        "accuracy": "A", "analysis_depth": "B", "feasibility": "tie", "aesthetics": "A"
    }  # fmt: skip
    with pytest.raises(ParseError, match="'aesthetics' must be"):
        parse_verdicts('{"accuracy": "A", "analysis_depth": "B", "feasibility": "tie"}')
    with pytest.raises(ParseError):
        parse_verdicts("A is better overall.")


# -- LLM-EVAL ------------------------------------------------------------------------------------
def test_llm_eval_scores_repairs_and_averages() -> None:
    records = [rec("r", "5.8 and 1.6"), rec("s", "It falls."), rec("p", "6.0"),
               rec("x", None, status="failed")]  # fmt: skip
    items = {**ITEMS, "x": JudgeItem("q", "r", "Rudimentary Analysis")}
    judge = Scripted(["[Score]: 80/100", "Score: 60/100", "Looks right to me.", "[Score]: 90/100"])
    outcome = judge_records(records, judge, items=items)
    # the failed question is not sent: 0 by the runner's rule; mean (80 + 60 + 90 + 0) / 4
    summary = outcome.summary()
    assert summary["llm_eval"] == pytest.approx(57.5)
    assert summary["n"] == 4 and summary["n_no_answer"] == 1 and summary["n_judge_failed"] == 0
    assert summary["by_sub_type"]["Rudimentary Analysis"] == {"n": 2, "llm_eval": 40.0}
    assert [j["calls"] for j in outcome.judgments.values()] == [1, 1, 2, 0]
    assert len(judge.calls) == 4
    assert "User Answer:\n5.8 and 1.6\n" in judge.calls[0].prompt
    assert "Table:\n<table>T</table>" in judge.calls[1].prompt
    repair = judge.calls[3].messages
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert repair[1]["content"] == "Looks right to me." and repair[2]["content"] == SCORE_REPAIR
    assert judge.calls[0].params["temperature"] == 0.0
    by_id = {r["id"]: r for r in outcome.records}
    assert by_id["p"]["metrics"] == {"rouge_l": 0.5, "llm_eval": 90.0}
    assert by_id["x"]["metrics"]["llm_eval"] == 0.0 and by_id["x"]["judge"]["status"] == "no_answer"


def test_a_reply_still_malformed_after_one_repair_is_judge_failed_not_a_score() -> None:
    judge = Scripted(["[Score]: 50/100", "Very good.", "I'd say excellent."])
    outcome = judge_records([rec("r", "a"), rec("p", "b")], judge, items=ITEMS)
    failed = outcome.judgments["p"]
    assert failed["status"] == "judge_failed" and failed["score"] is None
    assert "no '[Score]: xx/100'" in failed["reason"] and failed["reply"] == "I'd say excellent."
    summary = outcome.summary()
    assert summary["llm_eval"] == 50.0 and summary["n"] == 1
    assert summary["n_judge_failed"] == 1 and list(summary["judge_failed"]) == ["p"]
    assert "llm_eval" not in {r["id"]: r for r in outcome.records}["p"]["metrics"]


def test_questions_without_a_prompt_are_not_judged_and_say_why() -> None:
    items = {
        "r": ITEMS["r"],
        "u": JudgeItem("q", "r", None),
        "a": JudgeItem("q", "r", "Anomaly Analysis"),
    }
    judge = Scripted(["[Score]: 70/100"])
    outcome = judge_records([rec("r", "a"), rec("u", "b"), rec("a", "c"), rec("z", "d")], judge,
                            items=items)  # fmt: skip
    assert list(outcome.judgments) == ["r"] and len(judge.calls) == 1
    reasons = outcome.summary()["not_judged"]
    assert "sub-type is unknown" in reasons["u"] and "shows the table" in reasons["a"]
    assert reasons["z"] == "no judge input for this question"


def test_llm_eval_resumes_and_a_new_judge_model_judges_again(tmp_path: Path) -> None:
    path = tmp_path / "run.judge.jsonl"
    records = [rec("r", "a"), rec("p", "b")]
    with JudgeLog(path) as log:
        judge_records(records, Scripted(["[Score]: 30/100", "[Score]: 50/100"]), items=ITEMS,
                      log=log)  # fmt: skip
    with path.open("ab") as fh:
        fh.write(b'{"id": "half')  # a run killed mid-write
    idle = Scripted([])  # any call would raise ScriptExhausted
    with JudgeLog(path) as log:
        again = judge_records(records, idle, items=ITEMS, log=log)
    assert idle.calls == [] and again.summary()["llm_eval"] == 40.0
    assert path.read_bytes().endswith(b"}\n")  # the partial line is gone
    other = Scripted(["[Score]: 100/100", "[Score]: 90/100"], model="judge-2")
    with JudgeLog(path) as log:
        second = judge_records(records, other, items=ITEMS, log=log)
    assert len(other.calls) == 2 and second.summary()["llm_eval"] == 95.0
    assert len(path.read_text().splitlines()) == 4


def test_judge_items_from_the_dataset_show_the_table(
    tmp_path: Path, realhitbench_tables: Callable[[Path], Path]
) -> None:
    root = tmp_path / "realhitbench"
    shutil.copytree(FIXTURES / "realhitbench", root)
    ds = load("realhitbench", realhitbench_tables(root))
    records = [rec("1", "1955"), rec("2", "It falls.")]
    items = judge_items(records, dataset=ds)
    assert items["1"].sub_type == "Value-Matching" and items["1"].table is None
    summary = items["2"]
    assert summary.sub_type == "Summary Analysis" and summary.reference == "Falling."
    assert summary.question == "question 2?" and "<table" in (summary.table or "")
    latex = root / "data" / "latex"
    latex.mkdir()
    (latex / "employment-table01.txt").write_text("\\begin{tabular} 1955 \\end{tabular}")
    assert judge_items(records, dataset=ds)["2"].table == "\\begin{tabular} 1955 \\end{tabular}"
    # without the dataset: the record's gold, and the sub-type given
    plain = judge_items([rec("2", "x")], sub_type="Predictive Analysis")["2"]
    assert plain.reference == "gold 2" and plain.sub_type == "Predictive Analysis"


# -- Win Rate / Score Rate -----------------------------------------------------------------------
def pair_judge(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """Prefers the answer that says "good"; with two or none, says "A" (position bias);
    feasibility is always a tie."""
    prompt = messages[-1]["content"]
    first = prompt.split("Answer A:\n")[1].split("\nAnswer B:")[0]
    second = prompt.split("Answer B:\n")[1].split("\n\nReply")[0]
    pick = "B" if "good" in second and "good" not in first else "A"
    return json.dumps({"accuracy": pick, "analysis_depth": pick, "feasibility": "tie",
                       "aesthetics": pick})  # fmt: skip


def test_win_and_score_rate_with_position_swapping() -> None:
    run_a = [rec("1", "good"), rec("2", "meh"), rec("3", "poor"), rec("4", None, "failed"),
             rec("5", "good"), rec("only-a", "good")]  # fmt: skip
    run_b = [rec("1", "poor"), rec("2", "meh too"), rec("3", "good"), rec("4", "fine"),
             rec("5", "also good"), rec("only-b", "x")]  # fmt: skip
    judge = Scripted(pair_judge)
    outcome = win_rate(run_a, run_b, judge)
    # 1: A good in both orders → win; 2 and 5: the judge says "A" whichever is shown first →
    # tie; 3: B good in both orders → loss; 4: A has no answer → loss, no call
    assert {q: j["outcome"]["accuracy"] for q, j in outcome.judgments.items()} == {
        "1": "win", "2": "tie", "3": "loss", "4": "loss", "5": "tie"
    }  # fmt: skip
    assert len(judge.calls) == 8  # two orders for 1, 2, 3, 5
    assert outcome.judgments["2"]["orders"] == [
        {"accuracy": "A", "analysis_depth": "A", "feasibility": "tie", "aesthetics": "A"},
        {"accuracy": "B", "analysis_depth": "B", "feasibility": "tie", "aesthetics": "B"},
    ]  # the second order's "A" (run B shown first) is B from run A's side
    assert "Answer A:\ngood\nAnswer B:\npoor" in judge.calls[0].prompt
    assert "Answer A:\npoor\nAnswer B:\ngood" in judge.calls[1].prompt
    summary = outcome.summary()
    acc = summary["dimensions"]["accuracy"]
    assert (acc["wins"], acc["ties"], acc["losses"], acc["n"]) == (1, 2, 2, 5)
    assert acc["win_rate"] == pytest.approx(20.0) and acc["score_rate"] == pytest.approx(40.0)
    feas = summary["dimensions"]["feasibility"]  # ties except question 4's loss
    assert (feas["wins"], feas["ties"], feas["losses"]) == (0, 4, 1)
    assert feas["win_rate"] == 0.0 and feas["score_rate"] == pytest.approx(40.0)
    assert summary["only_a"] == ["only-a"] and summary["only_b"] == ["only-b"]
    assert summary["n_no_answer"] == 1


def test_a_malformed_pair_reply_after_one_repair_is_left_out() -> None:
    ok = json.dumps(dict.fromkeys(("accuracy", "analysis_depth", "feasibility", "aesthetics"), "A"))
    judge = Scripted([ok, ok, ok, "B is nicer", '{"accuracy": "A"}'])
    outcome = win_rate([rec("1", "x"), rec("2", "y")], [rec("1", "u"), rec("2", "v")], judge)
    failed = outcome.judgments["2"]
    assert failed["status"] == "judge_failed" and failed["calls"] == 3
    assert (
        failed["reason"].startswith("order 2: ") and "'analysis_depth' must be" in failed["reason"]
    )
    summary = outcome.summary()
    assert summary["n"] == 1 and summary["n_judge_failed"] == 1
    assert summary["dimensions"]["accuracy"]["ties"] == 1  # "A" in both orders: a tie


def test_pairwise_resume(tmp_path: Path) -> None:
    path = tmp_path / "a.vs-b.judge.jsonl"
    a, b = [rec("1", "good")], [rec("1", "poor")]
    with JudgeLog(path) as log:
        first = win_rate(a, b, Scripted(pair_judge), log=log).summary()
    idle = Scripted([])
    with JudgeLog(path) as log:
        again = win_rate(a, b, idle, log=log).summary()
    assert idle.calls == [] and again["dimensions"] == first["dimensions"]
    assert again["dimensions"]["accuracy"]["win_rate"] == 100.0


def test_read_run_ignores_a_partial_line_and_names_bad_records(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps(rec("1", "a")) + "\n" + json.dumps(rec("1", "b")) + '\n{"id": ')
    assert [r["prediction"] for r in read_run(run)] == ["a"]
    assert run.read_text().endswith('{"id": ')  # reading never edits the run
    run.write_text('{"question": "no id"}\n')
    with pytest.raises(JudgeError, match=r"run\.jsonl:1: record without an 'id'"):
        read_run(run)


# -- the command ---------------------------------------------------------------------------------
def app() -> typer.Typer:
    eval_app = typer.Typer()
    eval_app.callback()(lambda: None)  # a group, so the command is called by its name
    register(eval_app)
    return eval_app


def _stub_judge(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    if "Answer A:" in prompt:
        return pair_judge(body["messages"], {})
    return "[Score]: 75/100" if "User Answer:\nIt falls." in prompt else "[Score]: 25/100"


def test_eval_judge_command_with_the_stub_server(
    tmp_path: Path, realhitbench_tables: Callable[[Path], Path]
) -> None:
    root = tmp_path / "realhitbench"
    shutil.copytree(FIXTURES / "realhitbench", root)
    realhitbench_tables(root)
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in
                           [rec("1", "1955"), rec("2", "It falls."), rec("3", "x")]))  # fmt: skip
    args = ["judge", str(run), "--data", str(root), "--model", "m", "--json", "--no-cache"]
    with StubServer(_stub_judge) as stub:
        res = CliRunner().invoke(app(), [*args, "--llm-url", stub.url])
        again = CliRunner().invoke(app(), [*args, "--llm-url", stub.url])
        calls = len([r for r in stub.requests if r["path"].endswith("/chat/completions")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["llm_eval"] == 75.0 and out["n"] == 1 and out["n_not_judged"] == 2
    assert out["judgments"] == str(tmp_path / "run.judge.jsonl")
    assert (tmp_path / "run.judge.report.md").read_text().count("| Summary Analysis | 1 | 75.00 |")
    assert json.loads(again.stdout)["llm_eval"] == 75.0 and calls == 1  # resumed, no new call


def test_eval_judge_against_another_run(tmp_path: Path) -> None:
    run, other = tmp_path / "dtr.jsonl", tmp_path / "base.jsonl"
    run.write_text(json.dumps(rec("1", "good")) + "\n" + json.dumps(rec("2", "poor")) + "\n")
    other.write_text(json.dumps(rec("1", "poor")) + "\n" + json.dumps(rec("2", "poor")) + "\n")
    with StubServer(_stub_judge) as stub:
        res = CliRunner().invoke(
            app(), ["judge", str(run), "--against", str(other), "--llm-url", stub.url,
                    "--model", "m"],
        )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "| accuracy | 1 | 1 | 0 | 50.00 | 75.00 |" in res.stdout
    assert judgment_path(run, other) == tmp_path / "dtr.vs-base.judge.jsonl"
    summary = json.loads((tmp_path / "dtr.vs-base.judge.report.json").read_text())
    assert summary["dimensions"]["aesthetics"]["score_rate"] == 75.0


def test_eval_judge_exit_statuses(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps(rec("2", "It falls.")) + "\n")
    runner = CliRunner()
    missing = runner.invoke(app(), ["judge", str(tmp_path / "nope.jsonl"), "--model", "m"])
    assert missing.exit_code == 2 and "cannot read the run" in missing.output
    bad = runner.invoke(app(), ["judge", str(run), "--prompt", "Deep Analysis"])
    assert bad.exit_code == 2 and "Rudimentary Analysis" in bad.output
    no_prompt = runner.invoke(app(), ["judge", str(run), "--model", "m", "--json"])
    assert no_prompt.exit_code == 2 and "--data" in json.loads(no_prompt.stdout)["error"]["message"]
    unconfigured = runner.invoke(app(), ["judge", str(run), "--prompt", "Predictive Analysis"])
    assert unconfigured.exit_code == 2
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"  # closed: connection refused
    down = runner.invoke(
        app(), ["judge", str(run), "--prompt", "Predictive Analysis", "--llm-url", url,
                "--model", "m", "--no-cache"],
    )  # fmt: skip
    assert down.exit_code == 1 and "run again to resume" in down.output
