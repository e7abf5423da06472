"""Reproduction configurations of the TableSeek paper (Tian et al., 2026).

One configuration per table, in the paper's table order: ``tableseek-t2`` (TCR-Bench, Mixed),
``tableseek-t3`` (TARGET-TabFact test-1k), ``tableseek-t4`` (R/DS at all and final),
``tableseek-ablation`` (Table 6), ``tableseek-formats`` (Tables 24, 39 and 40),
``tableseek-backbones`` (Table 25's other backbones), ``tableseek-oracle`` (Tables 29–30 and
App. G's no-table check), ``tableseek-retrieval`` (Tables 31–32, the LLM-free BM25 rows),
``tableseek-refine`` (Table 35), ``tableseek-strategies`` (Tables 37–38),
``tableseek-evidence`` (Table 43) and ``tableseek-transposed`` (Table 44).

The paper prints its numbers as fractions (0.416), so every cell has ``percent=False`` and is
compared with the measured fraction as is. Backbones are the paper's short names: Qwen3-30B =
Qwen3-30B-A3B-Thinking-2507, Qwen3-4B = Qwen3-4B-Instruct-2507, LLaMA = Llama-3.1-8B-Instruct.
The Qwen3-4B and LLaMA numbers of Tables 2 and 3 come from the appendix's Tables 24 and 26
(the main tables print Qwen3-30B only).

Choices (ours, where the paper is silent or our data differs):
- Dense and rerank rows name the paper's models (Qwen/Qwen3-Embedding-4B,
  NovaSearch/stella_en_1.5B_v5, Qwen/Qwen3-Reranker-4B / -0.6B) with ``encoder=api``; the
  OpenAI-compatible server at the LLM's URL (or ``embed_url`` / ``rerank_url``) must serve
  them. Rerank (top-k) = the reranker over the dense top-k, its first table to QA (Table 10:
  top_k = 1), so Recall is R@1 as in the paper.
- TCR-Bench "Mixed" is our ``mixed`` format: each table rendered in its ``table_format`` of
  TCR_Tables.json. The shared data holds the tables of 12 of the 209 questions.
- TARGET-TabFact test-1k is a random sample whose ids the paper does not publish: the rows
  load the TabFact test claims over the 1,695 test tables, and ``--limit 1000`` takes the
  first 1,000. The TabFact corpus is CSV (the paper names no format for TARGET).
- Time (h) columns are not reproduced (hardware-bound); Avg. Steps is the run summary's
  average ``steps``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tablequest.eval.reproduce.spec import Cell, Missing, Reproduction, Row, register

__all__ = ["TABLESEEK"]

PAPER = "TableSeek"
Q30, Q4, LLAMA = "Qwen3-30B", "Qwen3-4B", "LLaMA"
MODELS = (Q30, Q4, LLAMA)
LLM_FREE = "LLM-free"
E4B = "Qwen/Qwen3-Embedding-4B"
STELLA = "NovaSearch/stella_en_1.5B_v5"
R4B = "Qwen/Qwen3-Reranker-4B"
R06B = "Qwen/Qwen3-Reranker-0.6B"
FORMATS = ("csv", "mixed", "html", "markdown")
_TABFACT = {"subset": "test"}

SERVED = (
    "Dense/rerank rows use encoder=api: the server at the LLM's URL (or embed_url / "
    "rerank_url) must serve the embedding and reranker models named in the row's options."
)
TCR_SUBSET = "The shared TCR-Bench data holds the tables of 12 of the 209 questions."
TEST_1K = (
    "TARGET-TabFact test-1k: run with --limit 1000 (the first 1,000 test claims; the paper's "
    "random sample ids are not published)."
)
NO_TIME = "Time (h) is not reproduced (hardware-bound); Avg. Steps = the runs' mean steps."

Scores = Mapping[str, float | None]
Options = dict[str, object]


def _q30(value: float) -> Scores:
    return {Q30: value}


def _cell(column: str, metric: str, paper: Scores) -> Cell:
    return Cell(column, metric, paper, percent=False)


def _cells(
    columns: tuple[tuple[str, str], ...], values: tuple[float, ...], model: str = Q30
) -> tuple[Cell, ...]:
    """One backbone's cells: (column, metric) pairs with the paper's values in that order."""
    return tuple(
        _cell(col, metric, {model: v}) for (col, metric), v in zip(columns, values, strict=True)
    )


def _dense(embed: str) -> Options:
    return {"encoder": "api", "embed_model": embed, "top_k": 1}


def _rerank(embed: str, reranker: str, pool: int) -> Options:
    return {**_dense(embed), "rerank_model": reranker, "rerank_pool": pool}


def _seek(steps: int, strategy: str = "5s1", evidence: str = "small", **flags: bool) -> Options:
    return {"max_steps": steps, "strategy": strategy, "evidence": evidence, **flags}


def _seek_key(options: Options) -> str:
    """``seek{steps}`` plus what differs from 5s1-small: ``seek10-r5``, ``seek5-no-refine``."""
    key = f"seek{options['max_steps']}"
    key += "".join(f"-{options[k]}" for k in ("strategy", "evidence") if options[k] not in _PLAIN)
    key += "".join(f"-no-{k}" for k in ("fallback", "refine", "select", "regenerate")
                   if options.get(k) is False)  # fmt: skip
    return key + "".join(f"-{k}".replace("_", "-") for k in _MATCH if options.get(k))


_PLAIN, _MATCH = ("5s1", "small"), ("match_only", "match_only_qa")


def _tcr(
    base: str,
    label: str,
    method: str,
    options: Options,
    cells: tuple[Cell, ...],
    fmt: str = "mixed",
) -> Row:
    """A TCR-Bench row keyed ``base`` (Mixed) or ``base-FORMAT``: one run, one key, in every
    configuration, so configurations sharing an ``--out`` folder reuse each other's runs."""
    key = base if fmt == "mixed" else f"{base}-{fmt}"
    return Row(key, label, "tcrbench", method, cells, options=options, fmt=fmt)


