"""A whole query's worth of calls against a misbehaving server: typed outcomes, full trace."""

from __future__ import annotations

from pathlib import Path

from tablequest.llm import (
    Fault,
    LLMError,
    StepBudget,
    StubServer,
    UsageMeter,
    ask_with_repair,
    build_llm,
    extract_json,
    parse_f_row,
    resolve_config,
)
from tablequest.trace import Trace, read_trace, summarize


def test_every_misbehaviour_ends_in_a_value_a_fallback_or_a_typed_error(tmp_path: Path) -> None:
    replies = [
        "Sure, the patterns are GDP and 2019.",  # prose, no JSON
        '```json\n{"patterns": ["GDP", "2019"],}\n```',  # repaired on the second try
        "",  # empty content
        "f_row([apple])",  # hallucinated ids: both attempts unusable
        Fault.status(500),
        Fault.status(429, retry_after=0.01),
        Fault.truncated('{"answer": "42", "rows": [1, 2], "cols": ["na'),
        Fault.empty_choices(),
    ]
    with StubServer(replies) as stub:
        config = resolve_config(url=stub.url, model="stub-model", max_retries=2, timeout=2)
        trace = Trace(tmp_path / "q.jsonl")
        usage = UsageMeter()
        llm = build_llm(config, trace=trace, usage=usage, cache_dir=tmp_path / "cache")
        assert llm is not None
        budget = StepBudget(10, reserve=1)
        msgs = [{"role": "user", "content": "Which table has GDP for 2019?"}]

        def parse_dict(text: str) -> object:
            return extract_json(text, dict)

        outcomes: list[object] = []
        for parse, prompt in [(parse_dict, "patterns"), (parse_f_row, "rows"), (parse_dict, "qa")]:
            question = [{"role": "user", "content": f"{msgs[0]['content']} ({prompt})"}]
            try:
                value, _ = ask_with_repair(
                    llm, question, parse, budget=budget, kind=prompt, trace=trace
                )
                outcomes.append(value)
            except LLMError as exc:
                outcomes.append(type(exc).__name__)
        try:
            llm.chat([{"role": "user", "content": "last"}])
        except LLMError as exc:
            outcomes.append(type(exc).__name__)
        llm.close()

    assert outcomes == [
        {"patterns": ["GDP", "2019"]},
        None,
        {"answer": "42", "rows": [1, 2]},
        "LLMBadResponse",
    ]
    events = read_trace(tmp_path / "q.jsonl")
    kinds = [e["kind"] for e in events]
    # six calls: the failing one is an llm_call event carrying its error
    assert kinds.count("llm_call") == 6 and kinds.count("fallback") == 1
    assert sum(1 for e in events if e.get("error")) == 1
    parse_errors = [e for e in events if e["kind"] == "error"]  # each unusable reply
    s = summarize(events)
    assert s["calls"] == 6 and s["errors"] == 1 + len(parse_errors) == 4
    assert usage.totals.calls == 6 and usage.totals.errors == 1
    assert budget.used == 5
