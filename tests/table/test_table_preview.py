"""TableSeek preview: head cut, matched rows with limits, skip rows in the head, match-only."""

from __future__ import annotations

import re

from tablequest.table import Table, compile_pattern, preview


def league() -> Table:
    return Table.from_rows(
        [
            ["Team", "City", "Pts"],
            ["Rovers", "Harbour", "33"],
            ["United", "Millbrook", "29"],
            ["Athletic", "Eastvale", "27"],
            ["Town", "Stonebridge", "22"],
            ["Albion", "Fenwick", "6"],
        ]
    )


def test_small_table_fits_entirely_and_matches_nothing_new() -> None:
    p = preview(league(), ["rovers"])
    assert p.text == (
        "| Team | City | Pts |\n"
        "| --- | --- | --- |\n"
        "| Rovers | Harbour | 33 |\n"
        "| United | Millbrook | 29 |\n"
        "| Athletic | Eastvale | 27 |\n"
        "| Town | Stonebridge | 22 |\n"
        "| Albion | Fenwick | 6 |"
    )
    assert p.matched_rows == {"rovers": []}
    assert p.head_rows == (0, 1, 2, 3, 4)


def test_cut_head_plus_matched_rows() -> None:
    # Header line 21 chars + newline, separator 19 + newline: 42. A 60-char head keeps the
    # first 18 chars of row 0 ("| Rovers | Harbour"), so row 0 is not fully shown.
    p = preview(league(), ["ROVERS", "t"], head_chars=60)
    assert p.text == (
        "| Team | City | Pts |\n"
        "| --- | --- | --- |\n"
        "| Rovers | Harbour…\n"
        "[MATCHED ROWS]\n"
        "[ROW 0] | Rovers | Harbour | 33 |\n"
        "[ROW 1] | United | Millbrook | 29 |"
    )
    assert p.matched_rows == {"ROVERS": [0], "t": [1]}  # "t" first hits "United"
    assert p.head_rows == ()


def test_limits_per_pattern_and_total() -> None:
    t = league()
    p = preview(t, ["a", "o"], head_chars=0, rows_per_pattern=2, max_rows=3)
    # "a" matches rows 0 (Harbour), 2 (Athletic); "o" matches rows 0 (Rovers), 1 (Millbrook)
    assert p.matched_rows == {"a": [0, 2], "o": [0, 1]}
    assert p.text == (
        "…\n"
        "[MATCHED ROWS]\n"
        "[ROW 0] | Rovers | Harbour | 33 |\n"
        "[ROW 1] | United | Millbrook | 29 |\n"
        "[ROW 2] | Athletic | Eastvale | 27 |"
    )
    capped = preview(t, ["a", "o", "wick"], head_chars=0, rows_per_pattern=2, max_rows=2)
    assert capped.matched_rows == {"a": [0, 2], "o": [0], "wick": []}


def test_rows_inside_the_head_are_skipped_and_lines_cut() -> None:
    # 68 chars = header (22) + separator (20) + row 0 with its newline (26): row 0 is inside.
    p = preview(league(), ["r"], head_chars=68, line_chars=10)
    assert p.head_rows == (0,)
    assert p.matched_rows == {"r": [1]}  # Rovers is in the head; next "r" is Millbrook
    assert p.text == (
        "| Team | City | Pts |\n"
        "| --- | --- | --- |\n"
        "| Rovers | Harbour | 33 |\n"
        "…\n"
        "[MATCHED ROWS]\n"
        "[ROW 1] | United |…"
    )


def test_match_only_has_no_head_and_keeps_sub_table_ids() -> None:
    sub = league().sub_table(rows=[1, 4])
    p = preview(sub, ["fenwick", "mill"], match_only=True, fmt="csv")
    assert p.text == "[ROW 1] United,Millbrook,29\n[ROW 4] Albion,Fenwick,6"
    assert p.matched_rows == {"fenwick": [4], "mill": [1]}
    assert p.head_rows == ()


def test_html_and_linearized_rows() -> None:
    p = preview(league(), ["albion"], fmt="html", head_chars=40)
    assert p.text.splitlines()[-1] == ("[ROW 4] <tr><td>Albion</td><td>Fenwick</td><td>6</td></tr>")
    lin = preview(league(), ["albion"], fmt="linearized", head_chars=30)
    assert lin.text.splitlines()[-1] == "[ROW 4] Albion | Fenwick | 6"


def test_invalid_regex_is_literal_and_case_insensitive() -> None:
    assert compile_pattern("C++").search("a c++ compiler")
    assert compile_pattern("(2004").search("since (2004)")
    assert compile_pattern("us[lL] a-league").search("USL A-League")
    assert compile_pattern("x").flags & re.IGNORECASE
    t = Table.from_rows([["lang"], ["C++"], ["Rust"]])
    assert preview(t, ["c++"], match_only=True).matched_rows == {"c++": [0]}


def test_duplicate_patterns_are_counted_once() -> None:
    p = preview(league(), ["town", "town"], match_only=True)
    assert p.matched_rows == {"town": [3]}
    assert p.text == "[ROW 3] | Town | Stonebridge | 22 |"