_BASELINES: tuple[tuple[str, str, str, Options], ...] = (
    ("dense", "Dense (E4B)", "dense", _dense(E4B)),
    ("rerank3", "Rerank (top-3) (E4B+R4B)", "rerank", _rerank(E4B, R4B, 3)),
    ("rerank5", "Rerank (top-5) (E4B+R4B)", "rerank", _rerank(E4B, R4B, 5)),
    ("seek5", "TableSeek (5-step)", "seek", _seek(5)),
    ("seek10", "TableSeek (10-step)", "seek", _seek(10)),
)
"""The five methods of Tables 2, 24 and 40: key, label, method, options."""

# Table 24: per method, per format (csv, mixed, html, markdown): Recall, then F1 by backbone
# (Qwen3-30B, Qwen3-4B, LLaMA). TableSeek's recall depends on the backbone: one per backbone.
_T24: dict[str, dict[str, tuple[Scores, Scores]]] = {
    "dense": {
        "csv": ({Q30: 0.158, Q4: 0.158, LLAMA: 0.158}, {Q30: 0.116, Q4: 0.054, LLAMA: 0.079}),
        "mixed": ({Q30: 0.172, Q4: 0.172, LLAMA: 0.172}, {Q30: 0.118, Q4: 0.064, LLAMA: 0.088}),
        "html": ({Q30: 0.134, Q4: 0.134, LLAMA: 0.134}, {Q30: 0.122, Q4: 0.048, LLAMA: 0.056}),
        "markdown": ({Q30: 0.187, Q4: 0.187, LLAMA: 0.187}, {Q30: 0.134, Q4: 0.077, LLAMA: 0.109}),
    },
    "rerank3": {
        "csv": ({Q30: 0.354, Q4: 0.354, LLAMA: 0.354}, {Q30: 0.284, Q4: 0.102, LLAMA: 0.173}),
        "mixed": ({Q30: 0.359, Q4: 0.359, LLAMA: 0.359}, {Q30: 0.269, Q4: 0.127, LLAMA: 0.172}),
        "html": ({Q30: 0.373, Q4: 0.373, LLAMA: 0.373}, {Q30: 0.279, Q4: 0.140, LLAMA: 0.165}),
        "markdown": ({Q30: 0.407, Q4: 0.407, LLAMA: 0.407}, {Q30: 0.314, Q4: 0.137, LLAMA: 0.173}),
    },
    "rerank5": {
        "csv": ({Q30: 0.445, Q4: 0.445, LLAMA: 0.445}, {Q30: 0.356, Q4: 0.141, LLAMA: 0.199}),
        "mixed": ({Q30: 0.421, Q4: 0.421, LLAMA: 0.421}, {Q30: 0.317, Q4: 0.137, LLAMA: 0.198}),
        "html": ({Q30: 0.459, Q4: 0.459, LLAMA: 0.459}, {Q30: 0.353, Q4: 0.171, LLAMA: 0.205}),
        "markdown": ({Q30: 0.488, Q4: 0.488, LLAMA: 0.488}, {Q30: 0.362, Q4: 0.167, LLAMA: 0.189}),
    },
    "seek5": {
        "csv": ({Q30: 0.411, Q4: 0.172, LLAMA: 0.206}, {Q30: 0.283, Q4: 0.075, LLAMA: 0.096}),
        "mixed": ({Q30: 0.416, Q4: 0.163, LLAMA: 0.182}, {Q30: 0.284, Q4: 0.068, LLAMA: 0.067}),
        "html": ({Q30: 0.392, Q4: 0.177, LLAMA: 0.234}, {Q30: 0.292, Q4: 0.075, LLAMA: 0.105}),
        "markdown": ({Q30: 0.416, Q4: 0.182, LLAMA: 0.187}, {Q30: 0.318, Q4: 0.087, LLAMA: 0.096}),
    },
    "seek10": {
        "csv": ({Q30: 0.493, Q4: 0.196, LLAMA: 0.220}, {Q30: 0.346, Q4: 0.073, LLAMA: 0.110}),
        "mixed": ({Q30: 0.507, Q4: 0.196, LLAMA: 0.196}, {Q30: 0.361, Q4: 0.071, LLAMA: 0.070}),
        "html": ({Q30: 0.498, Q4: 0.163, LLAMA: 0.249}, {Q30: 0.364, Q4: 0.069, LLAMA: 0.120}),
        "markdown": ({Q30: 0.498, Q4: 0.211, LLAMA: 0.201}, {Q30: 0.364, Q4: 0.095, LLAMA: 0.091}),
    },
}


