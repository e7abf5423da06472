"""The upload quota holds for uploads running at once (issue 25): reservations under a lock."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tablequest.corpus import Store
from tablequest.serve import Limits, ServeConfig, create_app
from tablequest.serve.uploads import UploadRejected, quota_for, save_uploads

MIB = 1024 * 1024


class SlowUpload:
    """An upload whose reads wait at `gate` after the first chunk, so two uploads both start
    (and pass any check made at their start) before either has written much."""

    def __init__(self, name: str, size: int, gate: asyncio.Barrier) -> None:
        self.filename: str | None = name
        self.left = size
        self.gate = gate
        self.reads = 0

    async def read(self, size: int = -1) -> bytes:
        self.reads += 1
        if self.reads == 2:
            await self.gate.wait()
        await asyncio.sleep(0)  # let the other upload run between chunks
        n = min(self.left, size if size > 0 else self.left)
        self.left -= n
        return b"x" * n


async def _two_uploads(folder: Path, limits: Limits) -> list[object]:
    gate = asyncio.Barrier(2)
    uploads = [SlowUpload("a.csv", 2 * MIB, gate), SlowUpload("b.csv", 2 * MIB, gate)]
    return await asyncio.gather(
        *(save_uploads([u], folder, limits) for u in uploads), return_exceptions=True
    )


def test_concurrent_uploads_cannot_both_pass_the_same_quota(tmp_path: Path) -> None:
    limits = Limits(max_file_bytes=4 * MIB, max_total_upload_bytes=3 * MIB)
    folder = tmp_path / "uploads"
    outcomes = asyncio.run(_two_uploads(folder, limits))
    refused = [o for o in outcomes if isinstance(o, UploadRejected)]
    saved = [o for o in outcomes if isinstance(o, list)]
    assert len(refused) == 1 and len(saved) == 1, outcomes
    assert refused[0].http_status == 413 and "upload quota" in str(refused[0])
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].stat().st_size == 2 * MIB  # no .part file left
    assert quota_for(folder, limits.max_total_upload_bytes).reserved == 0  # given back


def test_a_refused_upload_gives_its_reservation_back(tmp_path: Path) -> None:
    limits = Limits(max_file_bytes=4 * MIB, max_total_upload_bytes=3 * MIB)
    folder = tmp_path / "uploads"

    async def run() -> None:
        gate = asyncio.Barrier(1)
        with pytest.raises(UploadRejected, match="upload quota"):
            await save_uploads([SlowUpload("big.csv", 4 * MIB, gate)], folder, limits)
        # the 3 MiB it had reserved are free again: a 2 MiB upload fits
        saved = await save_uploads(
            [SlowUpload("ok.csv", 2 * MIB, asyncio.Barrier(1))], folder, limits
        )
        assert [s.size for s in saved] == [2 * MIB]

    asyncio.run(run())
    assert quota_for(folder, limits.max_total_upload_bytes).reserved == 0


def test_concurrent_uploads_through_the_api(tmp_path: Path) -> None:
    store = tmp_path / "store.duckdb"
    Store(store).close()
    limits = Limits(
        max_file_bytes=4 * MIB, max_upload_bytes=8 * MIB, max_total_upload_bytes=5 * MIB
    )
    app = create_app(
        ServeConfig(store=store, trace_dir=tmp_path / "traces", token=None, limits=limits)
    )
    body = [b"Key,Value\n" + b"".join(b"k%d,%s\n" % (i, b"v" * 150) for i in range(20_000))]
    size = len(body[0])
    assert 2 * MIB < size < 4 * MIB  # each fits alone, both do not

    async def upload(client: httpx.AsyncClient, name: str) -> httpx.Response:
        return await client.post("/v1/ingest", files=[("files", (name, body[0]))])

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", timeout=60
        ) as client:
            return list(await asyncio.gather(upload(client, "one.csv"), upload(client, "two.csv")))

    try:
        responses = asyncio.run(run())
    finally:
        app.state.tq.close()
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 413], [r.text for r in responses]
    refused = next(r for r in responses if r.status_code == 413)
    assert "upload quota (5,242,880 bytes in all) would be exceeded" in refused.text
    stored = [p for p in app.state.tq.uploads.rglob("*") if p.is_file()]
    assert [p.stat().st_size for p in stored] == [size]
