"""Sessions end to end: honest table code works, state persists, errors read well, API edges."""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from tablequest.sandbox import ExecResult, Sandbox, SandboxError, SandboxUnavailable, Session

if TYPE_CHECKING:
    from conftest import Host


@pytest.fixture(scope="module")
def session(sandbox: Sandbox, frames: dict[str, pd.DataFrame]) -> Iterator[Session]:
    with sandbox.session(frames) as s:
        yield s


def value(s: Session, code: str) -> str:
    result = s.run(code)
    assert result.ok, result.error
    assert result.value is not None
    return result.value


def test_groupby(session: Session) -> None:
    out = value(session, "sales.groupby('region')['amount'].sum().round(1).to_dict()")
    assert out == "{'east': 40.0, 'north': 279.5, 'south': 100.0}"


def test_pivot_table(session: Session) -> None:
    code = "p = sales.pivot_table(index='region', columns='customer', values='amount', "
    code += "aggfunc='sum', fill_value=0)\np.loc['north', 'c1']"
    assert value(session, code) == "np.float64(219.5)"


def test_merge_of_two_frames(session: Session) -> None:
    code = "m = sales.merge(customers, on='customer')\n"
    code += "m.groupby('segment')['amount'].sum().to_dict()"
    assert value(session, code) == "{'b2b': 100.0, 'retail': 319.5}"


def test_regex_extract(session: Session) -> None:
    code = "sales['sku'].str.extract(r'([A-Z]+)-(\\d+)')[1].astype(int).max()"
    assert value(session, code) == "np.int64(999)"


def test_datetime_parsing(session: Session) -> None:
    code = "d = pd.to_datetime(sales['date'])\nd.dt.month.value_counts().sort_index().to_dict()"
    assert value(session, code) == "{1: 1, 2: 2, 3: 3}"
    assert value(session, "datetime.date(2024, 3, 1).isoformat()") == "'2024-03-01'"


def test_scipy_stats(session: Session, frames: dict[str, pd.DataFrame]) -> None:
    import scipy.stats

    expected = scipy.stats.pearsonr(frames["sales"]["order"], frames["sales"]["amount"])
    code = "r = scipy.stats.pearsonr(sales['order'], sales['amount'])\nround(float(r.statistic), 6)"
    assert value(session, code) == str(round(float(expected.statistic), 6))


def test_plotting_returns_png(session: Session) -> None:
    result = session.run("sales.plot.bar(x='order', y='amount')\nplt.title('sales')\nNone")
    assert result.ok, result.error
    assert len(result.figures) == 1 and result.figures[0].startswith(b"\x89PNG\r\n\x1a\n")
    assert session.run("1").figures == []  # figures are closed after each run


def test_state_persists_and_last_expression(session: Session) -> None:
    first = session.run("total = sales['amount'].sum()\nprint('computed')")
    assert first.ok and first.stdout == "computed\n" and first.value is None
    assert value(session, "total") == "np.float64(419.5)"
    assert value(session, "total * 2") == "np.float64(839.0)"


def test_preloaded_modules(session: Session) -> None:
    code = "[m.__name__ for m in (pd, np, scipy, plt, re, math, datetime, statistics, json, "
    code += "collections, matplotlib)]"
    assert "'matplotlib.pyplot'" in value(session, code)
    assert value(session, "statistics.median([1, 5, 3]) + math.floor(2.5)") == "5"


def test_dataframe_values_are_previews(session: Session) -> None:
    out = value(session, "pd.DataFrame({'x': range(1000), 'y': range(1000)})")
    assert "[1000 rows x 2 columns]" in out and len(out.splitlines()) < 30


