"""Suite-wide isolation: no real model requests, and caches/traces/config in tmp dirs.

Every test starts with TABLEQUEST_* and OPENAI_* variables removed, then
TABLEQUEST_ALLOW_MODEL_REQUESTS=0 (only 127.0.0.1/localhost/::1 may be called),
TABLEQUEST_CACHE_DIR and TABLEQUEST_TRACE_DIR in a fresh tmp dir, and the XDG base
directories pointed there too so no user config, cache or data file is read or written.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["TABLEQUEST_ALLOW_MODEL_REQUESTS"] = "0"  # also during collection


@pytest.fixture(autouse=True)
def isolated_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """Clean environment for each test; yields the tmp base directory."""
    for name in list(os.environ):
        if name.startswith(("TABLEQUEST_", "OPENAI_")):
            monkeypatch.delenv(name, raising=False)
    base = tmp_path_factory.mktemp("env")
    monkeypatch.setenv("TABLEQUEST_ALLOW_MODEL_REQUESTS", "0")
    monkeypatch.setenv("TABLEQUEST_CACHE_DIR", str(base / "cache"))
    monkeypatch.setenv("TABLEQUEST_TRACE_DIR", str(base / "traces"))
    for xdg in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        monkeypatch.setenv(xdg, str(base / xdg.lower()))
    yield base
