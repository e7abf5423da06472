"""Evaluation harness: benchmark loaders, the papers' metrics and significance tests."""
