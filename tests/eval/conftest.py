"""The benchmark fixture folders (`copy` puts one in the test's tmp folder)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def copy(tmp_path: Path) -> Callable[[str], Path]:
    """Copy the fixture benchmark folder NAME into the test's tmp folder; return the copy."""

    def _copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copytree(FIXTURES / name, target)
        return target

    return _copy
