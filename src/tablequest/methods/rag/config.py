"""TableRAG configuration: the paper's defaults, the official code's solver settings, baselines.

Paper §4.3: B = 10,000, K = 5 (K = 30 for RandRowSampling and RowColRetrieval); every
experiment majority-votes 10 runs. Official code (google-research/table_rag): ReAct depth 5,
sampling temperature 0.8 (top-p 0.95, which our LLM interface does not expose), stop at
"Observation:", 128 tokens per step, self-consistency ``--sc`` (default 1) by majority vote.

Choices (ours): temperature 0 when sc = 1 (deterministic and cacheable) and the official 0.8
when sc > 1; 512 tokens per step (the official 128 cuts off models that think before acting;
the stop sequence ends well-behaved steps early anyway); a context budget of 16,385 tokens
(gpt-3.5-turbo-0125, the paper's main model) for ReadTable and every solver prompt; at most
10 queries of each kind are used, so the solver prompt stays O(K).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from tablequest.methods.rag.retrieval import ENCODER_KINDS, EncoderKind

Baseline = Literal["read-table", "read-schema", "rand-rows", "rowcol"]
BASELINES: tuple[Baseline, ...] = ("read-table", "read-schema", "rand-rows", "rowcol")
SchemaMode = Literal["retrieval", "all"]
CellMode = Literal["retrieval", "none"]
CellScope = Literal["categorical", "all"]


@dataclass(frozen=True)
class RagConfig:
    """All knobs of TableRAG and its baselines. Named like the paper: ``B=10000,K=5``.

    Attributes:
        budget: Cell encoding budget B.
        top_k: K, results per query (TableRAG) — see `baseline_k` for the baselines.
        encoder: minilm | bm25 | hybrid | api.
        sc: Self-consistency samples (majority vote).
        baseline: Run a baseline instead of TableRAG (same solver).
        max_steps: ReAct iterations (official max_depth).
        temperature: None = 0 for sc = 1, 0.8 for sc > 1.
        step_max_tokens: Tokens per ReAct step and per query-expansion reply.
        context_tokens: Context budget checked before every solver call.
        baseline_k: K of RandRowSampling and RowColRetrieval (paper: 30).
        seed: Seed of RandRowSampling.
        action_timeout: Seconds per Action in the sandbox.
        max_queries: Queries of each kind kept from the expansion.
        max_observation_chars: Longer observations are cut (marked).
        max_cell_chars: Longer cell values are cut in the solver prompt.
        expansion: False = the question itself is the only query (ablation, Fig. 7).
        schema_mode: "all" = every schema entry in the prompt (ablation, Table 6).
        cell_mode: "none" = no cell retrieval (ablation, Table 6).
        cell_scope: Columns of the cell DB: categorical ones (official) or all.
        hybrid_weight: Weight of the dense retriever in hybrid fusion.
    """

    budget: int = 10_000
    top_k: int = 5
    encoder: EncoderKind = "minilm"
    sc: int = 1
    baseline: Baseline | None = None
    max_steps: int = 5
    temperature: float | None = None
    step_max_tokens: int = 512
    context_tokens: int = 16_385
    baseline_k: int = 30
    seed: int = 0
    action_timeout: float = 10.0
    max_queries: int = 10
    max_observation_chars: int = 3000
    max_cell_chars: int = 300
    expansion: bool = True
    schema_mode: SchemaMode = "retrieval"
    cell_mode: CellMode = "retrieval"
    cell_scope: CellScope = "categorical"
    hybrid_weight: float = 0.5

    def __post_init__(self) -> None:
        positive = {
            "budget": self.budget,
            "top_k": self.top_k,
            "sc": self.sc,
            "max_steps": self.max_steps,
            "step_max_tokens": self.step_max_tokens,
            "context_tokens": self.context_tokens,
            "baseline_k": self.baseline_k,
            "max_queries": self.max_queries,
            "max_observation_chars": self.max_observation_chars,
            "max_cell_chars": self.max_cell_chars,
        }
        for name, value in positive.items():
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.encoder not in ENCODER_KINDS:
            raise ValueError(f"unknown encoder {self.encoder!r}; one of {', '.join(ENCODER_KINDS)}")
        if self.baseline is not None and self.baseline not in BASELINES:
            raise ValueError(f"unknown baseline {self.baseline!r}; one of {', '.join(BASELINES)}")
        if self.action_timeout <= 0:
            raise ValueError(f"action_timeout must be > 0, got {self.action_timeout}")
        if self.temperature is not None and self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 <= self.hybrid_weight <= 1.0:
            raise ValueError(f"hybrid_weight must be in [0, 1], got {self.hybrid_weight}")

    @property
    def sampling_temperature(self) -> float:
        if self.temperature is not None:
            return self.temperature
        return 0.0 if self.sc == 1 else 0.8

    @property
    def name(self) -> str:
        if self.baseline is not None:
            k = "" if self.baseline in ("read-table", "read-schema") else f",K={self.baseline_k}"
            return f"{self.baseline}{k}"
        return f"B={self.budget},K={self.top_k}"

    @classmethod
    def named(cls, name: str, **overrides: object) -> RagConfig:
        """Parse ``B=10000,K=5`` (either part optional, any order)."""
        values: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in name.split(","))):
            m = re.fullmatch(r"([BK])\s*=\s*(\d+)", part)
            if not m:
                raise ValueError(f"cannot read config {name!r} (e.g. B=10000,K=5)")
            values["budget" if m.group(1) == "B" else "top_k"] = int(m.group(2))
        return replace(cls(**values), **overrides)  # type: ignore[arg-type]
