"""The program-aided ReAct solver (TableRAG §3.3 "Program-Aided Solver", Fig. 11).

The prompt is Fig. 11 (TableRAG) or the official PyReAct prompt with a table (baselines),
both in `prompts.py`. Each step sends the prompt plus the transcript so far, ending in
``Thought: ``, with the stop sequence ``Observation:`` (official ``solver_loop``); the model
writes a thought and either ``Action: <one line of Python on df>`` or ``Final Answer: ...``.
The action runs in a sandbox session that keeps state between actions (never in this
process); its result, or its error as ``"KeyError: 'price'"``, comes back as
``Observation: ...``. An empty result reads
``success!``, a multi-line one starts on a new line, a reply without an action gets
``Error: no Action provided.`` — all as in the official code.

Choices (ours): the step parser is `parse_react` (the earlier of Action and Final Answer
wins; the official code prefers a Final Answer anywhere); the answer is the first line after
``Final Answer:``; observations longer than `max_observation_chars` are cut with a marker;
numpy scalar previews (``np.float64(1.5)``) and quoted string previews read as their value,
as the official REPL's ``str()`` would print them; a prompt over the context budget stops
the solver (status ``context``) instead of sending it. Self-consistency votes over the
normalized answers of the samples that reached a Final Answer (the official
``normalize_answer``: lower case, items split on ", " and " and ", numbers compared as
numbers, order ignored); among tied answers the one first given (in sample order) wins, as
with the official ``Counter.most_common``.

A sample whose last reply had neither an Action nor a Final Answer — a greeting, prose — and
that then ran out of steps (or of the question's budget) ends ``unformatted``: Fig. 11 asks
for "Final Answer: Answer1, Answer2, ..." as the last line, "no other form", and the paper
does not say what happens without it (ours, issue 36): the reason is "the model's reply had no
answer in the expected format", with the reply's start in the trace; when every sample ends
so, the question is "failed". A sample that kept writing Actions until the step limit stays
``no_answer`` ("no Final Answer within N steps", "insufficient"). A reply with neither is
reported to the model (`LLM.discard`): the LLM cache does not serve it again (issue 39).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tablequest.errors import RunError
from tablequest.llm import (
    LLM,
    NO_ANSWER_IN_FORMAT,
    BadReAct,
    BudgetExhausted,
    LLMError,
    ReactStep,
    estimate_tokens,
    is_non_answer,
    parse_react,
    reply_start,
)
from tablequest.methods.recompute import Verdict
from tablequest.methods.result import Result, Status
from tablequest.sandbox import ExecResult, SandboxError
from tablequest.table import CellRef
from tablequest.trace import Trace

SolveStatus = Literal["answered", "no_answer", "unformatted", "llm_error", "context"]


class Runner(Protocol):
    """A sandbox session (`tablequest.sandbox.Session`)."""

    def run(self, code: str, timeout: float = 10.0) -> ExecResult: ...


@dataclass
class SolveOutcome:
    """One solver run."""

    answer: str | None
    status: SolveStatus
    n_iter: int
    transcript: str
    reason: str | None = None
    calls: int = 0
    actions: list[str] = field(default_factory=list)
    lineages: list[dict[str, Any]] = field(default_factory=list)
    """Each successful action's cell lineage (`ExecResult.lineage`), in order: what the
    evidence of the sample's answer is read from."""


_NP_SCALAR = re.compile(r"^np\.(?:float|int|uint|bool|str|complex)\w*\((.*)\)$", re.S)


def _value_text(value: str) -> str:
    m = _NP_SCALAR.match(value)
    if m:
        return m.group(1)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"" and "\n" not in value:
        return value[1:-1]
    return value


def observation(result: ExecResult, limit: int = 3000) -> str:
    """The official observation text of one action's result."""
    if result.ok:
        text = result.stdout
        if result.value is not None:
            if text and not text.endswith("\n"):
                text += "\n"
            text += _value_text(result.value)
        text = text.rstrip("\n") or "success!"
    else:
        text = (result.stdout + (result.error or "error")).strip()
    if len(text) > limit:
        text = text[:limit] + f"... [observation cut: {len(text) - limit} more characters]"
    return "\n" + text if "\n" in text else text


