"""The papers' numbers that `eval reproduce` prints, kept in the repository (issue 41, item 4b).

`paper_numbers.json` holds, per paper, the sha256 of the paper text the numbers were
extracted from and every table cell the reproduction configurations use, by the paper's own
coordinates: ``cells[table][row][column] = "0.416"`` (as printed; "–" for a dash). A paper's
tables are read from its text by `tableseek_cells` (tab-separated tables, plus App. G's
no-table F1, which the text states in a sentence) and `tabscope_cells` (tables flattened
without separators: each row is found by its label and read with the column's number pattern).

`coordinates(rep, row, column, model)` says where a number of the code sits in the paper:
which table, row and column — from what the code's row and cell *mean* (method, format,
backbone, metric), never from its value, so a number moved to another row or column no longer
matches. CI checks the code against the JSON; with the papers present, the JSON is re-derived
from them (`tests/eval/test_paper_numbers.py`).

Regenerate after a paper or a configuration changes: ``python tests/eval/paper_numbers.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tablequest.eval.reproduce import all_reproductions
from tablequest.eval.reproduce.spec import Reproduction, Row

PAPERS = Path("/work/shared/docs/papers")
DATA = Path(__file__).with_name("paper_numbers.json")
SOURCES = {"tableseek": "tableseek.txt", "tabscope": "tabscope.txt"}
PAPER_OF = {"TableSeek": "tableseek", "TabScope": "tabscope"}

Coordinates = tuple[str, str, str]  # (table, row, column)
Cells = dict[Coordinates, str]

_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?%?$")
_DASHES = ("-", "–")


# -- reading the papers ------------------------------------------------------------------------
def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _value_cell(cell: str) -> bool:
    return bool(_NUMBER.match(cell.strip())) or cell.strip() in _DASHES


def _columns(header: list[list[str]]) -> list[str]:
    """Column names: each header row's cells (an empty cell continues the one before it),
    joined top to bottom with " / ", repeats dropped ("Rerank / top-3")."""
    width = max(len(h) for h in header)
    filled = []
    for cells in header:
        row, last = [], ""
        for j in range(width):
            last = cells[j].strip() if j < len(cells) and cells[j].strip() else last
            row.append(last)
        filled.append(row)
    names = []
    for j in range(width):
        parts: list[str] = []
        for row in filled:
            if row[j] and (not parts or parts[-1] != row[j]):
                parts.append(row[j])
        names.append(" / ".join(parts))
    return names


def _tab_table(lines: list[str]) -> Cells:
    """One tab-separated table: header rows (no number), section lines (no tab), data rows
    labelled by their leading text cells (section first)."""
    rows = [line.split("\t") for line in lines]
    n_header = 0
    while (
        n_header < len(rows)
        and len(rows[n_header]) > 1
        and not any(_value_cell(c) for c in rows[n_header][1:])
    ):
        n_header += 1
    columns = _columns(rows[:n_header])
    cells: Cells = {}
    section = ""
    for cells_of_row in rows[n_header:]:
        if len(cells_of_row) == 1:
            section = cells_of_row[0].strip()
            continue
        k = 1
        while k < len(cells_of_row) and not _value_cell(cells_of_row[k]):
            k += 1
        label = " / ".join([*([section] if section else []), *map(str.strip, cells_of_row[:k])])
        for j in range(k, len(cells_of_row)):
            cells[("", label, columns[j])] = cells_of_row[j].strip()
    return cells


def tab_tables(text: str) -> Cells:
    """Every tab-separated table of `text` by its caption ("Table 24"): the block of lines
    right above the caption line."""
    lines = text.split("\n")
    out: Cells = {}
    for i, line in enumerate(lines):
        caption = re.match(r"^(Table \d+):", line)
        if not caption:
            continue
        end = i - 1
        while end >= 0 and not lines[end].strip():
            end -= 1
        start = end
        while start > 0 and lines[start - 1].strip():
            start -= 1
        block = lines[start : end + 1]
        if block and "\t" in block[0]:
            for (_, row, column), value in _tab_table(block).items():
                out[(caption[1], row, column)] = value
    return out


def tableseek_cells(text: str) -> Cells:
    """TableSeek's tables, plus App. G's no-table F1 of Qwen3-30B (in a sentence)."""
    cells = tab_tables(text)
    sentence = re.search(r"no-table setting on TCR-Bench.*?Mixed format\.", text, re.S)
    if sentence:
        for value, fmt in re.findall(r"(\d\.\d{3}) on (CSV|Markdown|HTML|Mixed)", sentence[0]):
            cells[("App. G", "Qwen3-30B", fmt)] = value
    return cells


_CITATION = r"(?:\(\[[^\]]*\]\([^)]*\)\)|\[[^\]]*\]\([^)]*\))?"
_T7 = (("Localized", r"(\d\d\.\d\d)%"), ("Full-table CoT", r"(\d\d\.\d\d)%"),
       ("Diff.", r"([+-]\d\.\d\d)"))  # fmt: skip
_T2_COLUMNS = tuple(f"{d} / {m}" for d in ("WikiTQ", "SLQA") for m in ("GPT", "LLaMA", "Avg."))
_T3_COLUMNS = tuple(f"{k} / {c}" for k in ("F1", "Exact Match") for c in ("Cell", "Row", "Column"))
_TYPES = ("Lookup", "Order/Superlative", "Local Reasoning", "Count-Diff", "Count-General",
          "Count-Frequency", "Compare")  # fmt: skip
TABSCOPE_TABLES: dict[str, dict[str, Any]] = {
    "Table 2": {
        "header": "CategoryMethodWikiTQSLQAGPTLLaMAAvg.GPTLLaMAAvg.",
        "columns": tuple((c, r"(\d\d\.\d|–)") for c in _T2_COLUMNS),
        "rows": (("Decomposition / TableRAG", "DecompositionTableRAG"),
                 ("Decomposition / TabSQLify", "TabSQLify"),
                 ("Decomposition / Table-Critic", "Table-Critic"),
                 ("Decomposition / DATER", "DATER"),
                 ("Decomposition / Chain-of-Table", "Chain-of-Table"),
                 ("Decomposition / TabScope (decomposition-only)", "TabScope(decomposition-only)"),
                 ("Full-table / RoT", "Full-tableRoT"), ("Full-table / CoT", "CoT"),
                 ("Adaptive / TabScope", "AdaptiveTabScope")),
    },
    "Table 3": {
        "header": "MethodF1Exact MatchCellRowColumnCellRowColumn",
        "columns": tuple((c, r"(\d{1,2}\.\d\d)") for c in _T3_COLUMNS),
        "rows": tuple((r, r.replace(" (", "(")) for r in ("TableRAG", "TabSQLify",
                      "Chain-of-Table", "DATER", "TabScope (decomposition-only)")),
    },
    "Table 5": {
        "header": "VariantWikiTQSLQA",
        "columns": tuple((c, r"(\d\d\.\d)(?: \(−\d\.\d-\d\.\d\))?") for c in ("WikiTQ", "SLQA")),
        "rows": tuple((r, r) for r in ("TabScope", "w/o evidence aggregation",
                      "w/o sub-table refinement", "w/o operation-aware retrieval",
                      "w/o scope selection")),
    },
    "Table 7": {"header": "Question TypeLocalizedFull-table CoTDiff.", "columns": _T7,
                "rows": tuple((t, t) for t in _TYPES)},
    "Table 8": {"header": "Question TypeLocalizedFull-table CoTDiff.", "columns": _T7,
                "rows": tuple((t, t) for t in ("Lookup", "Order/Superlative", "Count-General",
                                               "Count-Frequency"))},
}  # fmt: skip
"""TabScope's tables lose their cell separators in the text: each is read from its header
to its caption, row by row (the label as printed, an optional citation, then one number per
column, each with its column's pattern)."""


def tabscope_cells(text: str) -> Cells:
    """TabScope's Tables 2, 3, 5, 7 and 8 (escapes removed: ``81\\.1`` → ``81.1``)."""
    text = text.replace("\\", "")
    cells: Cells = {}
    for table, spec in TABSCOPE_TABLES.items():
        end = text.index(f"{table}:")
        pos = text.rindex(spec["header"], 0, end) + len(spec["header"])
        numbers = "".join(pattern for _, pattern in spec["columns"])
        for row, printed in spec["rows"]:
            match = re.compile(re.escape(printed) + _CITATION + numbers).search(text, pos, end)
            if match is None:
                raise ValueError(f"tabscope {table}: row {row!r} not found")
            for (column, _), value in zip(spec["columns"], match.groups(), strict=True):
                cells[(table, row, column)] = value
            pos = match.end()
    return cells


READERS = {"tableseek": tableseek_cells, "tabscope": tabscope_cells}


# -- where the code's numbers sit in the papers ------------------------------------------------
Q30 = "Qwen3-30B"
_FMT = {"csv": "CSV", "mixed": "Mixed", "html": "HTML", "markdown": "Markdown"}
_METHOD = {"oracle": "Oracle", "dense": "Dense", "rerank3": "Rerank (top-3)",
           "rerank5": "Rerank (top-5)", "seek5": "TableSeek (5-step)",
           "seek10": "TableSeek (10-step)"}  # fmt: skip
_LONG = {"seek5": "TableSeek (5-step-5s1-small)", "seek10": "TableSeek (10-step-5s1-small)"}
_T4 = {"dense": "Dense", "rerank3": "Rerank / top-3", "rerank5": "Rerank / top-5",
       "seek5": "TableSeek / 5step", "seek10": "TableSeek / 10step"}  # fmt: skip
_STEPPED = {"tableseek-ablation": "Table 6", "tableseek-refine": "Table 35",
            "tableseek-evidence": "Table 43"}  # fmt: skip


def _base(row: Row) -> str:
    """A TableSeek row's method: its key without dataset and format parts."""
    key = row.key.removeprefix("tabfact-").removesuffix("-transposed-mixed")
    return re.sub(r"-(csv|html|markdown)$", "", key)


def _config(base: str, model: str, embed: str = "E4B", reranker: str = "R4B") -> str:
    """The paper's Config cell: the retriever models, then the backbone (when named)."""
    parts = {"dense": [embed], "rerank3": [embed, reranker], "rerank5": [embed, reranker]}
    return "+".join([*parts.get(base, []), *([model] if model else [])])


def _t24(base: str, fmt: str, column: str, model: str) -> Coordinates:
    """Table 24: one row per method, config (TableSeek: the backbone) and format."""
    config = model if base.startswith("seek") else _config(base, "")
    return ("Table 24", f"{_METHOD[base]} / {config} / {fmt}",
            "Recall" if column == "Recall" else f"F1 ({model})")  # fmt: skip


def _tableseek(name: str, row: Row, column: str, model: str) -> Coordinates:
    base, fmt = _base(row), _FMT.get(row.fmt.removeprefix("transposed-"), "")
    seek = base.startswith("seek")
    if name == "tableseek-t2" and model == Q30:
        return ("Table 2", f"{_METHOD[base]} / {_config(base, Q30 if seek else '')}", column)
    if name in ("tableseek-t2", "tableseek-formats"):
        if base in ("seek10-5s3", "seek10-r5"):
            return ("Table 39", fmt, base.replace("seek10-", "10step-"))
        return _t24(base, fmt, column, model)
    if name == "tableseek-t3":
        if model == Q30 and column != "Acc-Ref":
            config = _config(base, Q30 if seek else "", "Stella")
            return ("Table 3", f"{_METHOD[base]} / {config}", column)
        config = model if seek else _config(base, model, "Stella", "Qwen3-R4B")
        return ("Table 26", f"{_METHOD[base]} / test-1k / {config}",
                "Retrieval" if column == "Recall" else column)  # fmt: skip
    if name == "tableseek-t4":
        return ("Table 4", column, _T4[base])
    if name in _STEPPED:
        steps, rest = row.label.split("-step ", 1)
        label = row.label if rest == "(Full)" else rest
        column = "R@All" if name == "tableseek-evidence" and column == "R@all" else column
        return (_STEPPED[name], f"{steps}-step setting / {label}", column)
    if name == "tableseek-strategies":
        return ("Table 38" if "-r" in row.label else "Table 37", row.label, column)
    if name == "tableseek-backbones":
        return ("Table 25", f"{_LONG.get(base, _METHOD[base])} / {_config(base, model)}", column)
    if name == "tableseek-oracle":
        if row.dataset == "tabfact":
            return ("Table 30", f"{model} / test-1k", column)
        return ("Table 29" if base == "oracle" else "App. G", model, fmt)
    if name == "tableseek-retrieval":
        split = fmt if row.dataset == "tcrbench" else "test-1k"
        return ("Table 31" if row.dataset == "tcrbench" else "Table 32", f"BM25 / BM25 / {split}",
                column)  # fmt: skip
    if name == "tableseek-transposed":
        config = _config(base, model, reranker="R0.6B")
        return ("Table 44", f"{_LONG.get(base, _METHOD[base])} / {config}", column)
    raise KeyError(f"no paper coordinates for {name}")


_T2_ROWS = {"TableRAG": "Decomposition / TableRAG", "TabSQLify": "Decomposition / TabSQLify",
            "Table-Critic": "Decomposition / Table-Critic", "DATER": "Decomposition / DATER",
            "Chain-of-Table": "Decomposition / Chain-of-Table",
            "TabScope (decomposition-only)": "Decomposition / TabScope (decomposition-only)",
            "RoT": "Full-table / RoT", "CoT (full table)": "Full-table / CoT",
            "TabScope (adaptive)": "Adaptive / TabScope"}  # fmt: skip
_MODEL = {"GPT-5-mini": "GPT", "LLaMA-3.3-70B": "LLaMA"}
_T3 = {"F1": "F1", "EM": "Exact Match"}


def _tabscope(name: str, label: str, column: str, model: str) -> Coordinates:
    """TabScope: `label` is the row's (or the missing row's) label, `column` the cell's."""
    label = label.removesuffix(" · SLQA")
    if name == "tabscope-t2":
        dataset, _, named = column.partition(" · ")
        return ("Table 2", _T2_ROWS[label], f"{dataset} / {_MODEL[named or model]}")
    if name == "tabscope-t3":
        level, metric = column.split(" ")
        return ("Table 3", label, f"{_T3[metric]} / {level}")
    if name == "tabscope-types":
        scope = label.split(" · ")[0]
        table = "Table 8" if "Table 8" in label else "Table 7"
        return (table, column, "Localized" if scope.startswith("Localized") else scope)
    if name == "tabscope-t5":
        return ("Table 5", label, column.split(" · ")[0])
    raise KeyError(f"no paper coordinates for {name}")


def numbers(rep: Reproduction) -> Iterator[tuple[Coordinates, float | None]]:
    """Every paper number of `rep` (None: the paper prints a dash) at its paper coordinates:
    each row's cells by backbone, then each missing row's numbers."""
    paper = PAPER_OF[rep.paper]
    for row in rep.rows:
        for cell in row.cells:
            for model, value in cell.paper.items():
                if paper == "tableseek":
                    yield _tableseek(rep.name, row, cell.column, model), value
                else:
                    label = (
                        row.label
                        if rep.name != "tabscope-types"
                        else (
                            "Localized" if row.key.startswith("decomposition") else "Full-table CoT"
                        )
                    )
                    yield _tabscope(rep.name, label, cell.column, model), value
    for missing in rep.missing:
        for key, value in missing.paper.items():
            if paper == "tableseek":  # Table 4's DS@1 of the baselines: "Rerank top-3: DS@1"
                method, metric = missing.label.split(": ")
                yield ("Table 4", metric, method.replace("Rerank ", "Rerank / ")), value
            else:
                yield _tabscope(rep.name, missing.label, key, ""), value


def reproductions(paper: str) -> list[Reproduction]:
    return [rep for rep in all_reproductions().values() if PAPER_OF.get(rep.paper) == paper]


def code_numbers(paper: str) -> dict[Coordinates, float | None]:
    """Every number the configurations of `paper` print, by paper coordinates.

    Raises:
        ValueError: two configurations put different numbers at one place of the paper.
    """
    out: dict[Coordinates, float | None] = {}
    for rep in reproductions(paper):
        for where, value in numbers(rep):
            if where in out and out[where] != value:
                raise ValueError(f"{rep.name}: {where} is {value}, elsewhere {out[where]}")
            out[where] = value
    return out


# -- the data file -----------------------------------------------------------------------------
def load() -> dict[str, Any]:
    return dict(json.loads(DATA.read_text(encoding="utf-8")))


def cells_of(entry: dict[str, Any]) -> Cells:
    """The flat cells of one paper's entry of the data file."""
    return {(t, r, c): v for t, rows in entry["cells"].items() for r, cols in rows.items()
            for c, v in cols.items()}  # fmt: skip


def derive(paper: str, text: str, wanted: set[Coordinates]) -> dict[str, Any]:
    """The data file's entry of `paper`: the cells at `wanted`, read from its `text`.

    Raises:
        KeyError: a wanted cell is not in the paper's tables.
    """
    found = READERS[paper](text)
    cells: dict[str, dict[str, dict[str, str]]] = {}
    for table, row, column in sorted(wanted):
        value = found[(table, row, column)]
        cells.setdefault(table, {}).setdefault(row, {})[column] = value
    return {"source": SOURCES[paper], "sha256": sha256(text), "cells": cells}


def main() -> None:
    """Write `paper_numbers.json` from the papers, at the places the code's numbers sit."""
    data = {}
    for paper, source in SOURCES.items():
        text = (PAPERS / source).read_text(encoding="utf-8")
        data[paper] = derive(paper, text, set(code_numbers(paper)))
    DATA.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
