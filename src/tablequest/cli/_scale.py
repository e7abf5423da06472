"""Helpers of the commands that can run on Ray: corpora opened with shard actors, endpoints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tablequest.cli._output import fail, fail_on

if TYPE_CHECKING:
    from tablequest.corpus.storage.store import Store


def open_corpus(path: Path, ray: str | None, *, json_out: bool = False) -> Store:
    """A store or sharded corpus, read-only; a sharded one ranks on shard actors when a Ray
    address is given (flag or $TABLEQUEST_RAY_ADDRESS)."""
    from tablequest.corpus.storage.shards import ShardedStore, is_manifest
    from tablequest.corpus.storage.store import Store, StoreError
    from tablequest.scale.cluster import RayUnavailable, ray_address

    address = ray_address(ray)
    try:
        if not is_manifest(path):
            return Store(path, read_only=True)
        store = ShardedStore(path, read_only=True)
    except StoreError as exc:
        fail_on(exc, json_out=json_out)
    if address is not None:
        from tablequest.scale.actors import attach

        try:
            attach(store, address)
        except (RayUnavailable, ValueError) as exc:
            store.close()
            fail(str(exc), json_out=json_out)
    return store


def endpoint_urls(flags: list[str] | None, fallback: str | None) -> list[str]:
    """The LLM endpoints: --llm-url flags, else [scale] llm_urls of tablequest.toml (not of
    an untrusted one: `tablequest.configfile`), else the one configured URL."""
    if flags:
        return list(dict.fromkeys(flags))
    from tablequest.configfile import ConfigFileError
    from tablequest.llm.config import ConfigError, config_files

    try:
        files = config_files()
    except ConfigError as exc:
        fail(str(exc))
    for file in files:
        try:
            urls = file.allowed("scale")[0].get("llm_urls")  # not from an untrusted file
        except ConfigFileError as exc:
            fail(str(exc))
        if urls is not None:
            if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
                fail(f"{file.path}: [scale] llm_urls must be a list of URLs")
            return list(dict.fromkeys(urls))
    return [fallback] if fallback else []
