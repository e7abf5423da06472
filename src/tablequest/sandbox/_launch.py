"""Choosing and building the launch command: bubblewrap, `unshare`, or a plain process.

`plan()` probes what works on this machine (once per process) and returns a `Plan`. Only
bubblewrap counts as the namespace layer: "unshare" and "off" are degraded modes, used only
when the user opted in (`_policy`); otherwise a machine without working bubblewrap gets a
one-line refusal. Choices:
- run by root, every child drops to its own unused uid (`_uids`), with no supplementary
  groups and no capabilities, before it imports anything (`_bootstrap`). Bubblewrap then runs
  in its privileged mode (no user namespace): a minimal read-only view (system libraries, the
  interpreter, the venv, the child script), fresh /proc, /dev and /tmp, new pid/net/ipc/uts
  namespaces, every capability dropped except the four the child needs for its first steps
  (mount the session tmpfs, change uid/gid, clear the bounding set); `unshare` gives
  pid/net/ipc/uts/mount namespaces and a private /proc but the host file system;
- interpreter roots the unused uid cannot reach (a pyenv under a 0700 /root) are opened by the
  child as root and used through their handles; files inside them must be world-readable;
- run by another user, the child keeps that user's uid (in a user namespace for bubblewrap and
  unshare) and drops its capabilities; it cannot change uid.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Literal

from . import _policy
from ._types import SandboxUnavailable

Mode = Literal["auto", "bwrap", "unshare", "off"]
CHILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child.py")
_NS_UNSHARE = ["--pid", "--ipc", "--uts", "--mount", "--mount-proc"]
_USERNS = ["--user", "--map-root-user"]
#: what the child needs as root in privileged bubblewrap before it drops everything
BWRAP_CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")


@dataclass(frozen=True)
class Interpreter:
    """The Python the child runs and the directories it needs to read."""

    executable: str
    roots: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """How children are launched; `notes` say what was degraded and why.

    Attributes:
        drop_uid: each child switches to its own unused uid (the host runs as root).
        remap: interpreter roots the child reaches through handles opened before the drop.
        tmpfs: the child mounts its session directory as a tmpfs (byte and inode caps).
        thread_cap: RLIMIT_NPROC can cap the child's threads (its uid is its own).
    """

    mode: Literal["bwrap", "unshare", "off"]
    interpreter: Interpreter
    network: bool
    drop_uid: bool = False
    remap: tuple[str, ...] = ()
    tmpfs: bool = False
    thread_cap: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def degraded(self) -> bool:
        """Running without bubblewrap (only with the user's opt-in)."""
        return self.mode != "bwrap"


def _run(argv: list[str], *, user: int | None = None, timeout: float = 20.0) -> str | None:
    """Run a probe; None when it exits 0, else a one-line reason."""
    kwargs: dict[str, object] = {}
    if user is not None:
        kwargs.update(user=user, group=user, extra_groups=[])
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            cwd="/",
            check=False,
            **kwargs,  # type: ignore[call-overload]
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return None
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
    return f"exit {done.returncode}: {tail[0]}"


@functools.lru_cache(maxsize=8)
def interpreter(python: str | None) -> Interpreter:
    """Describe `python` (default: this interpreter); SandboxUnavailable if it cannot run."""
    if python is None or os.path.abspath(python) == os.path.abspath(sys.executable):
        paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["purelib"]]
        return Interpreter(sys.executable, _roots(sys.executable, paths))
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise SandboxUnavailable(f"sandbox interpreter {python!r} is not an executable file")
    code = "import sys,sysconfig,json;print(json.dumps([sys.prefix,sys.base_prefix,"
    code += "sys.exec_prefix,sysconfig.get_paths()['purelib']]))"
    try:
        out = subprocess.run(
            [python, "-I", "-c", code], capture_output=True, timeout=60, check=True
        ).stdout
        paths = json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise SandboxUnavailable(f"sandbox interpreter {python!r} does not run: {exc}") from exc
    return Interpreter(os.path.abspath(python), _roots(python, paths))


