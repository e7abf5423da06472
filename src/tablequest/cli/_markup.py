"""HTML table markup (a preview an agent saw) as the plain lines a terminal shows."""

from __future__ import annotations

import re

__all__ = ["plain_markup"]

_MARKUP = re.compile(r"</?(table|thead|tbody|tr|td|th|caption)\b", re.IGNORECASE)
_CELL = re.compile(r"<t[hd]\b([^>]*)>(.*?)(?:</t[hd]>|$)", re.IGNORECASE | re.DOTALL)
_SPAN = re.compile(r"(col|row)span\s*=\s*[\"']?(\d+)", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>|<[^>]*$")


def plain_markup(text: str) -> str:
    """HTML table markup (a preview an agent saw) as plain lines: one line per row, cells
    joined by " | ", a merged cell's value repeated over the columns and rows it spans;
    text without table markup is returned as it is."""
    if not _MARKUP.search(text):
        return text
    import html

    lines: list[str] = []
    carry: dict[int, tuple[str, int]] = {}  # column → (value, rows still spanned)
    for line in text.splitlines():
        cut = line.find("<")
        prefix = line[:cut] if cut > 0 else ""
        cells = _CELL.findall(line)
        if not cells:
            carry = {}
            if stripped := html.unescape(_TAG.sub("", line)).strip():
                lines.append(stripped)
            continue
        if prefix:  # a matched row on its own line: every cell, no spans
            carry = {}
        lines.append(prefix + " | ".join(_row_values(cells, carry)))
    return "\n".join(lines)


def _row_values(cells: list[tuple[str, str]], carry: dict[int, tuple[str, int]]) -> list[str]:
    """One row's values with row spans from the rows above (updates `carry`)."""
    import html

    out: list[str] = []

    def take_carried() -> None:
        while len(out) in carry:
            value, left = carry.pop(len(out))
            if left > 1:
                carry[len(out)] = (value, left - 1)
            out.append(value)

    for attrs, body in cells:
        take_carried()
        spans = {kind.lower(): int(n) for kind, n in _SPAN.findall(attrs)}
        value = html.unescape(_TAG.sub("", body)).strip()
        for _ in range(max(1, min(spans.get("col", 1), 1000))):
            if spans.get("row", 1) > 1:
                carry[len(out)] = (value, spans["row"] - 1)
            out.append(value)
    take_carried()
    return out
