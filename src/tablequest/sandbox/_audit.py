"""PEP 578 audit-hook policy for the sandbox child: a convenience layer, not a boundary.

Runs inside the child (loaded as a plain module; it imports nothing from `tablequest`).
An audit hook sees every `open`, `os.*`, `subprocess`, `socket`, `ctypes` and `import` event
and may refuse it by raising. It is not a security boundary: it lives in the same address
space as the code it watches, and pure Python can switch it off (rewriting the policy
closure's code or cells through frame walking; numpy buffers give raw memory access too).
The kernel layers (namespaces, the unused uid, Landlock, seccomp, rlimits) must hold without
it, and the test suite checks that they do. What the hook adds is clear error messages
(`PermissionError: sandbox: reading /etc/passwd is not allowed`) for the ordinary attempts.

Hardening choices:
- every builtin and OS primitive the policy uses is captured in a closure when the hook is
  built, so monkeypatching `os`, `posixpath` or `builtins` afterwards cannot steer it;
- paths are resolved by our own `realpath` over the captured `lstat`/`readlink`; creating
  symlinks and hard links is refused, so a path cannot be swapped between check and use;
- path arguments that are not exact `str`/`bytes`/`int` are refused (no user `__fspath__`
  or `str` subclass code runs inside the hook);
- `gc.get_objects`/`get_referrers`/`get_referents`, `sys.settrace`/`setprofile`,
  `code.__new__`, `marshal.loads` and new audit hooks are refused: they are the ways to reach
  or rewrite the hook's own state or bytecode.
"""

from __future__ import annotations

import posix
import sys
from collections.abc import Callable, Sequence
from typing import Any

Decide = Callable[[str, tuple[Any, ...]], str | None]

ALWAYS_DENIED = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "os.startfile",
        "os.killpg",
        "os.symlink",
        "os.link",
        "os.mknod",
        "os.mkfifo",
        "sys.addaudithook",
        "sys.settrace",
        "sys.setprofile",
        "code.__new__",
        "marshal.loads",
        "marshal.load",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "resource.setrlimit",
        "resource.prlimit",
        "fcntl.ioctl",
        "sqlite3.enable_load_extension",
        "sqlite3.load_extension",
        "webbrowser.open",
    }
)
NETWORK_EVENTS = frozenset(
    {"urllib.Request", "http.client.connect", "ftplib.connect", "smtplib.connect"}
)
DENIED_IMPORTS = frozenset(
    {
        "ctypes",
        "_ctypes",
        "cffi",
        "_cffi_backend",
        "_posixsubprocess",
        "_socket",
        "_multiprocessing",
        "_posixshmem",
        "_xxsubinterpreters",
        "_xxinterpchannels",
        "_tkinter",
        "posix",
        "_signal",
    }
)
#: functions that act on other processes without raising an audit event
UNAUDITED = {
    "posix": (
        "pidfd_open",
        "setpriority",
        "sched_setaffinity",
        "sched_setscheduler",
        "sched_setparam",
    ),
    "os": (
        "pidfd_open",
        "setpriority",
        "sched_setaffinity",
        "sched_setscheduler",
        "sched_setparam",
    ),
    "_signal": ("pidfd_send_signal",),
    "signal": ("pidfd_send_signal",),
    "_posixsubprocess": ("fork_exec",),
    "subprocess": ("_fork_exec",),
    "_socket": ("socketpair",),
    "socket": ("socketpair",),
}
#: events whose path arguments must stay inside the session directory
WRITE_EVENTS = {
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.chflags": (0,),
    "os.utime": (0,),
    "os.truncate": (0,),
    "os.setxattr": (0,),
    "os.removexattr": (0,),
    "os.chdir": (0,),
}
#: position of the dir_fd argument (-1 when absent): a relative path with a directory
#: descriptor resolves against that descriptor, not the working directory the policy uses
DIR_FD_ARG = {
    "os.remove": (1,),
    "os.rmdir": (1,),
    "os.mkdir": (2,),
    "os.rename": (2, 3),
    "os.chmod": (2,),
    "os.chown": (3,),
    "os.utime": (3,),
}
#: events whose path argument must be readable under the policy
READ_EVENTS = {"os.listdir": 0, "os.scandir": 0, "os.getxattr": 0, "os.listxattr": 0}
READ_FILES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/etc/localtime")
READ_DIRS = ("/usr/share/zoneinfo", "/usr/share/fonts")
WRITE_FLAGS = posix.O_WRONLY | posix.O_RDWR | posix.O_CREAT | posix.O_TRUNC | posix.O_APPEND


