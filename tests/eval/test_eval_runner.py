"""The evaluation runner: records, metrics, resume, concurrency gate, methods, CLI."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tablequest.cli import eval_run
from tablequest.errors import BadValue
from tablequest.eval.corpora import BuiltCorpus, build_corpus
from tablequest.eval.datasets import Dataset, Question, load
from tablequest.eval.report import report_paths, write_report
from tablequest.eval.runner import (
    Gate,
    GatedLLM,
    RecordLog,
    RunnerError,
    RunSpec,
    answer_metrics,
    run_questions,
    select_questions,
    split_items,
    trace_file,
)
from tablequest.eval.runs import Answerer, build_answer, running_metric
from tablequest.llm import LLM, Completion, Message, Scripted, StubServer
from tablequest.methods import OptionError, UnknownMethod, get_method
from tablequest.methods.result import Result
from tablequest.trace import Trace, read_trace

ANSWERS = {
    "which league did the rochester rhinos play in 2005?": "USL First Division",
    "what is the population of zurich?": "415,367",
    "how many gold medals did germany win?": "12",
    "who directed stalker?": "Andrei Tarkovsky",
    "what was the score against the wanderers?": "2-1",  # wrong on purpose
    "how high is the eiger?": "3,967",
    "which films did akira kurosawa direct?": "Ran",
    "which city is in norway?": "Oslo",
    "which nation won 14 bronze medals?": "Canada",
    "what range is triglav in?": "Julian Alps (Slovenia)",
    "who played the harriers and corinthians?": "Corinthians | Harriers",
    "how many fans saw the rhinos in 2004?": "5,628",
}


def oracle(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    prompt = messages[-1]["content"]
    match = re.search(r"Question: (.*)", prompt)
    question = match.group(1).strip() if match else ""
    return json.dumps({"answer": ANSWERS.get(question, "?"), "evidence": []})


def setup(root: Path, fmt: str = "csv") -> tuple[Dataset, BuiltCorpus]:
    ds = load("wtq", root)
    return ds, build_corpus(ds, fmt, in_memory=True)


def spec(method: str = "direct", config: str = "gold") -> RunSpec:
    return RunSpec("wtq", method, config, "csv", "scripted")


def build(method: str, options: dict[str, Any], llm: Any, corpus: BuiltCorpus) -> Answerer:
    spec = get_method(method)
    return build_answer(spec, spec.make_options(options), llm, corpus)


def run_direct(
    ds: Dataset, corpus: BuiltCorpus, out: Path, *, concurrency: int = 1, llm: Any = None
) -> tuple[RecordLog, int]:
    answer = build("direct", {}, llm or Scripted(oracle), corpus)
    log = RecordLog(out, spec())
    ran = run_questions(
        ds.questions,
        answer.fn,
        log,
        spec=spec(),
        corpus=corpus,
        gate=answer.gate,
        concurrency=concurrency,
        trace_dir=out.with_suffix(".traces"),
    )
    log.close()
    return log, ran


def test_direct_run_writes_one_scored_record_per_question(
    evalrun_wtq: Path, tmp_path: Path
) -> None:
    ds, corpus = setup(evalrun_wtq)
    out = tmp_path / "runs" / "direct.jsonl"
    _, ran = run_direct(ds, corpus, out, concurrency=3)
    assert ran == 12
    lines = out.read_text(encoding="utf-8").splitlines()
    records = {r["id"]: r for r in map(json.loads, lines)}
    assert len(lines) == 12 and set(records) == {q.id for q in ds.questions}
    r0 = records["nu-0"]
    assert r0["prediction"] == "USL First Division" and r0["status"] == "answered"
    assert r0["metrics"] == {"em": 1.0, "r_all": 1.0, "r_final": 1.0}
    assert r0["gold_tables"] == ["csv/200-csv/0.csv"]
    assert r0["tables_consulted"] == ["csv/200-csv/0.csv"]  # keys, not store ids
    assert r0["usage"]["calls"] == 1 and r0["steps"] == 1 and r0["actions"] == {"qa": 1}
    assert r0["run"] == spec().to_json()
    assert read_trace(r0["trace"])[0]["kind"] == "llm_call"
    em = {qid: r["metrics"]["em"] for qid, r in records.items()}
    assert em["nu-4"] == 0.0  # wrong answer
    assert em["nu-9"] == 1.0  # parenthesized detail dropped (official rules)
    assert em["nu-10"] == 1.0  # list in another order
    assert sum(em.values()) == 11
    md, js = write_report(out, records.values())
    assert (md, js) == report_paths(out)
    text = md.read_text(encoding="utf-8")
    assert "| Direct QA (gold) | gold | csv | 1.000 | 0.917 |" in text
    assert json.loads(js.read_text())["metrics"]["em"] == pytest.approx(11 / 12)
    assert running_metric(list(records.values())) == "em 0.917"


def test_resume_skips_done_questions(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds, corpus = setup(evalrun_wtq)
    out = tmp_path / "r.jsonl"
    first = Scripted(oracle)
    answer = build("direct", {}, first, corpus)
    with RecordLog(out, spec()) as log:
        run_questions(
            ds.questions[:5], answer.fn, log, spec=spec(), corpus=corpus, gate=answer.gate
        )
    before = out.read_bytes()
    llm = Scripted(oracle)
    _, ran = run_direct(ds, corpus, out, llm=llm)
    assert ran == 7 and len(llm.calls) == 7
    assert out.read_bytes().startswith(before)
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == sorted(q.id for q in ds.questions) and len(ids) == 12
    _, again = run_direct(ds, corpus, out, llm=Scripted([]))
    assert again == 0


def test_record_log_recovers_from_a_partial_line(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    good = [json.dumps({"id": f"q{i}", "run": spec().to_json(), "metrics": {}}) for i in (1, 2)]
    out.write_bytes(("\n".join(good) + "\n").encode() + b'{"id": "q3", "run": {"data')
    log = RecordLog(out, spec())
    assert log.done == {"q1", "q2"} and log.truncated > 0
    log.append({"id": "q3", "run": spec().to_json(), "metrics": {}})
    log.close()
    lines = out.read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["q1", "q2", "q3"]


def test_record_log_refuses_foreign_or_broken_files(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps({"id": "q1", "run": spec("seek", "5step").to_json()}) + "\n")
    with pytest.raises(RunnerError, match="another run"):
        RecordLog(out, spec())
    out.write_text('{"id": "q1"}\nnot json\n{"id": "q2"}\n')
    with pytest.raises(RunnerError, match=r"r.jsonl:2 is not a JSON record"):
        RecordLog(out)
    out.write_text('["q1"]\n')
    with pytest.raises(RunnerError, match="without an 'id'"):
        RecordLog(out)
    out.write_text('{"id": "q1"}\n{"id": "q1", "x": 2}\n')
    assert RecordLog(out).records["q1"] == {"id": "q1"}  # the first copy wins


def test_select_questions(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds = load("wtq", evalrun_wtq)
    ids = tmp_path / "ids.txt"
    ids.write_text("# chosen\nnu-3\n\nnu-1\nnu-3\n")
    assert [q.id for q in select_questions(ds, ids_file=ids)] == ["nu-3", "nu-1"]
    ids.write_text('["nu-5", "nu-0", "nu-2"]')
    assert [q.id for q in select_questions(ds, ids_file=ids, limit=2)] == ["nu-5", "nu-0"]
    assert len(select_questions(ds, limit=4)) == 4
    ids.write_text("nu-1\nnope\n")
    with pytest.raises(RunnerError, match="1 id\\(s\\) not in wtq: nope"):
        select_questions(ds, ids_file=ids)
    ids.write_text("[not json")
    with pytest.raises(RunnerError, match="not a JSON list"):
        select_questions(ds, ids_file=ids)
    with pytest.raises(RunnerError, match="cannot read"):
        select_questions(ds, ids_file=tmp_path / "missing.txt")
    with pytest.raises(RunnerError, match="--limit must be"):
        select_questions(ds, limit=0)
    ids.write_text("# nothing\n")
    with pytest.raises(RunnerError, match="no questions selected"):
        select_questions(ds, ids_file=ids)


def test_a_crashing_question_becomes_a_failed_record(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds, corpus = setup(evalrun_wtq)
    gate = Gate()

    def answer(q: Question, trace: Trace) -> Result:
        if q.id == "nu-2":
            raise RuntimeError("boom")
        return Result(answer=ANSWERS[q.question], status="answered")

    out = tmp_path / "r.jsonl"
    with RecordLog(out, spec()) as log:
        with pytest.raises(RunnerError, match="concurrency"):
            run_questions(
                ds.questions, answer, log, spec=spec(), corpus=corpus, gate=gate, concurrency=0
            )
        seen: list[str] = []
        run_questions(
            ds.questions[:3],
            answer,
            log,
            spec=spec(),
            corpus=corpus,
            gate=gate,
            trace_dir=tmp_path / "t",
            on_record=lambda r: seen.append(r["id"]),
        )
    assert sorted(seen) == ["nu-0", "nu-1", "nu-2"]
    failed = log.records["nu-2"]
    assert failed["status"] == "failed" and failed["error"] == "RuntimeError: boom"
    assert failed["metrics"]["em"] == 0.0 and failed["metrics"]["r_all"] == 0.0
    events = read_trace(trace_file(tmp_path / "t", "nu-2"))
    assert events[0]["kind"] == "error" and "boom" in events[0]["error"]


def test_gate_overlaps_llm_waits_but_never_compute(evalrun_wtq: Path) -> None:
    ds, corpus = setup(evalrun_wtq)
    gate = Gate()
    active = 0
    overlaps: list[int] = []
    lock = threading.Lock()

    llm = GatedLLM(SlowLLM(), gate)
    assert llm.describe()["backend"] == "slow"

    def compute() -> None:
        nonlocal active
        with lock:
            active += 1
            overlaps.append(active)
        time.sleep(0.01)
        with lock:
            active -= 1

    def answer(q: Question, trace: Trace) -> Result:
        compute()
        text = llm.chat([{"role": "user", "content": q.question}])[0].text
        compute()
        return Result(answer=text, status="answered")

    started = time.monotonic()
    with _NullLog() as log:
        run_questions(
            ds.questions[:6], answer, log, spec=spec(), corpus=corpus, gate=gate, concurrency=6
        )
    elapsed = time.monotonic() - started
    assert max(overlaps) == 1  # compute sections never overlap
    assert elapsed < 6 * 0.3 * 0.6  # LLM waits do
    assert len(log.records) == 6
    assert llm.chat([{"role": "user", "content": "outside"}])[0].text == "ok"  # no gate held
    llm.close()


class SlowLLM(LLM):
    """Answers "ok" after 0.3 s, holding no lock (Scripted serializes its reply function)."""

    def describe(self) -> dict[str, str]:
        return {"backend": "slow", "url": "slow://", "model": "slow"}

    def chat(self, messages: Sequence[Message], **params: Any) -> list[Completion]:
        time.sleep(0.3)
        return [Completion(text="ok")]


class _NullLog(RecordLog):
    """A RecordLog in a throw-away directory."""

    def __init__(self) -> None:
        import tempfile

        self._dir = tempfile.TemporaryDirectory()
        super().__init__(Path(self._dir.name) / "r.jsonl")

    def close(self) -> None:
        super().close()
        self._dir.cleanup()


def test_seek_run_records_actions_and_rounds(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds, corpus = setup(evalrun_wtq, "markdown")
    llm = Scripted(
        [
            json.dumps({"patterns": ["Eiger", "Height"]}),
            json.dumps({"action": "select", "selected_tables": ["Table_0"]}),
            json.dumps({"status": "answered", "answer": "3,967", "evidence": []}),
        ]
    )
    answer = build("seek", {"max_steps": 5}, llm, corpus)
    s = RunSpec("wtq", "seek", get_method("seek").make_options({}).label(), "markdown")
    q = next(q for q in ds.questions if q.id == "nu-5")
    with RecordLog(tmp_path / "s.jsonl", s) as log:
        run_questions([q], answer.fn, log, spec=s, corpus=corpus, gate=answer.gate)
    record = log.records["nu-5"]
    assert record["metrics"]["em"] == 1.0 and record["metrics"]["r_all"] == 1.0
    assert record["steps"] == 3
    assert record["actions"] == {"pattern_gen": 1, "refine": 1, "refine_select": 1, "qa": 1}
    assert record["rounds_top1"] == ["csv/201-csv/2.csv"]
    assert s.config == "5step-5s1-small"


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid"])
def test_retrieve_then_qa_baselines(evalrun_wtq: Path, tmp_path: Path, method: str) -> None:
    ds, corpus = setup(evalrun_wtq)
    spec = get_method(method)
    values: dict[str, Any] = {"top_k": 2} | ({} if method == "bm25" else {"encoder": "hash"})
    options = spec.make_options(values)
    answer = build_answer(spec, options, Scripted(oracle), corpus)
    s = RunSpec("wtq", method, options.label(), "csv")
    with RecordLog(tmp_path / f"{method}.jsonl", s) as log:
        run_questions(ds.questions, answer.fn, log, spec=s, corpus=corpus, gate=answer.gate)
    records = list(log.records.values())
    assert all("r_at_1" in r["metrics"] for r in records)
    assert all(len(r["tables_consulted"]) <= 2 for r in records)
    if method == "bm25":
        assert s.config == "top-2"
        assert sum(r["metrics"]["r_at_1"] for r in records) >= 9
    else:
        assert s.config == "hash top-2"


def test_method_options_validation(evalrun_wtq: Path) -> None:
    _, corpus = setup(evalrun_wtq)
    with pytest.raises(UnknownMethod, match="unknown method 'oracle'"):
        get_method("oracle")
    with pytest.raises(OptionError, match="option 'top_k' of method dense"):
        get_method("dense").make_options({"top_k": "0"})
    with pytest.raises(OptionError, match="option 'strategy' of method seek"):
        get_method("seek").make_options({"strategy": "7s2"})
    with pytest.raises(BadValue, match="rerank needs a server"):
        build("rerank", {"encoder": "hash"}, Scripted([]), corpus)
    seek, rerank = get_method("seek"), get_method("rerank")
    names = {
        seek.make_options(
            {"max_steps": 10, "refine": False}
        ).label(): "10step-5s1-small w/o refine",
        seek.make_options({"match_only": True}).label(): "5step-5s1-small match-only",
        seek.make_options({"match_only_qa": True}).label(): "5step-5s1-small match-only QA",
        rerank.make_options({"rerank_model": "r4b"}).label(): "minilm+r4b pool-5 top-1",
        get_method("direct").make_options({}).label(): "gold",
    }
    assert all(got == want for got, want in names.items()), names


def test_rerank_run_against_a_stub_without_rerank(evalrun_wtq: Path, tmp_path: Path) -> None:
    ds, corpus = setup(evalrun_wtq)
    with StubServer(default_reply="{}", rerank=False) as stub:
        values = {"encoder": "hash", "rerank_url": stub.url, "rerank_model": "r"}
        answer = build("rerank", values, Scripted(oracle), corpus)
        s = RunSpec("wtq", "rerank", "hash+r", "csv")
        with RecordLog(tmp_path / "r.jsonl", s) as log:
            run_questions(ds.questions[:1], answer.fn, log, spec=s, corpus=corpus, gate=answer.gate)
    (record,) = log.records.values()
    assert record["status"] == "failed" and "rerank request" in record["error"]


def test_answer_metrics_per_dataset() -> None:
    def q(**kw: Any) -> Question:
        base: dict[str, Any] = dict(id="x", question="?", answers=["a"], gold_table_ids=["t"])
        return Question(**{**base, **kw})

    fact = q(answers=["true"], task="fact_verification")
    assert answer_metrics("tabfact", fact, "True") == {"acc": 1.0}
    assert answer_metrics("tabfact", fact, None) == {"acc": 0.0}
    tcr = q(answers=["35156", "B-2"])
    got = answer_metrics("tcrbench", tcr, "35156.0 | B-2")
    # TCR-Bench's number rule: "35156.0" is the number 35156; "|" is punctuation
    assert got["list_f1"] == 1.0 and got["f1"] == 1.0
    # "35156.5" ≠ 35156: 1 of 2 tokens on each side, P = R = F1 = 0.5
    assert answer_metrics("tcrbench", tcr, "35156.5 | B-2")["f1"] == 0.5
    assert answer_metrics("tcrbench", tcr, None) == {"f1": 0.0, "list_f1": 0.0}
    free = q(answers=["The cat sat on the mat."], task="free_form")
    scores = answer_metrics("fetaqa", free, "The cat sat on the mat.")
    assert scores["rouge_l"] == pytest.approx(1.0) and scores["bleu"] > 90
    assert answer_metrics("fetaqa", free, None) == {"rouge_l": 0.0, "bleu": 0.0}
    assert answer_metrics("hitab", q(answers=["12.0"]), "12") == {"em": 1.0, "f1": 0.0}
    assert answer_metrics("wtq+siblings2", q(answers=["Oslo"]), "oslo")["em"] == 1.0
    assert split_items(" a | b |") == ["a", "b"] and split_items(None) == []
    assert running_metric([{"metrics": {"r_all": 1.0}}]) == ""


runner = CliRunner()


def cli() -> typer.Typer:
    app = typer.Typer()
    eval_run.register(app)
    return app


def test_cli_run_json_resume_and_report(evalrun_wtq: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"

    def reply(body: dict[str, Any]) -> str:
        return oracle(body["messages"], {})

    with StubServer(reply) as stub:
        args = [
            "run",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--method",
            "direct",
            "--out",
            str(out),
            "--llm-url",
            stub.url,
            "--model",
            "stub-model",
            "--no-cache",
            "--cache-dir",
            str(tmp_path / "c"),
            "--concurrency",
            "2",
            "--json",
        ]
        first = runner.invoke(cli(), [*args, "--limit", "4"])
        assert first.exit_code == 0, first.output
        payload = json.loads(first.stdout)
        assert payload["ran"] == 4 and payload["n"] == 4
        assert payload["run"] == {
            "dataset": "wtq",
            "method": "direct",
            "config": "gold",
            "format": "csv",
            "model": "stub-model",
        }
        second = runner.invoke(cli(), args)
        assert second.exit_code == 0, second.output
        assert json.loads(second.stdout)["ran"] == 8
        text = runner.invoke(cli(), args[:-1])
    assert text.exit_code == 0, text.output
    assert "| Direct QA (gold) | gold | csv |" in text.stdout
    assert "0 run now, 12 resumed" in text.stdout
    assert len(out.read_text().splitlines()) == 12
    assert report_paths(out)[0].is_file()
    assert len(list((tmp_path / "cli.traces").iterdir())) == 12


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "No LLM configured"),
        (["-o", "top_k", "2"], "unknown option 'top_k' for method auto"),
        (["--method", "seek", "-c", "7s2"], "cannot read TableSeek config '7s2'"),
        (
            ["--model", "m", "--llm-url", "http://127.0.0.1:9/v1", "--method", "nope"],
            "unknown method 'nope'",
        ),
        (
            ["--model", "m", "--llm-url", "http://127.0.0.1:9/v1", "--format", "xml"],
            "unknown corpus format",
        ),
    ],
)
def test_cli_run_errors(evalrun_wtq: Path, tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(
        cli(),
        [
            "run",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--cache-dir",
            str(tmp_path / "c"),
            *args,
        ],
    )
    assert result.exit_code == 2, result.output
    assert message.lower() in " ".join(result.stderr.split()).lower()


def test_cli_run_without_model_and_an_unreachable_server_fails(
    evalrun_wtq: Path, tmp_path: Path
) -> None:
    """No --model and the server's models cannot be listed: a run failure (1), not bad input."""
    result = runner.invoke(
        cli(),
        ["run", "wtq", "--data", str(evalrun_wtq), "--out", str(tmp_path / "o.jsonl"),
         "--cache-dir", str(tmp_path / "c"), "--llm-url", "http://127.0.0.1:9/v1"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "no model given" in " ".join(result.stderr.split()).lower()


def test_cli_run_refuses_another_runs_file(evalrun_wtq: Path, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    out.write_text(json.dumps({"id": "nu-0", "run": {"method": "seek"}}) + "\n")
    result = runner.invoke(
        cli(),
        [
            "run",
            "wtq",
            "--data",
            str(evalrun_wtq),
            "--out",
            str(out),
            "--method",
            "direct",
            "--llm-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert result.exit_code == 2 and "another run" in result.stderr


def test_one_table_and_no_table_methods_run_on_a_benchmark(
    evalrun_wtq: Path, tmp_path: Path
) -> None:
    ds, corpus = setup(evalrun_wtq)
    q = next(q for q in ds.questions if q.id == "nu-0")

    def rag_reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        prompt = messages[-1]["content"]
        if "suggest some column names" in prompt:
            return '["league"]'
        if "extract some keywords" in prompt:
            return '["USL"]'
        return f"Thought: read it\nFinal Answer: {ANSWERS[q.question]}"

    llm = Scripted(rag_reply)
    answer = build("rag", {"encoder": "bm25"}, llm, corpus)
    s = RunSpec("wtq", "rag", "B=10000,K=5", "csv")
    with RecordLog(tmp_path / "rag.jsonl", s) as log:
        run_questions([q], answer.fn, log, spec=s, corpus=corpus, gate=answer.gate)
    answer.close()
    record = log.records["nu-0"]
    assert record["metrics"]["em"] == 1.0 and record["tables_consulted"] == q.gold_table_ids
    solver = llm.calls[-1].messages[-1]["content"]
    assert "USL" in solver  # the gold table's cells were retrieved
    blind = build("no-table", {}, Scripted(['{"answer": "?"}']), corpus)
    none_spec = RunSpec("wtq", "no-table", "no table", "csv")
    with RecordLog(tmp_path / "none.jsonl", none_spec) as log:
        run_questions([q], blind.fn, log, spec=none_spec, corpus=corpus, gate=blind.gate)
    none = log.records["nu-0"]
    assert none["tables_consulted"] == [] and none["metrics"]["em"] == 0.0


def test_report_breaks_metrics_down_by_route() -> None:
    from tablequest.eval.report import summarize, to_markdown

    base = {"run": {"dataset": "wtq", "method": "auto", "config": "default", "format": "csv"},
            "status": "answered", "usage": {"calls": 1}}  # fmt: skip
    rows = [
        {**base, "id": "a", "metrics": {"em": 1.0}, "breakdown": {"route": "qa"}},
        {**base, "id": "b", "metrics": {"em": 0.0}, "breakdown": {"route": "qa"}},
        {**base, "id": "c", "metrics": {"em": 1.0}, "breakdown": {"route": "rag"}},
        {**base, "id": "d", "metrics": {"em": 1.0}},
    ]
    summary = summarize(rows)
    routes = summary["breakdown"]["route"]
    assert routes["qa"]["n"] == 2 and routes["qa"]["metrics"]["em"] == 0.5
    assert routes["rag"]["share"] == 0.25 and routes["–"]["n"] == 1
    text = to_markdown(summary)
    assert "## By route" in text and "| qa | 2 | 0.500 | 0.500 |" in text
    assert "# wtq · auto · csv" in text


def test_realhitbench_questions_get_the_benchmarks_metrics_per_family() -> None:
    from tablequest.eval.runner import question_breakdown, realhitbench_metrics

    def q(qtype: str, answer: str, sub: str | None = None) -> Question:
        extra = {"question_type": qtype, "sub_type": sub}
        return Question(id="x", question="?", answers=[answer], gold_table_ids=["t"],
                        extra=extra)  # fmt: skip

    fact = realhitbench_metrics(q("Fact Checking", "Yes"), Result(answer="yes", status="answered"))
    assert fact == {"em": 1.0, "f1": 1.0}
    analysis = realhitbench_metrics(
        q("Data Analysis", "sales grew fastest in the north"),
        Result(answer="the north grew fastest", status="answered"),
    )
    assert set(analysis) == {"rouge_l"} and 0 < analysis["rouge_l"] < 1
    chart = realhitbench_metrics(
        q("Visualization", "y_references = [[1, 2, 3]]", "BarChart"),
        Result(answer=None, status="answered", details={"chart_data": {"y": [[1, 2, 3]]}}),
    )
    assert set(chart) == {"ecr", "pass_at_1"} and chart["ecr"] == 1.0
    result = Result(answer="a", status="answered", details={"breakdown": {"route": "research"}})
    assert question_breakdown("realhitbench", q("Fact Checking", "a"), result) == {
        "route": "research",
        "family": "Fact Checking",
    }
