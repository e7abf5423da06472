"""Trace: JSONL events, thread safety, disk errors, read_trace."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tablequest.trace import (
    KINDS,
    Trace,
    UnreadableTrace,
    default_trace_dir,
    new_trace_path,
    read_trace,
)


@dataclass
class Hit:
    table_id: str
    score: float


def test_events_go_to_jsonl_and_memory(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "q.jsonl"
    trace = Trace(path)
    trace.event("rank", patterns=["GDP"], hits=[Hit("t1", 0.5)], where=tmp_path, ids={"b", "a"})
    trace.event("decision", action="select", ids=["t1"])
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["kind"] == "rank" and isinstance(first["t"], float)
    assert first["hits"] == [{"table_id": "t1", "score": 0.5}]
    assert first["where"] == str(tmp_path) and first["ids"] == ["a", "b"]
    assert read_trace(path) == trace.events
    assert [e["kind"] for e in trace.events] == ["rank", "decision"]


def test_unencodable_values_become_repr() -> None:
    trace = Trace.in_memory()
    trace.event("exec", value=object(), bad_keys={(1, 2): "x"})
    [event] = trace.events
    assert event["kind"] == "exec" and "object object" in event["value"]
    assert "(1, 2)" in event["bad_keys"]


def test_to_dict_objects_are_expanded() -> None:
    class WithDict:
        def to_dict(self) -> dict[str, int]:
            return {"x": 1}

    trace = Trace.in_memory()
    trace.event("qa", result=WithDict())
    assert trace.events[0]["result"] == {"x": 1}


def test_kind_and_payload_validation() -> None:
    trace = Trace.in_memory()
    with pytest.raises(ValueError, match="unknown trace event kind"):
        trace.event("thinking")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key 't'"):
        trace.event("qa", t=1)
    assert set(KINDS) == {
        "llm_call",
        "llm_retry",
        "rank",
        "preview",
        "decision",
        "exec",
        "qa",
        "fallback",
        "error",
        "route",
    }


def test_disk_error_is_reported_once_and_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    trace = Trace(blocker / "trace.jsonl")
    trace.event("qa", answer="1")
    trace.event("qa", answer="2")
    assert len(trace.events) == 2
    err = capsys.readouterr().err
    assert err.count("cannot write trace") == 1


def test_thread_safe_appends(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "t.jsonl")

    def work(i: int) -> None:
        for j in range(50):
            trace.event("exec", worker=i, step=j, code="x" * 200)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = read_trace(tmp_path / "t.jsonl")
    assert len(events) == 400
    assert sorted((e["worker"], e["step"]) for e in events) == [
        (i, j) for i in range(8) for j in range(50)
    ]


def test_paths(isolated_env: Path, tmp_path: Path) -> None:
    assert default_trace_dir() == isolated_env / "traces"
    path = new_trace_path(tmp_path)
    assert path.parent == tmp_path and path.suffix == ".jsonl"
    stamp, ns, pid, rand = path.stem.rsplit("-", 3)
    assert stamp[:8].isdigit() and len(ns) == 19 and pid == f"p{os.getpid()}" and len(rand) == 4
    assert new_trace_path(tmp_path) != path
    trace = Trace.for_query()
    trace.event("qa", answer="x")
    assert trace.path is not None and trace.path.parent == isolated_env / "traces"
    assert read_trace(trace.path)[0]["answer"] == "x"


def test_read_trace_errors(tmp_path: Path) -> None:
    with pytest.raises(UnreadableTrace, match="cannot read trace"):
        read_trace(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "qa", "t": 0}\nnot json\n{"kind": "qa", "t": 1}\n')
    with pytest.raises(UnreadableTrace, match="line 2 is not JSON"):
        read_trace(bad)
    not_event = tmp_path / "list.jsonl"
    not_event.write_text("[1, 2]\n")
    with pytest.raises(UnreadableTrace, match="not a trace event"):
        read_trace(not_event)
    only_garbage = tmp_path / "garbage.jsonl"
    only_garbage.write_text("garbage")
    with pytest.raises(UnreadableTrace):
        read_trace(only_garbage)


def test_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    path.write_text('{"kind": "qa", "t": 0}\n\n{"kind": "llm_call", "t": 1, "repl')
    assert read_trace(path) == [{"kind": "qa", "t": 0}]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert read_trace(empty) == []
