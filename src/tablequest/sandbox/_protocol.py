"""Host side of the pipe protocol: length-prefixed messages, deadlines, size caps, validation.

Everything read from the child is untrusted: a message longer than the cap is refused before
it is read, its nesting depth and number of containers are bounded before `json.loads` sees
it, it must be an object with the expected field types that echoes the request's id, texts
are cut to their caps and stripped of lone surrogates, figures must be base64 PNG images that
pass `_png.check_png`. Anything else is a `ProtocolViolation` and the host kills the child.
Every read and write has a deadline: a child that stops reading (a stopped process, a pipe
shrunk to 4 KB, a replaced read end) costs a `ChannelTimeout`, never a hung host.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import select
import struct
import time
from dataclasses import dataclass
from typing import Any

from tablequest.errors import RunError

from ._png import InvalidPNG, check_png

#: deepest JSON nesting accepted from the child (a run reply needs 2, the facts 4)
MAX_DEPTH = 16
#: most JSON arrays and objects accepted in one message
MAX_CONTAINERS = 4096
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')
_BRACKET = re.compile(rb"[\[\]{}]")


class ChannelClosed(RunError):
    """The child closed its end (it exited or was killed)."""


class ChannelTimeout(RunError):
    """No complete message before the deadline."""


class ProtocolViolation(RunError):
    """The child sent something malformed or oversized."""


def frame(payload: bytes) -> bytes:
    """Prefix `payload` with its 4-byte big-endian length."""
    return struct.pack(">I", len(payload)) + payload


def write_all(fd: int, data: bytes, *, deadline: float) -> None:
    """Write all of `data` before `deadline` (a `time.monotonic()` value).

    `fd` should be non-blocking: a blocking descriptor can still stall inside `os.write`
    when the reader frees less room than the write needs. ChannelClosed when the child is
    gone, ChannelTimeout when it stops reading.
    """
    view = memoryview(data)
    try:
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise ChannelTimeout("the sandbox process stopped reading")
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
    except OSError as exc:  # EPIPE and friends: the read end is gone
        raise ChannelClosed(str(exc)) from exc


def expect_silence(fd: int) -> None:
    """Before a request: the child must not have sent anything since its last reply.

    ChannelClosed when it exited meanwhile, ProtocolViolation when it wrote unasked.
    """
    if not select.select([fd], [], [], 0)[0]:
        return
    try:
        extra = os.read(fd, 1)
    except BlockingIOError:
        return
    except OSError as exc:
        raise ChannelClosed(str(exc)) from exc
    if not extra:
        raise ChannelClosed("the sandbox process closed its pipe")
    raise ProtocolViolation("the sandbox sent data nobody asked for")


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
        try:
            chunk = os.read(fd, min(n - len(buf), 1 << 20))
        except BlockingIOError:
            continue
        except OSError as exc:
            raise ChannelClosed(str(exc)) from exc
        if not chunk:
            raise ChannelClosed("the sandbox process closed its pipe")
        buf += chunk
    return bytes(buf)


def check_nesting(raw: bytes, *, max_depth: int, max_containers: int) -> None:
    """Refuse JSON text nested deeper than `max_depth` or with too many containers.

    Strings are blanked first (brackets inside them do not count); the bracket scan stops at
    the first violation, so a 100,000-deep reply costs `max_depth` steps.
    """
    skeleton = _STRING.sub(b'""', raw)
    if skeleton.count(b"[") + skeleton.count(b"{") > max_containers:
        raise ProtocolViolation(f"reply holds more than {max_containers} arrays/objects")
    depth = 0
    for match in _BRACKET.finditer(skeleton):
        depth += 1 if match.group() in (b"[", b"{") else -1
        if depth > max_depth:
            raise ProtocolViolation(f"reply is nested deeper than {max_depth} levels")


def decode_object(
    raw: bytes, *, max_depth: int = MAX_DEPTH, max_containers: int = MAX_CONTAINERS
) -> dict[str, Any]:
    """Parse a JSON object of bounded nesting or raise ProtocolViolation."""
    check_nesting(raw, max_depth=max_depth, max_containers=max_containers)
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
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
    lineage: dict[str, Any] | None = None


def check_id(obj: dict[str, Any], expected: int) -> None:
    """The reply must echo the id of the request it answers (else it is stale or forged)."""
    got = obj.get("id")
    if type(got) is not int or got != expected:
        raise ProtocolViolation(f"reply id {got!r} does not match the request ({expected})")


@dataclass(frozen=True)
class FigureLimits:
    """Bounds on the figures of one reply."""

    count: int
    bytes: int
    side: int
    pixels: int


def parse_figures(raw_figures: object, limits: FigureLimits) -> list[bytes]:
    """Decode and verify base64 PNG figures (count, size, dimensions, decodable)."""
    if not isinstance(raw_figures, list):
        raise ProtocolViolation("field 'figures' is not a list")
    if len(raw_figures) > limits.count:
        raise ProtocolViolation(f"{len(raw_figures)} figures exceed the limit of {limits.count}")
    figures: list[bytes] = []
    for item in raw_figures:
        if not isinstance(item, str) or len(item) > limits.bytes * 4 // 3 + 8:
            raise ProtocolViolation("a figure is not a base64 string within the size cap")
        try:
            png = base64.b64decode(item, validate=True)
            check_png(png, max_bytes=limits.bytes, max_side=limits.side, max_pixels=limits.pixels)
        except (binascii.Error, ValueError, InvalidPNG) as exc:
            kind = "not a valid PNG image" if isinstance(exc, InvalidPNG) else "not valid base64"
            raise ProtocolViolation(f"a figure is {kind}: {exc}") from exc
        figures.append(png)
    return figures


def parse_reply(
    raw: bytes,
    *,
    request_id: int,
    max_output: int,
    max_value: int,
    figures: FigureLimits,
) -> Reply:
    """Validate a `run` reply from the child."""
    obj = decode_object(raw)
    check_id(obj, request_id)
    ok = obj.get("ok")
    if not isinstance(ok, bool):
        raise ProtocolViolation("field 'ok' is missing or not a bool")
    stdout = clean_text(obj.get("stdout", ""), "stdout", max_output + 200) or ""
    value = clean_text(obj.get("value"), "value", max_value + 200, optional=True)
    error = clean_text(obj.get("error"), "error", 4000, optional=True)
    if not ok and not error:
        error = "the sandbox reported a failure without a message"
    pngs = parse_figures(obj.get("figures", []), figures)
    lineage = parse_lineage(obj.get("lineage"))
    return Reply(
        ok=ok, stdout=stdout, value=value, error=None if ok else error, figures=pngs,
        lineage=lineage,
    )  # fmt: skip


#: longest lineage text accepted (the child cuts row sets before it gets there)
LINEAGE_CAP = 1_000_000


def parse_lineage(raw: object) -> dict[str, Any] | None:
    """The lineage field: JSON text of bounded size and nesting, else None (lineage is a
    record of the run, never a reason to refuse the run's result)."""
    if not isinstance(raw, str) or len(raw) > LINEAGE_CAP:
        return None
    try:
        obj = decode_object(raw.encode("utf-8", "replace"), max_depth=256, max_containers=50_000)
    except ProtocolViolation:
        return None
    return obj