def _recall_metric(method: str) -> str:
    """The paper's Recall: R@all for TableSeek (and oracle QA), R@1 for single-pass baselines."""
    return "r_at_1" if method in ("dense", "rerank") else "r_all"


def _format_row(key: str, label: str, method: str, options: Options, fmt: str, tag: bool) -> Row:
    recall, f1 = _T24[key][fmt]
    cells = (_cell("Recall", _recall_metric(method), recall), _cell("F1", "f1", f1))
    return _tcr(key, f"{label} · {fmt}" if tag else label, method, options, cells, fmt=fmt)


def _t2_rows() -> tuple[Row, ...]:
    """Table 2 (with Table 24's Mixed numbers for Qwen3-4B and LLaMA)."""
    return tuple(_format_row(k, lab, m, o, "mixed", tag=False) for k, lab, m, o in _BASELINES)


def _formats_rows() -> tuple[Row, ...]:
    """Tables 24 and 40 (every method × format), then Table 39's two 10-step strategies."""
    rows = [
        _format_row(k, lab, m, o, fmt, tag=True) for k, lab, m, o in _BASELINES for fmt in FORMATS
    ]
    t39 = {"5s3": (0.367, 0.352, 0.356, 0.389), "r5": (0.362, 0.384, 0.352, 0.346)}
    for strategy, values in t39.items():
        for fmt, value in zip(FORMATS, values, strict=True):
            rows.append(_tcr(
                _seek_key(_seek(10, strategy)), f"TableSeek 10step-{strategy} · {fmt}", "seek",
                _seek(10, strategy), (_cell("F1", "f1", _q30(value)),), fmt=fmt,
            ))  # fmt: skip
    return tuple(rows)


