"""TableSeek options: the paper's defaults, strategies, evidence sizes and ablations.

Defaults are Table 7 ("5s1-small"); strategies Table 8; evidence sizes App. O; ablations
Tables 6 and 35. Named configurations read like the paper's: ``10step-5s1-small``, ``r5``,
``5s3-big`` (`SeekConfig.from_config`, also `SeekConfig.named`).

`max_steps` is S_max, the question's budget of LLM calls: it is the default of ``--steps``,
which, when given, is the budget the agent runs with (one definition, `default_steps`).

Choices (ours, the paper is silent): the ranked list R holds `rank_depth` = 20 tables (the
fallback walks it); QA tables are serialized whole up to `qa_table_chars` characters each,
then cut with a marker, so one huge table cannot overflow the context.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from tablequest.methods.options import MethodOptions, OptionError, option

Evidence = Literal["small", "medium", "big", "full"]
Strategy = Literal["5s1", "5s3", "10s1", "10s3", "10s5", "r3", "r5", "r10"]
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
_NAME = re.compile(r"(?:(\d+)step-)?(\d+s\d+|r\d+)(?:-(small|medium|big|full))?")
_T7 = "TableSeek Table 7"
_ABLATION = "TableSeek Tables 6, 35"


class SeekConfig(MethodOptions):
    """All knobs of Algorithm 1. Construct with keywords or `SeekConfig.named(...)`."""

    CONFIGS = ("5step-5s1-small", "10step-5s1-small", "10step-r5-medium", "5s3-big")

    max_steps: int = option(
        5, "S_max: LLM calls per question (default of --steps)", paper=_T7, ge=1
    )
    strategy: Strategy = option(
        "5s1", "refine strategy: nsm select or rN rerank", paper="TableSeek Table 8"
    )
    evidence: Evidence = option(
        "small", "matched rows in previews: small|medium|big|full", paper="TableSeek App. O"
    )
    preview_chars: int = option(800, "characters of each table's head in previews", paper=_T7, ge=0)
    max_line_chars: int = option(400, "characters per matched row in previews", paper=_T7, ge=1)
    fallback_top_k: int = option(
        1, "tables given to QA when refinement selects none", paper=_T7, ge=1
    )
    rank_depth: int = option(20, "tables kept in the ranked list R (the fallback walks it)", ge=1)
    temperature: float = option(0.0, "sampling temperature of every call", paper=_T7, ge=0.0)
    max_tokens: int = option(8192, "max new tokens per call", paper=_T7, ge=1)
    qa_table_chars: int = option(60_000, "characters of each table given to QA (then cut)", ge=1)
    refine: bool = option(True, "refinement rounds (ablation: w/o refine)", paper=_ABLATION)
    fallback: bool = option(True, "QA fallback to the next tables (ablation)", paper=_ABLATION)
    select: bool = option(True, "refinement may select (ablation: w/o select)", paper=_ABLATION)
    regenerate: bool = option(
        True, "refinement may regenerate patterns (ablation)", paper=_ABLATION
    )
    match_only: bool = option(
        False, "refinement sees only matched rows (ablation)", paper=_ABLATION
    )
    match_only_qa: bool = option(
        False, "QA also sees only matched rows (ablation)", paper=_ABLATION
    )

    @property
    def match_only_refine(self) -> bool:
        """Refinement sees only matched rows: match-only, or match-only QA ("QA also")."""
        return self.match_only or self.match_only_qa

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

    def default_steps(self) -> int:
        return self.max_steps

    def label(self) -> str:
        """The paper's name plus ablations, e.g. ``5step-5s1-small w/o refine match-only``."""
        flags = [
            ("refine", self.refine),
            ("fallback", self.fallback),
            ("select", self.select),
            ("regenerate", self.regenerate),
        ]
        name = self.name + "".join(f" w/o {n}" for n, on in flags if not on)
        if self.match_only_qa:
            return name + " match-only QA"
        return name + (" match-only" if self.match_only else "")

    @classmethod
    def from_config(cls, name: str) -> Self:
        """``[{N}step-]{strategy}[-{evidence}]``, e.g. ``10step-r5-medium``.

        Only the parts the name gives are set, so ``-c r5`` keeps the other options.
        """
        m = _NAME.fullmatch(name.strip())
        if not m or m.group(2) not in STRATEGIES:
            raise OptionError(
                f"cannot read TableSeek config {name!r}: [Nstep-]STRATEGY[-EVIDENCE] with "
                f"STRATEGY one of {', '.join(STRATEGIES)} (e.g. 10step-5s1-small)"
            )
        steps, strategy, evidence = m.groups()
        values: dict[str, object] = {"strategy": strategy}
        if steps:
            values["max_steps"] = int(steps)
        if evidence:
            values["evidence"] = evidence
        return cls.model_validate(values)

    @classmethod
    def named(cls, name: str, **overrides: object) -> Self:
        """`from_config(name)` with keyword overrides (library convenience)."""
        base = cls.from_config(name)
        return cls.model_validate(
            {**{k: getattr(base, k) for k in base.model_fields_set}, **overrides}
        )
