"""An unused uid (and gid of the same number) for each child of a root host.

A uid of its own makes the kernel treat the child as a stranger to every other process and
file: it owns nothing outside its session, it cannot signal other sessions' children, and
`RLIMIT_NPROC` (counted per uid) caps its threads alone. Uids are drawn at random from a band
that systemd and the usual container setups leave unallocated (2,080,374,784 + [0, 2^24):
above systemd-nspawn's 524,288-1,879,048,191, below systemd's foreign range at 0x7FFE0000
and below 2^31), inside what this process's user namespace maps, and skipped when the
passwd or group database knows them or /etc/subuid or /etc/subgid delegates them.
"""

from __future__ import annotations

import functools
import grp
import pwd
import secrets

from ._types import SandboxUnavailable

BAND_START, BAND_SIZE = 0x7C000000, 1 << 24
_RESERVED = frozenset({65534, 65535})


def _ranges(text: str) -> list[tuple[int, int]]:
    """[start, end) of the ids a `/proc/self/uid_map` text maps."""
    out = []
    for line in text.splitlines():
        inner, _, count = (int(x) for x in line.split())
        out.append((inner, inner + count))
    return out


def band(uid_map: str, gid_map: str) -> tuple[int, int]:
    """The [start, end) to draw from: the default band if both maps hold it, else the upper
    half of the largest range both maps hold."""
    common = [
        (max(a, c), min(b, d))
        for a, b in _ranges(uid_map)
        for c, d in _ranges(gid_map)
        if max(a, c) < min(b, d)
    ]
    for lo, hi in common:
        if lo <= BAND_START and hi >= BAND_START + BAND_SIZE:
            return BAND_START, BAND_START + BAND_SIZE
    if not common:
        raise SandboxUnavailable("no uid is mapped in this user namespace")
    lo, hi = max(common, key=lambda r: r[1] - r[0])
    if hi - lo < 1024:
        raise SandboxUnavailable(f"only uids {lo}-{hi - 1} are mapped here: none to spare")
    return max(lo + (hi - lo) // 2, 1000), hi - 2


@functools.lru_cache(maxsize=1)
def _host_band() -> tuple[int, int]:
    with open("/proc/self/uid_map") as u, open("/proc/self/gid_map") as g:
        return band(u.read(), g.read())


@functools.lru_cache(maxsize=1)
def _delegated() -> tuple[tuple[int, int], ...]:
    """[start, end) ranges that /etc/subuid and /etc/subgid hand to users' containers."""
    out = []
    for path in ("/etc/subuid", "/etc/subgid"):
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.strip().split(":")
            if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                out.append((int(parts[1]), int(parts[1]) + int(parts[2])))
    return tuple(out)


def _known(uid: int) -> bool:
    if any(lo <= uid < hi for lo, hi in _delegated()):
        return True
    try:
        pwd.getpwuid(uid)
    except KeyError:
        try:
            grp.getgrgid(uid)
        except KeyError:
            return False
    return True


def unused_uid() -> int:
    """A random uid (also free as a gid) that no account or group uses."""
    lo, hi = _host_band()
    for _ in range(64):
        uid = lo + secrets.randbelow(hi - lo)
        if uid not in _RESERVED and not _known(uid):
            return uid
    raise SandboxUnavailable(f"no unused uid found in {lo}-{hi - 1}")
