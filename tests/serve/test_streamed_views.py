"""Issue 37: the structure route (`/v1/tables/{id}`) and MCP `get_table` read only the rows
they return of a streamed table (`Store.get_rows`), never the table whole (`Store.get`), and
answer exactly as they did when they read it whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tablequest.mcpserver.tools as tools_module
from tablequest.corpus import Store, ingest
from tablequest.corpus.storage import streaming
from tablequest.corpus.storage.streaming import streamed_rows
from tablequest.mcpserver import McpService, open_service
from tablequest.mcpserver.window import WindowError
from tablequest.serve.tables import stored_structure, structure
from tablequest.service import ReadStore, ServeConfig

N = 30


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("streamed")
    lines = ["txn,city,amount"] + [f"{i},{'ab'[i % 2]}city,{i * 7 % 11}.5" for i in range(N)]
    (folder / "big.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    titled = "Prices in March\nCountry,Price\nDE,1.85\n"
    (folder / "titled.csv").write_text(titled, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streaming, "STREAM_MIN_BYTES", 0)  # stream a small file
        with Store(folder / "s.duckdb") as store:
            assert ingest(store, [folder], index=False).tables_stored == 2
    return folder / "s.duckdb"


def _ids(store: Store) -> tuple[str, str]:
    big = next(t for t in store.table_ids() if store.source(t).path.endswith("big.csv"))
    return big, next(t for t in store.table_ids() if t != big)


def _never_whole(*_: Any) -> Any:
    raise AssertionError("the table was read whole")


def test_the_structure_route_reads_only_its_window(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store(store_path, read_only=True) as store:
        big, small = _ids(store)
        assert (streamed_rows(store, big), streamed_rows(store, small)) == (N, None)
        table = store.get(big)
        windows = [(0, 5), (25, 10), (N, 5), (N + 7, 3)]
        expected = [structure(table, big, offset=o, limit=n) for o, n in windows]
        assert stored_structure(store, small, offset=0, limit=5) == structure(
            store.get(small), small, offset=0, limit=5
        )
        monkeypatch.setattr(Store, "get", _never_whole)
        got = [stored_structure(store, big, offset=o, limit=n) for o, n in windows]
    assert got == expected
    assert got[1]["row_ids"] == list(range(25, N)) and got[1]["n_rows"] == N


@pytest.fixture()
def service(store_path: Path, tmp_path: Path) -> Iterator[McpService]:
    config = ServeConfig(store=store_path, trace_dir=tmp_path / "traces", token=None)
    opened = open_service(config, warm=False)
    yield opened
    opened.close()


CALLS: list[dict[str, Any]] = [
    {"offset": 25, "limit": 10},
    {"offset": 3, "limit": 4, "fmt": "json", "columns": ["amount"]},
    {"rows": [29, 3, 3], "limit": 5},
    {"sort": "amount", "descending": True, "limit": 3, "facets": ["city"]},
    {"where": ["city = acity"], "offset": 2, "limit": 4, "fmt": "json"},
    {"offset": N + 5, "limit": 3},
    {"limit": 100, "max_chars": 200},
]


def test_mcp_get_table_reads_only_its_window_and_answers_as_before(
    service: McpService, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store(store_path, read_only=True) as store:
        big, _ = _ids(store)

    def call(args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        window, _ = service.tools.get_table(big, **{"max_chars": 40_000, **args})
        return window.text, window.data

    with monkeypatch.context() as whole:  # as before: the table read whole
        whole.setattr(tools_module, "streamed_rows", lambda *_: None)
        expected = [call(args) for args in CALLS]
    monkeypatch.setattr(ReadStore, "get", _never_whole)
    assert [call(args) for args in CALLS] == expected
    assert "_10 of 30 body rows" not in expected[0][0]  # offset 25: only 5 left
    assert "_5 of 30 body rows, row ids 25..29._" in expected[0][0]
    with pytest.raises(WindowError, match=r"no body row 30 .* row ids are 0\.\.29"):
        service.tools.get_table(big, rows=[2, N], max_chars=40_000)
