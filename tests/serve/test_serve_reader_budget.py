"""An upload over the reading budget is the client's file, not a server failure (issue 40,
item 3): a 7 KB-class workbook whose one shared string 40 cells reference (40 MB of cell
text) is answered 422 naming the limit, its upload removed; beside a good file, it is listed
under `files_failed` and the good file is stored."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from tests.testdata import workbook

from tablequest.corpus import Store
from tablequest.serve import ServeConfig, create_app


def shared_string_bomb() -> bytes:
    """40 cells that each reference one 1 MiB shared string: 40 MB of cell text."""
    return workbook(
        b"<row>" + b'<c t="s"><v>0</v></c>' * 40 + b"</row>",
        b"<si><t>" + b"x" * (1 << 20) + b"</t></si>",
    )


def test_an_upload_over_the_reading_budget_is_422_naming_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TABLEQUEST_READ_MAX_BYTES", raising=False)
    store = tmp_path / "store.duckdb"
    Store(store).close()
    app = create_app(ServeConfig(store=store, trace_dir=tmp_path / "traces", token=None))
    bomb = shared_string_bomb()
    assert len(bomb) < 8_000

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", timeout=60
        ) as client:
            alone = await client.post("/v1/ingest", files=[("files", ("bomb.xlsx", bomb))])
            good = ("good.csv", b"city,people\nOslo,700000\n")
            beside = await client.post(
                "/v1/ingest", files=[("files", ("bomb.xlsx", bomb)), ("files", good)]
            )
            return [alone, beside]

    try:
        alone, beside = asyncio.run(run())
    finally:
        app.state.tq.close()
    assert alone.status_code == 422, alone.text
    assert "bomb.xlsx: over the reading budget" in alone.text
    assert "max_decoded_bytes=33,554,432 (set TABLEQUEST_READ_MAX_BYTES)" in alone.text
    assert str(tmp_path) not in alone.text
    assert beside.status_code == 200, beside.text
    report = beside.json()
    assert report["tables_stored"] == 1 and report["tables"] == 1
    (failed,) = report["files_failed"]
    assert failed["name"] == "bomb.xlsx" and "max_decoded_bytes" in failed["reason"]
    kept = [p.name for p in app.state.tq.uploads.rglob("*") if p.is_file()]
    assert kept == ["good.csv"]  # the refused uploads were removed