def extract_code(action: str) -> str:
    """The official ``parse_code_from_string`` for actions that start with backticks."""
    action = action.strip()
    fenced = re.match(r"^```\w*\s*(.*?)```", action, re.S)
    if fenced:
        return fenced.group(1).strip()
    inline = re.match(r"^`([^`]+)`", action)
    return inline.group(1).strip() if inline else action


def _final_line(answer: str) -> str:
    lines = [line.strip() for line in answer.strip().splitlines() if line.strip()]
    return lines[0] if lines else answer.strip()


class SandboxStartFailed(RunError):
    """The sample's sandbox session could not start: the question fails (fail closed), unlike
    an action's error, which is an observation. Not a `SandboxError`, so `solve` lets it out."""


class LazySession:
    """A sandbox session started at the sample's first action: a sample whose first reply is
    a Final Answer starts no child (the solver's `Runner`)."""

    def __init__(self, start: Callable[[], Any]) -> None:
        self._start = start
        self._session: Any = None

    @property
    def started(self) -> bool:
        return self._session is not None

    def run(self, code: str, timeout: float = 10.0) -> ExecResult:
        if self._session is None:
            try:
                self._session = self._start()
            except SandboxError as exc:
                raise SandboxStartFailed(str(exc)) from exc
        result: ExecResult = self._session.run(code, timeout=timeout)
        return result

    def close(self) -> None:
        if self._session is not None:
            self._session.__exit__(None, None, None)  # the session's own context exit
            self._session = None


def solve(
    llm: LLM,
    session: Runner,
    prompt: str,
    *,
    trace: Trace,
    max_steps: int = 5,
    temperature: float = 0.0,
    max_tokens: int = 512,
    context_tokens: int = 16_385,
    timeout: float = 10.0,
    max_observation_chars: int = 3000,
) -> SolveOutcome:
    """Run the ReAct loop for at most `max_steps` model replies."""
    solution = ""
    out = SolveOutcome(answer=None, status="no_answer", n_iter=max_steps, transcript="")
    unformatted: str | None = None  # the last reply, when it had no Action or Final Answer
    for step in range(max_steps):
        solution += "Thought: "
        text = prompt + solution
        if estimate_tokens(text) > context_tokens:
            out.status, out.n_iter = "context", step
            out.reason = (
                f"prompt of ~{estimate_tokens(text)} tokens exceeds the context "
                f"budget of {context_tokens}"
            )
            trace.event("fallback", stage="solver", reason=out.reason)
            break
        try:
            completion = llm.chat(
                [{"role": "user", "content": text}],
                temperature=temperature,
                max_tokens=max_tokens,
                stop=["Observation:"],
            )[0]
        except LLMError as exc:
            out.calls += 1
            if isinstance(exc, BudgetExhausted) and unformatted is not None:
                out.n_iter = step
                break  # out of budget after a reply without the format: that is the reason
            out.status, out.n_iter = "llm_error", step + 1
            out.reason = f"{type(exc).__name__}: {exc}"
            trace.event("fallback", stage="solver", reason=out.reason)
            break
        out.calls += 1
        reply = re.sub(r"^\s*Thought:\s*", "", completion.text.strip())
        solution += reply
        parsed = _parse_step(reply)
        if parsed is None:
            llm.discard(completion)  # not the ReAct format: the cache forgets it (issue 39)
        unformatted = None if parsed is not None else reply_start(reply)
        if parsed is not None and parsed.final_answer is not None:
            final = _final_line(parsed.final_answer)
            if is_non_answer(final):  # a refusal or tool syntax is never an answer
                out.reason = f"the final answer {final[:80]!r} is a refusal or tool syntax"
            else:
                out.answer, out.status = final, "answered"
            out.n_iter = step + 1
            break
        if parsed is None or parsed.action is None:  # (an Action or a Final Answer)
            obs = "Error: no Action provided."
        else:
            code = extract_code(parsed.action)
            out.actions.append(code)
            obs, lineage = _execute(session, code, step + 1, trace, timeout, max_observation_chars)
            if lineage is not None:
                out.lineages.append(lineage)
        solution += f"\nObservation: {obs}\n"
    out.transcript = solution
    if out.status == "no_answer" and unformatted is not None:
        out.status, out.reason = "unformatted", NO_ANSWER_IN_FORMAT
        trace.event("fallback", stage="solver", reason=out.reason, reply=unformatted)
    return out


