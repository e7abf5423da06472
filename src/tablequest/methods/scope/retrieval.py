"""Operation-aware row and column retrieval with K samples (TabScope §3.4, App. C.1).

Rows and columns are retrieved by separate prompts, concurrently. Each dimension asks for K
samples at temperature 0.5 with log-probabilities: one request with ``n=K`` (``sampling n``;
if the backend returns fewer, the rest are issued as concurrent single calls, each a step of
the budget) or K concurrent single requests (``sampling separate``). Without aggregation one
greedy sample (temperature 0) is taken. Samples are parsed (``f_row([...])``, ``f_row([*])``,
``f_col([...])``); only existing row ids and column names survive, invented ones are dropped
and recorded. The samples then go to `aggregate` (Eqs 2–5).

Choices (ours): column names match exactly after folding case, quotes and spaces, else by the
last header level when that is unique (multi-level headers: "Medals / Gold" matches "Gold");
a sample whose items are all invented is unusable (not an empty set); when no sample of a
dimension is usable, one repair request (temperature 0) is made, then the dimension keeps all
its ids (recorded). With too few steps for K separate requests per dimension, K is lowered to
what fits (recorded); with fewer than two steps the question takes the full-table path. An
unusable sample leaves the LLM cache (`ScopeRun.discard`, issue 39; with ``n=K``, the
request's entry of all K).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from tablequest.llm import Completion, Message, ParseError, parse_f_col, parse_f_row
from tablequest.methods.scope import prompts
from tablequest.methods.scope.aggregate import Aggregation, Candidate, aggregate, candidate_score
from tablequest.methods.scope.state import ScopeRun, caption
from tablequest.table import Table

__all__ = ["Dim", "Samples", "match_columns", "match_rows", "parse_sample", "retrieve"]

Dim = Literal["rows", "cols"]
T = TypeVar("T")


@dataclass
class Samples:
    """The parsed samples of one dimension and what happened to them."""

    dim: Dim
    requested: int
    candidates: list[Candidate] = field(default_factory=list)
    received: int = 0
    invalid: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    logprobs: str = "absent"
    repaired: bool = False
    fallback: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "requested": self.requested,
            "received": self.received,
            "usable": len(self.candidates),
            "scores": [c.score for c in self.candidates],
            "invalid": self.invalid,
            "dropped": list(dict.fromkeys(self.dropped)),
            "logprobs": self.logprobs,
            "repaired": self.repaired,
            "fallback_all": self.fallback,
        }


def parallel(fns: Sequence[Callable[[], T]]) -> list[T]:
    """Run `fns` concurrently; results in order.

    The first runs in the calling thread, so a caller-thread lock released around LLM waits
    (the eval runner's `GatedLLM`) is released for it too; the others run in worker threads.
    """
    if len(fns) == 1:
        return [fns[0]()]
    with ThreadPoolExecutor(max_workers=len(fns) - 1) as pool:
        futures = [pool.submit(fn) for fn in fns[1:]]
        first = fns[0]()
        return [first, *(f.result() for f in futures)]


def _fold(name: str) -> str:
    return " ".join(name.strip().strip("\"'`").casefold().split())


def match_columns(names: Sequence[str], table: Table) -> tuple[list[int], list[str]]:
    """Column ids named by `names` (exact after folding, else a unique last header level)."""
    exact = {_fold(n): cid for n, cid in zip(table.columns, table.col_ids, strict=True)}
    leaves: dict[str, list[int]] = {}
    for pos, cid in enumerate(table.col_ids):
        path = table.header_path(pos)
        if path:
            leaves.setdefault(_fold(path[-1]), []).append(cid)
    found: list[int] = []
    unknown: list[str] = []
    for name in names:
        key = _fold(name)
        hit = exact.get(key)
        if hit is None and len(leaves.get(key, [])) == 1:
            hit = leaves[key][0]
        if hit is None:
            unknown.append(name)
        elif hit not in found:
            found.append(hit)
    return found, unknown


def match_rows(ids: Sequence[int], table: Table) -> tuple[list[int], list[int]]:
    """Row ids that exist, and the invented ones."""
    known = set(table.row_ids)
    return [r for r in ids if r in known], [r for r in ids if r not in known]


def parse_sample(dim: Dim, text: str, table: Table) -> tuple[frozenset[int] | None, list[str], str]:
    """(id set or None, dropped items, problem) of one retrieval reply."""
    try:
        parsed = parse_f_row(text) if dim == "rows" else parse_f_col(text)
    except ParseError as exc:
        return None, [], f"{exc.kind}: {exc}"
    if parsed == "*":
        return frozenset(table.row_ids if dim == "rows" else table.col_ids), [], ""
    if dim == "rows":
        rows, bad_rows = match_rows([int(x) for x in parsed], table)
        found, dropped = rows, [str(r) for r in bad_rows]
    else:
        found, dropped = match_columns([str(x) for x in parsed], table)
    if parsed and not found:
        return None, dropped, "every item names a row or column the table does not have"
    return frozenset(found), dropped, ""


def _messages(run: ScopeRun, dim: Dim) -> list[Message]:
    if run.options.op_aware:
        template = prompts.ROW_RETRIEVAL if dim == "rows" else prompts.COL_RETRIEVAL
    else:
        template = prompts.ROW_RETRIEVAL_PLAIN if dim == "rows" else prompts.COL_RETRIEVAL_PLAIN
    text = prompts.fill(
        template,
        LINEARIZED_TABLE=run.table_text,
        TABLE_CAPTION=caption(run.table),
        QUESTION=run.question,
    )
    return prompts.user(text)


def _sample(
    run: ScopeRun, dim: Dim, messages: list[Message], k: int, max_tokens: int
) -> list[Completion]:
    opts = run.options
    temperature = opts.sample_temperature if opts.aggregate else opts.temperature

    def one(n: int) -> Callable[[], list[Completion]]:
        return lambda: (
            run.chat(
                dim,
                messages,
                temperature=temperature,
                max_tokens=max_tokens,
                n=n,
                logprobs=opts.logprobs,
            )
            or []
        )

    if opts.sampling == "separate" or k == 1:
        return [c for batch in parallel([one(1) for _ in range(k)]) for c in batch]
    out = one(k)()
    how = "one request" if _one_response(out) else "several requests (the client emulated n)"
    if 0 < len(out) < k:
        run.decision(dim, problem="backend returned fewer samples than n", got=len(out), n=k)
        how = "fewer than n returned; the rest as single calls"
        out += [c for batch in parallel([one(1) for _ in range(k - len(out))]) for c in batch]
    run.decision(dim, n_request=how, n=k, received=len(out))
    return out[:k]


def _one_response(completions: Sequence[Completion]) -> bool:
    """Whether n completions came from one response: its usage sits on the first only."""
    return len(completions) > 1 and all(c.usage.prompt_tokens == 0 for c in completions[1:])


def _repair(
    run: ScopeRun, dim: Dim, messages: list[Message], bad: str, max_tokens: int
) -> Completion | None:
    conversation = [
        *messages,
        {"role": "assistant", "content": bad},
        {
            "role": "user",
            "content": prompts.REPAIR_CALL.replace("{error}", "no valid f_row/f_col call"),
        },
    ]
    replies = run.chat(
        "repair", conversation, temperature=run.options.temperature, max_tokens=max_tokens
    )
    return replies[0] if replies else None


def _collect(run: ScopeRun, dim: Dim, k: int, max_tokens: int) -> Samples:
    messages = _messages(run, dim)
    samples = Samples(dim, requested=k)
    completions = _sample(run, dim, messages, k, max_tokens)
    samples.received = len(completions)
    _absorb(run, samples, completions)
    if not samples.candidates and completions and run.query.budget.can_spend("repair"):
        repaired = _repair(run, dim, messages, completions[0].text, max_tokens)
        if repaired is not None:
            samples.repaired = True
            _absorb(run, samples, [repaired])
    if not samples.candidates:
        samples.fallback = True
        run.fallback(dim, f"no usable {dim} sample → all {dim} kept")
    return samples


def _absorb(run: ScopeRun, samples: Samples, completions: list[Completion]) -> None:
    have = [c.token_logprobs is not None for c in completions]
    if have:
        samples.logprobs = "present" if all(have) else "partial" if any(have) else "absent"
    for i, completion in enumerate(completions):
        ids, dropped, problem = parse_sample(samples.dim, completion.text, run.table)
        samples.dropped += dropped
        if dropped:
            run.error(samples.dim, "invented ids dropped", items=dropped)
        if ids is None:
            run.discard(completion)  # unusable: the cache forgets it
            samples.invalid.append({"sample": i, "problem": problem[:300]})
            run.error(samples.dim, problem[:300], reply=completion.text[:500])
            continue
        score = candidate_score(completion.token_logprobs)
        samples.candidates.append(Candidate(ids, score))


def _plan(run: ScopeRun) -> int | None:
    """Samples per dimension that the budget allows (None: not even one request each)."""
    opts = run.options
    left = run.query.budget.remaining_for("rows")
    k = opts.samples
    if left < 2:
        run.fallback(
            "retrieve", f"{left} step(s) left before the answer: no retrieval → full table"
        )
        return None
    if opts.sampling == "separate" and 2 * k > left:
        run.fallback("retrieve", f"K lowered from {k} to {left // 2} to fit the step budget")
        k = left // 2
    return k


def retrieve(run: ScopeRun) -> tuple[Aggregation, dict[str, Any]] | None:
    """The aggregated (R′, C′) and a report of the samples; None after a recorded fallback."""
    opts = run.options
    probe = _messages(run, "rows")
    fit = run.fit(probe, run.table_tokens, len(run.table_text), opts.max_tokens)
    if not fit.ok:
        run.fallback(
            "retrieve",
            f"the retrieval prompt ({fit.prompt_tokens} tokens) does not fit the model "
            f"context ({fit.context} tokens)",
        )
        return None
    k = _plan(run)
    if k is None:
        return None
    rows, cols = parallel(
        [
            lambda: _collect(run, "rows", k, fit.max_tokens),
            lambda: _collect(run, "cols", k, fit.max_tokens),
        ]
    )
    table = run.table
    chosen = aggregate(
        rows.candidates,
        cols.candidates,
        n_rows=table.n_rows,
        n_cols=table.n_cols,
        all_rows=frozenset(table.row_ids),
        all_cols=frozenset(table.col_ids),
        alpha=opts.alpha,
    )
    report = {"rows": rows.to_json(), "cols": cols.to_json(), "aggregation": chosen.to_json()}
    run.decision("aggregate", k=k, **report)
    return chosen, report
