"""Uploaded files: size and count limits, a quota, and names the server chooses.

No part of a client's file name reaches the filesystem as a path: a file is stored in the
server's uploads folder as ``<12 hex of its sha256>/<name>``, where the name is the client's
base name (folders dropped) kept readable — letters of any script, digits, spaces and
punctuation — without control characters, path separators or leading dots, cut to 180 bytes,
and with its extension only when a table reader is registered for it or it is a plain-text
one (``.txt``, ``.text``: the reader sniffs what such a file holds); else the dot becomes
``_``. So the corpus lists "Länder 2024.csv" and "notes.txt", not a mangled name. The same
file uploaded twice under the same name is the same stored file (ingest then reports it
unchanged).

The quota (``Limits.max_total_upload_bytes``) is checked under a lock by reservation: every
chunk read reserves its bytes against what the folder holds plus what uploads in flight have
reserved, so two uploads running at once cannot both pass on the same free space. A stored
file turns its reservation into stored bytes under the same lock; a rejected or failed upload
gives its reservation back. What the folder holds is measured when an upload starts
(in-flight ``.part-*`` files excluded: their bytes are reserved), so files removed in the
meantime are counted again correctly by the next upload.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
import unicodedata
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from tablequest.errors import UsageError
from tablequest.service import Limits
from tablequest.table import format_for_extension

__all__ = [
    "EmptyUpload", "Quota", "SavedUpload", "UploadRejected", "discard", "folder_bytes",
    "quota_for", "safe_name", "save_uploads",
]  # fmt: skip

CHUNK = 1024 * 1024
PART = ".part-"


class UploadRejected(UsageError):
    """An upload over the limits: a file too large, too many files, the quota (413)."""

    http_status = 413
    code = "too_large"


class EmptyUpload(UploadRejected):
    """A request without a file, or an empty file (400)."""

    http_status = 400
    code = "usage"


class UploadLike(Protocol):
    """What we need of Starlette's UploadFile."""

    filename: str | None

    async def read(self, size: int = -1) -> bytes: ...


@dataclass(frozen=True)
class SavedUpload:
    """A stored upload: where it is and the client's name for it (for messages only)."""

    path: Path
    client_name: str
    size: int


_UNSAFE = re.compile(r"[\x00-\x1f\x7f/\\]+")
MAX_NAME_BYTES = 180
# Extensions that name no format: the reader sniffs the content, so the name can stay whole.
PLAIN_TEXT_EXTENSIONS = frozenset({".txt", ".text"})


def display_name(filename: str | None) -> str:
    """The client's base name, for messages (never used as a path)."""
    base = PurePosixPath((filename or "").replace("\\", "/")).name
    return base[:200] or "upload"


def _cut(text: str, limit: int) -> str:
    while len(text.encode("utf-8")) > limit:
        text = text[:-1]
    return text


