"""The judge prompts and reply parsers of `tablequest.eval.metrics.judge` (see its doc).

`EVAL_PROMPTS` and `SCORE_REPAIR` are RealHiTBench's (``inference/gpt_eval_prompt.py`` and
``gpt_eval.py`` of cspzyy/RealHiTBench), verbatim, typos included; `PAIR_PROMPT` is ours (the
DTR paper gives no prompt for its pairwise Win / Score Rate).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from tablequest.errors import UsageError
from tablequest.llm import ParseError, extract_json, strip_think

__all__ = [
    "DIMENSIONS",
    "EVAL_PROMPTS",
    "PAIR_PROMPT",
    "SCORE_REPAIR",
    "BadScore",
    "BadVerdict",
    "JudgeError",
    "JudgeItem",
    "Replies",
    "Verdict",
    "eval_prompt",
    "pair_prompt",
    "parse_score",
    "parse_verdicts",
]

T = TypeVar("T")
DIMENSIONS = ("accuracy", "analysis_depth", "feasibility", "aesthetics")
Verdict = Literal["A", "B", "tie"]


# -- RealHiTBench's judge prompts (verbatim) ----------------------------------------------------
def _rhb_prompt(kind: str, criterion: str, step3_end: str, table: bool) -> str:
    # upstream lines end with two spaces ("  \n"); written out so the source has none
    return (
        "\nSuppose you are an expert in table analysis and your task is to rate the user "
        "answer on one metric based on the table content, question and corresponding "
        "reference answer.  \n"
        f"You will be given table content and a question about {kind} of the table. And the "
        "corresponding reference answer to a question and the answer from the user.  \n"
        "Your task is to rate the answer on one metric.  \n"
        "Please make sure you read and understand these instructions carefully. Please keep "
        "this document open while reviewing, and refer to it as needed.  \n"
        "Evaluation Criteria:  \n"
        f"{criterion}\n"
        "Evaluation Steps:  \n"
        "1. Read the table carefully and fully understand the contents of the table.\n"
        "2. Read the result and compare it to the reference answer and the table. Determine "
        "if the answer is correct and if not score it based on how different it is from the "
        "correct answer.\n"
        "3. Assign a score for correctness on a scale of 0 to 100, where 0 is the lowest and "
        f"100 is the highest based on the Evaluation Criteria.{step3_end}\n"
        + ("Table:\n{Table}\n" if table else "")
        + "Question:\n{Question}\nReference Answer:\n{Reference_Answer}\nUser Answer:\n"
        "{User_Answer}\nEmphasize: you need to make sure your final answer is formatted in "
        "this way: [Score]: xx/100\n"
    )


_CORRECTNESS = (
    "Correctness (1-100) - the answer should be as close as possible to the reference "
    "answer, with perfectly equal answers receiving full marks, smaller differences receiving "
    "higher marks, and larger differences receiving only lower marks."
)
_COHERENCE = (
    "Coherence (1-100) - the collective quality of all sentences. The summary should be "
    "well-structured and well-organized. The summary should not just be a heap of related "
    "information, but should build from sentence to sentence to a coherent body of "
    "information about a topic. A high scoring analysis should be able to cover all parts of "
    "the problem that need to be summarized, comprehensively and correctly"
)
EVAL_PROMPTS: dict[str, str] = {
    "Rudimentary Analysis": _rhb_prompt("rudimentary analysis", _CORRECTNESS, "   ", False),
    "Summary Analysis": _rhb_prompt("summary analysis", _COHERENCE, "   ", True),
    "Predictive Analysis": _rhb_prompt("predictive analysis", _CORRECTNESS, "", False),
    "Exploratory Analysis": _rhb_prompt("exploratory analysis", _CORRECTNESS, "   ", False),
    # upstream's Anomaly prompt says "exploratory analysis" too; kept verbatim
    "Anomaly Analysis": _rhb_prompt("exploratory analysis", _CORRECTNESS, "   ", True),
}
SCORE_REPAIR = (
    "Note: Please check your output format. You do not need to do much explaining, just give "
    'the final answer in the given format: "[Score]: xx/100".'
)

PAIR_PROMPT = """You are an expert in table analysis. Two assistants answered the same \
analytical question about a table. Compare the two answers on each criterion below and say \
which answer is better, or "tie" when they are equally good.

