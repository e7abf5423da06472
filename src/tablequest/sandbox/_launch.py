"""Choosing and building the launch command: bubblewrap, `unshare`, or a plain process.

`plan()` probes what works on this machine (once per process) and returns a `Plan`; `"auto"`
degrades bubblewrap → unshare → off and records why. Choices:
- bubblewrap run by root is used in its privileged mode (no user namespace): it builds a
  minimal read-only view (system libraries, the interpreter, the venv, the child script), a
  size-capped tmpfs as the session directory, fresh /proc, /dev and /tmp, new pid/net/ipc/uts
  namespaces, drops every capability but setuid/setgid, and the child then drops to uid 65534
  before importing anything. Run by another user it uses a user namespace instead;
- `unshare` (util-linux) gives user/pid/net/ipc/uts/mount namespaces and a private /proc but no
  file-system view; `setpriv` then clears the capabilities the user namespace granted;
- the uid drop outside bubblewrap happens only when uid 65534 can reach the interpreter
  (every ancestor directory world-searchable); a pyenv under /root is not, so it is skipped.
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

from ._types import SandboxUnavailable

Mode = Literal["auto", "bwrap", "unshare", "off"]
NOBODY = 65534
CHILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child.py")
_NS_UNSHARE = ["--user", "--map-root-user", "--pid", "--ipc", "--uts", "--mount", "--mount-proc"]


@dataclass(frozen=True)
class Interpreter:
    """The Python the child runs and the directories it needs to read."""

    executable: str
    roots: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """How children are launched; `notes` say what was degraded and why."""

    mode: Literal["bwrap", "unshare", "off"]
    interpreter: Interpreter
    network: bool
    popen_user: int | None
    child_uid: int | None
    notes: tuple[str, ...] = field(default=())


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
            return "bwrap is not installed (Debian: apt-get install bubblewrap)"
        return _run([exe, *bwrap_namespaces(network, euid), "--ro-bind", "/", "/", "true"])
    exe = shutil.which("unshare")
    if exe is None:
        return "unshare (util-linux) is not installed"
    net = [] if network else ["--net"]
    return _run([exe, *_NS_UNSHARE, *net, "--fork", "--kill-child", "true"])


def bwrap_namespaces(network: bool, euid: int) -> list[str]:
    """Namespace and privilege flags for bubblewrap."""
    if euid == 0:
        args = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        args += ["--cap-drop", "ALL"]
    else:
        args = ["--unshare-all", "--unshare-user", "--disable-userns"]
    if euid == 0 and not network:
        args.append("--unshare-net")
    if euid != 0 and network:
        args.append("--share-net")
    return [*args, "--die-with-parent", "--new-session"]


def plan(mode: Mode, *, python: str | None, network: bool) -> Plan:
    """Pick the launch plan; explicit modes that do not work raise SandboxUnavailable."""
    interp = interpreter(python)
    euid = os.geteuid()
    notes: list[str] = []
    chosen: Literal["bwrap", "unshare", "off"] = "off"
    for candidate in ("bwrap", "unshare") if mode == "auto" else (mode,):
        if candidate == "off":
            break
        reason = _probe(candidate, network, euid)
        if reason is None:
            chosen = candidate
            break
        if mode != "auto":
            raise SandboxUnavailable(f"sandbox mode {mode!r} does not work here: {reason}")
        notes.append(f"{candidate}: {reason}")
    samples = _sample_paths(interp)
    popen_user: int | None = None
    child_uid: int | None = None
    if euid != 0:
        notes.append(f"host runs as uid {euid}; the child keeps that uid")
    elif chosen == "bwrap" and others_can_read(samples, ancestors=False):
        child_uid = NOBODY
    elif chosen != "bwrap" and others_can_read(samples, ancestors=True):
        popen_user = NOBODY
    else:
        notes.append(f"uid {NOBODY} cannot read the interpreter under {samples[0]}; kept uid 0")
    return Plan(chosen, interp, network, popen_user, child_uid, tuple(notes))


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
    if p.child_uid is not None:
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
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
    argv += ["--perms", "0777", "--size", str(disk_bytes), "--tmpfs", session, "--chdir", session]
    return argv


def launcher_argv(p: Plan, *, session: str, disk_bytes: int) -> list[str]:
    """Everything before `python -I -B _child.py CONFIG`."""
    if p.mode == "bwrap":
        return bwrap_argv(p, session=session, disk_bytes=disk_bytes)
    argv = []
    if p.mode == "unshare":
        argv = [shutil.which("unshare") or "unshare", *_NS_UNSHARE]
        argv += ([] if p.network else ["--net"]) + ["--fork", "--kill-child", "--"]
    setpriv = shutil.which("setpriv")
    # the child would otherwise hold every capability (uid 0, or root of its user namespace)
    if setpriv and (p.mode == "unshare" or (os.geteuid() == 0 and p.popen_user is None)):
        argv += [setpriv, "--inh-caps=-all", "--bounding-set=-all", "--"]
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
    }
