"""`locate_evidence`: cells equal to the answer's items, normalized once per table."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tablequest.methods.locate import _norm, _norm_all, locate_evidence
from tablequest.table import Table

CELL = st.text(
    alphabet=st.sampled_from(list("aZé9 ,.%-[]|\n\t\x00İß½ﬁ\u0301_;")) | st.characters(),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(CELL, max_size=12))
def test_batch_normalization_equals_one_cell_at_a_time(cells: list[str]) -> None:
    assert _norm_all(cells) == [_norm(c) for c in cells]


def test_cells_equal_to_answer_items_are_found_in_order() -> None:
    table = Table.from_rows(
        [["Name", "Points", "Note"], ["Zoë", "1,024", "x [1]"], ["Ana", "12", "Café"],
         ["Bo", "1024", ""]],
    )  # fmt: skip
    found = locate_evidence(table, "t", "Zoe, 1024 | cafe")
    assert [(c.row, c.col, c.value) for c in found] == [
        (table.row_ids[0], table.col_ids[0], "Zoë"),
        (table.row_ids[0], table.col_ids[1], "1,024"),
        (table.row_ids[1], table.col_ids[2], "Café"),
        (table.row_ids[2], table.col_ids[1], "1024"),
    ]
    assert [c.value for c in locate_evidence(table, "t", "x")] == ["x [1]"]  # citation dropped
    assert locate_evidence(table, "t", "1024", limit=1)[0].value == "1,024"
    assert locate_evidence(table, "t", " | ") == []
