"""No two top-level classes of src/tablequest share a name (issue 38: three were `Corpus`),
so a name in code, a traceback or the docs says which class it is; the few that still do
are listed with the reason."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tablequest"

SHARED: dict[str, str] = {
    "Candidate": "research/planner's candidate path and scope/aggregate's retrieval sample: "
    "each private to its method, named as its paper",
    "Group": "the sandbox child's group-by lineage and TabScope's identical id sets (Eq. 2)",
    "Limits": "the sandbox's per-child rlimits (private) and the server's `service.Limits`",
    "ModelServer": "a Protocol in settings standing for `llm.ModelServer` (settings sits "
    "below llm and cannot import it)",
    "Plan": "a grep pattern's index plan, the sandbox's launch plan (private) and DTR's MOD "
    "plan: each private to its package",
    "Runner": "the sandbox session each of TableRAG and DTR runs code in (test doubles stand "
    "in for it); their methods differ",
    "SearchHit": "`serve.models.SearchHit` is the OpenAPI schema of `corpus.SearchHit`: its "
    "name is the schema's name in /openapi.json",
    "Selection": "TableSeek's refinement result and the MCP window's rows picked by value",
    "Step": "a scripted reply step of the stub server (private) and a DTR step reply",
    "TableRef": "a benchmark's table file (eval) and a consulted table on the answer card (serve)",
}
"""Class names defined more than once, and why (a name here no longer shared fails too)."""


def top_level_classes() -> dict[str, list[str]]:
    """Class name → the modules (paths under src/tablequest) that define it at top level."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                found[node.name].append(path.relative_to(SRC).as_posix())
    return found


def test_no_two_classes_share_a_name() -> None:
    shared = {name: paths for name, paths in top_level_classes().items() if len(paths) > 1}
    assert {n: p for n, p in shared.items() if n not in SHARED} == {}
    assert sorted(set(SHARED) - set(shared)) == []  # an allowance no longer needed goes


def test_the_corpus_classes_have_distinct_names() -> None:
    found = top_level_classes()
    assert found["Corpus"] == ["corpus/storage/interface.py"]  # the protocol
    assert found["BuiltCorpus"] == ["eval/corpora.py"] and found["OpenedCorpus"] == ["notebook.py"]
