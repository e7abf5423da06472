"""TableRAG's databases from the stored relation (SQL) against from the cells (issue 37).

    python benchmarks/rag_relation.py [--rows 125000] [--reps 3] [--json]

A 10^6-cell table (125,000 rows × 8 columns of `rag_scale.orders_table`: order number, date,
buyer, city, category, description, "$1,299.00"-style price, quantity) is written as a CSV
and ingested into a temporary store; then, in this one process, medians of `--reps` runs of:

- ``databases``: TableRAG's schema DB, solver frame and cell DB (B = 10,000, categorical
  columns) — ``prepare_table(table, cfg)`` from the cells (the current path) against
  ``prepare_table(table, cfg, store=…, table_id=…)`` with SQL over the relation;
- ``query``: one retrieval query over the built databases (BM25, the LLM-free encoder:
  schema queries ["price", "category"], cell queries ["wallet"]), retrievers attached;
- ``preview``: `TableRAG.preview` end to end (databases, BM25 indexes, retrieval) on a
  `TableSet` without and with the store;
- ``frame``: a sandbox frame of the table, ``Table.to_dataframe()`` against
  ``relframe.relation_frame`` (Arrow).

Reading the table (``store.get``, paid by the caller on both paths) is printed apart. The two
paths' databases are checked identical (schema entries, solver frame, cell pairs) before
timing.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas.testing as pdt

from tablequest.corpus import Store, ingest
from tablequest.methods.base import TableSet
from tablequest.methods.rag import RagConfig, TableRAG
from tablequest.methods.rag.prepared import (
    PreparedTable,
    attach_retrievers,
    prepare_table,
    retrieve,
)
from tablequest.methods.relframe import relation_frame

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rag_scale import orders_table

COLUMNS = 8
QUESTION = "What is the average price of wallets?"


def write_csv(path: Path, rows: int) -> None:
    table = orders_table(rows * 10)
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        for row in table.cells:
            writer.writerow(row[:COLUMNS])


def median_ms(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 1)


def identical(a: PreparedTable, b: PreparedTable) -> bool:
    pdt.assert_frame_equal(a.frame, b.frame)
    return bool(
        a.raw.equals(b.raw)
        and a.schema == b.schema
        and a.cells.entries == b.cells.entries
        and a.cells.n_distinct == b.cells.n_distinct
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=125_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cfg = RagConfig(encoder="bm25")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "orders.csv"
        write_csv(path, args.rows)
        started = time.perf_counter()
        with Store(Path(tmp) / "orders.duckdb") as store:
            ingest(store, [path])
            ingest_s = time.perf_counter() - started
            (tid,) = store.table_ids()
            get_ms = median_ms(lambda: store.get(tid), args.reps)
            table = store.get(tid)
            digest = table.content_hash

            def cells() -> PreparedTable:
                return prepare_table(table, cfg, content_hash=digest)

            def sql() -> PreparedTable:
                return prepare_table(table, cfg, store=store, table_id=tid, content_hash=digest)

            a, b = cells(), sql()
            if "distinct" not in b.seconds:
                raise SystemExit("the SQL path was not taken (no usable relation)")
            same = identical(a, b)
            databases = {"cells": median_ms(cells, args.reps), "sql": median_ms(sql, args.reps)}
            query = {}
            for label, prepared in (("cells", a), ("sql", b)):
                attach_retrievers(prepared, cfg, encoder=None, store=None)

                def search(p: PreparedTable = prepared) -> None:
                    retrieve(p, cfg, ["price", "category"], ["wallet"])

                query[label] = median_ms(search, args.reps)
            preview = {}
            for label, source in (("cells", TableSet([(tid, table)])),
                                  ("sql", TableSet([(tid, table)], store))):  # fmt: skip

                def one(source: TableSet = source) -> None:
                    with TableRAG(cfg) as rag:
                        rag.preview(QUESTION, source)

                preview[label] = median_ms(one, args.reps)
            frame = {
                "cells": median_ms(table.to_dataframe, args.reps),
                "sql": median_ms(lambda: relation_frame(store, tid, table=table), args.reps),
            }
            pdt.assert_frame_equal(relation_frame(store, tid, table=table), table.to_dataframe())
            parts_cells, parts_sql = cells().seconds, sql().seconds  # one more run of each
    out = {
        "rows": table.n_rows,
        "cols": table.n_cols,
        "cells": table.n_rows * table.n_cols,
        "distinct_pairs": b.cells.n_distinct,
        "kept_pairs": len(b.cells),
        "identical": same,
        "ingest_s": round(ingest_s, 1),
        "store_get_ms": get_ms,
        "databases_ms": databases,
        "query_ms": query,
        "preview_ms": preview,
        "frame_ms": frame,
        "sql_parts_s": {k: round(v, 3) for k, v in parts_sql.items()},
        "cells_parts_s": {k: round(v, 3) for k, v in parts_cells.items()},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(out))
        return
    shape = f"{out['rows']:,} rows × {out['cols']} columns = {out['cells']:,} cells"
    print(f"{shape}; D = {out['distinct_pairs']:,}, kept {out['kept_pairs']:,}; identical: {same}")
    print(f"ingest {out['ingest_s']} s; store.get {get_ms} ms (both paths; paid by the caller)")
    print(f"medians of {args.reps} (ms)      cells path   SQL path   ratio")
    for label, row in (("databases (schema+cell)", databases), ("one retrieval query", query),
                       ("preview end to end", preview), ("sandbox frame", frame)):  # fmt: skip
        ratio = row["cells"] / row["sql"] if row["sql"] else float("nan")
        print(f"{label:<26}{row['cells']:>11.1f}{row['sql']:>11.1f}{ratio:>8.2f}×")
    print(f"parts of a last run (s): cells {out['cells_parts_s']}; SQL {out['sql_parts_s']}")
    print(f"load average (1, 5, 15 min) at the end: {out['load_average']}")


if __name__ == "__main__":
    main()