def _parse_step(reply: str) -> ReactStep | None:
    """The reply's Action or Final Answer; None when it has neither (not the ReAct format)."""
    try:
        return parse_react("Thought: " + reply)
    except BadReAct:
        return None


def _execute(
    session: Runner, code: str, step: int, trace: Trace, timeout: float, max_chars: int
) -> tuple[str, dict[str, Any] | None]:
    """Run one action in the sandbox; its observation (an error is an observation too) and
    the lineage of what it showed."""
    try:
        result = session.run(code, timeout=timeout)
    except SandboxError as exc:
        result = ExecResult(ok=False, error=f"SandboxError: {exc}")
    obs = observation(result, max_chars)
    trace.event(
        "exec",
        step=step,
        code=code,
        ok=result.ok,
        observation=obs[:2000],
        seconds=round(result.seconds, 3),
    )
    return obs, (result.lineage if result.ok else None)


def _to_value(item: str) -> str:
    text = item.strip().strip('"').strip()
    if text.endswith("."):
        text = text[:-1]
    number = text[1:].strip() if text.startswith("$") else text
    number = number.replace(",", "")
    try:
        value = float(number)
    except ValueError:
        return " ".join(text.split())
    if math.isnan(value) or math.isinf(value):
        return " ".join(text.split())
    return str(int(value)) if abs(value - round(value)) < 1e-6 else str(value)


def normalize_answer(answer: str) -> str:
    """The voting key of an answer (official ``normalize_answer``, numbers as numbers)."""
    text = answer.lower().replace(" and ", ", ")
    items = {_to_value(span) for span in text.split(", ") if span.strip()}
    return "|".join(sorted(items))


def majority_vote(answers: Sequence[str | None]) -> tuple[str | None, dict[str, int]]:
    """(the winning answer as first written, votes per normalized answer)."""
    keys: list[tuple[str, str]] = [(normalize_answer(a), a) for a in answers if a]
    if not keys:
        return None, {}
    votes = Counter(k for k, _ in keys)
    best = votes.most_common(1)[0][0]
    first = next(a for k, a in keys if k == best)
    return first, dict(votes)


def voted_result(
    outcomes: Sequence[SolveOutcome],
    *,
    evidence: Callable[[str, list[SolveOutcome]], tuple[list[CellRef], Verdict]],
    max_depth: int,
    trace: Trace,
) -> Result:
    """The majority answer of the samples with its evidence cells (from the samples that
    gave it) and its verdict, or why there is none."""
    answer, votes = majority_vote([o.answer for o in outcomes])
    trace.event("decision", stage="vote", votes=votes, answer=answer)
    if answer is not None:
        key = normalize_answer(answer)
        agreeing = [o for o in outcomes if o.answer and normalize_answer(o.answer) == key]
        cells, verdict = evidence(answer, agreeing)
        return Result(
            answer=answer, status="answered", evidence=cells, details={"votes": votes},
            verified=verdict.verified, verification=verdict.why,  # type: ignore[arg-type]
        )  # fmt: skip
    failures = [o for o in outcomes if o.status in ("llm_error", "context", "unformatted")]
    status: Status = "failed" if len(failures) == len(outcomes) else "insufficient"
    reason = (
        failures[0].reason
        if failures and status == "failed"
        else f"no Final Answer within {max_depth} steps"
    )
    return Result(answer=None, status=status, details={"votes": votes, "reason": reason})
