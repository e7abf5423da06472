"""`trace.describe` (one description of an event, shared with the server) and `trace.runs`."""

from __future__ import annotations

from pathlib import Path

from tablequest import trace
from tablequest.serve import events
from tablequest.trace.describe import describe_event, number
from tablequest.trace.runs import run_trace_dir


def test_the_server_uses_the_trace_packages_descriptions() -> None:
    assert events.describe_event is describe_event is trace.describe_event
    view = describe_event(
        {"t": 0.5, "kind": "rank", "method": "bm25", "hits": [{"table_id": "tf44c874910295b0",
                                                              "score": 1.23456}]},
        names=lambda tid: "lakes.html" if tid == "tf44c874910295b0" else None,
    )  # fmt: skip
    assert view["title"] == "bm25 ranking · 1 table"
    assert view["lines"] == ["lakes.html (tf44c874910295b0) · score 1.235"]
    assert number(2.50) == "2.5" and not view["error"]


def test_run_trace_dir_sits_beside_the_records() -> None:
    assert run_trace_dir(Path("/runs/wtq.jsonl")) == Path("/runs/wtq.traces")
    assert run_trace_dir(Path("out/batch")) == Path("out/batch.traces")
    assert trace.run_trace_dir is run_trace_dir
