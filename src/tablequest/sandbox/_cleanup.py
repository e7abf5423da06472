"""Removing a child's directory: never follows a symlink, never raises, survives any shape.

The child may leave symlinks to directories (inside or outside its session), directories it
made unreadable or unwritable (mode 000/0500), symlink loops, or a tree deeper than Python's
recursion limit or the file-descriptor limit. `remove_tree` walks with directory descriptors
opened with `O_NOFOLLOW` (a symlink is unlinked, never entered), keeps one descriptor open at
a time (it climbs back with `..` and checks the directory's identity against the one it came
from), restores owner permissions on directories that need it through an `O_PATH` handle
(`chmod` cannot refuse to follow a symlink on Linux), and skips what it cannot remove instead
of stopping. It returns whether the tree is gone.

`measure` lets the host enforce file-count and size caps where the session directory is on
its own disk (no tmpfs with `nr_inodes` and `size`): it stops counting past the cap.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class _Level:
    """A directory being emptied: its identity, its name in the parent, subdirectories left."""

    ident: tuple[int, int]
    name: str
    subdirs: list[str] = field(default_factory=list)


def _ident(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _chmod_dir(name: str, dir_fd: int) -> None:
    """Give the owner rwx on directory `name` (relative to `dir_fd`) without following links."""
    handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if stat.S_ISDIR(os.fstat(handle).st_mode):
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
    finally:
        os.close(handle)


def _open_dir(name: str, dir_fd: int | None) -> int | None:
    """Open a directory (never a symlink); fix its permissions once if they are in the way."""
    for attempt in range(2):
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except PermissionError:
            if attempt or dir_fd is None:
                return None
            with contextlib.suppress(OSError):
                _chmod_dir(name, dir_fd)
            continue
        except OSError:
            return None
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)  # lets us list and unlink below it when we are not root
        return fd
    return None


def _empty_files(fd: int) -> list[str]:
    """Unlink every non-directory entry of `fd`; return the names of its subdirectories."""
    subdirs: list[str] = []
    try:
        names = os.listdir(fd)
    except OSError:
        return subdirs
    for name in names:
        try:
            if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                subdirs.append(name)
            else:
                os.unlink(name, dir_fd=fd)
        except OSError:
            continue
    return subdirs


def _walk(top: int, ident: tuple[int, int]) -> None:
    """Empty the directory open as `top` (closed on return), depth-first, one fd at a time."""
    fd = top
    stack = [_Level(ident, "", _empty_files(fd))]
    while stack:
        level = stack[-1]
        if level.subdirs:
            name = level.subdirs.pop()
            child = _open_dir(name, fd)
            if child is None:
                continue
            os.close(fd)
            fd = child
            stack.append(_Level(_ident(fd), name, _empty_files(fd)))
            continue
        stack.pop()
        if not stack:
            break
        parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
        os.close(fd)
        fd = parent
        if _ident(fd) != stack[-1].ident:  # the tree moved under us: stop here
            break
        with contextlib.suppress(OSError):
            os.rmdir(level.name, dir_fd=fd)
    os.close(fd)


def measure(path: str, *, limit: int) -> tuple[int, int]:
    """(entries, bytes) below `path`, not following links; stops past `limit` entries."""
    count, size, pending = 0, 0, [path]
    while pending and count <= limit:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    count += 1
                    if count > limit:
                        break
                    st = entry.stat(follow_symlinks=False)
                    size += st.st_blocks * 512  # what the disk holds, sparse files included
                    if stat.S_ISDIR(st.st_mode):
                        pending.append(entry.path)
        except OSError:
            continue
    return count, size


def remove_tree(path: str) -> bool:
    """Delete `path` and everything below it without following symlinks; True when gone."""
    try:
        if not os.path.isdir(path) or os.path.islink(path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return not os.path.lexists(path)
        top = _open_dir(path, None)
        if top is not None:
            _walk(top, _ident(top))
        os.rmdir(path)
    except Exception:  # cleanup must complete; what is left is reported by the return value
        pass
    return not os.path.lexists(path)
