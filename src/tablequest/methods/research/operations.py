"""The operation bank O, the operation map and candidate path enumeration (DTR §3.2, Alg. 1).

**Bank.** The paper lists O = {CLEAN, FILTER, GROUP, AGG, JOIN, SORT, …}; ours completes it with
the operations the benchmark families need (`BANK`): SELECT (locate the rows/columns, i.e. the
header paths, a question is about), DERIVE (differences, ratios, growth, shares), STAT
(correlation, dispersion, trend), COMPARE (which is larger, by how much, true/false) and CHART
(a matplotlib figure). FILTER carries what it constrains: ``FILTER:raw`` (raw values, before
aggregation), ``FILTER:agg`` (aggregated results, after AGG) or plain ``FILTER`` (unknown:
both placements are enumerated).

**Operation map** (prerequisites and admissible orders, `violations`):
- CLEAN only first; CHART only last; each of CLEAN, SORT, CHART at most once; no operation
  twice in a row;
- AGG needs a grouping scope before it (GROUP, SELECT, FILTER or JOIN); JOIN needs a SELECT
  before it; DERIVE, STAT, SORT and CHART need some scope or value before them; COMPARE needs
  a value (SELECT, AGG, DERIVE, STAT or FILTER) before it;
- FILTER:raw comes before every GROUP and AGG; FILTER:agg comes after an AGG;
- SORT is last unless only CHART follows (a later step that needs the order);
- a GROUP that no AGG, STAT, DERIVE or CHART uses later is redundant.

**Enumeration** (`enumerate_paths`): every distinct ordering of the operations the model mapped
the sub-queries to (at most `max_len`, in its order of mention), plus the variants without an
optional CLEAN or SORT (kept when the query type needs it), is checked against the map; invalid
ones are pruned, duplicates removed, and the K with the highest structural prior kept. When no
ordering is valid, a SELECT is put first (the one repair); ``SELECT`` alone is the last resort.

**Structural prior** P(π) ∈ [0, 1] (`prior`, the paper says only "structural plausibility or
domain knowledge"): 0.5·order + 0.3·fit + 0.2·brevity, where *order* is 1 − the normalized
Kendall-tau distance between π and the model's proposed order (over shared operations),
*fit* the mean of the checks that apply — the table has aggregation rows or unparsed values and
π aggregates → CLEAN or FILTER before the first AGG/STAT; ranking → π has SORT; chart → π ends
with CHART; headers with two or more levels or sections → π starts with (CLEAN,) SELECT; and
each remembered lesson rule (`Rule`) → π satisfies it — and *brevity* 1 / (1 + 0.25·(L − L_min)).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "BANK",
    "DEFAULT_OPS",
    "Path",
    "Rule",
    "TableTraits",
    "enumerate_paths",
    "parse_op",
    "path_key",
    "prior",
    "violations",
]

BANK: dict[str, str] = {
    "CLEAN": "normalize values: numbers, missing values, units; drop or flag total rows",
    "SELECT": "pick the rows and columns (header paths) the question is about",
    "FILTER": "keep rows meeting a condition (raw values before AGG, aggregates after it)",
    "GROUP": "set a grouping scope (a category, a section, a header level)",
    "AGG": "aggregate within the scope: sum, mean, count, min, max",
    "JOIN": "align two regions of the table (header blocks, sections) on a shared key",
    "DERIVE": "compute new values: differences, ratios, growth rates, shares",
    "STAT": "statistics: correlation, standard deviation, trend, test",
    "COMPARE": "compare values or groups: which is larger, by how much, true/false",
    "SORT": "order by a value (head/tail for top-k)",
    "CHART": "draw the chart with matplotlib",
}
DEFAULT_OPS: dict[str, list[str]] = {
    "lookup": ["SELECT"],
    "aggregation": ["SELECT", "FILTER", "AGG"],
    "ranking": ["SELECT", "SORT"],
    "comparison": ["SELECT", "COMPARE"],
    "fact_check": ["SELECT", "COMPARE"],
    "chart": ["SELECT", "CHART"],
    "analysis": ["SELECT", "STAT"],
}
"""Operations per query type when the model's decomposition is unusable (keyword fallback)."""
FILTER_TARGETS = ("raw", "agg")
Path = tuple[str, ...]
"""Operations in order, e.g. ("SELECT", "FILTER:raw", "AGG")."""

