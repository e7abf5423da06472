"""What a server takes before it starts: its listening sockets and, for a server that writes
its store, the store's writer lock (`claim`).

Both are taken before the token is created or printed and before the store is opened, so a
start that cannot serve fails with one line (exit 1) and leaves nothing behind.

Sockets: bound here and handed to uvicorn (``sockets=``), so the port checked is the port
served (no race between a check and uvicorn's own bind). uvicorn's own bind failure ran after
the app's startup and exited with its status 3; in ``serve`` the index-warming thread was
then still reading DuckDB when the interpreter finalized, and the thread's forced unwinding
through DuckDB's C++ frames aborted the process (SIGABRT, "FATAL: exception not rethrown").

Writer lock: ``tablequest serve`` writes its store (uploads and removals replace the file by
a renamed copy, `tablequest.service.stores`), so two of them on one store would replace it
under each other, each serving a stale table list and losing the other's uploads. A writer
holds an exclusive ``flock`` on ``STORE.lock`` (next to the store) for its life; a second
writer is refused (`StoreLocked`, exit 1) naming the store and the holder's PID. The kernel
releases the lock when the process dies, however it dies; the file itself is left in place
(removing it would let a third process lock a file the second one no longer sees).
``tablequest mcp`` only reads, and takes no lock: several MCP servers and a ``serve`` may read
one store at once (docs/mcp.md).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from tablequest.errors import RunError

__all__ = ["CannotListen", "Claim", "bind_sockets", "claim", "lock_path", "lock_store"]

log = logging.getLogger("tablequest.serve")


class CannotListen(RunError):
    """The server cannot listen on its address (in use, not this machine's, not allowed)."""

    code = "cannot_listen"


@dataclass
class Claim:
    """The sockets a server listens on and its store's writer lock (None: a reader)."""

    sockets: tuple[socket.socket, ...]
    lock: int | None = None

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()
        if self.lock is not None:
            os.close(self.lock)  # releases the flock
            self.lock = None

    def __enter__(self) -> Claim:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def claim(store: Path | None, host: str, port: int, *, hint: str = "--port") -> Claim:
    """Lock `store` for writing (None: a reader, no lock), then bind ``host:port``.

    Raises:
        StoreLocked: another writer holds the store.
        CannotListen: the address is in use or cannot be bound (`hint` names the option).
    """
    lock = lock_store(store) if store is not None else None
    try:
        return Claim(bind_sockets(host, port, hint=hint), lock)
    except BaseException:
        if lock is not None:
            os.close(lock)
        raise


def lock_path(store: Path) -> Path:
    """The writer lock file of `store`."""
    store = store.expanduser().resolve()
    return store.with_name(store.name + ".lock")


def lock_store(store: Path) -> int | None:
    """An open descriptor holding the exclusive lock on `store`'s lock file (module doc); None
    when the lock file cannot be made (a read-only folder: nothing can be written there).

    Raises:
        StoreLocked: another process holds the lock.
    """
    from tablequest.corpus import StoreLocked

    path = lock_path(store)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        log.warning("no writer lock for %s (%s): a second server is not refused", store, exc)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        by = f" (PID {holder})" if holder else ""
        raise StoreLocked(
            f"store {str(store)!r} is in use by another `tablequest serve`{by}, which writes "
            "it: stop that server, or use it (its uploads reach the same store)",
            holder=holder,
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _holder(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip())
    return None


def bind_sockets(host: str, port: int, *, hint: str = "--port") -> tuple[socket.socket, ...]:
    """Sockets bound to every address of ``host:port``, as asyncio's ``create_server`` would
    bind them (``localhost``: IPv4 and IPv6), not yet listening.

    Raises:
        CannotListen: one address is in use or cannot be bound; none stays bound.
    """
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise CannotListen(f"cannot listen on {shown}: {exc.strerror}") from None
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except OSError as exc:
        for sock in bound:
            sock.close()
        if exc.errno == errno.EADDRINUSE:
            why = f"the address is in use (another server?): choose another port with {hint}"
        else:
            why = f"{exc.strerror or exc} (check {hint} and the host)"
        raise CannotListen(f"cannot listen on {shown}: {why}") from None
    return tuple(bound)
