"""Executing an operation path in the sandbox, operation by operation (DTR §3.3, Alg. 1 l. 16–26).

For each operation of the selected path the model is asked for one step (`prompts.step_messages`):
a ``[THINK]`` summary/validation of the last output and, unless the step only thinks, ``[CODE]``
that runs in one sandbox session (state persists between operations; the frame is ``df``). The
step's code, output and summary become the context of the next step. Each operation's
``result`` is described by a probe (kind, size, first items) run in the same session; the last
operation's ``result`` is the path's answer.

Choices (ours):
- One session per question (kept for the next question on the same table, see `method`);
  before each path its state is reset (``df`` restored, ``result`` cleared, figures closed),
  so every path starts from the initial execution state (line 16). A sandbox restart
  (timeout, crash) re-runs the set-up.
- A failing operation (an exception, a timeout, a memory limit, a refused system call) ends the
  path with f_exec = 0 (line 21); an operation whose ``result`` is empty makes the outcome invalid.
- Chart data (line heights, bar heights, pie fractions, scatter offsets of the current axes) is
  read in the cell that drew the chart, because the sandbox closes figures after each run; the
  figures themselves come back as PNG bytes.
- A step reply that cannot be parsed after one repair request fails the path like an error.
- Per-operation feedback (Alg. 1 line 18 returns a reward r for each operation m): an
  executed operation's f = (its code ran without error, its seconds, f_type), where f_type of
  an intermediate operation is "its result is not empty" (§3.4's intermediate result
  validity) and f_type of the path's last operation is the path's f_type (the output has the
  query's shape); r = φ(f) as for the path. A thinking step (no code) ran without error in
  0 s. An operation the budget or an LLM error cut off never executed: it has no reward.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tablequest.llm import LLM, LLMError, StepBudget, ask_json
from tablequest.methods.research.feedback import (
    CHART_MARK,
    Feedback,
    Probe,
    parse_probe,
    render_answer,
    reward,
    type_ok,
)
from tablequest.methods.research.operations import Path, base
from tablequest.methods.research.prompts import (
    parse_reflection,
    parse_step,
    reflect_messages,
    step_messages,
)
from tablequest.sandbox import ExecResult, SandboxError
from tablequest.trace import Trace

__all__ = [
    "INIT_CODE",
    "OpRecord",
    "PathOutcome",
    "Runner",
    "StepContext",
    "Workspace",
    "error_kind",
    "run_path",
]

INIT_CODE = r"""
import json as _dtr_json, math as _dtr_math
import numpy as np
import pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
_dtr_df = df.copy()
result = None

def _dtr_plain(v):
    try:
        if hasattr(v, "item") and not isinstance(v, (list, tuple, dict, str)):
            v = v.item()
    except Exception:
        pass
    if isinstance(v, float) and (_dtr_math.isnan(v) or _dtr_math.isinf(v)):
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)

def _dtr_index(value, limit):
    flat = isinstance(value.index, pd.RangeIndex) or value.index.name == "row_id"
    return [_dtr_plain(i) for i in value.index[:limit]], flat

def _dtr_probe(value, limit=50):
    out = {"kind": "other", "size": 1, "items": [], "index": [], "columns": []}
    out["range_index"] = True
    if value is None:
        out.update(kind="none", size=0)
    elif isinstance(value, (bool, np.bool_)):
        out.update(kind="bool", items=[bool(value)])
    elif isinstance(value, (int, float, np.integer, np.floating)):
        out.update(kind="number", items=[_dtr_plain(value)])
    elif isinstance(value, str):
        out.update(kind="text", items=[value[:4000]])
    elif isinstance(value, pd.DataFrame):
        index, flat = _dtr_index(value, limit)
        rows = value.head(limit).itertuples(index=False)
        out.update(kind="frame", size=len(value), index=index, range_index=flat)
        out["columns"] = [str(c) for c in value.columns][:30]
        out["items"] = [[_dtr_plain(x) for x in row] for row in rows]
    elif isinstance(value, pd.Series):
        index, flat = _dtr_index(value, limit)
        out.update(kind="series", size=len(value), index=index, range_index=flat)
        out["items"] = [_dtr_plain(x) for x in value.head(limit)]
    elif isinstance(value, dict):
        keys = list(value)[:limit]
        out.update(kind="dict", size=len(value), range_index=False)
        out["index"] = [_dtr_plain(k) for k in keys]
        out["items"] = [_dtr_plain(value[k]) for k in keys]
    elif isinstance(value, (list, tuple, set, np.ndarray, pd.Index)):
        items = list(value)
        out.update(kind="list", size=len(items), items=[_dtr_plain(x) for x in items[:limit]])
    else:
        out.update(items=[str(value)[:4000]])
    print("__DTR_PROBE__" + _dtr_json.dumps(out, default=str))

