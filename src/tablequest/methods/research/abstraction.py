"""Abstracted experience written by the model (DTR §3.4 "Abstracted Experience Feedback").

After a failed or invalid path (Alg. 1 lines 21–23) the rule-based analysis (`reflect`) finds
what went wrong by error class; with ``llm_experience`` one call then asks the model for the
paper's two parts — a **Feedback Summary** (one bullet per observation and the action that
avoids it) and an **Execution Reflection** (how the next execution should proceed) — given
the question's executed paths, their step summaries and errors, and the rule-based findings.

Choices (ours; the paper shows one example and no prompt):
- **One call, no repair request**; a reply without ``Feedback Summary`` bullets, an LLM error,
  or no room in the budget gives the template lessons instead (a reply without bullets leaves
  the LLM cache: `LLM.discard`, issue 39), and the source is recorded
  (trace event ``decision/experience`` and ``details["experience"]``). *No room* means one call
  would leave fewer steps than the shortest candidate path needs: the next path is worth
  more than a better-worded lesson.
- **Value-agnostic** (the paper: "agnostic to specific table values"): a bullet is refused when
  it quotes a cell value of the table (`ValueIndex`): a row or cell label of three or more
  characters that is not also a header word, as a whole phrase (word tokens, case-insensitive,
  labels of at most `MAX_LABEL_WORDS` words), or a number
  equal to a numeric cell (integers 0–9 are allowed: counts, "top 3"). Header and column names
  are structure, so they may be named (the paper's example names the sub-column); so are the
  labels of aggregation rows ("Total", "All": `_aggregate` rows) and `GENERIC` words. Refused
  bullets are listed in the trace; when all are refused, the template lessons are used.
- The LLM's bullets replace the template's texts; template lessons that carry a
  machine-checkable `Rule` are kept (the rule drives path revision and the prior, §3.5).
  Bullets are remembered (memory, later questions); the reflection line guides only the
  current question's next paths (it names this question's plan).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from tablequest.llm import BadCall, LLMError, ParseError, strip_think
from tablequest.methods.research.execute import PathOutcome
from tablequest.methods.research.memory import Lesson
from tablequest.methods.research.prompts import experience_messages

if TYPE_CHECKING:
    import pandas as pd

    from tablequest.methods.research.options import ResearchOptions
    from tablequest.methods.research.state import QuestionRun

__all__ = ["Abstraction", "ValueIndex", "abstract", "parse_experience"]

Source = Literal["llm", "template"]
MAX_BULLETS = 4
MAX_LABEL_WORDS = 6
"""Longer labels (sentences in cells) are not matched: a lesson rarely quotes them."""
_BULLET = re.compile(r"^\s*(?:[-*•]\s*)+|^\s*\d+[.)]\s+")
_SUMMARY = re.compile(r"feedback\s+summary\s*:?", re.I)
_REFLECTION = re.compile(r"execution\s+reflection\s*:?", re.I)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?")
_SKIP_COLUMNS = {"_aggregate"}
GENERIC = {"total", "totals", "subtotal", "sum", "all", "other", "others", "average", "mean"}
"""Row labels that name structure (aggregation rows), never refused."""


@dataclass
class Abstraction:
    """The lessons of one reflection and where they came from."""

    lessons: list[Lesson]
    reflection: str = ""
    source: Source = "template"
    reason: str | None = None
    refused: list[str] = field(default_factory=list)


def _clean(line: str) -> str:
    text = _BULLET.sub("", line).replace("**", "").replace("*", "").strip()
    return " ".join(text.split())[:300]


def parse_experience(text: str) -> tuple[list[str], str]:
    """(summary bullets, reflection) of a reply in the paper's format.

    Raises:
        BadCall: no ``Feedback Summary`` with at least one bullet (a `ParseError`).
    """
    body = strip_think(text)
    start = _SUMMARY.search(body)
    if start is None:
        raise BadCall("the reply has no 'Feedback Summary:' section", text)
    rest = body[start.end() :]
    end = _REFLECTION.search(rest)
    summary, reflection = (rest[: end.start()], rest[end.end() :]) if end else (rest, "")
    bullets = []
    for line in summary.splitlines():
        if _BULLET.match(line) and _clean(line):
            bullets.append(_clean(line))
    if not bullets:
        raise BadCall("the Feedback Summary has no bullet", text)
    first = next((x for x in reflection.strip().splitlines() if x.strip()), "")
    return bullets[:MAX_BULLETS], _clean(first)


def _words(text: str) -> str:
    """Lower-case word tokens joined by one space: how labels and lessons are compared."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _as_float(text: str) -> float | None:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return None if math.isnan(value) or math.isinf(value) else value


