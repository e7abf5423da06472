"""Helpers of the commands that can run on Ray: corpora opened with shard actors, endpoints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tablequest.cli._output import fail_on

if TYPE_CHECKING:
    from tablequest.corpus import Corpus
    from tablequest.settings import Settings


def open_corpus(
    path: Path, ray: str | None, settings: Settings, *, json_out: bool = False
) -> Corpus:
    """A store or sharded corpus, read-only; a sharded one ranks on shard actors when a Ray
    address is given (flag or $TABLEQUEST_RAY_ADDRESS). The command's `settings` give the
    lock timeout, here and in every shard actor."""
    from tablequest.corpus import StoreError
    from tablequest.corpus import open_corpus as open_any
    from tablequest.errors import BadValue
    from tablequest.scale import RayUnavailable, ray_address

    address = ray_address(ray)
    try:
        corpus = open_any(path, lock_timeout=settings.store.lock_timeout)
    except StoreError as exc:
        fail_on(exc, json_out=json_out)
    if address is not None and corpus.manifest is not None:  # one actor per shard
        from tablequest.scale import attach

        try:
            attach(corpus, address, lock_timeout=settings.store.lock_timeout)
        except (RayUnavailable, BadValue) as exc:  # Ray missing or unreachable, a bad address
            corpus.close()
            fail_on(exc, json_out=json_out)
    return corpus


def endpoint_urls(settings: Settings) -> list[str]:
    """The LLM endpoints: ``[scale] llm_urls`` (the repeated --llm-url flag, else a trusted
    tablequest.toml's: an untrusted one cannot set them, `tablequest.configfile`), else the
    one configured ``[llm] url``."""
    if settings.scale.llm_urls:
        return list(settings.scale.llm_urls)
    return [settings.llm.url] if settings.llm.url else []
