"""`tablequest ask "question" --store S`: answer with a registered method, show the evidence.

S is a store (DuckDB file), a sharded corpus's manifest, a table file or a folder (the old
spelling, S as the first argument, is accepted with a deprecation note);
`tablequest.methods.run.ask` opens it as the method needs and runs the method. This command
only parses and prints. With --ray a sharded corpus ranks on shard actors. Without a
configured model the method's LLM-free part runs and one line says how to connect a model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tablequest.cli import _exit
from tablequest.cli._llm import LLMFlags, model_or_fail, settings_or_fail
from tablequest.cli._options import (
    ApiKeyOpt,
    ConfigFileOpt,
    ConfigOpt,
    DeadlineOpt,
    DeviceOpt,
    JsonOpt,
    LLMSpecOpt,
    LLMUrlOpt,
    MethodOpt,
    ModelOpt,
    NoCacheOpt,
    OptionOpt,
    RayOpt,
    StepsOpt,
    TableIdOpt,
    TaskOpt,
    TraceDirOpt,
    option_pairs,
    require_store,
    store_and_words,
    task_name,
)
from tablequest.cli._output import encoding_bar, fail, fail_on, print_json, show_result

if TYPE_CHECKING:
    from tablequest.methods import Conversation, Result

SourceOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        "-s",
        metavar="STORE",
        help="What to answer from: a store (DuckDB file or sharded corpus's manifest), a table "
        "file or a folder (default: $TABLEQUEST_STORE, else the user data store).",
    ),
]
RequireVerifiedOpt = Annotated[
    bool,
    typer.Option(
        "--require-verified",
        help="Exit 5 when the question is answered but the answer is not verified against "
        "its evidence (unverified or contradicted).",
    ),
]
ContinueOpt = Annotated[
    str | None,
    typer.Option(
        "--continue",
        metavar="[CONVERSATION]",
        help="Ask QUESTION as a follow-up in a conversation of the store: the latest one, or "
        "the id given (`tablequest conversations` lists them). The question is rewritten with "
        "the history into a standalone one (shown) and prefers the previous answer's tables. "
        "Without it the question starts a new conversation.",
        show_default=False,
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        help="Do not show the stages on stderr as they happen (shown only on a terminal, "
        "never with --json).",
    ),
]


def ask(*args: Any, **kwargs: Any) -> Result:
    """`tablequest.methods.run.ask`, imported when a question is asked."""
    from tablequest.methods import ask as run_ask

    return run_ask(*args, **kwargs)


def ask_command(
    question: Annotated[
        str, typer.Argument(metavar="QUESTION", help="The question (or claim, with --task fact).")
    ],
    extra: Annotated[list[str] | None, typer.Argument(hidden=True, show_default=False)] = None,
    store: SourceOpt = None,
    method: MethodOpt = "auto",
    option: OptionOpt = None,
    config: ConfigOpt = None,
    task: TaskOpt = "tableqa",
    steps: StepsOpt = None,
    table_id: TableIdOpt = None,
    llm_url: LLMUrlOpt = None,
    model: ModelOpt = None,
    api_key: ApiKeyOpt = None,
    config_file: ConfigFileOpt = None,  # passed to the one settings load
    llm: LLMSpecOpt = None,
    deadline: DeadlineOpt = None,
    no_cache: NoCacheOpt = False,
    trace_dir: TraceDirOpt = None,
    ray: RayOpt = None,
    device: DeviceOpt = None,
    json_out: JsonOpt = False,
    require_verified: RequireVerifiedOpt = False,
    continue_: ContinueOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Answer QUESTION from the store (or a table file or folder) and show the evidence, the
    tables consulted and the trace.

    Exit status: 0 answered, 1 failed (the reason names what and where), 2 bad input,
    3 insufficient evidence, 4 no model configured (the LLM-free part ran), 5 answered but
    not verified (with --require-verified).
    """
    source, (question,) = store_and_words(
        "ask", [question, *(extra or [])], store, names=("QUESTION",), old_first=Path.exists,
        json_out=json_out,
    )  # fmt: skip
    if not question.strip():
        fail("the question is empty", json_out=json_out, status=_exit.USAGE)
    require_store(source, json_out=json_out, kinds="store, table file or folder")
    from tablequest.cli._options import is_store_path
    from tablequest.cli._progress import progress_trace
    from tablequest.cli._scale import open_corpus
    from tablequest.errors import TablequestError
    from tablequest.scale import ray_address

    flags = LLMFlags(
        llm_url, model, api_key, llm, no_cache=no_cache, deadline=deadline, config_file=config_file
    )
    more = {"traces.dir": trace_dir, "scale.ray_address": ray, "embeddings.device": device}
    settings = settings_or_fail(flags, more, json_out=json_out)  # the command's one load
    llm_config, model_llm = model_or_fail(flags, json_out=json_out, settings=settings)
    corpus = None
    address = ray_address(settings.scale.ray_address)
    if address is not None and is_store_path(source):
        # a sharded one ranks on actors
        corpus = open_corpus(source, address, settings, json_out=json_out)
        if corpus.manifest is None:  # one store ranks here, opened by `ask` as a path
            corpus.close()
            corpus = None
    shown = not (json_out or quiet)  # the stages and the encoding bar, on a terminal
    conversation = conversation_of(
        corpus if corpus is not None else source, continue_, settings.store.cache_dir
    )
    try:
        with encoding_bar("encoding", shown):
            result = ask(
                question,
                corpus if corpus is not None else source,
                method=method,
                options=option_pairs(option),
                config=config,
                llm=model_llm,
                llm_config=llm_config,
                task=task_name(task),
                steps=steps,
                table_ids=table_id or (),
                cache=not no_cache,
                settings=settings,
                conversation=conversation,
                trace=progress_trace(settings, enabled=shown),
            )
    except TablequestError as exc:  # bad input (2), the model or store (1); a bug: internal
        fail_on(exc, json_out=json_out)
    finally:
        if model_llm is not None:
            model_llm.close()
        if corpus is not None:
            corpus.close()
    _print(result, question, json_out=json_out)
    status = exit_status(result, require_verified=require_verified)
    if status == _exit.NOT_VERIFIED:  # say why the exit is not 0 (stderr: --json stays JSON)
        print(f"tablequest: the answer is {result.verified}, not verified "
              f"(--require-verified): exit 5", file=sys.stderr)  # fmt: skip
    raise typer.Exit(status)