def _dtr_mark(v):
    shim = globals().get("__tq__")
    if shim is not None:
        shim.mark(v)

def _dtr_chart():
    try:
        if not plt.get_fignums():
            return
        ax = plt.gca()
        rects = [p for p in ax.patches if type(p).__name__ == "Rectangle"]
        wedges = [p for p in ax.patches if type(p).__name__ == "Wedge"]
        points = [c for c in ax.collections if hasattr(c, "get_offsets")]
        data = {
            "lines": [[_dtr_plain(y) for y in line.get_ydata()] for line in ax.get_lines()],
            "bars": [_dtr_plain(p.get_height()) for p in rects],
            "hbars": [_dtr_plain(p.get_width()) for p in rects],
            "pie": [round((p.theta2 - p.theta1) / 360.0, 4) for p in wedges],
            "scatter": [[_dtr_plain(o[1]) for o in c.get_offsets()] for c in points],
            "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
            "figures": len(plt.get_fignums()),
        }
        print("__DTR_CHART__" + _dtr_json.dumps(data, default=str))
    except Exception as exc:
        print("__DTR_CHART__" + _dtr_json.dumps({"error": str(exc)}))
"""
RESET_CODE = "df = _dtr_df.copy()\nresult = None\nplt.close('all')"
# the probe describes `result`; marking it makes its lineage the evidence (no preview of it)
PROBE_CODE = "_dtr_probe(result)\n_dtr_mark(result)"
CHART_SUFFIX = "\n_dtr_chart()"
_RESTARTED = "sandbox was restarted"
_PLOTS = re.compile(r"\bplt\.|\.plot\(|\bplot\.|matplotlib", re.I)


class Runner(Protocol):
    """A sandbox session (`tablequest.sandbox.Session`)."""

    def run(self, code: str, timeout: float = 10.0) -> ExecResult: ...

    def close(self) -> None: ...


class Workspace:
    """One question's sandbox session, started on first use, with DTR's helpers loaded.

    `open_session` starts a session with the frame bound to ``df`` (it may raise
    `SandboxError`); a session the sandbox restarted (timeout, crash) gets the helpers again.
    """

    def __init__(self, open_session: Callable[[], Runner]) -> None:
        self._open = open_session
        self._session: Runner | None = None
        self._ready = False
        self._reset = False

    def run(self, code: str, timeout: float) -> ExecResult:
        """Run `code` (after a pending reset, in the same cell: one round trip)."""
        if self._session is None:
            self._session = self._open()
        if not self._ready:
            init = self._session.run(INIT_CODE, timeout=60.0)
            if not init.ok:
                raise SandboxError(f"DTR set-up failed in the sandbox: {init.error}")
            self._ready = True
        if self._reset:
            code, self._reset = f"{RESET_CODE}\n{code}", False
        result = self._session.run(code, timeout=timeout)
        if not result.ok and _RESTARTED in (result.error or ""):
            self._ready = False
        return result

    def reset(self) -> None:
        """Back to the initial execution state (Alg. 1 line 16), before the next cell."""
        self._reset = True

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
            self._ready = False


@dataclass
class StepContext:
    """What every step of a question shares."""

    llm: LLM
    budget: StepBudget
    trace: Trace
    question: str
    query_type: str
    triples: Sequence[str]
    frame: str
    lessons: Sequence[str]
    exec_timeout: float = 20.0
    observation_chars: int = 1500
    temperature: float = 0.0
    max_tokens: int = 1024
    w_type: float = 0.8
    time_scale: float = 10.0
    prompting: str = "think_code"
    plain: bool = False


@dataclass
class OpRecord:
    """One executed operation: the model's step and what running it produced."""

    op: str
    think: str = ""
    code: str = ""
    ok: bool = True
    output: str = ""
    error: str | None = None
    seconds: float = 0.0
    probe: Probe | None = None
    lineage: dict[str, Any] | None = None
    """The cell lineage of the operation's ``result`` (`ExecResult.lineage`)."""


