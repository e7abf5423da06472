"""Landlock (Linux >= 5.13): the child confines its own file access, no root needed.

Runs inside the child (loaded as a plain module; it imports nothing from `tablequest`).
Landlock is the kernel-level file-system layer when bubblewrap is missing: pyarrow, duckdb or
lxml read and write files from C, past any audit hook, but not past Landlock. Rules:
- read-only: the Python install and venv, `/usr` (and the `/lib*`, `/bin` links), the dynamic
  linker cache, time-zone data, `/sys/devices/system/cpu` (CPU counts), `/dev/urandom`;
- read-write: the session directory (everything) and `/dev/null`;
- everything else, including /proc, /etc and the rest of /tmp: refused.
With ABI >= 4 TCP bind/connect are refused unless the network is allowed; with ABI >= 6
signals to processes outside the sandbox and abstract unix sockets are refused too.
Already-open descriptors (the protocol pipes) are not affected, and neither are native threads
that existed before (jemalloc, Arrow); threads created later inherit the restriction.
"""

from __future__ import annotations

import os
import struct

if __package__:  # imported as part of tablequest, in the host
    from tablequest.errors import RunError
else:  # loaded by path in the sandbox child before lock-down: the standard library only

    class RunError(Exception):  # type: ignore[no-redef]
        """The child's stand-in: its errors reach the host as messages, not exceptions."""


SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
#: rights that apply to files (a rule on a file may only carry these)
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV

READ_ONLY = (
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/sys/devices/system/cpu",
    "/dev/urandom",
    "/dev/zero",
)
READ_WRITE = ("/dev/null",)


class LandlockUnsupported(RunError, RuntimeError):
    """Landlock is not available (old kernel, disabled LSM, or blocked syscalls)."""


def masks(abi: int, *, allow_network: bool) -> tuple[int, int, int]:
    """(handled fs rights, handled net rights, scopes) for a kernel of this ABI version."""
    if abi < 1:
        raise LandlockUnsupported(f"Landlock ABI {abi}")
    fs = (1 << 13) - 1
    if abi >= 2:
        fs |= REFER
    if abi >= 3:
        fs |= TRUNCATE
    if abi >= 5:
        fs |= IOCTL_DEV
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 and not allow_network else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    return fs, net, scoped


def rules(
    *, session_dir: str, read_paths: list[str], handled_fs: int
) -> list[tuple[str, int, bool]]:
    """(path, allowed rights, is_dir) for every existing path the child may use."""
    out: list[tuple[str, int, bool]] = []
    read = (READ_FILE | READ_DIR) & handled_fs
    for path, allowed in (
        *((p, read) for p in (*read_paths, *READ_ONLY)),
        *((p, (READ_FILE | WRITE_FILE | TRUNCATE) & handled_fs) for p in READ_WRITE),
        (session_dir, handled_fs),
    ):
        if not os.path.exists(path):
            continue
        is_dir = os.path.isdir(path)
        out.append((path, allowed if is_dir else allowed & FILE_RIGHTS, is_dir))
    return out


def ruleset_attr(abi: int, fs: int, net: int, scoped: int) -> bytes:
    """`struct landlock_ruleset_attr`, as long as this kernel understands."""
    if abi >= 6:
        return struct.pack("=QQQ", fs, net, scoped)
    if abi >= 4:
        return struct.pack("=QQ", fs, net)
    return struct.pack("=Q", fs)


def restrict(
    *, session_dir: str, read_paths: list[str], allow_network: bool
) -> int:  # pragma: no cover - irreversible; exercised in the child
    """Confine this process (and future threads); return the ABI version used."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    long = ctypes.c_long
    abi = syscall(long(SYS_CREATE_RULESET), ctypes.c_void_p(None), long(0), long(1))
    if abi < 1:
        raise LandlockUnsupported(f"landlock_create_ruleset: errno {ctypes.get_errno()}")
    fs, net, scoped = masks(abi, allow_network=allow_network)
    attr = ctypes.create_string_buffer(ruleset_attr(abi, fs, net, scoped))
    ruleset = syscall(long(SYS_CREATE_RULESET), attr, long(len(attr.raw)), long(0))
    if ruleset < 0:
        raise LandlockUnsupported(f"landlock_create_ruleset: errno {ctypes.get_errno()}")
    try:
        for path, allowed, _ in rules(
            session_dir=session_dir, read_paths=read_paths, handled_fs=fs
        ):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                beneath = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd))
                if syscall(long(SYS_ADD_RULE), long(ruleset), long(1), beneath, long(0)):
                    raise LandlockUnsupported(
                        f"landlock_add_rule({path}): errno {ctypes.get_errno()}"
                    )
            finally:
                os.close(fd)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise LandlockUnsupported(f"prctl(NO_NEW_PRIVS): errno {ctypes.get_errno()}")
        if syscall(long(SYS_RESTRICT_SELF), long(ruleset), long(0)):
            raise LandlockUnsupported(f"landlock_restrict_self: errno {ctypes.get_errno()}")
    finally:
        os.close(ruleset)
    return int(abi)
