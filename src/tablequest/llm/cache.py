"""`CachedLLM`: an on-disk cache of completions (SQLite, one file, WAL mode).

Key: sha256 of the canonical JSON of (backend, URL, model, messages, temperature, max_tokens,
n, logprobs, stop, response_format). Choices:
- Only deterministic calls are cached by default: temperature 0. Pass ``all_temperatures=True``
  to also cache sampled calls (then a repeated call returns the same samples).
- Only successes are stored: errors propagate and are never cached, and neither is a result
  whose completions are all empty text (a later attempt may do better).
- A hit returns the stored completions with ``cached=True`` and ``latency_s=0``.
- A reply the caller could not parse is forgotten (issue 39): every completion this wrapper
  returns carries its entry's key (`Completion.cache_key`), and the caller that fails to
  parse it says so with `LLM.discard(reply)` (`ask_with_repair` and `ask_json` do, on every
  `ParseError`, and so does each method's own reply parser: docs/llm.md, "Cache"); the
  entry is deleted, so the next identical call reaches the model — a broken server's
  garbage is not served again once the server is fixed. The seam is the caller's report
  rather than a parse inside the cache, because only the caller knows what format it
  expected.
- The file is ``llm-cache.sqlite`` in $TABLEQUEST_CACHE_DIR, else the user cache directory.
- If the file cannot be opened or written, the cache says so once on stderr and is bypassed.
- Processes may share the file: SQLite's WAL mode lets readers and one writer work at once
  and the 10 s busy timeout queues writers (tests run many processes on one file). A
  "database is locked" past that timeout (a machine so loaded that writers queue longer) is
  retried for up to `BUSY_RETRY_S` seconds more and then taken as one miss or one unsaved
  entry; only other errors disable the cache. Ray
  workers share one file through a cache actor instead (`tablequest.scale.batch`), which is
  also right when they run on other machines (SQLite over a network file system is not).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import platformdirs

from tablequest.errors import RunError
from tablequest.llm.base import LLM, Completion, Message, check_chat_args, normalize_stop
from tablequest.settings import StoreSettings, from_env

CACHE_FILE = "llm-cache.sqlite"
BUSY_RETRY_S = 60.0
"""Seconds a locked cache file is retried before an operation is given up (not the cache)."""
CACHE_DIR_ENV = "TABLEQUEST_CACHE_DIR"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0,
    value TEXT NOT NULL
)
"""


def default_cache_dir(store: StoreSettings | None = None) -> Path:
    """`store.cache_dir` (default: the environment's, $TABLEQUEST_CACHE_DIR), else the
    platform's user cache dir for tablequest."""
    chosen = (store if store is not None else from_env(StoreSettings)).cache_dir
    return chosen or platformdirs.user_cache_path("tablequest")


def cache_path(cache_dir: str | Path | None = None) -> Path:
    """Path of the cache file in `cache_dir` (default: `default_cache_dir()`)."""
    return Path(cache_dir or default_cache_dir()) / CACHE_FILE


