"""A table made ready for TableRAG: its databases, retrievers, and retrieval over them.

`prepare_table` builds the typed frame, the schema DB and the cell DB (Alg. 1
``BuildSchemaDB`` / ``BuildCellDB``) — with SQL over the table's relation when the corpus
store holds it (`relation_db`, the same databases), else from its cells; `attach_retrievers`
encodes them (or loads their cached embeddings from the store); `retrieve` runs
``MultiQueryRetrieve`` on both.

Choices (ours): when the dense encoder cannot run (not installed, endpoint down), retrieval
falls back to BM25 and a ``fallback`` trace event says so; the solver's frame is indexed by
the table's row ids (``row_id``), so the lineage of its code names the table's cells
(`rag.evidence`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from tablequest.corpus import Encoder, EncoderUnavailable, Store
from tablequest.methods.rag import relation_db
from tablequest.methods.rag.cell_db import CellDB, CellEntry, build_cell_db
from tablequest.methods.rag.config import RagConfig
from tablequest.methods.rag.retrieval import (
    EntryRetriever,
    RetrievalKind,
    build_retriever,
    cache_key,
    multi_query_retrieve,
)
from tablequest.methods.rag.schema_db import ColumnSchema, SchemaDB, build_schema_db, raw_frame
from tablequest.table import Table
from tablequest.trace import Trace


@dataclass
class PreparedTable:
    """A table with its databases (built once, reused by every question and sample)."""

    table: Table
    content_hash: str
    raw: pa.Table
    frame: pd.DataFrame
    schema: SchemaDB
    cells: CellDB
    seconds: dict[str, float] = field(default_factory=dict)
    encoder_kind: RetrievalKind | None = None
    schema_retriever: EntryRetriever | None = None
    cell_retriever: EntryRetriever | None = None
    cache_hits: dict[str, bool] = field(default_factory=dict)


@dataclass
class Retrieval:
    """What retrieval put in the solver prompt: (entry, similarity, closest query) lists."""

    schema_queries: list[str]
    cell_queries: list[str]
    columns: list[tuple[ColumnSchema, float, str]]
    cells: list[tuple[CellEntry, float, str]]

    def cell_lines(self, max_chars: int) -> list[str]:
        """Cell JSON lines, values longer than `max_chars` cut with "…"."""
        lines = []
        for entry, _, _ in self.cells:
            value = entry.value
            if len(value) > max_chars:
                value = value[:max_chars] + "…"
            lines.append(CellEntry(entry.column, value, entry.count).doc)
        return lines

    def to_trace(self) -> dict[str, Any]:
        return {
            "columns": [
                {"column": c.name, "score": round(s, 4), "query": q} for c, s, q in self.columns
            ],
            "cells": [
                {"column": e.column, "value": e.value[:200], "score": round(s, 4), "query": q}
                for e, s, q in self.cells
            ],
        }


def prepare_table(
    table: Table,
    config: RagConfig,
    *,
    trace: Trace | None = None,
    store: Store | None = None,
    table_id: str | None = None,
    content_hash: str | None = None,
) -> PreparedTable:
    """Typed frame, schema DB and cell DB of `table` (timed).

    With the corpus `store` holding `table_id` as a typed relation, they are built with SQL
    over it (`relation_db`, the same databases); else from the table's cells.
    """
    content_hash = content_hash or table.content_hash
    built = None
    if relation_db.USE_RELATION and store is not None:
        built = relation_db.relation_databases(
            table, store, table_id,
            categorical_cells=config.cell_scope == "categorical", budget=config.budget,
        )  # fmt: skip
    if built is not None:
        raw, schema, frame, cells, seconds = (
            built.raw, built.schema, built.frame, built.cells, built.seconds
        )  # fmt: skip
        source = "relation"
    else:
        raw, schema, frame, cells, seconds = _from_cells(table, config)
        source = "cells"
    prepared = PreparedTable(table, content_hash, raw, frame, schema, cells, seconds)
    if trace is not None:
        trace.event(
            "decision",
            stage="databases",
            source=source,
            columns=len(schema.columns),
            categorical=len(schema.categorical),
            distinct_pairs=cells.n_distinct,
            kept_pairs=len(cells),
            budget=config.budget,
            seconds={k: round(v, 4) for k, v in seconds.items()},
        )
    return prepared


def _from_cells(
    table: Table, config: RagConfig
) -> tuple[pa.Table, SchemaDB, pd.DataFrame, CellDB, dict[str, float]]:
    """The databases from the table's cells (any table)."""
    started = time.perf_counter()
    raw = raw_frame(table)
    t_raw = time.perf_counter()
    schema, frame = build_schema_db(raw)
    frame.index = pd.Index(list(table.row_ids), name="row_id")
    t_schema = time.perf_counter()
    columns = schema.categorical if config.cell_scope == "categorical" else None
    cells = build_cell_db(raw, columns=columns, budget=config.budget)
    t_cells = time.perf_counter()
    seconds = {
        "frame": t_raw - started,
        "schema_db": t_schema - t_raw,
        "cell_db": t_cells - t_schema,
    }
    return raw, schema, frame, cells, seconds


