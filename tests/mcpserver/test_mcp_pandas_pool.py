"""`run_pandas` under load and its host-side cost (issue 40, items 6 and 7): its own bounded
pool and a per-session limit, so reads stay fast during a flood; each table converted once,
within a cells budget and the call's timeout; the child's output scrubbed of server folders.

The sandbox is a stand-in whose run sleeps (a real child costs seconds to start), so these
tests time the server's scheduling, not the sandbox."""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import pandas as pd
import pytest
from mcp import Client
from tests.mcpserver.conftest import TOKEN, Bed, HttpServer, running_http

import tablequest
from tablequest.mcpserver import McpService, TableTools, build_server
from tablequest.mcpserver.sandboxed import CodeRunner
from tablequest.mcpserver.tools import TooManyCells
from tablequest.sandbox import ExecResult, Sandbox
from tablequest.sandbox._frames import encode_frames
from tablequest.service import Limits, ServeConfig, ServerState
from tablequest.table import Table


class SleepySandbox:
    """Stands in for `Sandbox`: each run sleeps `delay` s and answers `reply`; it records the
    frames of every session and the most runs at once."""

    def __init__(
        self, delay: float, reply: ExecResult | None = None, gate: threading.Event | None = None
    ) -> None:
        self.delay = delay
        self.gate = gate  # when given, each run waits for it (at most a minute) instead
        self.reply = reply or ExecResult(ok=True, value="1")
        self.sessions: list[dict[str, pd.DataFrame]] = []
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def session(self, frames: Mapping[str, pd.DataFrame]) -> SleepySandbox:
        self.sessions.append(dict(frames))
        return self

    def __enter__(self) -> SleepySandbox:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def run(self, code: str, timeout: float) -> ExecResult:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        if self.gate is not None:
            self.gate.wait(60)
        else:
            time.sleep(self.delay)
        with self._lock:
            self.running -= 1
        return self.reply

    def close(self) -> None:
        return None


