"""TabScope options: the paper's defaults, its variants and ablations, and named configurations.

Defaults (TabScope, arXiv:2609.03395): K = 4 retrieval samples (§3.4), temperature 0.5 for retrieval
sampling and 0 for every other component, QA at most 2,048 new tokens (App. D), α = 0.2 in the
paper's range 0.1–0.3 (Eq. 5), large table = serialized table over 4,096 tokens (Table 9,
App. E.1). Variants and ablations (Tables 2 and 5) are options: ``scope`` (policy | local |
full), ``aggregate``, ``refine``, ``op_aware``; the paper's two fixed-scope baselines are the
named configurations ``decomposition-only`` (localize every question, no classifier call) and
``full-cot`` (full-table chain of thought, no classifier call).

Named configurations (``-c NAME``) are comma-separated presets and ``key=value`` pairs, e.g.
``no-refine``, ``k=8,alpha=0.3`` or ``decomposition-only,k=1``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from tablequest.methods.options import MethodOptions, OptionError, option

__all__ = ["PRESETS", "Scope", "ScopeOptions"]

Scope = Literal["policy", "local", "full"]

PRESETS: dict[str, dict[str, Any]] = {
    "tabscope": {},
    "decomposition-only": {"scope": "local", "classify": False},
    "full-cot": {"scope": "full", "classify": False},
    "no-aggregate": {"aggregate": False},
    "no-refine": {"refine": False},
    "no-op-aware": {"op_aware": False},
    "no-scope": {"scope": "local", "classify": False},
}
"""Rows of the paper's Tables 2 and 5 (``no-scope`` = w/o scope selection = decomposition-only)."""


class ScopeOptions(MethodOptions):
    """Every knob of TabScope; ``tablequest methods scope`` lists them with their sources."""

    CONFIGS: ClassVar[tuple[str, ...]] = (*PRESETS, "k=8,alpha=0.3")

    scope: Scope = option(
        "policy",
        "policy: question type and table size choose (Table 9); local / full force a path",
        paper="TabScope §3.3, Table 9",
    )
    classify: bool = option(
        True,
        "ask the question-type classifier even when the scope is forced (for the type-wise "
        "report); the scope policy always classifies",
        paper="TabScope App. C.4",
    )
    k: int = option(4, "retrieval samples K per dimension", paper="TabScope §3.4", ge=1, le=32)
    sample_temperature: float = option(
        0.5, "temperature of retrieval sampling", paper="TabScope App. D", ge=0.0, le=2.0
    )
    temperature: float = option(
        0.0, "temperature of every other call", paper="TabScope App. D", ge=0.0, le=2.0
    )
    alpha: float = option(
        0.2,
        "compactness penalty α in S = Support / ρ^α (paper: 0.1–0.3)",
        paper="TabScope Eq. 5",
        ge=0.0,
        le=1.0,
    )
    aggregate: bool = option(
        True,
        "evidence aggregation over K samples; false = one greedy retrieval per dimension",
        paper="TabScope Table 5",
    )
    refine: bool = option(True, "one refinement round", paper="TabScope §3.4, App. C.2")
    op_aware: bool = option(
        True,
        "operation-aware retrieval prompts; false = plain relevance prompts (ablation)",
        paper="TabScope §3.4, Table 5",
    )
    logprobs: bool = option(
        True,
        "ask for token log-probabilities: s(c) = mean token logprob (0 when absent)",
        paper="TabScope §3.4",
    )
    sampling: Literal["n", "separate"] = option(
        "n",
        "n: one request with n=K (missing samples as concurrent single calls); "
        "separate: K concurrent single requests",
    )
    large_tokens: int = option(
        4096,
        "serialized-table tokens above which a table is large",
        paper="TabScope Table 9, App. E.1",
        ge=1,
    )
    qa_max_tokens: int = option(
        2048, "new tokens of the answer call", paper="TabScope App. D", ge=16
    )
    max_tokens: int = option(
        2048, "new tokens of the classifier, retrieval and refinement calls", ge=16
    )
    context_tokens: int | None = option(
        None,
        "the model's context in tokens (none: as the server reports, else 32768)",
        ge=256,
    )
    tokenizer: Literal["auto", "server", "local"] = option(
        "auto",
        "who counts tokens: auto = the server's /tokenize when offered, else local "
        "(MiniLM WordPiece when installed, else ceil(chars / 4))",
    )
    preview_rows: int = option(5, "rows in the classifier's table preview", ge=0, le=100)
    repairs: int = option(2, "repair requests the default step cap leaves room for", ge=0, le=10)

    @classmethod
    def from_config(cls, name: str) -> Self:
        """Presets and ``key=value`` pairs, comma-separated (``no-refine,k=8``).

        Raises:
            OptionError: an unknown preset or option, or a bad value.
        """
        values: dict[str, Any] = {}
        for item in (p.strip() for p in name.split(",")):
            if not item:
                continue
            if "=" in item:
                key, _, value = item.partition("=")
                key = key.strip().lower().replace("-", "_")
                if key not in cls.model_fields:
                    raise OptionError(
                        f"unknown option {key!r} in configuration {name!r}; "
                        f"known: {', '.join(sorted(cls.model_fields))}"
                    )
                values[key] = value.strip()
            elif item.lower() in PRESETS:
                values.update(PRESETS[item.lower()])
            else:
                raise OptionError(
                    f"unknown TabScope configuration {item!r}; presets: {', '.join(PRESETS)} "
                    "or key=value pairs such as k=8,alpha=0.3"
                )
        try:
            return cls.model_validate(values)
        except ValueError as exc:
            raise OptionError(f"configuration {name!r}: {exc}") from None

    @property
    def samples(self) -> int:
        """Retrieval samples per dimension (1 without aggregation)."""
        return self.k if self.aggregate else 1

    @property
    def classifies(self) -> bool:
        """Whether the classifier runs (always under the policy)."""
        return self.scope == "policy" or self.classify

    def retrieval_calls(self) -> int:
        """Requests of one retrieval dimension (1 with n=K, K with separate requests)."""
        return self.samples if self.sampling == "separate" else 1

    def default_steps(self) -> int:
        """classify + rows + columns + refine + answer (+ room for `repairs` repairs)."""
        steps = 1 + self.repairs  # the answer
        if self.classifies:
            steps += 1
        if self.scope != "full":
            steps += 2 * self.retrieval_calls() + int(self.refine)
        return steps
