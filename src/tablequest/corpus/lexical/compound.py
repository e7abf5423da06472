"""Compound words split into their parts: ``population_2020``, ``capitalCity`` (issue 39).

A header such as ``population_2020`` or ``capitalCity`` is one token to a regex (``_`` is a
word character) and one to BM25 (which lower-cases before it splits), so a question's
"population" or "capital city" did not find it. Both lexical indexes also see the parts now:

- grep (`searchable_text`): the text a grep index is built from gets one more line naming
  each distinct compound token's parts (``capital city | population 2020``). Eq. 1 is
  evaluated over that text, so ``\\bcapital\\b`` matches the table while
  ``\\bpopulation_2020\\b`` still matches the original token. The stored text (what previews
  show, what matched rows are read from) is unchanged.
- BM25 (`compound_tokens`, added by `rank.tokenize`): each occurrence of a compound gives
  the whole snake_case token (its parts are BM25 tokens already) and the parts of a
  camelCase one (the whole, lower-cased, is a token already): ``capitalcity`` stays and
  ``capital``, ``city`` join it.

Split points (ours): ``_``, and a lower-case ASCII letter followed by an upper-case one
(``capitalCity``; ``HTTPServer`` and ``PDFs`` stay whole, so codes and acronyms do). Every
token of a table is split, not only its headers' (neither index knows which line is the
header); a cell such as ``McLaren`` adds ``Mc`` and ``Laren``, which only adds matches.
"""

from __future__ import annotations

import re

__all__ = ["compound_tokens", "compounds", "searchable_text", "word_parts"]

_HINT = re.compile(r"_|[a-z][A-Z]")
# a whole word-token holding a split point (`\b` first: no start inside a word, so a text
# is scanned in linear time)
_COMPOUND = re.compile(r"\b\w*(?:_|[a-z][A-Z])\w*")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def word_parts(token: str) -> list[str]:
    """The parts of a compound token (``capital_city`` → capital, city); [] when it has none
    but itself."""
    parts = [p for piece in token.split("_") for p in _CAMEL.split(piece) if p]
    return [] if parts == [token] else parts


def compounds(text: str) -> list[list[str]]:
    """The parts of each distinct compound token of `text`, in order of first appearance."""
    if _HINT.search(text) is None:
        return []
    seen: dict[str, list[str]] = {}
    for token in _COMPOUND.findall(text):
        if token not in seen:
            seen[token] = word_parts(token)
    return [parts for parts in seen.values() if parts]


def searchable_text(text: str) -> str:
    """`text` plus one line of its compounds' parts (unchanged when it has none)."""
    found = compounds(text)
    if not found:
        return text
    return text + "\n" + " | ".join(" ".join(parts) for parts in found)


def compound_tokens(text: str) -> list[str]:
    """The BM25 tokens `text`'s compounds add (lower case, one set per occurrence): a
    snake_case token whole, the parts of a camelCase one (module doc)."""
    if _HINT.search(text) is None:
        return []
    out: list[str] = []
    for token in _COMPOUND.findall(text):
        pieces = [p for p in token.split("_") if p]
        if len(pieces) > 1:
            out.append(token.lower())
        for piece in pieces:
            camel = _CAMEL.split(piece)
            if len(camel) > 1:
                out.extend(p.lower() for p in camel)
    return out
