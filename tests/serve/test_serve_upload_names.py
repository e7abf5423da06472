"""An uploaded plain-text table keeps its name (issue 39, item 5): ``notes.txt`` was stored
and listed as ``notes_txt``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tablequest.corpus import Store, ingest
from tablequest.serve import Limits
from tablequest.serve.uploads import safe_name, save_uploads


class Upload:
    def __init__(self, filename: str, data: bytes) -> None:
        self.filename: str | None = filename
        self.data = data

    async def read(self, size: int = -1) -> bytes:
        chunk, self.data = self.data, b""
        return chunk


def test_uploaded_text_file_keeps_its_name_and_is_read(tmp_path: Path) -> None:
    digest = "cd" * 32
    assert safe_name("notes.txt", digest) == f"{digest[:12]}/notes.txt"
    assert safe_name("README.TEXT", digest) == f"{digest[:12]}/README.TEXT"
    assert safe_name("run.sh", digest) == f"{digest[:12]}/run_sh"  # still no reader, no dot
    uploads = [Upload("notes.txt", b"city,people\nOslo,709000\nBergen,291000\n")]
    (saved,) = asyncio.run(save_uploads(uploads, tmp_path / "uploads", Limits()))
    assert saved.path.name == "notes.txt"
    with Store() as store:
        ingest(store, [saved.path])
        (table_id,) = store.table_ids()
        assert Path(store.source(table_id).path or "").name == "notes.txt"
        assert store.get(table_id).columns == ("city", "people")
