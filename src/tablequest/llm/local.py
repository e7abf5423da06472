"""`LlamaCppLocal`: a GGUF model run in-process by llama-cpp-python (extra ``[local]``).

``llama_cpp`` is imported lazily, so the package works without it; using the backend without
the extra raises one `LLMUnavailable` saying how to install it. Select it from the CLI with
``--llm gguf:/path/model.gguf``.

Choices: the model is loaded on the first call (loading takes seconds); calls are serialized
with a lock (a llama.cpp context is not thread-safe); `n > 1` is emulated with n sequential
generations (``create_chat_completion`` makes one); logprobs need ``logits_all=True`` and are
None otherwise (or when the installed version does not return them).
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tablequest.llm.base import (
    LLM,
    Completion,
    LLMBadResponse,
    LLMUnavailable,
    Message,
    Usage,
    check_chat_args,
    estimate_prompt_tokens,
    estimate_tokens,
    normalize_stop,
)

INSTALL_HINT = "install with: pip install 'tablequest[local]'"


def import_llama_cpp() -> Any:
    """Import ``llama_cpp`` or raise `LLMUnavailable` with the install command."""
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as exc:
        raise LLMUnavailable(
            f"the local GGUF backend needs llama-cpp-python, which is not installed; {INSTALL_HINT}"
        ) from exc


class LlamaCppLocal(LLM):
    """Chat with a local GGUF file through llama-cpp-python.

    Args:
        model_path: Path to a ``.gguf`` file.
        n_ctx: Context window in tokens.
        n_gpu_layers: Layers offloaded to a GPU (0 = CPU only, -1 = all).
        n_threads: CPU threads (None = llama.cpp's default).
        seed: Sampling seed, for reproducible runs at temperature > 0.
        chat_format: llama.cpp chat template name; None uses the one in the GGUF metadata.
        logits_all: Keep all logits, which llama.cpp needs to return logprobs (slower).
        verbose: Let llama.cpp print its load log.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 8192,
        n_gpu_layers: int = 0,
        n_threads: int | None = None,
        seed: int = 0,
        chat_format: str | None = None,
        logits_all: bool = False,
        verbose: bool = False,
    ) -> None:
        self._llama_cpp = import_llama_cpp()
        self.model_path = Path(model_path).expanduser()
        if not self.model_path.is_file():
            raise LLMUnavailable(
                f"GGUF model file not found: {str(self.model_path)!r}; pass --llm gguf:/path/to/"
                "model.gguf with an existing file",
                url=str(self.model_path),
            )
        self._options: dict[str, Any] = {
            "n_ctx": n_ctx,
            "n_gpu_layers": n_gpu_layers,
            "seed": seed,
            "verbose": verbose,
            "logits_all": logits_all,
        }
        if n_threads is not None:
            self._options["n_threads"] = n_threads
        if chat_format is not None:
            self._options["chat_format"] = chat_format
        self._model: Any = None
        self._lock = threading.Lock()
        self.supports_logprobs = True

    def describe(self) -> dict[str, str]:
        return {"backend": "llama_cpp", "url": f"file://{self.model_path}", "model": self.model}

    @property
    def model(self) -> str:
        return self.model_path.name

    def _load(self) -> Any:
        if self._model is None:
            try:
                self._model = self._llama_cpp.Llama(
                    model_path=str(self.model_path), **self._options
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise LLMUnavailable(
                    f"llama.cpp could not load {str(self.model_path)!r}: {exc}; is it a valid "
                    "GGUF file that fits in memory (try a smaller n_ctx)?",
                    url=str(self.model_path),
                    model=self.model,
                ) from exc
        return self._model

    def close(self) -> None:
        with self._lock:
            model, self._model = self._model, None
        if model is not None and hasattr(model, "close"):
            model.close()

    def chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        n: int = 1,
        logprobs: bool = False,
        stop: str | Sequence[str] | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> list[Completion]:
        msgs = check_chat_args(messages, max_tokens=max_tokens, n=n)
        kwargs: dict[str, Any] = {
            "messages": msgs,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stop": normalize_stop(stop) or [],
        }
        if response_format is not None:
            kwargs["response_format"] = response_format
        with self._lock:
            model = self._load()
            return [self._one(model, msgs, kwargs, logprobs) for _ in range(n)]

    def _one(
        self, model: Any, msgs: list[Message], kwargs: dict[str, Any], logprobs: bool
    ) -> Completion:
        started = time.perf_counter()
        if logprobs and self.supports_logprobs:
            try:
                result = model.create_chat_completion(**kwargs, logprobs=True)
            except (TypeError, ValueError):  # older versions, or logits_all=False
                self.supports_logprobs = False
                result = model.create_chat_completion(**kwargs)
        else:
            result = model.create_chat_completion(**kwargs)
        latency = time.perf_counter() - started
        try:
            choice = result["choices"][0]
            text = choice["message"].get("content") or ""
            usage = result.get("usage") or {}
            counted = Usage(
                int(usage.get("prompt_tokens", estimate_prompt_tokens(msgs))),
                int(usage.get("completion_tokens", estimate_tokens(text))),
            )
            return Completion(
                text=text,
                finish_reason=str(choice.get("finish_reason") or "unknown"),
                token_logprobs=_logprobs(choice.get("logprobs")) if logprobs else None,
                usage=counted,
                latency_s=latency,
            )
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMBadResponse(
                f"llama.cpp returned an unexpected result for {self.model!r}: {exc!r}",
                url=str(self.model_path),
                model=self.model,
            ) from exc


def _logprobs(data: Any) -> list[float] | None:
    """Read logprobs in either the chat format (``content``) or the completion format."""
    if not isinstance(data, dict):
        return None
    content = data.get("content")
    if isinstance(content, list) and content:
        return [float(t["logprob"]) for t in content]
    tokens = data.get("token_logprobs")
    if isinstance(tokens, list) and tokens:
        return [float(t) for t in tokens if t is not None]
    return None
