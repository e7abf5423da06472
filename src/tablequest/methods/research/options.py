"""DTR options: every knob of Algorithm 1 and Eqs. 1–6, with the paper's defaults where it has one.

The paper gives the formulas but few values: K (candidate paths), k (paths executed), α and η
have no published values, so ours are documented as such (``paper=`` says where the knob
comes from). The call budget follows §4.3: DTR averages 4.78 LLM calls per question; our cap
(8) leaves room for one comprehension call (MOD), two paths of up to three operations and the
non-code fallback answer — or, when the vote succeeded, the report call (`narrate`). The
model-written experience (`abstraction`) only runs when a call still leaves room for the
next path. The Table 3/4 ablation switches (``meta_graph``, ``operations``, ``expectation``,
``abstraction``, ``prompting``) default to the full method.
"""

from __future__ import annotations

from typing import Literal

from tablequest.methods.options import MethodOptions, option

__all__ = ["MemoryMode", "Prompting", "ResearchOptions", "Selection", "UpdateRule"]

UpdateRule = Literal["incremental", "lr"]
MemoryMode = Literal["off", "read", "readwrite"]
Selection = Literal["repeat", "once"]
Prompting = Literal["think_code", "direct", "hint", "reflection"]


class ResearchOptions(MethodOptions):
    """Options of `tablequest.methods.research` (``-o NAME VALUE``)."""

    k_paths: int = option(
        4,
        "K: candidate operation paths kept per question (enumerated, ranked by prior)",
        paper="DTR Alg. 1 (K; no value given)",
        ge=1,
        le=32,
    )
    top_k: int = option(
        2,
        "k: paths whose answers are voted on (more run when they disagree)",
        paper="DTR §3.3 Path Selection (top-k; no value given)",
        ge=1,
        le=8,
    )
    alpha: float = option(
        1.0,
        "α: weight of the exploration term of the expectation score",
        paper="DTR Eq. 1 (α; no value given)",
        ge=0.0,
    )
    update: UpdateRule = option(
        "incremental",
        "R̂ update: incremental mean (Alg. 1 line 20) or learning rate η (Eq. 5)",
        paper="DTR Alg. 1 line 20 / Eq. 5",
    )
    eta: float = option(
        0.5, "η: learning rate of update=lr", paper="DTR Eq. 5 (η ∈ (0, 1])", gt=0.0, le=1.0
    )
    max_replans: int = option(
        2,
        "replans after a failed or invalid path before giving up",
        paper="DTR Alg. 1 lines 21-23",
        ge=0,
        le=8,
    )
    max_path_len: int = option(
        4, "longest operation path (operations beyond it are dropped)", ge=1, le=7
    )
    memory: MemoryMode = option(
        "readwrite",
        "experience memory: off, read (use, do not learn) or readwrite",
        paper="DTR §3.4 (siamese experience memory)",
        request=False,  # the server's memory file: its operator decides who writes it
    )
    memory_path: str | None = option(
        None,
        "DuckDB file of the memory when the table has no corpus store "
        "(default: <user data dir>/dtr_memory.duckdb)",
        request=False,
    )
    lessons: int = option(5, "abstracted lessons shown to the model per question", ge=0, le=20)
    w_type: float = option(
        0.8,
        "weight of f_type in the reward φ (the rest goes to f_time)",
        paper="DTR Eq. 4 (φ not specified)",
        ge=0.0,
        le=1.0,
    )
    time_scale: float = option(
        10.0, "τ seconds: f_time contributes exp(-t/τ) to the reward", gt=0.0
    )
    exec_timeout: float = option(
        20.0,
        "seconds each operation's code may run in the sandbox",
        request=False,
        gt=0.0,
        le=600.0,
    )
    steps: int = option(
        8,
        "LLM calls per question when --steps is not given",
        paper="DTR §4.3 (4.78 calls on average)",
        ge=2,
        le=64,
    )
    fallback_direct: bool = option(
        True,
        "when no path yields a valid answer, answer once from the table text (non-code mode)",
        paper="DTR §4.1 (non-code mode for RealHiTBench)",
    )
    temperature: float = option(0.0, "sampling temperature of every call", ge=0.0, le=2.0)
    max_tokens: int = option(1024, "max tokens per reply", ge=64)
    triples_chars: int = option(
        5000, "characters of linearized meta-graph triples in prompts", ge=200
    )
    observation_chars: int = option(
        1500, "characters of an operation's output fed back to the model", ge=100
    )
    llm_experience: bool = option(
        True,
        "abstracted experience written by the model (Feedback Summary / Execution Reflection) "
        "after a failed path; off or unusable: the rule-based template lessons",
        paper="DTR §3.4 Abstracted Experience Feedback",
    )
    llm_report: bool = option(
        True,
        "the report's analysis written by the model (one call after the vote); off, unusable "
        "or no budget left: the template report",
        paper="DTR §3.5 (analysis reports), App. E/F",
    )
    selection: Selection = option(
        "repeat",
        "repeat: each iteration runs the top-k paths by E(π), executed ones included (a path "
        "runs again once its context changed); once: each path at most once",
        paper="DTR §3.3 Path Selection, Alg. 1 lines 11-15",
    )
    meta_graph: bool = option(
        True,
        "ablation: off shows the model the plain table head instead of meta-graph triples, "
        "units and total-row markers",
        paper="DTR Table 3 (Meta)",
    )
    operations: bool = option(
        True,
        "ablation: off skips query-to-operation decomposition (no MOD call, no operation map): "
        "one free-form program path",
        paper="DTR Table 3 (QDO)",
    )
    expectation: bool = option(
        True,
        "ablation: off ranks paths by their prior only (no Eq. 1, no remembered R̂/N), each "
        "path once",
        paper="DTR Table 3 (Exp.)",
    )
    abstraction: bool = option(
        True,
        "ablation: off keeps no abstracted lessons (none shown, learned, stored or used to "
        "revise paths)",
        paper="DTR Table 3 (Abst.)",
    )
    prompting: Prompting = option(
        "think_code",
        "step prompt: think_code ([THINK] then [CODE]), direct (code only), hint (a one-line "
        "reasoning hint, free format) or reflection (think_code plus one check call per "
        "operation that may correct its code)",
        paper="DTR Table 4 (prompt strategy)",
    )
    charts_dir: str | None = option(
        None, "directory for chart PNGs (default: next to the trace file, if any)", request=False
    )

    def default_steps(self) -> int:
        return self.steps
