"""Phrase BM25: word tokens plus word bigrams, the header counted twice (``phrase-hybrid``).

It indexes each table's header-first text (`corpus.storage.views`: the header rows on the
first line, then the title, then one line per body row). Each line gives its word tokens
(`word_tokens`: lower case, no stop words; compound words are not split here, BM25's
`tokenize` splits them) and the bigrams of consecutive tokens (``new_york``), never across
lines, so a question's phrase ("new york americans") scores
where it stands in one row. The first (header) line is counted twice (a poor man's field
weight: questions name columns). A question is one line. bm25s with k1 = 0.7, b = 0.3.

Choices (ours), made on WikiTableQuestions *training* questions only (the first 2,000;
`benchmarks/phrase_retrieval.py`): bigrams and the doubled header each raise BM25 R@1
(0.404 → 0.427), and lower k1 / b (saturate term counts early, normalize long tables less)
beat bm25s's defaults (1.5 / 0.75) in fusion with dense scores; trigrams added nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from tablequest.corpus.lexical.rank import BM25Kind, word_tokens
from tablequest.corpus.storage.views import header_first_texts

__all__ = ["PHRASE_BM25", "phrase_tokens", "question_tokens"]


def phrase_tokens(texts: Sequence[str]) -> list[list[str]]:
    """Per table text: the tokens and bigrams of each line, the first (header) line's twice."""
    return [_lines(text.split("\n")[:1] * 2 + text.split("\n")[1:]) for text in texts]


def question_tokens(questions: Sequence[str]) -> list[list[str]]:
    """Per question: its tokens and bigrams, line by line (no header to double)."""
    return [_lines(q.split("\n")) for q in questions]


def _lines(lines: Sequence[str]) -> list[str]:
    tokens: list[str] = []
    for line in lines:
        words = word_tokens([line])[0]
        tokens += words
        tokens += [f"{a}_{b}" for a, b in pairwise(words)]
    return tokens


PHRASE_BM25 = BM25Kind(
    "bm25-phrase-v2",
    phrase_tokens,
    (("k1", 0.7), ("b", 0.3)),
    query=question_tokens,
    source=header_first_texts,
)
"""The phrase index of a store (cached beside the plain BM25 index)."""
