"""In-process tests of the child-side policies: the audit-hook decisions and the seccomp BPF."""

from __future__ import annotations

import os
import posix
import struct
from pathlib import Path

import pytest

from tablequest.sandbox import _audit, _landlock, _seccomp

# --------------------------------------------------------------------------- seccomp


def run_bpf(
    program: bytes, nr: int, *, arch: int = _seccomp.AUDIT_ARCH_X86_64, arg0: int = 0
) -> int:
    """A classic-BPF interpreter for the opcodes the filter uses; returns the action."""
    insns = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    pc, acc = 0, 0
    for _ in range(len(insns)):
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            (acc,) = struct.unpack_from("=I", data, k)
            pc += 1
        elif code == 0x15:
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x35:
            pc += 1 + (jt if acc >= k else jf)
        elif code == 0x45:
            pc += 1 + (jt if acc & k else jf)
        elif code == 0x06:
            return int(k)
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")
    raise AssertionError("program fell off its end")


ALLOW = _seccomp.RET_ALLOW
EPERM = _seccomp.RET_ERRNO | _seccomp.EPERM
PID = 4242


@pytest.fixture(scope="module")
def closed() -> bytes:
    return _seccomp.build_filter(own_pid=PID, allow_network=False, machine="x86_64")


@pytest.fixture(scope="module")
def networked() -> bytes:
    return _seccomp.build_filter(own_pid=PID, allow_network=True, machine="x86_64")


@pytest.mark.parametrize("nr", [0, 1, 2, 3, 9, 11, 257, 262, 318])  # read write open close ...
def test_seccomp_allows_ordinary_syscalls(closed: bytes, nr: int) -> None:
    assert run_bpf(closed, nr) == ALLOW


@pytest.mark.parametrize("name", _seccomp.DENIED)
def test_seccomp_refuses_every_denied_syscall(closed: bytes, name: str) -> None:
    assert run_bpf(closed, _seccomp.NR[name]) == EPERM


def test_seccomp_threads_yes_processes_no(closed: bytes) -> None:
    clone = _seccomp.NR["clone"]
    assert run_bpf(closed, clone, arg0=0x3D0F00) == ALLOW  # glibc pthread_create flags
    assert run_bpf(closed, clone, arg0=0x01200011) == EPERM  # glibc fork(): SIGCHLD|SETTID
    assert run_bpf(closed, _seccomp.NR["clone3"]) == _seccomp.RET_ERRNO | _seccomp.ENOSYS


@pytest.mark.parametrize("name", _seccomp.SELF_ONLY)
def test_seccomp_signals_only_to_self(closed: bytes, name: str) -> None:
    assert run_bpf(closed, _seccomp.NR[name], arg0=PID) == ALLOW
    assert run_bpf(closed, _seccomp.NR[name], arg0=1) == EPERM
    assert run_bpf(closed, _seccomp.NR[name], arg0=0xFFFFFFFF) == EPERM  # kill(-1, ...)


@pytest.mark.parametrize("name", _seccomp.SELF_OR_ZERO)
def test_seccomp_self_or_zero(closed: bytes, name: str) -> None:
    assert run_bpf(closed, _seccomp.NR[name], arg0=0) == ALLOW
    assert run_bpf(closed, _seccomp.NR[name], arg0=PID) == ALLOW
    assert run_bpf(closed, _seccomp.NR[name], arg0=1) == EPERM


def test_seccomp_sockets(closed: bytes, networked: bytes) -> None:
    socket_nr = _seccomp.NR["socket"]
    for family in (1, 2, 10, 16, 17):
        assert run_bpf(closed, socket_nr, arg0=family) == EPERM
    assert run_bpf(networked, socket_nr, arg0=2) == ALLOW
    assert run_bpf(networked, socket_nr, arg0=10) == ALLOW
    assert run_bpf(networked, socket_nr, arg0=1) == EPERM  # AF_UNIX: host daemons
    assert run_bpf(networked, socket_nr, arg0=16) == EPERM  # netlink


@pytest.mark.parametrize(
    "name", ["socketpair", "memfd_create", "memfd_secret", "shmget", "msgget", "mq_open"]
)
def test_seccomp_closes_local_channels_and_hidden_memory(
    closed: bytes, networked: bytes, name: str
) -> None:
    """socketpair and memory held outside RLIMIT_AS are refused even with the network on."""
    assert run_bpf(closed, _seccomp.NR[name], arg0=1) == EPERM
    assert run_bpf(networked, _seccomp.NR[name], arg0=1) == EPERM