def _tabfact_row(
    key: str, label: str, method: str, options: Options,
    scores: Mapping[str, tuple[float, float, float, float]],
) -> Row:  # fmt: skip
    """A TARGET-TabFact row; `scores` maps a backbone to (Recall, Acc, Acc-Sup, Acc-Ref)."""
    columns = (
        ("Recall", _recall_metric(method)),
        ("Acc", "acc"),
        ("Acc-Sup", "acc_sup"),
        ("Acc-Ref", "acc_ref"),
    )
    cells = tuple(
        _cell(column, metric, {m: s[i] for m, s in scores.items()})
        for i, (column, metric) in enumerate(columns)
    )
    return Row(f"tabfact-{key}", label, "tabfact", method, cells, options=options,
               load_options=_TABFACT, note=TEST_1K)  # fmt: skip


def _t3_rows() -> tuple[Row, ...]:
    """Table 3 (and Table 26's test-1k rows: Acc-Ref, Qwen3-4B and LLaMA)."""
    scores: dict[str, dict[str, tuple[float, float, float, float]]] = {
        "dense": {Q30: (0.519, 0.721, 0.489, 0.961), Q4: (0.519, 0.627, 0.446, 0.815),
                  LLAMA: (0.519, 0.618, 0.334, 0.912)},
        "rerank3": {Q30: (0.623, 0.752, 0.562, 0.949), Q4: (0.623, 0.643, 0.501, 0.790),
                    LLAMA: (0.623, 0.629, 0.369, 0.898)},
        "rerank5": {Q30: (0.656, 0.754, 0.572, 0.928), Q4: (0.656, 0.648, 0.525, 0.776),
                    LLAMA: (0.656, 0.641, 0.397, 0.894)},
        "seek5": {Q30: (0.617, 0.754, 0.566, 0.949), Q4: (0.542, 0.632, 0.481, 0.788),
                  LLAMA: (0.432, 0.586, 0.255, 0.929)},
        "seek10": {Q30: (0.648, 0.764, 0.589, 0.945), Q4: (0.553, 0.632, 0.483, 0.786),
                   LLAMA: (0.472, 0.599, 0.287, 0.923)},
    }  # fmt: skip
    rows = (
        ("dense", "Dense (Stella)", "dense", _dense(STELLA)),
        ("rerank3", "Rerank (top-3) (Stella+R4B)", "rerank", _rerank(STELLA, R4B, 3)),
        ("rerank5", "Rerank (top-5) (Stella+R4B)", "rerank", _rerank(STELLA, R4B, 5)),
        ("seek5", "TableSeek (5-step)", "seek", _seek(5)),
        ("seek10", "TableSeek (10-step)", "seek", _seek(10)),
    )
    return tuple(_tabfact_row(k, lab, m, o, scores[k]) for k, lab, m, o in rows)


BACKBONES = ("GLM-Z1", "Qwen3.5-9B", "Qwen3.6-35B-A3B", "Qwen3.6-27B", "TableGPT-R1")


def _backbone_rows() -> tuple[Row, ...]:
    """Table 25: supplementary backbones on TCR-Bench (Mixed), Recall and F1 per backbone."""
    f1 = {  # per backbone: oracle, dense, rerank3, rerank5, seek5, seek10
        "GLM-Z1": (0.501, 0.099, 0.197, 0.264, 0.170, 0.180),
        "Qwen3.5-9B": (0.564, 0.108, 0.210, 0.250, 0.335, 0.369),
        "Qwen3.6-35B-A3B": (0.765, 0.150, 0.261, 0.336, 0.470, 0.503),
        "Qwen3.6-27B": (0.769, 0.151, 0.323, 0.359, 0.545, 0.591),
        "TableGPT-R1": (0.637, 0.129, 0.241, 0.277, 0.233, 0.307),
    }
    seek_recall = {  # per backbone: seek5, seek10
        "GLM-Z1": (0.258, 0.306), "Qwen3.5-9B": (0.512, 0.579),
        "Qwen3.6-35B-A3B": (0.574, 0.632), "Qwen3.6-27B": (0.641, 0.684),
        "TableGPT-R1": (0.359, 0.421),
    }  # fmt: skip
    methods = (("oracle", "Oracle", "direct", {}), *_BASELINES)
    fixed = {"oracle": 1.000, "dense": 0.172, "rerank3": 0.359, "rerank5": 0.421}
    rows = []
    for i, (key, label, method, options) in enumerate(methods):
        recall = {m: fixed[key] if key in fixed else seek_recall[m][i - 4] for m in BACKBONES}
        cells = (
            _cell("Recall", _recall_metric(method), recall),
            _cell("F1", "f1", {m: f1[m][i] for m in BACKBONES}),
        )
        rows.append(_tcr(key, label, method, options, cells))
    return tuple(rows)


