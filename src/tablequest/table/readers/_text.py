"""Decoding text files: BOMs, UTF-8, cp1252 and latin-1 fallbacks, NUL bytes, binary junk.

Mixed encodings (ours): a file without BOM that is not valid UTF-8 is decoded line by line,
each line as UTF-8 where it is valid, else as cp1252 (latin-1 for the five bytes cp1252 leaves
undefined). A file that is mostly UTF-8 with a few lines appended by a Windows tool then reads
"Zürich" and "Genève" both, not "ZÃ¼rich"; such a file is also reported (`warn`), naming the
lines decoded as cp1252. A file with no UTF-8 multi-byte sequence at all is decoded as cp1252
(or latin-1) as a whole, silently: that is one consistent legacy encoding, not a mix.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable

from tablequest.table.errors import UnreadableTable

__all__ = ["BINARY_MAGIC", "binary_kind", "count_control_bytes", "decode_text"]

# Magic numbers of binary formats we do not read, named in the error message.
BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ", "an xz archive"),
    (b"7z\xbc\xaf", "a 7z archive"),
    (b"Rar!", "a RAR archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "a legacy OLE2 (.xls/.doc) file; save it as .xlsx"),
    (b"\x7fELF", "an ELF executable"),
    (b"MZ", "a Windows executable"),
)

# C0 controls except tab, newlines and form feed; DEL; the replacement char. (C1 controls
# are left out: a latin-1 fallback exists precisely for bytes 0x80-0x9f.)
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f\ufffd]")
_MAX_CONTROL_RATIO = 0.02
_CONTROL_BYTES = frozenset([*range(0, 9), *range(14, 32), 127])
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROL_BYTES)
_SAMPLE = 1 << 16
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)
_LINES_SHOWN = 5
_BLOCK = 1 << 16


def binary_kind(head: bytes) -> str | None:
    """Name a known binary format from its first bytes, else None."""
    for magic, kind in BINARY_MAGIC:
        if head.startswith(magic):
            return kind
    return None


def count_control_bytes(data: bytes) -> int:
    """Number of C0 control bytes (not tab/newlines/form feed) and DEL in `data`."""
    return len(data.translate(None, _NOT_CONTROL))


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le'/'utf-16-be' when NULs sit on every other byte of mostly-ASCII text."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) >= 0.9 * len(odd) and even.count(0) <= 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) >= 0.9 * len(even) and odd.count(0) <= 0.1 * len(odd):
        return "utf-16-be"
    return None


def _bom_codec(data: bytes) -> str | None:
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return None


def _decode_plain(data: bytes, warn: Callable[[str], None] | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if _UTF8_MULTIBYTE.search(data) is None:  # no UTF-8 at all: one legacy encoding
        return _decode_legacy(data)
    text, legacy_lines = _decode_lines(data)
    if warn is not None:
        shown = ", ".join(map(str, legacy_lines[:_LINES_SHOWN]))
        more = f" (+{len(legacy_lines) - _LINES_SHOWN} more)" * (len(legacy_lines) > _LINES_SHOWN)
        warn(
            f"mixed encodings: {len(legacy_lines)} line(s) not valid UTF-8 were decoded as "
            f"cp1252, the rest as UTF-8: line(s) {shown}{more}"
        )
    return text


def _decode_legacy(data: bytes) -> str:
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _decode_lines(data: bytes) -> tuple[str, list[int]]:
    """The text, each line UTF-8 where valid else cp1252, and the cp1252 lines (1-based).

    Blocks of whole lines are tried as UTF-8 at once; only a block that fails is decoded line
    by line (a newline never splits a UTF-8 character), so the cost stays linear."""
    parts: list[str] = []
    legacy: list[int] = []
    pos, line = 0, 1
    while pos < len(data):
        end = data.find(b"\n", pos + _BLOCK)
        end = len(data) if end < 0 else end + 1
        block = data[pos:end]
        pos = end
        try:
            parts.append(block.decode("utf-8"))
            line += block.count(b"\n")
            continue
        except UnicodeDecodeError:
            pass
        pieces = block.split(b"\n")
        for i, raw in enumerate(pieces):
            try:
                parts.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                parts.append(_decode_legacy(raw))
                legacy.append(line + i)
            parts.append("\n")
        parts.pop()  # the split made one more piece than there were newlines
        line += len(pieces) - 1
    return "".join(parts), legacy


def _removed_nuls(count: int, warn: Callable[[str], None] | None) -> None:
    if warn is not None and count:
        warn(f"{count} NUL byte{'s' if count > 1 else ''} removed")


def decode_text(data: bytes, path: str, warn: Callable[[str], None] | None = None) -> str:
    """Decode a text file: UTF-8/16/32 with BOM, UTF-8, cp1252, then latin-1 (mixed UTF-8
    and cp1252 line by line, told to `warn`: the module docstring).

    NUL bytes are stripped when the rest is text (a UTF-16 file without BOM is recognised
    first), and `warn` is told how many. Raises UnreadableTable for empty files and binary
    content.
    """
    if not data.strip():
        raise UnreadableTable(path, "empty file")
    kind = binary_kind(data[:16])
    if kind is not None:
        raise UnreadableTable(path, f"binary file ({kind})")
    codec = _bom_codec(data)
    if codec is not None:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError as exc:
            raise UnreadableTable(
                path, f"invalid {codec} text after its BOM ({exc.reason})"
            ) from None
    elif b"\x00" in data:
        utf16 = _utf16_without_bom(data)
        text = ""
        if utf16 is not None:
            try:
                text = data.decode(utf16)
            except UnicodeDecodeError:
                utf16 = None
        if utf16 is None:
            _removed_nuls(data.count(b"\x00"), warn)
            text = _decode_plain(data.replace(b"\x00", b""), warn)
    else:
        text = _decode_plain(data, warn)
    if "\x00" in text:
        _removed_nuls(text.count("\x00"), warn)
        text = text.replace("\x00", "")
    text = text.removeprefix("\ufeff")
    sample = text[:_SAMPLE]
    if codec is None and b"\x00" not in data:
        # Plain path: control characters are exactly the control bytes (fast count).
        controls = count_control_bytes(data[:_SAMPLE])
    else:
        controls = len(_CONTROL.findall(sample))
    if sample and controls > _MAX_CONTROL_RATIO * len(sample):
        raise UnreadableTable(path, "binary file (not text in any supported encoding)")
    if not text.strip():
        raise UnreadableTable(path, "empty file (only whitespace or NUL bytes)")
    return text
