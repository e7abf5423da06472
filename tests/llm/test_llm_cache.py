"""CachedLLM over the real client and the stub: zero HTTP requests on a repeat, what is cached."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from tablequest.llm import (
    CachedLLM,
    CacheError,
    Fault,
    LLMUnavailable,
    OpenAICompatible,
    Scripted,
    StubServer,
    cache_clear,
    cache_key,
    cache_stats,
    default_cache_dir,
)

MSG = [{"role": "user", "content": "Which table has GDP?"}]


def client(stub: StubServer) -> OpenAICompatible:
    return OpenAICompatible(stub.url, "stub-model", timeout=2, max_retries=1, backoff_base=0.01)


def test_repeat_makes_zero_http_requests(tmp_path: Path) -> None:
    with StubServer(["table 3"]) as stub:
        with CachedLLM(client(stub), tmp_path) as llm:
            first = llm.chat(MSG)
            assert len(stub.requests) == 1
            second = llm.chat(MSG)
            assert len(stub.requests) == 1  # served from disk
        # a new process-like wrapper on the same directory also hits
        with CachedLLM(client(stub), tmp_path) as again:
            third = again.chat(MSG)
        assert len(stub.requests) == 1
    assert first[0].text == second[0].text == third[0].text == "table 3"
    assert not first[0].cached and second[0].cached and third[0].cached
    assert second[0].latency_s == 0.0 and second[0].usage == first[0].usage
    assert llm.hits == 1 and llm.misses == 1
    stats = cache_stats(tmp_path)
    assert stats["entries"] == 1 and stats["hits"] == 2 and stats["bytes"] > 0


def test_default_dir_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEQUEST_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    llm = CachedLLM(Scripted(["x"]))
    llm.chat(MSG)
    assert (tmp_path / "c" / "llm-cache.sqlite").exists()
    assert cache_stats()["entries"] == 1
    llm.close()


def test_errors_are_not_cached(tmp_path: Path) -> None:
    with StubServer([Fault.status(500), Fault.status(500), "fine"]) as stub:
        llm = CachedLLM(client(stub), tmp_path)
        with pytest.raises(LLMUnavailable):
            llm.chat(MSG)
        assert cache_stats(tmp_path)["entries"] == 0
        assert llm.chat(MSG)[0].text == "fine"
        assert len(stub.requests) == 3
        llm.close()


def test_empty_replies_are_not_cached(tmp_path: Path) -> None:
    inner = Scripted(["", "now with text"])
    llm = CachedLLM(inner, tmp_path)
    assert llm.chat(MSG)[0].text == ""
    assert llm.chat(MSG)[0].text == "now with text"
    assert llm.chat(MSG)[0].cached
    assert len(inner.calls) == 2
    llm.close()


def test_temperature_above_zero_not_cached_by_default(tmp_path: Path) -> None:
    inner = Scripted(["a", "b", "c", "d"])
    llm = CachedLLM(inner, tmp_path)
    assert [llm.chat(MSG, temperature=0.7)[0].text for _ in range(2)] == ["a", "b"]
    assert cache_stats(tmp_path)["entries"] == 0
    sampled = CachedLLM(inner, tmp_path, all_temperatures=True)
    assert [sampled.chat(MSG, temperature=0.7)[0].text for _ in range(2)] == ["c", "c"]
    llm.close()
    sampled.close()


def test_key_covers_backend_messages_and_parameters() -> None:
    base = cache_key({"backend": "openai", "url": "u", "model": "m"}, MSG, {"n": 1})
    assert base == cache_key({"url": "u", "model": "m", "backend": "openai"}, MSG, {"n": 1})
    assert base != cache_key({"backend": "openai", "url": "u", "model": "m2"}, MSG, {"n": 1})
    assert base != cache_key({"backend": "openai", "url": "u2", "model": "m"}, MSG, {"n": 1})
    assert base != cache_key({"backend": "openai", "url": "u", "model": "m"}, MSG, {"n": 2})
    other = [{"role": "user", "content": "Which table has GDP? "}]
    assert base != cache_key({"backend": "openai", "url": "u", "model": "m"}, other, {"n": 1})


def test_parameters_separate_entries(tmp_path: Path) -> None:
    inner = Scripted(["a", "b", "c", "d", "e"])
    llm = CachedLLM(inner, tmp_path)
    texts = [
        llm.chat(MSG)[0].text,
        llm.chat(MSG, max_tokens=10)[0].text,
        llm.chat(MSG, stop="x")[0].text,
        llm.chat(MSG, response_format={"type": "json_object"})[0].text,
        llm.chat(MSG, logprobs=True)[0].text,
        llm.chat(MSG)[0].text,
    ]
    assert texts == ["a", "b", "c", "d", "e", "a"]
    n2 = CachedLLM(Scripted(["p", "q"]), tmp_path).chat(MSG, n=2)
    assert [c.text for c in n2] == ["p", "q"]
    assert [c.text for c in llm.chat(MSG, n=2)] == ["p", "q"]  # same scripted:// backend key
    llm.close()


def test_concurrent_threads_share_the_cache(tmp_path: Path) -> None:
    llm = CachedLLM(Scripted(lambda msgs, params: msgs[-1]["content"].upper()), tmp_path)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(10):
                msg = [{"role": "user", "content": f"q{(i + j) % 5}"}]
                assert llm.chat(msg)[0].text == f"Q{(i + j) % 5}"
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert cache_stats(tmp_path)["entries"] == 5
    llm.close()


def test_clear(tmp_path: Path) -> None:
    assert cache_clear(tmp_path) == 0
    llm = CachedLLM(Scripted(["a", "b", "a2"]), tmp_path)
    llm.chat(MSG)
    llm.chat([{"role": "user", "content": "other"}])
    llm.close()
    assert cache_clear(tmp_path) == 2
    assert cache_stats(tmp_path)["entries"] == 0
    assert CachedLLM(Scripted(["fresh"]), tmp_path).chat(MSG)[0].text == "fresh"


def test_unusable_cache_is_bypassed_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    llm = CachedLLM(Scripted(["a", "b"]), blocker)
    assert llm.chat(MSG)[0].text == "a"
    assert llm.chat(MSG)[0].text == "b"
    err = capsys.readouterr().err
    assert err.count("continuing without it") == 1 and "TABLEQUEST_CACHE_DIR" in err


def test_corrupt_entries_and_files(tmp_path: Path) -> None:
    llm = CachedLLM(Scripted(["a", "b"]), tmp_path)
    llm.chat(MSG)
    conn = sqlite3.connect(tmp_path / "llm-cache.sqlite")
    conn.execute("UPDATE completions SET value = ?", (json.dumps([{"no": "text"}]),))
    conn.commit()
    conn.close()
    assert llm.chat(MSG)[0].text == "b"  # unreadable entry: recomputed and replaced
    assert llm.chat(MSG)[0].cached
    llm.close()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "llm-cache.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CacheError, match="cannot use the LLM cache"):
        cache_stats(bad)
    with pytest.raises(CacheError):
        cache_clear(bad)


def test_a_locked_file_is_waited_for_not_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding the write lock past the busy timeout: the cache waits and
    stays on (a loaded machine is not a broken cache)."""
    import sqlite3
    import threading

    from tablequest.llm import cache as cache_mod

    store = cache_mod.CacheFile(tmp_path / "c.sqlite")
    store.put("k0", {"url": "u", "model": "m"}, [{"text": "zero"}])
    holder = sqlite3.connect(tmp_path / "c.sqlite", timeout=0, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held by "another process"
    assert store._conn is not None
    store._conn.execute("PRAGMA busy_timeout = 50")  # the 10 s timeout, shortened
    threading.Timer(0.5, holder.rollback).start()
    store.put("k1", {"url": "u", "model": "m"}, [{"text": "one"}])
    assert not store.disabled
    assert store.get("k1") == [{"text": "one"}]
    holder.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(cache_mod, "BUSY_RETRY_S", 0.2)
    store.put("k2", {"url": "u", "model": "m"}, [{"text": "two"}])  # gives up this entry only
    holder.rollback()
    holder.close()
    assert not store.disabled
    assert store.get("k2") is None and store.get("k0") == [{"text": "zero"}]
    store.close()
