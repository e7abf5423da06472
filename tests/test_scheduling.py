"""The suite's work units (tests/scheduling.py): a file, except the files spread test by test."""

from __future__ import annotations

from pathlib import Path

from tests.scheduling import SPREAD, scope_of

ROOT = Path(__file__).resolve().parents[1]


def test_a_file_is_one_unit_but_spread_files_are_cut_into_tests() -> None:
    one = "tests/sandbox/test_sandbox_session.py::test_groupby"
    assert scope_of(one) == "tests/sandbox/test_sandbox_session.py"
    assert scope_of("tests/x.py::Class::test[a::b]") == "tests/x.py"
    spread = "tests/sandbox/test_sandbox_escapes.py::test_escape_is_contained[default:exit]"
    assert scope_of(spread) == spread
    assert all((ROOT / path).is_file() for path in SPREAD)  # a renamed file fails here
