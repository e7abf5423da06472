"""Host-side units: pipe protocol, reply validation, frame encoding, launch plans, layers."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.ipc
import pytest

from tablequest.sandbox import SandboxError, SandboxUnavailable, _frames, _launch, _protocol
from tablequest.sandbox._layers import build_layers, describe_rlimits
from tablequest.sandbox._process import Limits

PNG = _protocol.PNG_MAGIC + b"rest-of-image"

# --------------------------------------------------------------------------- protocol


@pytest.fixture()
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        with contextlib.suppress(OSError):
            os.close(fd)


def test_message_roundtrip(pipe: tuple[int, int]) -> None:
    r, w = pipe
    _protocol.write_all(w, _protocol.frame(b'{"a": 1}'))
    raw = _protocol.read_message(r, deadline=time.monotonic() + 1, max_bytes=100)
    assert _protocol.decode_object(raw) == {"a": 1}


def test_read_message_timeout_close_and_cap(pipe: tuple[int, int]) -> None:
    r, w = pipe
    with pytest.raises(_protocol.ChannelTimeout):
        _protocol.read_message(r, deadline=time.monotonic() + 0.05, max_bytes=100)
    os.write(w, struct.pack(">I", 10_000))
    with pytest.raises(_protocol.ProtocolViolation, match="exceeds the 100-byte cap"):
        _protocol.read_message(r, deadline=time.monotonic() + 1, max_bytes=100)
    os.write(w, struct.pack(">I", 10) + b"abc")
    os.close(w)
    with pytest.raises(_protocol.ChannelClosed):
        _protocol.read_message(r, deadline=time.monotonic() + 1, max_bytes=100)


def test_write_to_a_closed_pipe(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.close(r)
    with pytest.raises(_protocol.ChannelClosed):
        _protocol.write_all(w, b"x" * 10)


def reply(**fields: Any) -> bytes:
    base: dict[str, Any] = {"ok": True, "stdout": "", "value": None, "error": None, "figures": []}
    base.update(fields)
    return json.dumps(base).encode()


def parse(raw: bytes, **kw: int) -> _protocol.Reply:
    limits = {"max_output": 50, "max_value": 50, "max_figures": 2, "max_figure_bytes": 100}
    limits.update(kw)
    return _protocol.parse_reply(raw, **limits)


def test_parse_reply_accepts_and_caps() -> None:
    fig = base64.b64encode(PNG).decode()
    got = parse(reply(stdout="x" * 1000, value="v", figures=[fig, fig, fig]))
    assert got.ok and got.value == "v" and got.figures == [PNG, PNG]
    assert got.stdout.startswith("x" * 250) and "truncated by host" in got.stdout
    failed = parse(reply(ok=False, error="KeyError: 'price'"))
    assert failed.error == "KeyError: 'price'" and not failed.ok
    assert parse(reply(ok=False)).error == "the sandbox reported a failure without a message"
    assert parse(reply(ok=True, error="ignored")).error is None
    assert parse(b'{"ok": true}').stdout == ""


def test_parse_reply_drops_lone_surrogates() -> None:
    got = parse(b'{"ok": true, "stdout": "a\\ud800b"}')
    assert got.stdout == "a?b"
    got.stdout.encode("utf-8")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not an object"),
        (b'{"ok": "yes"}', "'ok'"),
        (b'{"ok": true, "stdout": 5}', "'stdout' is int"),
        (b'{"ok": true, "value": []}', "'value' is list"),
        (b'{"ok": true, "figures": "x"}', "not a list"),
        (b'{"ok": true, "figures": [5]}', "base64 string"),
        (b'{"ok": true, "figures": ["' + b"A" * 400 + b'"]}', "size cap"),
        (b'{"ok": true, "figures": ["!!!!"]}', "not valid base64"),
        (b'{"ok": true, "figures": ["aGVsbG8="]}', "not a PNG"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_parse_reply_rejects(raw: bytes, message: str) -> None:
    with pytest.raises(_protocol.ProtocolViolation, match=message):
        parse(raw)


# --------------------------------------------------------------------------- frames


def decode(data: bytes) -> pd.DataFrame:
    return pa.ipc.open_stream(data).read_all().to_pandas()


def test_frames_roundtrip() -> None:
    df = pd.DataFrame(
        {"city": ["Oslo", "Lima"], "pop": [0.7, 10.1], "day": pd.to_datetime(["2024-01-02"] * 2)},
        index=["r1", "r2"],
    )
    encoded, notes = _frames.encode_frames({"cities": df})
    assert notes == [] and encoded[0][0] == "cities"
    pd.testing.assert_frame_equal(decode(encoded[0][1]), df)


def test_frames_fixups_are_recorded() -> None:
    df = pd.DataFrame([[1, "a", 2, 3]], columns=[1, "x", "x", "x.1"])
    df["mixed"] = pd.Series([1], dtype=object)
    df.loc[1] = [2, "b", 4, 5, "text"]
    encoded, notes = _frames.encode_frames({"t": df})
    back = decode(encoded[0][1])
    assert list(back.columns) == ["1", "x", "x.2", "x.1", "mixed"]
    assert back["mixed"].tolist() == ["1", "text"]
    assert len(notes) == 3 and "duplicate" in notes[1] and "mixed" in notes[2]


def test_frames_multiindex_columns() -> None:
    df = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")]))
    encoded, _ = _frames.encode_frames({"m": df})
    assert decode(encoded[0][1]).columns.tolist() == [("a", "x"), ("a", "y")]


@pytest.mark.parametrize("name", ["1abc", "with space", "class", "_private", "pd", "plt", 3])
def test_bad_frame_names(name: object) -> None:
    with pytest.raises(SandboxError, match="frame name"):
        _frames.encode_frames({name: pd.DataFrame()})  # type: ignore[dict-item]


def test_frame_must_be_a_dataframe() -> None:
    with pytest.raises(SandboxError, match="not a pandas DataFrame"):
        _frames.encode_frames({"s": pd.Series([1])})  # type: ignore[dict-item]


def test_unconvertible_frame() -> None:
    df = pd.DataFrame({"c": pd.Series([1 + 2j], dtype=complex)})
    with pytest.raises(SandboxError, match="cannot be converted to Arrow"):
        _frames.encode_frames({"c": df})


# --------------------------------------------------------------------------- launch


def test_interpreter_of_this_python() -> None:
    interp = _launch.interpreter(None)
    assert interp.executable == sys.executable
    assert sys.prefix in interp.roots and os.path.dirname(_launch.CHILD_SCRIPT) in interp.roots


def test_interpreter_errors(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="not an executable file"):
        _launch.interpreter(str(tmp_path / "missing-python"))
    with pytest.raises(SandboxUnavailable, match="does not run"):
        _launch.interpreter("/bin/false")


def test_interpreter_by_path() -> None:
    real = os.path.realpath(sys.executable)
    interp = _launch.interpreter(real)
    assert interp.executable == real and os.path.dirname(real) in interp.roots


def test_others_can_read(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    inner = private / "f.py"
    inner.write_text("x")
    inner.chmod(0o644)
    public = tmp_path / "g.py"
    public.write_text("x")
    public.chmod(0o644)
    tmp_path.chmod(0o755)
    assert _launch.others_can_read([str(inner)], ancestors=False)
    assert not _launch.others_can_read([str(inner)], ancestors=True)
    assert not _launch.others_can_read([str(private)], ancestors=False)
    assert not _launch.others_can_read([str(tmp_path / "missing")], ancestors=False)
    public.chmod(0o600)
    assert not _launch.others_can_read([str(public)], ancestors=False)


def test_bwrap_namespace_flags() -> None:
    root = _launch.bwrap_namespaces(False, 0)
    assert "--unshare-net" in root and "--cap-drop" in root and "--unshare-user" not in root
    assert "--unshare-net" not in _launch.bwrap_namespaces(True, 0)
    user = _launch.bwrap_namespaces(False, 1000)
    assert "--unshare-all" in user and "--disable-userns" in user and "--share-net" not in user
    assert "--share-net" in _launch.bwrap_namespaces(True, 1000)


def make_plan(mode: Any, **kw: Any) -> _launch.Plan:
    interp = _launch.Interpreter("/opt/py/bin/python", ("/opt/py", "/opt/py/bin", "/usr/lib/x"))
    fields: dict[str, Any] = {"network": False, "popen_user": None, "child_uid": None}
    fields.update(kw)
    return _launch.Plan(mode, interp, **fields)


def test_bwrap_argv_builds_a_minimal_view() -> None:
    argv = _launch.bwrap_argv(
        make_plan("bwrap", child_uid=65534), session="/tmp/tq/work", disk_bytes=1 << 20
    )
    text = " ".join(argv)
    assert "--ro-bind /usr /usr" in text and "--ro-bind /opt/py /opt/py" in text
    assert "--perms 0755 --dir /opt" in text and "--perms 0755 --dir /tmp/tq" in text
    assert "--size 1048576 --tmpfs /tmp/tq/work --chdir /tmp/tq/work" in text
    assert "CAP_SETUID" in text
    assert "/usr/lib/x" not in text.split("--ro-bind /usr /usr")[1]  # covered by /usr


def test_launcher_argv_per_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.shutil, "which", lambda name: f"/usr/bin/{name}")
    unshare = _launch.launcher_argv(make_plan("unshare"), session="/s", disk_bytes=1)
    assert unshare[0] == "/usr/bin/unshare" and "--net" in unshare and "--kill-child" in unshare
    assert unshare[-5:] == [
        "--",
        "/usr/bin/setpriv",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]
    shared = _launch.launcher_argv(make_plan("unshare", network=True), session="/s", disk_bytes=1)
    assert "--net" not in shared
    monkeypatch.setattr(_launch.os, "geteuid", lambda: 0)
    assert _launch.launcher_argv(make_plan("off"), session="/s", disk_bytes=1)[0].endswith(
        "setpriv"
    )
    assert (
        _launch.launcher_argv(make_plan("off", popen_user=65534), session="/s", disk_bytes=1) == []
    )
    bw = _launch.launcher_argv(make_plan("bwrap"), session="/s/w", disk_bytes=1)
    assert bw[0] == "/usr/bin/bwrap"


def test_child_env_is_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = _launch.child_env("/s")
    assert env["HOME"] == "/s" and env["MPLBACKEND"] == "Agg"
    assert "OPENAI_API_KEY" not in env and "sk-secret" not in json.dumps(env)


@pytest.fixture()
def fresh_probes() -> Iterator[None]:
    _launch._probe.cache_clear()
    yield
    _launch._probe.cache_clear()


@pytest.mark.usefixtures("fresh_probes")
def test_plan_degrades_without_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.shutil, "which", lambda name: None)
    p = _launch.plan("auto", python=None, network=False)
    assert p.mode == "off"
    assert any("bwrap is not installed" in n for n in p.notes)
    assert any("unshare (util-linux) is not installed" in n for n in p.notes)
    with pytest.raises(SandboxUnavailable, match="'bwrap' does not work here"):
        _launch.plan("bwrap", python=None, network=False)
    with pytest.raises(SandboxUnavailable, match="'unshare' does not work here"):
        _launch.plan("unshare", python=None, network=False)
    assert _launch.plan("off", python=None, network=False).mode == "off"


@pytest.mark.usefixtures("fresh_probes")
def test_plan_reports_failing_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.shutil, "which", lambda name: "/bin/false")
    p = _launch.plan("auto", python=None, network=True)
    assert p.mode == "off" and any("exit 1" in n for n in p.notes)


@pytest.mark.usefixtures("fresh_probes")
def test_plan_for_a_non_root_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.os, "geteuid", lambda: 1000)
    p = _launch.plan("off", python=None, network=False)
    assert p.popen_user is None and p.child_uid is None
    assert any("uid 1000" in n for n in p.notes)


def test_probe_runner_reports_errors() -> None:
    assert _launch._run(["/bin/true"]) is None
    assert _launch._run(["/nonexistent/tool"]) is not None
    assert _launch._run(["/bin/sh", "-c", "echo boom >&2; exit 3"]) == "exit 3: boom"


# --------------------------------------------------------------------------- layers

LIMITS = Limits(60, 2048, 64, 256, 64, 100_000, 8, 2_000_000, False, True, True)


def facts(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "pid": 2,
        "cwd": "/tmp/x/work",
        "env": ["HOME", "PATH"],
        "uid": 65534,
        "userns": False,
        "outer_uid": None,
        "interfaces": ["lo"],
        "root": ["usr", "tmp"],
        "rlimits": {"AS": [2 << 30, 2 << 30], "CPU": [63, 64], "NPROC": [-1, -1]},
        "status": {"CapEff": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"},
        "seccomp_rules": 150,
        "landlock": 7,
        "audit": True,
    }
    base.update(kw)
    return base


def as_dict(rows: list[tuple[str, bool, str]]) -> dict[str, tuple[bool, str]]:
    return {name: (active, detail) for name, active, detail in rows}


def test_layers_for_bubblewrap() -> None:
    layers = as_dict(build_layers(make_plan("bwrap", child_uid=65534), LIMITS, facts()))
    assert all(active for active, _ in layers.values())
    assert "uid 65534 on the host (nobody)" in layers["unprivileged uid"][1]
    assert "usr, tmp" in layers["file-system view"][1]


def test_layers_for_a_degraded_machine() -> None:
    plan = make_plan("off", notes=("bwrap: not installed",))
    limits = Limits(60, 2048, 64, 256, 64, 100_000, 8, 2_000_000, True, False, False, False)
    status = {"CapEff": "000001ffffffffff", "NoNewPrivs": "0", "Seccomp": "0"}
    got = as_dict(
        build_layers(
            plan,
            limits,
            facts(uid=0, interfaces=["lo", "eth0"], status=status, audit=False, landlock=0),
        )
    )
    for name in ("namespaces", "network isolation", "file-system view", "unprivileged uid"):
        assert not got[name][0], name
    assert not got["seccomp"][0] and got["seccomp"][1] == "disabled by configuration"
    assert not got["audit hook"][0] and not got["no capabilities"][0]
    assert got["landlock"] == (False, "disabled by configuration")
    assert "bwrap: not installed" in got["namespaces"][1]
    assert got["network isolation"][1].startswith("network allowed by configuration")


def test_layers_seccomp_failure_and_userns() -> None:
    f = facts(userns=True, uid=0, outer_uid=1000, status={"Seccomp": "0"}, seccomp_error="boom")
    f.update(landlock=0, landlock_error="ENOSYS")
    got = as_dict(build_layers(make_plan("unshare"), LIMITS, f))
    assert got["seccomp"] == (False, "not installed: boom")
    assert got["landlock"] == (False, "not available: ENOSYS")
    assert "uid 1000 on the host" in got["unprivileged uid"][1]


def test_describe_rlimits() -> None:
    text = describe_rlimits({"AS": [1 << 30, 1 << 30], "CPU": [-1, -1], "NOFILE": "bad"})
    assert "address space 1024 MB" in text and "CPU unlimited" in text
    assert "open files unlimited" in text
