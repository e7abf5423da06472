"""Storage: the DuckDB store, its file lock, the catalog, ingest and the read workers, sharded
corpora.
"""
