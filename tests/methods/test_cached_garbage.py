"""Issue 39, item 10, for the methods' own reply parsers: a reply a method could not parse
leaves the LLM cache (`LLM.discard`), so once the model server is fixed the next run reaches
it instead of getting the old garbage back.

Each method runs twice over one on-disk cache (`CachedLLM`): first against a "broken" server
that only greets — no reply is in any method's format, so none may stay cached — then against
a fixed one whose replies answer in the method's own format (TableSeek's and the QA
baselines' QA JSON, TableRAG's ``Final Answer:``, TabScope's ``<answer>`` tags, DTR's
non-code fallback), which must be asked and must answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.methods.test_no_garbage_answers import GREETING, MEDALS, QUESTION, NoSandbox

from tablequest.corpus import Store
from tablequest.llm import CachedLLM, Scripted, cache_stats
from tablequest.methods.registry import get_method
from tablequest.methods.run import ask
from tablequest.trace import Trace

QA_JSON = '{"status": "answered", "answer": "Norway"}'
FIXED = {
    "direct": QA_JSON,  # seek.qa.read_qa
    "seek": QA_JSON,  # the same parser, after its own pattern and refine calls
    "rag": "Thought: Norway has the most gold medals.\nFinal Answer: Norway",  # ReAct step
    "scope": "<answer>Norway</answer>",  # retrieval samples and the answer call
    "research": "Final Answer: Norway",  # the non-code fallback, lessons and report
}


def _ask(method: str, llm: CachedLLM) -> Any:
    store = Store()
    store.add_table(MEDALS, key="/tables/medals.csv")
    one_table = get_method(method).input in ("table", "tables")
    tid = store.ids_for_path("/tables/medals.csv")[0]
    return ask(QUESTION, store, method=method, llm=llm, trace=Trace.in_memory(),
               table_ids=[tid] if one_table else (),
               options={"encoder": "bm25"} if method == "rag" else None,
               sandbox=NoSandbox())  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize("method", list(FIXED))
def test_a_garbage_reply_leaves_the_cache_and_the_fixed_server_is_asked(
    tmp_path: Path, method: str
) -> None:
    broken = Scripted(lambda messages, params: GREETING)
    with CachedLLM(broken, tmp_path) as cache:
        first = _ask(method, cache)
        assert first.status == "failed" and broken.calls
        assert cache.discarded >= 1
    assert cache_stats(tmp_path)["entries"] == 0  # no greeting stays cached
    fixed = Scripted(lambda messages, params: FIXED[method])
    with CachedLLM(fixed, tmp_path) as cache:
        second = _ask(method, cache)
        assert cache.hits == 0 and fixed.calls  # the fixed server answered, not the cache
    assert (second.status, second.answer) == ("answered", "Norway")
