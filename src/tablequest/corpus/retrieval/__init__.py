"""Retrievers over a store (grep, BM25, dense, hybrid, rerank), sharded ranking and hit records."""