@dataclass
class PathOutcome:
    """One execution of a path: records, feedback f(π), reward and answer."""

    path: Path
    ops: list[OpRecord] = field(default_factory=list)
    feedback: Feedback = field(default_factory=lambda: Feedback(0, 0.0, 0))
    reward: float = 0.0
    answer: str = ""
    valid: bool = False
    failed_op: str | None = None
    error_kind: str | None = None
    error: str | None = None
    stopped: str | None = None
    figures: list[bytes] = field(default_factory=list)
    chart_data: dict[str, Any] | None = None
    op_feedback: list[Feedback] = field(default_factory=list)
    """f of each executed operation, in order (Alg. 1 line 18: ``o, r ← execute(m, …)``)."""
    op_rewards: list[float] = field(default_factory=list)
    """r = φ(f) of each executed operation (Alg. 1 lines 18–20 update R̂ and N with each)."""

    @property
    def learnable(self) -> bool:
        """Whether the outcome says something about the path (not cut by budget/LLM errors)."""
        return self.stopped is None


def error_kind(error: str) -> str:
    """A coarse, value-agnostic class of an execution error (used by the lessons)."""
    checks = [
        ("timeout", ("TimeoutError", "did not finish")),
        ("memory", ("MemoryError", "memory")),
        ("forbidden", ("PermissionError", "sandbox:", "not allowed", "SandboxError")),
        ("missing_column", ("KeyError",)),
        ("name", ("NameError", "AttributeError")),
        ("type", ("TypeError", "ValueError", "could not convert", "unsupported operand")),
        ("index", ("IndexError",)),
    ]
    for kind, needles in checks:
        if any(n in error for n in needles):
            return kind
    return "error"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more chars]"


def _observation(record: OpRecord, limit: int) -> str:
    if not record.code:
        return "(no code: thinking step)"
    if not record.ok:
        return f"error: {_cut(record.error or 'error', limit)}"
    probe = record.probe
    shape = f"{probe.kind}, size {probe.size}" if probe else "no result"
    text = record.output.strip()
    preview = json.dumps(probe.items[:10], default=str) if probe and probe.items else ""
    return _cut(f"result: {shape} {preview}\n{text}".strip(), limit)


def _history_line(i: int, record: OpRecord, limit: int) -> str:
    code = f"\n[CODE]\n{_cut(record.code, 1500)}" if record.code else ""
    return f"[{i} {record.op}] [THINK] {record.think}{code}\n→ {_observation(record, limit)}"


def run_path(path: Path, ctx: StepContext, workspace: Workspace) -> PathOutcome:
    """Execute `path` (see the module docstring).

    Never raises for model or program failures; raises `SandboxError` when the sandbox
    cannot start at all.
    """
    out = PathOutcome(path)
    workspace.reset()
    history: list[str] = []
    seconds = 0.0
    for i, op in enumerate(path, start=1):
        record = _step(op, i, path, ctx, history, out)
        if record is None:
            break
        out.ops.append(record)
        if record.code:
            seconds += _run_and_log(record, i, path, ctx, workspace, out)
            if ctx.prompting == "reflection":
                seconds += _reflect(record, i, path, ctx, workspace, out)
                if out.stopped is not None:
                    break
        else:
            ctx.trace.event("decision", stage="think", op=op, index=i, think=record.think)
        history.append(_history_line(i, record, ctx.observation_chars))  # with its output
        if not record.ok:
            out.failed_op, out.error = op, record.error
            out.error_kind = error_kind(record.error or "")
            break
        if record.probe is not None and record.probe.empty and i < len(path):
            out.failed_op, out.error_kind = op, "empty"
            out.error = f"{op} produced an empty result"
            break
    _finish(out, ctx, seconds)
    return out


def _run_and_log(
    record: OpRecord, i: int, path: Path, ctx: StepContext, ws: Workspace, out: PathOutcome
) -> float:
    _execute(record, ctx, ws, out)
    ctx.trace.event(
        "exec", op=record.op, index=i, path=list(path), code=record.code, ok=record.ok,
        output=_cut(record.output, 2000), error=record.error, seconds=round(record.seconds, 3),
    )  # fmt: skip
    return record.seconds


def _reflect(
    record: OpRecord, i: int, path: Path, ctx: StepContext, ws: Workspace, out: PathOutcome
) -> float:
    """Table 4's multi-stage reflection: one more call checks the operation's output and may
    give corrected code, which replaces the step's (ours: one check per operation, no
    repair request; no step left or an unusable reply keeps the step as it ran, and an
    unusable reply leaves the LLM cache: `LLM.discard`, issue 39)."""
    if not ctx.budget.can_spend("step"):
        return 0.0
    messages = reflect_messages(
        question=ctx.question, query_type=ctx.query_type, path=path, index=i,
        code=record.code, observation=_observation(record, ctx.observation_chars),
    )  # fmt: skip
    ctx.budget.spend("step")
    try:
        reply = ctx.llm.chat(messages, temperature=ctx.temperature, max_tokens=ctx.max_tokens)[0]
    except LLMError as exc:
        out.stopped = f"{type(exc).__name__}: {exc}"
        return 0.0
    code = parse_reflection(reply.text)
    if code is None:  # neither [OK] nor code: the step stands, the cache forgets the reply
        ctx.llm.discard(reply)
    ctx.trace.event("decision", stage="reflection", op=record.op, index=i, revised=bool(code),
                    **({"unusable": True} if code is None else {}))  # fmt: skip
    if not code or code == record.code:
        return 0.0
    record.code = code
    return _run_and_log(record, i, path, ctx, ws, out)


