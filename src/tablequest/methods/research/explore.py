"""Algorithm 1's loop (DTR §3.3–3.5): select paths by E(π), execute, update, replan.

**Selection** (option ``selection``):
- ``repeat`` (default, §3.3 "Path Selection": "the planner selects the top-k paths with the
  highest expectation scores"; Alg. 1 line 15): each iteration ranks *every* candidate by
  E(π) (Eq. 1), executed ones included, and takes the k best that may run (k = ``top_k``);
  they run in order, each updating R̂ and N with each operation's reward (lines 17–20,
  `learn`). A failure replans and ends the iteration (lines 21–23: "break, restart path
  execution with revised plan"); the next iteration ranks again. A path may therefore run
  again in a later iteration when its E(π) is still among the best — the exploration term
  shrinks with N(π) (Eq. 3), so this happens when R̂ is high or the alternatives are
  implausible.
- ``once``: one path at a time, the best unexecuted one by E(π), each at most once.

Choices (ours; the paper is silent):
- **When a repeat may run**: an executed path runs again only when its latest run failed or
  was invalid *and* what its prompts show has changed since — new lessons after a replan
  (`QuestionRun.context`): the paper's "restart path execution with revised plan". The same
  prompts at temperature 0 give the same reply (our LLM cache would even return it), and a
  valid path's ballot cannot grow (one per path), so other reruns could only spend calls.
  This also bounds the loop: contexts change only on replans (``max_replans``). Whether a
  retry comes before an untried path is Eq. 1's call: a path that ran but gave the wrong
  shape keeps r > 0 (f_exec = 1) and goes first; one that crashed (r = 0) waits.
- **Votes**: one per distinct path, its latest answer (`reflect.ballots`): a repeat never
  votes twice for the same answer; convergence counts distinct paths the same way.
- Paths that do not fit the remaining budget are skipped (the next one that fits runs).

**Ablations** (Table 3): ``expectation=false`` ranks by the prior P(π) alone, each path once
(no Eq. 1; `method` recalls no R̂/N from the memory); ``abstraction=false`` replans without
lessons (none learned, shown or stored; no rule-driven revision); ``operations=false`` has a
single free-form path, so a replan revises nothing.
"""

from __future__ import annotations

from tablequest.methods.research.abstraction import abstract
from tablequest.methods.research.execute import PathOutcome, StepContext, Workspace, run_path
from tablequest.methods.research.memory import Lesson
from tablequest.methods.research.operations import DEFAULT_OPS, Path, Rule, path_key, prior
from tablequest.methods.research.options import ResearchOptions
from tablequest.methods.research.planner import Candidate, propagate, rank, update
from tablequest.methods.research.reflect import contrast, converged, lessons_from, revise
from tablequest.methods.research.state import QuestionRun, feedback_record, operation_records

__all__ = ["eligible", "execute", "learn", "ranked", "rules_of", "select"]


def rules_of(run: QuestionRun) -> list[Rule]:
    return [x.rule for x in [*run.lessons, *run.learned] if x.rule is not None]


def _repeats(opts: ResearchOptions) -> bool:
    return opts.selection == "repeat" and opts.expectation


def eligible(run: QuestionRun, cand: Candidate, opts: ResearchOptions) -> bool:
    """Whether `cand` may run now (see the module docstring)."""
    if not cand.executed:
        return True
    if not _repeats(opts) or cand.context >= run.context:
        return False
    latest = next((o for o in reversed(run.outcomes) if o.path == cand.path), None)
    return latest is not None and not latest.valid


def ranked(run: QuestionRun, opts: ResearchOptions) -> list[tuple[Candidate, float]]:
    """Candidates with their score, best first: E(π), or P(π) with expectation=false."""
    if opts.expectation:
        return rank(run.candidates, opts.alpha)
    order = sorted(range(len(run.candidates)), key=lambda i: (-run.candidates[i].prior, i))
    return [(run.candidates[i], run.candidates[i].prior) for i in order]


def select(run: QuestionRun, opts: ResearchOptions) -> Candidate | None:
    """The next path to run, or None (with `run.stop` set)."""
    remaining = run.q.budget.remaining_for("step")
    scored = ranked(run, opts)
    run.q.trace.event(
        "decision", stage="rank", remaining_steps=remaining, iteration=run.iteration,
        scored_by="E" if opts.expectation else "prior",
        expectations=[{"path": c.key, "E": round(e, 4), "r_hat": round(c.stats.r_hat, 4),
                       "n": c.stats.n, "prior": c.prior, "executed": c.executed,
                       "runs": c.runs, "eligible": eligible(run, c, opts)}
                      for c, e in scored],
    )  # fmt: skip
    if not _repeats(opts):
        return _first_fit(run, [c for c, _ in scored], remaining, opts)
    run.batch = [c for c in run.batch if eligible(run, c, opts)]
    if not run.batch:
        run.iteration += 1
        fits = [c for c, _ in scored if eligible(run, c, opts) and len(c.path) <= remaining]
        run.batch = fits[: opts.top_k]
        if run.batch:
            run.q.trace.event(
                "decision", stage="iteration", iteration=run.iteration,
                paths=[c.key for c in run.batch],
                repeats=[c.key for c in run.batch if c.executed],
            )  # fmt: skip
    return _first_fit(run, run.batch, remaining, opts, pop=True)


def _first_fit(
    run: QuestionRun, order: list[Candidate], remaining: int, opts: ResearchOptions, *,
    pop: bool = False,
) -> Candidate | None:  # fmt: skip
    for cand in list(order):
        if pop:
            order.remove(cand)
        if eligible(run, cand, opts) and len(cand.path) <= remaining:
            return cand
    waiting = any(eligible(run, c, opts) for c in run.candidates)
    if waiting:
        run.stop = "step budget exhausted"
    else:
        run.stop = "no path left to run" if _repeats(opts) else "all candidate paths executed"
    return None


