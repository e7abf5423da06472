"""LLM-as-judge metrics of DTR: LLM-EVAL (Table 2) and Win / Score Rate (Table 1).

**LLM-EVAL** (DTR App. C.1: RealHiTBench's Data Analysis is scored by "LLM-based evaluation"
following the benchmark's protocol). The protocol is RealHiTBench's ``GPT_EVAL``
(``inference/gpt_eval_prompt.py`` and ``gpt_eval.py`` of cspzyy/RealHiTBench), reproduced:
one prompt per Data Analysis sub-type (`EVAL_PROMPTS`, verbatim, typos included; Summary and
Anomaly Analysis also show the table), a single user message, a 0–100 score read from
``[Score]: xx/100`` (else ``Score:``; the last marker wins, the text before ``/``), and the
benchmark's format note (`SCORE_REPAIR`, verbatim) as the follow-up when no score is found.
LLM-EVAL of a run is the mean score (0–100) over its judged questions.

**Win Rate / Score Rate** (DTR App. C.1, Table 1 on DTR-Bench): per instance a judge compares
two methods' outputs; Win Rate = share of instances where the model is better (ties count 0),
Score Rate = share where it is not worse (ties count 0.5), in percent, per dimension
(Accuracy, Analysis Depth, Feasibility, Aesthetics).

Where the paper is silent (ours):
- The judge model is whatever model is configured (RealHiTBench used gpt-4o); temperature 0
  (RealHiTBench used the API default) so judgments are cached and repeatable.
- One repair request, not RealHiTBench's four: a reply still without a valid score (a number
  in 0–100 after the marker; a leading ``**`` is skipped) marks the question
  ``judge_failed`` with the reason; it is counted apart, never as a score.
- A question without an answer (failed or empty) scores 0 without a judge call (the runner's
  rule for every answer metric), recorded as ``no_answer``; in a pair, the side without an
  answer loses every dimension (both without: tie).
- The pairwise prompt (`PAIR_PROMPT`) is ours: the paper gives none. Each pair is judged in
  both orders (run A's answer shown first, then second) to cancel position bias; a dimension
  is a win only when both orders prefer A, a loss only when both prefer B, else a tie (the
  conservative rule of MT-Bench, Zheng et al. 2023). The paper does not say which baseline
  each Table 1 row is compared with; here it is the run given with ``against``.
- The table is shown only where RealHiTBench shows it (Summary, Anomaly): its LaTeX rendering
  (``data/latex/<FileName>.txt``) when the data folder has it, else our HTML serialization of
  the spreadsheet. The pairwise prompt shows no table.

Judgments are JSON lines (`JudgeLog`), keyed by question id, protocol and judge model:
judging again skips what that model already judged with that protocol.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tablequest.eval.metrics.judge_prompts import (
    DIMENSIONS,
    EVAL_PROMPTS,
    PAIR_PROMPT,
    SCORE_REPAIR,
    JudgeError,
    JudgeItem,
    Replies,
    Verdict,
    eval_prompt,
    pair_prompt,
    parse_score,
    parse_verdicts,
)
from tablequest.llm import LLM, Message, ask_with_repair

if TYPE_CHECKING:
    from tablequest.eval.datasets import Dataset, Question

__all__ = [
    "DIMENSIONS",
    "EVAL_PROMPTS",
    "EVAL_PROTOCOL",
    "PAIR_PROMPT",
    "PAIR_PROTOCOL",
    "SCORE_REPAIR",
    "JudgeError",
    "JudgeItem",
    "JudgeLog",
    "JudgeOutcome",
    "PairOutcome",
    "eval_prompt",
    "judge_items",
    "judge_records",
    "pair_prompt",
    "parse_score",
    "parse_verdicts",
    "read_run",
    "win_rate",
]

EVAL_PROTOCOL = "realhitbench-llm-eval"
PAIR_PROTOCOL = "dtr-pairwise-swap"
Outcome = Literal["win", "tie", "loss"]


def _answer(record: Mapping[str, Any]) -> str | None:
    """The record's answer, None when the question failed or the answer is empty."""
    text = record.get("prediction")
    if record.get("status") == "failed" or not isinstance(text, str) or not text.strip():
        return None
    return text


def _table_text(dataset: Dataset, q: Question) -> str | None:
    if not q.gold_table_ids:
        return None
    key = q.gold_table_ids[0]
    name = re.fullmatch(r"data/tables/(.+)\.xlsx", key)
    latex = dataset.root / "data" / "latex" / f"{name.group(1)}.txt" if name else None
    if latex is not None and latex.is_file():
        return latex.read_text(encoding="utf-8", errors="replace")
    from tablequest.table import serialize

    return serialize(dataset.table(key), "html")


