"""TableRAG at scale: cell-DB build time, solver prompt size, and encoding time per table size.

    python benchmarks/rag_scale.py [--json] [--reps 7] [--encode-reps 1] [--encode-all]
                                   [--no-encode]

Tables are synthetic orders (10 columns: order number, date, buyer, city, category,
description, "$1,299.00"-style price, quantity, status, payment) of 10^3, 10^4, 10^5 and 10^6
cells (N/10 rows). Printed figures (medians over the repetitions; ``cell_db_min_ms`` is the
fastest repetition, the figure least disturbed by other processes on a shared machine, and
``load_average`` says how shared it was):

- ``cell_db_ms``: building the cell DB (distinct (column, value) pairs of the categorical
  columns, frequency order, cut to B = 10,000) from the table's string columns in memory;
  target ≤ 100 ms at 10^6 cells.
- ``prompt_tokens``: estimated tokens (chars / 4) of the solver's first prompt, with a
  Scripted LLM answering a fixed ReAct script (schema queries ["product", "price"], cell
  queries ["wallet"], then "Final Answer") and the hash encoder (retrieval content, not
  encoder quality, sets the size); target: flat within ±10%.
- ``encode_s``: encoding the cell DB (min(D, B) pairs) and the schema DB with
  all-MiniLM-L6-v2 on 2 CPU threads (torch); one repetition, and by default only at the
  largest size, where the budget is full (B = 10,000 pairs); ``--encode-all`` times every
  size (slow: tens of texts per second on 2 shared cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import numpy as np

from tablequest.corpus.dense.encoders import HashEncoder, MiniLMEncoder
from tablequest.llm import Scripted
from tablequest.methods.base import MethodContext
from tablequest.methods.rag import RagConfig, TableRAG
from tablequest.methods.rag.cell_db import build_cell_db
from tablequest.methods.rag.schema_db import build_schema_db, raw_frame
from tablequest.sandbox import Sandbox
from tablequest.table import Table

SIZES = (1_000, 10_000, 100_000, 1_000_000)
CATEGORIES = np.array(["wallet", "handbag", "belt", "sunglasses", "watch", "scarf", "backpack",
                       "cap", "gloves", "umbrella"])  # fmt: skip
CITIES = np.array(["Mumbai", "Delhi", "Pune", "Chennai", "Kolkata", "Jaipur", "Surat", "Agra"])
STATUS = np.array(["Delivered to buyer", "Cancelled", "Returned", "Shipped", "Pending"])
PAYMENT = np.array(["Cash on delivery", "Card", "UPI", "Net banking"])
ADJ = np.array(["Leather", "Canvas", "Slim", "Classic", "Vintage", "Travel", "Compact"])


def orders_table(n_cells: int, seed: int = 0) -> Table:
    """A synthetic 10-column orders table with `n_cells` cells."""
    n = n_cells // 10
    rng = np.random.default_rng(seed)
    cat = CATEGORIES[rng.integers(0, len(CATEGORIES), n)]
    price = rng.integers(99, 3000, n) + rng.choice([0.0, 0.5, 0.99], n)
    columns = {
        "order_no": [f"{400 + i % 7}-{i:07d}" for i in range(n)],
        "order_date": [f"2022-{m:02d}-{d:02d}" for m, d in
                       zip(rng.integers(1, 13, n), rng.integers(1, 29, n), strict=True)],
        "buyer": [f"buyer_{b}" for b in rng.integers(1, 20_000, n)],
        "ship_city": CITIES[rng.integers(0, len(CITIES), n)].tolist(),
        "category": cat.tolist(),
        "description": [f"{a} {c.title()} model {k}" for a, c, k in
                        zip(ADJ[rng.integers(0, len(ADJ), n)], cat, rng.integers(1, 400, n),
                            strict=True)],
        "item_total": [f"${p:,.2f}" for p in price],
        "quantity": [str(q) for q in rng.integers(1, 5, n)],
        "order_status": STATUS[rng.integers(0, len(STATUS), n)].tolist(),
        "payment_method": PAYMENT[rng.integers(0, len(PAYMENT), n)].tolist(),
    }  # fmt: skip
    header = tuple(columns)
    body = tuple(zip(*columns.values(), strict=True))
    return Table(cells=(header, *body))


def timed_ms(fn: Any, reps: int) -> tuple[float, float]:
    """(median, minimum) milliseconds over `reps` calls."""
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 1), round(min(times) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--encode-reps", type=int, default=1)
    parser.add_argument("--no-encode", action="store_true", help="skip the MiniLM timing")
    parser.add_argument("--encode-all", action="store_true", help="time encoding at every size")
    args = parser.parse_args()
    cell_ms: dict[str, float] = {}
    cell_min_ms: dict[str, float] = {}
    tokens: dict[str, int] = {}
    encode_s: dict[str, float] = {}
    notes: list[str] = []
    minilm = None if args.no_encode else MiniLMEncoder()
    if minilm is not None:
        import torch

        torch.set_num_threads(2)
        minilm.encode(["warm up"])
    with Sandbox() as sandbox:
        for size in SIZES:
            table = orders_table(size)
            raw = raw_frame(table)
            schema, _ = build_schema_db(raw)
            columns = schema.categorical
            cell_ms[str(size)], cell_min_ms[str(size)] = timed_ms(
                lambda raw=raw, columns=columns: build_cell_db(raw, columns=columns),
                args.reps,
            )
            db = build_cell_db(raw, columns=columns)
            script = Scripted(['["product", "price"]', '["wallet"]', "Final Answer: 1"])
            context = MethodContext(llm=script, cache=False)
            with TableRAG(RagConfig(encoder="minilm"), context, encoder=HashEncoder(),
                          sandbox=sandbox) as rag:  # fmt: skip
                result = rag.answer("What is the average price for wallets?", table)
            tokens[str(size)] = int(result.details["solver_prompt_tokens"])
            notes.append(f"{size:>9} cells: D = {db.n_distinct}, kept {len(db)} pairs, "
                         f"prompt {tokens[str(size)]} tokens")  # fmt: skip
            if minilm is not None and (args.encode_all or size == SIZES[-1]):
                texts = db.docs + schema.keys
                times = []
                for _ in range(args.encode_reps):
                    started = time.perf_counter()
                    minilm.encode(texts)
                    times.append(time.perf_counter() - started)
                encode_s[str(size)] = round(statistics.median(times), 2)
                notes[-1] += f", encoded {len(texts)} texts in {encode_s[str(size)]} s"
    out = {
        "cell_db_ms": cell_ms,
        "prompt_tokens": tokens,
        "encode_s": encode_s,
        "cell_db_min_ms": cell_min_ms,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if args.json:
        print(json.dumps(out))
        return
    print("\n".join(notes))
    spread = (max(tokens.values()) - min(tokens.values())) / statistics.mean(tokens.values())
    print(f"cell DB build (median ms): {cell_ms}; minimum: {cell_min_ms}")
    print(f"load average (1, 5, 15 min) at the end: {out['load_average']}")
    print(f"solver prompt tokens: {tokens} (spread {spread:.1%} of the mean)")
    print(f"MiniLM encoding (s, 2 threads): {encode_s}")


if __name__ == "__main__":
    main()