def _t4_rows() -> tuple[Row, ...]:
    """Table 4: R@1 of the single-pass baselines; R/DS at all and final for TableSeek."""
    r1 = {"dense": 0.172, "rerank3": 0.359, "rerank5": 0.421}
    seek = {"seek5": (0.416, 0.725, 0.354, 0.655), "seek10": (0.507, 0.803, 0.431, 0.750)}
    columns = (("R@all", "r_all"), ("DS@all", "ds_all"), ("R@final", "r_final"),
               ("DS@final", "ds_final"))  # fmt: skip
    rows = []
    for key, label, method, options in _BASELINES:
        cells = (
            _cells((("R@1", "r_at_1"),), (r1[key],)) if key in r1 else _cells(columns, seek[key])
        )
        rows.append(_tcr(key, label, method, options, cells))
    return tuple(rows)


_DS1_MISSING = tuple(
    Missing(
        f"{label}: DS@1",
        "DS@1 = R@1 / GR@1 needs GR@1 of the dense/rerank ranking, which `eval run` does not "
        "record; the R@1 of the same row is run",
        {"DS@1": value},
    )
    for label, value in (("Dense", 0.252), ("Rerank top-3", 0.478), ("Rerank top-5", 0.540))
)

STEPS_METRIC = "steps"
"""The runs' mean steps: `summarize(...)["effort"]["mean"]["steps"]`, not a record metric."""
_STEPS_COLUMNS = (("R@all", "r_all"), ("F1", "f1"), ("Avg. Steps", STEPS_METRIC))


def _variant_rows(
    variants: tuple[tuple[str, Mapping[str, bool]], ...],
    numbers: Mapping[int, tuple[tuple[float, float, float], ...]],
) -> tuple[Row, ...]:
    """One row per (budget, variant): (R@all, F1, Avg. Steps)."""
    return tuple(
        _tcr(_seek_key(options), f"{steps}-step {label}", "seek", options,
             _cells(_STEPS_COLUMNS, values))
        for steps, block in numbers.items()
        for (label, flags), values in zip(variants, block, strict=True)
        for options in ({**_seek(steps), **flags},)
    )  # fmt: skip


def _ablation_rows() -> tuple[Row, ...]:
    """Table 6: refine, fallback and structure preservation under 5 and 10 steps."""
    variants: tuple[tuple[str, Mapping[str, bool]], ...] = (
        ("(Full)", {}),
        ("w/o fallback", {"fallback": False}),
        ("w/o refine", {"refine": False}),
        ("match-only", {"match_only": True}),
        ("match-only QA", {"match_only_qa": True}),
    )
    return _variant_rows(variants, {
        5: ((0.416, 0.284, 4.407), (0.364, 0.263, 3.919), (0.239, 0.173, 3.555),
            (0.359, 0.249, 4.435), (0.359, 0.065, 4.445)),
        10: ((0.507, 0.361, 6.244), (0.426, 0.311, 4.689), (0.268, 0.195, 5.019),
             (0.440, 0.316, 6.421), (0.445, 0.080, 6.096)),
    })  # fmt: skip