def _make_realpath() -> Callable[[str], str]:
    """`realpath` over `lstat`/`readlink`/`getcwd` captured now (no monkeypatchable module)."""
    _lstat, _readlink, _getcwd = posix.lstat, posix.readlink, posix.getcwd
    _list, _reversed, _OSError = list, reversed, OSError

    def realpath(path: str) -> str:
        if not path.startswith("/"):
            path = _getcwd() + "/" + path
        out: list[str] = []
        stack = _list(_reversed(path.split("/")))
        hops = 0
        while stack:
            part = stack.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if out:
                    out.pop()
                continue
            out.append(part)
            try:
                mode = _lstat("/" + "/".join(out)).st_mode
            except _OSError:
                continue
            if (mode & 0o170000) == 0o120000 and hops < 40:
                hops += 1
                target = _readlink("/" + "/".join(out))
                out.pop()
                if target.startswith("/"):
                    out = []
                stack.extend(_reversed(target.split("/")))
        return "/" + "/".join(out)

    return realpath


def _path_rules(
    session_dir: str, read_roots: Sequence[str], own_pid: int
) -> tuple[Callable[[object], str | None], Callable[[str], bool], Callable[[str], bool]]:
    """`as_path(arg)` (a str/bytes argument resolved, else None), `in_session(path)` and
    `may_read(path)`: closures over captured primitives."""
    realpath = _make_realpath()
    _decode, _str, _bytes, _type, _tuple = bytes.decode, str, bytes, type, tuple
    session = realpath(session_dir)
    proc_self = f"/proc/{own_pid}"
    roots = _tuple(realpath(r) for r in (*read_roots, *READ_DIRS))
    files = _tuple(realpath(f) for f in READ_FILES)

    def under(path: str, root: str) -> bool:
        return path == root or path.startswith(root.rstrip("/") + "/")

    def as_path(arg: object) -> str | None:
        kind = _type(arg)
        if kind is _str:
            return realpath(arg)  # type: ignore[arg-type]
        if kind is _bytes:
            return realpath(_decode(arg, "utf-8", "surrogateescape"))  # type: ignore[arg-type]
        return None

    def may_read(path: str) -> bool:
        if under(path, session) or under(path, proc_self) or path in files:
            return True
        for root in roots:  # noqa: SIM110 - `any` is a monkeypatchable builtin
            if under(path, root):
                return True
        return False

    def in_session(path: str) -> bool:
        return under(path, session)

    return as_path, in_session, may_read


def _path_checks(
    as_path: Callable[[object], str | None],
    in_session: Callable[[str], bool],
    may_read: Callable[[str], bool],
) -> tuple[
    Callable[[tuple[Any, ...]], str | None],
    Callable[[str, tuple[Any, ...], tuple[int, ...]], str | None],
]:
    """`check_open(args)` and `check_paths(event, args, positions)` over the path rules."""
    _lstat, _OSError = posix.lstat, OSError
    _int, _type, _len = int, type, len
    _wflags, _dir_fd_args = WRITE_FLAGS, DIR_FD_ARG

    def is_dir(path: str) -> bool:
        try:
            return (_lstat(path).st_mode & 0o170000) == 0o040000
        except _OSError:
            return False

    def check_open(args: tuple[Any, ...]) -> str | None:
        target = args[0]
        flags: Any = args[2] if _len(args) > 2 else None
        if _type(target) is _int:
            return None
        path = as_path(target)
        if path is None:
            return f"open() of a {_type(target).__name__} path object"
        writing = _type(flags) is not _int or bool(flags & _wflags)
        if writing:
            if in_session(path) or path == "/dev/null":
                return None
            return f"writing {path} (outside the session directory)"
        if not may_read(path):
            return f"reading {path}"
        if is_dir(path) and not in_session(path):
            return f"opening the directory {path}"
        return None

    def check_paths(event: str, args: tuple[Any, ...], positions: tuple[int, ...]) -> str | None:
        for pos in _dir_fd_args.get(event, ()):
            if pos < _len(args) and _type(args[pos]) is _int and args[pos] != -1:
                return f"{event} relative to a directory descriptor"
        for pos in positions:
            if pos >= _len(args) or args[pos] is None or _type(args[pos]) is _int:
                continue
            path = as_path(args[pos])
            if path is None or not in_session(path):
                return f"{event} on {path or _type(args[pos]).__name__} (outside the session)"
        return None

    return check_open, check_paths


