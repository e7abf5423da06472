"""The public API is exactly what `tablequest.__all__` lists, and every name resolves."""

from __future__ import annotations

import tablequest

EXPECTED = {
    "LLM",
    "CellRef",
    "Completion",
    "DirectQA",
    "Hit",
    "IngestReport",
    "LLMError",
    "Merge",
    "OpenAICompatible",
    "Result",
    "RetrieveThenQA",
    "Scripted",
    "SeekConfig",
    "Source",
    "Store",
    "StoreError",
    "StubServer",
    "Table",
    "TableSeek",
    "Trace",
    "UnreadableTable",
    "__version__",
    "build_llm",
    "ingest",
    "preview",
    "read_tables",
    "resolve_config",
    "serialize",
}


def test_all_is_the_intended_api() -> None:
    assert set(tablequest.__all__) == EXPECTED
    assert len(tablequest.__all__) == len(set(tablequest.__all__))


def test_every_exported_name_resolves() -> None:
    for name in tablequest.__all__:
        assert getattr(tablequest, name) is not None


def test_library_quickstart_from_readme(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples" / "corpus"
    store = tablequest.Store(tmp_path / "demo.duckdb")
    report = store.ingest([examples])
    assert report.tables_stored >= 12
    hits = store.rank([r"\briver\b", "Varna"], k=3)
    table = store.get(hits[0].table_id)
    assert "Varna" in table.to_dataframe().to_string()
