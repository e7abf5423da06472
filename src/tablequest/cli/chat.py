"""`tablequest chat [-s STORE]` (a prompt loop of follow-up questions) and `tablequest
conversations [-s STORE] [--rm ID]...` (the store's conversations).

`chat` opens the source as `tablequest.chat` does (a store read-only; a table file or a
folder into its cached store) and asks each line in one conversation of the store
(`tablequest.methods.conversation`): a follow-up is rewritten with the history into a
standalone question, shown as ``asked as: …`` above the answer. Lines starting with ``/``
are commands: ``/tables``, ``/show ID``, ``/exit`` (end of input ends it too). It reads
standard input line by line, a terminal or not (a pipe, a test's input). This module only
parses and prints.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from tablequest.cli._llm import LLMFlags, model_or_fail, settings_or_fail
from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    ConfigOpt,
    DeadlineOpt,
    JsonOpt,
    LLMSpecOpt,
    LLMUrlOpt,
    MethodOpt,
    ModelOpt,
    NoCacheOpt,
    OptionOpt,
    PairCommand,
    StepsOpt,
    StoreOpt,
    TraceDirOpt,
    option_pairs,
    require_store,
    store_and_words,
)
from tablequest.cli._output import print_json, show_result
from tablequest.cli.ask import SourceOpt, show_rewritten

if TYPE_CHECKING:
    from tablequest.notebook import Chat

__all__ = ["chat_command", "conversations_command", "register"]

HELP_LINE = "Ask a question; /tables lists the tables, /show ID shows one, /exit ends."
ResumeOpt = Annotated[
    str | None,
    typer.Option(
        "--continue",
        metavar="[CONVERSATION]",
        help="Go on with a conversation of the store: the latest one, or the id given "
        "(`tablequest conversations` lists them). Default: a new conversation.",
        show_default=False,
    ),
]


def chat_command(
    store: SourceOpt = None,
    method: MethodOpt = "auto",
    option: OptionOpt = None,
    config: ConfigOpt = None,
    steps: StepsOpt = None,
    continue_: ResumeOpt = None,
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,
    llm: LLMSpecOpt = None,
    deadline: DeadlineOpt = None,
    no_cache: NoCacheOpt = False,
    trace_dir: TraceDirOpt = None,
) -> None:
    """Ask questions one after another, each a follow-up of the ones before: a follow-up
    ("and for Q4?") is rewritten with the history into a standalone question (shown) and
    prefers the previous answer's tables. Reads one question per line from standard input;
    /tables, /show ID, /exit."""
    from tablequest import chat
    from tablequest.errors import TablequestError

    source, _ = store_and_words("chat", [], store, names=())
    require_store(source, kinds="store, table file or folder")
    flags = LLMFlags(
        llm_url, model, api_key, llm, no_cache=no_cache, deadline=deadline, config_file=config_file
    )
    settings = settings_or_fail(flags, {"traces.dir": trace_dir})
    llm_config, model_llm = model_or_fail(flags, settings=settings)
    try:
        session = chat(
            source, llm=model_llm, method=method, conversation=continue_, cache=not no_cache,
            settings=settings, options=option_pairs(option), config=config, steps=steps,
            llm_config=llm_config,
        )  # fmt: skip
        with session:
            _loop(session, TablequestError)
    finally:
        if model_llm is not None:
            model_llm.close()


def _loop(session: Chat, errors: type[Exception]) -> None:
    from tablequest.cli._output import console, report_error

    console.print(f"conversation {session.id} — {HELP_LINE}", markup=False, highlight=False)
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            console.print("? ", end="", markup=False)
        line = sys.stdin.readline()
        if not line:
            return
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/tables":
            _tables(session)
        elif text == "/show" or text.startswith("/show "):
            _show(session, text.removeprefix("/show").strip())
        elif text.startswith("/"):
            print(f"unknown command {text.split()[0]!r}; {HELP_LINE}", file=sys.stderr)
        else:
            try:
                result = session.ask(text)
            except errors as exc:  # bad input ends this question, not the chat
                report_error(exc)
                continue
            show_rewritten(result)
            show_result(result, text)


def _tables(session: Chat) -> None:
    from rich.table import Table as RichTable
    from rich.text import Text

    from tablequest.cli._output import wide_console
    from tablequest.corpus import catalog

    view = RichTable(title_justify="left")
    for column in ("id", "name", "rows × cols", "source"):
        view.add_column(column, no_wrap=column == "id", overflow="fold")
    for e in catalog(session.corpus.store):
        view.add_row(e.table_id, Text(e.name), f"{e.n_rows} × {e.n_cols}", Text(e.source))
    wide_console().print(view)


def _show(session: Chat, table_id: str) -> None:
    from tablequest.cli._output import wide_console
    from tablequest.cli.tables import table_view

    try:
        table = session.corpus.tables[table_id]
    except KeyError:
        print(f"no table {table_id!r}; /tables lists the ids", file=sys.stderr)
        return
    wide_console().print(table_view(table, max_rows=20))


def conversations_command(
    store: StoreOpt = None,
    remove: Annotated[
        list[str] | None,
        typer.Option(
            "--rm", metavar="ID", help="Delete this conversation (repeatable; `latest` too)."
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the store's conversations (most recent first: id, when, turns, first question),
    or delete some with --rm. `ask --continue ID` and `chat --continue ID` go on with one."""
    from tablequest.cli._output import console
    from tablequest.methods import Conversations
    from tablequest.settings import StoreSettings, from_env

    source, _ = store_and_words("conversations", [], store, names=(), json_out=json_out)
    require_store(source, json_out=json_out, kinds="store, table file or folder")
    kept = Conversations.for_source(source, from_env(StoreSettings).cache_dir)
    if remove:
        ids = [kept.get(i).id for i in remove]  # every id checked first (exit 2 naming one)
        for conversation_id in ids:
            kept.delete(conversation_id)
        if json_out:
            print_json({"removed": ids})
        else:
            console.print(f"removed {len(ids)} conversation(s): {', '.join(ids)}", markup=False)
        return
    found = kept.list()
    rows = [{"id": c.id, "title": c.title, "turns": len(c.turns), "created": c.created,
             "updated": c.updated} for c in found]  # fmt: skip
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print(f"no conversation with {source} yet", markup=False, highlight=False)
        return
    for row in rows:
        when = str(row["updated"]).replace("T", " ")[:16]
        console.print(f"{row['id']}  {when}  {row['turns']:>3} turns  {row['title']}",
                      markup=False, highlight=False)  # fmt: skip


def register(app: typer.Typer) -> None:
    app.command("chat", cls=PairCommand)(chat_command)
    app.command("conversations")(conversations_command)