def _roots(python: str, paths: list[str]) -> tuple[str, ...]:
    found = {os.path.dirname(os.path.abspath(python)), os.path.dirname(CHILD_SCRIPT)}
    found.add(os.path.dirname(os.path.realpath(python)))
    for p in paths:
        found.update({os.path.abspath(p), os.path.realpath(p)})
    return tuple(sorted(p for p in found if os.path.isdir(p)))


def others_can_read(paths: list[str], *, ancestors: bool) -> bool:
    """True when uid 65534 could read `paths` by mode bits (and search their ancestors)."""
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return False
        need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
        if mode & need != need:
            return False
        if ancestors:
            parent = os.path.dirname(os.path.realpath(path))
            while parent != "/":
                if not os.stat(parent).st_mode & stat.S_IXOTH:
                    return False
                parent = os.path.dirname(parent)
    return True


def _sample_paths(interp: Interpreter) -> list[str]:
    real = os.path.realpath(interp.executable)
    return [real, os.path.realpath(os.__file__), CHILD_SCRIPT, *interp.roots]


@functools.lru_cache(maxsize=8)
def _probe(mode: str, network: bool, euid: int) -> str | None:
    if mode == "bwrap":
        exe = shutil.which("bwrap")
        if exe is None:
            return "bwrap is not installed"
        return _run([exe, *bwrap_namespaces(network, euid), "--ro-bind", "/", "/", "true"])
    exe = shutil.which("unshare")
    if exe is None:
        return "unshare (util-linux) is not installed"
    net = [] if network else ["--net"]
    userns = [] if euid == 0 else _USERNS
    return _run([exe, *userns, *_NS_UNSHARE, *net, "--fork", "--kill-child", "true"])


def bwrap_namespaces(network: bool, euid: int) -> list[str]:
    """Namespace and privilege flags for bubblewrap.

    No `--new-session`: the host starts bubblewrap in a session of its own without a
    terminal, and keeping the child in bubblewrap's process group lets the host stop and
    kill the whole group.
    """
    if euid == 0:
        args = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        args += ["--cap-drop", "ALL"]
    else:
        args = ["--unshare-all", "--unshare-user", "--disable-userns"]
    if euid == 0 and not network:
        args.append("--unshare-net")
    if euid != 0 and network:
        args.append("--share-net")
    return [*args, "--die-with-parent"]


Chosen = Literal["bwrap", "unshare", "off"]


def _choose(mode: Mode, network: bool, euid: int, degraded: bool) -> tuple[Chosen, list[str]]:
    """The first mode that works, and why the ones before it did not."""
    if mode in ("unshare", "off") and not degraded:
        raise SandboxUnavailable(_policy.refusal(f"use_namespaces={mode!r} was requested"))
    candidates: tuple[Chosen, ...] = ("bwrap", "unshare", "off") if mode == "auto" else (mode,)
    notes: list[str] = []
    for candidate in candidates:
        reason = None if candidate == "off" else _probe(candidate, network, euid)
        if reason is None:
            return candidate, notes
        if mode != "auto":
            raise SandboxUnavailable(f"sandbox mode {mode!r} does not work here: {reason}")
        if not degraded:
            raise SandboxUnavailable(_policy.refusal(reason))
        notes.append(f"{candidate}: {reason}")
    raise AssertionError("unreachable: 'off' always works")  # pragma: no cover


