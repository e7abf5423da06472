"""What an OpenAI-compatible server says about its model: the context length.

vLLM lists ``max_model_len`` for each model in ``GET /v1/models``; llama.cpp's server reports
``n_ctx`` in ``GET /props`` (under ``default_generation_settings``, older builds at the top
level) and in ``/v1/models`` as ``meta.n_ctx_train``. Anything else (OpenAI, a down server, a
malformed reply) gives None, and callers use their documented default. Results are cached
per URL for the process; every probe has a short timeout.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx

from tablequest.llm.base import LLMError
from tablequest.llm.guard import check_model_request

__all__ = ["context_length"]

_CACHE: dict[str, int | None] = {}
_LOCK = threading.Lock()


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _from_models(data: Any, model: str | None) -> int | None:
    items = data.get("data") if isinstance(data, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or (model and item.get("id") not in (model, None)):
            continue
        meta = item.get("meta")
        train = meta.get("n_ctx_train") if isinstance(meta, dict) else None
        found = _positive(item.get("max_model_len")) or _positive(train)
        if found:
            return found
    return None


def _from_props(data: Any) -> int | None:
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    nested = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _positive(nested) or _positive(data.get("n_ctx"))


def context_length(
    url: str | None, *, model: str | None = None, api_key: str | None = None, timeout: float = 3.0
) -> int | None:
    """The model's context length in tokens as the server reports it, or None."""
    if not url:
        return None
    key = f"{url}\0{model}"
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    base = url.rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    found: int | None = None
    try:
        check_model_request(base, model=model or "?")
        with httpx.Client(timeout=timeout, headers=headers) as client:
            for target in (f"{base}/models", f"{root}/props"):
                try:
                    reply = client.get(target)
                    data = reply.json() if reply.status_code == 200 else None
                except (httpx.HTTPError, ValueError):
                    data = None
                found = _from_models(data, model) or _from_props(data)
                if found:
                    break
    except LLMError:
        found = None
    with _LOCK:
        _CACHE[key] = found
    return found
