"""MiniLM backends on the CPU: speed, agreement with sentence-transformers, peak memory.

    python benchmarks/encoders.py [--data ../shared/data/wtq] [--st-sample 300]
                                  [--pairs 10000] [--backends minilm,minilm-int8,minilm-static]
                                  [--sampled minilm,minilm-int8] [--json]

Two workloads, each encoded by every backend in one run (one process per backend, so its
peak RSS is its own; models are exported / distilled beforehand, first-use costs are
reported separately as ``build_s``):

- ``wtq``: the text the dense retriever encodes for each table of the WTQ corpus (its
  ``plain`` words, distinct content hashes: 2,104 texts), read from the built corpus;
- ``cells``: TableRAG's cell and schema databases of a synthetic 10^6-cell orders table
  (`benchmarks/rag_scale.orders_table`), cut to ``--pairs`` texts (B = 10,000 pairs).

sentence-transformers (``minilm-st``, today's path) encodes a seeded sample of
``--st-sample`` texts of each workload (the whole set takes tens of minutes on a shared
2-core machine); its time for the whole set is its sample time × (set / sample), and every
ratio compares that with the backend's time on the whole set (or, for a backend named in
``--sampled``, its time on the same sample, scaled the same way). Agreement: cosine between the
backend's and sentence-transformers' vectors on the sample (min, median). Wall and CPU
seconds are both given; the load average says how shared the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def wtq_texts(data: Path) -> list[str]:
    """The distinct ``plain`` texts of the WTQ corpus (built or reused from the cache)."""
    from tablequest.eval.corpora import build_corpus
    from tablequest.eval.datasets import load

    corpus = build_corpus(load("wtq", data), "csv")
    with corpus.store:
        rows = corpus.store.con.execute(
            "SELECT content_hash, any_value(plain) FROM tables GROUP BY 1 ORDER BY 1"
        ).fetchall()
    return [r[1] for r in rows]


def cell_texts(pairs: int) -> list[str]:
    """Cell-DB docs and schema keys of a 10^6-cell orders table, cut to `pairs` texts."""
    sys.path.insert(0, str(HERE))
    from rag_scale import orders_table

    from tablequest.methods.rag.cell_db import build_cell_db
    from tablequest.methods.rag.schema_db import build_schema_db, raw_frame

    raw = raw_frame(orders_table(1_000_000))
    schema, _ = build_schema_db(raw)
    db = build_cell_db(raw, columns=schema.categorical)
    return (db.docs + schema.keys)[:pairs]


def run_backend(name: str, texts: list[str], sample: list[int], *, sampled: bool) -> dict[str, Any]:
    """Encode (after a warm-up that builds the model) and time; runs in a child process.
    minilm-st and `sampled` backends encode the sample only (times scaled to the set)."""
    from tablequest.corpus.dense.encoders import make_encoder

    encoder = make_encoder(name)
    assert encoder is not None
    started = time.perf_counter()
    encoder.encode(["warm up"])
    build_s = time.perf_counter() - started
    on_sample = sampled or name == "minilm-st"
    chosen = [texts[i] for i in sample] if on_sample else texts
    wall, cpu = time.perf_counter(), time.process_time()
    vectors = encoder.encode(chosen)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    scale = len(texts) / len(chosen)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    on_sample_vectors = vectors if on_sample else vectors[sample]
    return {"name": encoder.name, "build_s": round(build_s, 1), "n": len(chosen),
            "wall_s": round(wall * scale, 2), "cpu_s": round(cpu * scale, 2),
            "texts_per_s": round(len(chosen) / wall, 1), "peak_rss_mb": round(peak_mb),
            "sample_vectors": on_sample_vectors.tolist()}  # fmt: skip


def child(args: argparse.Namespace) -> None:
    texts = json.loads(Path(args.texts).read_text())
    sample = json.loads(Path(args.sample).read_text())
    sampled = args.child in args.sampled.split(",")
    print(json.dumps(run_backend(args.child, texts, sample, sampled=sampled)))


def measure(
    workload: str, texts: list[str], backends: list[str], n_sample: int, sampled: str
) -> dict[str, Any]:
    """Every backend on `texts` in its own process; ratios and cosines against minilm-st."""
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"tq-bench-encoders-{os.getpid()}"
    tmp.mkdir(exist_ok=True)
    sample = sorted(random.Random(0).sample(range(len(texts)), min(n_sample, len(texts))))
    (tmp / "texts.json").write_text(json.dumps(texts))
    (tmp / "sample.json").write_text(json.dumps(sample))
    out: dict[str, Any] = {}
    for name in ["minilm-st", *backends]:
        cmd = [sys.executable, __file__, "--child", name, "--texts", str(tmp / "texts.json"),
               "--sample", str(tmp / "sample.json"), "--sampled", sampled]  # fmt: skip
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        out[name] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{workload}/{name}: {out[name]['wall_s']} s", file=sys.stderr)
    reference = np.asarray(out["minilm-st"].pop("sample_vectors"), dtype=np.float32)
    for name in backends:
        row = out[name]
        cos = (np.asarray(row.pop("sample_vectors"), dtype=np.float32) * reference).sum(1)
        row.update(cos_min=round(float(cos.min()), 4),
                   cos_median=round(float(statistics.median(cos.tolist())), 4),
                   speedup_wall=round(out["minilm-st"]["wall_s"] / row["wall_s"], 1),
                   speedup_cpu=round(out["minilm-st"]["cpu_s"] / row["cpu_s"], 1))  # fmt: skip
    return {"texts": len(texts), "st_sample": len(sample), "backends": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/wtq"))
    parser.add_argument("--st-sample", type=int, default=300)
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--backends", default="minilm,minilm-int8,minilm-static")
    parser.add_argument("--sampled", default="", help="backends timed on the sample only")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--texts", help=argparse.SUPPRESS)
    parser.add_argument("--sample", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    results = {"load_average_start": [round(x, 2) for x in os.getloadavg()]}
    for workload, texts in (("wtq", wtq_texts(args.data)), ("cells", cell_texts(args.pairs))):
        results[workload] = measure(workload, texts, backends, args.st_sample, args.sampled)
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(results))
        return
    print(f"load average (1, 5, 15 min): start {results['load_average_start']}, "
          f"end {results['load_average_end']}")  # fmt: skip
    for workload in ("wtq", "cells"):
        block = results[workload]
        print(f"\n{workload}: {block['texts']} texts (minilm-st on {block['st_sample']}, scaled)")
        print("| backend | name | wall s | cpu s | × wall | × cpu | cos min | cos median "
              "| peak RSS MB | build s |")  # fmt: skip
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for key, r in block["backends"].items():
            print(f"| {key} | {r['name']} | {r['wall_s']} | {r['cpu_s']} | "
                  f"{r.get('speedup_wall', 1.0)} | {r.get('speedup_cpu', 1.0)} | "
                  f"{r.get('cos_min', 1.0)} | {r.get('cos_median', 1.0)} | "
                  f"{r['peak_rss_mb']} | {r['build_s']} |")  # fmt: skip


if __name__ == "__main__":
    main()
