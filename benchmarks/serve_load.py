"""`tablequest serve` under load: search latency with 32 clients, 50 concurrent ask streams.

    python benchmarks/serve_load.py /work/shared/data/wtq [--clients 32] [--requests 3000]
        [--asks 50] [--ask-latency 1.0] [--store WTQ.duckdb] [--json]

Ingests every WikiTableQuestions CSV table (2,108) into a temporary store, starts the real
server (`tablequest serve`, its own process) with the stub LLM server as its model (every
reply delayed by `--ask-latency` seconds, LLM cache off), then measures with a raw asyncio
HTTP/1.1 client (keep-alive, so the client's own cost stays small on 2 cores). `--store`
serves a copy of a store an earlier run ingested (the same tables; repeated runs skip the
ingest) instead:

1. ``GET /v1/search`` (grep, matched rows) with `--clients` concurrent clients, each request a
   different WTQ test question, after a warm-up with training questions: p50, p99, req/s,
   errors.
2. `--asks` concurrent ``POST /v1/ask`` streams (TableSeek, 3 LLM calls each) while the same
   search load runs: every stream must end with its result; the search p99 during the asks;
   the server's RSS before, after this round and after a second round.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import multiprocessing
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tablequest.corpus import Store, ingest, question_patterns
from tablequest.llm.stub import StubServer


def questions(root: Path, name: str) -> list[str]:
    with (root / "data" / f"{name}.tsv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[1] for r in rows]


def slow_reply(latency: float) -> Any:
    def reply(request: dict[str, Any]) -> str:
        time.sleep(latency)
        prompt = request["messages"][-1]["content"]
        if "Candidate tables" in prompt:
            return json.dumps({"action": "select", "selected_tables": ["Table_0"]})
        if "grep patterns" in prompt:
            words = [p[2:-2] for p in question_patterns(prompt.split("Question:")[-1])][:4]
            return json.dumps({"patterns": words or ["year"]})
        return json.dumps({"status": "answered", "answer": "1", "evidence": []})

    return reply


class Client:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Authorization: Bearer {self.token}\r\n"
        )
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + (body or b""))
        await self.writer.drain()
        status = int((await self.reader.readline()).split()[1])
        headers: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode("latin-1").partition(":")
            headers[key.strip().lower()] = value.strip()
        if "content-length" in headers:
            return status, await self.reader.readexactly(int(headers["content-length"]))
        data = b""
        while True:  # chunked (the event streams)
            size = int((await self.reader.readline()).strip(), 16)
            chunk = await self.reader.readexactly(size + 2)
            if size == 0:
                return status, data
            data += chunk[:-2]

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


async def search_load(
    port: int, token: str, qs: list[str], clients: int, *, until: asyncio.Event | None = None
) -> dict[str, Any]:
    """`clients` loops over `qs` (each question once); with `until`, loop until it is set."""
    latencies: list[float] = []
    errors = 0
    queue = list(reversed(qs))

    async def worker() -> None:
        nonlocal errors
        client = Client(port, token)
        try:
            while queue and not (until is not None and until.is_set()):
                q = queue.pop()
                if until is not None:
                    queue.insert(0, q)
                started = time.perf_counter()
                try:
                    status, _ = await client.request(
                        "GET", "/v1/search?k=5&q=" + urllib.parse.quote(q)
                    )
                except (OSError, ValueError, asyncio.IncompleteReadError):
                    status, client = 0, Client(port, token)
                latencies.append(time.perf_counter() - started)
                errors += status != 200
        finally:
            await client.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    wall = time.perf_counter() - started
    ms = sorted(x * 1000 for x in latencies)
    return {
        "requests": len(ms),
        "errors": errors,
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p99_ms": round(ms[int(0.99 * (len(ms) - 1))], 1) if ms else None,
        "max_ms": round(ms[-1], 1) if ms else None,
        "req_per_s": round(len(ms) / wall, 1),
    }


async def one_ask(port: int, token: str, question: str) -> bool:
    client = Client(port, token)
    try:
        body = json.dumps({"question": question, "method": "seek"}).encode()
        status, data = await client.request("POST", "/v1/ask", body)
        return status == 200 and b"event: result" in data and b'"answer"' in data
    finally:
        await client.close()


async def asks_round(port: int, token: str, qs: list[str], n: int, tag: str) -> dict[str, Any]:
    started = time.perf_counter()
    results = await asyncio.gather(
        *(one_ask(port, token, f"{q} ({tag}{i})") for i, q in enumerate(qs[:n]))
    )
    return {
        "asks": n,
        "completed": sum(results),
        "seconds": round(time.perf_counter() - started, 1),
    }


def _asks_in_child(
    port: int, token: str, qs: list[str], n: int, tag: str, go: Any, out: Any
) -> None:
    go.wait()
    out.put(asyncio.run(asks_round(port, token, qs, n, tag)))


async def asks_with_search(port: int, token: str, ask_qs: list[str], search_qs: list[str],
                           n: int, clients: int, tag: str) -> dict[str, Any]:  # fmt: skip
    """The ask streams come from another process, started (and its imports done) before the
    search load: their events (megabytes of trace JSON) would otherwise be parsed on the search
    clients' event loop, and its start-up would take the clients' CPU."""
    ctx = multiprocessing.get_context("spawn")
    results, go = ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_asks_in_child, args=(port, token, ask_qs, n, tag, go, results))
    child.start()
    await asyncio.sleep(5.0)  # its imports
    stop = asyncio.Event()
    load = asyncio.create_task(search_load(port, token, search_qs, clients, until=stop))
    await asyncio.sleep(0.5)  # the search load is running before the asks start
    go.set()
    asks = await asyncio.to_thread(results.get)
    await asyncio.to_thread(child.join)
    stop.set()
    return {**asks, "search_during": await load}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (load-independent cost)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(pid: int, run: Any) -> dict[str, Any]:
    """`run()`'s figures plus the server's CPU ms per request and the machine's load."""
    before = cpu_seconds(pid)
    out: dict[str, Any] = run()
    stats = out.get("search_during", out)
    stats["server_cpu_ms_per_request"] = round(
        (cpu_seconds(pid) - before) * 1000 / max(1, stats["requests"]), 2
    )
    stats["load_avg_1m"] = os.getloadavg()[0]
    return out


