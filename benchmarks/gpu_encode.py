"""MiniLM on a device (CUDA fp16, or the CPU): cells/s, tables/s, agreement with the CPU.

    python benchmarks/gpu_encode.py [--data ../shared/data/wtq] [--device auto]
                                    [--limit N] [--sample 256] [--token-budget N]
                                    [--question-latency] [--json]

Workloads (WikiTableQuestions, read from the benchmark folder; nothing downloaded):

- ``cells``: TableRAG's cell database texts, the JSON lines
  ``{"column_name": ..., "cell_value": ...}`` of the distinct (column, value) pairs of each
  table (`tablequest.methods.rag.cell_db`, B = 10,000 per table), over every table;
- ``tables``: the text the dense retriever encodes per table, the store's ``plain`` column of
  the WTQ corpus (distinct content hashes), read from the built corpus
  (`tablequest.eval.corpora.build_corpus`, built once and cached).

``--limit N`` keeps the first N tables (cells: of the dataset; tables: of the corpus texts).
Each workload is encoded once by the lean torch path (`TorchMiniLM`: fp16 on CUDA, fp32 on the
CPU, length-sorted batches under ``--token-budget`` padded tokens) after a warm-up (model load,
CUDA start-up), wall time around the whole call (tokenizing included, vectors back on the
host). Agreement: cosine between its vectors and the ``minilm`` encoder's on the CPU (ONNX
Runtime fp32) on a seeded sample of ``--sample`` texts of each workload (min, median), and the
cache name the agreement check (`DeviceEncoder`) gives the device's vectors.

``--question-latency``: the default encoder (``minilm``, on the CPU) encodes 200 WTQ
questions one at a time after 20 warm-up questions; p50 / p90 milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = (
    next(
        (p for p in (HERE.parent / "shared", HERE.parents[1] / "shared") if p.is_dir()),
        HERE.parents[1] / "shared",
    )
    / "data"
    / "wtq"
)


def cell_texts(dataset: Any, limit: int | None) -> tuple[list[str], int]:
    """TableRAG's cell texts of the first `limit` tables, and how many tables they come from."""
    from tablequest.methods.rag.cell_db import build_cell_db
    from tablequest.methods.rag.schema_db import raw_frame

    texts: list[str] = []
    n = 0
    for _key, table in dataset.tables():
        if limit is not None and n >= limit:
            break
        texts.extend(build_cell_db(raw_frame(table)).docs)
        n += 1
    return texts, n


def table_texts(dataset: Any, limit: int | None) -> list[str]:
    """The distinct ``plain`` texts of the WTQ corpus (built or reused from the cache)."""
    from tablequest.eval.corpora import build_corpus

    corpus = build_corpus(dataset, "csv")
    with corpus.store:
        rows = corpus.store.con.execute(
            "SELECT content_hash, any_value(plain) FROM tables GROUP BY 1 ORDER BY 1"
        ).fetchall()
    return [r[1] for r in rows][:limit]


def timed(runner: Any, texts: list[str]) -> tuple[Any, float]:
    start = time.perf_counter()
    vectors = runner.encode(texts)
    return vectors, time.perf_counter() - start


def agreement_on_sample(runner: Any, reference: Any, texts: list[str], k: int) -> dict[str, float]:
    from tablequest.corpus.dense.device import agreement

    sample = random.Random(0).sample(texts, min(k, len(texts)))
    cos = agreement(runner.encode(sample), reference.encode(sample))
    return {"min_cosine": float(cos.min()), "median_cosine": float(np.median(cos))}


