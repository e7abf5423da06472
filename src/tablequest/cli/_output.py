"""Printing shared by the commands: consoles, errors, the answer panel, hits and evidence.

Errors end a command with one line on stderr and exit status 2 (bad input) or 1 (a run that
could not complete); with ``--json`` the same error is also printed on stdout as
``{"error": {"code", "message"}}`` so scripts always get JSON. An exception that is not a
`TablequestError` is an internal error: one line saying so and naming the file that holds
its traceback, exit 1 and the code ``internal``. `report_error` prints an error the way
`fail_on` ends a command with it, without ending (the chat loop goes on after one).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from tablequest.cli._exit import FAILED, USAGE
from tablequest.cli._markup import plain_markup

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID
    from rich.table import Table as RichTable
    from rich.text import Text

    from tablequest.corpus import Corpus, Hit
    from tablequest.methods import Result

    console: Console
    err_console: Console

_CONSOLES = {"console": False, "err_console": True}
"""The rich consoles of the commands (name → on stderr), made on first use by
`__getattr__`, so that a command which prints nothing through rich (``--version``) does not
import it; set as module attributes once made (tests may replace them)."""


def __getattr__(name: str) -> Any:
    """`console` (stdout) and `err_console` (stderr), made on first use."""
    if name not in _CONSOLES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from rich.console import Console

    made = globals().setdefault(name, Console(stderr=_CONSOLES[name]))
    return made


def _stdout() -> Console:
    """`console` as this module holds it now (made on first use)."""
    found: Console = sys.modules[__name__].console
    return found


def _stderr() -> Console:
    """`err_console` as this module holds it now (made on first use)."""
    found: Console = sys.modules[__name__].err_console
    return found


def _loaded(module: str, name: str) -> type[BaseException] | None:
    """The exception class `name` of `module` when that module is imported, else None (no
    instance of it can exist then, so an error path need not import it)."""
    found = getattr(sys.modules.get(module), name, None)
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def stage_line(text: str) -> None:
    """One dim line on stderr as a long first-time stage starts (`announce_stage`)."""
    from rich.markup import escape

    _stderr().print(f"[dim]{escape(text)}[/dim]", soft_wrap=True, highlight=False)


@contextlib.contextmanager
def encoding_bar(label: str, enabled: bool) -> Iterator[None]:
    """A bar (count, texts/s, ETA) on stderr once an encoder inside the block reports progress
    (nothing when all vectors are cached), and a `stage_line` as each long first-time stage
    starts (a model distilled or exported, a big index built); neither when not `enabled`
    (``--json``) or stderr is not a terminal."""
    err = _stderr()
    if not enabled or not err.is_terminal:
        yield
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from tablequest.corpus import encoding_progress, with_rate

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[metric]}"), TimeRemainingColumn())  # fmt: skip
    bar = Progress(*columns, console=err, transient=True)
    tasks: list[TaskID] = []

    def update(done: int, total: int, metric: str) -> None:
        if not tasks:
            bar.start()
            tasks.append(bar.add_task(label, total=total, metric=metric))
        bar.update(tasks[0], completed=done, total=total, metric=metric)

    try:
        with encoding_progress(with_rate(update), stage=stage_line):
            yield
    finally:
        if tasks:
            bar.stop()


_COLOUR = {"answered": "green", "insufficient": "yellow", "failed": "red"}
_VERIFIED_COLOUR = {"verified": "green", "unverified": "yellow", "contradicted": "red"}
MAX_EVIDENCE_LINES = 10
"""Evidence cells listed one per line under the answer (a computed mean may have thousands)."""
_CERTAIN_STYLE = "bold black on yellow"
_UNCERTAIN_STYLE = "italic underline"
"""Evidence cells in the terminal table: certain ones (computed, cited, matched) highlighted,
ambiguous, untracked and matched ones only underlined (`tablequest.table.display.is_certain`)."""


def fail(
    message: str,
    *,
    json_out: bool = False,
    code: str | None = None,
    status: int = USAGE,
    extra: dict[str, Any] | None = None,
) -> NoReturn:
    """One ``error:`` line (and a JSON error on stdout with --json), then exit.

    `code` defaults to ``usage`` for exit 2 (bad input) and ``failed`` otherwise; `extra`
    adds fields next to ``error`` in the JSON (e.g. an ingest's report so far).
    """
    code = code or ("usage" if status == USAGE else "failed")
    _print_error(message, json_out=json_out, code=code, extra=extra)
    raise typer.Exit(status)


def _print_error(
    message: str, *, json_out: bool, code: str, extra: dict[str, Any] | None = None
) -> None:
    if json_out:
        payload = {"error": {"code": code, "message": message}, **(extra or {})}
        print(json.dumps(payload, ensure_ascii=False))
    from rich.markup import escape

    _stderr().print(f"[red]error:[/red] {escape(message)}", soft_wrap=True, highlight=False)


def fail_on(
    exc: BaseException, *, json_out: bool = False, extra: dict[str, Any] | None = None
) -> NoReturn:
    """`report_error`, then exit with the status it gives."""
    raise typer.Exit(report_error(exc, json_out=json_out, extra=extra))


def report_error(
    exc: BaseException, *, json_out: bool = False, extra: dict[str, Any] | None = None
) -> int:
    """Print `exc` as `fail` does, with the JSON code of its class, and return the exit status
    of its class (`tablequest.errors`: 2 ``usage`` for bad input, 1 ``failed`` for a run that
    could not complete, or the class's own); `fail_on` exits with it, the chat loop goes on.
    A store error in its chain (cause or context) gives them (2 for no store or not a DuckDB
    file; 1 for a store held by another process, a disk full, media). Any other exception is
    an internal error: ``internal error: Type: message`` naming the trace file when the run
    wrote one and the file that holds the traceback (`_save_traceback`; a user gets one line,
    a bug report the file), exit 1, JSON code ``internal``."""
    from tablequest.errors import INTERNAL, TablequestError, internal_message

    store_error = _loaded("tablequest.corpus.storage.storefile", "StoreError") or ()
    cause: BaseException | None = exc
    for _ in range(4):
        if cause is None or isinstance(cause, store_error):
            break
        cause = cause.__cause__ or cause.__context__
    named = cause if isinstance(cause, store_error) else exc
    if isinstance(named, TablequestError):
        _print_error(str(exc), json_out=json_out, code=named.code, extra=extra)
        return named.exit_code
    message = internal_message(exc)
    saved = _save_traceback(exc)
    if saved is not None:
        message += f"; details in {saved}"
    _print_error(message, json_out=json_out, code=INTERNAL)
    return FAILED


def _save_traceback(exc: BaseException) -> Path | None:
    """Write `exc`'s traceback beside the traces (``internal-<time>-<pid>.txt``); when that
    folder cannot be written, print it on stderr instead and return None."""
    import os
    import time
    import traceback

    from tablequest.trace.latest import default_trace_dir

    text = "".join(traceback.format_exception(exc))
    try:
        folder = default_trace_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"internal-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
        path.write_text(text, encoding="utf-8")
    except OSError:
        sys.stderr.write(text)
        return None
    return path


def print_json(payload: Any) -> None:
    print(json.dumps(payload, ensure_ascii=False, default=str))


def wide_console() -> Console:
    """The console on a terminal (its width); else one without a width limit, so piped
    output (`show ID | less`, a file) keeps every row on one line whatever COLUMNS says."""
    from rich.console import Console

    shown = _stdout()
    return shown if shown.is_terminal else Console(width=100_000)


def stdout_is_terminal() -> bool:
    """True when stdout is a terminal (binary exports are refused there)."""
    return sys.stdout.isatty()


BINARY_FORMATS = frozenset({"parquet", "xlsx"})


def emit_file(data: bytes, fmt: str, output: Path | None, *, json_out: bool = False) -> None:
    """An export's bytes: into `output` when given (a one-line note on stderr), else on
    stdout. A binary format (parquet, xlsx) on a terminal is refused (exit 2): it needs
    ``--output FILE`` or a pipe."""
    if output is not None:
        try:
            output.expanduser().write_bytes(data)
        except OSError as exc:
            fail(f"cannot write {str(output)!r}: {exc.strerror or exc}", json_out=json_out,
                 status=FAILED)  # fmt: skip
        _stderr().print(f"wrote {output} ({len(data):,} bytes, {fmt})",
                          markup=False, highlight=False, soft_wrap=True)  # fmt: skip
        return
    if fmt in BINARY_FORMATS:
        if stdout_is_terminal():
            fail(f"{fmt} is binary: name a file with --output FILE (or pipe the output)",
                 json_out=json_out)  # fmt: skip
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    text = data.decode("utf-8")
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()


def usage_line(usage: dict[str, Any]) -> str:
    return (
        f"usage: {usage['calls']} calls, {usage['prompt_tokens']}+{usage['completion_tokens']} "
        f"tokens, {usage['seconds']} s, {usage['cache_hits']} cache hits"
    )


def hit_json(store: Corpus, hit: Hit) -> dict[str, Any]:
    """A ranked table as ``search --json`` prints it."""
    from tablequest.corpus import search_hit

    src = store.source(hit.table_id)
    shown = src.path if src.sheet is None else f"{src.path}#{src.sheet}"
    return search_hit(hit, source=shown, format=src.format).as_json()


def show_hits(store: Corpus, question: str, hits: list[Hit]) -> None:
    """Ranked tables with their ids and previews, the question's words highlighted."""
    if not hits:
        _stdout().print("No table matches the question's words.")
        return
    for rank, hit in enumerate(hits, start=1):
        info = hit_json(store, hit)
        title = (
            f"#{rank}  {hit.table_id}  score {hit.score:.2f}  {info['source']}  ({info['format']})"
        )
        show_preview(title, terminal_preview(store, hit, question), question)


def terminal_preview(store: Corpus, hit: Hit, question: str) -> str:
    """A hit's preview as a terminal shows it: tables stored as HTML (HTML, xlsx) are
    previewed as Markdown (the same head and matched rows, no markup)."""
    from tablequest.corpus import preview_hit, question_patterns, text_format
    from tablequest.table import preview

    table = store.index_table(hit.table_id)
    fmt = text_format(table)
    if fmt != "html":
        return preview_hit(store, hit, question)
    return preview(table, question_patterns(question), fmt="markdown").text


def show_preview(title: str, text: str, question: str) -> None:
    """A heading line, never cut or wrapped (ids and paths stay whole and greppable at any
    terminal width), then the preview in a panel."""
    from rich.panel import Panel
    from rich.text import Text

    from tablequest.corpus import question_patterns

    console = _stdout()
    body = Text(text)
    for p in question_patterns(question):
        body.highlight_regex(f"(?i){p}", "bold magenta")
    console.print(title, highlight=False, soft_wrap=True, markup=False)
    console.print(Panel(body, expand=False))


def show_result(result: Result, question: str) -> None:
    """Answer, reason, what the method found, evidence, tables consulted, usage, trace."""
    from rich.markup import escape
    from rich.panel import Panel
    from rich.text import Text

    console = _stdout()
    data = result.to_json()
    details = result.typed_details
    colour = _COLOUR[result.status]
    label = data["method"] or "?"
    config = details.get("config")
    console.print(
        Panel(
            Text(result.answer or "(no answer)", style="bold"),
            title=f"answer · [{colour}]{result.status}[/{colour}] · {label}"
            + (f" · {config}" if config else ""),
            title_align="left",
            expand=False,
        )
    )
    if result.verified is not None:
        console.print(verified_line(result), highlight=False, soft_wrap=True)
    if data["reason"] and result.status != "answered":
        # one unwrapped line, so the URL and the cause stay whole (and greppable)
        console.print(f"  reason: {escape(data['reason'])}", highlight=False, soft_wrap=True)
    if details.get("encoder"):
        console.print(f"  encoder: {details['encoder']}", highlight=False)
    for candidate in details.get("candidates", []):
        source = result.sources.get(candidate["table_id"], candidate["table_id"])
        title = f"score {candidate['score']:.2f}  {source}  ({candidate['table_id']})"
        show_preview(title, plain_markup(candidate.get("preview", "")), question)
    for route in details.get("routes", []):
        source = result.sources.get(route["table_id"], route["table_id"])
        status = f" → {route['status']}" if route.get("status") else ""
        console.print(
            f"  route: {source} → [bold]{route['method']}[/bold] ({escape(route['reason'])})"
            f"{status}",
            highlight=False,
            soft_wrap=True,
        )
    retrieval = details.get("retrieval")
    if isinstance(retrieval, dict):
        console.print(retrieval_view(retrieval))
    for line in evidence_lines(result):
        console.print(line, highlight=False, soft_wrap=True)
    # a table is shown only for an answer: a failed or insufficient ask has no evidence
    if result.status == "answered" and result.final_table in result.tables:
        title, view = evidence_view(result)
        console.print(title, highlight=False, soft_wrap=True, markup=False)
        console.print(view)
    for i, t in enumerate(data["tables_consulted"], start=1):
        console.print(
            f"  consulted {i}: {escape(str(t['source']))}  [dim]({t['table_id']})[/dim]",
            soft_wrap=True,
        )
    console.print("  " + usage_line(data["usage"]))
    console.print(f"  trace: {data['trace']}", highlight=False, soft_wrap=True)


def verified_line(result: Result) -> Text:
    """``verified: WORD — why`` under the answer (the word as `Result.verified` says it)."""
    from rich.text import Text

    word = result.verified or ""
    line = Text("  verified: ")
    line.append(word, style=f"bold {_VERIFIED_COLOUR.get(word, 'yellow')}")
    if result.verification:
        line.append(f" — {result.verification}")
    return line


def evidence_lines(result: Result, limit: int = MAX_EVIDENCE_LINES) -> list[Text]:
    """One line per evidence cell, at most `limit` (then one line counting the rest): where
    it is, its value and how it was found (``evidence: row 3, Q3 = 205 (computed)``; the
    table named when it is not the final one)."""
    from rich.text import Text

    from tablequest.table import is_certain

    lines = []
    for cell in result.evidence[:limit]:
        table = result.tables.get(cell.table_id)
        column = f"col {cell.col}"
        if table is not None and cell.col in table.col_ids:
            column = table.columns[table.col_ids.index(cell.col)]
        line = Text(f"  evidence: row {cell.row}, {column} = {cell.value} ")
        line.append(f"({cell.how})", style="green" if is_certain(cell.how) else "yellow")
        if cell.table_id != result.final_table:
            line.append(f" in {result.sources.get(cell.table_id, cell.table_id)}", style="dim")
        lines.append(line)
    if len(result.evidence) > limit:
        more = len(result.evidence) - limit
        lines.append(Text(f"  … {more} more evidence cells (--json lists them all)", style="dim"))
    return lines


def retrieval_view(retrieval: dict[str, Any]) -> RichTable:
    """Retrieved schema entries and cell values (TableRAG-style retrieval details)."""
    from rich.table import Table as RichTable
    from rich.text import Text

    view = RichTable(title=f"retrieved (encoder {retrieval.get('encoder')})", title_justify="left")
    view.add_column("kind", style="dim")
    view.add_column("column")
    view.add_column("value / schema")
    for c in retrieval.get("columns", []):
        view.add_row("schema", str(c.get("column")), Text(str(c.get("schema", ""))))
    for c in retrieval.get("cells", []):
        view.add_row("cell", str(c.get("column")), Text(str(c.get("value", ""))[:120]))
    return view


def evidence_view(result: Result, max_rows: int = 12) -> tuple[str, RichTable]:
    """A title line and the final table around its evidence rows, supporting cells
    highlighted (the title apart: a table's own title wraps at the table's width)."""
    from rich.table import Table as RichTable
    from rich.text import Text

    assert result.final_table is not None
    table = result.tables[result.final_table]
    cited = {(c.row, c.col): c.how for c in result.evidence if c.table_id == result.final_table}
    rows = sorted({r for r, _ in cited}) or list(table.row_ids[:max_rows])
    source = result.sources.get(result.final_table, result.final_table)
    title = f"evidence · {source}" if cited else f"answered from · {source} (no cell cited)"
    view = RichTable(show_lines=False)
    view.add_column("row", style="dim")
    for name in table.columns:
        view.add_column(name)
    positions = {rid: i for i, rid in enumerate(table.row_ids)}
    for rid in rows[:max_rows]:
        if rid not in positions:
            continue
        cells = table.body[positions[rid]]
        styles = [_cell_style(cited.get((rid, cid))) for cid in table.col_ids]
        view.add_row(str(rid), *[Text(v, style=st) for v, st in zip(cells, styles, strict=False)])
    return title, view


def _cell_style(how: str | None) -> str:
    if how is None:
        return ""
    from tablequest.table import is_certain

    return _CERTAIN_STYLE if is_certain(how) else _UNCERTAIN_STYLE
