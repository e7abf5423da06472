"""One research ask and one rag ask start exactly one sandbox child each (issue 25, item 5).

Before, `Sandbox()` pre-started a child, the ask's session took it and a spare was started in
its place that no session ever claimed: two children per ask. Child starts are counted by
replacing the `Child` class the sandbox module starts children with.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tablequest.sandbox._sandbox as sandbox_module
from tablequest.llm import Scripted
from tablequest.methods.run import ask
from tablequest.sandbox import Sandbox, SandboxUnavailable
from tablequest.sandbox._process import Child


@pytest.fixture()
def started(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every child the sandbox starts from now on (skip where no sandbox runs here)."""
    try:
        Sandbox(prewarm=False).close()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox here: {exc}")
    children: list[object] = []

    class Counted(Child):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            children.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(sandbox_module, "Child", Counted)
    return children


def write_sales(path: Path) -> Path:
    path.write_text("region,amount\nnorth,10\nsouth,20\nnorth,5\n")
    return path


def research_reply(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """MOD: one aggregation path; every step: code that sums the amounts."""
    prompt = messages[-1]["content"]
    if "Operation bank:" in prompt:
        plan = {"text": "the question", "operations": ["AGG"]}
        return json.dumps(
            {
                "query_type": "aggregation",
                "sub_queries": [plan],
                "columns": ["amount"],
                "answer_format": "a number",
            }
        )
    if "Now carry out operation" in prompt:
        return "[THINK] sum it\n[CODE]\n```python\nresult = df['amount'].sum()\n```"
    return "Final Answer: 35"


def test_a_research_ask_starts_one_child(tmp_path: Path, started: list[object]) -> None:
    result = ask(
        "What is the total amount?",
        write_sales(tmp_path / "sales.csv"),
        method="research",
        llm=Scripted(research_reply),
        options={"memory": "off"},
        trace_dir=tmp_path / "traces",
        cache=False,
    )
    assert result.status == "answered", result.details
    assert result.answer == "35"
    assert len(started) == 1


def test_a_rag_ask_starts_one_child(tmp_path: Path, started: list[object]) -> None:
    replies = [
        '["amount"]',
        '["north"]',
        "Thought: add them\nAction: df['amount'].sum()",
        "Thought: done\nFinal Answer: 35",
    ]
    result = ask(
        "What is the total amount?",
        write_sales(tmp_path / "sales.csv"),
        method="rag",
        llm=Scripted(replies),
        options={"encoder": "hash"},
        trace_dir=tmp_path / "traces",
        cache=False,
    )
    assert result.status == "answered", result.details
    assert result.answer == "35"
    samples = result.details["samples"]
    assert samples[0]["n_iter"] == 2  # the Action ran in the sandbox
    assert len(started) == 1