class ValueIndex:
    """The cell values of an execution frame that a value-agnostic lesson may not quote."""

    def __init__(self, df: pd.DataFrame) -> None:
        header_words = {w.lower() for c in df.columns for w in re.findall(r"\w+", str(c))}
        labels: set[str] = set()
        numbers: set[float] = set()
        structural: set[str] = set(GENERIC)
        flags = df["_aggregate"] if "_aggregate" in df.columns else None
        for name in df.columns:
            if name in _SKIP_COLUMNS:
                continue
            for value in df[name].dropna().unique():
                self._add(value, labels, numbers)
            if flags is not None and df[name].dtype == object:
                for value in df.loc[flags.astype(bool), name].dropna():
                    self._add(value, structural, set())
        for value in df.index:
            self._add(value, set(), numbers)
        self.labels = {
            x
            for x in labels
            if len(x) >= 3
            and x not in header_words
            and x not in structural
            and len(x.split()) <= MAX_LABEL_WORDS
        }
        self.numbers = {round(x, 6) for x in numbers if not (x.is_integer() and 0 <= x <= 9)}

    @staticmethod
    def _add(value: object, labels: set[str], numbers: set[float]) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int | float):
            if not (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
                numbers.add(float(value))
            return
        for part in str(value).split(" / "):
            text = " ".join(part.split()).lower()
            number = _as_float(text)
            if number is not None:
                numbers.add(number)
            elif words := _words(text):
                labels.add(words)

    def quoted(self, text: str) -> list[str]:
        """The table values `text` quotes (empty: value-agnostic)."""
        words = _words(text).split()
        found = [
            phrase
            for n in range(1, min(MAX_LABEL_WORDS, len(words)) + 1)
            for i in range(len(words) - n + 1)
            if (phrase := " ".join(words[i : i + n])) in self.labels
        ]
        for token in _NUMBER.findall(text):
            number = _as_float(token)
            if number is not None and round(number, 6) in self.numbers:
                found.append(token)
        return sorted(found)


def _describe(outcome: PathOutcome, i: int) -> str:
    steps = "; ".join(f"{r.op}: {r.think[:160] or '(no summary)'}" for r in outcome.ops)
    if outcome.valid:
        result = "ran, answer has the expected format"
    else:
        result = f"failed at {outcome.failed_op or 'the end'}: {(outcome.error or 'invalid')[:300]}"
    return f"π{i} = {' → '.join(outcome.path)}: {result}. Steps: {steps or '(none)'}"


def _room(run: QuestionRun) -> str | None:
    left = run.q.budget.remaining_for("experience")
    if left < 1:
        return "step budget exhausted"
    shortest = min((len(c.path) for c in run.candidates), default=1)
    if left - 1 < shortest:
        return f"no room: {left} step(s) left and the next path needs {shortest}"
    return None


def _ask(
    run: QuestionRun, question: str, template: Sequence[Lesson], opts: ResearchOptions
) -> tuple[list[str], str]:
    """The model's lessons (`parse_experience`); a reply that does not parse leaves the LLM
    cache (`LLM.discard`, issue 39) before its `ParseError` propagates."""
    q = run.q
    assert q.llm is not None
    messages = experience_messages(
        question=question, query_type=run.query_type,
        paths=[_describe(o, i) for i, o in enumerate(run.outcomes, start=1)],
        findings=[x.text for x in template],
    )  # fmt: skip
    q.budget.spend("experience")
    reply = q.llm.chat(messages, temperature=opts.temperature, max_tokens=opts.max_tokens)[0]
    try:
        return parse_experience(reply.text)
    except ParseError:
        q.llm.discard(reply)
        raise


def abstract(
    run: QuestionRun, question: str, template: Sequence[Lesson], opts: ResearchOptions
) -> Abstraction:
    """The question's new lessons after a failure: the model's, else `template`."""
    reason = "llm_experience is off" if not opts.llm_experience else _room(run)
    if reason is None and run.q.llm is not None:
        try:
            bullets, reflection = _ask(run, question, template, opts)
        except (LLMError, ParseError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
        else:
            if run.values is None:  # built once per question, on first use
                run.values = ValueIndex(run.comp.frame.df)
            values = run.values
            kept, refused = _agnostic(bullets, values)
            if kept:
                lessons = [Lesson(x) for x in kept] + [x for x in template if x.rule is not None]
                if values.quoted(reflection):
                    refused, reflection = [*refused, reflection], ""
                return Abstraction(lessons, reflection, "llm", refused=refused)
            reason = "every lesson quoted table values"
            return Abstraction(list(template), "", "template", reason, refused)
    return Abstraction(list(template), "", "template", reason or "no model")


def _agnostic(bullets: Iterable[str], values: ValueIndex) -> tuple[list[str], list[str]]:
    kept: list[str] = []
    refused: list[str] = []
    for text in bullets:
        (refused if values.quoted(text) else kept).append(text)
    return kept, refused
