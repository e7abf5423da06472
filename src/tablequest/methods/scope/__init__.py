"""TabScope: question-adaptive scope selection over one table (arXiv:2609.03395).

Classify the question (7 types), pick the localized or full-table path by the fixed policy of
Table 9, build the sub-table by operation-aware row and column retrieval aggregated over K
samples (Eqs 2–5), refine it once, and answer. See `method` for the algorithm and
docs/methods.md for every choice the paper leaves open.
"""

from __future__ import annotations

from tablequest.methods.base import MethodContext
from tablequest.methods.registry import register_method
from tablequest.methods.scope import prompts
from tablequest.methods.scope.aggregate import Aggregation, Candidate, aggregate
from tablequest.methods.scope.method import TabScope
from tablequest.methods.scope.options import PRESETS, ScopeOptions
from tablequest.methods.scope.policy import POLICY, QUESTION_TYPES, policy_scope
from tablequest.methods.scope.retrieval import match_columns

__all__ = [
    "POLICY",
    "PRESETS",
    "QUESTION_TYPES",
    "Aggregation",
    "Candidate",
    "ScopeOptions",
    "TabScope",
    "aggregate",
    "factory",
    "match_columns",
    "policy_scope",
    "prompts",
    "register",
]


def factory(options: ScopeOptions, context: MethodContext) -> TabScope:
    """Build TabScope from its options and the method context."""
    return TabScope(options, context)


def register() -> None:
    """Register ``scope`` in the method registry (a `DEFAULT_METHODS` hook)."""
    register_method(
        "scope",
        factory,
        ScopeOptions,
        input="table",
        description="TabScope: classify the question, localize (op-aware rows/columns, "
        "K-sample aggregation, refinement) or keep the full table, then answer",
        paper=(
            "TabScope: Question-Adaptive Scope Selection for Table Question "
            "Answering (Wang, Gan and Qi), arXiv:2609.03395"
        ),
    )
