"""Reader repairs reach the ingest report as `files_warned` (issue 12, defect 8).

Before: `ingest` called `read_tables`, so an unterminated quote swallowing a CSV, stripped
NULs, a nested HTML table flattened to 0 rows and a header-only CSV were stored in silence.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tablequest.cli import app
from tablequest.corpus import Store, ingest
from tablequest.corpus.storage.store import StoreWriteError

ingest_mod = importlib.import_module("tablequest.corpus.storage.ingest")
reading = importlib.import_module("tablequest.corpus.storage.reading")

REPAIRED = {
    "quote.csv": b'a,b\n1,"2\n3,4\n5,6\n',
    "nul.csv": b"a,b\n1\x00,2\n3,4\n",
    "header.csv": b"a,b\n",
    "nested.html": (
        b"<table><tr><td><table><tr><th>a</th><th>b</th></tr>"
        b"<tr><td>1</td><td>2</td></tr></table></td></tr></table>"
    ),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "in"
    root.mkdir()
    for name, data in REPAIRED.items():
        (root / name).write_bytes(data)
    (root / "clean.csv").write_bytes(b"a,b\n1,2\n")
    return root


def _warned(report_json: dict[str, object]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in report_json["files_warned"]:  # type: ignore[attr-defined]
        out.setdefault(Path(item["path"]).name, []).append(item["warning"])
    return out


def test_every_repair_is_listed_with_its_file(folder: Path) -> None:
    store = Store()
    report = ingest(store, [folder])
    assert report.tables_stored == 5 and not report.files_failed
    warned = _warned(report.to_json())
    assert set(warned) == set(REPAIRED)  # the clean file has none
    assert any("broken quoting" in w for w in warned["quote.csv"])
    assert warned["nul.csv"] == ["1 NUL byte removed"]
    assert warned["header.csv"] == ["no data rows (only 1 header row(s))"]
    assert any("nested" in w for w in warned["nested.html"])
    again = ingest(store, [folder])  # unchanged files are not read again
    assert again.tables_unchanged == 5 and again.files_warned == []


def test_workers_report_warnings_too(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(20):
        (folder / f"more{i:02d}.csv").write_bytes(b"id,v\n%d,x\n" % i)
    monkeypatch.setattr(reading, "PARALLEL_THRESHOLD", 4)
    report = ingest(Store(), [folder], workers=2)
    assert report.tables_stored == 25
    assert set(_warned(report.to_json())) == set(REPAIRED)


def test_a_file_not_stored_has_no_warning(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store()

    def refuse(files: object) -> list[str]:
        raise StoreWriteError("no space left on device")

    monkeypatch.setattr(store, "put_files", refuse)
    with pytest.raises(ingest_mod.IngestAborted) as caught:
        ingest(store, [folder])
    assert caught.value.report.files_warned == [] and caught.value.report.tables_stored == 0


def test_cli_json_lists_files_warned(folder: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(folder), "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(_warned(payload)) == set(REPAIRED)
    assert all(set(item) == {"path", "warning"} for item in payload["files_warned"])
    human = CliRunner().invoke(app, ["ingest", str(folder), "--store", str(tmp_path / "h.duckdb")])
    assert human.exit_code == 0 and "repaired" in human.stdout and "header.csv" in human.stdout