def retrieval_kind(config: RagConfig, encoder: Encoder | None) -> RetrievalKind:
    """bm25 without an encoder (encoder ``bm25``, or none could run), else the configured."""
    if encoder is None or config.encoder == "bm25":
        return "bm25"
    return config.retrieval


def attach_retrievers(
    prepared: PreparedTable,
    config: RagConfig,
    *,
    encoder: Encoder | None,
    store: Store | None,
    trace: Trace | None = None,
) -> None:
    """Encode (or load) both databases once; BM25 when the dense encoder cannot run."""
    if prepared.encoder_kind is not None:
        return
    kind = retrieval_kind(config, encoder)
    started = time.perf_counter()
    schema_key = cache_key("schema", None, prepared.content_hash)
    cell_key = cache_key("cell", config.budget, prepared.content_hash)
    try:
        schema_r, schema_hit = build_retriever(
            kind, prepared.schema.keys, encoder=encoder, store=store, key=schema_key,
            weight=config.hybrid_weight,
        )  # fmt: skip
        cell_r, cell_hit = build_retriever(
            kind, prepared.cells.docs, encoder=encoder, store=store, key=cell_key,
            weight=config.hybrid_weight,
        )  # fmt: skip
    except EncoderUnavailable as exc:
        if trace is not None:
            trace.event("fallback", stage="encoder", reason=str(exc), encoder="bm25")
        kind = "bm25"
        schema_r, schema_hit = build_retriever("bm25", prepared.schema.keys, encoder=None,
                                               store=None, key="")  # fmt: skip
        cell_r, cell_hit = build_retriever("bm25", prepared.cells.docs, encoder=None,
                                           store=None, key="")  # fmt: skip
    prepared.encoder_kind = kind
    prepared.schema_retriever, prepared.cell_retriever = schema_r, cell_r
    prepared.cache_hits = {"schema": schema_hit, "cell": cell_hit}
    prepared.seconds["encode"] = time.perf_counter() - started
    if trace is not None:
        trace.event(
            "decision",
            stage="encode",
            encoder=kind,
            model=encoder.name if encoder is not None and kind != "bm25" else None,
            cache_hits=prepared.cache_hits,
            seconds=round(prepared.seconds["encode"], 3),
        )


def retrieve(
    prepared: PreparedTable,
    config: RagConfig,
    schema_queries: list[str],
    cell_queries: list[str],
    *,
    trace: Trace | None = None,
) -> Retrieval:
    """Multi-query schema and cell retrieval (`attach_retrievers` must have run)."""
    if prepared.schema_retriever is None or prepared.cell_retriever is None:
        raise RuntimeError("attach_retrievers() must run before retrieve()")
    if config.schema_mode == "all":
        columns = [(c, 1.0, "") for c in prepared.schema.columns]
    else:
        hits = multi_query_retrieve(prepared.schema_retriever, schema_queries, config.top_k)
        columns = [(prepared.schema.columns[h.index], h.score, h.query) for h in hits]
    cells: list[tuple[CellEntry, float, str]] = []
    if config.cell_mode == "retrieval":
        entries = prepared.cells.entries
        hits = multi_query_retrieve(prepared.cell_retriever, cell_queries, config.top_k)
        cells = [(entries[h.index], h.score, h.query) for h in hits]
    result = Retrieval(list(schema_queries), list(cell_queries), columns, cells)
    if trace is not None:
        trace.event(
            "rank",
            stage="retrieval",
            schema_queries=schema_queries,
            cell_queries=cell_queries,
            **result.to_trace(),
        )
    return result
