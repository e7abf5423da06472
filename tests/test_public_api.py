"""The public API is exactly what `tablequest.__all__` lists, and every name resolves."""

from __future__ import annotations

import tablequest

EXPECTED = {
    "LLM",
    "BadValue",
    "CellRef",
    "Chat",
    "OpenedCorpus",
    "Completion",
    "ConfigError",
    "DirectQA",
    "EncoderUnavailable",
    "Hit",
    "IngestAborted",
    "IngestReport",
    "LLMError",
    "Merge",
    "Method",
    "MethodContext",
    "MethodOptions",
    "MethodSpec",
    "ModelUnreachable",
    "NoStore",
    "NotAStore",
    "OpenAICompatible",
    "OptionError",
    "RagConfig",
    "Result",
    "RetrieveThenQA",
    "RunError",
    "SandboxError",
    "Scripted",
    "SeekConfig",
    "Source",
    "SourceError",
    "Store",
    "StoreError",
    "StoreLocked",
    "StoreWriteError",
    "StubServer",
    "Table",
    "TableRAG",
    "TableSeek",
    "TableSet",
    "TablequestError",
    "Trace",
    "UnknownMethod",
    "UnreadableTable",
    "UsageError",
    "__version__",
    "ask",
    "build_llm",
    "chat",
    "get_method",
    "grep_rank",
    "ingest",
    "list_methods",
    "open",
    "option",
    "preview",
    "read_tables",
    "register_method",
    "resolve_config",
    "search",
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
    report = tablequest.ingest(store, [examples])
    assert report.tables_stored >= 12
    hits = tablequest.grep_rank(store, [r"\briver\b", "Varna"], k=3)
    table = store.get(hits[0].table_id)
    assert "Varna" in table.to_dataframe().to_string()
    found = tablequest.search(store, "How long is the river Varna?", k=1, method="bm25")
    assert found[0].table_id == hits[0].table_id
    llm = tablequest.Scripted(
        [
            '{"patterns": ["Varna"]}',
            '{"action": "select", "selected_tables": ["Table_0"]}',
            '{"answer": "412"}',
        ]
    )
    result = tablequest.ask("How long is the river Varna?", store, llm=llm, trace_dir=tmp_path)
    assert result.answer == "412" and result.method == "auto"  # the default method
    assert result.details["routes"][0]["method"] == "qa"  # a plain lookup on a small table