def _refine_rows() -> tuple[Row, ...]:
    """Table 35: refine decomposed into regenerate and select."""
    variants: tuple[tuple[str, Mapping[str, bool]], ...] = (
        ("Full", {}),
        ("w/o refine", {"refine": False}),
        ("w/o regenerate", {"regenerate": False}),
        ("w/o select", {"select": False}),
    )
    return _variant_rows(variants, {
        5: ((0.416, 0.284, 4.407), (0.239, 0.173, 3.555), (0.254, 0.190, 4.148),
            (0.402, 0.305, 4.909)),
        10: ((0.507, 0.361, 6.244), (0.268, 0.195, 5.019), (0.278, 0.202, 5.823),
             (0.536, 0.398, 8.167)),
    })  # fmt: skip


def _strategy_rows() -> tuple[Row, ...]:
    """Tables 37 (nsm select) and 38 (rN rerank): R@all, F1, Eff = F1 / R@all, Avg. Steps."""
    numbers = {
        (5, "5s1"): (0.416, 0.284, 0.683, 4.407), (5, "5s3"): (0.445, 0.307, 0.690, 4.407),
        (5, "10s1"): (0.397, 0.294, 0.741, 4.383), (5, "10s3"): (0.431, 0.297, 0.689, 4.407),
        (5, "10s5"): (0.469, 0.316, 0.674, 4.354), (10, "5s1"): (0.507, 0.361, 0.712, 6.244),
        (10, "5s3"): (0.550, 0.352, 0.640, 6.139), (10, "10s1"): (0.469, 0.332, 0.708, 6.072),
        (10, "10s3"): (0.512, 0.340, 0.664, 6.024), (10, "10s5"): (0.541, 0.358, 0.662, 5.952),
        (5, "r3"): (0.378, 0.269, 0.712, 4.431), (5, "r5"): (0.416, 0.291, 0.700, 4.459),
        (5, "r10"): (0.416, 0.307, 0.738, 4.349), (10, "r3"): (0.498, 0.375, 0.753, 6.196),
        (10, "r5"): (0.550, 0.384, 0.698, 6.067), (10, "r10"): (0.517, 0.374, 0.723, 6.038),
    }  # fmt: skip
    columns = (("R@all", "r_all"), ("F1", "f1"), ("Eff", "eff"), ("Avg. Steps", STEPS_METRIC))
    return tuple(
        _tcr(_seek_key(_seek(steps, strategy)), f"{steps}step-{strategy}", "seek",
             _seek(steps, strategy), _cells(columns, values))
        for (steps, strategy), values in numbers.items()
    )  # fmt: skip


def _evidence_rows() -> tuple[Row, ...]:
    """Table 43: evidence size (small / medium / big rows per pattern, or full tables)."""
    numbers = {
        (10, "full"): (0.512, 0.371, 6.153), (10, "big"): (0.502, 0.370, 6.139),
        (10, "medium"): (0.493, 0.372, 6.340), (10, "small"): (0.507, 0.361, 6.244),
        (5, "full"): (0.455, 0.333, 4.311), (5, "big"): (0.431, 0.319, 4.397),
        (5, "medium"): (0.426, 0.306, 4.435), (5, "small"): (0.416, 0.284, 4.407),
    }  # fmt: skip
    return tuple(
        _tcr(_seek_key(_seek(steps, evidence=size)), f"{steps}-step {size}", "seek",
             _seek(steps, evidence=size), _cells(_STEPS_COLUMNS, values))
        for (steps, size), values in numbers.items()
    )  # fmt: skip


