"""Host-side units: pipe protocol, reply validation, frame encoding, launch plans, layers."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import struct
import time
import zlib
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.ipc
import pytest

from tablequest.sandbox import SandboxError, _frames, _launch, _protocol
from tablequest.sandbox._layers import build_layers, describe_rlimits
from tablequest.sandbox._png import PNG_MAGIC, InvalidPNG, check_png
from tablequest.sandbox._process import Limits


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def make_png(width: int, height: int, *, rows: bytes | None = None, colour: int = 2) -> bytes:
    """A real RGB (or `colour`) PNG; `rows` replaces the raw scanlines."""
    raw = rows if rows is not None else (b"\x00" + b"\x7f" * 3 * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return PNG_MAGIC + body


PNG = make_png(4, 3)
SOON = 1.0  # seconds: a deadline that a healthy pipe meets at once

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
    _protocol.write_all(w, _protocol.frame(b'{"a": 1}'), deadline=time.monotonic() + SOON)
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
        _protocol.write_all(w, b"x" * 10, deadline=time.monotonic() + SOON)


RID = 7


def reply(**fields: Any) -> bytes:
    base: dict[str, Any] = {"ok": True, "stdout": "", "value": None, "error": None, "figures": []}
    base.update(id=RID, **fields)
    return json.dumps(base).encode()


def parse(raw: bytes, *, count: int = 3, size: int = 400) -> _protocol.Reply:
    figures = _protocol.FigureLimits(count=count, bytes=size, side=64, pixels=64 * 64)
    return _protocol.parse_reply(raw, request_id=RID, max_output=50, max_value=50, figures=figures)


def test_parse_reply_accepts_and_caps() -> None:
    fig = base64.b64encode(PNG).decode()
    got = parse(reply(stdout="x" * 1000, value="v", figures=[fig, fig]))
    assert got.ok and got.value == "v" and got.figures == [PNG, PNG]
    assert got.stdout.startswith("x" * 250) and "truncated by host" in got.stdout
    failed = parse(reply(ok=False, error="KeyError: 'price'"))
    assert failed.error == "KeyError: 'price'" and not failed.ok
    assert parse(reply(ok=False)).error == "the sandbox reported a failure without a message"
    assert parse(reply(ok=True, error="ignored")).error is None
    assert parse(b'{"ok": true, "id": 7}').stdout == ""


def test_parse_reply_drops_lone_surrogates() -> None:
    got = parse(b'{"ok": true, "id": 7, "stdout": "a\\ud800b"}')
    assert got.stdout == "a?b"
    got.stdout.encode("utf-8")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not an object"),
        (b'{"ok": true}', "reply id None does not match"),
        (b'{"ok": true, "id": 8}', "reply id 8 does not match"),
        (b'{"ok": true, "id": true}', "reply id True does not match"),
        (b'{"id": 7, "ok": "yes"}', "'ok'"),
        (b'{"id": 7, "ok": true, "stdout": 5}', "'stdout' is int"),
        (b'{"id": 7, "ok": true, "value": []}', "'value' is list"),
        (b'{"id": 7, "ok": true, "figures": "x"}', "not a list"),
        (b'{"id": 7, "ok": true, "figures": [5]}', "base64 string"),
        (b'{"id": 7, "ok": true, "figures": ["' + b"A" * 800 + b'"]}', "size cap"),
        (b'{"id": 7, "ok": true, "figures": ["!!!!"]}', "not valid base64"),
        (b'{"id": 7, "ok": true, "figures": ["aGVsbG8="]}', "not a valid PNG"),
        (b"\xff\xfe", "not JSON"),
    ],
)
def test_parse_reply_rejects(raw: bytes, message: str) -> None:
    with pytest.raises(_protocol.ProtocolViolation, match=message):
        parse(raw)


def test_write_has_a_deadline(pipe: tuple[int, int]) -> None:
    """A reader that stops reading (a stopped child, a replaced read end) costs a timeout."""
    _, w = pipe
    os.set_blocking(w, False)
    start = time.monotonic()
    with pytest.raises(_protocol.ChannelTimeout, match="stopped reading"):
        _protocol.write_all(w, b"x" * (1 << 20), deadline=time.monotonic() + 0.2)
    assert time.monotonic() - start < 30  # returned, instead of blocking forever


def test_unsolicited_data_is_a_violation(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.set_blocking(r, False)
    _protocol.expect_silence(r)  # nothing pending: fine
    os.write(w, b"\x00")
    with pytest.raises(_protocol.ProtocolViolation, match="nobody asked for"):
        _protocol.expect_silence(r)
    os.close(w)
    with pytest.raises(_protocol.ChannelClosed):
        _protocol.expect_silence(r)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "more than 4096 arrays"),
        (b"[" * 17 + b"]" * 17, "deeper than 16 levels"),
        (b'{"a": ' * 17 + b"1" + b"}" * 17, "deeper than 16 levels"),
        (b"[" + b"[]," * 5000 + b"[]]", "more than 4096 arrays"),
    ],
)
def test_nesting_is_bounded_before_parsing(raw: bytes, message: str) -> None:
    with pytest.raises(_protocol.ProtocolViolation, match=message):
        _protocol.decode_object(raw)


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"id": 1, "stdout": '[{"x": "\\"[[[' * 2000, "value": "]]]"})
    assert _protocol.decode_object(text.encode())["value"] == "]]]"


# --------------------------------------------------------------------------- figures


def png_error(data: bytes, **limits: int) -> str:
    bounds = {"max_bytes": 10_000, "max_side": 64, "max_pixels": 64 * 64, **limits}
    with pytest.raises(InvalidPNG) as caught:
        check_png(data, **bounds)
    return str(caught.value)


def test_real_pngs_pass() -> None:
    assert check_png(PNG, max_bytes=1000, max_side=4, max_pixels=12) == (4, 3)
    grey = make_png(8, 2, colour=0, rows=(b"\x01" + b"\x10" * 8) * 2)
    assert check_png(grey, max_bytes=1000, max_side=8, max_pixels=16) == (8, 2)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (PNG_MAGIC + b"junk" * 100, "IHDR"),
        (b"GIF89a" + PNG[6:], "signature"),
        (PNG[:-4] + b"\x00\x00\x00\x00", "CRC"),
        (PNG[:40], "truncated|malformed|IEND"),
        (PNG + b"trailing", "last chunk|malformed|truncated"),
        (make_png(4, 3, rows=b"\x00" * 10), "inflates to 10 bytes"),
        (make_png(4, 3, rows=(b"\x07" + b"\x00" * 12) * 3), "filter type"),
        (make_png(4, 3, rows=b"\x00" * 1000), "past the announced size"),
        (make_png(4, 3, colour=5), "colour type"),
    ],
)
def test_broken_pngs_are_refused(data: bytes, message: str) -> None:
    assert re.search(message, png_error(data))


def test_png_bounds() -> None:
    assert "side limit" in png_error(make_png(65, 1))
    assert "side limit" in png_error(make_png(40, 40), max_pixels=1000)
    assert "byte limit" in png_error(PNG, max_bytes=10)
    # a decompression bomb: announced 4096 x 4096, tiny on disk, refused before inflating
    bomb = make_png(4096, 4096, rows=b"")
    assert len(bomb) < 200 and "side limit" in png_error(bomb)


def test_forged_figures_in_a_reply_are_refused() -> None:
    fake = base64.b64encode(PNG_MAGIC + b"junk" * 40).decode()
    with pytest.raises(_protocol.ProtocolViolation, match="not a valid PNG image"):
        parse(reply(figures=[fake]))
    with pytest.raises(_protocol.ProtocolViolation, match="exceed the limit of 3"):
        parse(reply(figures=[base64.b64encode(PNG).decode()] * 4))


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


# --------------------------------------------------------------------------- layers

LIMITS = Limits(60, 2048, 64, 256, 64, 100_000, 8, 2_000_000, False, True, True)
UID = 1_510_000_123
ZERO = "0000000000000000"


def make_plan(mode: Any, **kw: Any) -> _launch.Plan:
    interp = _launch.Interpreter("/opt/py/bin/python", ("/opt/py", "/opt/py/bin"))
    return _launch.Plan(mode, interp, network=False, **kw)


def facts(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "pid": 2,
        "cwd": "/tmp/x/work",
        "env": ["HOME", "PATH"],
        "uid": UID,
        "groups": [],
        "userns": False,
        "outer_uid": None,
        "interfaces": ["lo"],
        "root": ["usr", "tmp"],
        "rlimits": {"AS": [2 << 30, 2 << 30], "CPU": [63, 64], "NPROC": [64, 64]},
        "status": {
            "CapEff": ZERO,
            "CapPrm": ZERO,
            "CapInh": ZERO,
            "CapAmb": ZERO,
            "CapBnd": ZERO,
            "NoNewPrivs": "1",
            "Seccomp": "2",
        },
        "tasks_at_lockdown": 1,
        "seccomp_rules": 150,
        "landlock": 7,
        "audit": True,
    }
    base.update(kw)
    return base


def as_dict(rows: list[tuple[str, bool, str]]) -> dict[str, tuple[bool, str]]:
    return {name: (active, detail) for name, active, detail in rows}


def test_layers_for_bubblewrap() -> None:
    plan = make_plan("bwrap", drop_uid=True, tmpfs=True, thread_cap=True)
    layers = as_dict(build_layers(plan, LIMITS, facts()))
    assert all(active for active, _ in layers.values()), layers
    assert f"uid {UID} on the host, groups [] (an unused uid" in layers["unprivileged uid"][1]
    assert "usr, tmp" in layers["file-system view"][1]
    assert "256 MB and 10000 files" in layers["disk quota"][1]
    assert "processes/threads 64" in layers["resource limits"][1]


def test_layers_flag_what_is_missing() -> None:
    plan = make_plan("bwrap", drop_uid=True, tmpfs=True)
    got = as_dict(build_layers(plan, LIMITS, facts(groups=[0], tasks_at_lockdown=2)))
    assert not got["unprivileged uid"][0] and not got["lockdown before threads"][0]
    held = facts(status={**facts()["status"], "CapPrm": "0000000000200000"})
    assert not as_dict(build_layers(plan, LIMITS, held))["no capabilities"][0]


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
    assert not got["disk quota"][0]
    assert got["landlock"] == (False, "disabled by configuration")
    assert got["namespaces"][1].startswith("degraded (opted in)")
    assert "bwrap: not installed" in got["namespaces"][1]
    assert got["network isolation"][1].startswith("network allowed by configuration")


def test_layers_seccomp_failure_and_userns() -> None:
    f = facts(userns=True, uid=0, outer_uid=1000, status={"Seccomp": "0"}, seccomp_error="boom")
    f.update(landlock=0, landlock_error="ENOSYS")
    got = as_dict(build_layers(make_plan("unshare", tmpfs=True), LIMITS, f))
    assert got["seccomp"] == (False, "not installed: boom")
    assert got["landlock"] == (False, "not available: ENOSYS")
    assert "uid 1000 on the host" in got["unprivileged uid"][1]
    assert "the host user's" in got["unprivileged uid"][1]


def test_describe_rlimits() -> None:
    text = describe_rlimits({"AS": [1 << 30, 1 << 30], "CPU": [-1, -1], "NOFILE": "bad"})
    assert "address space 1024 MB" in text and "CPU unlimited" in text
    assert "open files unlimited" in text
