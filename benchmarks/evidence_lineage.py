"""Evidence from cell lineage (issue 36 Must 6): precision/recall on WTQ programs, overhead.

    python benchmarks/evidence_lineage.py [--data ../shared/data/wtq] [--tables 8] [--seed 0]
        [--rows 100000] [--repeat 7] [--skip-precision] [--skip-overhead] [--json PATH]

1. Precision and recall. Tables are drawn (seeded) from the WTQ csv tables, read with
   `read_tables`: 8-300 rows, a unique text key column K, a numeric column C (no empty cell,
   >= 3 values, not a year/rank/number column) with a row whose value also stands in another
   body cell, and a text group column G. Programs come from templates per table (kinds below);
   each program's expected cells are computed here with plain pandas on the same frame (never
   the lineage code). Every table runs in ONE real sandbox session ``{"df": frame, "df2":
   frame[[K, C]]}`` (df2 is the second side of the merges, bound to the same table's cells);
   the lineage becomes cells through `evidence_of(answer, [items], bindings)`. Only cells with
   how ``computed`` count as found; precision and recall are over cells (micro), per kind.
   Control: `locate_evidence` over the whole table (the old way: every body cell whose text
   equals the answer) — its extra cells and precision against the same expected cells.
2. Lineage overhead on a synthetic table (`--rows` x 6 columns, text keys and numbers), per
   typical program, median of `--repeat` runs after one warm-up: in-process `_repl.run_cell`
   with pandas never wrapped ("none", measured first), wrapped but no ``__tq__`` shim ("off":
   the frame bound, wrappers inert) and with the shim ("on"); and the round trip of the same
   cell through a real sandbox session with lineage on (as shipped) and off (the session's
   first cell deletes ``__tq__``; wrappers stay installed but inert). Lineage share =
   (sandbox on - sandbox off) / sandbox on; goal <= 10 %.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tablequest.methods.evidence import evidence_of
from tablequest.methods.lineage import Binding, traced_items
from tablequest.methods.locate import locate_evidence
from tablequest.sandbox import Sandbox
from tablequest.table import Table, read_tables

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "wtq"
KINDS = ("lookup", "aggregate", "count", "argmax", "groupby", "list", "merge", "other")
SKIP_NUMERIC = re.compile(r"year|season|rank|pos|^no\b|^n[o°º]\.?$|#|number|^pick|date", re.I)
Cell = tuple[int, int]


# ---- tables ---------------------------------------------------------------------------------


@dataclass
class Picked:
    """One WTQ table and the columns its programs use."""

    tid: str
    table: Table
    frame: pd.DataFrame
    key: str
    value: str
    group: str
    dup_row: int
    cols: dict[str, int] = field(default_factory=dict)


def text_columns(frame: pd.DataFrame) -> list[str]:
    out = []
    for c in frame.columns:
        s = frame[c]
        if s.dtype == object and (s.astype(str).str.strip() != "").all():
            out.append(c)
    return out


def numeric_columns(frame: pd.DataFrame) -> list[str]:
    return [
        c
        for c in frame.columns
        if frame[c].dtype.kind in "if"
        and frame[c].notna().all()
        and frame[c].nunique() >= 3
        and not SKIP_NUMERIC.search(str(c))
    ]


def fmt(value: Any) -> str:
    """A value as an answer states it (integral floats without '.0')."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def duplicated_row(table: Table, tid: str, frame: pd.DataFrame, col: str) -> int | None:
    """The first row whose `col` value also stands in another body cell."""
    for row in frame.index:
        if len(locate_evidence(table, tid, fmt(frame.at[row, col]), limit=3)) > 1:
            return int(row)
    return None


