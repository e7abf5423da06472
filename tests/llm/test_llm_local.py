"""LlamaCppLocal: the missing-extra error, the adapter over a fake llama_cpp, the real library."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tablequest.llm import LlamaCppLocal, LLMBadResponse, LLMUnavailable

MSG = [{"role": "user", "content": "hello"}]


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(LLMUnavailable, match=r"pip install 'tablequest\[local\]'"):
        LlamaCppLocal(model)


class FakeLlama:
    """Stands in for llama_cpp.Llama; records options and calls."""

    instances: ClassVar[list[FakeLlama]] = []

    def __init__(self, model_path: str, **options: Any):
        if "broken" in model_path:
            raise ValueError("failed to load model")
        self.model_path = model_path
        self.options = options
        self.calls: list[dict[str, Any]] = []
        self.closed = False
        FakeLlama.instances.append(self)

    def create_chat_completion(self, **kw: Any) -> Any:
        self.calls.append(kw)
        if kw.get("logprobs") and not self.options.get("logits_all"):
            raise ValueError("logprobs is not supported for models created with logits_all=False")
        text = f"reply {len(self.calls)}"
        if kw["messages"][-1]["content"] == "garbage":
            return {"choices": []}
        choice: dict[str, Any] = {
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        if kw.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": "reply", "logprob": -0.25}]}
        return {"choices": [choice], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def fake_llama(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    module = types.ModuleType("llama_cpp")
    module.Llama = FakeLlama  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp", module)
    FakeLlama.instances.clear()
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_adapter_over_fake_llama(fake_llama: Path) -> None:
    llm = LlamaCppLocal(fake_llama, n_ctx=2048, n_threads=2, chat_format="chatml")
    assert FakeLlama.instances == []  # loaded lazily
    out = llm.chat(MSG, n=2, stop="END", max_tokens=32, response_format={"type": "json_object"})
    assert [c.text for c in out] == ["reply 1", "reply 2"]
    assert out[0].usage.prompt_tokens == 7 and out[0].token_logprobs is None
    [fake] = FakeLlama.instances
    assert fake.options["n_ctx"] == 2048 and fake.options["chat_format"] == "chatml"
    assert fake.calls[0]["stop"] == ["END"] and fake.calls[0]["max_tokens"] == 32
    assert fake.calls[0]["response_format"] == {"type": "json_object"}
    assert llm.describe() == {
        "backend": "llama_cpp",
        "url": f"file://{fake_llama}",
        "model": "tiny.gguf",
    }
    llm.close()
    assert fake.closed


def test_logprobs_need_logits_all(fake_llama: Path) -> None:
    plain = LlamaCppLocal(fake_llama)
    [c] = plain.chat(MSG, logprobs=True)
    assert c.token_logprobs is None and plain.supports_logprobs is False
    full = LlamaCppLocal(fake_llama, logits_all=True)
    [c] = full.chat(MSG, logprobs=True)
    assert c.token_logprobs == [-0.25]


def test_bad_result_and_bad_files(fake_llama: Path, tmp_path: Path) -> None:
    with pytest.raises(LLMBadResponse, match="unexpected result"):
        LlamaCppLocal(fake_llama).chat([{"role": "user", "content": "garbage"}])
    with pytest.raises(LLMUnavailable, match="not found"):
        LlamaCppLocal(tmp_path / "missing.gguf")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"x")
    with pytest.raises(LLMUnavailable, match="could not load"):
        LlamaCppLocal(broken).chat(MSG)


def test_logprob_formats() -> None:
    from tablequest.llm.local import _logprobs

    assert _logprobs(None) is None
    assert _logprobs({"content": [{"logprob": -1}]}) == [-1.0]
    assert _logprobs({"token_logprobs": [None, -0.5]}) == [-0.5]
    assert _logprobs({"content": []}) is None


def test_real_llama_cpp_reports_missing_file(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    with pytest.raises(LLMUnavailable, match="not found"):
        LlamaCppLocal(tmp_path / "nope.gguf")