_SCOPES = {"SELECT", "GROUP", "FILTER", "JOIN"}
_VALUES = {"SELECT", "AGG", "DERIVE", "STAT", "FILTER"}
_NEEDS: dict[str, set[str]] = {
    "AGG": _SCOPES,
    "JOIN": {"SELECT"},
    "DERIVE": _SCOPES | {"AGG"},
    "STAT": _SCOPES | {"AGG", "DERIVE"},
    "SORT": _SCOPES | {"AGG", "DERIVE", "STAT"},
    "CHART": _SCOPES | {"AGG", "DERIVE", "STAT", "SORT"},
    "COMPARE": _VALUES,
}
_ONCE = ("CLEAN", "SORT", "CHART")
_OPTIONAL = ("CLEAN", "SORT")


@dataclass(frozen=True)
class Rule:
    """A machine-checkable lesson about paths.

    Kinds: ``before`` (when both occur, `a` comes before `b`), ``needs`` (a path with `b` has
    `a` before it), ``first`` (`a` is the first operation after an optional CLEAN), ``once``
    (`a` occurs at most once).
    """

    kind: str  # "before" | "needs" | "first" | "once"
    a: str
    b: str = ""

    def holds(self, path: Path) -> bool:
        ops = [base(op) for op in path]
        if self.kind == "first":
            rest = [op for op in ops if op != "CLEAN"]
            return bool(rest) and rest[0] == self.a
        if self.kind == "once":
            return ops.count(self.a) <= 1
        if self.b not in ops:
            return True
        if self.a not in ops:
            return self.kind == "before"
        return ops.index(self.a) < ops.index(self.b)

    def applies(self, path: Path) -> bool:
        ops = {base(op) for op in path}
        if self.kind in ("before", "needs"):
            return self.b in ops
        return self.a in ops or self.kind == "first"

    def encode(self) -> str:
        return f"{self.kind}:{self.a}:{self.b}"

    @classmethod
    def decode(cls, text: str) -> Rule | None:
        parts = text.split(":")
        if len(parts) != 3 or parts[0] not in ("before", "needs", "first", "once"):
            return None
        return cls(parts[0], parts[1], parts[2])


@dataclass(frozen=True)
class TableTraits:
    """What the meta graph says that the prior's fit checks use."""

    has_aggregates: bool = False
    has_unparsed: bool = False
    hierarchical: bool = False


def base(op: str) -> str:
    return op.split(":", 1)[0]


def parse_op(text: str) -> str | None:
    """A bank operation from model text ("filter (raw)", "AGG", "groupby") or None."""
    raw = text.strip().upper().replace("-", "_").replace(" ", "")
    target = ""
    for t in FILTER_TARGETS:
        if raw.endswith((f":{t.upper()}", f"({t.upper()})", f"_{t.upper()}")):
            target = t
            raw = raw[: -len(t) - 1].rstrip(":(_")
            break
    aliases = {"GROUPBY": "GROUP", "AGGREGATE": "AGG", "AGGREGATION": "AGG", "PLOT": "CHART"}
    aliases |= {"VISUALIZE": "CHART", "LOOKUP": "SELECT", "LOCATE": "SELECT", "LOAD": "SELECT"}
    aliases |= {"COMPUTE": "DERIVE", "CALCULATE": "DERIVE", "RANK": "SORT", "ORDER": "SORT"}
    aliases |= {"STATISTICS": "STAT", "MERGE": "JOIN", "CLEANUP": "CLEAN"}
    op = aliases.get(raw, raw)
    if op not in BANK:
        return None
    return f"FILTER:{target}" if op == "FILTER" and target else op


def path_key(path: Path) -> str:
    """The path's signature, e.g. ``SELECT>FILTER:raw>AGG`` (the memory key of a path)."""
    return ">".join(path)


def violations(path: Path) -> list[str]:
    """Why `path` breaks the operation map (empty: admissible)."""
    out: list[str] = []
    ops = [base(op) for op in path]
    for i, op in enumerate(ops):
        before = set(ops[:i])
        if i and ops[i - 1] == op:
            out.append(f"{op} twice in a row")
        if op in _NEEDS and not before & _NEEDS[op]:
            out.append(f"{op} needs one of {sorted(_NEEDS[op])} before it")
        if op == "CLEAN" and i:
            out.append("CLEAN must be first")
        if op == "CHART" and i != len(ops) - 1:
            out.append("CHART must be last")
        if op == "SORT" and any(o != "CHART" for o in ops[i + 1 :]):
            out.append("SORT must be last unless a CHART follows")
        if op == "GROUP" and not set(ops[i + 1 :]) & {"AGG", "STAT", "DERIVE", "CHART"}:
            out.append("GROUP that nothing uses")
    for op in _ONCE:
        if ops.count(op) > 1:
            out.append(f"{op} more than once")
    for i, op in enumerate(path):
        if op == "FILTER:raw" and {"GROUP", "AGG"} & set(ops[:i]):
            out.append("FILTER:raw after GROUP/AGG")
        if op == "FILTER:agg" and "AGG" not in ops[:i]:
            out.append("FILTER:agg before AGG")
    return out


