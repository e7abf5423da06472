"""Host side of the pipe protocol: length-prefixed messages, deadlines, size caps, validation.

Everything read from the child is untrusted: a message longer than the cap is refused before
it is read, JSON must be an object with the expected field types, texts are cut to their
caps and stripped of lone surrogates, figures must be base64 PNGs within the size and count
limits. Anything else is a `ProtocolViolation` and the host kills the child.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import select
import struct
import time
from dataclasses import dataclass
from typing import Any

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class ChannelClosed(Exception):
    """The child closed its end (it exited or was killed)."""


class ChannelTimeout(Exception):
    """No complete message before the deadline."""


class ProtocolViolation(Exception):
    """The child sent something malformed or oversized."""


def frame(payload: bytes) -> bytes:
    """Prefix `payload` with its 4-byte big-endian length."""
    return struct.pack(">I", len(payload)) + payload


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` (blocking); ChannelClosed when the child is gone."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except (BrokenPipeError, OSError) as exc:
        raise ChannelClosed(str(exc)) from exc


def read_message(fd: int, *, deadline: float, max_bytes: int) -> bytes:
    """Read one message from `fd` before `deadline` (a `time.monotonic()` value)."""
    header = _read_exact(fd, 4, deadline)
    (size,) = struct.unpack(">I", header)
    if size > max_bytes:
        raise ProtocolViolation(f"reply of {size} bytes exceeds the {max_bytes}-byte cap")
    return _read_exact(fd, size, deadline)


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            raise ChannelTimeout()
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            raise ChannelClosed("the sandbox process closed its pipe")
        buf += chunk
    return bytes(buf)


def decode_object(raw: bytes) -> dict[str, Any]:
    """Parse a JSON object or raise ProtocolViolation."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolViolation(f"reply is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ProtocolViolation(f"reply is a {type(obj).__name__}, not an object")
    return obj


def clean_text(value: object, field: str, limit: int, *, optional: bool = False) -> str | None:
    """Validate a text field, cut it to `limit` characters and drop lone surrogates."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ProtocolViolation(f"field {field!r} is {type(value).__name__}, not str")
    text = value.encode("utf-8", "replace").decode("utf-8")
    if len(text) > limit:
        text = text[:limit] + f"... [truncated by host: {len(text) - limit} more characters]"
    return text


@dataclass(frozen=True)
class Reply:
    """A validated `run` reply."""

    ok: bool
    stdout: str
    value: str | None
    error: str | None
    figures: list[bytes]


def parse_reply(
    raw: bytes, *, max_output: int, max_value: int, max_figures: int, max_figure_bytes: int
) -> Reply:
    """Validate a `run` reply from the child."""
    obj = decode_object(raw)
    ok = obj.get("ok")
    if not isinstance(ok, bool):
        raise ProtocolViolation("field 'ok' is missing or not a bool")
    stdout = clean_text(obj.get("stdout", ""), "stdout", max_output + 200) or ""
    value = clean_text(obj.get("value"), "value", max_value + 200, optional=True)
    error = clean_text(obj.get("error"), "error", 4000, optional=True)
    if not ok and not error:
        error = "the sandbox reported a failure without a message"
    raw_figures = obj.get("figures", [])
    if not isinstance(raw_figures, list):
        raise ProtocolViolation("field 'figures' is not a list")
    figures: list[bytes] = []
    for item in raw_figures[:max_figures]:
        if not isinstance(item, str) or len(item) > max_figure_bytes * 4 // 3 + 8:
            raise ProtocolViolation("a figure is not a base64 string within the size cap")
        try:
            png = base64.b64decode(item, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ProtocolViolation(f"a figure is not valid base64: {exc}") from exc
        if not png.startswith(PNG_MAGIC):
            raise ProtocolViolation("a figure is not a PNG image")
        figures.append(png)
    return Reply(ok=ok, stdout=stdout, value=value, error=None if ok else error, figures=figures)
