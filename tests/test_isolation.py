"""The suite runs in a throwaway HOME: nothing a test or its subprocesses write lands in the
real user's folders (the run itself fails if anything there changed: tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tablequest.trace.latest import default_trace_dir

PROBE = (
    "import json, pathlib, platformdirs; print(json.dumps([str(pathlib.Path.home()), "
    "str(platformdirs.user_data_path('tablequest')), str(platformdirs.user_config_path("
    "'tablequest')), str(platformdirs.user_cache_path('tablequest'))]))"
)


def test_home_and_user_folders_are_throwaway_in_tests_and_their_children(
    monkeypatch: pytest.MonkeyPatch, isolated_env: Path
) -> None:
    real_home = Path(os.environ["TQ_TESTS_REAL_HOME"])
    session_home = Path(os.environ["TQ_TESTS_SESSION_HOME"])
    assert not session_home.is_relative_to(real_home)
    assert Path.home() == session_home and session_home.is_dir()
    monkeypatch.delenv("TABLEQUEST_TRACE_DIR")  # the default place, as for a user
    assert default_trace_dir().is_relative_to(isolated_env)
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True)
    home, *user_dirs = [Path(p) for p in json.loads(out.stdout)]
    assert home == session_home
    assert all(p.is_relative_to(isolated_env) for p in user_dirs), user_dirs
    paths = [home, *user_dirs]
    assert not any(p.is_relative_to(real_home) for p in paths), paths
