"""Issue 39, item 10: a cached reply the caller could not parse is not served again.

The caller reports it (`LLM.discard`, which `ask_with_repair` / `ask_json` call on every
`ParseError`), through the wrappers, and `CachedLLM` deletes the entry: the next identical
call reaches the model, so a fixed server is asked again instead of the old garbage coming
back from the cache.
"""

from __future__ import annotations

from pathlib import Path

from tablequest.llm import (
    CachedLLM,
    Completion,
    Instrumented,
    Scripted,
    UsageMeter,
    ask_json,
    cache_stats,
    extract_json,
)
from tablequest.trace import Trace

MSG = [{"role": "user", "content": "Give the row as JSON."}]


def _parse(text: str) -> dict[str, object]:
    value = extract_json(text, dict)
    assert isinstance(value, dict)
    return value


def test_an_unparsable_reply_is_forgotten_and_the_fixed_server_asked_again(tmp_path: Path) -> None:
    broken = Scripted(["<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>"])
    with CachedLLM(broken, tmp_path) as cache:
        first = ask_json(Instrumented(cache), MSG, _parse, kind="other", trace=None)
        assert first.value is None and first.attempts == 2  # the call and its one repair
        assert cache.discarded == 2 and cache_stats(tmp_path)["entries"] == 0
    fixed = Scripted(['{"row": 3}'])
    with CachedLLM(fixed, tmp_path) as cache:
        second = ask_json(Instrumented(cache), MSG, _parse, kind="other", trace=None)
        assert second.value == {"row": 3} and len(fixed.calls) == 1  # not the cached garbage
        assert cache.hits == 0 and cache.discarded == 0
    # a reply that parsed stays cached: the third run makes no call
    again = Scripted([])
    with CachedLLM(again, tmp_path) as cache:
        meter = UsageMeter()
        third = ask_json(
            Instrumented(cache, usage=meter, trace=Trace.in_memory()), MSG, _parse,
            kind="other", trace=None,
        )  # fmt: skip
        assert third.value == {"row": 3} and again.calls == [] and cache.hits == 1
        assert meter.totals.cache_hits == 1


def test_completions_carry_their_entry_and_discard_deletes_only_it(tmp_path: Path) -> None:
    other = [{"role": "user", "content": "Another question."}]
    with CachedLLM(Scripted(["a", "b", "c"]), tmp_path) as cache:
        reply = cache.chat(MSG)[0]
        kept = cache.chat(other)[0]
        assert reply.cache_key is not None and reply.cache_key != kept.cache_key
        assert reply.to_dict().keys() == kept.to_dict().keys()  # the key is not stored
        hit = cache.chat(MSG)[0]
        assert hit.cached and hit.cache_key == reply.cache_key
        assert hit == Completion("a", cached=True, usage=reply.usage)  # the key: not compared
        cache.discard(hit)
        assert cache_stats(tmp_path)["entries"] == 1
        assert cache.chat(MSG)[0].text == "c"  # asked again
        assert cache.chat(other)[0].cached  # the other entry stayed
    plain = Scripted(["x"]).chat(MSG)[0]
    assert plain.cache_key is None
