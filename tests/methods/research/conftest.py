"""Shared fixtures for the DTR tests: a sandbox (or a skip naming why), tables, scripted replies."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from tablequest.sandbox import Sandbox, SandboxUnavailable
from tablequest.table import Merge, Table

StepCode = Callable[[str, int, str], str]
"""(path key, 1-based index, operation) -> step reply."""


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    """The best sandbox this machine offers; degraded mode if only that works; else a skip."""
    errors = []
    for degraded in (False, True):
        old = os.environ.get("TABLEQUEST_SANDBOX")
        if degraded:
            os.environ["TABLEQUEST_SANDBOX"] = "degraded"
        try:
            sb = Sandbox()
            sb.warm()
        except SandboxUnavailable as exc:
            errors.append(str(exc))
            continue
        finally:
            if degraded:
                if old is None:
                    os.environ.pop("TABLEQUEST_SANDBOX", None)
                else:
                    os.environ["TABLEQUEST_SANDBOX"] = old
        try:
            yield sb
        finally:
            sb.close()
        return
    pytest.skip(f"no sandbox mode is available here: {'; '.join(errors)}")


def sales_rows() -> list[list[str]]:
    return [
        ["Region", "Sales ($)", "Sales ($)", "Growth (%)"],
        ["", "2019", "2022", "2019-2022"],
        ["East", "", "", ""],
        ["Boston", "1,000", "1,500", "50"],
        ["New York", "2,000", "2,100", "5"],
        ["West", "", "", ""],
        ["Denver", "500", "1,000", "100"],
        ["Seattle", "700", "..", ""],
        ["Total", "4,200", "4,600", "9.5"],
    ]


@pytest.fixture()
def sales() -> Table:
    """Two-level merged column headers, stub sections, a unit, a total row."""
    return Table.from_rows(sales_rows(), n_header_rows=2, merges=[Merge(0, 1, 0, 2)], title="Sales")


PLAN = re.compile(r"^(\d+)\. (\S+)(  ← now)?$", re.M)


def current_step(prompt: str) -> tuple[str, int, str] | None:
    """(path key, index, operation) of a step prompt, None for other prompts."""
    if "Now carry out operation" not in prompt:
        return None
    plan = PLAN.findall(prompt.split("Plan:", 1)[1].split("Table structure", 1)[0])
    ops = [op for _, op, _ in plan]
    index = next(int(i) for i, _, now in plan if now)
    return ">".join(ops), index, ops[index - 1]


def code_reply(code: str, think: str = "doing it") -> str:
    return f"[THINK] {think}\n[CODE]\n```python\n{code}\n```"


def mod_reply(query_type: str, operations: list[str], columns: list[str] | None = None) -> str:
    return json.dumps(
        {
            "query_type": query_type,
            "sub_queries": [{"text": "the question", "operations": operations}],
            "columns": columns or [],
            "answer_format": "see type",
        }
    )


def scripted(mod: str, steps: StepCode | Mapping[str, str]) -> Callable[..., Any]:
    """A `Scripted` reply function: the MOD reply, then step replies by path/op."""

    def reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        prompt = messages[-1]["content"]
        if "Operation bank:" in prompt:
            return mod
        step = current_step(prompt)
        if step is None:
            return "Final Answer: direct"
        key, index, op = step
        if callable(steps):
            return steps(key, index, op)
        return steps.get(f"{key}#{index}") or steps.get(op.split(":")[0]) or "[THINK] ok"

    return reply


class Script:
    """The scripted-reply helpers, handed to tests as the `script` fixture."""

    code = staticmethod(code_reply)
    mod = staticmethod(mod_reply)
    replies = staticmethod(scripted)
    step = staticmethod(current_step)


@pytest.fixture()
def script() -> type[Script]:
    return Script
