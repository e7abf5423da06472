"""Code outside `corpus/` reads and ranks any corpus through the `Corpus` protocol and
`open_corpus`: it never names the sharded implementation nor asks whether a file is a
manifest (issue 38, item 4; docs/architecture.md, "Corpus")."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "tablequest"
CORPUS = SRC / "corpus"
#: the sharded implementation and the file-kind tests that callers used to switch on
FORBIDDEN = re.compile(r"\b(ShardedStore|is_manifest|ingest_sharded|shard_for)\b")


def _outside_corpus() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if CORPUS not in p.parents]


def test_no_type_switch_on_sharded_corpora_outside_corpus() -> None:
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in _outside_corpus()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if FORBIDDEN.search(line)
    ]
    assert found == [], "use open_corpus(path) and the Corpus protocol instead"


def test_the_check_would_see_one() -> None:
    assert len(_outside_corpus()) > 100 and all(CORPUS not in p.parents for p in _outside_corpus())
    assert FORBIDDEN.search("from tablequest.corpus.storage.shards import ShardedStore")
    assert FORBIDDEN.search("if is_manifest(path):") and not FORBIDDEN.search("is_manifesto")
    inside = (CORPUS / "storage" / "shards.py").read_text(encoding="utf-8")
    assert FORBIDDEN.search(inside)  # the implementation itself lives in corpus/