def safe_name(filename: str | None, digest: str) -> str:
    """The stored path (relative to the uploads folder) of an upload called `filename` with
    content hash `digest`: ``<12 hex>/<readable name>`` (see the module doc)."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    name = unicodedata.normalize("NFC", name)
    name = " ".join(_UNSAFE.sub(" ", name).split()).lstrip(". ")
    base = PurePosixPath(name or "upload")
    ext = base.suffix if base.suffix and base.stem else ""
    readable = format_for_extension(base.name) is not None or ext.lower() in PLAIN_TEXT_EXTENSIONS
    if ext and not readable:
        ext = ""
    stem = base.name[: len(base.name) - len(ext)] if ext else base.name.replace(".", "_")
    stem = _cut(stem, MAX_NAME_BYTES - len(ext.encode("utf-8"))).rstrip() or "upload"
    return f"{digest[:12]}/{stem}{ext}"


def folder_bytes(folder: Path) -> int:
    """Bytes of the stored files in `folder` and its subfolders (uploads in progress, still
    ``.part-*`` files, are not counted: their bytes are reserved)."""
    if not folder.is_dir():
        return 0
    total = 0
    for path in folder.rglob("*"):
        if path.name.startswith(PART):
            continue
        with contextlib.suppress(OSError):  # removed meanwhile
            if path.is_file():
                total += path.stat().st_size
    return total


class Quota:
    """The upload quota of one folder, shared by every request in the process (see the
    module doc). Every method holds the lock only briefly and never across an await."""

    def __init__(self, folder: Path, limit: int) -> None:
        self.folder = folder
        self.limit = limit
        self.stored = 0
        self.reserved = 0
        self._lock = threading.Lock()

    def refresh(self) -> None:
        """Measure what the folder holds (when an upload starts)."""
        with self._lock:
            self.stored = folder_bytes(self.folder)

    def reserve(self, size: int) -> bool:
        """Reserve `size` more bytes; False (nothing reserved) when over the quota."""
        with self._lock:
            if self.stored + self.reserved + size > self.limit:
                return False
            self.reserved += size
            return True

    def release(self, size: int) -> None:
        with self._lock:
            self.reserved -= size

    def store(self, tmp: Path, final: Path, size: int) -> None:
        """Move an upload into place and count its reserved bytes as stored (a file that was
        already there, the same content under the same name, adds nothing)."""
        with self._lock:
            existed = final.exists()
            os.replace(tmp, final)
            self.reserved -= size
            self.stored += 0 if existed else size


_QUOTAS: dict[Path, Quota] = {}
_QUOTAS_LOCK = threading.Lock()


def quota_for(folder: Path, limit: int) -> Quota:
    """The one `Quota` of `folder` in this process."""
    key = folder.resolve()
    with _QUOTAS_LOCK:
        quota = _QUOTAS.get(key)
        if quota is None or quota.limit != limit:
            quota = _QUOTAS[key] = Quota(key, limit)
        return quota


def discard(item: SavedUpload) -> None:
    """Remove a stored upload (and its folder when that leaves it empty)."""
    item.path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # another upload of the same content is still there
        item.path.parent.rmdir()


def _quota_message(limits: Limits) -> str:
    return (
        f"the server's upload quota ({limits.max_total_upload_bytes:,} bytes in all) would "
        "be exceeded"
    )


async def _save_one(upload: UploadLike, folder: Path, limits: Limits, quota: Quota) -> SavedUpload:
    name = display_name(upload.filename)
    tmp = folder / f"{PART}{uuid.uuid4().hex}"
    digest = hashlib.sha256()
    size = taken = 0
    try:
        with tmp.open("xb") as out:
            while chunk := await upload.read(CHUNK):
                size += len(chunk)
                if size > limits.max_file_bytes:
                    raise UploadRejected(
                        f"{name!r} is over the per-file limit of {limits.max_file_bytes:,} bytes",
                    )
                if not quota.reserve(len(chunk)):
                    raise UploadRejected(_quota_message(limits))
                taken += len(chunk)
                digest.update(chunk)
                out.write(chunk)
        if size == 0:
            raise EmptyUpload(f"{name!r} is empty")
        final = folder / safe_name(upload.filename, digest.hexdigest())
        final.parent.mkdir(mode=0o700, exist_ok=True)
        quota.store(tmp, final, taken)
        taken = 0
    finally:
        quota.release(taken)  # what a rejected or failed upload had reserved
        tmp.unlink(missing_ok=True)
    return SavedUpload(final, name, size)


async def save_uploads(
    uploads: list[UploadLike], folder: Path, limits: Limits
) -> list[SavedUpload]:
    """Store `uploads` in `folder` within the limits (all or none; the quota is shared by
    concurrent uploads: see the module doc).

    Raises:
        UploadRejected: too many files, a file too large, quota exceeded (413).
        EmptyUpload: no file, or an empty one (400).
    """
    if not uploads:
        raise EmptyUpload("no file in the request: send multipart form field 'files'")
    if len(uploads) > limits.max_files:
        raise UploadRejected(
            f"{len(uploads)} files in one request; the limit is {limits.max_files}"
        )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    quota = quota_for(folder, limits.max_total_upload_bytes)
    quota.refresh()
    saved: list[SavedUpload] = []
    try:
        for upload in uploads:
            saved.append(await _save_one(upload, folder, limits, quota))
    except BaseException:
        for item in saved:
            discard(item)
        raise
    return saved
