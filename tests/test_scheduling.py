"""The suite's work units (tests/scheduling.py): a file, except the files spread test by test."""

from __future__ import annotations

from pathlib import Path

from tests.scheduling import FIRST, SPREAD, ordered, scope_of

ROOT = Path(__file__).resolve().parents[1]


def test_a_file_is_one_unit_but_spread_files_are_cut_into_tests() -> None:
    one = "tests/sandbox/test_sandbox_session.py::test_groupby"
    assert scope_of(one) == "tests/sandbox/test_sandbox_session.py"
    assert scope_of("tests/x.py::Class::test[a::b]") == "tests/x.py"
    spread = "tests/sandbox/test_sandbox_escapes.py::test_escape_is_contained[default:exit]"
    assert scope_of(spread) == spread
    assert all((ROOT / path).is_file() for path in SPREAD)  # a renamed file fails here


def test_the_slowest_files_come_first_and_the_spread_tests_last() -> None:
    escape = "tests/sandbox/test_sandbox_escapes.py::test_escape_is_contained[a]"
    ids = [escape, "tests/a.py::t1", "tests/b.py::t1", "tests/b.py::t2", f"{FIRST[1]}::t",
           f"{FIRST[0]}::t2", f"{FIRST[0]}::t1"]  # fmt: skip
    first = [f"{FIRST[0]}::t2", f"{FIRST[0]}::t1", f"{FIRST[1]}::t"]
    assert ordered(ids) == [*first, "tests/b.py::t1", "tests/b.py::t2", "tests/a.py::t1", escape]
    assert all((ROOT / path).is_file() for path in FIRST)
    assert "tests/scale/test_ray_corpus.py" not in FIRST  # never beside test_ray_batch.py
