"""A chaotic OpenAI-compatible server: every DTR run ends with a JSON-safe Result and a trace."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tablequest.llm.openai_compat import OpenAICompatible
from tablequest.llm.stub import Fault, StubServer
from tablequest.methods.base import MethodContext, TableSet
from tablequest.methods.research import DTR, ResearchOptions
from tablequest.sandbox import Sandbox
from tablequest.table import Table
from tablequest.trace import Trace

MOD = json.dumps({
    "query_type": "aggregation",
    "sub_queries": [{"text": "sum", "operations": ["SELECT", "FILTER", "AGG"]}],
})  # fmt: skip
CODE = "result = df.loc[~df['_aggregate'], 'Sales ($) / 2019'].sum()"
STEP = f"[THINK] sum\n[CODE]\n```python\n{CODE}\n```"


def chaos(seed: int) -> Any:
    rng = random.Random(seed)

    def reply(body: dict[str, Any]) -> Any:
        prompt = body["messages"][-1]["content"]
        roll = rng.random()
        if roll < 0.12:
            return Fault.status(rng.choice([429, 500, 503]), retry_after=0)
        if roll < 0.2:
            return Fault.malformed_json()
        if roll < 0.26:
            return Fault.empty_choices()
        if roll < 0.32:
            return Fault.truncated('{"query_type": "aggr')
        if roll < 0.36:
            return Fault.delay(3.0, then=STEP)  # beyond the client's timeout
        if roll < 0.5:
            return rng.choice(["", "¯\\_(ツ)_/¯", "[CODE]\n```python\nwhile True: pass\n```", "{"])
        if "Operation bank:" in prompt:
            return MOD
        if "Now carry out operation" in prompt:
            return STEP
        return "Final Answer: 4200"

    return reply


@pytest.mark.parametrize("seed", [1, 2])
def test_chaotic_server_runs_end_with_a_result_and_a_trace(
    sandbox: Sandbox, sales: Table, seed: int
) -> None:
    with StubServer(chaos(seed)) as stub:
        llm = OpenAICompatible(
            stub.url, "stub-model", timeout=1.0, max_retries=1, backoff_base=0.01,
            backoff_max=0.05, retry_after_max=0.05,
        )  # fmt: skip
        trace = Trace.in_memory()
        method = DTR(
            ResearchOptions(memory="off", exec_timeout=2.0),
            MethodContext(llm=llm, sandbox=sandbox),
        )
        result = method.answer("Total 2019 sales?", TableSet([("t1", sales)]), trace=trace)
        method.close()
        llm.close()
    # whatever the status, it is an honest one: an answer only when answered, a reason
    # whenever it failed
    assert (result.answer is not None) == (result.status == "answered"), result
    assert result.status != "failed" or result.reason, result
    assert result.steps <= 8
    payload = json.loads(json.dumps(result.to_json()))
    assert payload["status"] == result.status and payload["method"] == "research"
    stages = [e.get("stage") for e in trace.events if e["kind"] == "decision"]
    assert stages[0] == "start" and stages[-1] == "end"
    assert sum(1 for e in trace.events if e["kind"] == "llm_call") == result.steps
    if result.status != "answered":
        assert result.reason