def _print(result: Result, question: str, *, json_out: bool) -> None:
    """The result (JSON or the answer panel), and how to connect a model when none ran."""
    from tablequest.llm import NOT_CONFIGURED_HINT
    from tablequest.methods import NO_LLM

    if json_out:
        print_json(result.to_json())
    else:
        show_rewritten(result)
        show_result(result, question)
    if result.reason == NO_LLM:
        if json_out:
            print(NOT_CONFIGURED_HINT, file=sys.stderr)
        else:
            from tablequest.cli._output import console

            console.print(f"[bold yellow]{NOT_CONFIGURED_HINT}[/bold yellow]", soft_wrap=True)


def conversation_of(source: Any, wanted: str | None, cache_dir: Path | None) -> Conversation:
    """The conversation of `source`'s store to ask in: `wanted` (an id, or ``latest``), else
    a new one (`tablequest.methods.conversation`; an unknown id exits 2)."""
    from tablequest.methods import Conversations

    kept = Conversations.for_source(source, cache_dir)
    return kept.new() if wanted is None else kept.get(wanted)


def show_rewritten(result: Result) -> None:
    """One line with the standalone question a follow-up was rewritten into."""
    rewritten = result.to_json().get("rewritten_question")
    if rewritten:
        from rich.text import Text

        from tablequest.cli._output import console

        console.print(Text(f"asked as: {rewritten}", style="italic"), soft_wrap=True)


def exit_status(result: Result, *, require_verified: bool = False) -> int:
    """The exit status of an ask (see `tablequest.cli._exit`); with `require_verified`, an
    answer that is not ``verified`` exits 5 (a result not answered keeps its status)."""
    from tablequest.methods import NO_LLM

    if result.status == "answered":
        if require_verified and result.verified != "verified":
            return _exit.NOT_VERIFIED
        return _exit.OK
    if result.status == "insufficient":
        return _exit.INSUFFICIENT
    return _exit.NO_MODEL if result.reason == NO_LLM else _exit.FAILED
