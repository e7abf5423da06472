"""`extract_json`: the JSON object or array in what a model wrote (prose, fences, cut off).

Choices:
- Fenced blocks are tried first, then every ``{`` / ``[`` left to right; the first candidate
  that parses as the expected type is returned. Leniency: trailing commas, single quotes,
  Python literals (True/None), bare keys. A truncated trailing object is repaired by cutting
  back to the last complete element and closing the brackets; a partial string or number is
  dropped rather than guessed. If nothing can be repaired: `TruncatedOutput`.
- ``<think>…</think>`` blocks are removed first (`tablequest.llm.parse.strip_think`).
- The work is bounded: at most 64 openers per segment and 400,000 characters scanned.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from tablequest.llm.parse import NoJSONFound, TruncatedOutput, WrongJSONType, strip_think

__all__ = ["extract_json"]

# a fence opens at the start of a line: "```" inside a JSON string (a key or value that holds
# backticks) is not one; a fence opened mid-line is still read, as part of the whole text
_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?:json5?|javascript|js|python|py)?[ \t]*\n?(.*?)(?:```|\Z)",
    re.S | re.I | re.M,
)
_CLOSER = {"{": "}", "[": "]"}
_WORDS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false"}
_WORDS["None"] = "null"
_MAX_STARTS = 64  # openers tried per segment
_MAX_WORK = 400_000  # characters scanned in total before giving up


_SPECIAL = re.compile(r"[\"'{}\[\],\\]")
Scan = tuple[Literal["ok", "open", "bad"], int, list[str], list[tuple[int, tuple[str, ...]]]]


def _scan(s: str, start: int) -> Scan:
    """Bracket-match from `s[start]`.

    Returns the status ("ok" balanced, "open" runs to the end, "bad" mismatched), the end
    index, the stack still open at the end (a trailing quote char if inside a string), and
    each comma outside strings with the stack open at that point.
    """
    stack: list[str] = []
    commas: list[tuple[int, tuple[str, ...]]] = []
    quote = ""
    skip_to = start
    for match in _SPECIAL.finditer(s, start):
        i = match.start()
        if i < skip_to:
            continue
        c = s[i]
        if quote:
            if c == "\\":
                skip_to = i + 2
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "{[":
            stack.append(c)
        elif c in "}]":
            if not stack or _CLOSER[stack[-1]] != c:
                return "bad", i, stack, commas
            stack.pop()
            if not stack:
                return "ok", i + 1, stack, commas
        elif c == ",":
            commas.append((i, tuple(stack)))
    if quote:
        stack.append(quote)
    return "open", len(s), stack, commas


def _to_json(s: str) -> str:
    """Rewrite JSON-ish text (single quotes, Python literals, bare keys, trailing commas)."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in "\"'":
            j, buf = i + 1, []
            while j < n and s[j] != c:
                if s[j] == "\\" and j + 1 < n:
                    pair = s[j : j + 2]
                    buf.append("'" if pair == "\\'" else pair)
                    j += 2
                    continue
                buf.append('\\"' if s[j] == '"' else s[j])
                j += 1
            out.append('"' + "".join(buf) + '"')
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (s[j].isalnum() or s[j] in "_-"):
                j += 1
            word = s[i:j]
            out.append(_WORDS.get(word, json.dumps(word)))
            i = j
        elif c == ",":
            rest = s[i + 1 :].lstrip()
            if not rest.startswith(("}", "]")):
                out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


_FAIL = object()


def _loads(s: str) -> Any:
    try:
        return json.loads(s, strict=False)
    except ValueError:
        pass
    try:
        return json.loads(_to_json(s), strict=False)
    except ValueError:
        return _FAIL


def _repair(fragment: str) -> Any:
    """Close a truncated fragment after its last complete element; `_FAIL` if impossible."""
    _, _, stack, commas = _scan(fragment, 0)
    cuts: list[tuple[int, tuple[str, ...]]] = []
    tail = fragment.rstrip()
    if stack and stack[-1] in "{[" and tail.endswith(("}", "]", '"', ",")):
        cuts.append((len(tail), tuple(stack)))
    cuts.extend(reversed(commas))
    for end, open_stack in cuts[:12]:
        prefix = fragment[:end].rstrip().rstrip(",")
        closed = prefix + "".join(_CLOSER[b] for b in reversed(open_stack))
        value = _loads(closed)
        if value is not _FAIL:
            return value
    return _FAIL


def _type_ok(value: Any, expect: type | None) -> bool:
    if expect is None:
        return isinstance(value, dict | list)
    return isinstance(value, expect)


def extract_json(text: str, expect: type[dict[Any, Any]] | type[list[Any]] | None = None) -> Any:
    """The first JSON object or array in `text` (of type `expect` when given).

    Raises:
        NoJSONFound: there is no JSON-like value in the text.
        WrongJSONType: JSON was found, but not of type `expect`.
        TruncatedOutput: the value is cut off and cannot be repaired.
    """
    body = strip_think(text)
    segments = [m.group(1) for m in _FENCE.finditer(body) if m.group(1).strip()] + [body]
    truncated = wrong = False
    work = 0
    for segment in segments:
        starts = [i for i, c in enumerate(segment) if c in "{["][:_MAX_STARTS]
        repaired = False
        for start in starts:
            if work > _MAX_WORK:
                break
            status, end, _, _ = _scan(segment, start)
            work += end - start
            if status == "bad" or (status == "open" and repaired):
                continue
            if status == "open":
                repaired = True  # one repair per segment: later openers are inside this one
                value = _repair(segment[start:])
                truncated = truncated or value is _FAIL
            else:
                value = _loads(segment[start:end])
            if value is _FAIL:
                continue
            if _type_ok(value, expect):
                return value
            wrong = True
    if truncated:
        raise TruncatedOutput("JSON in the model output is cut off and cannot be repaired", text)
    if wrong:
        name = expect.__name__ if expect is not None else "object or array"
        raise WrongJSONType(f"the model output has JSON, but no {name}", text)
    raise NoJSONFound("no JSON object or array in the model output", text)
