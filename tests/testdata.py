"""Test data shared by several test packages: a vocabulary for generated corpora (shards,
Ray, ranking tests: common words of table headers and cells, so generated tables share words
and rankings have ties), an HTML table with a two-level header and merged cells, and the stub
model's replies for it; a minimal xlsx workbook builder for the reading-budget tests; a free
loopback port for commands that bind theirs before they start."""

import io
import json
import socket
import zipfile
from typing import Any

WORDS: tuple[str, ...] = (
    "gold",
    "silver",
    "bronze",
    "nation",
    "team",
    "player",
    "season",
    "club",
    "goals",
    "city",
    "river",
    "mountain",
    "year",
    "election",
    "party",
    "votes",
    "album",
    "song",
    "chart",
    "film",
    "director",
    "award",
    "station",
    "line",
    "opened",
    "population",
    "area",
    "country",
    "capital",
    "king",
    "queen",
    "born",
    "died",
    "league",
    "cup",
    "final",
    "score",
)

#: rowspan/colspan headers and a merged body cell (serve and MCP tests)
LAKES_HTML = """<table><caption>Lakes of Varnholm</caption>
<thead>
<tr><th rowspan="2">Lake</th><th colspan="2">Size</th><th rowspan="2">Region</th></tr>
<tr><th>Area km2</th><th>Depth m</th></tr>
</thead>
<tbody>
<tr><td>Mirrow</td><td>412</td><td>38</td><td rowspan="2">North</td></tr>
<tr><td>Tarnel</td><td>95</td><td>12</td></tr>
<tr><td>Quillsee</td><td>230</td><td>61</td><td>South</td></tr>
</tbody></table>
"""


def lakes_reply(request: dict[str, Any]) -> str:
    """TableSeek's three prompts, answered for the lakes table, and table QA's one-line
    "Final Answer" prompt (where ``auto`` ends up for the lakes table)."""
    prompt = request["messages"][-1]["content"]
    if "Final Answer:" in prompt:
        return "Final Answer: 61"
    if "Candidate tables" in prompt:
        return json.dumps({"action": "select", "selected_tables": ["Table_0"]})
    if "grep patterns" in prompt:
        return json.dumps({"patterns": ["Quillsee", "Depth"]})
    return json.dumps(
        {
            "status": "answered",
            "answer": "61",
            "evidence": [{"table": "Table_0", "column": "Size / Depth m", "value": "61"}],
        }
    )


MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
DOC = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def workbook(
    rows: bytes, strings: bytes | None = None, *, head: bytes = b"", tail: bytes = b""
) -> bytes:
    """A minimal workbook of one sheet "S" with `rows` in its `<sheetData>` (`head` before
    the root element, `tail` after `<sheetData>`), and `<si>` `strings` when given."""
    rels = f'<Relationship Id="rId1" Type="{DOC}/worksheet" Target="worksheets/sheet1.xml"/>'
    if strings is not None:
        rels += f'<Relationship Id="rId2" Type="{DOC}/sharedStrings" Target="sharedStrings.xml"/>'
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr(
            "xl/workbook.xml",
            f'<workbook xmlns="{MAIN}" xmlns:r="{DOC}"><sheets>'
            '<sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        zf.writestr(
            "xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{PKG}">{rels}</Relationships>'
        )
        sheet = head + f'<worksheet xmlns="{MAIN}"><sheetData>'.encode()
        sheet += rows + b"</sheetData>" + tail + b"</worksheet>"
        zf.writestr("xl/worksheets/sheet1.xml", sheet)
        if strings is not None:
            zf.writestr(
                "xl/sharedStrings.xml", f'<sst xmlns="{MAIN}">'.encode() + strings + b"</sst>"
            )
    return buf.getvalue()


def free_port() -> int:
    """A loopback port nothing listens on now: `serve` and ``mcp --http`` bind their port
    before they start (`service.claims`), also in tests that stop them there, and tests run
    in parallel, so no fixed port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
