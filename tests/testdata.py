"""Test data shared by several test packages: a vocabulary for generated corpora (shards,
Ray, ranking tests: common words of table headers and cells, so generated tables share words
and rankings have ties), an HTML table with a two-level header and merged cells, and the stub
model's replies for it."""

import json
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