def test_seccomp_foreign_abi_is_refused(closed: bytes) -> None:
    assert run_bpf(closed, 1, arch=0x40000003) == _seccomp.RET_KILL_PROCESS  # i386
    assert run_bpf(closed, _seccomp.X32_SYSCALL_BIT | 1) == EPERM


def test_seccomp_program_shape(closed: bytes) -> None:
    assert len(closed) % 8 == 0 and 0 < len(closed) // 8 < 4096


def test_seccomp_unsupported_architecture() -> None:
    with pytest.raises(_seccomp.SeccompUnsupported, match="aarch64"):
        _seccomp.build_filter(own_pid=1, allow_network=False, machine="aarch64")


# --------------------------------------------------------------------------- audit policy


@pytest.fixture()
def layout(tmp_path: Path) -> dict[str, Path]:
    session = tmp_path / "session"
    lib = tmp_path / "lib"
    outside = tmp_path / "outside"
    for d in (session, lib, outside):
        d.mkdir()
    (lib / "mod.py").write_text("x = 1\n")
    (outside / "secret.txt").write_text("s3cret\n")
    (session / "data.csv").write_text("a\n1\n")
    return {"session": session, "lib": lib, "outside": outside}


def policy(layout: dict[str, Path], *, network: bool = False) -> _audit.Decide:
    return _audit.make_policy(
        session_dir=str(layout["session"]),
        read_roots=[str(layout["lib"])],
        own_pid=os.getpid(),
        allow_network=network,
    )


RD, WR = os.O_RDONLY | os.O_CLOEXEC, os.O_WRONLY | os.O_CREAT | os.O_TRUNC


def test_open_inside_and_outside(layout: dict[str, Path]) -> None:
    decide = policy(layout)
    s, lib, out = layout["session"], layout["lib"], layout["outside"]
    assert decide("open", (str(s / "data.csv"), "r", RD)) is None
    assert decide("open", (str(s / "new.csv"), "w", WR)) is None
    assert decide("open", (str(lib / "mod.py"), "r", RD)) is None
    assert decide("open", (str(lib / "mod.py"), None, os.O_RDWR)) is not None
    assert "reading" in str(decide("open", (str(out / "secret.txt"), "r", RD)))
    assert "writing" in str(decide("open", (str(out / "x.txt"), "w", WR)))
    assert decide("open", ("/etc/passwd", "r", RD)) is not None
    assert decide("open", ("/dev/null", "w", WR)) is None
    assert decide("open", (7, "r", RD)) is None  # an already-open descriptor
    assert decide("open", (str(s / "x"), "w", None)) is None  # unknown flags: a write, inside
    assert decide("open", (str(lib / "x"), "r", "weird")) is not None  # unknown flags outside
    assert decide("open", (os.fsencode(out / "secret.txt"), "rb", RD)) is not None


def test_open_of_a_path_like_object_is_refused(layout: dict[str, Path]) -> None:
    class Sneaky(str):
        pass

    decide = policy(layout)
    assert "path object" in str(decide("open", (Sneaky("data.csv"), "r", RD)))
    assert "path object" in str(decide("open", (layout["session"], "r", RD)))