def judge_items(
    records: Iterable[Mapping[str, Any]],
    *,
    dataset: Dataset | None = None,
    sub_type: str | None = None,
) -> dict[str, JudgeItem]:
    """The judge's view of each record's question: from `dataset` when given (RealHiTBench:
    its ``FinalAnswer``, ``SubQType`` and the table for the prompts that show it), else from
    the record (question, gold answers joined by ", "). `sub_type` is used where none is known.
    """
    by_id = {q.id: q for q in dataset.questions} if dataset is not None else {}
    items: dict[str, JudgeItem] = {}
    for record in records:
        qid = str(record["id"])
        q = by_id.get(qid)
        gold = record.get("gold") or []
        reference = ", ".join(str(g) for g in gold) if isinstance(gold, list) else str(gold)
        kind = sub_type
        table = None
        if q is not None:
            reference = str(q.extra.get("final_answer") or "") or ", ".join(q.answers)
            kind = str(q.extra.get("sub_type") or "") or sub_type
            if dataset is not None and "{Table}" in EVAL_PROMPTS.get(kind or "", ""):
                table = _table_text(dataset, q)
        items[qid] = JudgeItem(str(record.get("question") or ""), reference, kind, table)
    return items


def read_run(path: Path) -> list[dict[str, Any]]:
    """A run file's records (first record of an id wins; a partial last line is ignored and
    left in place).

    Raises:
        JudgeError: missing or unreadable file, bad JSON, a record without an id.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise JudgeError(f"cannot read the run {str(path)!r}: {exc.strerror or exc}") from exc
    records: dict[str, dict[str, Any]] = {}
    for lineno, line in enumerate(data[: data.rfind(b"\n") + 1].split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise JudgeError(f"{path}:{lineno} is not a JSON record ({exc})") from exc
        if not isinstance(record, dict) or "id" not in record:
            raise JudgeError(f"{path}:{lineno}: record without an 'id'")
        records.setdefault(str(record["id"]), record)
    return list(records.values())


# -- the judgment file --------------------------------------------------------------------------
class JudgeLog:
    """Append-only JSONL of judgments, durable like the runner's `RecordLog` (one write per
    line, fsync; a partial last line from a killed run is cut off on open). The latest
    judgment of each (id, protocol, model) counts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.judgments: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            data = path.read_bytes()
            end = data.rfind(b"\n") + 1
            if end < len(data):
                with open(path, "r+b") as fh:
                    fh.truncate(end)
            for lineno, line in enumerate(data[:end].split(b"\n"), start=1):
                if line.strip():
                    try:
                        self._index(json.loads(line))
                    except (ValueError, KeyError, TypeError) as exc:
                        raise JudgeError(
                            f"{path}:{lineno} is not a judgment ({exc}): pass another file"
                        ) from exc
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _index(self, judgment: dict[str, Any]) -> None:
        judge = judgment["judge"]
        self.judgments[(str(judgment["id"]), judge["protocol"], judge["model"])] = judgment

    def get(self, qid: str, protocol: str, model: str) -> dict[str, Any] | None:
        with self._lock:
            return self.judgments.get((qid, protocol, model))

    def append(self, judgment: dict[str, Any]) -> None:
        line = (json.dumps(judgment, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)
            os.fsync(self._fd)
            self._index(judgment)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def __enter__(self) -> JudgeLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _model(llm: LLM) -> str:
    return llm.describe().get("model", "") or "?"


def _each(
    ids: Sequence[str],
    judge: Callable[[str], dict[str, Any]],
    *,
    protocol: str,
    model: str,
    log: JudgeLog | None,
    concurrency: int,
) -> dict[str, dict[str, Any]]:
    """Judge every id not already in `log` (for this protocol and model), `concurrency` at
    once; each new judgment is logged as soon as it is made."""
    if concurrency < 1:
        raise JudgeError(f"concurrency must be >= 1, got {concurrency}")
    out: dict[str, dict[str, Any]] = {}
    todo = []
    for qid in ids:
        old = log.get(qid, protocol, model) if log is not None else None
        if old is not None:
            out[qid] = old
        else:
            todo.append(qid)

    def work(qid: str) -> dict[str, Any]:
        judgment = {"id": qid, "judge": {"protocol": protocol, "model": model}, **judge(qid)}
        if log is not None:
            log.append(judgment)
        return judgment

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for judgment in pool.map(work, todo):
            out[judgment["id"]] = judgment
    return {qid: out[qid] for qid in ids}


# -- LLM-EVAL -----------------------------------------------------------------------------------
@dataclass
class JudgeOutcome:
    """LLM-EVAL of a run: per-question judgments, the records with ``metrics["llm_eval"]``
    added (scored and no-answer questions), and those not judged with the reason."""

    judgments: dict[str, dict[str, Any]]
    records: list[dict[str, Any]]
    not_judged: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Mean score (0–100) overall and per sub-type; failures and skips counted apart."""
        groups: dict[str, list[float]] = {}
        failed: dict[str, str] = {}
        for qid, j in self.judgments.items():
            if j["status"] == "judge_failed":
                failed[qid] = j["reason"]
            else:
                groups.setdefault(str(j.get("prompt")), []).append(float(j["score"]))
        scores = [s for values in groups.values() for s in values]
        statuses = [j["status"] for j in self.judgments.values()]
        return {
            "protocol": EVAL_PROTOCOL,
            "llm_eval": sum(scores) / len(scores) if scores else None,
            "n": len(scores),  # judged + without an answer (0)
            "n_no_answer": statuses.count("no_answer"),
            "n_judge_failed": len(failed),
            "judge_failed": failed,
            "n_not_judged": len(self.not_judged),
            "not_judged": self.not_judged,
            "by_sub_type": {k: {"n": len(v), "llm_eval": sum(v) / len(v)}
                            for k, v in sorted(groups.items())},
        }  # fmt: skip


def _score_one(llm: LLM, item: JudgeItem, answer: str | None, **chat: Any) -> dict[str, Any]:
    if answer is None:
        return {"prompt": item.sub_type, "status": "no_answer", "score": 0.0, "calls": 0}
    messages: list[Message] = [{"role": "user", "content": eval_prompt(item, answer)}]
    seen = Replies(parse_score)
    score, calls = ask_with_repair(llm, messages, seen, repair_prompt=SCORE_REPAIR, **chat)
    out: dict[str, Any] = {"prompt": item.sub_type, "calls": calls, "reply": seen.last[:2000]}
    if score is None:
        return {**out, "status": "judge_failed", "score": None, "reason": seen.error}
    return {**out, "status": "scored", "score": score}


def judge_records(
    records: Sequence[Mapping[str, Any]],
    llm: LLM,
    *,
    items: Mapping[str, JudgeItem] | None = None,
    log: JudgeLog | None = None,
    concurrency: int = 1,
    temperature: float = 0.0,
    max_tokens: int = 1024,
) -> JudgeOutcome:
    """LLM-EVAL of run records (RealHiTBench's protocol; see module doc).

    Args:
        records: Run records (``id``, ``question``, ``prediction``, ``status``, ``gold``).
        llm: The judge.
        items: The judge's inputs per id (`judge_items`; default: from the records, which
            carry no sub-type, so nothing is judged).
        log: Where judgments go; those of this judge model already there are reused.
        concurrency: Questions judged at once.
        temperature: Judge sampling temperature.
        max_tokens: Judge reply limit.

    Raises:
        JudgeError: bad concurrency. LLM errors (model unreachable, …) propagate; what was
        judged before is in `log`.
    """
    items = dict(items) if items is not None else judge_items(records)
    by_id = {str(r["id"]): r for r in records}
    not_judged: dict[str, str] = {}
    for qid in by_id:
        item = items.get(qid)
        if item is None:
            not_judged[qid] = "no judge input for this question"
            continue
        try:
            eval_prompt(item, "")
        except JudgeError as exc:
            unknown = "the sub-type is unknown: give the dataset or a default sub-type"
            not_judged[qid] = str(exc) if item.sub_type else unknown
    ids = [qid for qid in by_id if qid not in not_judged]
    chat = {"temperature": temperature, "max_tokens": max_tokens}
    judgments = _each(
        ids, lambda qid: _score_one(llm, items[qid], _answer(by_id[qid]), **chat),
        protocol=EVAL_PROTOCOL, model=_model(llm), log=log, concurrency=concurrency,
    )  # fmt: skip
    out_records = []
    for qid, record in by_id.items():
        judged = dict(record)
        j = judgments.get(qid)
        if j is not None:
            judged["judge"] = j
            if j["score"] is not None:
                judged["metrics"] = {**record.get("metrics", {}), "llm_eval": j["score"]}
        out_records.append(judged)
    return JudgeOutcome(judgments, out_records, not_judged)


# -- Win Rate / Score Rate ----------------------------------------------------------------------
@dataclass
class PairOutcome:
    """Pairwise judgments of run A against run B, per question id."""

    judgments: dict[str, dict[str, Any]]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Per dimension: wins / ties / losses of A, Win Rate (ties 0) and Score Rate (ties
        0.5) in percent over the judged questions; judge failures counted apart."""
        ok = [j for j in self.judgments.values() if j["status"] != "judge_failed"]
        dims: dict[str, dict[str, Any]] = {}
        for dim in DIMENSIONS:
            counts = {
                o: sum(1 for j in ok if j["outcome"][dim] == o) for o in ("win", "tie", "loss")
            }
            n = len(ok)
            dims[dim] = {
                "wins": counts["win"], "ties": counts["tie"], "losses": counts["loss"], "n": n,
                "win_rate": 100.0 * counts["win"] / n if n else None,
                "score_rate": 100.0 * (counts["win"] + 0.5 * counts["tie"]) / n if n else None,
            }  # fmt: skip
        failed = {
            q: j["reason"] for q, j in self.judgments.items() if j["status"] == "judge_failed"
        }
        return {
            "protocol": PAIR_PROTOCOL,
            "n": len(ok),
            "dimensions": dims,
            "n_no_answer": sum(1 for j in ok if j["status"] == "no_answer"),
            "n_judge_failed": len(failed),
            "judge_failed": failed,
            "only_a": self.only_a,
            "only_b": self.only_b,
        }


_FLIP: dict[Verdict, Verdict] = {"A": "B", "B": "A", "tie": "tie"}


def _combine(first: Verdict, second: Verdict) -> Outcome:
    """A's outcome from the verdict with A shown first and the (flipped) one with A second."""
    if first == second == "A":
        return "win"
    if first == second == "B":
        return "loss"
    return "tie"


def _compare_one(
    llm: LLM, item: JudgeItem, a: str | None, b: str | None, **chat: Any
) -> dict[str, Any]:
    if a is None or b is None:
        fixed: Outcome = "tie" if a is None and b is None else "loss" if a is None else "win"
        return {"status": "no_answer", "outcome": dict.fromkeys(DIMENSIONS, fixed), "calls": 0}
    orders: list[dict[str, Verdict]] = []
    calls = 0
    for first, second in ((a, b), (b, a)):
        messages: list[Message] = [{"role": "user", "content": pair_prompt(item, first, second)}]
        seen = Replies(parse_verdicts)
        verdicts, used = ask_with_repair(llm, messages, seen, **chat)
        calls += used
        if verdicts is None:
            return {"status": "judge_failed", "reason": f"order {len(orders) + 1}: {seen.error}",
                    "calls": calls, "reply": seen.last[:2000], "orders": orders}  # fmt: skip
        orders.append(verdicts if not orders else {d: _FLIP[v] for d, v in verdicts.items()})
    outcome = {d: _combine(orders[0][d], orders[1][d]) for d in DIMENSIONS}
    return {"status": "judged", "outcome": outcome, "orders": orders, "calls": calls}


def win_rate(
    records_a: Sequence[Mapping[str, Any]],
    records_b: Sequence[Mapping[str, Any]],
    llm: LLM,
    *,
    items: Mapping[str, JudgeItem] | None = None,
    log: JudgeLog | None = None,
    concurrency: int = 1,
    temperature: float = 0.0,
    max_tokens: int = 1024,
) -> PairOutcome:
    """Win Rate / Score Rate of run A against run B (DTR Table 1; see module doc).

    Questions of both runs are judged (in both orders); `items` default to run A's records.
    ``orders`` in a judgment are from A's side ("A" = A's answer better), whatever the order
    shown. Raises `JudgeError` on bad concurrency; LLM errors propagate.
    """
    by_a = {str(r["id"]): r for r in records_a}
    by_b = {str(r["id"]): r for r in records_b}
    ids = [qid for qid in by_a if qid in by_b]
    items = dict(items) if items is not None else judge_items(by_a.values())
    chat = {"temperature": temperature, "max_tokens": max_tokens}

    def judge(qid: str) -> dict[str, Any]:
        item = items.get(qid) or JudgeItem(str(by_a[qid].get("question") or ""), "")
        return _compare_one(llm, item, _answer(by_a[qid]), _answer(by_b[qid]), **chat)

    judgments = _each(
        ids, judge, protocol=PAIR_PROTOCOL, model=_model(llm), log=log, concurrency=concurrency
    )
    return PairOutcome(
        judgments,
        only_a=[q for q in by_a if q not in by_b],
        only_b=[q for q in by_b if q not in by_a],
    )
