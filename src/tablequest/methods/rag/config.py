"""TableRAG options: the paper's defaults, the official code's solver settings, baselines.

Paper §4.3: B = 10,000, K = 5 (K = 30 for RandRowSampling and RowColRetrieval); every
experiment majority-votes 10 runs. Official code (google-research/table_rag): ReAct depth 5,
sampling temperature 0.8 (top-p 0.95, which our LLM interface does not expose), stop at
"Observation:", 128 tokens per step, self-consistency ``--sc`` (default 1) by majority vote.

Encoders come from `tablequest.corpus.dense.encoders`: ``auto`` (default) takes the configured
server's ``/v1/embeddings`` when it serves one (the paper used an API embedding model), else
a static model distilled from the shipped MiniLM (``minilm-static``: the same cell recall at
~100× the speed), else BM25; ``bm25`` retrieves lexically; ``retrieval = hybrid`` fuses the
dense and BM25 rankings (the paper's ablation, Table 5).

Defaults (`NOTES`, printed by ``tablequest methods rag``): one sample with a local or served
encoder, cheap enough for interactive use; ``-c paper`` (`PAPER`) sets §4.3's encoder,
self-consistency and B, K exactly (the model itself is the ``--llm`` choice).

Choices (ours): temperature 0 when sc = 1 (deterministic and cacheable) and the official 0.8
when sc > 1; 512 tokens per step (the official 128 cuts off models that think before acting;
the stop sequence ends well-behaved steps early anyway); a context budget of 16,385 tokens
(gpt-3.5-turbo-0125, the paper's main model) for ReadTable and every solver prompt; at most
10 queries of each kind are used, so the solver prompt stays O(K). The default cap on LLM
calls is sc × (2 + max_depth): an expansion call and its repair, then the ReAct steps.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import field_validator

from tablequest.corpus import ENCODERS
from tablequest.methods.options import MethodOptions, OptionError, option

Baseline = Literal["read-table", "read-schema", "rand-rows", "rowcol"]
BASELINES: tuple[Baseline, ...] = ("read-table", "read-schema", "rand-rows", "rowcol")
SchemaMode = Literal["retrieval", "all"]
CellMode = Literal["retrieval", "none"]
CellScope = Literal["categorical", "all"]
_P = "TableRAG §4.3"
_CODE = "google-research/table_rag"


PAPER: dict[str, object] = {
    "encoder": "api",
    "embed_model": "text-embedding-3-large",
    "sc": 10,
    "budget": 10_000,
    "top_k": 5,
    "retrieval": "dense",
}
"""``-c paper``: §4.3's setting ("We use OpenAI's text-embedding-3-large as the encoder for
dense retrieval. For TableRAG, we set the cell encoding budget B = 10,000 and the retrieval
limit K = 5. Each experiment is conducted 10 times and evaluated by majority-voting")."""

_NOTES = (
    "defaults: one sample (sc = 1, temperature 0) with encoder auto (the server's "
    "/v1/embeddings when it serves one, else minilm-static on the CPU, else BM25), so a "
    "question costs at most 7 calls, runs offline and is cached. The paper's setting "
    "(§4.3: text-embedding-3-large, 10 runs majority-voted at temperature 0.8, B = 10,000, "
    "K = 5) is -c paper: 10x the calls, and an OpenAI-compatible /v1/embeddings serving "
    "text-embedding-3-large (embed_url, default the LLM's URL)."
)


class RagConfig(MethodOptions):
    """All knobs of TableRAG and its baselines. Named like the paper: ``B=10000,K=5``;
    ``paper`` is §4.3's setting (`PAPER`)."""

    CONFIGS = ("paper", "B=10000,K=5", "B=1000,K=5", "K=10")
    NOTES = _NOTES

    budget: int = option(10_000, "cell encoding budget B", paper=_P, ge=1)
    top_k: int = option(5, "K: results per query", paper=_P, ge=1)
    encoder: str = option(
        "auto", "auto | minilm | minilm-static | minilm-st | api | hash | bm25 (corpus.encoders)"
    )
    retrieval: Literal["dense", "hybrid"] = option(
        "dense", "dense, or hybrid = dense + BM25 fused", paper="TableRAG Table 5"
    )
    embed_url: str | None = option(
        None, "encoder api/auto: /v1 URL (default: the LLM's)", request=False
    )
    embed_model: str | None = option(None, "encoder api: embedding model name")
    sc: int = option(1, "self-consistency samples (majority vote)", paper=_CODE, ge=1)
    baseline: Baseline | None = option(None, "run a baseline with the same solver", paper=_P)
    max_depth: int = option(5, "ReAct iterations per sample", paper=_CODE, ge=1)
    temperature: float | None = option(None, "none: 0 when sc = 1, 0.8 when sc > 1", ge=0.0)
    step_max_tokens: int = option(512, "tokens per ReAct step and expansion reply", ge=1)
    context_tokens: int = option(16_385, "context budget of every solver prompt", ge=1)
    baseline_k: int = option(30, "K of RandRowSampling and RowColRetrieval", paper=_P, ge=1)
    seed: int = option(0, "seed of RandRowSampling")
    action_timeout: float = option(10.0, "seconds per Action in the sandbox", request=False, gt=0.0)
    max_queries: int = option(10, "queries of each kind kept from the expansion", ge=1)
    max_observation_chars: int = option(3000, "longer observations are cut", ge=1)
    max_cell_chars: int = option(300, "longer cell values are cut in the prompt", ge=1)
    expansion: bool = option(True, "false: the question is the only query", paper="TableRAG Fig. 7")
    schema_mode: SchemaMode = option(
        "retrieval", "all = every schema entry", paper="TableRAG Table 6"
    )
    cell_mode: CellMode = option("retrieval", "none = no cell retrieval", paper="TableRAG Table 6")
    cell_scope: CellScope = option("categorical", "columns of the cell DB", paper=_CODE)
    hybrid_weight: float = option(
        0.5, "weight of the dense ranking in hybrid", paper=_CODE, ge=0.0, le=1.0
    )

    @field_validator("encoder")
    @classmethod
    def _known_encoder(cls, value: str) -> str:
        if value not in ENCODERS:
            raise ValueError(f"unknown encoder {value!r}; one of {', '.join(ENCODERS)}")
        return value

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

    def label(self) -> str:
        return self.name

    def default_steps(self) -> int:
        return self.sc * (2 + self.max_depth)

    @classmethod
    def from_config(cls, name: str) -> Self:
        """``paper`` (`PAPER`), or ``B=10000,K=5`` (either part optional, any order)."""
        if name.strip().lower() == "paper":
            return cls.model_validate(PAPER)
        values: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in name.split(","))):
            m = re.fullmatch(r"([BK])\s*=\s*(\d+)", part)
            if not m:
                raise OptionError(f"cannot read TableRAG config {name!r} (e.g. B=10000,K=5)")
            values["budget" if m.group(1) == "B" else "top_k"] = int(m.group(2))
        return cls.model_validate(values)

    @classmethod
    def named(cls, name: str, **overrides: object) -> Self:
        """`from_config(name)` with keyword overrides (library convenience)."""
        base = cls.from_config(name)
        return cls.model_validate(
            {**{k: getattr(base, k) for k in base.model_fields_set}, **overrides}
        )