def test_error_messages(session: Session) -> None:
    assert session.run("kept = 7").ok  # its own state (not another test's), checked below
    result = session.run("sales['price']")
    assert not result.ok and result.error == "KeyError: 'price'"
    assert result.stdout == "" and result.value is None
    assert session.run("x = 1\nundefined_name + 1").error == (
        "NameError: name 'undefined_name' is not defined (line 2)"
    )
    syntax = session.run("sales.groupby('region'")
    assert syntax.error is not None and syntax.error.startswith("SyntaxError: ")
    assert "(line 1)" in syntax.error
    assert session.run("1 / 0").error == "ZeroDivisionError: division by zero"
    assert value(session, "kept") == "7"  # state survived the errors


def test_warnings_reach_stdout(session: Session) -> None:
    result = session.run("import warnings\nwarnings.warn('check the units')\n1")
    assert result.ok and "UserWarning: check the units" in result.stdout


def test_files_inside_the_session_work(session: Session) -> None:
    code = "sales.to_csv('copy.csv', index=False)\nimport os\n"
    code += (
        "(len(pd.read_csv('copy.csv')), sorted(f for f in os.listdir('.') if f.endswith('.csv')))"
    )
    assert value(session, code) == "(6, ['copy.csv'])"


def test_host_frames_are_not_shared(session: Session, frames: dict[str, pd.DataFrame]) -> None:
    before = frames["sales"].copy()
    assert session.run("sales.loc[0, 'amount'] = -1\nsales['amount'] = 0").ok
    pd.testing.assert_frame_equal(frames["sales"], before)
    assert value(session, "int(sales['amount'].sum())") == "0"


def test_seconds_and_result_type(session: Session) -> None:
    result = session.run("1")
    assert isinstance(result, ExecResult) and 0 < result.seconds < 5


def test_sessions_are_isolated_from_each_other(sandbox: Sandbox) -> None:
    duplicated = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with sandbox.session() as a, sandbox.session({"t": duplicated}) as b:
        assert a.run("shared = 41").ok
        assert b.run("shared").error == "NameError: name 'shared' is not defined"
        assert a.run("shared + 1").value == "42"
        assert a.notes == [] and "duplicate" in b.notes[0]
        assert b.run("list(t.columns)").value == "['a', 'a.1']"


def test_restart_after_a_fatal_error(sandbox: Sandbox, frames: dict[str, pd.DataFrame]) -> None:
    with sandbox.session(frames) as s:
        assert s.run("kept = 1").ok
        dead = s.run("import os\nos._exit(3)")
        assert not dead.ok and dead.error is not None
        assert "exited with status 3" in dead.error and "restarted" in dead.error
        assert s.restarts == 0
        again = s.run("len(sales)")
        assert again.value == "6" and s.restarts == 1
        assert "NameError" in str(s.run("kept").error)


def test_layers_and_describe(sandbox: Sandbox, session: Session, host: Host) -> None:
    layers = {layer.name: layer for layer in session.layers}
    for name in ("separate process", "resource limits", "audit hook", "wall-clock kill"):
        assert layers[name].active, layers[name]
    assert host.secret not in layers["separate process"].detail
    assert layers["namespaces"].active == (sandbox.mode != "off")
    assert layers["file-system view"].active == (sandbox.mode == "bwrap")
    text = sandbox.describe()
    assert text.startswith(f"sandbox mode: {sandbox.mode}") and "[x] audit hook" in text
    assert session.run("1").mode == sandbox.mode == session.mode
    assert len(text.splitlines()) == 1 + len(sandbox.plan.notes) + len(layers)


def test_closed_objects(sandbox: Sandbox) -> None:
    s = sandbox.session()
    s.close()
    s.close()
    with pytest.raises(SandboxError, match="session is closed"):
        s.run("1")
    with Sandbox(prewarm=False) as sb:
        pass
    with pytest.raises(SandboxError, match="Sandbox is closed"):
        sb.session()