def cache_key(backend: dict[str, str], messages: Sequence[Message], params: dict[str, Any]) -> str:
    """Hex sha256 of the canonical JSON of the backend identity, messages and parameters."""
    payload = {
        "backend": {k: backend.get(k, "") for k in ("backend", "url", "model")},
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": params,
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class CacheStore(Protocol):
    """Where `CachedLLM` keeps completions (the SQLite file, or a proxy to a shared one)."""

    def get(self, key: str) -> list[dict[str, Any]] | None: ...

    def put(self, key: str, backend: dict[str, str], value: list[dict[str, Any]]) -> None: ...

    def delete(self, key: str) -> None: ...

    def close(self) -> None: ...


def _is_locked(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


class CacheFile:
    """Thread-safe access to one SQLite file; disables itself after the first disk error."""

    def __init__(self, path: Path):
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self.disabled = False

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_SCHEMA)
                conn.commit()
            except BaseException:
                conn.close()  # a later call connects afresh (e.g. after a lock is released)
                raise
            self._conn = conn
        return self._conn

    def _fail(self, exc: BaseException) -> None:
        if not self.disabled:
            self.disabled = True
            print(
                f"tablequest: LLM cache at {str(self.path)!r} is unusable ({exc}); "
                f"continuing without it (set {CACHE_DIR_ENV} to a writable directory)",
                file=sys.stderr,
            )

    def _busy(self, exc: BaseException, started: float) -> bool:
        """Whether `exc` is a lock held by another process and there is time to wait more."""
        locked = _is_locked(exc)
        if locked and self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.rollback()
        return locked and time.monotonic() - started < BUSY_RETRY_S

    def get(self, key: str) -> list[dict[str, Any]] | None:
        if self.disabled:
            return None
        with self._lock:
            started = time.monotonic()
            while True:
                try:
                    return self._get(key)
                except (sqlite3.Error, OSError, ValueError) as exc:
                    if self._busy(exc, started):
                        time.sleep(0.05)
                        continue
                    if not _is_locked(exc):
                        self._fail(exc)
                    return None

    def _get(self, key: str) -> list[dict[str, Any]] | None:
        conn = self._connect()
        row = conn.execute("SELECT value FROM completions WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        conn.execute("UPDATE completions SET hits = hits + 1 WHERE key = ?", (key,))
        conn.commit()
        value: list[dict[str, Any]] = json.loads(row[0])
        return value

    def put(self, key: str, backend: dict[str, str], value: list[dict[str, Any]]) -> None:
        row = (key, backend.get("url", ""), backend.get("model", ""), time.time(),
               json.dumps(value, ensure_ascii=False))  # fmt: skip
        self._write(
            "INSERT OR REPLACE INTO completions (key, backend, model, created, hits, value)"
            " VALUES (?, ?, ?, ?, 0, ?)",
            row,
        )

    def delete(self, key: str) -> None:
        """Forget the entry `key` (none: nothing happens)."""
        self._write("DELETE FROM completions WHERE key = ?", (key,))

    def _write(self, sql: str, row: tuple[Any, ...]) -> None:
        """Run one writing statement, waiting out another process's lock (as `get`)."""
        if self.disabled:
            return
        with self._lock:
            started = time.monotonic()
            while True:
                try:
                    conn = self._connect()
                    conn.execute(sql, row)
                    conn.commit()
                    return
                except (sqlite3.Error, OSError) as exc:
                    if self._busy(exc, started):
                        time.sleep(0.05)
                        continue
                    if not _is_locked(exc):
                        self._fail(exc)
                    return

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class CachedLLM(LLM):
    """Wrap `inner` so identical deterministic calls are answered from disk.

    Args:
        inner: The model to call on a miss.
        cache_dir: Directory of the cache file (default: `default_cache_dir()`).
        all_temperatures: Cache calls at any temperature, not only at 0.
        store: Keep completions there instead of in the file of `cache_dir`.

    Attributes:
        hits: Calls answered from the cache by this wrapper.
        misses: Cacheable calls that went to `inner`.
        discarded: Entries forgotten because their reply could not be used (`discard`).
    """

    def __init__(
        self,
        inner: LLM,
        cache_dir: str | Path | None = None,
        *,
        all_temperatures: bool = False,
        store: CacheStore | None = None,
    ):
        self.inner = inner
        self.path = cache_path(cache_dir)
        self.all_temperatures = all_temperatures
        self._store: CacheStore = store if store is not None else CacheFile(self.path)
        self.hits = 0
        self.misses = 0
        self.discarded = 0

    def describe(self) -> dict[str, str]:
        return self.inner.describe()

    def context_length(self) -> int | None:
        return self.inner.context_length()

    def close(self) -> None:
        self._store.close()
        self.inner.close()

    def discard(self, reply: Completion) -> None:
        """Forget the entry holding `reply` (module doc; with n > 1, the entry of all n):
        the next identical call goes to the model."""
        if reply.cache_key is not None:
            self._store.delete(reply.cache_key)
            self.discarded += 1
        self.inner.discard(reply)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        n: int = 1,
        logprobs: bool = False,
        stop: str | Sequence[str] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> list[Completion]:
        msgs = check_chat_args(messages, max_tokens=max_tokens, n=n)
        params: dict[str, Any] = {
            "temperature": float(temperature),
            "max_tokens": max_tokens,
            "n": n,
            "logprobs": logprobs,
            "stop": normalize_stop(stop),
            "response_format": response_format,
        }
        cacheable = self.all_temperatures or temperature == 0
        if not cacheable:
            return self.inner.chat(msgs, **params)
        backend = self.describe()
        key = cache_key(backend, msgs, params)
        stored = self._store.get(key)
        if stored is not None:
            try:
                completions = [Completion.from_dict(d) for d in stored]
            except (KeyError, TypeError, ValueError):
                completions = []
            if len(completions) == n:
                self.hits += 1
                return [replace(c, cached=True, latency_s=0.0, cache_key=key) for c in completions]
        self.misses += 1
        completions = self.inner.chat(msgs, **params)
        if completions and any(c.text for c in completions):
            self._store.put(key, backend, [replace(c, cached=False).to_dict() for c in completions])
            return [replace(c, cache_key=key) for c in completions]
        return completions


class CacheError(RunError, RuntimeError):
    """The cache file exists but cannot be read or cleared (corrupt, locked, no permission)."""

    code = "cache"

    def __init__(self, path: Path, reason: str):
        super().__init__(f"cannot use the LLM cache {str(path)!r}: {reason}")
        self.path = path
        self.reason = reason


def _files(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def cache_stats(cache_dir: str | Path | None = None) -> dict[str, Any]:
    """Entries, bytes on disk, total hits and path of the cache (does not create it)."""
    path = cache_path(cache_dir)
    stats: dict[str, Any] = {"path": str(path), "entries": 0, "bytes": 0, "hits": 0}
    if not path.exists():
        return stats
    stats["bytes"] = sum(p.stat().st_size for p in _files(path))
    try:
        conn = sqlite3.connect(path, timeout=10)
        try:
            conn.execute(_SCHEMA)
            query = "SELECT COUNT(*), COALESCE(SUM(hits), 0) FROM completions"
            entries, hits = conn.execute(query).fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise CacheError(path, str(exc)) from exc
    stats["entries"], stats["hits"] = int(entries), int(hits)
    return stats


def cache_clear(cache_dir: str | Path | None = None) -> int:
    """Delete every cached completion; return how many entries were removed."""
    path = cache_path(cache_dir)
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(path, timeout=10)
        try:
            conn.execute(_SCHEMA)
            removed = int(conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0])
            conn.execute("DELETE FROM completions")
            conn.commit()
            conn.execute("VACUUM")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise CacheError(path, str(exc)) from exc
    return removed
