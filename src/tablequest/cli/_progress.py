"""Progress on a terminal: the stages of an ask as they happen, and an ingest's bar.

An ask's stages are its trace events (`tablequest.trace`): the CLI records into a
`ProgressTrace`, a `Trace` whose `event` also prints the event's title on stderr — the hook the
web app streams the trajectory through (`tablequest.service.asks.StreamingTrace`), and the same
title its trajectory shows (`describe_event`). One dim line per event, ``  1.2s  TITLE``; a
line that cannot be printed never breaks the ask.

An ingest's bar (`ingest_bar`) names the stage in progress: the stages a big file announces
while it is read and stored (its size, then its rows: `tablequest.corpus.progress_stages`) and
the index builds; the count of files shows only when there is more than one.

Both only when stderr is a terminal (`stderr_is_terminal`, the seam tests force) and not with
``--json``; ``ask --quiet`` hides them.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tablequest.trace import EventKind, Trace

if TYPE_CHECKING:
    from rich.console import Console

    from tablequest.settings import Settings, TracesSettings

__all__ = ["IngestBar", "ProgressTrace", "ingest_bar", "progress_trace", "stderr_is_terminal"]


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (progress is shown only then)."""
    return sys.stderr.isatty()


_TITLE_ONLY = frozenset({"llm_call", "preview", "exec"})
"""Kinds whose title says it all (tokens and seconds; tables; the step and its outcome): the
others add their first two detail lines (a route's table and rule, a decision's action)."""


def stage_text(event: dict[str, Any]) -> str:
    """One event as its progress line: seconds since the ask started, its title (as the web
    app's trajectory shows it) and, for most kinds, its first details."""
    from tablequest.trace import describe_event

    described = describe_event(event)
    text = f"{float(described['t'] or 0):>5.1f}s  {described['title']}"
    if described["kind"] not in _TITLE_ONLY and described["lines"]:
        text += " — " + "; ".join(described["lines"][:2])
    return text


class ProgressTrace(Trace):
    """A `Trace` whose events are also shown, one line each, by `show` as they happen."""

    def __init__(
        self,
        path: Path | None,
        show: Callable[[str], None],
        *,
        traces: TracesSettings | None = None,
    ) -> None:
        super().__init__(path, traces=traces)
        self._show = show

    def event(self, kind: EventKind, /, **payload: Any) -> dict[str, Any]:
        event = super().event(kind, **payload)
        with contextlib.suppress(Exception):  # progress never breaks the ask
            self._show(stage_text(event))
        return event


def _stage_line(console: Console) -> Callable[[str], None]:
    def show(text: str) -> None:
        from rich.text import Text

        console.print(Text(text, style="dim"), no_wrap=True, overflow="ellipsis", highlight=False)

    return show


def progress_trace(settings: Settings, *, enabled: bool) -> Trace | None:
    """The trace of an ask that shows its stages on stderr, when `enabled` and stderr is a
    terminal; else None (`methods.ask` starts its own). Its file is where the ask's own
    would be (the settings' trace folder)."""
    if not enabled or not stderr_is_terminal():
        return None
    from tablequest.cli._output import err_console
    from tablequest.trace import default_trace_dir, new_trace_path

    return ProgressTrace(
        new_trace_path(default_trace_dir(settings.traces)),
        _stage_line(err_console),
        traces=settings.traces,
    )


class IngestBar:
    """An ingest's bar on `console`: the stage in progress (a big file's size and rows, an
    index build) and, with more than one file, how many are done."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        columns = (TextColumn("{task.description}"), BarColumn(),
                   TextColumn("{task.fields[files]}"), TimeRemainingColumn())  # fmt: skip
        self.progress = Progress(*columns, console=console, transient=True)
        self.task = self.progress.add_task("ingesting", total=None, files="")

    def stage(self, text: str) -> None:
        """Show `text` (a stage that starts now) as the bar's description."""
        self.progress.update(self.task, description=text)

    def files(self, done: int, total: int) -> None:
        """`done` of `total` files read; the count is shown only for more than one file."""
        shown = f"{done}/{total} files" if total > 1 else ""
        self.progress.update(self.task, completed=done, total=total, files=shown)


@contextlib.contextmanager
def ingest_bar(console: Console) -> Iterator[IngestBar]:
    """An `IngestBar` shown while the block runs, receiving the stages announced in it."""
    from tablequest.corpus import progress_stages

    bar = IngestBar(console)
    with bar.progress, progress_stages(bar.stage):
        yield bar
