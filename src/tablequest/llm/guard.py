"""A switch that makes real model requests fail fast (like pydantic-ai's ALLOW_MODEL_REQUESTS).

With ``TABLEQUEST_ALLOW_MODEL_REQUESTS=0`` (the test suite sets it) `OpenAICompatible` refuses
any base URL whose host is not loopback (127.0.0.1, localhost, ::1) before opening a socket, so
a test can talk to `StubServer` but never to a real model.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from tablequest.llm.base import ModelRequestsDisallowed

ENV_VAR = "TABLEQUEST_ALLOW_MODEL_REQUESTS"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_FALSE = frozenset({"0", "false", "no", "off"})


def model_requests_allowed() -> bool:
    """True unless TABLEQUEST_ALLOW_MODEL_REQUESTS is 0/false/no/off."""
    return os.environ.get(ENV_VAR, "1").strip().lower() not in _FALSE


def is_loopback(url: str) -> bool:
    """True when `url`'s host is 127.0.0.1, localhost or ::1."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    return host is not None and host.lower() in LOOPBACK_HOSTS


def check_model_request(url: str, *, model: str | None = None) -> None:
    """Raise `ModelRequestsDisallowed` if requests to `url` are switched off.

    Raises:
        ModelRequestsDisallowed: the host is not loopback and model requests are disallowed.
    """
    if model_requests_allowed() or is_loopback(url):
        return
    raise ModelRequestsDisallowed(
        f"refusing a model request to {url!r}: {ENV_VAR}=0 allows only 127.0.0.1/localhost/::1 "
        f"(use tablequest.llm.StubServer or Scripted in tests, or unset {ENV_VAR})",
        url=url,
        model=model,
    )
