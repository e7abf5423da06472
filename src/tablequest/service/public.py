"""What /v1 clients see of the server's files: never an absolute server path (issue 25).

Table sources are already relative where the store names them (`tablequest.service.snapshot`).
What else may carry a server path — an ask's result (its ``trace`` file, DTR's ``charts``,
a reason quoting a file), trace events, an ingest failure's reason — goes through `Scrubber`:
every string has the server's folders cut off its paths, longest folder first: the corpus
roots and the uploads folder (so a path reads as the table's source), the trace folder (a
trace or chart reads as its name there), and the store's folder. The ``trace`` of a result
becomes the API address of that trace (``/v1/traces/<id>``).

Choices (ours): folders are matched as text with their trailing separator, so a folder name
that merely starts another (``/srv/data`` in ``/srv/database``) is left alone; a path outside
every known folder is left as it is (the server never names one in what it sends).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["Scrubber"]


class Scrubber:
    """Cuts the server's folders off the paths in JSON-like values.

    Args:
        folders: Folders whose contents are named relative to them.
        trace_dir: The server's trace folder (a result's ``trace`` becomes an API address).
    """

    def __init__(self, folders: Iterable[str | Path], trace_dir: Path) -> None:
        self.trace_dir = trace_dir
        named = {str(f).rstrip(os.sep) for f in [*folders, trace_dir] if str(f).strip(os.sep)}
        self.prefixes = sorted((f + os.sep for f in named), key=len, reverse=True)

    def text(self, value: str) -> str:
        """`value` with every known folder cut off the paths in it."""
        if os.sep not in value:
            return value
        for prefix in self.prefixes:
            if prefix in value:
                value = value.replace(prefix, "")
        return value

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like value with `text` applied to every string (keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def result(self, payload: dict[str, Any]) -> dict[str, Any]:
        """An ``ask --json`` payload as clients get it (see the module doc)."""
        trace = payload.get("trace")
        out: dict[str, Any] = self.value(payload)
        if isinstance(trace, str) and trace:
            path = Path(trace)
            inside = path.parent == self.trace_dir
            out["trace"] = f"/v1/traces/{path.stem}" if inside else path.name
        return out
