"""Grep ranking (TableSeek Eq. 1) latency: indexed store vs a naive scan vs ripgrep.

    python benchmarks/grep_rank.py ../shared/data/wtq [--queries 200] [--synthetic 100000] [--json]

Builds a store of every WikiTableQuestions table in its three formats, then for queries made
from real training questions (the question's content words, padded with header and cell
words of its gold table, as an LLM's patterns would be) measures per query, with 5, 10 and
20 patterns: the median ms of `Store.rank`, of the naive regex scan, and of ripgrep computing
the same Eq. 1 (`rg --count-matches -i` once per pattern over the serialized tables on disk).
All three are checked to agree. A synthetic corpus (tables sampled and perturbed from WTQ) of
increasing size shows how cost grows with corpus size.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tablequest.corpus import Store, ingest, question_patterns
from tablequest.corpus.lexical.grep import GrepIndex, naive_scores
from tablequest.corpus.lexical.rank import grep_index
from tablequest.table.patterns import compile_pattern


def make_queries(
    root: Path, store: Store, n: int, n_patterns: int, seed: int = 0, *, raw: bool = False
) -> list[list[str]]:
    """Patterns per query: the question's words as `\\bword\\b`, padded with cell words of
    its gold table as literals (`re.escape`), or with `raw` as the cell text itself, so that
    "U.S." or "16+1" act as regex operators (a careless LLM's patterns)."""
    rng = random.Random(seed)
    rows = list(
        csv.reader(
            (root / "data" / "training.tsv").open(encoding="utf-8"),
            delimiter="\t",
            quoting=csv.QUOTE_NONE,
        )
    )[1:]
    rng.shuffle(rows)
    queries = []
    for row in rows[:n]:
        words = question_patterns(row[1])
        ids = store.ids_for_path(str((root / row[2]).resolve()))
        if ids:
            table = store.get(ids[0])
            pool = [w for r in table.cells[:6] for c in r for w in c.split() if len(w) > 2]
            rng.shuffle(pool)
            for w in pool:
                if len(words) >= n_patterns:
                    break
                words.append(w.replace("(", r"\(").replace(")", r"\)") if raw else re.escape(w))
        queries.append(words[:n_patterns])
    return queries


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - t) * 1000


def rg_scores(folder: Path, ids: list[str], patterns: list[str]) -> list[float]:
    counts = dict.fromkeys(ids, 0)
    for p in dict.fromkeys(patterns):
        effective = compile_pattern(p).pattern  # invalid regexes are literals for us too
        proc = subprocess.run(
            ["rg", "--count-matches", "-i", "-e", effective, str(folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        for line in proc.stdout.splitlines():
            name = Path(line.rsplit(":", 1)[0]).stem
            counts[name] += 1
    n = len(dict.fromkeys(patterns))
    return [counts[i] / n for i in ids]


def bench_corpus(root: Path, queries_n: int, use_rg: bool) -> dict[str, object]:
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "wtq.duckdb")
        ingest(store, [root / "csv"])
        t0 = time.perf_counter()
        index = grep_index(store)
        out["tables"] = len(index)
        out["index_build_s"] = round(time.perf_counter() - t0, 2)
        folder = Path(tmp) / "texts"
        folder.mkdir()
        for tid, text in zip(index.ids, index.texts, strict=True):
            (folder / f"{tid}.txt").write_text(text, encoding="utf-8")
        for n_patterns, raw in ((5, False), (10, False), (20, False), (20, True)):
            queries = make_queries(root, store, queries_n, n_patterns, raw=raw)
            fresh = GrepIndex.from_blob(index.ids, index.texts, index.arrays_blob())
            ours, naive, rg = [], [], []
            for q in queries:
                scores, ms = timed(fresh.scores, q)
                ours.append(ms)
                ref, ms_naive = timed(naive_scores, index.texts, q)
                naive.append(ms_naive)
                assert [round(x, 9) for x in scores] == [round(x, 9) for x in ref], q
            disagree = 0
            for q in queries[: min(30, len(queries))] if use_rg else []:
                ref = naive_scores(index.texts, q)
                got, ms = timed(rg_scores, folder, index.ids, q)
                rg.append(ms)
                # Rust and Python regex dialects differ at the edges (e.g. \b and Unicode)
                disagree += sum(1 for a, b in zip(got, ref, strict=True) if abs(a - b) > 1e-9)
            row = {
                "ours_ms": round(statistics.median(ours), 3),
                "naive_ms": round(statistics.median(naive), 2),
            }
            if rg:
                row["rg_tables_scored_differently"] = disagree
                row["rg_ms"] = round(statistics.median(rg), 2)
                row["speedup_vs_rg"] = round(row["rg_ms"] / row["ours_ms"], 1)
            row["speedup_vs_naive"] = round(row["naive_ms"] / row["ours_ms"], 1)
            out[f"{n_patterns}_patterns" + ("_raw" if raw else "")] = row
        store.close()
    return out


def bench_synthetic(root: Path, sizes: list[int], queries_n: int) -> dict[str, object]:
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "wtq.duckdb")
        ingest(store, [root / "csv"])
        base = grep_index(store)
        queries = make_queries(root, store, queries_n, 20)
        store.close()
    out: dict[str, object] = {}
    for size in sizes:
        texts, ids = [], []
        for i in range(size):
            text = base.texts[rng.randrange(len(base.texts))]
            texts.append(text.replace("1", str(rng.randrange(10))))  # perturb the values
            ids.append(f"s{i:07d}")
        t0 = time.perf_counter()
        index = GrepIndex.build(ids, texts)
        build = time.perf_counter() - t0
        ms = [timed(index.scores, q)[1] for q in queries]
        out[str(size)] = {
            "build_s": round(build, 1),
            "median_ms": round(statistics.median(ms), 2),
            "p90_ms": round(sorted(ms)[int(0.9 * len(ms))], 2),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wtq", type=Path, help="the WikiTableQuestions folder (has csv/ and data/)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--synthetic", type=int, nargs="*", default=[10_000, 30_000, 100_000])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    use_rg = shutil.which("rg") is not None
    result = {
        "wtq": bench_corpus(args.wtq, args.queries, use_rg),
        "synthetic_20_patterns": bench_synthetic(args.wtq, args.synthetic, 50),
    }
    print(json.dumps(result, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