Criteria:
- accuracy: the facts, numbers and conclusions agree with the reference answer{key_note}.
- analysis_depth: the answer goes beyond the bare result where the question calls for it: \
it explains its steps, interprets the numbers, and reports trends, comparisons or caveats.
- feasibility: the analysis could be carried out and checked on the table: concrete, \
executable steps or code, no invented data, no impossible operations.
- aesthetics: the answer is clearly organised and easy to read (structure, formatting, \
labelled charts or tables where the question asks for them).

Judge the content only; neither the order of the answers nor their length should sway you.

Question:
{question}
Reference answer:
{reference}
{key_points}Answer A:
{answer_a}
Answer B:
{answer_b}

Reply with one JSON object and nothing else, with "A", "B" or "tie" for every criterion:
{{"accuracy": "A|B|tie", "analysis_depth": "A|B|tie", "feasibility": "A|B|tie", \
"aesthetics": "A|B|tie"}}"""


class JudgeError(UsageError):
    """Unusable judge input (a run file, an option); the message names it and the fix."""


class BadScore(ParseError):
    kind = "bad_score"


class BadVerdict(ParseError):
    kind = "bad_verdict"


@dataclass(frozen=True)
class JudgeItem:
    """What the judge sees of one question besides the answer(s)."""

    question: str
    reference: str
    sub_type: str | None = None
    table: str | None = None
    key_points: tuple[str, ...] = ()


# -- parsing ------------------------------------------------------------------------------------
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")


def parse_score(text: str) -> float:
    """The 0–100 score of a judge reply (RealHiTBench's rule, see module doc).

    Raises:
        BadScore: no marker, no number after it, or a number outside 0–100.
    """
    reply = strip_think(text)
    for marker in ("[Score]:", "Score:"):
        if marker in reply:
            rest = reply.split(marker)[-1].strip().lstrip("*").strip()
            found = _NUMBER.match(rest)
            if found is None:
                raise BadScore(f"no number after {marker!r}", text)
            value = float(found.group())
            if not 0.0 <= value <= 100.0:
                raise BadScore(f"score {value:g} is outside 0-100", text)
            return value
    raise BadScore("no '[Score]: xx/100' in the reply", text)


def parse_verdicts(text: str) -> dict[str, Verdict]:
    """The per-dimension verdicts ("A", "B" or "tie") of a pairwise judge reply.

    Raises:
        ParseError: no JSON object, or a dimension missing or not A / B / tie.
    """
    data = extract_json(text, expect=dict)
    out: dict[str, Verdict] = {}
    for dim in DIMENSIONS:
        value = str(data.get(dim, "")).strip().strip("\"'").lower()
        if value not in ("a", "b", "tie"):
            raise BadVerdict(f'{dim!r} must be "A", "B" or "tie", got {value!r}', text)
        out[dim] = "tie" if value == "tie" else "A" if value == "a" else "B"
    return out


# -- prompts and inputs -------------------------------------------------------------------------
def eval_prompt(item: JudgeItem, answer: str) -> str:
    """RealHiTBench's judge prompt for `item`'s sub-type, filled in.

    Raises:
        JudgeError: the sub-type has no prompt, or its prompt needs the table and none is given.
    """
    template = EVAL_PROMPTS.get(item.sub_type or "")
    if template is None:
        raise JudgeError(
            f"no LLM-EVAL prompt for sub-type {item.sub_type!r}; one of: " + ", ".join(EVAL_PROMPTS)
        )
    if "{Table}" in template and item.table is None:
        raise JudgeError(f"the {item.sub_type} prompt shows the table: pass the data folder")
    values = {"Question": item.question, "Reference_Answer": item.reference,
              "User_Answer": answer, "Table": item.table or ""}  # fmt: skip
    return template.format_map(values)


def pair_prompt(item: JudgeItem, first: str, second: str) -> str:
    """The pairwise prompt (ours) with `first` shown as Answer A and `second` as Answer B."""
    points = "".join(f"- {p}\n" for p in item.key_points)
    return PAIR_PROMPT.format(
        key_note=" and covers the key points" if points else "",
        question=item.question,
        reference=item.reference or "(none given)",
        key_points=f"Key points:\n{points}" if points else "",
        answer_a=first,
        answer_b=second,
    )


class Replies(Generic[T]):
    """A parser that remembers the last reply it saw and the last parse error."""

    def __init__(self, parse: Callable[[str], T]) -> None:
        self.parse = parse
        self.last = ""
        self.error = ""

    def __call__(self, text: str) -> T:
        self.last = text
        try:
            return self.parse(text)
        except ParseError as exc:
            self.error = str(exc)
            raise
