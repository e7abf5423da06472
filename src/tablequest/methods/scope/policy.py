"""Question-adaptive scope selection (TabScope §3.3, Eq. 1, Table 9, App. C.4).

    τ̂ = C_θ(q, T);  z = π(τ̂, s(T)) ∈ {local, full}

The classifier (prompt App. C.4, JSON) predicts one of seven types; the fixed policy of Table 9
maps the type and the size regime (large = serialized table over 4,096 tokens) to the scope:

    type               default   large
    lookup             local     local
    order_superlative  local     local
    local_reasoning    local     local
    count_diff         local     local
    count_general      full      full
    count_frequency    full      local
    compare            full      full

Choices (ours): the type is read leniently (case, spaces, hyphens and "/" are normalized, so
"Order/Superlative" is order_superlative); an unparsable reply gets one repair request, then
the question takes the full-table path (recorded fallback, type "unclassified"). The table
preview shows the header and the first `preview_rows` rows, linearized with row ids.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from tablequest.llm import ParseError, ask_json, extract_json
from tablequest.methods.scope import prompts
from tablequest.methods.scope.state import ScopeRun, linearize

__all__ = [
    "POLICY",
    "QUESTION_TYPES",
    "BadOutput",
    "classify",
    "normalize_type",
    "policy_scope",
    "policy_table",
]

Path = Literal["local", "full"]
QUESTION_TYPES: tuple[str, ...] = (
    "lookup",
    "order_superlative",
    "local_reasoning",
    "count_diff",
    "count_general",
    "count_frequency",
    "compare",
)
POLICY: dict[str, tuple[Path, Path]] = {
    "lookup": ("local", "local"),
    "order_superlative": ("local", "local"),
    "local_reasoning": ("local", "local"),
    "count_diff": ("local", "local"),
    "count_general": ("full", "full"),
    "count_frequency": ("full", "local"),
    "compare": ("full", "full"),
}
"""Table 9: question type → (default scope, large-table scope)."""

_ALIASES = {"order": "order_superlative", "superlative": "order_superlative"}


class BadOutput(ParseError):
    """JSON of the right shape with an unusable value (unknown type or action)."""

    kind = "bad_value"


def policy_scope(question_type: str, large: bool) -> Path:
    """π(τ̂, s(T)) of Table 9."""
    default, large_scope = POLICY[question_type]
    return large_scope if large else default


def policy_table() -> list[dict[str, str]]:
    """Table 9 as rows (for `preview` and the docs)."""
    return [{"question_type": t, "default": d, "large": g} for t, (d, g) in POLICY.items()]


def normalize_type(value: Any) -> str | None:
    """One of `QUESTION_TYPES`, or None."""
    if not isinstance(value, str):
        return None
    key = re.sub(r"[\s/\-]+", "_", value.strip().strip("\"'").lower()).strip("_")
    key = _ALIASES.get(key, key)
    return key if key in POLICY else None


def _parse_type(text: str) -> str:
    data = extract_json(text, dict)
    value = data.get("question_type", data.get("type"))
    found = normalize_type(value)
    if found is None:
        raise BadOutput(
            f"unknown question_type {value!r}; one of {', '.join(QUESTION_TYPES)}", text
        )
    return found


def classify(run: ScopeRun) -> str | None:
    """The predicted type (App. C.4), or None after a recorded fallback."""
    table, opts = run.table, run.options
    preview = linearize(table.sub_table(rows=table.row_ids[: opts.preview_rows]))
    text = prompts.fill(
        prompts.CLASSIFY,
        QUESTION=run.question,
        TABLE_COLUMNS=", ".join(table.columns),
        NUMBER_OF_ROWS=table.n_rows,
        NUMBER_OF_COLUMNS=table.n_cols,
        NUMBER_OF_TOKENS=run.table_tokens,
        TABLE_PREVIEW=preview,
    )
    messages = prompts.user(text)
    fit = run.fit(messages, run.count(preview), len(preview), opts.max_tokens)
    if not fit.ok:
        run.fallback("classify", "classifier prompt does not fit the model context")
        return None
    asked = ask_json(
        run.query.llm,  # type: ignore[arg-type]
        messages,
        _parse_type,
        repair_prompt=prompts.REPAIR_JSON,
        budget=run.query.budget,
        kind="classify",
        trace=run.query.trace,
        on_error=lambda reason: run.fallback("classify", reason),
        temperature=opts.temperature,
        max_tokens=fit.max_tokens,
    )
    if asked.value is None and asked.error is None:
        run.fallback("classify", "no usable question type after one repair → full table")
    return asked.value
