"""DataFrames to Arrow IPC bytes for the child: no pickle, only data crosses the pipe.

Choices where Arrow is stricter than pandas (each one is recorded in the returned notes):
- non-string column labels become strings (`str(label)`);
- duplicate column labels get suffixes `.1`, `.2`, ... (pandas' own read_csv convention);
- object columns Arrow cannot type (mixed ints and strings, ...) are converted to strings,
  missing values kept.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping

import pandas as pd
import pyarrow as pa

from ._child import PRELOADED
from ._types import SandboxError

#: names the child binds itself; frames may not shadow them
RESERVED = frozenset(PRELOADED)


def check_name(name: object) -> str:
    """Validate a frame name (a Python identifier the code can use)."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise SandboxError(f"frame name {name!r} is not a Python identifier")
    if name.startswith("_") or name in RESERVED:
        raise SandboxError(
            f"frame name {name!r} is reserved (no leading underscore, none of {sorted(RESERVED)})"
        )
    return name


def _unique_labels(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out: list[str] = []
    taken = set(labels)
    for label in labels:
        if label not in seen:
            seen[label] = 0
            out.append(label)
            continue
        n = seen[label]
        while True:
            n += 1
            candidate = f"{label}.{n}"
            if candidate not in taken:
                break
        seen[label] = n
        taken.add(candidate)
        out.append(candidate)
    return out


def normalize(name: str, df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Make `df` Arrow-compatible; return the frame and notes on what changed."""
    if not isinstance(df, pd.DataFrame):
        raise SandboxError(f"frame {name!r} is a {type(df).__name__}, not a pandas DataFrame")
    notes: list[str] = []
    if not isinstance(df.columns, pd.MultiIndex):
        labels = [str(c) for c in df.columns]
        if any(not isinstance(c, str) for c in df.columns):
            notes.append(f"{name}: non-string column labels were converted to strings")
        unique = _unique_labels(labels)
        if unique != labels:
            notes.append(f"{name}: duplicate column labels were renamed to {unique}")
        if unique != list(df.columns):
            df = df.set_axis(unique, axis=1)
    fixed: list[str] = []
    for i, column in enumerate(df.columns):
        series = df.iloc[:, i]
        if series.dtype != object:
            continue
        try:
            pa.array(series, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            if not fixed:
                df = df.copy()
            as_text = series.map(lambda v: v if pd.isna(v) else str(v)).astype("str")
            df.isetitem(i, as_text.to_numpy())
            fixed.append(str(column))
    if fixed:
        notes.append(f"{name}: mixed-type columns {fixed} were converted to strings")
    return df, notes


def encode_frames(frames: Mapping[str, pd.DataFrame]) -> tuple[list[tuple[str, bytes]], list[str]]:
    """Encode every frame as an Arrow IPC stream; return [(name, bytes)] and notes. A frame
    bound under several names is encoded once (the names share its bytes)."""
    out: list[tuple[str, bytes]] = []
    notes: list[str] = []
    done: dict[int, bytes] = {}
    for raw_name, df in frames.items():
        name = check_name(raw_name)
        if id(df) in done:
            out.append((name, done[id(df)]))
            continue
        original = df
        df, changed = normalize(name, df)
        notes += changed
        try:
            table = pa.Table.from_pandas(df)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise SandboxError(f"frame {name!r} cannot be converted to Arrow: {exc}") from exc
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        done[id(original)] = sink.getvalue().to_pybytes()
        out.append((name, done[id(original)]))
    return out, notes