def _oracle_rows() -> tuple[Row, ...]:
    """Table 29 (oracle F1 by format), App. G's no-table F1, Table 30 (oracle TabFact)."""
    oracle = {
        "csv": {Q4: 0.239, LLAMA: 0.491, Q30: 0.717},
        "markdown": {Q4: 0.301, LLAMA: 0.485, Q30: 0.748},
        "html": {Q4: 0.266, LLAMA: 0.417, Q30: 0.719},
        "mixed": {Q4: 0.270, LLAMA: 0.465, Q30: 0.734},
    }
    no_table = {"csv": 0.019, "markdown": 0.024, "html": 0.019, "mixed": 0.014}
    rows = [
        _tcr("oracle", f"Oracle (gold table) · {fmt}", "direct", {},
             (_cell("F1", "f1", scores),), fmt=fmt)
        for fmt, scores in oracle.items()
    ]  # fmt: skip
    rows += [
        _tcr("no-table", f"No-table QA · {fmt}", "no-table", {},
             (_cell("F1", "f1", _q30(value)),), fmt=fmt)
        for fmt, value in no_table.items()
    ]  # fmt: skip
    tabfact = {Q4: (0.695, 0.654, 0.737), LLAMA: (0.693, 0.501, 0.892), Q30: (0.896, 0.835, 0.959)}
    columns = (("Acc", "acc"), ("Acc-Sup", "acc_sup"), ("Acc-Ref", "acc_ref"))
    cells = tuple(
        _cell(col, metric, {m: v[i] for m, v in tabfact.items()})
        for i, (col, metric) in enumerate(columns)
    )
    rows.append(Row("tabfact-oracle", "Oracle (gold table) · TARGET-TabFact test-1k", "tabfact",
                    "direct", cells, load_options=_TABFACT, note=TEST_1K))  # fmt: skip
    return tuple(rows)


def _transposed_rows() -> tuple[Row, ...]:
    """Table 44: every table transposed before indexing (Mixed), reranker R0.6B."""
    rows: tuple[tuple[str, str, str, Options, tuple[float, float]], ...] = (
        ("oracle", "Oracle", "direct", {}, (1.000, 0.269)),
        ("dense", "Dense (E4B)", "dense", _dense(E4B), (0.081, 0.048)),
        ("rerank3", "Rerank (top-3) (E4B+R0.6B)", "rerank", _rerank(E4B, R06B, 3), (0.187, 0.076)),
        ("rerank5", "Rerank (top-5) (E4B+R0.6B)", "rerank", _rerank(E4B, R06B, 5), (0.239, 0.100)),
        ("seek5", "TableSeek (5-step)", "seek", _seek(5), (0.263, 0.110)),
        ("seek10", "TableSeek (10-step)", "seek", _seek(10), (0.335, 0.139)),
    )
    return tuple(
        _tcr(key, label, method, options,
             _cells((("Recall_T", _recall_metric(method)), ("F1_T", "f1")), values),
             fmt="transposed-mixed")
        for key, label, method, options, values in rows
    )  # fmt: skip


def _retrieval_rows() -> tuple[Row, ...]:
    """Tables 31–32, BM25 rows: R@1..3 (LLM-free), TCR-Bench by format and TabFact test-1k."""
    columns = tuple((f"R@{k}", f"recall@{k}") for k in (1, 2, 3))
    tcr = {"csv": (0.010, 0.010, 0.014), "mixed": (0.010, 0.010, 0.014),
           "html": (0.010, 0.014, 0.014), "markdown": (0.010, 0.010, 0.014)}  # fmt: skip
    rows = [
        Row("bm25" if fmt == "mixed" else f"bm25-{fmt}", f"BM25 · TCR-Bench {fmt}", "tcrbench",
            "bm25", _cells(columns, values, LLM_FREE), kind="retrieval", fmt=fmt)
        for fmt, values in tcr.items()
    ]  # fmt: skip
    rows.append(Row("tabfact-bm25", "BM25 · TARGET-TabFact test-1k", "tabfact", "bm25",
                    _cells(columns, (0.119, 0.151, 0.174), LLM_FREE), kind="retrieval",
                    load_options=_TABFACT, note=TEST_1K))  # fmt: skip
    return tuple(rows)


_OTHER_RETRIEVERS = tuple(
    Missing(label, why)
    for label, why in (
        ("SPLADE (splade-v3)", "learned sparse retrieval is not implemented here"),
        ("ColBERT (SauerkrautLM-Multi-ModernColBERT)", "late interaction is not implemented"),
        ("jina-embeddings-v4 / jina-reranker-v3", "not run: the rows would need those models "
         "served; the same dense/rerank methods take them as embed_model / rerank_model"),
        ("Dense / Rerank R@2, R@3", "retrieval rows take RetrieverSettings(**options), whose "
         "embeddings server is a nested EncoderSettings a row cannot name; R@1 of the same "
         "pipelines is in tableseek-t2 (dense/rerank answer rows)"),
    )
)  # fmt: skip