def test_threads_do_not_eat_the_memory_budget(session: Session) -> None:
    """glibc keeps a 64 MB arena per thread; 60 threads once left no room for 100 MB."""
    code = "import threading\nstop = threading.Event()\nts = []\nfor _ in range(60):\n"
    code += "    ts.append(threading.Thread(target=lambda: [bytearray(4096), stop.wait()]))\n"
    code += "    ts[-1].start()\nstop.set()\nfor t in ts: t.join()"
    # joined: their arenas stay (glibc keeps them), their stacks do not (a thread still
    # exiting when the child is stopped between runs would hold its 8 MB stack)
    assert session.run(code).ok
    result = session.run("len(bytearray(300 * 2 ** 20))")
    assert result.ok and result.value == str(300 * 2**20), result


def test_argument_errors(session: Session) -> None:
    with pytest.raises(TypeError, match="code must be str"):
        session.run(b"1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        session.run("1", timeout=0)
    with pytest.raises(ValueError, match="memory_mb must be a positive number"):
        Sandbox(memory_mb=0)
    with pytest.raises(ValueError, match="cpu_seconds"):
        Sandbox(cpu_seconds=True)
    with pytest.raises(ValueError, match="use_namespaces must be"):
        Sandbox(use_namespaces="docker")  # type: ignore[arg-type]


def test_unusable_interpreters(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="not an executable file"):
        Sandbox(python=str(tmp_path / "no-such-python"))
    # a real Python without pandas: starts, then fails while importing
    bare = tmp_path / "bare-python"
    bare.write_text(f'#!/bin/sh\nexec {os.path.realpath(sys.base_prefix)}/bin/python3 "$@"\n')
    bare.chmod(bare.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    tmp_path.chmod(0o755)
    with (
        Sandbox(python=str(bare), prewarm=False) as sb,
        pytest.raises(SandboxUnavailable, match=r"(?s)failed to start.*No module named"),
    ):
        sb.session()


def test_startup_timeout() -> None:
    with (
        Sandbox(prewarm=False, startup_timeout=0.01) as sb,
        pytest.raises(SandboxUnavailable, match=r"did not start within 0\.01 s"),
    ):
        sb.session()


def test_warm_then_fast_session(sandbox: Sandbox) -> None:
    sandbox.warm()
    with sandbox.session() as s:
        assert s.run("json.dumps([1])").value == repr(json.dumps([1]))


def test_a_run_is_a_wait_for_the_host(session: Session) -> None:
    """`tablequest serve` lets other asks run while one waits on its sandbox (tablequest.waits)."""
    from contextlib import contextmanager

    from tablequest.waits import on_wait

    waits: list[str] = []

    @contextmanager
    def hook() -> Iterator[None]:
        waits.append("start")
        yield
        waits.append("end")

    with on_wait(hook):
        assert session.run("1 + 1").value == "2"
    assert waits == ["start", "end"]
    assert session.run("2").value == "2" and waits == ["start", "end"]  # no hook outside


def _kill_idle_child(session: Session) -> None:
    child = session._child
    assert child is not None
    os.killpg(child.proc.pid, signal.SIGKILL)  # as the kernel's OOM killer would
    child.proc.wait(timeout=60)


def test_a_child_killed_before_its_first_cell_is_replaced(
    sandbox: Sandbox, frames: dict[str, pd.DataFrame]
) -> None:
    """Nothing ran in it and a new child's state is the same: the cell runs in a new one."""
    with sandbox.session(frames) as s:
        _kill_idle_child(s)
        result = s.run("len(sales)")
        assert result.ok and result.value == "6", result.error
        assert s.restarts == 0


def test_a_used_child_killed_while_idle_is_a_restart(
    sandbox: Sandbox, frames: dict[str, pd.DataFrame]
) -> None:
    """Its variables are gone: the cell is not silently re-run without them."""
    with sandbox.session(frames) as s:
        assert s.run("x = 41").ok
        _kill_idle_child(s)
        result = s.run("x + 1")
        assert not result.ok and "SIGKILL" in str(result.error)
        assert "restarted" in str(result.error)
        assert s.run("len(sales)").value == "6" and s.restarts == 1
