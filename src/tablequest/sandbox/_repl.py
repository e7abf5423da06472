"""The REPL step that runs inside the sandbox child: one cell in, one JSON-able reply out.

Runs inside the child (loaded as a plain module; it imports nothing from `tablequest`).
Behaves like LangChain's `python_repl_ast`: every statement but the last is executed, the last
one is evaluated when it is an expression and its value is returned as text. Choices:
- values are previews, not objects: DataFrames/Series through pandas' own repr with at most
  `max_rows` rows and `max_cols` columns (dimensions shown when truncated), everything else
  through `repr`, all capped at `max_chars`;
- stdout and stderr (print, warnings) share one capped buffer;
- errors are `"<ExceptionType>: <message>"`, with ` (line N)` when the cell has several lines;
  no traceback, so no sandbox-internal path reaches the LLM;
- matplotlib figures left open after the cell are rendered as PNG, then all are closed.
"""

from __future__ import annotations

import ast
import base64
import io
import sys
import types
from typing import Any

CELL = "<cell>"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class CappedWriter(io.TextIOBase):
    """A text sink that keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def getvalue(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n... [output truncated: {self.dropped} more characters]"
        return text


#: the namespace name of the lineage builtins (`_lineage_setup.Builtins`), when installed
LINEAGE = "__tq__"


class _Builtins(ast.NodeTransformer):
    """Calls of `names` by name become ``__tq__.tq_builtin_<name>(…)`` (lineage-keeping)."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.names:
            target = ast.Name(id=LINEAGE, ctx=ast.Load())
            func = ast.Attribute(value=target, attr="tq_builtin_" + node.func.id, ctx=ast.Load())
            node.func = ast.copy_location(func, node.func)
            ast.fix_missing_locations(node)
        return node


def _bound_names(tree: ast.AST) -> set[str]:
    """Names the cell binds itself (assignments, defs, imports): never rewritten."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def compile_cell(
    code: str, namespace: dict[str, Any] | None = None
) -> tuple[types.CodeType | None, types.CodeType | None]:
    """Compile `code` into (statements, last expression); either part may be None. With the
    lineage builtins in `namespace`, calls of the builtins they replace go through them
    (unless the cell or an earlier one bound that name)."""
    tree = ast.parse(code, filename=CELL, mode="exec")
    shim = (namespace or {}).get(LINEAGE)
    if shim is not None:
        taken = _bound_names(tree) | set(namespace or {})
        names = frozenset(n for n in getattr(shim, "NAMES", ()) if n not in taken)
        tree = _Builtins(names).visit(tree)
    last: ast.Expression | None = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(body=tree.body[-1].value)
        del tree.body[-1]
    body = compile(tree, CELL, "exec") if tree.body else None
    tail = compile(last, CELL, "eval") if last is not None else None
    return body, tail


def cap(text: str, limit: int) -> str:
    """Cut `text` to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [truncated: {len(text) - limit} more characters]"


def format_error(exc: BaseException, code: str, *, limit: int = 2000) -> str:
    """`"KeyError: 'price'"`, plus ` (line N)` for multi-line cells when the line is known."""
    try:
        message = str(exc)
    except Exception:  # a user-defined __str__ that fails
        message = "<unprintable message>"
    kind = type(exc).__name__
    line: int | None = None
    if isinstance(exc, SyntaxError):
        line = exc.lineno
        message = exc.msg or message
    else:
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == CELL:
                line = tb.tb_lineno
            tb = tb.tb_next
    text = f"{kind}: {message}" if message else kind
    if line is not None and (code.count("\n") > 0 or isinstance(exc, SyntaxError)):
        text += f" (line {line})"
    return cap(text, limit)


def preview(value: object, *, max_rows: int = 20, max_cols: int = 20, max_chars: int) -> str:
    """A compact text preview of a value (pandas objects bounded in rows and columns)."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(value, pd.DataFrame | pd.Series | pd.Index):
        with pd.option_context(
            "display.max_rows",
            max_rows,
            "display.min_rows",
            max_rows,
            "display.max_columns",
            max_cols,
            "display.width",
            160,
            "display.max_colwidth",
            60,
        ):
            text = repr(value)
    else:
        text = repr(value)
    return cap(text, max_chars)


def grab_figures(
    *, max_figures: int, max_bytes: int, max_side: int = 4096
) -> tuple[list[str], list[str]]:
    """Render open matplotlib figures as base64 PNG and close them all; return (pngs, notes).

    Figures wider or taller than `max_side` pixels are dropped before rendering (the host
    would refuse them, and rendering them costs memory).
    """
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return [], []
    pngs: list[str] = []
    notes: list[str] = []
    try:
        for num in plt.get_fignums():
            if len(pngs) >= max_figures:
                notes.append(f"[figures beyond {max_figures} were dropped]")
                break
            fig = plt.figure(num)
            width, height = (int(x) for x in fig.get_size_inches() * 100)
            if not (0 < width <= max_side and 0 < height <= max_side):
                notes.append(f"[figure {num} dropped: {width}x{height} pixels > {max_side}]")
                continue
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=100)
            data = buf.getvalue()
            if len(data) > max_bytes:
                notes.append(f"[figure {num} dropped: {len(data)} bytes > {max_bytes}]")
                continue
            pngs.append(base64.b64encode(data).decode("ascii"))
    finally:
        plt.close("all")
    return pngs, notes


def run_cell(
    code: str,
    namespace: dict[str, Any],
    *,
    max_output: int,
    max_value: int,
    max_figures: int = 8,
    max_figure_bytes: int = 2_000_000,
    max_figure_side: int = 4096,
) -> dict[str, Any]:
    """Run one cell in `namespace`; return the reply fields (ok, stdout, value, error, figures)."""
    out = CappedWriter(max_output)
    value: str | None = None
    error: str | None = None
    result: Any = None
    shim = namespace.get(LINEAGE)
    old = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = out
    if shim is not None:
        shim.start()
    try:
        body, tail = compile_cell(code, namespace)
        if body is not None:
            exec(body, namespace)
        if tail is not None:
            result = eval(tail, namespace)
            if result is not None:
                value = preview(result, max_chars=max_value)
    except BaseException as exc:  # the cell's own failure, reported to the caller
        if isinstance(exc, SystemExit | KeyboardInterrupt | GeneratorExit):
            error = f"{type(exc).__name__}: the cell tried to exit"
        else:
            error = format_error(exc, code)
    finally:
        sys.stdout, sys.stderr = old
    lineage = shim.finish(result if error is None else None) if shim is not None else None
    try:
        figures, notes = grab_figures(
            max_figures=max_figures, max_bytes=max_figure_bytes, max_side=max_figure_side
        )
    except Exception as exc:
        figures, notes = [], [f"[figures could not be rendered: {format_error(exc, code)}]"]
    stdout = out.getvalue()
    if notes:
        sep = "\n" if stdout and not stdout.endswith("\n") else ""
        stdout = stdout + sep + "\n".join(notes)
    return {
        "ok": error is None,
        "stdout": stdout,
        "value": value,
        "error": error,
        "figures": figures,
        **({"lineage": lineage} if lineage is not None else {}),
    }