def open_with(bed: Bed, tmp: Path, sandbox: SleepySandbox, **limits: int) -> McpService:
    config = ServeConfig(store=bed.store, trace_dir=tmp / "traces", token=TOKEN,
                         limits=Limits(**limits))  # fmt: skip
    state = ServerState(config)
    tools = TableTools(state, runner=CodeRunner(lambda: cast(Sandbox, sandbox)))
    return McpService(state, tools, build_server(state, tools))


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The tables converted to DataFrames (their titles or first cells), in order."""
    seen: list[str] = []
    convert = Table.to_dataframe

    def spy(self: Table, *args: Any, **kwargs: Any) -> pd.DataFrame:
        seen.append(self.content_hash)
        return convert(self, *args, **kwargs)

    monkeypatch.setattr(Table, "to_dataframe", spy)
    yield seen


def pandas_call(table_id: str, timeout: float = 20) -> dict[str, Any]:
    return {"code": "1", "tables": {"t": table_id}, "timeout": timeout}


def test_reads_answer_while_run_pandas_floods(bed: Bed, tmp_path: Path) -> None:
    """44 calls from 44 sessions (more than anyio's 40 shared worker threads, which the calls
    used to hold) are held inside the sandbox: 11 running, 33 waiting for a worker. While they
    are all still held, list_tables from another session answers 8 times; a read queued behind
    the flood could not answer before the flood is released, so it would fail at its bound
    (no timing threshold: the old bound, 0.4 s per read, failed once in a full run at load 7
    with one read of 2.5 s). Released, every call answers, at most `pandas_workers` at once."""
    gate = threading.Event()
    sandbox = SleepySandbox(delay=0, gate=gate)
    # in memory every client is one "local" session: the per-session limit is lifted here
    service = open_with(bed, tmp_path, sandbox, pandas_workers=11, pandas_per_session=44)
    big = bed.ids["big.csv"]
    results: list[Any] = []
    held: list[int] = []

    async def flood_from_one_session() -> None:
        async with Client(service.server) as client:  # in memory: one call at a time
            await _collect(client, results, pandas_call(big))

    async def main() -> None:
        async with Client(service.server) as reader:
            await reader.call_tool("list_tables", {"limit": 5})  # warm: relations cached
            async with anyio.create_task_group() as group:
                for _ in range(44):
                    group.start_soon(flood_from_one_session)
                with anyio.fail_after(60):
                    while sandbox.running < 11:  # every worker is busy, the rest wait
                        await anyio.sleep(0.01)
                for _ in range(8):
                    with anyio.fail_after(60):
                        read = await reader.call_tool("list_tables", {"limit": 5})
                    assert not read.is_error and read.structured_content["total"] == bed.count
                    held.append(44 - len(results))
                gate.set()

    try:
        anyio.run(main)
    finally:
        gate.set()
        service.close()
    assert held == [44] * 8  # every read answered while no call of the flood had ended
    assert len(results) == 44 and not [r for r in results if r.is_error]
    assert sandbox.most == 11  # the pool was full, never fuller


async def _collect(client: Client, into: list[Any], arguments: dict[str, Any]) -> None:
    into.append(await client.call_tool("run_pandas", arguments))


def test_a_client_over_its_limit_is_refused_at_once(bed: Bed, tmp_path: Path) -> None:
    """Over HTTP (stateless: a client is its address), three calls at once: one runs, one
    waits, the third is refused naming the limit; the two others finish."""
    sandbox = SleepySandbox(delay=0.5)
    service = open_with(bed, tmp_path, sandbox, pandas_workers=1, pandas_per_session=2)
    lakes = bed.ids["lakes.html"]
    results: list[Any] = []

    async def main(server: HttpServer) -> None:
        async with server.client() as client, anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(lambda: _collect(client, results, pandas_call(lakes)))
            with anyio.fail_after(0.45):  # before the first call's run ends
                while not results:
                    await anyio.sleep(0.02)

    try:
        with running_http(service) as (url, _):
            anyio.run(main, HttpServer(url, service))
    finally:
        service.close()
    refused, *done = results
    assert refused.is_error, refused.content[0].text
    assert "already has 2 run_pandas calls running or waiting" in refused.content[0].text
    assert "pandas_per_session = 2" in refused.content[0].text
    assert [r.is_error for r in done] == [False, False] and len(sandbox.sessions) == 2


def test_waiting_for_a_worker_spends_the_calls_timeout(bed: Bed, tmp_path: Path) -> None:
    """Another session is not refused by the first one's calls; it waits behind them, and
    its 1 s timeout runs out before a worker is free: a TimeoutError, the code never ran."""
    sandbox = SleepySandbox(delay=0.7)
    service = open_with(bed, tmp_path, sandbox, pandas_workers=1, pandas_per_session=2)
    tables = {"t": bed.ids["lakes.html"]}
    runs: dict[str, Any] = {}

    async def call(session: str, name: str, timeout: float) -> None:
        runs[name] = await service.tools.run_pandas_in_pool("1", tables, timeout, session=session)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(call, "a", "a1", 20)
            group.start_soon(call, "a", "a2", 20)
            await anyio.sleep(0.1)  # a1 runs, a2 waits
            group.start_soon(call, "b", "late", 1)
            await anyio.sleep(0.05)
            assert service.tools.pool.calls("a") == 2 and service.tools.pool.calls("b") == 1

    try:
        anyio.run(main)
    finally:
        service.close()
    assert runs["a1"].result.ok and runs["a2"].result.ok
    late = runs["late"].result
    assert not late.ok and late.seconds >= 1 and late.error is not None
    assert late.error.startswith("TimeoutError: waiting for one of the server's run_pandas workers")
    assert len(sandbox.sessions) == 2  # the late call never reached the sandbox
    assert service.tools.pool.calls("a") == service.tools.pool.calls("b") == 0


def test_a_table_bound_under_many_names_is_converted_once(
    bed: Bed, tmp_path: Path, conversions: list[str]
) -> None:
    sandbox = SleepySandbox(delay=0)
    service = open_with(bed, tmp_path, sandbox, pandas_cells=3000)  # big.csv: 1,000 × 3
    big, lakes = bed.ids["big.csv"], bed.ids["lakes.html"]
    try:
        run = service.tools.run_pandas("1", {f"t{i}": big for i in range(8)}, 20)
        assert run.result.ok and len(run.frames) == 8
        assert len(conversions) == 1
        frames = sandbox.sessions[-1]
        assert len({id(f) for f in frames.values()}) == 1  # one DataFrame under 8 names
        with pytest.raises(TooManyCells, match=r"at most 3,000 cells .*pandas_cells.* 3,0\d\d"):
            service.tools.run_pandas("1", {"a": big, "b": lakes}, 20)
        assert len(conversions) == 1  # refused before any table was loaded
    finally:
        service.close()
    encoded, _ = encode_frames({"a": frames["t0"], "b": frames["t1"]})
    assert encoded[0][1] is encoded[1][1]  # encoded once for the child too


def test_converting_the_tables_spends_the_calls_timeout(
    bed: Bed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = SleepySandbox(delay=0)
    service = open_with(bed, tmp_path, sandbox)
    convert = Table.to_dataframe

    def slow(self: Table, *args: Any, **kwargs: Any) -> pd.DataFrame:
        time.sleep(0.3)
        return convert(self, *args, **kwargs)

    monkeypatch.setattr(Table, "to_dataframe", slow)
    tables = {"a": bed.ids["big.csv"], "b": bed.ids["lakes.html"]}
    try:
        # 0.8 s of the 1 s timeout already spent (as if waiting for a worker)
        run = service.tools.run_pandas("1", tables, 1, started=time.monotonic() - 0.8)
    finally:
        service.close()
    assert not run.result.ok and run.result.seconds >= 1
    assert run.result.error is not None
    assert run.result.error.startswith("TimeoutError: binding the tables took")
    assert "timeout (1 s)" in run.result.error
    assert sandbox.sessions == []  # the code never ran


def test_the_childs_output_names_no_server_folder(bed: Bed, tmp_path: Path) -> None:
    source = Path(tablequest.__file__).resolve().parents[1]
    session = Path(tempfile.gettempdir()) / "tablequest-sandbox-x1" / "work"
    traceback = (
        f'File "{source}/tablequest/sandbox/_audit.py", line 331, in hook\n'
        f'File "{sys.prefix}/lib/python3/site-packages/pandas/core/frame.py"\n{session}'
    )
    reply = ExecResult(ok=False, stdout=traceback, value=f"{bed.store.parent}/store.duckdb",
                       error=f"FileNotFoundError: {sys.base_prefix}/lib/x.py")  # fmt: skip
    service = open_with(bed, tmp_path, SleepySandbox(delay=0, reply=reply))
    try:
        run = service.tools.run_pandas("1", {"t": bed.ids["lakes.html"]}, 20)
    finally:
        service.close()
    shown = "\n".join([run.result.stdout, run.result.value or "", run.result.error or ""])
    for folder in (source, sys.prefix, sys.base_prefix, tempfile.gettempdir(), bed.store.parent):
        assert f"{folder}/" not in shown, folder
    assert "tablequest/sandbox/_audit.py" in shown and "store.duckdb" in shown
