"""Reading files for ingest: one file into table rows, many files in worker processes.

Files are read and serialized in worker processes (spawned, so no DuckDB state is forked)
when there are many (`PARALLEL_THRESHOLD`); the parent process only writes (corpus.ingest).

Stopping (docs/reliability.md): workers never outlive the ingest. From its initializer each
worker asks the kernel for SIGKILL when its parent dies (Linux `prctl(PR_SET_PDEATHSIG)`) and
polls its parent pid every second (any POSIX); a worker still starting up (importing) when
its parent is killed exits as soon as it has started. Workers are spawned with SIGINT
blocked and then ignore SIGINT and SIGTERM, so Ctrl-C or a SIGTERM sent to the whole process
group is the parent's to handle. The pool's resource tracker exits once they have all closed
its pipe. A `stop` event (`StopSignals` turns SIGINT/SIGTERM into one) ends the ingest at the
next file, also while waiting on workers: the files read so far are committed as one last
group, the indexes are left for the next run, and the report says `stopped`. A failure of
the store itself (disk full, I/O error) raises `IngestAborted` with the report of what was
committed.

Stopping workers early is cooperative (measured defect): a worker killed while it sends a
chunk's result leaves half a message in the pool's result pipe, and the pool's manager
thread then blocks in `recv` for good, so the ingest hung at shutdown (seen under load with
a full disk). So the parent sets a shared event; a worker checks it before each file and
before returning, and then returns nothing; the parent waits up to `_STOP_GRACE` seconds for
the chunks in flight and SIGKILLs only a worker still inside one file after that.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from tablequest.corpus.storage.streaming import announce_big, stream_spec
from tablequest.corpus.storage.tablerows import table_row
from tablequest.table import ReadBudget, UnreadableTable, read_tables_report

PARALLEL_THRESHOLD = 64  # fewer files than this are read in-process (no pool start-up)
MAX_FILE_BYTES = 2 * 1024**3
_POLL_SECONDS = 0.2  # how often a wait for workers checks `stop`
_STOP_GRACE = 5.0  # seconds workers get to finish their current file when stopped early
_worker_stop: Any = None  # in a worker: the parent's "stop reading" event


# A worker's answer for one file: ("unchanged", None) | ("failed", reason)
# | ("stored", (rows, the reader's warnings)) | ("stream", StreamSpec)
Outcome = tuple[str, Any]


def read_file(
    path: str, known_hash: str | None, budget: ReadBudget | None = None, *, stream: bool = True
) -> Outcome:
    """Read one file into table rows (runs in worker processes), within `budget`
    (default: `ReadBudget.from_env()`); with `stream`, a big plain CSV/TSV is only checked
    and comes back as ("stream", StreamSpec) for the writer to load (`streaming.py`)."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            return ("failed", f"file is {size / 1024**3:.1f} GB, over the 2 GB limit")
        data = Path(path).read_bytes()
    except OSError as exc:
        return ("failed", f"cannot read file: {exc.strerror or exc}")
    digest = hashlib.sha256(data).hexdigest()
    if digest == known_hash:
        return ("unchanged", None)
    if stream:
        spec = stream_spec(path, data, digest, budget)
        if spec is not None:
            return ("stream", spec)
    try:
        found = read_tables_report(path, data=data, budget=budget)
    except UnreadableTable as exc:
        return ("failed", exc.reason)
    except Exception as exc:  # a reader bug must not stop the ingest; name it
        return ("failed", f"unexpected {type(exc).__name__}: {exc}")
    tables, warnings = found.tables, found.warnings
    if not tables:
        return ("failed", "no table found")
    try:
        rows = [table_row(t, path=path, file_hash=digest, idx=i) for i, t in enumerate(tables)]
    except Exception as exc:
        return ("failed", f"cannot serialize table: {type(exc).__name__}: {exc}")
    return ("stored", (rows, warnings))


def _read_many(
    args: Sequence[tuple[str, str | None]], budget: ReadBudget | None = None
) -> list[Outcome]:
    """Read a chunk; in a worker told to stop, return nothing (see "Stopping workers")."""
    out = []
    for path, digest in args:
        if _worker_stop is not None and _worker_stop.is_set():
            return []
        out.append(read_file(path, digest, budget))
    if _worker_stop is not None and _worker_stop.is_set():
        return []
    return out


def outcomes(
    todo: list[tuple[str, str | None]],
    workers: int | None,
    stopping: Callable[[], bool],
    budget: ReadBudget | None = None,
) -> Generator[Outcome, None, None]:
    """One outcome per file of `todo`, in order, until `stopping()`; closing it (or
    stopping) shuts the pool down."""
    n_workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    main = sys.modules.get("__main__")
    spawnable = getattr(main, "__file__", None) is not None or getattr(main, "__spec__", None)
    if len(todo) < PARALLEL_THRESHOLD or n_workers <= 1 or not spawnable:
        for key, h in todo:
            announce_big(key)  # read here: a big file names itself (`progress_stages`)
            yield read_file(key, h, budget)
        return
    chunk = 16
    batches = [todo[i : i + chunk] for i in range(0, len(todo), chunk)]
    done = 0
    pool = None
    futures = []
    context = get_context("spawn")
    stop_workers = context.Event()  # before the pool: this too starts the resource tracker
    # A worker killed while starting (SIGTERM to the whole process group) breaks the pool
    # during submit: then nothing was submitted and the batches are read below, unless
    # the ingest is stopping.
    with contextlib.suppress(OSError, BrokenProcessPool):
        # Created first: this starts the resource tracker, which unblocks SIGINT when done.
        pool = ProcessPoolExecutor(
            max_workers=n_workers,
            mp_context=context,
            initializer=_worker_start,
            initargs=(os.getpid(), stop_workers),
        )
        with _sigint_blocked():  # submit spawns the workers; they start with SIGINT blocked
            futures = [pool.submit(_read_many, batch, budget) for batch in batches]
    if pool is not None:
        try:
            for future in futures:
                while not future.done() and not stopping():
                    wait([future], timeout=_POLL_SECONDS)
                if stopping():
                    return
                results = future.result()
                done += 1
                yield from results
        except (BrokenProcessPool, OSError):
            pass  # workers cannot start here (e.g. __main__ is stdin): read the rest below
        finally:
            if done < len(batches):
                _stop_pool(pool, futures, stop_workers)
            pool.shutdown(wait=True, cancel_futures=True)
    for batch in batches[done:]:
        if stopping():
            return
        yield from _read_many(batch, budget)


def _stop_pool(pool: ProcessPoolExecutor, futures: list[Any], stop_workers: Any) -> None:
    """Stop the workers before their chunks are done without killing one mid-send: tell them
    to stop, cancel what has not started, wait for the chunks in flight, then SIGKILL only a
    worker still reading one file after `_STOP_GRACE` seconds."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    stop_workers.set()
    for future in futures:
        future.cancel()
    wait([f for f in futures if not f.cancelled()], timeout=_STOP_GRACE)
    if all(f.done() for f in futures):
        return
    for process in processes:
        with contextlib.suppress(OSError, ValueError):
            process.kill()


_PR_SET_PDEATHSIG = 1


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT while workers are spawned: the mask survives exec, so a Ctrl-C cannot
    raise KeyboardInterrupt in a worker still importing; the parent gets it on unblock."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _worker_start(parent: int, stop: Any) -> None:
    """Pool initializer: ignore Ctrl-C and SIGTERM (the parent's to handle; it stops the
    workers with `stop`), and die with the parent."""
    global _worker_stop
    _worker_stop = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    """Fallback where there is no PR_SET_PDEATHSIG: exit once re-parented."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
