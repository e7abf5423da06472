"""Parsers for what real models write: JSON in prose, `f_row`/`f_col` calls, tagged answers.

Every failure is a `ParseError` subclass naming what was wrong and quoting the text, so callers
can make one repair request (`ask_with_repair`) and then apply their documented fallback.

Choices:
- ``<think>…</think>`` blocks are removed first; an unclosed ``<think>`` drops the rest of the
  text (the model ran out of tokens while thinking); a lone ``</think>`` keeps what follows.
- `extract_json` (`tablequest.llm.parse_json`) reads JSON out of prose, fences and cut-off
  replies.
- `f_row` / `f_col`: the last call in the text wins (models often restate the format first).
- `parse_react` reads up to the first ``Observation:`` (anything after it was hallucinated);
  when both an Action and a Final Answer appear, the earlier one wins.
- `is_non_answer`: refusals and tool syntax are never answers (issue 12: chaos runs were
  "answered" with the text ``insufficient`` and with ``f_row([*])``). It is conservative:
  the whole answer must be a refusal word or phrase ("insufficient evidence", "mismatch",
  "N/A"), start like a refusal sentence ("I cannot answer…", "The table does not
  contain…"; "I can't" only before a verb of answering, so the song "I Can't Stop Loving
  You" stays an answer; "I don't know" is taken as a refusal), be empty, or be a tool call
  (``f_row(...)``, ``f_col(...)``, ``[*]``); short real answers such as "none", "no", "0"
  or "unknown" are kept.
- `is_chatter` (issue 36): a greeting or an assistant's self-introduction ("Hello! I am a
  helpful assistant…", "How can I help you today?") is never an answer either; a bare
  "Hello" or a title such as "Hello, Dolly!" stays one. A method whose reply has no answer in
  its own format fails with `NO_ANSWER_IN_FORMAT` and records `reply_start` in the trace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from tablequest.errors import RunError

_EXCERPT = 200

NO_ANSWER_IN_FORMAT = "the model's reply had no answer in the expected format"
"""The reason of a question whose model reply had no answer in the method's own format (a
greeting, prose without the answer marker): never "answered" (issue 36)."""


class ParseError(RunError):
    """Model output that could not be parsed.

    Attributes:
        kind: Short machine-readable reason ("no_json", "truncated", ...).
        text_excerpt: The start of the offending text.
    """

    kind = "parse"

    def __init__(self, message: str, text: str):
        excerpt = reply_start(text)
        super().__init__(f"{message}: {excerpt!r}")
        self.text_excerpt = excerpt


class NoJSONFound(ParseError):
    kind = "no_json"


class WrongJSONType(ParseError):
    kind = "wrong_type"


class TruncatedOutput(ParseError):
    kind = "truncated"


class BadCall(ParseError):
    kind = "bad_call"


class NoAnswer(ParseError):
    kind = "no_answer"


class BadReAct(ParseError):
    kind = "react"


# -- <think> and <answer> -----------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.I)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.I)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
_ANSWER_OPEN = re.compile(r"<answer>", re.I)
_ANSWER_CLOSE = re.compile(r"</answer>", re.I)
_ANSWER_LINE = re.compile(
    r"^\s*(?:\*\*)?(?:final\s+)?answer(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*(.+)$", re.I | re.M
)


def strip_think(text: str) -> str:
    """Remove reasoning blocks (closed, unclosed, or a lone closing tag) and strip."""
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text.strip()


def extract_answer(text: str, *, require_tag: bool = False, bare: bool = True) -> str:
    """The answer in ``<answer>…</answer>`` (the last non-empty one), after removing thinking.

    Without a tag: an unclosed ``<answer>`` yields what follows it; else (unless `require_tag`)
    a final ``Answer:`` line, else (when `bare`) the whole remaining text.

    Raises:
        NoAnswer: nothing is left, `require_tag` and no tag was found, or not `bare` and
            neither a tag nor an ``Answer:`` line was found.
    """
    body = strip_think(text)
    tagged = [m.group(1).strip() for m in _ANSWER.finditer(body)]
    tagged = [t for t in tagged if t]
    if tagged:
        return tagged[-1]
    opened = list(_ANSWER_OPEN.finditer(body))
    if opened:
        rest = _ANSWER_CLOSE.sub("", body[opened[-1].end() :]).strip()
        if rest:
            return rest
    elif not require_tag:
        lines = _ANSWER_LINE.findall(body)
        if lines:
            return str(lines[-1]).strip()
        if body and bare:
            return body
    raise NoAnswer("no <answer>…</answer> in the model output", text)


def reply_start(text: str | None, limit: int = _EXCERPT) -> str:
    """The start of a model reply for a trace event: `limit` characters, "…" when cut."""
    text = text or ""
    return text if len(text) <= limit else text[:limit] + "…"


_CHATTER = re.compile(
    r"\b(?:i\s*am|i'm)\s+(?:just\s+)?(?:a|an|your)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:assistant|ai|chatbot|bot|language\s+model)\b"
    r"|\bas\s+an?\s+(?:ai|assistant|(?:large\s+)?language\s+model)\b"
    r"|\b(?:how|what)\s+(?:can|could|may|shall)\s+i\s+(?:help|assist|do\s+for)\b"
    r"|\b(?:happy|glad)\s+to\s+(?:help|assist)\b",
    re.I,
)


def is_chatter(text: str) -> bool:
    """True when `text` is a greeting or an assistant's self-introduction, not an answer.

    Conservative (module docstring): it must introduce an assistant ("I am a helpful
    assistant", "as an AI") or offer help ("How can I help you?"); a greeting word alone
    ("Hello", "Hello, Dolly!") is kept as an answer.
    """
    return bool(_CHATTER.search(" ".join(strip_think(text).split())))


# -- refusals and tool syntax --------------------------------------------------------------------

_NON_ANSWERS = frozenset(
    {
        "insufficient",
        "insufficient evidence",
        "insufficient information",
        "insufficient data",
        "insufficient context",
        "not enough information",
        "not enough evidence",
        "mismatch",
        "n/a",
        "not applicable",
        "no answer",
        "cannot answer",
        "cannot be answered",
        "cannot be determined",
        "unanswerable",
        "your final answer",  # a prompt template echoed back (seen from a base model)
        "your answer",
        "final answer",
        "*",
        "[*]",
        "[]",
        "{}",
    }
)
_REFUSAL_VERBS = (
    r"(?:answer|determine|find|tell|say|provide|identify|infer|locate|give|be sure|confirm|"
    r"verify|extract|compute|calculate)"
)
_REFUSAL = re.compile(
    rf"^(?:i\s*(?:cannot|can't|can not|am unable to|'m unable to|am not able to)\s+{_REFUSAL_VERBS}"
    r"|i\s*(?:do not|don't)\s+(?:know|have enough|have the|have access|see)"
    rf"|(?:it\s+is\s+)?(?:impossible|not possible)\s+to\s+{_REFUSAL_VERBS}"
    rf"|unable\s+to\s+{_REFUSAL_VERBS}"
    r"|(?:the\s+)?(?:given\s+|provided\s+)?(?:table|tables|data|evidence|information)\s+"
    r"(?:does|do)\s*n[o']t\s+(?:contain|provide|include|say|mention|show|give|specify|list)"
    r"|there\s+is\s+(?:no|not\s+enough|insufficient)\s+(?:information|data|evidence))\b",
    re.I,
)
_TOOL_CALL = re.compile(r"^f\\?_(?:row|col)\s*\(.*\)$", re.S | re.I)
_EDGE = "`*\"' \t\n"


def is_non_answer(text: str) -> bool:
    """True when `text` is a refusal, a placeholder or tool syntax rather than an answer.

    Thinking blocks and ``<answer>`` tags are removed first; quotes, backticks, bold marks
    and a final full stop around the answer do not matter (module docstring).
    """
    core = _ANSWER_OPEN.sub("", _ANSWER_CLOSE.sub("", strip_think(text)))
    core = core.strip(_EDGE).rstrip(".!").strip(_EDGE)
    if not core:
        return True
    flat = " ".join(core.lower().split())
    return flat in _NON_ANSWERS or bool(_TOOL_CALL.match(flat) or _REFUSAL.match(flat))


# -- f_row / f_col ------------------------------------------------------------------------------

_CALL = r"f\\?_{name}\s*\(\s*(\[(?:.*?)\]|[^()]*?)\s*\)"
_ROW_ITEM = re.compile(r"^(?:rows?)?[\s_#-]*(\d+)$", re.I)
_ROW_RANGE = re.compile(r"^(?:rows?)?[\s_#-]*(\d+)\s*(?:-|–|to)\s*(?:rows?)?[\s_#-]*(\d+)$", re.I)


def _call_args(text: str, name: str) -> list[str] | None:
    body = strip_think(text)
    matches = list(re.finditer(_CALL.format(name=name), body, re.S | re.I))
    if not matches:
        if re.search(rf"f\\?_{name}\s*\(", body, re.I):
            raise TruncatedOutput(f"f_{name}( is not closed", text)
        raise BadCall(f"no f_{name}([...]) call in the model output", text)
    inner = matches[-1].group(1).strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    return _split_items(inner)


def _split_items(inner: str) -> list[str]:
    if not any(q in inner for q in "\"'`"):  # the common case, fast for long row lists
        return [item.strip() for item in inner.split(",") if item.strip()]
    items, buf, quote = [], [], ""
    for c in inner:
        if quote:
            if c == quote:
                quote = ""
            else:
                buf.append(c)
        elif c in "\"'`":
            quote = c
        elif c == ",":
            items.append("".join(buf).strip())
            buf = []
        else:
            buf.append(c)
    items.append("".join(buf).strip())
    return [item for item in items if item]


def parse_f_row(text: str) -> list[int] | Literal["*"]:
    """Row numbers from ``f_row([row1, row 3, 5])``, or "*" for ``f_row([*])``.

    Ranges like ``row 2-4`` are expanded; duplicates dropped, order kept.

    Raises:
        BadCall: no call, or an item that is not a row number.
        TruncatedOutput: the call is not closed.
    """
    items = _call_args(text, "row") or []
    if "*" in items:
        return "*"
    rows: dict[int, None] = {}  # ordered set: long lists stay linear
    for item in items:
        single = _ROW_ITEM.match(item)
        span = None if single else _ROW_RANGE.match(item)
        if single:
            numbers: Iterable[int] = (int(single.group(1)),)
        elif span:
            lo, hi = int(span.group(1)), int(span.group(2))
            numbers = range(min(lo, hi), max(lo, hi) + 1)
        else:
            raise BadCall(f"f_row item {item!r} is not a row number", text)
        rows.update(dict.fromkeys(numbers))
    return list(rows)


def parse_f_col(text: str) -> list[str] | Literal["*"]:
    """Column names from ``f_col([name, "other name"])``, or "*" for ``f_col([*])``.

    Raises:
        BadCall: no call in the text.
        TruncatedOutput: the call is not closed.
    """
    items = _call_args(text, "col") or []
    if "*" in items:
        return "*"
    return list(dict.fromkeys(items))


# -- ReAct --------------------------------------------------------------------------------------

_LABELS = r"(thought|action\s+input|action|observation|final\s+answer)"
_LABEL_LINE = re.compile(rf"^[ \t]*(?:\*\*)?{_LABELS}(?:\*\*)?[ \t]*:(?:\*\*)?", re.I | re.M)
_LABEL_INLINE = re.compile(rf"\b{_LABELS}\s*:", re.I)
_CODE_FENCE = re.compile(r"^```[\w+-]*\s*\n?(.*?)\n?```$", re.S)


@dataclass(frozen=True, slots=True)
class ReactStep:
    """One ReAct step: a thought and either an action (with optional input) or a final answer."""

    thought: str
    action: str | None = None
    action_input: str | None = None
    final_answer: str | None = None

    @property
    def is_final(self) -> bool:
        return self.final_answer is not None


def _unfence(text: str) -> str:
    text = text.strip()
    fenced = _CODE_FENCE.match(text)
    if fenced:
        return fenced.group(1).strip()
    if len(text) > 1 and text.startswith("`") and text.endswith("`"):
        return text.strip("`").strip()
    return text


def parse_react(text: str) -> ReactStep:
    """Parse ``Thought: … Action: … [Action Input: …]`` or ``… Final Answer: …``.

    Raises:
        BadReAct: neither an action nor a final answer before the first Observation.
    """
    body = strip_think(text)
    marks = list(_LABEL_LINE.finditer(body))
    if not any(m.group(1).lower().startswith(("action", "final")) for m in marks):
        marks = list(_LABEL_INLINE.finditer(body))  # everything on one line
    parts: list[tuple[str, str]] = []
    for i, mark in enumerate(marks):
        label = " ".join(mark.group(1).lower().split())
        end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
        if label == "observation":
            break
        parts.append((label, body[mark.end() : end].strip()))
    lead = body[: marks[0].start()].strip() if marks else body
    thought = next((v for k, v in parts if k == "thought"), lead)
    for i, (label, value) in enumerate(parts):
        if label == "final answer":
            if not value:
                raise BadReAct("empty Final Answer", text)
            return ReactStep(thought=thought, final_answer=value)
        if label == "action":
            action = _unfence(value)
            if not action:
                raise BadReAct("empty Action", text)
            following = parts[i + 1] if i + 1 < len(parts) else None
            action_input = (
                _unfence(following[1]) if following and following[0] == "action input" else None
            )
            return ReactStep(thought=thought, action=action, action_input=action_input)
    raise BadReAct("no Action or Final Answer before the first Observation", text)