def question_latency(questions: list[str]) -> dict[str, Any]:
    """p50 / p90 ms of the default encoder on one question at a time (after warm-up)."""
    from tablequest.corpus.dense.encoders import EncoderSettings, make_encoder

    encoder = make_encoder("minilm", EncoderSettings(device="cpu"))
    assert encoder is not None
    for q in questions[:20]:
        encoder.encode([q])
    times = []
    for q in questions[20:220]:
        start = time.perf_counter()
        encoder.encode([q])
        times.append((time.perf_counter() - start) * 1e3)
    cuts = statistics.quantiles(times, n=10)
    return {"encoder": encoder.name, "questions": len(times),
            "p50_ms": statistics.median(times), "p90_ms": cuts[8]}  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tablequest.corpus.dense.device import DeviceEncoder, describe_device, resolve_device
    from tablequest.corpus.dense.encoders import EncoderSettings, make_encoder
    from tablequest.corpus.dense.torch_minilm import TorchMiniLM
    from tablequest.eval.datasets import load

    dataset = load("wtq", args.data)
    device = resolve_device(args.device)
    cells, n_cell_tables = cell_texts(dataset, args.limit)
    tables = table_texts(dataset, args.limit)
    runner = TorchMiniLM(device, token_budget=args.token_budget)
    runner.encode(cells[:256] + tables[:32])  # warm-up: load, CUDA context, kernels
    cell_vectors, cell_s = timed(runner, cells)
    table_vectors, table_s = timed(runner, tables)
    reference = make_encoder("minilm", EncoderSettings(device="cpu"))
    assert reference is not None
    out: dict[str, Any] = {
        "device": describe_device(args.device),
        "label": runner.label,
        "token_budget": runner.token_budget,
        "cells": {
            "texts": len(cells),
            "tables": n_cell_tables,
            "seconds": cell_s,
            "per_s": len(cells) / cell_s,
        },
        "tables": {"texts": len(tables), "seconds": table_s, "per_s": len(tables) / table_s},
        "agreement_cells": agreement_on_sample(runner, reference, cells, args.sample),
        "agreement_tables": agreement_on_sample(runner, reference, tables, args.sample),
        "load_avg": os.getloadavg()[0],
    }
    assert cell_vectors.shape[0] == len(cells) and table_vectors.shape[0] == len(tables)
    if device != "cpu":
        checked = DeviceEncoder(reference, runner)
        out["cache_name"] = checked.name
        out["probe_min_cosine"] = checked.min_cosine
    if args.question_latency:
        out["question_latency"] = question_latency([q.question for q in dataset.questions])
    return out


def show(r: dict[str, Any]) -> None:
    c, t = r["cells"], r["tables"]
    print(f"device {r['device']} [{r['label']}], token budget {r['token_budget']:,}, "
          f"load {r['load_avg']:.1f}")  # fmt: skip
    print(f"cells : {c['texts']:>8,} texts of {c['tables']:,} tables in {c['seconds']:.2f} s "
          f"= {c['per_s']:,.0f} cells/s")  # fmt: skip
    print(f"tables: {t['texts']:>8,} texts in {t['seconds']:.2f} s = {t['per_s']:,.0f} tables/s")
    for kind in ("cells", "tables"):
        a = r[f"agreement_{kind}"]
        print(f"agreement with minilm (CPU, ONNX fp32) on {kind}: min {a['min_cosine']:.6f}, "
              f"median {a['median_cosine']:.6f}")  # fmt: skip
    if "cache_name" in r:
        print(f"cache name: {r['cache_name']} (probe min cosine {r['probe_min_cosine']:.6f})")
    if "question_latency" in r:
        q = r["question_latency"]
        print(f"one question, {q['encoder']} on the CPU: p50 {q['p50_ms']:.2f} ms, "
              f"p90 {q['p90_ms']:.2f} ms over {q['questions']} questions")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--device", default=None, help="auto | cpu | cuda | cuda:N")
    parser.add_argument("--limit", type=int, default=None, help="first N tables")
    parser.add_argument("--sample", type=int, default=256, help="texts compared with the CPU")
    parser.add_argument("--token-budget", type=int, default=None, help="padded tokens/batch")
    parser.add_argument("--question-latency", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        show(result)


if __name__ == "__main__":
    main()
