"""Sibling hard negatives in the spirit of TCR-Bench (Sibling Table Groups).

TCR-Bench derives each question's group from one source table: the gold table answers the
question, its siblings look alike but do not (renamed or abbreviated columns such as
`postal_code` → `zip_code`, values written differently — numbers as words or ``3.31×10^+11``,
dates as ``Feb.15.2006`` or Roman numerals —, rows resampled so the answer rows are gone).

`make_siblings(table, answer_rows, n=…, seed=…)` builds `n` such variants. Every sibling drops
the answer rows (that alone makes it unanswerable, so exactly one table of the group, the
gold one, stays answerable) and gets at least one surface perturbation:

- ``rename``: some column names renamed (a small synonym list), abbreviated (``Attendance`` →
  ``Att.``), stripped of vowels or re-cased (``Avg. Attendance`` → ``avg_attendance``);
- ``reformat``: whole columns of numbers (thousands separators, fixed decimals, scientific
  ``×10^``, English words) or ISO dates (``Feb.15.2006``, ``15/02/2006``,
  ``February 15, 2006``, Roman numerals) rewritten;
- ``resample``: up to 10% of the other rows dropped and the row order shuffled.

Randomness: `random.Random(f"{seed}:{content_hash}:{i}")` per sibling, so a sibling depends
only on the seed, the table and its position. Sibling rows keep their original row ids.

`with_siblings(dataset, n=…, seed=…)` adds `n` siblings per gold table, without the answer
rows of any of its questions (from TCR-Bench-style `extra["answer_index"]` when present, else
from the body rows holding an answer value), and sets each question's group. Choice (ours):
questions whose answer rows cannot be located, cover more than half of the table (counts,
aggregates) or would leave the siblings empty are left out and counted in the notes.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from tablequest.errors import UsageError
from tablequest.eval.datasets.common import Dataset, Question, TableRef
from tablequest.table import Table

__all__ = [
    "SIBLING_KINDS",
    "Sibling",
    "SiblingError",
    "answer_rows",
    "make_siblings",
    "number_words",
    "with_siblings",
]

SiblingKind = Literal["rename", "reformat", "resample"]
SIBLING_KINDS: tuple[SiblingKind, ...] = ("rename", "reformat", "resample")


class SiblingError(UsageError):
    """Siblings cannot be made as asked (no answer rows, unknown kind, bad count)."""


@dataclass(frozen=True)
class Sibling:
    """One hard negative: the table, the perturbations applied and the rows removed."""

    table: Table
    kinds: tuple[str, ...]
    removed_rows: tuple[int, ...]
    renamed: dict[str, str] = field(default_factory=dict)
    reformatted: tuple[str, ...] = ()


# -- answer rows -------------------------------------------------------------------------------
def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)  # 1,111 = 1111
    return " ".join(re.sub(r"[^\w.%-]+", " ", text).split())


def answer_rows(table: Table, answers: Iterable[str]) -> list[int]:
    """Body row ids with a cell equal to one of `answers` (case, accents, spacing ignored)."""
    wanted = {_norm(a) for a in answers} - {""}
    return [
        rid
        for rid, row in zip(table.row_ids, table.body, strict=True)
        if any(_norm(c) in wanted for c in row)
    ]


# -- column renames ----------------------------------------------------------------------------
_SYNONYMS = {
    "id": "identifier",
    "identifier": "id",
    "number": "no.",
    "no.": "number",
    "name": "title",
    "title": "name",
    "year": "yr",
    "date": "day",
    "code": "cd",
    "address": "addr",
    "postal": "zip",
    "zip": "postal",
    "city": "town",
    "country": "nation",
    "nation": "country",
    "team": "club",
    "club": "team",
    "player": "athlete",
    "points": "pts",
    "total": "sum",
    "average": "avg",
    "avg.": "average",
    "population": "pop.",
    "percentage": "pct",
    "position": "pos.",
    "district": "region",
    "phone": "contact_number",
    "score": "result",
    "rank": "ranking",
    "location": "place",
    "notes": "remarks",
    "time": "duration",
}


def _synonym(name: str, rng: random.Random) -> str:
    words = name.split()
    hits = [i for i, w in enumerate(words) if w.lower() in _SYNONYMS]
    if not hits:
        return name
    i = rng.choice(hits)
    words[i] = _SYNONYMS[words[i].lower()]
    return " ".join(words)


def _abbreviate(name: str, rng: random.Random) -> str:
    return " ".join(w[:3] + "." if len(w) > 4 and w.isalpha() else w for w in name.split())


def _devowel(name: str, rng: random.Random) -> str:
    return " ".join(
        w[0] + re.sub(r"[aeiouAEIOU]", "", w[1:]) if len(w) > 3 else w for w in name.split()
    )


def _recase(name: str, rng: random.Random) -> str:
    words = re.findall(r"[^\W_]+", name)
    if not words:
        return name
    if rng.random() < 0.5:
        return "_".join(w.lower() for w in words)
    return "".join(w[:1].upper() + w[1:] for w in words)


_RENAMERS = (_synonym, _abbreviate, _devowel, _recase)


def _rename(name: str, rng: random.Random) -> str:
    order = list(_RENAMERS)
    rng.shuffle(order)
    for renamer in order:
        new = renamer(name, rng)
        if new and new != name:
            return new
    return name


# -- value formats -----------------------------------------------------------------------------
_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def number_words(n: int) -> str:
    """English words for 0 ≤ n < 10⁹ (e.g. 7169 → "seven thousand, one hundred and sixty-nine")."""
    if not 0 <= n < 1_000_000_000:
        raise ValueError(f"number_words covers 0..999,999,999, got {n}")
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("-" + _ONES[n % 10] if n % 10 else "")
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + (" and " + number_words(rest) if rest else "")
    for size, word in ((1_000_000, "million"), (1000, "thousand")):
        if n >= size:
            rest = n % size
            head = number_words(n // size) + " " + word
            if not rest:
                return head
            return head + (", " if rest >= 100 else " and ") + number_words(rest)
    raise AssertionError("unreachable")  # pragma: no cover


_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?")
_ISO_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_ROMAN = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)


def _roman(n: int) -> str:
    out = []
    for value, letters in _ROMAN:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out)


def _number_styles(value: str, style: int) -> str:
    """Style 0 thousands separators, 1 fixed decimals, 2 scientific, 3 words; a style that
    would leave the value as it was gives way to the next one."""
    for attempt in range(4):
        out = _number_style(value, (style + attempt) % 4)
        if out != value:
            return out
    return value  # pragma: no cover - style 1 always changes an integer or a decimal


def _number_style(value: str, style: int) -> str:
    x = float(value.replace(",", ""))
    if style == 0:
        return f"{x:,.0f}" if x.is_integer() else f"{x:,}"
    if style == 1:
        return f"{x:.1f}" if x.is_integer() else f"{x:.3f}"
    if style == 2:
        mantissa, exponent = f"{x:.2e}".split("e")
        return f"{mantissa}×10^{int(exponent):+03d}"
    if x.is_integer() and 0 <= x < 1_000_000_000:
        return number_words(int(x))
    return f"{x:,}"


def _date_styles(value: str, style: int) -> str:
    m = _ISO_DATE.fullmatch(value)
    if not m:
        return value
    y, mo, d = (int(g) for g in m.groups())
    if not 1 <= mo <= 12:
        return value
    month = _MONTHS[mo - 1]
    return (
        f"{month[:3]}.{d:02d}.{y}",
        f"{d:02d}/{mo:02d}/{y}",
        f"{month} {d}, {y}",
        f"{_roman(y)}-{_roman(mo)}-{_roman(d)}" if y > 0 and d > 0 else value,
    )[style]


def _column_kind(values: Sequence[str]) -> str | None:
    filled = [v.strip() for v in values if v.strip()]
    if not filled:
        return None
    if all(_ISO_DATE.fullmatch(v) for v in filled):
        return "date"
    if all(_NUMBER.fullmatch(v) for v in filled):
        return "number"
    return None


# -- siblings ----------------------------------------------------------------------------------
def make_siblings(
    table: Table,
    answer_rows: Sequence[int],
    *,
    n: int = 3,
    seed: int = 0,
    kinds: Sequence[str] = SIBLING_KINDS,
) -> list[Sibling]:
    """`n` unanswerable look-alikes of `table` (see module doc).

    Args:
        table: The gold table.
        answer_rows: Body row ids holding the answer (removed from every sibling).
        n: How many siblings.
        seed: Seed of the perturbations.
        kinds: Perturbations to draw from (each sibling gets at least one).

    Raises:
        SiblingError: no answer row, an unknown row id or kind, or n < 1.
    """
    unknown = sorted(set(kinds) - set(SIBLING_KINDS))
    if unknown or not kinds:
        raise SiblingError(f"unknown sibling kinds {unknown or list(kinds)}; use {SIBLING_KINDS}")
    if n < 1:
        raise SiblingError(f"n must be >= 1, got {n}")
    if not answer_rows:
        raise SiblingError("no answer rows: a sibling without removed rows could be answerable")
    missing = sorted(set(answer_rows) - set(table.row_ids))
    if missing:
        raise SiblingError(f"answer rows {missing[:10]} are not body row ids of the table")
    out = []
    for i in range(n):
        rng = random.Random(f"{seed}:{table.content_hash}:{i}")
        chosen = [kinds[i % len(kinds)]] + [k for k in kinds if rng.random() < 0.5]
        out.append(_sibling(table, set(answer_rows), tuple(dict.fromkeys(chosen)), rng))
    return out


def _sibling(
    table: Table, removed: set[int], kinds: tuple[str, ...], rng: random.Random
) -> Sibling:
    rows = [
        (rid, list(r))
        for rid, r in zip(table.row_ids, table.body, strict=True)
        if rid not in removed
    ]
    headers = [list(h) for h in table.header_rows]
    renamed: dict[str, str] = {}
    reformatted: list[str] = []
    if "resample" in kinds and rows:
        drop = set(rng.sample(range(len(rows)), k=rng.randint(0, len(rows) // 10)))
        rows = [r for j, r in enumerate(rows) if j not in drop]
        rng.shuffle(rows)
    if "rename" in kinds and headers:
        leaf = headers[-1]
        cols = [j for j in range(len(leaf)) if leaf[j].strip()]
        picked = [j for j in cols if rng.random() < 0.6] or cols[:1]
        for j in picked:
            new = _rename(leaf[j], rng)
            if new != leaf[j]:
                renamed[leaf[j]] = new
                leaf[j] = new
    if "reformat" in kinds and rows:
        names = table.columns
        for j in range(table.n_header_cols, table.n_cols):
            kind = _column_kind([r[j] for _, r in rows])
            if kind is None or rng.random() < 0.3:
                continue
            style = rng.randrange(4)
            convert = _date_styles if kind == "date" else _number_styles
            for _, r in rows:
                if r[j].strip():
                    r[j] = convert(r[j].strip(), style)
            reformatted.append(names[j])
    sib = replace(
        table,
        cells=tuple(tuple(h) for h in headers) + tuple(tuple(r) for _, r in rows),
        merges=tuple(m for m in table.merges if m.bottom < table.n_header_rows),
        row_ids=tuple(rid for rid, _ in rows),
    )
    return Sibling(sib, kinds, tuple(sorted(removed)), renamed, tuple(reformatted))


def _question_rows(question: Question, table: Table) -> list[int]:
    index = question.extra.get("answer_index")
    if isinstance(index, list) and index and all(isinstance(i, int) for i in index):
        return [table.row_ids[i] for i in index if 0 <= i < len(table.row_ids)]
    rows = answer_rows(table, question.answers)
    return rows if len(rows) * 2 <= max(table.n_rows, 1) else []


def with_siblings(
    dataset: Dataset,
    *,
    n: int = 3,
    seed: int = 0,
    questions: Sequence[Question] | None = None,
) -> Dataset:
    """A copy of `dataset` whose questions each get `n` sibling tables as their group.

    Siblings are made per gold table, not per question: the `n` siblings of a table drop the
    answer rows of every kept question on it, so none of them answers any of those questions
    (several questions often share a table: per-question siblings would hold the answer rows
    of the table's other questions), and they are the group of each of those questions. Keys
    are ``{gold key}#sibling-{i}``. Questions whose answer rows cannot be located, or whose
    rows would leave the siblings without a body row, are left out (counted in `notes`).
    """
    refs = dict(dataset.table_refs)
    golds: dict[str, Table] = {}
    removed: dict[str, set[int]] = {}
    chosen: list[Question] = []
    skipped = 0
    for q in questions if questions is not None else dataset.questions:
        gold_key = q.gold_table_ids[0]
        if gold_key not in golds:
            golds[gold_key] = dataset.table(gold_key)
        gold = golds[gold_key]
        rows = _question_rows(q, gold)
        union = removed.get(gold_key, set()) | set(rows)
        if not rows or len(union) >= len(gold.row_ids):
            skipped += 1
            continue
        removed[gold_key] = union
        chosen.append(q)
    siblings: dict[str, list[str]] = {}
    for gold_key, rows_out in removed.items():
        made = make_siblings(golds[gold_key], sorted(rows_out), n=n, seed=seed)
        siblings[gold_key] = []
        for i, sib in enumerate(made):
            key = f"{gold_key}#sibling-{i}"
            refs[key] = TableRef(
                key,
                refs[gold_key].path,
                "inline",
                table=sib.table,
                meta={"sibling_of": gold_key, "kinds": ",".join(sib.kinds)},
            )
            siblings[gold_key].append(key)
    kept = [
        replace(q, group=list(dict.fromkeys([*q.gold_table_ids, *q.group, *siblings[key]])))
        for q in chosen
        for key in q.gold_table_ids[:1]
    ]
    notes = [
        *dataset.notes,
        f"siblings: {n} per gold table (seed {seed}) for {len(kept)} questions on "
        f"{len(siblings)} tables; {skipped} left out (answer rows not located or would leave "
        "no row)",
    ]
    return Dataset(
        name=f"{dataset.name}+siblings{n}",
        root=dataset.root,
        questions=kept,
        table_refs=refs,
        notes=notes,
    )