def make_policy(
    *,
    session_dir: str,
    read_roots: Sequence[str],
    own_pid: int,
    allow_network: bool,
) -> Decide:
    """Build `decide(event, args) -> reason | None` (None: allowed) over captured primitives;
    the path rules are closures too, held in this closure's cells (no attribute lookups)."""
    as_path, in_session, may_read = _path_rules(session_dir, read_roots, own_pid)
    check_open, check_paths = _path_checks(as_path, in_session, may_read)
    _str, _int, _type, _len = str, int, type, len
    _always, _net, _imports = ALWAYS_DENIED, NETWORK_EVENTS, DENIED_IMPORTS
    _write_events, _read_events = WRITE_EVENTS, READ_EVENTS

    def decide(event: str, args: tuple[Any, ...]) -> str | None:
        if event == "open":
            return check_open(args)
        if event in _always:
            return event
        if event.startswith("ctypes."):
            return "ctypes"
        if event == "import":
            name = args[0] if args and _type(args[0]) is _str else ""
            if name in _imports or name.split(".")[0] in _imports:
                return f"importing {name}"
            return None
        if event in _write_events:
            return check_paths(event, args, _write_events[event])
        if event in _read_events:
            target = args[0] if args else None
            if target is None or _type(target) is _int:
                return None
            path = as_path(target)
            return None if path is not None and may_read(path) else f"{event} on {path}"
        if event == "os.kill":
            return None if args and args[0] == own_pid else "signals to other processes"
        if event == "sqlite3.connect":
            db = args[0] if args else ""
            if _type(db) is _str and db in ("", ":memory:"):
                return None
            path = as_path(db)
            return None if path is not None and in_session(path) else f"sqlite3 on {path}"
        if allow_network:
            if event == "socket.__new__" and _len(args) > 1 and args[1] not in (2, 10):
                return "non-IP sockets"
            return None
        if event.startswith("socket.") or event in _net:
            return "network access"
        return None

    return decide


def make_hook(decide: Decide) -> Callable[[str, tuple[Any, ...]], None]:
    """Wrap a policy as an audit hook that raises `PermissionError` (fails closed on bugs)."""
    _PermissionError, _Exception = PermissionError, Exception

    def hook(event: str, args: tuple[Any, ...]) -> None:
        try:
            reason = decide(event, args)
        except _Exception:
            reason = f"{event} (could not be checked)"
        if reason is not None:
            raise _PermissionError(f"sandbox: {reason} is not allowed")

    return hook


def refuse(*args: object, **kwargs: object) -> None:
    """Stand-in for the functions in `UNAUDITED`."""
    raise PermissionError("sandbox: acting on other processes is not allowed")


def install(decide: Decide) -> None:  # pragma: no cover - irreversible; exercised in the child
    """Install the hook for the rest of the process lifetime.

    The functions in `UNAUDITED` raise no audit event (`_posixsubprocess.fork_exec`, the pidfd
    and scheduling calls), so they are replaced in their loaded modules; re-importing those
    modules is refused by the hook and `importlib.reload` keeps the stand-ins.
    """
    sys.addaudithook(make_hook(decide))
    for module_name, names in UNAUDITED.items():
        module = sys.modules.get(module_name)
        for name in names:
            if module is not None and hasattr(module, name):
                setattr(module, name, refuse)
