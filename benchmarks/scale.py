"""Scale: synthetic WTQ-like corpora, one store against 1–8 shards on local Ray.

    python benchmarks/scale.py --tables 100000 --shards 1 2 4 8 --work /tmp/tq-scale \\
        --out benchmarks/results/scale-100000.json

Corpus: tables sampled from the WTQ CSVs (read-only, --wtq) and perturbed — rows shuffled
and subsampled (50–100 %), a third of the numbers redrawn, a tenth of the words swapped
for words of other tables — one CSV file each, 1,000 to a folder (seeded: the same corpus
on every run). Every phase runs in its own process so its peak memory is its own:

- ``single``: `ingest` into one store (2 reader processes), the grep index built after, then
  20-pattern queries (median, p90) and the top-10 of 1,000 queries saved for the equality
  check (also BM25 with --bm25);
- ``sharded N``: `ingest_ray` (one Ray task per shard, which builds its shard's grep index),
  one actor per shard loading its index, the same queries through the actors (median,
  p90), peak memory of every ingest task and actor, and the top-10 lists of the first
  --queries queries (the same seeded sequence) compared with the single store's (BM25 too
  with --bm25). Phases append to --out, so runs with different shard counts add up.

A query is 20 patterns drawn from one corpus table, as TableSeek's LLM writes them: 16
whole words (``\\bword\\b``) and 4 bare literals of 4–6 characters.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

WORD = re.compile(r"[A-Za-z]{3,}")
NUMBER = re.compile(r"^\d+$")


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def wtq_tables(root: Path) -> list[list[list[str]]]:
    tables = []
    for path in sorted(root.glob("csv/*/*.csv")):
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
        if len(rows) >= 2:
            tables.append(rows)
    return tables


def perturb(rows: list[list[str]], rng: random.Random, vocab: list[str]) -> list[list[str]]:
    header, body = rows[0], rows[1:]
    keep = rng.sample(body, max(1, int(len(body) * rng.uniform(0.5, 1.0))))
    out = [header]
    for row in keep:
        cells = []
        for cell in row:
            if NUMBER.match(cell) and rng.random() < 0.33:
                cell = str(rng.randint(0, 10 ** max(1, len(cell))))
            elif rng.random() < 0.1:
                cell = WORD.sub(lambda m: rng.choice(vocab), cell, count=1)
            cells.append(cell)
        out.append(cells)
    return out


def generate(n: int, work: Path, wtq: Path) -> Path:
    folder = work / f"gen-{n}"
    done = folder / ".complete"
    if done.exists():
        return folder
    rng = random.Random(n)
    tables = wtq_tables(wtq)
    vocab = sorted({w for t in tables[:300] for r in t for c in r for w in WORD.findall(c)})
    for i in range(n):
        sub = folder / f"{i // 1000:04d}"
        if i % 1000 == 0:
            sub.mkdir(parents=True, exist_ok=True)
        buf = io.StringIO()
        csv.writer(buf).writerows(perturb(rng.choice(tables), rng, vocab))
        (sub / f"t{i:07d}.csv").write_text(buf.getvalue(), encoding="utf-8")
    done.write_text("ok\n")
    return folder


def queries(folder: Path, count: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    subs = sorted(p for p in folder.iterdir() if p.is_dir())
    out = []
    while len(out) < count:
        files = sorted(rng.choice(subs).iterdir())
        words = sorted(set(WORD.findall(rng.choice(files).read_text(encoding="utf-8"))))
        if len(words) < 20:
            continue
        chosen = rng.sample(words, 20)
        out.append([rf"\b{w}\b" for w in chosen[:16]] + [w[:6] for w in chosen[16:]])
    return out


def latency(fn: Any, qs: list[list[str]]) -> dict[str, float]:
    times = []
    for q in qs:
        start = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 2),
        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 2),
        "n": len(times),
    }


def phase_single(args: argparse.Namespace) -> dict[str, Any]:
    from tablequest.corpus import Store, ingest
    from tablequest.corpus.lexical.rank import bm25_rank, grep_index, grep_rank

    folder, work = Path(args.folder), Path(args.work)
    path = work / f"single-{args.tables}.duckdb"
    path.unlink(missing_ok=True)
    Path(f"{path}.wal").unlink(missing_ok=True)
    result: dict[str, Any] = {"phase": "single", "tables": args.tables}
    with Store(path) as store:
        start = time.perf_counter()
        report = ingest(store, [folder], workers=2, index=False)
        result["ingest_s"] = round(time.perf_counter() - start, 1)
        result["stored"] = report.tables_stored
        start = time.perf_counter()
        grep_index(store)
        result["index_s"] = round(time.perf_counter() - start, 1)
        result["peak_rss_mb"] = _peak_mb()
        qs = queries(folder, args.queries, seed=1)
        result["grep"] = latency(lambda q: grep_rank(store, q, 10, rows=False), qs[:50])
        top = {"grep": [[(h.table_id, h.score) for h in grep_rank(store, q, 10, rows=False)]
                        for q in qs]}  # fmt: skip
        if args.bm25:
            texts = [" ".join(w.replace("\\b", "") for w in q[:8]) for q in qs]
            start = time.perf_counter()
            bm25_rank(store, texts[0], 10, rows=False)
            result["bm25_build_s"] = round(time.perf_counter() - start, 1)
            result["bm25"] = latency(lambda t: bm25_rank(store, t, 10, rows=False), texts[:50])
            top["bm25"] = [[(h.table_id, h.score) for h in bm25_rank(store, t, 10, rows=False)]
                           for t in texts]  # fmt: skip
        result["peak_rss_mb"] = _peak_mb()
    (work / f"single-{args.tables}.top.json").write_text(json.dumps(top))
    return result


def phase_reopen(args: argparse.Namespace) -> dict[str, Any]:
    """The single store's queries again, on the store reopened read-only (as shard actors
    open their shards: the fingerprint is computed once, not before every query)."""
    from tablequest.corpus import Store
    from tablequest.corpus.lexical.rank import bm25_rank, grep_index, grep_rank

    folder, work = Path(args.folder), Path(args.work)
    result: dict[str, Any] = {"phase": "single-read-only", "tables": args.tables}
    with Store(work / f"single-{args.tables}.duckdb", read_only=True) as store:
        start = time.perf_counter()
        grep_index(store)
        result["load_s"] = round(time.perf_counter() - start, 1)
        qs = queries(folder, args.queries, seed=1)
        result["grep"] = latency(lambda q: grep_rank(store, q, 10, rows=False), qs[:50])
        if args.bm25:
            texts = [" ".join(w.replace("\\b", "") for w in q[:8]) for q in qs]
            bm25_rank(store, texts[0], 10, rows=False)
            result["bm25"] = latency(lambda t: bm25_rank(store, t, 10, rows=False), texts[:50])
        result["peak_rss_mb"] = _peak_mb()
    return result


def phase_sharded(args: argparse.Namespace) -> dict[str, Any]:
    import ray

    from tablequest.corpus.retrieval.shardrank import sharded_bm25, sharded_grep
    from tablequest.corpus.storage.shards import ShardedStore
    from tablequest.scale.actors import attach
    from tablequest.scale.ingest import ingest_ray

    folder, work, n = Path(args.folder), Path(args.work), args.shards
    manifest = work / f"sharded-{args.tables}-{n}.json"
    for old in work.glob(f"sharded-{args.tables}-{n}*"):
        if old.is_file():
            old.unlink()
        else:
            for f in old.iterdir():
                f.unlink()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    result: dict[str, Any] = {"phase": "sharded", "tables": args.tables, "shards": n}
    timings: list[dict[str, Any]] = []
    start = time.perf_counter()
    report = ingest_ray(manifest, [folder], shards=n, address="local", timings=timings)
    result["ingest_s"] = round(time.perf_counter() - start, 1)
    result["stored"] = report.tables_stored
    result["ingest_tasks"] = timings
    with ShardedStore(manifest, read_only=True) as store:
        backend = attach(store, "local")
        start = time.perf_counter()
        backend.call("warm", [(["grep"],)] * n)
        result["load_s"] = round(time.perf_counter() - start, 1)
        qs = queries(folder, args.queries, seed=1)
        result["grep"] = latency(lambda q: sharded_grep(store, q, 10), qs[:50])
        top = work / f"single-{args.tables}.top.json"
        # No single store at sizes where one does not fit this machine: nothing to compare.
        single = json.loads(top.read_text()) if top.exists() else {}
        got = [[[h.table_id, h.score] for h in sharded_grep(store, q, 10)] for q in qs]
        if "grep" in single:
            result["grep_equal"] = sum(a == b for a, b in zip(got, single["grep"], strict=False))
        if args.bm25 and "bm25" in single:
            texts = [" ".join(w.replace("\\b", "") for w in q[:8]) for q in qs]
            start = time.perf_counter()
            sharded_bm25(store, texts[0], 10)
            result["bm25_build_s"] = round(time.perf_counter() - start, 1)
            result["bm25"] = latency(lambda t: sharded_bm25(store, t, 10), texts[:50])
            got = [[[h.table_id, h.score] for h in sharded_bm25(store, t, 10)] for t in texts]
            result["bm25_equal"] = sum(a == b for a, b in zip(got, single["bm25"], strict=False))
        result["queries"] = len(qs)
        result["actor_peak_rss_mb"] = backend.peak_rss_mb()
    ray.shutdown()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100_000)
    parser.add_argument("--shards", type=int, nargs="*", default=[1, 2, 4, 8])
    parser.add_argument("--work", default="/tmp/tq-scale")
    parser.add_argument("--wtq", default="/work/shared/data/wtq")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--bm25", action="store_true", help="also BM25 (slow to build)")
    parser.add_argument("--skip-single", action="store_true")
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--reopen",
        action="store_true",
        help="also query the single store reopened read-only (after --skip-single: the stored one)",
    )
    parser.add_argument("--phase", choices=["single", "reopen", "sharded"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        fn = {"single": phase_single, "reopen": phase_reopen}.get(args.phase, phase_sharded)
        if args.phase == "sharded":
            args.shards = args.shards[0]
        print(json.dumps(fn(args)))
        return
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    folder = generate(args.tables, work, Path(args.wtq))
    out_path = Path(args.out) if args.out else None
    earlier = json.loads(out_path.read_text()) if out_path and out_path.exists() else []
    results: list[dict[str, Any]] = [
        *earlier,
        {"phase": "generate", "tables": args.tables, "s": round(time.perf_counter() - start, 1),
         "load": os.getloadavg()}
    ]  # fmt: skip
    phases = [] if args.skip_single else [["--phase", "single"]]
    phases += [["--phase", "reopen"]] if args.reopen else []
    phases += [["--phase", "sharded", "--shards", str(n)] for n in args.shards]
    for extra in phases:
        cmd = [sys.executable, __file__, "--tables", str(args.tables), "--work", str(work),
               "--folder", str(folder), "--queries", str(args.queries), "--cpus",
               str(args.cpus), *(["--bm25"] if args.bm25 else []), *extra]  # fmt: skip
        load = os.getloadavg()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode or not lines:
            out: dict[str, Any] = {"phase": extra, "error": proc.stderr[-2000:]}
        else:
            out = json.loads(lines[-1])
        out["load_before"] = [round(x, 1) for x in load]
        results.append(out)
        print(json.dumps(out), flush=True)
        if out_path:
            out_path.parent.mkdir(parents=True, exist_ok=True)
            out_path.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
