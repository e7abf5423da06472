"""Issue 39: a table's notebook HTML and Markdown, and the answer card, are bounded whatever
the table's size (at most 20 columns, 200 characters a cell, under 100 KB), and every cell
is escaped."""

from __future__ import annotations

from tablequest.methods import Result
from tablequest.table import CellRef, Source, Table

HOSTILE = '<script>window.__x=1</script>"<img src=x onerror=alert(1)>'
LONG = HOSTILE + "y" * 400


def huge() -> Table:
    """300,000 rows × 300 columns of long hostile cells (the rows share one tuple: cheap)."""
    header = tuple(f"col {i}" for i in range(300))
    row = tuple(f"{LONG} {i}" for i in range(300))
    return Table(
        cells=(header, *([row] * 300_000)),
        title="<b>Huge</b> " + "t" * 1000,
        source=Source("/data/" + "d" * 1000 + ".csv", "csv"),
    )


def test_a_huge_tables_html_and_markdown_are_bounded_and_escaped() -> None:
    table = huge()
    html = table._repr_html_()
    assert len(html.encode()) <= 100_000
    assert "<script>" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;window.__x=1&lt;/script&gt;&quot;&lt;img" in html
    assert ">col 0<" in html and ">col 19<" in html and ">col 20<" not in html
    assert "y" * 200 not in html and "…</td>" in html  # each cell cut
    shown = html.count("<tr>") - 1
    assert 1 <= shown <= 30
    assert f"… {300_000 - shown} more rows, 280 more columns" in html
    assert "300000 rows x 300 columns" in html
    markdown = table._repr_markdown_()
    assert len(markdown.encode()) <= 100_000 and "y" * 200 not in markdown
    assert "| col 0 |" in markdown and "| col 20 |" not in markdown
    assert "more rows, 280 more columns" in markdown


def test_a_wide_short_table_shows_its_first_20_columns() -> None:
    rows = [[f"h{i}" for i in range(50)], [str(i) for i in range(50)]]
    html = Table.from_rows(rows)._repr_html_()
    assert ">h19<" in html and ">h20<" not in html and ">19</td>" in html
    assert "… 30 more columns" in html and "more rows" not in html


def test_the_answer_card_of_a_huge_table_shows_its_evidence_and_stays_bounded() -> None:
    table = huge()
    value = f"{LONG} 250"
    result = Result(
        answer="<script>window.__x=2</script>",
        status="answered",
        evidence=[CellRef("t", 299_999, 250, value, "computed")],
        tables={"t": table},
        sources={"t": "<b>huge.csv</b>"},
        method="auto",
    )
    card = result._repr_html_()
    assert len(card.encode()) <= 100_000
    assert "<script>" not in card and "<b>" not in card and "<img" not in card
    # the evidence cell's row and column are shown, beside the first (row label) column
    assert ">col 0<" in card and ">col 250<" in card and ">col 251<" not in card
    assert card.count('class="tq-evidence tq-evidence-computed"') == 1
    assert "… 299999 more rows, 280 more columns not shown" in card
    assert "y" * 200 not in card  # the listed value is cut too
