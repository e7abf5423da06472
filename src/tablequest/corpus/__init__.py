"""The corpus: a DuckDB store of tables, ingest, and LLM-free retrieval.

`Store` is storage only; `ingest` writes tables into it and the retrievers (grep Eq. 1, BM25,
dense, hybrid, rerank; `make_retriever`, `search`) rank them. `Corpus` is the interface every
reader uses, one store or a sharded corpus alike; `open_corpus(path)` opens either.

This module is the package's public surface: code outside `tablequest.corpus` imports from
here, never from `storage`, `lexical`, `dense` or `retrieval` (tests/test_layers.py). Names are
imported on first use and read from their module on every use (nothing is cached here, so a
test that patches the defining module patches every caller), and opening a store does not
load the encoders. `browse` (paging, filtering and exporting a stored table's rows) is
exported as a module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablequest.lazy import lazy_exports

if TYPE_CHECKING:
    from tablequest.corpus.dense.device import describe_device
    from tablequest.corpus.dense.encoder_base import (
        Encoder,
        Matrix,
        encoding_progress,
        progress_stages,
        with_rate,
    )
    from tablequest.corpus.dense.encoders import (
        ENCODERS,
        EncoderSettings,
        EncoderUnavailable,
        make_encoder,
        minilm_installed,
        probe_embeddings,
        register_encoder,
        static_installed,
    )
    from tablequest.corpus.dense.index import (
        View,
        corpus_vectors,
        embedding_model,
        ensure_embeddings,
        fetch_vectors,
        insert_vectors,
        on_encoding_thread,
        save_vectors,
        start_embeddings,
    )
    from tablequest.corpus.lexical.rank import (
        BM25,
        GREP,
        bm25_index,
        ensure_indexes,
        grep_index,
        grep_rank,
        question_patterns,
        tokenize,
    )
    from tablequest.corpus.lexical.rowmatch import TableLines, rows_matching, table_lines
    from tablequest.corpus.retrieval.hits import all_matched_rows, search_hit
    from tablequest.corpus.retrieval.retrievers import (
        RETRIEVERS,
        Retriever,
        RetrieverSettings,
        make_retriever,
        preview_hit,
        register_retriever,
        search,
    )
    from tablequest.corpus.retrieval.shardrank import ShardIndexes, grep_ranking
    from tablequest.corpus.storage import browse
    from tablequest.corpus.storage.catalog import catalog
    from tablequest.corpus.storage.corpus import (
        Corpus,
        ingest_corpus,
        is_corpus_file,
        missing_indexes,
        open_corpus,
        prune_missing,
        remove_tables,
    )
    from tablequest.corpus.storage.ingest import (
        FileFailure,
        FileWarning,
        IngestAborted,
        IngestReport,
        StopSignals,
        ingest,
    )
    from tablequest.corpus.storage.relations import FORMAT_VERSION as RELATION_FORMAT_VERSION
    from tablequest.corpus.storage.relations import ROW_COLUMN, Column, Relation
    from tablequest.corpus.storage.relations import quote as sql_quote
    from tablequest.corpus.storage.removal import UnknownTables
    from tablequest.corpus.storage.shards import (
        copy_into_shards,
        merge_reports,
        plan_ingest,
        refresh_manifest,
    )
    from tablequest.corpus.storage.sql import DEFAULT_LIMIT as SQL_LIMIT
    from tablequest.corpus.storage.sql import DEFAULT_MAX_BYTES as SQL_MAX_BYTES
    from tablequest.corpus.storage.sql import SqlError, SqlResult, SqlRunner, json_value
    from tablequest.corpus.storage.store import (
        Hit,
        Store,
        StoreOutdated,
        has_ingest_time,
        table_id_for,
        table_row,
        text_format,
    )
    from tablequest.corpus.storage.storefile import (
        NoStore,
        NotAStore,
        StoreError,
        StoreLocked,
        StoreWriteError,
        what_is,
    )
    from tablequest.corpus.storage.views import header_line

#: public name → the module that defines it (imported on first use)
_LAZY: dict[str, str] = {
    "describe_device": "tablequest.corpus.dense.device",
    "Encoder": "tablequest.corpus.dense.encoder_base",
    "Matrix": "tablequest.corpus.dense.encoder_base",
    "encoding_progress": "tablequest.corpus.dense.encoder_base",
    "progress_stages": "tablequest.corpus.dense.encoder_base",
    "with_rate": "tablequest.corpus.dense.encoder_base",
    "ENCODERS": "tablequest.corpus.dense.encoders",
    "EncoderSettings": "tablequest.corpus.dense.encoders",
    "EncoderUnavailable": "tablequest.corpus.dense.encoders",
    "make_encoder": "tablequest.corpus.dense.encoders",
    "minilm_installed": "tablequest.corpus.dense.encoders",
    "probe_embeddings": "tablequest.corpus.dense.encoders",
    "register_encoder": "tablequest.corpus.dense.encoders",
    "static_installed": "tablequest.corpus.dense.encoders",
    "View": "tablequest.corpus.dense.index",
    "corpus_vectors": "tablequest.corpus.dense.index",
    "embedding_model": "tablequest.corpus.dense.index",
    "ensure_embeddings": "tablequest.corpus.dense.index",
    "fetch_vectors": "tablequest.corpus.dense.index",
    "insert_vectors": "tablequest.corpus.dense.index",
    "on_encoding_thread": "tablequest.corpus.dense.index",
    "save_vectors": "tablequest.corpus.dense.index",
    "start_embeddings": "tablequest.corpus.dense.index",
    "BM25": "tablequest.corpus.lexical.rank",
    "GREP": "tablequest.corpus.lexical.rank",
    "bm25_index": "tablequest.corpus.lexical.rank",
    "ensure_indexes": "tablequest.corpus.lexical.rank",
    "grep_index": "tablequest.corpus.lexical.rank",
    "grep_rank": "tablequest.corpus.lexical.rank",
    "question_patterns": "tablequest.corpus.lexical.rank",
    "tokenize": "tablequest.corpus.lexical.rank",
    "TableLines": "tablequest.corpus.lexical.rowmatch",
    "rows_matching": "tablequest.corpus.lexical.rowmatch",
    "table_lines": "tablequest.corpus.lexical.rowmatch",
    "all_matched_rows": "tablequest.corpus.retrieval.hits",
    "search_hit": "tablequest.corpus.retrieval.hits",
    "RETRIEVERS": "tablequest.corpus.retrieval.retrievers",
    "Retriever": "tablequest.corpus.retrieval.retrievers",
    "RetrieverSettings": "tablequest.corpus.retrieval.retrievers",
    "make_retriever": "tablequest.corpus.retrieval.retrievers",
    "preview_hit": "tablequest.corpus.retrieval.retrievers",
    "register_retriever": "tablequest.corpus.retrieval.retrievers",
    "search": "tablequest.corpus.retrieval.retrievers",
    "ShardIndexes": "tablequest.corpus.retrieval.shardrank",
    "grep_ranking": "tablequest.corpus.retrieval.shardrank",
    "catalog": "tablequest.corpus.storage.catalog",
    "Corpus": "tablequest.corpus.storage.corpus",
    "ingest_corpus": "tablequest.corpus.storage.corpus",
    "is_corpus_file": "tablequest.corpus.storage.corpus",
    "missing_indexes": "tablequest.corpus.storage.corpus",
    "open_corpus": "tablequest.corpus.storage.corpus",
    "prune_missing": "tablequest.corpus.storage.corpus",
    "remove_tables": "tablequest.corpus.storage.corpus",
    "UnknownTables": "tablequest.corpus.storage.removal",
    "FileFailure": "tablequest.corpus.storage.ingest",
    "FileWarning": "tablequest.corpus.storage.ingest",
    "IngestAborted": "tablequest.corpus.storage.ingest",
    "IngestReport": "tablequest.corpus.storage.ingest",
    "StopSignals": "tablequest.corpus.storage.ingest",
    "ingest": "tablequest.corpus.storage.ingest",
    "Column": "tablequest.corpus.storage.relations",
    "RELATION_FORMAT_VERSION": "tablequest.corpus.storage.relations",
    "ROW_COLUMN": "tablequest.corpus.storage.relations",
    "Relation": "tablequest.corpus.storage.relations",
    "sql_quote": "tablequest.corpus.storage.relations",
    "copy_into_shards": "tablequest.corpus.storage.shards",
    "merge_reports": "tablequest.corpus.storage.shards",
    "plan_ingest": "tablequest.corpus.storage.shards",
    "refresh_manifest": "tablequest.corpus.storage.shards",
    "SQL_LIMIT": "tablequest.corpus.storage.sql",
    "SQL_MAX_BYTES": "tablequest.corpus.storage.sql",
    "SqlError": "tablequest.corpus.storage.sql",
    "SqlResult": "tablequest.corpus.storage.sql",
    "SqlRunner": "tablequest.corpus.storage.sql",
    "json_value": "tablequest.corpus.storage.sql",
    "streamed_rows": "tablequest.corpus.storage.streaming",
    "header_line": "tablequest.corpus.storage.views",
    "Hit": "tablequest.corpus.storage.store",
    "Store": "tablequest.corpus.storage.store",
    "StoreOutdated": "tablequest.corpus.storage.store",
    "has_ingest_time": "tablequest.corpus.storage.store",
    "table_id_for": "tablequest.corpus.storage.store",
    "table_row": "tablequest.corpus.storage.store",
    "text_format": "tablequest.corpus.storage.store",
    "NoStore": "tablequest.corpus.storage.storefile",
    "NotAStore": "tablequest.corpus.storage.storefile",
    "StoreError": "tablequest.corpus.storage.storefile",
    "StoreLocked": "tablequest.corpus.storage.storefile",
    "StoreWriteError": "tablequest.corpus.storage.storefile",
    "what_is": "tablequest.corpus.storage.storefile",
}
#: public names that differ from the name in their module
_RENAMED: dict[str, str] = {
    "RELATION_FORMAT_VERSION": "FORMAT_VERSION",
    "sql_quote": "quote",
    "SQL_LIMIT": "DEFAULT_LIMIT",
    "SQL_MAX_BYTES": "DEFAULT_MAX_BYTES",
}
#: modules exported whole: a namespace of related functions
_MODULES: dict[str, str] = {"browse": "tablequest.corpus.storage.browse"}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY, renamed=_RENAMED, modules=_MODULES)


__all__ = [
    "BM25",
    "ENCODERS",
    "GREP",
    "RELATION_FORMAT_VERSION",
    "RETRIEVERS",
    "ROW_COLUMN",
    "SQL_LIMIT",
    "SQL_MAX_BYTES",
    "Column",
    "Corpus",
    "Encoder",
    "EncoderSettings",
    "EncoderUnavailable",
    "FileFailure",
    "FileWarning",
    "Hit",
    "IngestAborted",
    "IngestReport",
    "Matrix",
    "NoStore",
    "NotAStore",
    "Relation",
    "Retriever",
    "RetrieverSettings",
    "ShardIndexes",
    "SqlError",
    "SqlResult",
    "SqlRunner",
    "StopSignals",
    "Store",
    "StoreError",
    "StoreLocked",
    "StoreOutdated",
    "StoreWriteError",
    "TableLines",
    "UnknownTables",
    "View",
    "all_matched_rows",
    "bm25_index",
    "browse",
    "catalog",
    "copy_into_shards",
    "corpus_vectors",
    "describe_device",
    "embedding_model",
    "encoding_progress",
    "ensure_embeddings",
    "ensure_indexes",
    "fetch_vectors",
    "grep_index",
    "grep_rank",
    "grep_ranking",
    "has_ingest_time",
    "header_line",
    "ingest",
    "ingest_corpus",
    "insert_vectors",
    "is_corpus_file",
    "json_value",
    "make_encoder",
    "make_retriever",
    "merge_reports",
    "minilm_installed",
    "missing_indexes",
    "on_encoding_thread",
    "open_corpus",
    "plan_ingest",
    "preview_hit",
    "probe_embeddings",
    "progress_stages",
    "prune_missing",
    "question_patterns",
    "refresh_manifest",
    "register_encoder",
    "register_retriever",
    "remove_tables",
    "rows_matching",
    "save_vectors",
    "search",
    "search_hit",
    "sql_quote",
    "start_embeddings",
    "static_installed",
    "streamed_rows",
    "table_id_for",
    "table_lines",
    "table_row",
    "text_format",
    "tokenize",
    "what_is",
    "with_rate",
]
