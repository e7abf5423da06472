"""Entry point of the sandbox child process: lock down, import, then serve cells.

Executed as a script (`python -I -B _child.py CONFIG_JSON`) inside the sandbox; it imports
its sibling modules by path, never the `tablequest` package. Sequence:
1. move the protocol pipes off fds 0/1, then `_bootstrap.lock_down`: session tmpfs, privilege
   drop to an unused uid, rlimits, Landlock and seccomp, while the process has one thread;
2. import the libraries (pandas, numpy, scipy + scipy.stats, matplotlib/Agg + pyplot, pyarrow)
   under those layers and send `ready` — a warm child waits here until a session claims it;
3. on `load`: decode the frames (Arrow IPC), set the open-file and CPU rlimits, install the
   audit hook (a convenience layer: clear errors, not a boundary) and reply with the facts;
4. serve `run` requests (a SIGALRM timer raises TimeoutError at the soft timeout; the host
   kills the process group at the hard one) until the pipe closes.

Messages are 4-byte big-endian length + JSON; frames follow `load` as raw Arrow IPC streams.
Every reply echoes the `id` of the request it answers.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import Any

if __package__:
    from . import _audit, _bootstrap, _landlock, _repl, _seccomp
else:  # executed as the sandbox entry script
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _audit  # type: ignore[import-not-found,no-redef]
    import _bootstrap  # type: ignore[import-not-found,no-redef]
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


def import_libraries() -> dict[str, Any]:  # pragma: no cover - runs only in the child
    """Import the preloaded libraries and exercise plotting once; return name -> module."""
    import collections
    import datetime
    import io
    import math
    import re
    import statistics

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd
    import pyarrow.ipc  # noqa: F401 - decodes the frames
    import scipy
    import scipy.stats

    # fonts, backends and their lazy imports load now, before the audit hook and the frames
    warm = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    warm.plot()
    plt.gcf().savefig(io.BytesIO(), format="png")
    plt.close("all")
    warm.to_csv(io.StringIO())
    modules = (pd, np, scipy, matplotlib, plt, re, math, datetime, statistics, json, collections)
    return dict(zip(PRELOADED, modules, strict=True))


def import_lineage() -> Any:  # pragma: no cover - runs only in the child
    """The lineage module (`_lineage_setup`), its pandas wrappers installed."""
    if __package__:
        from . import _lineage_setup
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        try:
            import _lineage_setup  # type: ignore[import-not-found,no-redef]

            _lineage_setup.install()  # imports its sibling modules by path too
        finally:
            del sys.path[0]
    _lineage_setup.install()
    return _lineage_setup


def load_frames(rfd: int, names: list[str]) -> dict[str, Any]:  # pragma: no cover - child only
    """Read one Arrow IPC stream per name and convert it to a DataFrame."""
    import pyarrow as pa
    import pyarrow.ipc

    return {
        name: pa.ipc.open_stream(recv(rfd)).read_all().to_pandas(use_threads=False)
        for name in names
    }


def session_facts(cfg: dict[str, Any], status_fd: int) -> dict[str, Any]:  # pragma: no cover
    """Set the per-session limits and measure what a session starts with."""
    import resource

    facts: dict[str, Any] = {"pid": os.getpid(), "cwd": os.getcwd(), "env": sorted(os.environ)}
    facts["uid"], facts["gid"], facts["groups"] = os.getuid(), os.getgid(), os.getgroups()
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg["open_files"], cfg["open_files"]))
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime) + 1 + cfg["cpu"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    facts["cpu_used"] = cpu - 1 - cfg["cpu"]
    facts["rlimits"] = {
        name: resource.getrlimit(getattr(resource, "RLIMIT_" + name))
        for name in ("AS", "CPU", "FSIZE", "NOFILE", "NPROC", "CORE")
    }
    facts["status"] = status_fields(os.pread(status_fd, 1 << 16, 0).decode())
    os.close(status_fd)
    return facts


def serve(
    rfd: int, wfd: int, cfg: dict[str, Any], namespace: dict[str, Any]
) -> None:  # pragma: no cover - runs only inside the sandbox process
    """Answer `run` requests until the host closes the pipe."""
    import signal

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
                    max_figure_side=cfg["max_figure_side"],
                )
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except TimeoutError as exc:
            reply = {"ok": False, "stdout": "", "value": None, "error": f"TimeoutError: {exc}"}
            reply["figures"] = []
        reply["id"] = request["id"]
        send(wfd, reply)


def main() -> None:  # pragma: no cover - runs only inside the sandbox process
    cfg = json.loads(sys.argv[1])
    rfd, wfd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    try:
        facts, status_fd = _bootstrap.lock_down(cfg, _landlock, _seccomp)
    except Exception as exc:
        print(f"sandbox lockdown failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        os._exit(3)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    namespace.update(import_libraries())
    lineage = import_lineage()
    # marshal.loads is refused by the audit hook: later imports compile from source instead
    sys.pycache_prefix = os.path.join(os.getcwd(), ".no-bytecode")
    send(wfd, {"op": "ready"})
    try:
        load = json.loads(recv(rfd))
        frames = load_frames(rfd, load["frames"])
        lineage.bind(frames)
        namespace.update(frames)
        namespace["__tq__"] = lineage.Builtins
    except EOFError:
        return
    facts.update(session_facts(cfg, status_fd))
    uid_map = facts.pop("uid_map")
    facts["userns"] = uid_map.split() != ["0", "0", "4294967295"]
    facts["outer_uid"] = outer_uid(os.getuid(), uid_map)
    os.dup2(null, 2)
    if cfg["audit"]:
        policy = _audit.make_policy(
            session_dir=os.getcwd(),
            read_roots=cfg["read_roots"],
            own_pid=os.getpid(),
            allow_network=cfg["network"],
        )
        _audit.install(policy)
    facts["audit"] = bool(cfg["audit"])
    send(wfd, {"op": "loaded", "id": load["id"], "facts": facts})
    serve(rfd, wfd, cfg, namespace)


if __name__ == "__main__":
    main()
