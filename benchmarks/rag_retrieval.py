"""TableRAG retrieval quality without an LLM, like the paper's Table 3 (column / cell R, P, F1).

    python benchmarks/rag_retrieval.py [--data ../shared/data] [--wtq 200] [--encoders minilm,bm25]
                                       [--scale-questions 40] [--scale-encoder bm25] [--json]

Gold annotations (the paper takes them from program annotations, which these benchmarks lack):

- TCR-Bench (the 12 questions whose tables are staged): gold columns are the columns the
  question names, annotated by hand below (`TCR_GOLD_COLUMNS`); gold cells are the cells of
  those columns in the `answer_index` rows.
- WTQ (the first `--wtq` questions of pristine-unseen-tables with a gold cell): gold cells
  are built automatically — the cells whose text equals a non-numeric gold answer item
  (case-insensitive; numeric answers are left out, a count of 3 would match every "3") and
  the non-numeric cells (3+ characters) the question quotes as whole words; gold columns
  are their columns. Questions with no gold cell are skipped.
- Synthetic scale: those WTQ questions with their table expanded to 100×100, 500×500 and
  1000×1000 (`methods.rag.synth.expand_table`, the question-quoted values protected); the
  original cells and column names are kept, so the gold sets do not change.

What each method shows the solver (as in Table 3): ReadSchema all columns and no cells;
RandRowSampling (K = 30) all columns and the cells of 30 random rows; RowColRetrieval
(K = 30, B = 10,000) the cells where its top-K rows and columns meet; TableRAG (K = 5,
B = 10,000) its retrieved schema entries and cell pairs. Cells are compared as distinct
(column, value) pairs. Queries without an LLM: the question's content words are both the
schema queries and the cell queries (numeric words dropped from the cell queries, as the
official expansion does); RowColRetrieval uses the question itself. R, P and F1 are averaged
over questions (macro), in percent.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tablequest.corpus import Store
from tablequest.corpus.dense.encoders import Encoder, make_encoder
from tablequest.methods.rag import RagConfig, TableRAG
from tablequest.methods.rag import baselines as bl
from tablequest.methods.rag.expansion import is_numeric, keywords
from tablequest.methods.rag.retrieval import RetrievalKind
from tablequest.methods.rag.synth import SIZES, expand_table, protected_values
from tablequest.table import Table, read_tables

TCR_GOLD_COLUMNS: dict[str, list[str]] = {
    "Question_G0_Q0": ["city_id", "postal_code"],
    "Question_G1_Q0": ["clientRand", "CallID"],
    "Question_G2_Q0": ["station_nbr", "dewpoint", "heat", "preciptotal"],
    "Question_G3_Q0": ["TeamID", "MinorBench", "PointsPerGame_mul10"],
    "Question_G4_Q0": ["state_key", "grad_cohort_ct_div10"],
    "Question_G5_Q0": ["customer_id", "address_id"],
    "Question_G6_Q0": ["PodcastKey", "iTunesLink", "slugText"],
    "Question_G7_Q0": ["_TeamSalesID", "QtyOrder"],
    "Question_G8_Q0": ["caseID", "beatZone", "districtID"],
    "Question_G9_Q0": ["keyword_id", "keyword_name"],
    "Question_G10_Q0": ["gender_bio", "wikidata_id"],
    "Question_G11_Q0": ["book_id", "language_id", "publication_date"],
}
METHODS = ("ReadSchema", "RandRowSampling", "RowColRetrieval", "TableRAG")
Pair = tuple[str, str]


@dataclass
class Item:
    """One question with its table and gold sets."""

    qid: str
    question: str
    table: Table
    gold_columns: set[str]
    gold_cells: set[Pair]
    protect: list[str]


def prf(found: set[Any], gold: set[Any]) -> tuple[float, float, float]:
    hit = len(found & gold)
    recall = hit / len(gold) if gold else 0.0
    precision = hit / len(found) if found else 0.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    return recall, precision, f1


def _num(text: str) -> float | None:
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None


def tcr_items(root: Path) -> list[Item]:
    questions = json.loads((root / "data" / "TCR_Questions.json").read_text())
    items = []
    for q in questions:
        cols = TCR_GOLD_COLUMNS.get(q["question_id"])
        path = root / "tables" / "TCR_8k" / q["db_id"] / f"{q['highlighted_table'][0]}.csv"
        if cols is None or not path.is_file():
            continue
        table = read_tables(path)[0]
        names = list(table.columns)
        cells = {(c, table.body[r][names.index(c)]) for r in q["answer_index"] for c in cols}
        cells = {(c, v) for c, v in cells if v.strip()}
        items.append(Item(q["question_id"], q["question"], table, set(cols), cells, []))
    return items


def wtq_items(root: Path, limit: int) -> list[Item]:
    items: list[Item] = []
    with (root / "data" / "pristine-unseen-tables.tsv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    for row in rows:
        if len(items) >= limit:
            break
        table = read_tables(root / row["context"])[0]
        answers = {a.replace("\\n", "\n").replace("\\p", "|").strip().lower()
                   for a in row["targetValue"].split("|")}  # fmt: skip
        answers = {a for a in answers if a and _num(a) is None}  # counts match random cells
        names = list(table.columns)
        gold: set[Pair] = set()
        for body in table.body:
            for j, value in enumerate(body):
                if value.strip().lower() in answers:
                    gold.add((names[j], value))
        mentioned = protected_values(table, row["utterance"])
        for body in table.body:
            for j, value in enumerate(body):
                if value in mentioned:
                    gold.add((names[j], value))
        if gold:
            items.append(Item(row["id"], row["utterance"], table, {c for c, _ in gold}, gold,
                              mentioned))  # fmt: skip
    return items


# bm25 | hybrid (MiniLM on sentence-transformers + BM25 fused), as in the paper's Table 5, or
# any other name of `corpus.encoders` (minilm-st, minilm, minilm-int8, minilm-static, …): a
# dense kind with that encoder. The reference figures were taken with minilm-st.
EncoderKind = str


def encoder_name(kind: EncoderKind) -> str:
    """The `corpus.encoders` name an encoder kind of this benchmark encodes with."""
    return "minilm-st" if kind == "hybrid" else kind


def rag_config(kind: EncoderKind) -> RagConfig:
    """The TableRAG options of an encoder kind of this benchmark."""
    encoder = "bm25" if kind == "bm25" else "minilm"
    retrieval = "hybrid" if kind == "hybrid" else "dense"
    return RagConfig(encoder=encoder, retrieval=retrieval, top_k=5, budget=10_000)


def retrieval_kind(kind: EncoderKind) -> RetrievalKind:
    return "bm25" if kind == "bm25" else "hybrid" if kind == "hybrid" else "dense"


def retrieved(
    method: str, item: Item, kind: EncoderKind, encoder: Encoder | None, store: Store
) -> tuple[set[str], set[Pair]]:
    table = item.table
    names = list(table.columns)
    if method == "ReadSchema":
        return set(names), set()
    if method == "RandRowSampling":
        rows = bl.sample_rows(table.n_rows, 30, seed=0)
        return set(names), bl.shown_cells(table, rows, names)
    if method == "RowColRetrieval":
        ctx = bl.rowcol(table, item.question, k=30, budget=10_000, kind=retrieval_kind(kind),
                        encoder=encoder,
                        store=store, content_hash=table.content_hash)  # fmt: skip
        return set(ctx.columns), bl.shown_cells(table, ctx.rows, ctx.columns)
    words = keywords(item.question) or [item.question]
    rag = TableRAG(rag_config(kind), encoder=encoder, store=store)
    found = rag.retrieve(rag.prepare(table), words, [w for w in words if not is_numeric(w)])
    return {c.name for c, _, _ in found.columns}, {(e.column, e.value) for e, _, _ in found.cells}


def evaluate(
    items: Iterable[Item], kind: EncoderKind, encoder: Encoder | None, store: Store
) -> dict[str, dict[str, float]]:
    scores: dict[str, list[tuple[float, ...]]] = {m: [] for m in METHODS}
    for item in items:
        for method in METHODS:
            cols, cells = retrieved(method, item, kind, encoder, store)
            scores[method].append(prf(cols, item.gold_columns) + prf(cells, item.gold_cells))
    keys = ("col_R", "col_P", "col_F1", "cell_R", "cell_P", "cell_F1")
    return {
        m: {k: round(100 * statistics.mean(v[i] for v in rows), 1) for i, k in enumerate(keys)}
        for m, rows in scores.items()
        if rows
    }


def scaled(items: list[Item], size: tuple[int, int]) -> list[Item]:
    out = []
    for item in items:
        protect = sorted({v for _, v in item.gold_cells} | set(item.protect))
        n_rows, n_cols = max(size[0], item.table.n_rows), max(size[1], item.table.n_cols)
        big = expand_table(item.table, n_rows, n_cols, seed=0, protect=protect).table
        out.append(Item(item.qid, item.question, big, item.gold_columns, item.gold_cells, []))
    return out


def markdown(title: str, table: dict[str, dict[str, float]], n: int) -> str:
    lines = [f"**{title}** ({n} questions)", "",
             "| Method | col R | col P | col F1 | cell R | cell P | cell F1 |",
             "|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for method, s in table.items():
        lines.append(f"| {method} | {s['col_R']} | {s['col_P']} | {s['col_F1']} | "
                     f"{s['cell_R']} | {s['cell_P']} | {s['cell_F1']} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--wtq", type=int, default=200)
    parser.add_argument("--encoders", default="minilm,bm25")
    parser.add_argument("--scale-questions", type=int, default=40)
    parser.add_argument("--scale-encoder", default="bm25")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    store = Store()
    started = time.perf_counter()
    sets = {"TCR-Bench": tcr_items(args.data / "tcrbench"),
            "WTQ": wtq_items(args.data / "wtq", args.wtq)}  # fmt: skip
    results: dict[str, Any] = {}
    blocks: list[str] = []
    built: dict[str, Encoder | None] = {}
    for name in args.encoders.split(","):
        kind: EncoderKind = name.strip()
        base = encoder_name(kind)
        encoder = built[base] if base in built else built.setdefault(base, make_encoder(base))
        for label, items in sets.items():
            table = evaluate(items, kind, encoder, store)
            results[f"{label}/{kind}"] = table
            blocks.append(markdown(f"{label}, encoder {kind}", table, len(items)))
            print(f"done {label}/{kind} at {time.perf_counter() - started:.0f} s",
                  file=sys.stderr)  # fmt: skip
    scale_kind: EncoderKind = args.scale_encoder
    scale_items = sets["WTQ"][: args.scale_questions]
    scale_base = encoder_name(scale_kind)
    scale_encoder = built[scale_base] if scale_base in built else make_encoder(scale_base)
    for size in SIZES:
        label = f"WTQ {size[0]}x{size[1]}"
        table = evaluate(scaled(scale_items, size), scale_kind, scale_encoder, store)
        results[f"{label}/{scale_kind}"] = table
        blocks.append(markdown(f"{label} (synthetic), encoder {scale_kind}", table,
                               len(scale_items)))  # fmt: skip
        print(f"done {label} at {time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.json:
        print(json.dumps(results))
    else:
        print("\n\n".join(blocks))


if __name__ == "__main__":
    main()