def _rep(
    name: str,
    table: str,
    title: str,
    rows: tuple[Row, ...],
    *notes: str,
    missing: tuple[Missing, ...] = (),
    models: tuple[str, ...] = (Q30,),
) -> Reproduction:
    return Reproduction(name, PAPER, table, title, rows, missing, models, notes)


# fmt: off
TABLESEEK: tuple[Reproduction, ...] = (
    _rep("tableseek-t2", "Table 2", "Main results on TCR-Bench (Mixed format)", _t2_rows(),
         "Recall is R@1 for Dense/Rerank and R@all for TableSeek (the paper's convention).",
         "Qwen3-4B and LLaMA numbers: Table 24.", SERVED, TCR_SUBSET, models=MODELS),
    _rep("tableseek-t3", "Table 3", "Results on TARGET-TabFact-test-1k", _t3_rows(),
         "Acc-Ref and the Qwen3-4B / LLaMA numbers: Table 26.", TEST_1K, SERVED, models=MODELS),
    _rep("tableseek-t4", "Table 4", "Recall and Discriminative Score on TCR-Bench", _t4_rows(),
         "DS = R / GR over the question's sibling group (App. I).", SERVED, TCR_SUBSET,
         missing=_DS1_MISSING),
    _rep("tableseek-ablation", "Table 6", "Ablation of refine, fallback and structure "
         "preservation on TCR-Bench (Mixed)", _ablation_rows(), NO_TIME, TCR_SUBSET),
    _rep("tableseek-formats", "Tables 24, 39, 40", "F1 across table formats on TCR-Bench",
         _formats_rows(), "Mean, range, std. dev. and FRS = 100 · min F1 / max F1 over a "
         "method's four format rows (Table 40).", SERVED, TCR_SUBSET, models=MODELS),
    _rep("tableseek-backbones", "Table 25", "Supplementary backbones on TCR-Bench (Mixed)",
         _backbone_rows(), "Recall is R@1 for Dense/Rerank, R@all for TableSeek and Oracle.",
         SERVED, TCR_SUBSET, models=BACKBONES),
    _rep("tableseek-oracle", "Tables 29-30", "Oracle QA (gold table) and no-table QA",
         _oracle_rows(), "No-table F1 (App. G) is printed for Qwen3-30B only.", TEST_1K,
         TCR_SUBSET, models=MODELS),
    _rep("tableseek-retrieval", "Tables 31-32", "Retrieval-only results (BM25)",
         _retrieval_rows(), "Our BM25 indexes header and cell words with our stop words "
         "(docs/results.md); the paper's BM25 setup is not described beyond Robertson & "
         "Zaragoza.", TEST_1K, missing=_OTHER_RETRIEVERS, models=(LLM_FREE,)),
    _rep("tableseek-refine", "Table 35", "Fine-grained ablation of refine (regenerate, select) "
         "on TCR-Bench (Mixed)", _refine_rows(), NO_TIME, TCR_SUBSET),
    _rep("tableseek-strategies", "Tables 37-38", "Refine strategies (nsm select, rN rerank) on "
         "TCR-Bench (Mixed)", _strategy_rows(), "Eff = F1 / R@all.", NO_TIME, TCR_SUBSET),
    _rep("tableseek-evidence", "Table 43", "Retrieved evidence size on TCR-Bench (Mixed)",
         _evidence_rows(), NO_TIME, TCR_SUBSET),
    _rep("tableseek-transposed", "Table 44", "Transposed TCR-Bench (Mixed)", _transposed_rows(),
         "Oracle Recall_T is R@all of the gold table: 1.000 unless a question failed (a failed "
         "question recalls nothing).", SERVED,
         TCR_SUBSET),
)
# fmt: on
"""Every TableSeek configuration, in the paper's table order."""

register(*TABLESEEK)
