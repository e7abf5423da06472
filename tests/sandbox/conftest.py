"""Shared fixtures for the sandbox tests: sandboxes, frames, host secrets, a listening socket."""

from __future__ import annotations

import os
import select
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from tablequest.sandbox import Sandbox

SECRET = "tq-secret-7f3a9c1e5b"
SECRET_ENV = "TABLEQUEST_TEST_API_KEY"


@dataclass
class Host:
    """What an escape must not reach: secrets, a file system outside the session, a server."""

    secret_file: Path
    private_file: Path
    outside_dir: Path
    listener: socket.socket
    port: int
    secret: str = SECRET
    secret_env: str = SECRET_ENV

    def connections(self) -> int:
        """Accept and count connections that reached the listening socket."""
        count = 0
        while select.select([self.listener], [], [], 0.2)[0]:
            conn, _ = self.listener.accept()
            conn.close()
            count += 1
        return count


@pytest.fixture(scope="session")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    """Host secrets in the environment and on disk, and a server on 127.0.0.1."""
    outside = tmp_path_factory.mktemp("outside")
    os.chmod(outside, 0o755)
    secret_file = outside / "secret.txt"
    secret_file.write_text(f"{SECRET}\n")
    os.chmod(secret_file, 0o644)
    private_file = outside / "private.txt"
    private_file.write_text(f"{SECRET}\n")
    os.chmod(private_file, 0o600)
    old = os.environ.get(SECRET_ENV)
    os.environ[SECRET_ENV] = SECRET
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield Host(secret_file, private_file, outside, listener, listener.getsockname()[1])
    finally:
        listener.close()
        if old is None:
            os.environ.pop(SECRET_ENV, None)
        else:
            os.environ[SECRET_ENV] = old


@pytest.fixture(scope="session")
def frames() -> dict[str, pd.DataFrame]:
    sales = pd.DataFrame(
        {
            "order": [1, 2, 3, 4, 5, 6],
            "region": ["north", "south", "north", "east", "south", "north"],
            "customer": ["c1", "c2", "c1", "c3", "c2", "c3"],
            "amount": [120.0, 80.5, 99.5, 40.0, 19.5, 60.0],
            "date": [
                "2024-01-05",
                "2024-02-11",
                "2024-02-20",
                "2024-03-01",
                "2024-03-15",
                "2024-03-30",
            ],
            "sku": ["AB-100", "CD-200", "AB-310", "EF-999", "CD-201", "AB-100"],
        }
    )
    customers = pd.DataFrame(
        {"customer": ["c1", "c2", "c3"], "segment": ["retail", "b2b", "retail"]}
    )
    return {"sales": sales, "customers": customers}


@pytest.fixture(scope="session")
def sandbox(host: Host) -> Iterator[Sandbox]:
    """The default sandbox (best isolation this machine offers), created with secrets set."""
    with Sandbox() as sb:
        yield sb