def _serve_stub(latency: float, urls: Any, stop: Any) -> None:
    with StubServer(slow_reply(latency)) as stub:
        urls.put(stub.url)
        stop.wait()


@contextlib.contextmanager
def stub_process(latency: float) -> Iterator[str]:
    """The stub LLM server in its own process: its 50 request threads must not share the
    search clients' interpreter lock (they did at first, and stalled the clients 1.5 s)."""
    ctx = multiprocessing.get_context("spawn")
    urls, stop = ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_serve_stub, args=(latency, urls, stop), daemon=True)
    child.start()
    try:
        yield str(urls.get(timeout=120))
    finally:
        stop.set()
        child.join(timeout=10)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    store: Path, tmp: Path, llm_url: str, port: int
) -> tuple[subprocess.Popen[bytes], str]:
    token = "bench-token-" + os.urandom(12).hex()
    token_file = tmp / "token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    exe = Path(sys.executable).with_name("tablequest")
    cmd = [str(exe), "serve", "--store", str(store), "--port", str(port), "--token-file",
           str(token_file), "--llm-url", llm_url, "--model", "stub", "--no-cache",
           "--trace-dir", str(tmp / "traces"), "--max-asks", "64",
           "--llm-concurrency", "64"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=(tmp / "server.log").open("wb"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, token
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the server did not start; see {tmp / 'server.log'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("wtq", type=Path)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--asks", type=int, default=50)
    parser.add_argument("--ask-latency", type=float, default=1.0)
    parser.add_argument("--store", type=Path, help="serve a copy of this ingested store")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tq-serve-load-"))
    store = tmp / "wtq.duckdb"
    started = time.perf_counter()
    if args.store is not None:
        shutil.copyfile(args.store, store)
        with Store(store, read_only=True) as st:
            tables = len(st)
    else:
        with Store(store) as st:
            tables = ingest(st, sorted((args.wtq / "csv").glob("*/*.csv"))).tables_stored
    ingest_s = round(time.perf_counter() - started, 1)
    test_qs = questions(args.wtq, "pristine-unseen-tables")
    train_qs = questions(args.wtq, "training")
    out: dict[str, Any] = {"tables": tables, "ingest_s": ingest_s}
    with stub_process(args.ask_latency) as stub_url:
        port = free_port()
        proc, token = start_server(store, tmp, stub_url, port)
        try:
            time.sleep(2.0)  # the server loads the grep index in the background at start
            pid, n = proc.pid, args.clients
            out["warmup"] = measured(
                pid, lambda: asyncio.run(search_load(port, token, train_qs[:500], n))
            )
            asyncio.run(asks_round(port, token, train_qs[500:], 1, "w"))  # first-ask start-up
            out["search"] = measured(
                pid, lambda: asyncio.run(search_load(port, token, test_qs[: args.requests], n))
            )
            out["rss_before_mb"] = rss_mb(proc.pid)
            out["asks_1"] = asyncio.run(asks_with_search(
                port, token, train_qs[1000:], test_qs, args.asks, args.clients, "a"))  # fmt: skip
            out["rss_after_1_mb"] = rss_mb(proc.pid)
            out["asks_2"] = asyncio.run(asks_with_search(
                port, token, train_qs[2000:], test_qs, args.asks, args.clients, "b"))  # fmt: skip
            out["rss_after_2_mb"] = rss_mb(proc.pid)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    if args.json:
        print(json.dumps(out))
        return
    how = "copied" if args.store is not None else "ingested"
    print(f"{out['tables']} tables {how} in {out['ingest_s']} s")
    for key in ("warmup", "search"):
        s = out[key]
        print(f"{key}: {s['requests']} GET /v1/search, {args.clients} clients: "
              f"p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, {s['req_per_s']} req/s, "
              f"{s['errors']} errors; server CPU {s['server_cpu_ms_per_request']} ms/request, "
              f"load average {s['load_avg_1m']:.1f}")  # fmt: skip
    for key in ("asks_1", "asks_2"):
        a, s = out[key], out[key]["search_during"]
        print(f"{key}: {a['completed']}/{a['asks']} ask streams completed in {a['seconds']} s; "
              f"search meanwhile: p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, "
              f"{s['req_per_s']} req/s, {s['errors']} errors")  # fmt: skip
    print(f"server RSS: {out['rss_before_mb']} MB before the asks, {out['rss_after_1_mb']} MB "
          f"after round 1, {out['rss_after_2_mb']} MB after round 2")  # fmt: skip


if __name__ == "__main__":
    main()