def _kendall(path: Path, proposed: Path) -> float:
    a, b = [base(op) for op in path], [base(op) for op in proposed]
    shared = [op for op in dict.fromkeys(a) if op in b]
    if len(shared) < 2:
        return 1.0
    pos_a = {op: a.index(op) for op in shared}
    pos_b = {op: b.index(op) for op in shared}
    pairs = list(itertools.combinations(shared, 2))
    discordant = sum((pos_a[x] - pos_a[y]) * (pos_b[x] - pos_b[y]) < 0 for x, y in pairs)
    return 1.0 - discordant / len(pairs)


def prior(
    path: Path,
    *,
    proposed: Path,
    query_type: str,
    traits: TableTraits,
    rules: Sequence[Rule] = (),
    min_len: int = 1,
) -> float:
    """P(π) ∈ [0, 1] (see the module docstring)."""
    ops = [base(op) for op in path]
    checks: list[float] = []
    first_agg = next((i for i, op in enumerate(ops) if op in ("AGG", "STAT")), None)
    if (traits.has_aggregates or traits.has_unparsed) and first_agg is not None:
        checks.append(1.0 if {"CLEAN", "FILTER"} & set(ops[:first_agg]) else 0.5)
    if query_type == "ranking":
        checks.append(1.0 if "SORT" in ops else 0.3)
    if query_type == "chart":
        checks.append(1.0 if ops and ops[-1] == "CHART" else 0.0)
    if traits.hierarchical:
        rest = [op for op in ops if op != "CLEAN"]
        checks.append(1.0 if rest and rest[0] == "SELECT" else 0.7)
    for rule in rules:
        if rule.applies(path):
            checks.append(1.0 if rule.holds(path) else 0.5)
    fit = sum(checks) / len(checks) if checks else 1.0
    brevity = 1.0 / (1.0 + 0.25 * max(0, len(path) - min_len))
    return round(0.5 * _kendall(path, proposed) + 0.3 * fit + 0.2 * brevity, 6)


def _variants(ops: Path, query_type: str) -> Iterable[Path]:
    yield ops
    needed = {"SORT"} if query_type == "ranking" else set()
    optional = [op for op in _OPTIONAL if op in ops and op not in needed]
    for r in range(1, len(optional) + 1):
        for drop in itertools.combinations(optional, r):
            kept = tuple(op for op in ops if op not in drop)
            if kept:
                yield kept


def _orderings(ops: Path) -> Iterable[Path]:
    filters = [i for i, op in enumerate(ops) if op == "FILTER"]
    choices = [ops]
    for i in filters:
        choices = [(*c[:i], f"FILTER:{t}", *c[i + 1 :]) for c in choices for t in FILTER_TARGETS]
    for choice in choices:
        yield from set(itertools.permutations(choice))


def enumerate_paths(
    ops: Sequence[str],
    *,
    query_type: str,
    traits: TableTraits,
    k: int,
    max_len: int = 4,
    rules: Sequence[Rule] = (),
) -> list[tuple[Path, float]]:
    """The K admissible candidate paths with the highest prior, as (path, P(π))."""
    proposed = tuple(ops[:max_len]) or ("SELECT",)
    found: set[Path] = set()
    for variant in _variants(proposed, query_type):
        found.update(p for p in _orderings(variant) if not violations(p))
    if not found and proposed[0] != "SELECT":
        repaired = ("SELECT", *proposed[: max_len - 1])
        for variant in _variants(repaired, query_type):
            found.update(p for p in _orderings(variant) if not violations(p))
    if not found:
        found = {("SELECT",)}
    shortest = min(len(p) for p in found)
    scored = []
    for p in found:
        score = prior(
            p,
            proposed=proposed,
            query_type=query_type,
            traits=traits,
            rules=rules,
            min_len=shortest,
        )
        scored.append((p, score))
    scored.sort(key=lambda item: (-item[1], len(item[0]), path_key(item[0])))
    return scored[:k]
