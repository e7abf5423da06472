"""The child's first steps: take the session, drop every privilege, lock down, all before import.

Runs inside the child (loaded as a plain module; it imports nothing from `tablequest`, and
nothing but the standard library and ctypes). `lock_down` runs before pandas, numpy, pyarrow
or matplotlib are imported, while the process has exactly one thread, so every thread those
libraries start later inherits Landlock and seccomp. Sequence:

1. mount the session directory as a tmpfs capped in bytes and inodes, when the launcher left
   us `CAP_SYS_ADMIN` in a private mount namespace (bubblewrap or unshare run by root);
2. open directory handles on the interpreter roots the unprivileged uid could not reach (a
   pyenv under a 0700 /root) and point `sys.path` and package `__path__`s through
   `/proc/self/fd/N/...`: a handle opened by root stays usable after the drop, and a path
   through it skips the ancestors' permission checks, while `..` from it still needs them;
3. drop privileges: clear the bounding and ambient capability sets, the supplementary groups,
   switch real/effective/saved uid and gid to the host's unused uid, clear the remaining
   capability sets, then verify all of it from `/proc/self/status` (failing closed);
4. ask for SIGKILL when the parent dies (a stopped child would otherwise outlive the host);
5. rlimits: core dumps, address space, file size, processes/threads;
6. check that this is the only thread, record the facts that need /proc, then Landlock and
   seccomp.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from typing import Any

if __package__:  # imported as part of tablequest, in the host
    from tablequest.errors import RunError
else:  # loaded by path in the sandbox child before lock-down: the standard library only

    class RunError(Exception):  # type: ignore[no-redef]
        """The child's stand-in: its errors reach the host as messages, not exceptions."""


PR_SET_PDEATHSIG, PR_SET_KEEPCAPS, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 1, 8, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SYS_CAPSET = 126
CAPABILITY_V3 = 0x20080522
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
CAP_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapAmb")

_libc = ctypes.CDLL(None, use_errno=True)


class LockdownFailed(RunError, RuntimeError):
    """A step that must not be skipped failed; the child exits instead of running code."""


def _errno(what: str) -> LockdownFailed:
    return LockdownFailed(f"{what}: {os.strerror(ctypes.get_errno())}")


def status() -> dict[str, str]:  # pragma: no cover - runs only in the child
    """`/proc/self/status` as a dict."""
    with open("/proc/self/status", encoding="utf-8") as fh:
        return {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in fh)}


def mount_session(
    path: str, *, size: int, inodes: int, uid: int
) -> None:  # pragma: no cover - runs only in the child
    """Mount a tmpfs capped at `size` bytes and `inodes` files on the session directory."""
    options = f"size={size},nr_inodes={inodes},mode=0700,uid={uid},gid={uid}"
    flags = ctypes.c_ulong(MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if _libc.mount(b"tmpfs", path.encode(), b"tmpfs", flags, options.encode()) != 0:
        raise _errno(f"mounting the session tmpfs on {path}")


def _through(path: str, handles: dict[str, int]) -> str:
    """`path` rewritten to go through the handle of the deepest root that contains it."""
    best = max((r for r in handles if path == r or path.startswith(r + "/")), key=len, default="")
    return f"/proc/self/fd/{handles[best]}{path[len(best) :]}" if best else path


def open_roots(roots: list[str]) -> dict[str, int]:  # pragma: no cover - runs only in the child
    """Open `roots` as directory handles and route imports through them (see step 2)."""
    handles = {root: os.open(root, os.O_PATH | os.O_DIRECTORY) for root in roots}
    sys.path[:] = [_through(p, handles) for p in sys.path]
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):
            search[:] = [_through(p, handles) for p in search]
    return handles


def _capset_zero() -> None:  # pragma: no cover - runs only in the child
    header = (ctypes.c_uint32 * 2)(CAPABILITY_V3, 0)
    data = (ctypes.c_uint32 * 6)()
    if _libc.syscall(ctypes.c_long(SYS_CAPSET), header, data) != 0:
        raise _errno("capset")