def test_relative_paths_and_dotdot(
    layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(layout["session"])
    decide = policy(layout)
    assert decide("open", ("data.csv", "r", RD)) is None
    assert decide("open", ("../outside/secret.txt", "r", RD)) is not None
    assert decide("open", ("./a/../../outside/secret.txt", "r", RD)) is not None
    assert decide("open", ("../../../../../../etc/passwd", "r", RD)) is not None


def test_symlinks_are_resolved(layout: dict[str, Path]) -> None:
    s = layout["session"]
    (s / "link").symlink_to(layout["outside"] / "secret.txt")
    (s / "dirlink").symlink_to(layout["outside"])
    (s / "loop").symlink_to(s / "loop")
    decide = policy(layout)
    assert decide("open", (str(s / "link"), "r", RD)) is not None
    assert decide("open", (str(s / "dirlink" / "secret.txt"), "r", RD)) is not None
    assert decide("open", (str(s / "loop"), "r", RD)) is None  # stays in the session: ELOOP
    assert decide("open", (f"/proc/{os.getpid()}/root{layout['outside']}/secret.txt", "r", RD))


def test_policy_ignores_later_monkeypatching(
    layout: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = layout["session"]
    (s / "link").symlink_to(layout["outside"] / "secret.txt")
    decide = policy(layout)
    monkeypatch.setattr(os.path, "realpath", lambda p, **k: str(s / "data.csv"))
    monkeypatch.setattr(posix, "lstat", lambda *a, **k: os.stat(s / "data.csv"))
    monkeypatch.setattr(os, "lstat", lambda *a, **k: os.stat(s / "data.csv"))
    monkeypatch.setattr(_audit, "WRITE_FLAGS", 0)
    assert decide("open", (str(s / "link"), "r", RD)) is not None
    assert decide("open", (str(layout["outside"] / "x"), "w", WR)) is not None


def test_directories(layout: dict[str, Path]) -> None:
    decide = policy(layout)
    (layout["session"] / "sub").mkdir()
    assert decide("open", (str(layout["session"] / "sub"), None, RD)) is None
    assert "directory" in str(decide("open", (str(layout["lib"]), None, RD)))
    assert decide("os.listdir", (str(layout["lib"]),)) is None
    assert decide("os.scandir", (str(layout["session"]),)) is None
    assert decide("os.listdir", (str(layout["outside"]),)) is not None
    assert decide("os.listdir", ("/",)) is not None
    assert decide("os.listdir", (None,)) is None
    assert decide("os.scandir", (3,)) is None
    assert decide("os.listdir", ()) is None


@pytest.mark.parametrize(
    ("event", "args"),
    [
        ("os.remove", ("{out}/secret.txt", None)),
        ("os.rename", ("{s}/data.csv", "{out}/stolen.csv", None, None)),
        ("os.rename", ("{out}/secret.txt", "{s}/secret.txt", None, None)),
        ("os.mkdir", ("{out}/d", 511, None)),
        ("os.chmod", ("{out}/secret.txt", 511, None)),
        ("os.utime", ("{out}/secret.txt", None, None, None)),
        ("os.truncate", ("{out}/secret.txt", 0)),
        ("os.chdir", ("/",)),
        ("os.chdir", ("{lib}",)),
        ("os.rmdir", ("{sneaky}",)),
    ],
)
def test_write_events_outside_the_session(
    layout: dict[str, Path], event: str, args: tuple[object, ...]
) -> None:
    class Sneaky(str):
        pass

    names = {"s": layout["session"], "out": layout["outside"], "lib": layout["lib"]}

    def fill(a: object) -> object:
        if a == "{sneaky}":
            return Sneaky(str(layout["session"]))
        return a.format(**names) if isinstance(a, str) else a

    assert policy(layout)(event, tuple(fill(a) for a in args)) is not None


def test_relative_paths_with_a_directory_descriptor(layout: dict[str, Path]) -> None:
    """The hook resolves against the cwd, the kernel against the descriptor: refuse the mix."""
    decide = policy(layout)
    assert "directory descriptor" in str(decide("os.chmod", ("secret.txt", 0o666, 5)))
    assert "directory descriptor" in str(decide("os.utime", ("x", (0, 0), None, 5)))
    assert "directory descriptor" in str(decide("os.rename", ("a", "b", -1, 7)))
    inside = str(layout["session"] / "data.csv")
    assert decide("os.chmod", (inside, 0o644, -1)) is None


def test_write_events_inside_the_session(layout: dict[str, Path]) -> None:
    decide = policy(layout)
    s = layout["session"]
    assert decide("os.remove", (str(s / "data.csv"), None)) is None
    assert decide("os.rename", (str(s / "a"), str(s / "b"), None, None)) is None
    assert decide("os.mkdir", (str(s / "d"), 511, None)) is None
    assert decide("os.chdir", (str(s),)) is None
    assert decide("os.truncate", (5, 0)) is None  # descriptor


@pytest.mark.parametrize(
    "event",
    [*sorted(_audit.ALWAYS_DENIED), "ctypes.dlopen", "ctypes.call_function", "ctypes.cdata"],
)
def test_always_denied(layout: dict[str, Path], event: str) -> None:
    assert policy(layout)(event, ()) is not None


def test_imports(layout: dict[str, Path]) -> None:
    decide = policy(layout)
    for name in ("ctypes", "_ctypes", "ctypes.util", "_posixsubprocess", "cffi", "_socket"):
        assert decide("import", (name, None, [], [], [])) is not None
    for name in ("json", "fractions", "pandas.io.formats.style"):
        assert decide("import", (name, None, [], [], [])) is None


def test_signals_sqlite_and_unknown_events(layout: dict[str, Path]) -> None:
    decide = policy(layout)
    assert decide("os.kill", (os.getpid(), 15)) is None
    assert decide("os.kill", (1, 9)) is not None
    assert decide("os.kill", (0, 9)) is not None
    assert decide("os.kill", (-1, 9)) is not None
    assert decide("sqlite3.connect", (":memory:",)) is None
    assert decide("sqlite3.connect", (str(layout["session"] / "db.sqlite"),)) is None
    assert decide("sqlite3.connect", (str(layout["outside"] / "db.sqlite"),)) is not None
    assert decide("compile", (b"1", "<cell>")) is None
    assert decide("object.__getattr__", (object(), "__code__")) is None


def test_network_events(layout: dict[str, Path]) -> None:
    closed, opened = policy(layout), policy(layout, network=True)
    for event, args in [
        ("socket.__new__", (None, 2, 1, 0)),
        ("socket.connect", (None, ("127.0.0.1", 80))),
        ("socket.getaddrinfo", ("example.com", 80, 0, 0, 0)),
        ("urllib.Request", ("http://x", None, {}, "GET")),
    ]:
        assert closed(event, args) == "network access"
        assert opened(event, args) is None
    assert opened("socket.__new__", (None, 1, 1, 0)) == "non-IP sockets"


def test_hook_raises_and_fails_closed(layout: dict[str, Path]) -> None:
    hook = _audit.make_hook(policy(layout))
    hook("open", (str(layout["session"] / "data.csv"), "r", RD))
    with pytest.raises(PermissionError, match=r"sandbox: os\.system is not allowed"):
        hook("os.system", (b"id",))

    def broken(event: str, args: tuple[object, ...]) -> str | None:
        raise ValueError("bug")

    with pytest.raises(PermissionError, match="could not be checked"):
        _audit.make_hook(broken)("open", ("x", "r", 0))


def test_refuse_process_creation() -> None:
    with pytest.raises(PermissionError, match="other processes"):
        _audit.refuse(1, 2, key=3)


# --------------------------------------------------------------------------- landlock


def test_landlock_masks_follow_the_abi() -> None:
    fs1, net1, scoped1 = _landlock.masks(1, allow_network=False)
    assert fs1 == (1 << 13) - 1 and net1 == 0 and scoped1 == 0
    fs3, _, _ = _landlock.masks(3, allow_network=False)
    assert fs3 & _landlock.REFER and fs3 & _landlock.TRUNCATE and not fs3 & _landlock.IOCTL_DEV
    fs6, net6, scoped6 = _landlock.masks(6, allow_network=False)
    assert fs6 & _landlock.IOCTL_DEV
    assert net6 == _landlock.NET_BIND_TCP | _landlock.NET_CONNECT_TCP
    assert scoped6 == _landlock.SCOPE_SIGNAL | _landlock.SCOPE_ABSTRACT_UNIX_SOCKET
    assert _landlock.masks(6, allow_network=True)[1] == 0
    with pytest.raises(_landlock.LandlockUnsupported):
        _landlock.masks(0, allow_network=False)


def test_landlock_ruleset_attr_size() -> None:
    assert len(_landlock.ruleset_attr(1, 1, 2, 3)) == 8
    assert len(_landlock.ruleset_attr(4, 1, 2, 3)) == 16
    assert struct.unpack("=QQQ", _landlock.ruleset_attr(7, 1, 2, 3)) == (1, 2, 3)


def test_landlock_rules(layout: dict[str, Path]) -> None:
    fs, _, _ = _landlock.masks(5, allow_network=False)
    got = {
        path: (access, is_dir)
        for path, access, is_dir in _landlock.rules(
            session_dir=str(layout["session"]),
            read_paths=[str(layout["lib"]), str(layout["lib"] / "mod.py"), "/nonexistent"],
            handled_fs=fs,
        )
    }
    read = _landlock.READ_FILE | _landlock.READ_DIR
    assert got[str(layout["session"])] == (fs, True)
    assert got[str(layout["lib"])] == (read, True)
    assert got[str(layout["lib"] / "mod.py")] == (_landlock.READ_FILE, False)  # file rights only
    assert got["/dev/null"][0] == _landlock.READ_FILE | _landlock.WRITE_FILE | _landlock.TRUNCATE
    assert "/nonexistent" not in got and str(layout["outside"]) not in got
    assert not any(
        access & _landlock.WRITE_FILE
        for p, (access, _) in got.items()
        if p != "/dev/null" and p != str(layout["session"])
    )
