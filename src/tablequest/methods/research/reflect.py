"""Reflection (DTR §3.4–3.5): abstracted lessons, path revision on replan, and the vote (Eq. 6).

- **Lessons** (`lessons_from`): a failed or invalid path yields value-agnostic lessons by the
  class of what went wrong (a missing column → re-read the header paths and SELECT first; a
  type error → CLEAN before AGG; an empty filter → check labels first; a time-out → vectorize;
  a wrong output shape → what the last operation must return). When a path succeeds after
  another failed, every pair of operations they order differently becomes "a before b"
  (the paper's "filter before aggregate"); a path with two SORTs teaches "sort once".
- **Revision** (`revise`, Alg. 1 line 22 "Replan"): for each new rule, the candidates that
  break it get a modified sibling that satisfies it (CLEAN inserted first, SELECT moved first,
  the two operations swapped) when the operation map admits it; new paths start from the
  memory's statistics for their signature (usually N = 0), as §3.5 says structural
  modifications change N.
- **Vote** (`vote`, Eq. 6): a* = argmax_a Σ_i 1(a_i = a) over the answers of executed paths that
  satisfy the required format (f_exec = f_type = 1). Answers are compared after normalization
  (case, spaces, thousands separators, numbers to 6 significant digits; item order kept for
  rankings, ignored otherwise); a tie goes to the answer of the path executed first (the one
  with the highest expectation when chosen).
- **Ballots** (`ballots`, ours: the paper counts "multiple executed paths"): one vote per
  distinct path, its latest execution's answer. A path executed again (selection=repeat) does
  not vote twice for the same answer; its new answer replaces its old one (the later run had
  more lessons). Convergence counts distinct paths the same way.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence

from tablequest.methods.research.execute import PathOutcome
from tablequest.methods.research.feedback import EXPECTED
from tablequest.methods.research.memory import Lesson
from tablequest.methods.research.operations import Path, Rule, base, violations

__all__ = ["ballots", "converged", "lessons_from", "normalize", "revise", "vote"]

_BY_KIND: dict[str, tuple[str, Rule | None]] = {
    "missing_column": (
        "A column was not found: re-read the header paths ('Parent / Child') and the sample "
        "rows to find the exact sub-column before using it",
        Rule("first", "SELECT"),
    ),
    "type": (
        "Values were not numbers: clean them (numbers, missing values, total rows) before "
        "aggregating",
        Rule("needs", "CLEAN", "AGG"),
    ),
    "empty": (
        "A step kept no rows: check the exact labels in the table before filtering on them",
        Rule("first", "SELECT"),
    ),
    "timeout": ("A program ran out of time: use vectorized pandas, no loops over rows", None),
    "memory": ("A program ran out of memory: work on the selected columns only", None),
    "forbidden": (
        "Programs may not read files, use the network or start processes: use df only",
        None,
    ),
    "name": ("Define every variable in the step that uses it", None),
    "index": ("Check the number of rows before indexing into a result", None),
}


def lessons_from(failed: PathOutcome, query_type: str) -> list[Lesson]:
    """Lessons abstracted from one failed or invalid path.

    A lesson keeps its rule only when the failed path breaks it (a rule the path already
    follows would not have avoided the failure).
    """
    kind = failed.error_kind or "error"
    if kind == "wrong_type":
        text = f"For {query_type} questions the last operation must return {EXPECTED[query_type]}"
        return [Lesson(text)]
    text, rule = _BY_KIND.get(kind, ("Validate each intermediate result before going on", None))
    if rule is not None and (not rule.applies(failed.path) or rule.holds(failed.path)):
        rule = None
    return [Lesson(text, rule)]


def contrast(good: PathOutcome, bad: PathOutcome) -> list[Lesson]:
    """'a before b' lessons from two paths that order shared operations differently."""
    a_ops, b_ops = [base(op) for op in good.path], [base(op) for op in bad.path]
    out: list[Lesson] = []
    shared = [op for op in dict.fromkeys(a_ops) if op in b_ops]
    for x, y in itertools.combinations(shared, 2):
        first, second = (x, y) if a_ops.index(x) < a_ops.index(y) else (y, x)
        if b_ops.index(first) > b_ops.index(second):
            text = f"{first} before {second}: the path that did so worked, the other did not"
            out.append(Lesson(text, Rule("before", first, second)))
    if b_ops.count("SORT") > 1 >= a_ops.count("SORT"):
        out.append(Lesson("Repeated sorting does not help: sort once, last", Rule("once", "SORT")))
    return out


def _satisfy(path: Path, rule: Rule) -> Path | None:
    ops = list(path)
    names = [base(op) for op in ops]
    if rule.kind == "first" and rule.a in names:
        i = names.index(rule.a)
        start = 1 if names[0] == "CLEAN" else 0
        ops.insert(start, ops.pop(i))
    elif rule.kind == "first":
        ops.insert(1 if names and names[0] == "CLEAN" else 0, rule.a)
    elif rule.kind == "needs" and rule.a not in names and rule.b in names:
        ops.insert(0 if rule.a == "CLEAN" else names.index(rule.b), rule.a)
    elif rule.kind == "before" and rule.a in names and rule.b in names:
        i, j = names.index(rule.a), names.index(rule.b)
        if i > j:
            ops[i], ops[j] = ops[j], ops[i]
            ops = [("FILTER:raw" if op == "FILTER:agg" else op) for op in ops]
    elif rule.kind == "once":
        seen = False
        kept = []
        for op in ops:
            if base(op) == rule.a:
                if seen:
                    continue
                seen = True
            kept.append(op)
        ops = kept
    result = tuple(ops)
    return result if result != path and not violations(result) else None


def revise(paths: Sequence[Path], rules: Sequence[Rule], max_len: int) -> list[Path]:
    """New admissible paths: each candidate breaking a rule, modified to satisfy it."""
    known = set(paths)
    out: list[Path] = []
    for path, rule in itertools.product(paths, rules):
        if not rule.applies(path) or rule.holds(path):
            continue
        fixed = _satisfy(path, rule)
        if fixed is not None and len(fixed) <= max_len and fixed not in known:
            known.add(fixed)
            out.append(fixed)
    return out


def _item(text: str) -> str:
    value = text.strip().strip('"').rstrip(".").lower()
    number = value.replace(",", "").removeprefix("$").removesuffix("%").strip()
    try:
        x = float(number)
    except ValueError:
        return " ".join(value.split())
    if math.isnan(x) or math.isinf(x):
        return value
    return f"{x:.6g}"


def normalize(answer: str, *, ordered: bool) -> str:
    """The voting key of an answer (see the module docstring)."""
    items = [_item(x) for x in re.split(r",\s+|;\s*|\|", answer) if x.strip()]
    return "|".join(items if ordered else sorted(items))


def ballots(outcomes: Sequence[PathOutcome]) -> list[PathOutcome]:
    """One outcome per distinct path, its latest, in the order the paths first ran."""
    latest: dict[Path, PathOutcome] = {o.path: o for o in outcomes}  # later runs overwrite
    return [latest[p] for p in dict.fromkeys(o.path for o in outcomes)]


def vote(outcomes: Sequence[PathOutcome], *, ordered: bool) -> tuple[str | None, dict[str, int]]:
    """Eq. 6 over the format-valid ballots: (winning answer as first written, votes per key)."""
    cast = ballots(outcomes)
    valid = [(normalize(o.answer, ordered=ordered), o.answer) for o in cast if o.valid]
    if not valid:
        return None, {}
    votes = Counter(key for key, _ in valid)
    best = max(votes.values())
    winner = next(answer for key, answer in valid if votes[key] == best)
    return winner, dict(votes)


def converged(outcomes: Sequence[PathOutcome], top_k: int, *, ordered: bool) -> bool:
    """k format-valid ballots with a strict majority, or k + 1 of them (one tie-break run)."""
    valid = [normalize(o.answer, ordered=ordered) for o in ballots(outcomes) if o.valid]
    if len(valid) < top_k:
        return False
    if len(valid) > top_k:
        return True
    return max(Counter(valid).values()) * 2 > len(valid) or top_k == 1