def plan(mode: Mode, *, python: str | None, network: bool, degraded: bool = False) -> Plan:
    """Pick the launch plan; modes that do not work or are not allowed raise SandboxUnavailable.

    Args:
        mode: "auto" (bubblewrap, then with `degraded` unshare, then a plain process) or one.
        degraded: the user opted into running without bubblewrap.
    """
    interp = interpreter(python)
    euid = os.geteuid()
    chosen, notes = _choose(mode, network, euid, degraded)
    if euid != 0:
        notes.append(f"host runs as uid {euid}: the child keeps that uid, without capabilities")
        userns = chosen != "off"  # RLIMIT_NPROC then counts this namespace's tasks only
        tmpfs = chosen == "unshare"  # root of its user namespace, it may mount one
        return Plan(chosen, interp, network, tmpfs=tmpfs, thread_cap=userns, notes=tuple(notes))
    samples = _sample_paths(interp)
    if not others_can_read(samples, ancestors=False):
        raise SandboxUnavailable(
            f"the child runs as an unprivileged uid and cannot read the interpreter "
            f"({', '.join(samples[:3])}): make the Python installation world-readable"
        )
    remap = tuple(r for r in interp.roots if not others_can_read([r], ancestors=chosen != "bwrap"))
    return Plan(
        chosen,
        interp,
        network,
        drop_uid=True,
        remap=remap,
        tmpfs=chosen != "off",
        thread_cap=True,
        notes=tuple(notes),
    )


def _ancestors(path: str) -> list[str]:
    out: list[str] = []
    while path not in ("/", ""):
        path = os.path.dirname(path)
        if path != "/":
            out.append(path)
    return out[::-1]


def bwrap_argv(p: Plan, *, session: str, disk_bytes: int) -> list[str]:
    """The bubblewrap command line (without the python command)."""
    exe = shutil.which("bwrap") or "bwrap"
    argv = [exe, *bwrap_namespaces(p.network, os.geteuid())]
    if p.drop_uid:
        for cap in BWRAP_CAPS:
            argv += ["--cap-add", cap]
    argv += ["--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        argv += ["--ro-bind-try", f, f]
    mounted = ["/usr", "/proc", "/dev", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]
    created: set[str] = set()

    def covered(path: str) -> bool:
        return any(path == m or path.startswith(m + "/") for m in mounted)

    def make_parents(path: str) -> None:
        for parent in _ancestors(path):
            if parent not in created and not covered(parent):
                argv.extend(["--perms", "0755", "--dir", parent])
                created.add(parent)

    for root in sorted(p.interpreter.roots, key=len):
        if covered(root):
            continue
        make_parents(root)
        argv += ["--ro-bind", os.path.realpath(root), root]
        mounted.append(root)
    make_parents(session)
    if p.tmpfs:  # the child mounts its own, capped in inodes too
        argv += ["--dir", session, "--chdir", session]
    else:
        argv += ["--perms", "0700", "--size", str(disk_bytes), "--tmpfs", session]
        argv += ["--chdir", session]
    return argv


def launcher_argv(p: Plan, *, session: str, disk_bytes: int) -> list[str]:
    """Everything before `python -I -B _child.py CONFIG`."""
    if p.mode == "bwrap":
        return bwrap_argv(p, session=session, disk_bytes=disk_bytes)
    if p.mode == "off":
        return []
    argv: list[str] = []
    setpriv = shutil.which("setpriv")
    if setpriv:  # unshare itself must not outlive the host (it waits for a stopped child)
        argv += [setpriv, "--pdeathsig", "KILL", "--"]
    argv += [shutil.which("unshare") or "unshare", *([] if p.drop_uid else _USERNS)]
    argv += [*_NS_UNSHARE, *([] if p.network else ["--net"]), "--fork", "--kill-child", "--"]
    return argv


def child_env(session: str) -> dict[str, str]:
    """The child's whole environment: nothing inherited from the host."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": session,
        "TMPDIR": session,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": os.path.join(session, ".matplotlib"),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_MAX_THREADS": "1",
        # Arrow's jemalloc would start a background thread at import
        "JE_ARROW_MALLOC_CONF": "background_thread:false",
        # glibc reserves 64 MB of address space per thread arena and keeps it: a few dozen
        # threads would use up the RLIMIT_AS budget of the whole session
        "MALLOC_ARENA_MAX": "2",
    }
