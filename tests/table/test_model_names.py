"""Column names stay unique in linear time: a header of 20,000 equal names (a hostile table's
API answer and page need `Table.columns`) used to take n² probes."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from tablequest.table import Table
from tablequest.table.model import unique_names


def quadratic(names: list[str]) -> tuple[str, ...]:
    """The rule as first written: try name, name_2, name_3, ... until one is free."""
    out: list[str] = []
    seen: set[str] = set()
    for i, raw in enumerate(names, start=1):
        name = " ".join(raw.split()) or f"column_{i}"
        candidate, k = name, 2
        while candidate in seen:
            candidate, k = f"{name}_{k}", k + 1
        seen.add(candidate)
        out.append(candidate)
    return tuple(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "a_2", "a_3", "a_2_2", "b", "", " a "]), max_size=30))
def test_same_names_as_the_first_rule(names: list[str]) -> None:
    assert unique_names(names) == quadratic(names)


def test_many_equal_headers_are_named_quickly() -> None:
    table = Table(cells=(("x",) * 20000, ("1",) * 20000))
    started = time.process_time()
    columns = table.columns
    assert time.process_time() - started < 5  # n² probes took minutes
    assert columns[:3] == ("x", "x_2", "x_3") and columns[-1] == "x_20000"
    assert len(set(columns)) == 20000
