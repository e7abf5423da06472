"""TableSeek configuration: the paper's defaults, strategies, evidence sizes and ablations.

Defaults are Table 7 ("5s1-small"); strategies Table 8; evidence sizes App. O; ablations
Tables 6 and 35. Names parse like the paper's: ``10step-5s1-small``, ``r5``, ``5s3-big``.

Choices (ours, the paper is silent): the ranked list R holds `rank_depth` = 20 tables (the
fallback walks it); QA tables are serialized whole up to `qa_table_chars` characters each,
then cut with a marker, so one huge table cannot overflow the context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

Evidence = Literal["small", "medium", "big", "full"]
EVIDENCE_ROWS: dict[str, tuple[int, int]] = {  # rows per pattern, rows in total
    "small": (1, 5),
    "medium": (2, 10),
    "big": (3, 15),
    "full": (0, 0),
}
STRATEGIES: dict[str, tuple[int, int, bool]] = {  # n_candidates, max_select, rerank
    "5s1": (5, 1, False),
    "5s3": (5, 3, False),
    "10s1": (10, 1, False),
    "10s3": (10, 3, False),
    "10s5": (10, 5, False),
    "r3": (3, 1, True),
    "r5": (5, 1, True),
    "r10": (10, 1, True),
}


@dataclass(frozen=True)
class SeekConfig:
    """All knobs of Algorithm 1. Construct with `SeekConfig.named(...)` or keywords."""

    max_steps: int = 5
    strategy: str = "5s1"
    evidence: Evidence = "small"
    preview_chars: int = 800
    max_line_chars: int = 400
    fallback_top_k: int = 1
    rank_depth: int = 20
    temperature: float = 0.0
    max_tokens: int = 8192
    qa_table_chars: int = 60_000
    # ablations (Tables 6 and 35)
    refine: bool = True
    fallback: bool = True
    select: bool = True
    regenerate: bool = True
    match_only: bool = False
    match_only_qa: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; one of {sorted(STRATEGIES)}")
        if self.evidence not in EVIDENCE_ROWS:
            raise ValueError(f"unknown evidence size {self.evidence!r}; small|medium|big|full")
        if self.max_steps < 2:
            raise ValueError("max_steps must be at least 2 (pattern generation and QA)")

    @property
    def n_candidates(self) -> int:
        return STRATEGIES[self.strategy][0]

    @property
    def max_select_tables(self) -> int:
        return STRATEGIES[self.strategy][1]

    @property
    def rerank(self) -> bool:
        return STRATEGIES[self.strategy][2]

    @property
    def rows_per_pattern(self) -> int:
        return EVIDENCE_ROWS[self.evidence][0]

    @property
    def max_matched_rows(self) -> int:
        return EVIDENCE_ROWS[self.evidence][1]

    @property
    def name(self) -> str:
        return f"{self.max_steps}step-{self.strategy}-{self.evidence}"

    @classmethod
    def named(cls, name: str, **overrides: object) -> SeekConfig:
        """Parse ``[{N}step-]{strategy}[-{evidence}]``, e.g. ``10step-r5-medium``."""
        m = re.fullmatch(
            r"(?:(\d+)step-)?(\d+s\d+|r\d+)(?:-(small|medium|big|full))?", name.strip()
        )
        if not m:
            raise ValueError(f"cannot read config name {name!r} (e.g. 10step-5s1-small)")
        steps, strategy, evidence = m.groups()
        base = cls(
            max_steps=int(steps) if steps else 5,
            strategy=strategy,
            evidence=evidence or "small",  # type: ignore[arg-type]
        )
        return replace(base, **overrides)  # type: ignore[arg-type]
