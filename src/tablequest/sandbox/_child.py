"""Entry point of the sandbox child process: bootstrap, lock down, then serve cells.

Executed as a script (`python -I -B _child.py CONFIG_JSON`) inside the sandbox; it imports
its four sibling modules by path, never the `tablequest` package. Sequence:
1. drop to the unprivileged uid when the launcher asks for it (privileged bubblewrap), set the
   address-space, file-size and core rlimits, move the protocol pipes off fds 0/1;
2. import the libraries (pandas, numpy, scipy + scipy.stats, matplotlib/Agg + pyplot, pyarrow)
   and send `ready` — a warm child waits here until a session claims it;
3. on `load`: decode the frames (Arrow IPC), then lock down — open-file, CPU and process
   rlimits, Landlock, the seccomp filter, the audit hook — and reply with the measured facts;
4. serve `run` requests (a SIGALRM timer raises TimeoutError at the soft timeout; the host
   kills the process group at the hard one) until the pipe closes.

Messages are 4-byte big-endian length + JSON; frames follow `load` as raw Arrow IPC streams.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any

if __package__:
    from . import _audit, _landlock, _repl, _seccomp
else:  # executed as the sandbox entry script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _audit  # type: ignore[import-not-found,no-redef]
    import _landlock  # type: ignore[import-not-found,no-redef]
    import _repl  # type: ignore[import-not-found,no-redef]
    import _seccomp  # type: ignore[import-not-found,no-redef]

    del sys.path[0]

PRELOADED = (
    "pd",
    "np",
    "scipy",
    "matplotlib",
    "plt",
    "re",
    "math",
    "datetime",
    "statistics",
    "json",
    "collections",
)


def read_exact(fd: int, n: int) -> bytes:
    """Read exactly `n` bytes from `fd` (EOFError when the host closed the pipe)."""
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("host closed the pipe")
        buf += chunk
    return bytes(buf)


def recv(fd: int) -> bytes:
    """Read one length-prefixed message."""
    (size,) = struct.unpack(">I", read_exact(fd, 4))
    return read_exact(fd, size)


def send(fd: int, obj: dict[str, Any]) -> None:
    """Write one length-prefixed JSON message."""
    data = json.dumps(obj).encode("utf-8")
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def outer_uid(uid: int, uid_map: str) -> int | None:
    """Map an in-namespace uid to the host uid through `/proc/self/uid_map` text."""
    for line in uid_map.splitlines():
        inner, outer, count = (int(x) for x in line.split())
        if inner <= uid < inner + count:
            return outer + uid - inner
    return None


def status_fields(text: str) -> dict[str, str]:
    """Parse `/proc/self/status` into a dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def main() -> None:  # pragma: no cover - runs only inside the sandbox process
    import resource
    import signal

    cfg = json.loads(sys.argv[1])
    if cfg["drop_uid"] is not None:
        os.setgroups([])
        os.setgid(cfg["drop_uid"])
        os.setuid(cfg["drop_uid"])
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory"], cfg["memory"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_size"], cfg["file_size"]))
    rfd, wfd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)

    import collections
    import datetime
    import io
    import math
    import re
    import site
    import statistics

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.ipc
    import scipy
    import scipy.stats

    # exercise plotting and csv once: fonts, backends and their lazy imports load before lockdown
    warm = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    warm.plot()
    plt.gcf().savefig(io.BytesIO(), format="png")
    plt.close("all")
    warm.to_csv(io.StringIO())
    # marshal.loads is refused after lockdown: later imports compile from source instead
    sys.pycache_prefix = os.path.join(os.getcwd(), ".no-bytecode")
    send(wfd, {"op": "ready"})
    try:
        load = json.loads(recv(rfd))
        frames = {
            name: pa.ipc.open_stream(recv(rfd)).read_all().to_pandas(use_threads=False)
            for name in load["frames"]
        }
    except EOFError:
        return
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    modules = (pd, np, scipy, matplotlib, plt, re, math, datetime, statistics, json, collections)
    namespace.update(zip(PRELOADED, modules, strict=True))
    namespace.update(frames)

    facts: dict[str, Any] = {"pid": os.getpid(), "cwd": os.getcwd(), "env": sorted(os.environ)}
    facts["uid"], facts["gid"] = os.getuid(), os.getgid()
    uid_map = _read("/proc/self/uid_map")
    facts["userns"] = uid_map.split() != ["0", "0", "4294967295"]
    facts["outer_uid"] = outer_uid(os.getuid(), uid_map)
    facts["interfaces"] = [
        ln.split(":")[0].strip() for ln in _read("/proc/net/dev").splitlines()[2:]
    ]
    facts["root"] = sorted(os.listdir("/"))
    tasks = len(os.listdir("/proc/self/task"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg["open_files"], cfg["open_files"]))
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime) + 1 + cfg["cpu"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if facts["userns"]:  # process counts are per user namespace: only ours are counted
        resource.setrlimit(resource.RLIMIT_NPROC, (tasks + 16, tasks + 16))
    facts["rlimits"] = {
        name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))
        for name in ("AS", "CPU", "FSIZE", "NOFILE", "NPROC", "CORE")
    }
    facts["cpu_used"] = cpu - 1 - cfg["cpu"]
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()}
    roots.add(os.path.dirname(os.path.realpath(sys.executable)))
    read_roots = sorted(roots)
    status_fd = os.open("/proc/self/status", os.O_RDONLY)  # Landlock hides /proc afterwards
    facts["landlock"], facts["landlock_error"] = 0, None
    if cfg["landlock"]:
        try:
            facts["landlock"] = _landlock.restrict(
                session_dir=os.getcwd(), read_paths=read_roots, allow_network=cfg["network"]
            )
        except Exception as exc:
            facts["landlock_error"] = f"{type(exc).__name__}: {exc}"
    facts["seccomp_error"] = None
    if cfg["seccomp"]:
        try:
            program = _seccomp.build_filter(own_pid=os.getpid(), allow_network=cfg["network"])
            _seccomp.install(program)
            facts["seccomp_rules"] = len(program) // 8
        except Exception as exc:
            facts["seccomp_error"] = f"{type(exc).__name__}: {exc}"
    facts["status"] = status_fields(os.pread(status_fd, 1 << 16, 0).decode())
    os.close(status_fd)
    os.dup2(null, 2)
    if cfg["audit"]:
        policy = _audit.make_policy(
            session_dir=os.getcwd(),
            read_roots=read_roots,
            own_pid=os.getpid(),
            allow_network=cfg["network"],
        )
        _audit.install(policy)
    facts["audit"] = bool(cfg["audit"])
    send(wfd, {"op": "loaded", "facts": facts})

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"the cell ran longer than {current[0]:g} s")

    current = [0.0]
    signal.signal(signal.SIGALRM, on_alarm)
    while True:
        try:
            request = json.loads(recv(rfd))
        except EOFError:
            return
        current[0] = float(request["timeout"])
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, current[0])
                reply = _repl.run_cell(
                    request["code"],
                    namespace,
                    max_output=cfg["max_output"],
                    max_value=cfg["max_value"],
                    max_figures=cfg["max_figures"],
                    max_figure_bytes=cfg["max_figure_bytes"],
                )
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except TimeoutError as exc:
            reply = {"ok": False, "stdout": "", "value": None, "error": f"TimeoutError: {exc}"}
            reply["figures"] = []
        send(wfd, reply)


if __name__ == "__main__":
    main()