def _step(
    op: str, index: int, path: Path, ctx: StepContext, history: list[str], out: PathOutcome
) -> OpRecord | None:
    messages = step_messages(
        question=ctx.question, query_type=ctx.query_type, path=path, index=index,
        triples=ctx.triples, frame=ctx.frame, lessons=ctx.lessons, history=history,
        prompting=ctx.prompting, plain=ctx.plain,
    )  # fmt: skip
    asked = ask_json(
        ctx.llm, messages, parse_step, budget=ctx.budget, kind="step", trace=ctx.trace,
        fallback_fields={"op": op}, temperature=ctx.temperature, max_tokens=ctx.max_tokens,
    )  # fmt: skip
    step = asked.value
    if asked.reason is not None:  # an LLM error (its fallback event is recorded)
        out.stopped = asked.reason
        return None
    if step is None:
        if asked.attempts == 0:
            out.stopped = "step budget exhausted"
            return None
        return OpRecord(op, ok=False, error="unusable step reply (no [THINK] or [CODE])")
    return OpRecord(op, think=step.think, code=step.code)


def _execute(record: OpRecord, ctx: StepContext, runner: Workspace, out: PathOutcome) -> None:
    """Run the step's code, then (same cell) read the chart and describe ``result``."""
    charting = base(record.op) == "CHART" or bool(_PLOTS.search(record.code))
    code = record.code + (CHART_SUFFIX if charting else "") + "\n" + PROBE_CODE
    result = runner.run(code, timeout=ctx.exec_timeout)
    record.ok, record.error, record.seconds = result.ok, result.error, result.seconds
    record.lineage = result.lineage if result.ok else None
    record.probe, stdout = parse_probe(result.stdout) if result.ok else (None, result.stdout)
    kept = []
    for line in stdout.splitlines():
        if line.startswith(CHART_MARK):
            with contextlib.suppress(ValueError):
                out.chart_data = json.loads(line[len(CHART_MARK) :])
        else:
            kept.append(line)
    record.output = "\n".join(kept)
    if result.ok and not result.figures and base(record.op) == "CHART":
        record.output += "\n(no figure was left open)"
    out.figures.extend(result.figures)


def _finish(out: PathOutcome, ctx: StepContext, seconds: float) -> None:
    ran = [r for r in out.ops if r.code]
    f_exec = int(bool(out.ops) and all(r.ok for r in out.ops) and out.stopped is None)
    f_exec = f_exec and len(out.ops) == len(out.path)
    last = next((r.probe for r in reversed(ran) if r.probe is not None), None)
    if last is None and ctx.query_type == "analysis" and out.ops and out.ops[-1].think:
        last = Probe(kind="text", size=1, items=[out.ops[-1].think])
    figures = len(out.figures)
    f_type = int(
        bool(f_exec) and out.error_kind != "empty" and type_ok(ctx.query_type, last, figures)
    )
    out.feedback = Feedback(int(f_exec), round(seconds, 4), f_type)
    out.reward = reward(out.feedback, w_type=ctx.w_type, time_scale=ctx.time_scale)
    out.answer = render_answer(ctx.query_type, last, figures=figures) if f_exec else ""
    out.valid = bool(f_type) and bool(out.answer)
    if f_exec and not f_type and out.error_kind is None:
        out.error_kind = "wrong_type"
        out.error = f"the final result does not have the expected shape for {ctx.query_type}"
    _per_operation(out, ctx, f_type)


def _per_operation(out: PathOutcome, ctx: StepContext, path_type: int) -> None:
    """f and r of each executed operation (see the module docstring)."""
    for i, record in enumerate(out.ops, start=1):
        if i == len(out.path):
            op_type = path_type
        else:
            op_type = int(record.ok and not (record.probe is not None and record.probe.empty))
        f = Feedback(int(record.ok), round(record.seconds, 4), int(record.ok) and op_type)
        out.op_feedback.append(f)
        out.op_rewards.append(reward(f, w_type=ctx.w_type, time_scale=ctx.time_scale))