def pick(path: Path, root: Path) -> Picked | None:
    try:
        table = read_tables(path)[0]
    except Exception:
        return None
    frame = table.to_dataframe()
    if not 8 <= len(frame) <= 300:
        return None
    texts = text_columns(frame)
    keys = [c for c in texts if frame[c].is_unique]
    groups = [c for c in texts if 2 <= frame[c].nunique() <= len(frame) // 2]
    if not keys or not groups:
        return None
    tid = str(path.relative_to(root))
    for col in numeric_columns(frame):
        row = duplicated_row(table, tid, frame, col)
        if row is not None:
            cols = Binding.of("df", tid, table).columns
            return Picked(tid, table, frame, keys[0], col, groups[0], row, dict(cols))
    return None


def pick_tables(root: Path, n: int, seed: int) -> list[Picked]:
    paths = sorted((root / "csv").glob("*/*.csv"))
    random.Random(seed).shuffle(paths)
    out: list[Picked] = []
    for path in paths:
        found = pick(path, root)
        if found is not None:
            out.append(found)
        if len(out) >= n:
            break
    return out


# ---- programs and their expected cells -------------------------------------------------------


@dataclass
class Program:
    kind: str
    code: str
    answer: str
    expected: set[Cell]


def cells(p: Picked, rows: Any, *cols: str) -> set[Cell]:
    return {(int(r), p.cols[c]) for r in rows for c in cols}


def lookup(p: Picked, i: int) -> list[Program]:
    k, c, r = p.key, p.value, p.dup_row
    v = p.frame.at[r, k]
    forms = (f"df.loc[df[{k!r}] == {v!r}, {c!r}].iloc[0]", f"df[df[{k!r}] == {v!r}][{c!r}].item()")
    return [Program("lookup", forms[i % 2], fmt(p.frame.at[r, c]), cells(p, [r], c))]


def aggregates(p: Picked, i: int) -> list[Program]:
    s = p.frame[p.value]
    c = repr(p.value)
    out = []
    for op in (("sum", "mean", "max", "min")[(2 * i + j) % 4] for j in (0, 1)):
        if op in ("sum", "mean"):
            value = s.sum() if op == "sum" else round(s.mean(), 2)
            rows = s.index[s.notna()]
            code = f"df[{c}].sum()" if op == "sum" else f"round(df[{c}].mean(), 2)"
        else:
            value = s.max() if op == "max" else s.min()
            rows, code = s.index[s == value], f"df[{c}].{op}()"
        out.append(Program("aggregate", code, fmt(value), cells(p, rows, p.value)))
    return out


def threshold(s: pd.Series, q: float) -> Any:
    """The `q` quantile, lowered below the maximum when no value would pass ``> x``."""
    x = min(s.quantile(q), sorted(s.unique())[-2])
    return int(x) if s.dtype.kind == "i" else float(x)


def count(p: Picked, i: int) -> list[Program]:
    s, c = p.frame[p.value], repr(p.value)
    x = threshold(s, 0.5)
    forms = (f"(df[{c}] > {x!r}).sum()", f"len(df[df[{c}] > {x!r}])",
             f"df[df[{c}] > {x!r}].shape[0]")  # fmt: skip
    rows = s.index[s > x]
    return [Program("count", forms[i % 3], str(len(rows)), cells(p, rows, p.value))]


def argmax(p: Picked, i: int) -> list[Program]:
    s, op = p.frame[p.value], ("idxmax", "idxmin")[i % 2]
    r = s.idxmax() if op == "idxmax" else s.idxmin()
    code = f"df.loc[df[{p.value!r}].{op}(), {p.key!r}]"
    return [Program("argmax", code, fmt(p.frame.at[r, p.key]), cells(p, [r], p.key, p.value))]


def groupby(p: Picked, i: int) -> list[Program]:
    g, c, f = p.group, p.value, p.frame
    sizes = f[g].value_counts()
    label = sizes.index[0]
    rows = f.index[f[g] == label]
    one = Program("groupby", f"df.groupby({g!r})[{c!r}].sum()[{label!r}]",
                  fmt(f.loc[rows, c].sum()), cells(p, rows, c))  # fmt: skip
    sums = {k: f.loc[f[g] == k, c].sum() for k in sizes.index}
    best = max(sums, key=lambda k: sums[k])  # ties: dict order differs from pandas' (sorted)
    best = sorted(k for k in sums if sums[k] == sums[best])[0]
    rows = f.index[f[g] == best]
    two = Program("groupby", f"df.groupby({g!r})[{c!r}].sum().idxmax()", fmt(best),
                  cells(p, rows, g, c))  # fmt: skip
    return [one, two]


def listing(p: Picked, i: int) -> list[Program]:
    s, c = p.frame[p.value], repr(p.value)
    x = threshold(s, 0.75)
    rows = s.index[s > x]
    code = f"df[df[{c}] > {x!r}][{p.key!r}].tolist()"
    answer = ", ".join(fmt(v) for v in p.frame.loc[rows, p.key])
    return [Program("list", code, answer, cells(p, rows, p.key))]


def merges(p: Picked, i: int) -> list[Program]:
    k, c, g, r = p.key, p.value, p.group, p.dup_row
    v = p.frame.at[r, k]
    look = f"m = df[[{k!r}, {g!r}]].merge(df2, on={k!r})\nm.loc[m[{k!r}] == {v!r}, {c!r}].iloc[0]"
    total = f"df[[{k!r}]].merge(df2, on={k!r})[{c!r}].sum()"
    s = p.frame[c]
    return [
        Program("merge", look, fmt(p.frame.at[r, c]), cells(p, [r], c)),
        Program("merge", total, fmt(s.sum()), cells(p, s.index, c)),
    ]


def others(p: Picked, i: int) -> list[Program]:
    """Common idioms outside the named kinds: set_index, sort_values, nlargest."""
    k, c, r = p.key, p.value, p.dup_row
    s = p.frame[c]
    if i % 3 == 0:
        code = f"df.set_index({k!r}).loc[{p.frame.at[r, k]!r}, {c!r}]"
        return [Program("other", code, fmt(s[r]), cells(p, [r], c))]
    if i % 3 == 1:
        top = s.sort_values(ascending=False, kind="stable").index[0]
        code = f"df.sort_values({c!r}, ascending=False, kind='stable').iloc[0][{k!r}]"
        return [Program("other", code, fmt(p.frame.at[top, k]), cells(p, [top], k, c))]
    rows = s.nlargest(3).index
    code = f"df.nlargest(3, {c!r})[{k!r}].tolist()"
    answer = ", ".join(fmt(v) for v in p.frame.loc[rows, k])
    return [Program("other", code, answer, cells(p, rows, k))]


TEMPLATES = (lookup, aggregates, count, argmax, groupby, listing, merges, others)


def programs_of(p: Picked, i: int) -> list[Program]:
    return [prog for make in TEMPLATES for prog in make(p, i)]


# ---- running and scoring ---------------------------------------------------------------------


@dataclass
class Outcome:
    table: str
    kind: str
    code: str
    answer: str
    expected: set[Cell]
    found: set[Cell]
    untracked: int
    verified: str
    why: str
    value: str | None
    control: set[Cell]


def bindings_of(p: Picked) -> dict[str, Binding]:
    df2 = {p.key: p.cols[p.key], p.value: p.cols[p.value]}
    return {"df": Binding.of("df", p.tid, p.table), "df2": Binding("df2", p.tid, p.table, df2)}


def score_one(p: Picked, prog: Program, result: Any, bindings: dict[str, Binding]) -> Outcome:
    items = traced_items(result.lineage) if result.ok else []
    got = evidence_of(prog.answer, [items], bindings) if items else None
    refs, verdict = got if got is not None else ([], None)
    found = {(c.row, c.col) for c in refs if c.how == "computed"}
    untracked = sum(1 for c in refs if c.how == "untracked")
    control = {(c.row, c.col) for c in locate_evidence(p.table, p.tid, prog.answer, limit=10**6)}
    why = verdict.why if verdict is not None else (result.error or "no traced value states it")
    return Outcome(p.tid, prog.kind, prog.code, prog.answer, prog.expected, found, untracked,
                   verdict.verified if verdict else "unverified", why, result.value,
                   control)  # fmt: skip


def run_table(sandbox: Sandbox, p: Picked, progs: list[Program]) -> list[Outcome]:
    bindings = bindings_of(p)
    frames = {"df": p.frame, "df2": p.frame[[p.key, p.value]].copy()}
    with sandbox.session(frames) as session:
        return [score_one(p, prog, session.run(prog.code, timeout=20), bindings) for prog in progs]


def ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def summarize(outs: list[Outcome]) -> dict[str, Any]:
    tp = sum(len(o.found & o.expected) for o in outs)
    found = sum(len(o.found) for o in outs)
    expected = sum(len(o.expected) for o in outs)
    ctp = sum(len(o.control & o.expected) for o in outs)
    cfound = sum(len(o.control) for o in outs)
    return {
        "programs": len(outs),
        "expected_cells": expected,
        "found_cells": found,
        "precision": ratio(tp, found),
        "recall": ratio(tp, expected),
        "exact": ratio(sum(o.found == o.expected for o in outs), len(outs)),
        "verified": ratio(sum(o.verified == "verified" for o in outs), len(outs)),
        "untracked_programs": sum(o.untracked > 0 for o in outs),
        "search_found": cfound,
        "search_extra": cfound - ctp,
        "search_precision": ratio(ctp, cfound),
        "search_recall": ratio(ctp, expected),
    }


def by_kind(outs: list[Outcome]) -> dict[str, dict[str, Any]]:
    table = {k: summarize([o for o in outs if o.kind == k]) for k in KINDS}
    table = {k: v for k, v in table.items() if v["programs"]}
    table["all"] = summarize(outs)
    return table


def fmt_ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def print_precision(summary: dict[str, dict[str, Any]]) -> None:
    print("| kind | programs | expected cells | found | precision | recall | exact | verified | "
          "search: found | extra | precision |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, s in summary.items():
        print(f"| {kind} | {s['programs']} | {s['expected_cells']} | {s['found_cells']} | "
              f"{fmt_ratio(s['precision'])} | {fmt_ratio(s['recall'])} | "
              f"{fmt_ratio(s['exact'])} | {fmt_ratio(s['verified'])} | {s['search_found']} | "
              f"{s['search_extra']} | {fmt_ratio(s['search_precision'])} |")  # fmt: skip


def describe(o: Outcome, p: Picked) -> dict[str, Any]:
    names = {v: k for k, v in p.cols.items()}

    def show(cs: set[Cell]) -> list[str]:
        return [f"({r}, {names.get(c, c)})" for r, c in sorted(cs)][:8]

    return {"table": o.table, "kind": o.kind, "code": o.code, "answer": o.answer[:80],
            "value": (o.value or "")[:80], "verified": o.verified, "why": o.why[:160],
            "missing": show(o.expected - o.found), "extra": show(o.found - o.expected),
            "untracked": o.untracked}  # fmt: skip


def precision_part(args: argparse.Namespace) -> dict[str, Any]:
    picked = pick_tables(args.data, args.tables, args.seed)
    outs: list[Outcome] = []
    shown: list[dict[str, Any]] = []
    with Sandbox() as sandbox:
        for i, p in enumerate(picked):
            got = run_table(sandbox, p, programs_of(p, i))
            outs += got
            shown += [describe(o, p) for o in got]
    misses = [m for m in shown if m["missing"] or m["extra"] or m["verified"] != "verified"]
    summary = by_kind(outs)
    used = ", ".join(f"{p.tid} (K={p.key!r}, C={p.value!r}, G={p.group!r})" for p in picked)
    print(f"\n{len(outs)} programs over {len(picked)} WTQ tables: {used}")
    print_precision(summary)
    print(f"\nprograms not exact or not verified: {len(misses)}")
    for m in misses:
        print(f"  [{m['kind']}] {m['table']}: {m['code']!r} → {m['value']} ({m['verified']}: "
              f"{m['why']}); missing {m['missing']} extra {m['extra']}")  # fmt: skip
    return {"tables": [p.tid for p in picked], "by_kind": summary, "programs": shown,
            "verdicts": dict(Counter(o.verified for o in outs))}  # fmt: skip


# ---- overhead ---------------------------------------------------------------------------------


def synthetic(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    regions = np.array(["north", "south", "east", "west", "centre", "coast", "hills", "islands"])
    frame = pd.DataFrame({
        "name": [f"item-{i:06d}" for i in range(rows)],
        "region": regions[rng.integers(0, len(regions), rows)],
        "category": [f"cat-{i % 50:02d}" for i in range(rows)],
        "units": rng.integers(1, 500, rows),
        "price": rng.gamma(2.0, 25.0, rows).round(2),
        "cost": rng.gamma(2.0, 20.0, rows).round(2),
    })  # fmt: skip
    frame.index = pd.Index(range(rows), name="row_id")
    return frame


def overhead_programs(rows: int) -> dict[str, str]:
    key = f"item-{rows // 2 + 321:06d}"
    return {
        "lookup": f'df.loc[df["name"] == "{key}", "price"].iloc[0]',
        "column mean": 'df["price"].mean()',
        "groupby sum": 'df.groupby("region")["units"].sum()["west"]',
        "count with predicate": '(df["price"] > 50).sum()',
        "row sum": f'df.loc[df["name"] == "{key}", ["units", "price", "cost"]].sum(axis=1).iloc[0]',
        "list (price > 150)": 'df[df["price"] > 150]["name"].tolist()',
    }


def time_cell(code: str, namespace: dict[str, Any], repeat: int) -> tuple[float, str | None]:
    from tablequest.sandbox import _repl

    samples, value = [], None
    for n in range(repeat + 1):
        started = time.perf_counter()
        reply = _repl.run_cell(code, namespace, max_output=100_000, max_value=10_000)
        if n:
            samples.append(time.perf_counter() - started)
        value = reply["value"] if reply["ok"] else reply["error"]
    return statistics.median(samples), value


def inprocess(frame: pd.DataFrame, codes: dict[str, str], repeat: int, mode: str
              ) -> dict[str, float]:  # fmt: skip
    """Medians of `run_cell` in this process: "none" (pandas unwrapped: call first), "off" or
    "on" (wrappers installed, frame bound; the shim only for "on")."""
    import pandas as pd_

    from tablequest.sandbox import _lineage_setup

    df = frame.copy()
    namespace: dict[str, Any] = {"__name__": "__main__", "df": df, "pd": pd_, "np": np}
    if mode != "none":
        _lineage_setup.install()
        _lineage_setup.bind({"df": df})
    if mode == "on":
        namespace["__tq__"] = _lineage_setup.Builtins
    return {name: time_cell(code, namespace, repeat)[0] for name, code in codes.items()}


def sandbox_times(sandbox: Sandbox, frame: pd.DataFrame, codes: dict[str, str], repeat: int,
                  lineage: bool) -> dict[str, dict[str, float]]:  # fmt: skip
    """Medians of a session's round trip (host clock) and of `ExecResult.seconds`."""
    out: dict[str, dict[str, float]] = {}
    with sandbox.session({"df": frame}) as session:
        if not lineage:
            assert session.run("del __tq__").ok
        for name, code in codes.items():
            walls, seconds = [], []
            for n in range(repeat + 1):
                started = time.perf_counter()
                result = session.run(code, timeout=60)
                if n:
                    walls.append(time.perf_counter() - started)
                    seconds.append(result.seconds)
                assert result.ok, result.error
                assert (result.lineage is not None) == lineage, name
            out[name] = {"wall": statistics.median(walls), "seconds": statistics.median(seconds)}
    return out


def overhead_part(args: argparse.Namespace) -> dict[str, Any]:
    frame = synthetic(args.rows)
    codes = overhead_programs(args.rows)
    none = inprocess(frame, codes, args.repeat, "none")  # before anything wraps pandas
    with Sandbox() as sandbox:
        box_on = sandbox_times(sandbox, frame, codes, args.repeat, True)
        box_off = sandbox_times(sandbox, frame, codes, args.repeat, False)
    off = inprocess(frame, codes, args.repeat, "off")
    on = inprocess(frame, codes, args.repeat, "on")
    rows = []
    for name in codes:
        b_on, b_off = box_on[name]["wall"], box_off[name]["wall"]
        rows.append({"program": name, "none_ms": none[name] * 1e3, "off_ms": off[name] * 1e3,
                     "on_ms": on[name] * 1e3, "sandbox_off_ms": b_off * 1e3,
                     "sandbox_on_ms": b_on * 1e3, "share": (b_on - b_off) / b_on,
                     "added_ms": (b_on - b_off) * 1e3})  # fmt: skip
    print_overhead(rows, args.rows)
    return {"rows": args.rows, "repeat": args.repeat, "programs": codes, "table": rows}


def print_overhead(rows: list[dict[str, Any]], n: int) -> None:
    print(f"\nlineage overhead, {n:,} rows x 6 columns (medians, ms)")
    print("| program | in-process none | off | on | sandbox off | sandbox on | lineage share "
          "| added ms |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['program']} | {r['none_ms']:.2f} | {r['off_ms']:.2f} | {r['on_ms']:.2f} | "
              f"{r['sandbox_off_ms']:.2f} | {r['sandbox_on_ms']:.2f} | {r['share']:.1%} | "
              f"{r['added_ms']:.1f} |")  # fmt: skip


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--data", type=Path, default=DEFAULT, help="the WTQ folder")
    parser.add_argument("--tables", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--skip-precision", action="store_true")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if not args.skip_precision:
        out["precision"] = precision_part(args)
    if not args.skip_overhead:
        out["overhead"] = overhead_part(args)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
