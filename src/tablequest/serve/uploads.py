"""Uploaded files: size and count limits, a quota, and names the server chooses.

No part of a client's file name reaches the filesystem as a path: a file is stored in the
server's uploads folder as ``<stem>-<12 hex of its sha256><ext>``, where the stem keeps only
ASCII letters, digits, ``-`` and ``_`` of the client's name (40 at most) and the extension is
kept only when a table reader is registered for it. The same file uploaded twice under the
same name is the same stored file (ingest then reports it unchanged).
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from tablequest.serve.config import Limits
from tablequest.table.readers import format_for_extension

__all__ = ["SavedUpload", "UploadRejected", "folder_bytes", "safe_name", "save_uploads"]

CHUNK = 1024 * 1024


class UploadRejected(ValueError):
    """An upload the limits refuse; `status` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


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


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def display_name(filename: str | None) -> str:
    """The client's base name, for messages (never used as a path)."""
    base = PurePosixPath((filename or "").replace("\\", "/")).name
    return base[:200] or "upload"


def safe_name(filename: str | None, digest: str) -> str:
    """The stored name of an upload called `filename` with content hash `digest`."""
    base = PurePosixPath(display_name(filename))
    ext = base.suffix.lower()
    if not ext or format_for_extension(base.name) is None:
        ext = ""
    stem = _UNSAFE.sub("-", base.stem if ext else base.name).strip("-")[:40] or "upload"
    return f"{stem}-{digest[:12]}{ext}"


def folder_bytes(folder: Path) -> int:
    """Bytes of the files directly in `folder`."""
    if not folder.is_dir():
        return 0
    return sum(e.stat().st_size for e in os.scandir(folder) if e.is_file())


async def _save_one(upload: UploadLike, folder: Path, limits: Limits, budget: int) -> SavedUpload:
    name = display_name(upload.filename)
    tmp = folder / f".part-{uuid.uuid4().hex}"
    digest = hashlib.sha256()
    size = 0
    try:
        with tmp.open("xb") as out:
            while chunk := await upload.read(CHUNK):
                size += len(chunk)
                if size > limits.max_file_bytes:
                    raise UploadRejected(
                        413,
                        f"{name!r} is over the per-file limit of {limits.max_file_bytes:,} bytes",
                    )
                if size > budget:
                    raise UploadRejected(
                        413, "the server's upload quota "
                        f"({limits.max_total_upload_bytes:,} bytes in all) would be exceeded",
                    )  # fmt: skip
                digest.update(chunk)
                out.write(chunk)
        if size == 0:
            raise UploadRejected(400, f"{name!r} is empty")
        final = folder / safe_name(upload.filename, digest.hexdigest())
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    return SavedUpload(final, name, size)


async def save_uploads(
    uploads: list[UploadLike], folder: Path, limits: Limits
) -> list[SavedUpload]:
    """Store `uploads` in `folder` within the limits (all or none).

    Raises:
        UploadRejected: no file, too many files, a file too large or empty, quota exceeded.
    """
    if not uploads:
        raise UploadRejected(400, "no file in the request: send multipart form field 'files'")
    if len(uploads) > limits.max_files:
        raise UploadRejected(
            413, f"{len(uploads)} files in one request; the limit is {limits.max_files}"
        )
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    budget = limits.max_total_upload_bytes - folder_bytes(folder)
    saved: list[SavedUpload] = []
    try:
        for upload in uploads:
            item = await _save_one(upload, folder, limits, budget)
            budget -= item.size
            saved.append(item)
    except BaseException:
        for item in saved:
            item.path.unlink(missing_ok=True)
        raise
    return saved
