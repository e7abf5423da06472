"""Process-level helpers: run the real `tablequest` command, watch its children, mount media.

Every wait is a hang guard (`GUARD` seconds, generous for a loaded 2-core machine), never a
timing assertion. Commands run as ``python -m tablequest`` in a new session, so that the
signals a test sends reach only that command (and its process group), never pytest.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

GUARD = 180.0  # seconds: only ever reached when something hangs
WTQ_CSV = Path("/work/shared/data/wtq/csv")


class Proc:
    """The helpers the reliability tests share (a fixture, since tests is no package)."""

    guard = GUARD

    @staticmethod
    def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """`python -m tablequest ARGS` in its own session, stdout/stderr captured."""
        return subprocess.Popen(
            [sys.executable, "-m", "tablequest", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )

    @staticmethod
    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run `python -m tablequest ARGS` to the end (hang guard: GUARD seconds)."""
        return subprocess.run(
            [sys.executable, "-m", "tablequest", *args],
            capture_output=True,
            text=True,
            timeout=GUARD,
            env={**os.environ, **(env or {})},
        )

    @staticmethod
    def wait_for(condition: Callable[[], object], what: str, timeout: float = GUARD) -> None:
        """Poll `condition` until true; fail naming `what` after `timeout` (a hang guard)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"gave up after {timeout:.0f} s waiting for {what}")
            time.sleep(0.05)

    @staticmethod
    def children(pid: int) -> dict[int, str]:
        """pid → command line of the live processes whose parent is `pid`."""
        out = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid and fields[0] != "Z":
                    cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                    out[int(entry.name)] = cmd
        return out

    @staticmethod
    def identity(pid: int) -> str | None:
        """The process's start time (tells a live process from a re-used pid); None when it
        is gone or a zombie."""
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return None if fields[0] in ("Z", "X") else fields[19]

    @staticmethod
    def kill_all(pids: dict[int, str | None]) -> None:
        """Clean up after a failed test: SIGKILL the processes it started that still live."""
        for pid, ident in pids.items():
            if ident is not None and Proc.identity(pid) == ident:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    @staticmethod
    def write_csvs(root: Path, n_files: int, rows: int = 40, width: int = 6) -> Path:
        """`n_files` CSV tables of `rows` rows under `root` (distinct content, deterministic)."""
        root.mkdir(parents=True, exist_ok=True)
        for i in range(n_files):
            with (root / f"t{i:05d}.csv").open("w", newline="", encoding="utf-8") as fh:
                out = csv.writer(fh)
                out.writerow([f"col{j}" for j in range(width)])
                out.writerows(
                    [f"v{i}-{r}-{j} w{(i * r + j) % 97}" for j in range(width)] for r in range(rows)
                )
        return root

    @staticmethod
    def _mount(*args: str) -> None:
        subprocess.run(["mount", *args], check=True, capture_output=True, timeout=60)

    @staticmethod
    @contextlib.contextmanager
    def tmpfs(path: Path, size: str) -> Iterator[Path]:
        """A tmpfs of `size` at `path` (skips the test when this machine cannot mount)."""
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("mounting a tmpfs needs root and mount(8)")
        path.mkdir(parents=True, exist_ok=True)
        try:
            Proc._mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
        except (subprocess.CalledProcessError, OSError) as exc:
            pytest.skip(f"cannot mount a tmpfs here: {exc}")
        try:
            yield path
        finally:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)

    @staticmethod
    @contextlib.contextmanager
    def read_only_view(source: Path, path: Path) -> Iterator[Path]:
        """A read-only bind mount of `source` at `path` (skips when this machine cannot)."""
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("a read-only bind mount needs root and mount(8)")
        path.mkdir(parents=True, exist_ok=True)
        try:
            Proc._mount("--bind", str(source), str(path))
        except (subprocess.CalledProcessError, OSError) as exc:
            pytest.skip(f"cannot bind-mount here: {exc}")
        try:
            Proc._mount("-o", "remount,bind,ro", str(path))
            yield path
        except subprocess.CalledProcessError as exc:
            pytest.skip(f"cannot remount read-only here: {exc}")
        finally:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def proc() -> Proc:
    return Proc()


@pytest.fixture
def big_input(tmp_path: Path) -> list[str]:
    """A folder large enough that an ingest is still running seconds after it started:
    two folders of the real WikiTableQuestions CSVs (read-only) when present, else 1,500
    generated tables."""
    parts = [WTQ_CSV / "202-csv", WTQ_CSV / "203-csv"]
    if all(p.is_dir() for p in parts):
        return [str(p) for p in parts]
    return [str(Proc.write_csvs(tmp_path / "generated", 1500))]