def drop_privileges(uid: int | None) -> None:  # pragma: no cover - runs only in the child
    """Switch to `uid` (None: keep ours) with no groups and no capabilities; verify it."""
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _libc.prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0)
    for cap in range(64):  # needs CAP_SETPCAP; without it the bounding set is moot (no exec)
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    _capset_zero()
    fields = status()
    held = [f"{k}={fields.get(k)}" for k in CAP_FIELDS if fields.get(k, "").strip("0") != ""]
    if held:
        raise LockdownFailed(f"capabilities left after the drop: {', '.join(held)}")
    if uid is not None:
        ids = fields.get("Uid", "").split() + fields.get("Gid", "").split()
        if ids != [str(uid)] * 8 or fields.get("Groups", "") != "":
            raise LockdownFailed(f"uid/gid/groups not dropped to {uid}: {fields}")


def die_with_parent() -> None:  # pragma: no cover - runs only in the child
    """SIGKILL this process when its parent dies (the uid change cleared the setting)."""
    parent = os.getppid()
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise _errno("prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def set_limits(cfg: dict[str, Any]) -> None:  # pragma: no cover - runs only in the child
    """The rlimits that hold from the start: core dumps, memory, file size, processes."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory"], cfg["memory"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_size"], cfg["file_size"]))
    if cfg["nproc"] is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg["nproc"], cfg["nproc"]))


def _read(path: str) -> str:  # pragma: no cover - runs only in the child
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def observe() -> dict[str, Any]:  # pragma: no cover - runs only in the child
    """Facts that need /proc or / (unreadable once Landlock is on)."""
    return {
        "uid_map": _read("/proc/self/uid_map"),
        "interfaces": [ln.split(":")[0].strip() for ln in _read("/proc/net/dev").splitlines()[2:]],
        "root": sorted(os.listdir("/")),
        "tasks_at_lockdown": len(os.listdir("/proc/self/task")),
    }


def confine(
    cfg: dict[str, Any], read_roots: list[str], landlock: Any, seccomp: Any
) -> dict[str, Any]:  # pragma: no cover - runs only in the child
    """Landlock then seccomp, in this (single) thread; returns what was applied."""
    facts: dict[str, Any] = {"landlock": 0, "landlock_error": None, "seccomp_error": None}
    if cfg["landlock"]:
        try:
            facts["landlock"] = landlock.restrict(
                session_dir=os.getcwd(), read_paths=read_roots, allow_network=cfg["network"]
            )
        except Exception as exc:  # an old kernel: reported as an inactive layer
            facts["landlock_error"] = f"{type(exc).__name__}: {exc}"
    if cfg["seccomp"]:
        try:
            program = seccomp.build_filter(own_pid=os.getpid(), allow_network=cfg["network"])
            seccomp.install(program)
            facts["seccomp_rules"] = len(program) // 8
        except Exception as exc:
            facts["seccomp_error"] = f"{type(exc).__name__}: {exc}"
    return facts


def lock_down(
    cfg: dict[str, Any], landlock: Any, seccomp: Any
) -> tuple[dict[str, Any], int]:  # pragma: no cover - runs only in the child
    """Steps 1-6 of the module docstring; returns the facts and an open /proc/self/status fd."""
    uid = cfg["uid"]
    if cfg["tmpfs"] is not None:
        mount_session(cfg["session"], uid=os.getuid() if uid is None else uid, **cfg["tmpfs"])
    handles = open_roots(cfg["remap"]) if cfg["remap"] else {}
    drop_privileges(uid)
    die_with_parent()
    os.chdir(cfg["session"])
    set_limits(cfg)
    facts = observe()
    if facts["tasks_at_lockdown"] != 1:
        raise LockdownFailed(f"{facts['tasks_at_lockdown']} threads exist before the lockdown")
    status_fd = os.open("/proc/self/status", os.O_RDONLY)
    read_roots = [_through(r, handles) for r in cfg["read_roots"]]
    facts.update(confine(cfg, read_roots, landlock, seccomp))
    return facts, status_fd
