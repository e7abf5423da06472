"""Launch plans: which modes are allowed (strict by default), command lines, uids."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablequest import configfile
from tablequest.sandbox import InvalidArgument, Sandbox, SandboxUnavailable, _launch, _policy, _uids

# --------------------------------------------------------------------------- interpreter


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


# --------------------------------------------------------------------------- command lines


def make_plan(mode: Any, **kw: Any) -> _launch.Plan:
    interp = _launch.Interpreter("/opt/py/bin/python", ("/opt/py", "/opt/py/bin", "/usr/lib/x"))
    return _launch.Plan(mode, interp, network=kw.pop("network", False), **kw)


def test_bwrap_namespace_flags() -> None:
    root = _launch.bwrap_namespaces(False, 0)
    assert "--unshare-net" in root and "--cap-drop" in root and "--unshare-user" not in root
    assert "--new-session" not in root  # the host stops and kills bwrap's process group
    assert "--unshare-net" not in _launch.bwrap_namespaces(True, 0)
    user = _launch.bwrap_namespaces(False, 1000)
    assert "--unshare-all" in user and "--disable-userns" in user and "--share-net" not in user
    assert "--share-net" in _launch.bwrap_namespaces(True, 1000)


def test_bwrap_argv_builds_a_minimal_view() -> None:
    plan = make_plan("bwrap", drop_uid=True, tmpfs=True)
    text = " ".join(_launch.bwrap_argv(plan, session="/tmp/tq/work", disk_bytes=1 << 20))
    assert "--ro-bind /usr /usr" in text and "--ro-bind /opt/py /opt/py" in text
    assert "--perms 0755 --dir /opt" in text and "--perms 0755 --dir /tmp/tq" in text
    assert "--dir /tmp/tq/work --chdir /tmp/tq/work" in text  # the child mounts the tmpfs
    for cap in _launch.BWRAP_CAPS:
        assert f"--cap-add {cap}" in text
    assert "/usr/lib/x" not in text.split("--ro-bind /usr /usr")[1]  # covered by /usr
    user = " ".join(_launch.bwrap_argv(make_plan("bwrap"), session="/t/w", disk_bytes=1 << 20))
    assert "--size 1048576 --tmpfs /t/w --chdir /t/w" in user and "--cap-add" not in user


def test_launcher_argv_per_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.shutil, "which", lambda name: f"/usr/bin/{name}")
    root = _launch.launcher_argv(make_plan("unshare", drop_uid=True), session="/s", disk_bytes=1)
    assert root[:4] == ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--"]
    assert root[4] == "/usr/bin/unshare" and "--user" not in root
    assert "--net" in root and "--kill-child" in root and root[-1] == "--"
    user = _launch.launcher_argv(make_plan("unshare"), session="/s", disk_bytes=1)
    assert "--user" in user and "--map-root-user" in user
    shared = _launch.launcher_argv(make_plan("unshare", network=True), session="/s", disk_bytes=1)
    assert "--net" not in shared
    assert _launch.launcher_argv(make_plan("off", drop_uid=True), session="/s", disk_bytes=1) == []
    bw = _launch.launcher_argv(make_plan("bwrap"), session="/s/w", disk_bytes=1)
    assert bw[0] == "/usr/bin/bwrap"


def test_child_env_is_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    env = _launch.child_env("/s")
    assert env["HOME"] == "/s" and env["MPLBACKEND"] == "Agg"
    assert env["JE_ARROW_MALLOC_CONF"] == "background_thread:false"
    assert env["MALLOC_ARENA_MAX"] == "2"
    assert "OPENAI_API_KEY" not in env and "sk-secret" not in json.dumps(env)


# --------------------------------------------------------------------------- plans


@pytest.fixture()
def fresh_probes() -> Iterator[None]:
    _launch._probe.cache_clear()
    yield
    _launch._probe.cache_clear()


@pytest.fixture()
def no_tools(monkeypatch: pytest.MonkeyPatch, fresh_probes: None) -> None:
    monkeypatch.setattr(_launch.shutil, "which", lambda name: None)


@pytest.mark.usefixtures("no_tools")
def test_without_bubblewrap_the_default_refuses_in_one_line() -> None:
    with pytest.raises(SandboxUnavailable) as caught:
        _launch.plan("auto", python=None, network=False)
    message = str(caught.value)
    assert "\n" not in message and "apt-get install bubblewrap" in message
    assert "TABLEQUEST_SANDBOX=degraded" in message and "bwrap is not installed" in message


@pytest.mark.usefixtures("fresh_probes")
@pytest.mark.parametrize("mode", ["unshare", "off"])
def test_degraded_modes_need_the_opt_in(mode: Any) -> None:
    with pytest.raises(SandboxUnavailable, match="refusing to run generated code without"):
        _launch.plan(mode, python=None, network=False)


@pytest.mark.usefixtures("no_tools")
def test_degraded_opt_in_falls_back_and_says_so() -> None:
    p = _launch.plan("auto", python=None, network=False, degraded=True)
    assert p.mode == "off" and p.degraded
    assert any("bwrap is not installed" in n for n in p.notes)
    assert any("unshare (util-linux) is not installed" in n for n in p.notes)
    with pytest.raises(SandboxUnavailable, match="'bwrap' does not work here"):
        _launch.plan("bwrap", python=None, network=False, degraded=True)
    with pytest.raises(SandboxUnavailable, match="'unshare' does not work here"):
        _launch.plan("unshare", python=None, network=False, degraded=True)
    assert _launch.plan("off", python=None, network=False, degraded=True).mode == "off"


@pytest.mark.usefixtures("fresh_probes")
def test_plan_reports_failing_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.shutil, "which", lambda name: "/bin/false")
    with pytest.raises(SandboxUnavailable, match=r"exit 1"):
        _launch.plan("auto", python=None, network=True)
    p = _launch.plan("auto", python=None, network=True, degraded=True)
    assert p.mode == "off" and any("exit 1" in n for n in p.notes)


@pytest.mark.usefixtures("fresh_probes")
def test_plan_for_a_root_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.os, "geteuid", lambda: 0)
    p = _launch.plan("off", python=None, network=False, degraded=True)
    assert p.drop_uid and p.thread_cap and not p.tmpfs
    # every root the unused uid cannot reach is opened by the child before the drop
    for root in p.interpreter.roots:
        assert (root in p.remap) != _launch.others_can_read([root], ancestors=True)


@pytest.mark.usefixtures("fresh_probes")
def test_plan_for_a_non_root_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.os, "geteuid", lambda: 1000)
    p = _launch.plan("off", python=None, network=False, degraded=True)
    assert not p.drop_uid and not p.remap and not p.thread_cap
    assert any("uid 1000" in n for n in p.notes)


@pytest.mark.usefixtures("fresh_probes")
def test_root_host_needs_a_world_readable_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_launch.os, "geteuid", lambda: 0)
    monkeypatch.setattr(_launch, "others_can_read", lambda paths, ancestors: False)
    with pytest.raises(SandboxUnavailable, match="world-readable"):
        _launch.plan("off", python=None, network=False, degraded=True)


def test_probe_runner_reports_errors() -> None:
    assert _launch._run(["/bin/true"]) is None
    assert _launch._run(["/nonexistent/tool"]) is not None
    assert _launch._run(["/bin/sh", "-c", "echo boom >&2; exit 3"]) == "exit 3: boom"


# --------------------------------------------------------------------------- opt-in policy


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def test_isolation_precedence(tmp_path: Path) -> None:
    (tmp_path / "tablequest.toml").write_text('[sandbox]\nisolation = "degraded"\n')
    configfile.trust(tmp_path / "tablequest.toml")
    env = {"TABLEQUEST_SANDBOX": "strict"}
    assert _policy.resolve("degraded", env=env, cwd=tmp_path) == ("degraded", "argument")
    assert _policy.resolve(None, env=env, cwd=tmp_path) == ("strict", "TABLEQUEST_SANDBOX")
    found = _policy.resolve(None, env={}, cwd=tmp_path)
    assert found == ("degraded", str(tmp_path / "tablequest.toml"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _policy.resolve(None, env={}, cwd=empty)[0] == "strict"


def test_untrusted_file_cannot_weaken_isolation(tmp_path: Path) -> None:
    path = tmp_path / "tablequest.toml"
    path.write_text('[sandbox]\nisolation = "degraded"\n')
    assert _policy.resolve(None, env={}, cwd=tmp_path) == ("strict", "default")
    named = {"TABLEQUEST_CONFIG": str(path)}
    assert _policy.resolve(None, env=named, cwd=tmp_path / "x") == ("degraded", str(path))
    configfile.trust(path)
    assert _policy.resolve(None, env={}, cwd=tmp_path) == ("degraded", str(path))
    path.write_text('[sandbox]\nisolation = "degraded"  # edited\n')
    assert _policy.resolve(None, env={}, cwd=tmp_path) == ("strict", "default")
    path.write_text('[sandbox]\nisolation = "strict"\n')  # asking for the default is fine
    configfile.untrust(path)
    assert _policy.resolve(None, env={}, cwd=tmp_path) == ("strict", str(path))


def test_isolation_errors_name_the_source(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="TABLEQUEST_SANDBOX must be"):
        _policy.resolve(None, env={"TABLEQUEST_SANDBOX": "yes"}, cwd=tmp_path)
    (tmp_path / "tablequest.toml").write_text('[sandbox]\nisolation = "loose"\n')
    with pytest.raises(InvalidArgument, match=r"isolation under \[sandbox\] in .*toml"):
        _policy.resolve(None, env={}, cwd=tmp_path)
    (tmp_path / "tablequest.toml").write_text("[sandbox\n")
    with pytest.raises(InvalidArgument, match="cannot read"):
        _policy.resolve(None, env={}, cwd=tmp_path)
    with pytest.raises(ValueError, match="isolation must be"):
        Sandbox(isolation="lax", prewarm=False)  # type: ignore[arg-type]


def test_sandbox_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLEQUEST_SANDBOX", "degraded")
    with Sandbox(use_namespaces="off", prewarm=False) as sb:
        assert sb.mode == "off" and sb.isolation_source == "TABLEQUEST_SANDBOX"
        assert sb.plan.degraded and sb.plan.drop_uid == (os.geteuid() == 0)
    monkeypatch.setenv("TABLEQUEST_SANDBOX", "strict")
    with pytest.raises(SandboxUnavailable, match="refusing"):
        Sandbox(use_namespaces="off", prewarm=False)


# --------------------------------------------------------------------------- uids


def test_uid_band_prefers_the_reserved_range() -> None:
    identity = "0 0 4294967295\n"
    assert _uids.band(identity, identity) == (_uids.BAND_START, _uids.BAND_START + _uids.BAND_SIZE)
    rootless = "0 100000 65536\n"
    lo, hi = _uids.band(rootless, rootless)
    assert 32768 <= lo < hi <= 65534
    with pytest.raises(SandboxUnavailable, match="none to spare"):
        _uids.band("0 1000 1\n", "0 1000 1\n")
    with pytest.raises(SandboxUnavailable, match="no uid is mapped"):
        _uids.band("0 0 10\n", "100 100 10\n")


def test_delegated_ranges_are_avoided(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_uids, "_delegated", lambda: ((100_000, 165_536),))
    assert _uids._known(100_000) and _uids._known(165_535) and not _uids._known(165_536)


def test_unused_uids_are_fresh_and_unknown() -> None:
    import grp
    import pwd

    drawn = {_uids.unused_uid() for _ in range(20)}
    assert len(drawn) >= 19  # random over 2^24
    for uid in drawn:
        assert uid not in (0, 65534)
        with pytest.raises(KeyError):
            pwd.getpwuid(uid)
        with pytest.raises(KeyError):
            grp.getgrgid(uid)


def test_public_names() -> None:
    import tablequest.sandbox as sandbox

    assert sorted(sandbox.__all__) == [
        "ExecResult",
        "InvalidArgument",
        "Layer",
        "MemoryBudget",
        "Sandbox",
        "SandboxBusy",
        "SandboxError",
        "SandboxUnavailable",
        "Session",
    ]
    assert issubclass(sandbox.InvalidArgument, sandbox.SandboxError)
    assert issubclass(sandbox.InvalidArgument, ValueError)
    assert issubclass(sandbox.InvalidArgument, TypeError)


def test_a_sandbox_from_loaded_settings_keeps_their_isolation_and_source(
    tmp_path: Path,
) -> None:
    """What the methods and MCP's run_pandas build: the command's loaded `[sandbox]`, a
    `--config-file` included, not a fresh resolution from the working directory."""
    from tablequest.settings import Settings

    named = tmp_path / "server.toml"
    named.write_text('[sandbox]\nisolation = "degraded"\n')
    loaded = Settings.load(config_path=named, env={}, cwd=tmp_path / "elsewhere")
    box = Sandbox.from_settings(loaded)
    assert (box.isolation, box.isolation_source) == ("degraded", str(named))
    assert Sandbox.from_settings(Settings.load(env={}, cwd=tmp_path)).isolation == "strict"
