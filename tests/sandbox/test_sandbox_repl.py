"""In-process tests of the child-side REPL step and wire helpers (honest code only)."""

from __future__ import annotations

import base64
import json
import os
import struct
from typing import Any

import matplotlib
import pandas as pd
import pytest

from tablequest.sandbox import _child, _repl

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def run(code: str, ns: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    namespace = ns if ns is not None else {"pd": pd}
    kw.setdefault("max_output", 10_000)
    kw.setdefault("max_value", 10_000)
    return _repl.run_cell(code, namespace, **kw)


def test_compile_cell_splits_the_last_expression() -> None:
    body, tail = _repl.compile_cell("x = 1\nx + 1")
    assert body is not None and tail is not None
    ns: dict[str, Any] = {}
    exec(body, ns)
    assert eval(tail, ns) == 2
    assert _repl.compile_cell("") == (None, None)
    body, tail = _repl.compile_cell("x = 1")
    assert body is not None and tail is None
    body, tail = _repl.compile_cell("1 + 1")
    assert body is None and tail is not None


def test_value_stdout_and_state() -> None:
    ns: dict[str, Any] = {"pd": pd}
    first = run("a = 20\nprint('hello')\na + 1", ns)
    assert first == {"ok": True, "stdout": "hello\n", "value": "21", "error": None, "figures": []}
    assert run("a * 2", ns)["value"] == "40"
    assert run("b = a", ns)["value"] is None
    assert run("None", ns)["value"] is None


def test_errors_are_type_and_message() -> None:
    ns: dict[str, Any] = {"pd": pd, "df": pd.DataFrame({"amount": [1]})}
    assert run("df['price']", ns)["error"] == "KeyError: 'price'"
    multi = run("x = 1\ny = df['price']\n", ns)
    assert multi["ok"] is False and multi["error"] == "KeyError: 'price' (line 2)"
    syntax = run("x = (1,", ns)
    assert syntax["error"].startswith("SyntaxError: ") and "(line 1)" in syntax["error"]
    assert run("raise SystemExit(3)", ns)["error"] == "SystemExit: the cell tried to exit"
    assert run("raise ValueError()", ns)["error"] == "ValueError"


def test_error_with_unprintable_message() -> None:
    code = "class E(Exception):\n    def __str__(self):\n        raise RuntimeError\nraise E()"
    assert run(code)["error"] == "E: <unprintable message> (line 4)"


def test_dataframe_preview_is_bounded() -> None:
    ns = {"pd": pd, "df": pd.DataFrame({f"c{i}": range(500) for i in range(40)})}
    value = run("df", ns)["value"]
    assert "[500 rows x 40 columns]" in value
    assert len(value.splitlines()) < 40
    assert run("df['c1']", ns)["value"].endswith("Name: c1, Length: 500, dtype: int64")


def test_output_caps() -> None:
    out = run("print('x' * 5000)\n'y' * 5000", max_output=100, max_value=50)
    assert out["stdout"].startswith("x" * 100)
    assert "output truncated: 4901 more characters" in out["stdout"]
    assert out["value"].startswith("'" + "y" * 49)
    assert "truncated" in out["value"]


def test_stderr_shares_the_stdout_buffer() -> None:
    out = run("import sys\nprint('a')\nprint('b', file=sys.stderr)\n1")
    assert out["stdout"] == "a\nb\n" and out["value"] == "1"


def test_capped_writer() -> None:
    w = _repl.CappedWriter(5)
    assert w.writable()
    w.write("abc")
    w.write("defgh")
    assert w.getvalue() == "abcde\n... [output truncated: 3 more characters]"
    with pytest.raises(TypeError, match="must be str"):
        w.write(b"x")  # type: ignore[arg-type]


def test_figures_are_png_and_closed() -> None:
    out = run("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.figure()\n3")
    assert out["value"] == "3" and len(out["figures"]) == 2
    assert base64.b64decode(out["figures"][0]).startswith(_repl.PNG_MAGIC)
    assert plt.get_fignums() == []


def test_figure_limits() -> None:
    for _ in range(3):
        plt.figure()
    pngs, notes = _repl.grab_figures(max_figures=2, max_bytes=10_000_000)
    assert len(pngs) == 2 and "beyond 2" in notes[0]
    plt.figure()
    pngs, notes = _repl.grab_figures(max_figures=2, max_bytes=10)
    assert pngs == [] and "dropped" in notes[0]
    assert plt.get_fignums() == []


def test_oversized_figures_are_dropped_before_rendering() -> None:
    plt.figure(figsize=(50, 2))
    plt.figure(figsize=(4, 3))
    pngs, notes = _repl.grab_figures(max_figures=4, max_bytes=10_000_000, max_side=4096)
    assert len(pngs) == 1 and "5000x200 pixels > 4096" in notes[0]
    assert plt.get_fignums() == []


def test_figure_notes_reach_stdout() -> None:
    out = run("import matplotlib.pyplot as plt\nplt.figure()\nprint('p')", max_figure_bytes=10)
    assert out["stdout"].startswith("p\n[figure")


def test_failing_figure_rendering_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(**kw: Any) -> Any:
        raise RuntimeError("no renderer")

    monkeypatch.setattr(_repl, "grab_figures", boom)
    out = run("1")
    assert out["ok"] and "figures could not be rendered: RuntimeError: no renderer" in out["stdout"]


def test_cap() -> None:
    assert _repl.cap("abc", 5) == "abc"
    assert _repl.cap("abcdef", 2) == "ab... [truncated: 4 more characters]"


def test_child_wire_helpers() -> None:
    r, w = os.pipe()
    try:
        _child.send(w, {"op": "ready", "n": 1})
        assert json.loads(_child.recv(r)) == {"op": "ready", "n": 1}
        os.write(w, struct.pack(">I", 10) + b"abc")
        os.close(w)
        with pytest.raises(EOFError):
            _child.recv(r)
    finally:
        os.close(r)


def test_child_fact_parsers() -> None:
    assert _child.outer_uid(0, "         0      65534          1\n") == 65534
    assert _child.outer_uid(5, "0 1000 10\n") == 1005
    assert _child.outer_uid(7, "0 0 1\n") is None
    fields = _child.status_fields("Name:\tpython\nSeccomp:\t2\nCapEff:\t0000000000000000\n")
    assert fields["Seccomp"] == "2" and fields["CapEff"] == "0000000000000000"
    assert _child._read("/nonexistent/file") == ""
    assert "pd" in _child.PRELOADED and "plt" in _child.PRELOADED


def test_paths_through_root_handles() -> None:
    from tablequest.sandbox import _bootstrap

    handles = {"/root/.pyenv/v": 5, "/root/.pyenv/v/lib/site": 6}
    through = _bootstrap._through
    assert through("/root/.pyenv/v/lib/os.py", handles) == "/proc/self/fd/5/lib/os.py"
    assert through("/root/.pyenv/v/lib/site/pd", handles) == "/proc/self/fd/6/pd"  # deepest
    assert through("/root/.pyenv/v", handles) == "/proc/self/fd/5"
    assert through("/root/.pyenv/vx/os.py", handles) == "/root/.pyenv/vx/os.py"  # not inside
    assert through("/usr/lib/python3", {}) == "/usr/lib/python3"