def execute(
    run: QuestionRun,
    cand: Candidate,
    ctx: StepContext,
    ws: Workspace,
    opts: ResearchOptions,
) -> None:
    """Run `cand`, update its statistics, replan on failure, check convergence."""
    repeat = cand.executed
    run.q.trace.event(
        "decision", stage="select", path=cand.key, origin=cand.origin, repeat=repeat,
        run=cand.runs + 1, iteration=run.iteration,
    )  # fmt: skip
    outcome = run_path(cand.path, ctx, ws)
    cand.executed, cand.runs, cand.context = True, cand.runs + 1, run.context
    run.outcomes.append(outcome)
    learn(run, cand, outcome, opts)
    run.q.trace.event(
        "decision", stage="feedback", path=cand.key, f_exec=outcome.feedback.f_exec,
        f_time=outcome.feedback.f_time, f_type=outcome.feedback.f_type,
        reward=round(outcome.reward, 4), answer=outcome.answer, valid=outcome.valid,
        error=outcome.error, stopped=outcome.stopped, repeat=repeat,
    )  # fmt: skip
    if outcome.stopped is not None:
        run.stop = outcome.stopped
    elif not outcome.valid:
        replan(run, outcome, ctx, opts)
        run.batch.clear()  # Alg. 1 line 23: restart with the revised plan
    ordered = run.query_type == "ranking"
    if run.stop is None and converged(run.outcomes, opts.top_k, ordered=ordered):
        run.stop = "converged"


def learn(run: QuestionRun, cand: Candidate, outcome: PathOutcome, opts: ResearchOptions) -> None:
    """Update R̂(π) and N(π) and keep the memory records (see the module docstring).

    ``update=incremental`` (Alg. 1 lines 17–20): once per executed operation, with that
    operation's reward, each update a ``decision/update`` trace event. ``update=lr`` (Eq. 5:
    "after executing an operation path π, DTR aggregates execution outcomes into a path-level
    reward"): once per path with the path's reward, then the related paths (`propagate`).
    """
    if opts.update == "lr":
        if outcome.learnable:
            update(cand.stats, outcome.reward, rule="lr", eta=opts.eta)
            propagate(run.candidates, cand, outcome.reward, eta=opts.eta)
            run.records.append(feedback_record(outcome))
        return
    for op, f, r in zip(outcome.ops, outcome.op_feedback, outcome.op_rewards, strict=True):
        update(cand.stats, r, rule="incremental")
        run.q.trace.event(
            "decision", stage="update", path=cand.key, op=op.op, f=[f.f_exec, f.f_time, f.f_type],
            reward=round(r, 4), r_hat=round(cand.stats.r_hat, 4), n=cand.stats.n,
        )  # fmt: skip
    run.records.extend(operation_records(outcome))


def _show(run: QuestionRun, ctx: StepContext, reflection: str) -> None:
    """The lessons the next step prompts show; a change is a new context version."""
    shown = [x.text for x in [*run.lessons, *run.learned]][-8:]
    if reflection:
        shown.append(f"Execution reflection: {reflection}")
    if shown != list(ctx.lessons):
        ctx.lessons = shown
        run.context += 1


def replan(
    run: QuestionRun,
    failed: PathOutcome,
    ctx: StepContext,
    opts: ResearchOptions,
) -> None:
    """Alg. 1 lines 21–23: learn from the failure, revise Π, restart with the best path."""
    run.replans += 1
    new: list[Lesson] = []
    added: list[Path] = []
    if opts.abstraction:
        template = lessons_from(failed, run.query_type)
        for good in (o for o in run.outcomes if o.valid):
            template += contrast(good, failed)
        known = {x.text for x in [*run.lessons, *run.learned]}
        template = [x for x in template if x.text not in known]
        found = abstract(run, ctx.question, template, opts)
        run.experience.append({"source": found.source, "reason": found.reason,
                               "refused": found.refused})  # fmt: skip
        run.q.trace.event(
            "decision", stage="experience", source=found.source, reason=found.reason,
            lessons=[x.text for x in found.lessons], reflection=found.reflection,
            refused=found.refused,
        )  # fmt: skip
        new = [x for x in found.lessons if x.text not in known]
        run.learned += new
        _show(run, ctx, found.reflection)
        if opts.operations:
            added = _revise(run, opts.max_path_len)
    run.q.trace.event(
        "decision", stage="replan", failed=path_key(failed.path), error=failed.error_kind,
        lessons=[x.text for x in new], added=[path_key(p) for p in added],
        abstraction=opts.abstraction,
    )  # fmt: skip
    if run.replans > opts.max_replans:
        run.stop = "replan limit reached"


def _revise(run: QuestionRun, max_len: int) -> list[Path]:
    """New paths that follow the lesson rules; every prior recomputed with them (§3.5)."""
    rules = rules_of(run)
    added = revise([c.path for c in run.candidates], rules, max_len)
    proposed = tuple(run.plan.operations) if run.plan else tuple(DEFAULT_OPS[run.query_type])
    for cand in run.candidates:
        cand.prior = prior(cand.path, proposed=proposed, query_type=run.query_type,
                           traits=run.comp.traits, rules=rules)  # fmt: skip
    for path in added:
        score = prior(path, proposed=proposed, query_type=run.query_type,
                      traits=run.comp.traits, rules=rules)  # fmt: skip
        run.candidates.append(Candidate(path, score, origin="replan"))
    return added
