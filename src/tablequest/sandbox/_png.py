"""A bounded PNG validator for figures coming back from the child (stdlib only).

A figure is untrusted bytes until it passes `check_png`: the signature, an IHDR chunk with a
known colour type and bit depth and dimensions within bounds, every chunk's CRC, contiguous
IDAT chunks, a final IEND, and an image stream that inflates to exactly the size the header
announces, each row starting with a valid filter type. Inflation is streamed with a bounded
output buffer, so a decompression bomb costs at most the announced size in CPU and one buffer
in memory. No third-party image parser runs on child data in the host.

Choice: interlaced (Adam7) images are refused; matplotlib's Agg backend never writes them.
"""

from __future__ import annotations

import struct
import zlib

from tablequest.errors import RunError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: colour type -> (channels, allowed bit depths)
_COLOUR = {
    0: (1, (1, 2, 4, 8, 16)),
    2: (3, (8, 16)),
    3: (1, (1, 2, 4, 8)),
    4: (2, (8, 16)),
    6: (4, (8, 16)),
}
_CHUNK = 1 << 20  # inflate at most this many bytes per step


class InvalidPNG(RunError):
    """The bytes are not a PNG image within the limits."""


def _header(data: bytes, max_side: int, max_pixels: int) -> tuple[int, int, int]:
    """Validate IHDR; return (width, height, bytes per row including the filter byte)."""
    if not data.startswith(PNG_MAGIC):
        raise InvalidPNG("no PNG signature")
    if len(data) < 33 or data[8:16] != b"\x00\x00\x00\x0dIHDR":
        raise InvalidPNG("the first chunk is not a 13-byte IHDR")
    width, height, depth, colour, method, filt, interlace = struct.unpack(">IIBBBBB", data[16:29])
    if colour not in _COLOUR or depth not in _COLOUR[colour][1]:
        raise InvalidPNG(f"colour type {colour} with bit depth {depth}")
    if method or filt or interlace:
        raise InvalidPNG("unsupported compression, filter or interlace method")
    if not (0 < width <= max_side and 0 < height <= max_side) or width * height > max_pixels:
        raise InvalidPNG(f"{width}x{height} pixels exceed the {max_side}-pixel side limit")
    return width, height, 1 + (width * _COLOUR[colour][0] * depth + 7) // 8


def _idat(data: bytes) -> list[memoryview]:
    """Check every chunk's framing and CRC; return the IDAT payloads (contiguous, non-empty)."""
    view = memoryview(data)
    pos, parts, state = 8, [], "before"
    while pos < len(data):
        if pos + 12 > len(data):
            raise InvalidPNG("truncated chunk")
        length, kind = struct.unpack(">I4s", view[pos : pos + 8])
        end = pos + 12 + length
        if end > len(data) or not kind.isalpha():
            raise InvalidPNG("malformed chunk")
        (crc,) = struct.unpack(">I", view[end - 4 : end])
        if zlib.crc32(view[pos + 4 : end - 4]) != crc:
            raise InvalidPNG(f"bad CRC in a {kind!r} chunk")
        if kind == b"IDAT":
            if state == "after":
                raise InvalidPNG("IDAT chunks are not contiguous")
            state = "in"
            parts.append(view[pos + 8 : end - 4])
        elif state == "in":
            state = "after"
        if kind == b"IEND":
            if end != len(data) or not parts:
                raise InvalidPNG("IEND is not the last chunk, or there is no image data")
            return parts
        pos = end
    raise InvalidPNG("no IEND chunk")


def check_png(data: bytes, *, max_bytes: int, max_side: int, max_pixels: int) -> tuple[int, int]:
    """Validate `data` as a PNG image; return (width, height) or raise `InvalidPNG`."""
    if len(data) > max_bytes:
        raise InvalidPNG(f"{len(data)} bytes exceed the {max_bytes}-byte limit")
    width, height, row = _header(data, max_side, max_pixels)
    expected = row * height
    inflate = zlib.decompressobj()
    produced = 0
    try:
        for part in _idat(data):
            pending = bytes(part)
            while pending:
                out = inflate.decompress(pending, _CHUNK)
                pending = inflate.unconsumed_tail
                produced = _check_rows(out, produced, row, expected)
        while not inflate.eof and (out := inflate.decompress(b"", _CHUNK)):
            produced = _check_rows(out, produced, row, expected)
    except zlib.error as exc:
        raise InvalidPNG(f"image data does not inflate: {exc}") from exc
    if not inflate.eof or inflate.unused_data or produced != expected:
        raise InvalidPNG(f"image data inflates to {produced} bytes, expected {expected}")
    return width, height


def _check_rows(out: bytes, produced: int, row: int, expected: int) -> int:
    """Check the filter-type byte of every row starting in `out`; return the new offset."""
    if produced + len(out) > expected:
        raise InvalidPNG("image data inflates past the announced size")
    first = (-produced) % row
    if out[first::row] and max(out[first::row]) > 4:
        raise InvalidPNG("invalid row filter type")
    return produced + len(out)
