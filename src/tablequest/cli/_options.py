"""Option declarations shared by the commands (declared once, used by ask, eval run, …).

Method options are ``-o NAME VALUE`` (repeatable) or ``-c CONFIG`` (a named paper
configuration); `PairCommand` turns ``-o NAME VALUE`` into ``NAME=VALUE`` before parsing, so
both spellings work.

The store rule, one for every command that reads or writes a store: ``--store/-s PATH``
(a DuckDB file or a sharded corpus's manifest), default $TABLEQUEST_STORE, else
``corpus.duckdb`` under the user data directory. The old spelling with the store as the
first argument (``tablequest search STORE "q"``) is still accepted when that argument is an
existing store, with a one-line deprecation note on stderr (`store_and_words`).

Usage lines name arguments in capitals (``PATHS...``, ``QUESTION``): `UsageCommand`
rewrites typer's ``{paths}...`` spelling; app.py gives it to every command.

Registering the commands imports no library module (``tablequest --version`` and ``--help``
start fast): a help text that lists a registry's names (retrievers, encoders: plugins add
some) holds a `lazy_help` placeholder, filled when a help page is shown (`UsageCommand`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from tablequest.cli._exit import USAGE
from tablequest.cli._output import fail

if TYPE_CHECKING:
    from tablequest.methods import Task
    from tablequest.settings import StoreSettings

STORE_ENV = "TABLEQUEST_STORE"
_REQUIRED = re.compile(r"\{([^{}]+)\}(\.\.\.)?")
_OPTIONAL = re.compile(r"\[([a-z_][\w-]*)\](\.\.\.)?")


_LAZY_HELP: dict[str, Callable[[], str]] = {}


def lazy_help(name: str, fill: Callable[[], str]) -> str:
    """A placeholder for a help text, ``{NAME}``, which a help page shows as ``fill()``
    (`fill_help`): for a part of the text only a library import can compute."""
    token = "{" + name + "}"
    _LAZY_HELP[token] = fill
    return token


def fill_help(params: list[Any]) -> None:
    """Replace the `lazy_help` placeholders in these parameters' help texts (once)."""
    for param in params:
        text = getattr(param, "help", None)
        if not text or "{" not in text:
            continue
        for token, fill in _LAZY_HELP.items():
            if token in text:
                text = text.replace(token, fill())
        param.help = text


def _retriever_names() -> str:
    from tablequest.corpus import RETRIEVERS

    return " | ".join(RETRIEVERS)


def _encoder_names() -> str:
    from tablequest.corpus import ENCODERS

    return " | ".join(ENCODERS)


RETRIEVER_NAMES = lazy_help("RETRIEVERS", _retriever_names)
"""The registered retrievers (plugins add some) in a help text: ``grep | bm25 | …``."""
ENCODER_NAMES = lazy_help("ENCODERS", _encoder_names)
"""The registered encoders (plugins add some) in a help text: ``minilm | …``."""


class UsageCommand(TyperCommand):
    """A command whose usage line spells arguments ``NAME`` / ``[NAME]`` / ``NAME...`` and
    leaves hidden ones (an old spelling still accepted) out, whose help page fills the
    `lazy_help` placeholders, and which never ends in a bare traceback (`invoke`)."""

    def invoke(self, ctx: Any) -> Any:
        """Run the command. An error it did not report itself ends it the way `fail_on`
        says: a `TablequestError` with its class's exit status and code, any other exception
        as an internal error (exit 1, code ``internal``; `tablequest.errors`)."""
        from typer.exceptions import TyperException

        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, TyperException):
            raise  # typer's own endings: an exit status, ^C, a bad flag (its usage errors)
        except Exception as exc:
            from tablequest.cli._output import fail_on

            fail_on(exc, json_out=bool(ctx.params.get("json_out")))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        fill_help(self.params)
        super().format_help(ctx, formatter)

    def shell_complete(self, ctx: Any, incomplete: str) -> list[Any]:
        fill_help(self.params)  # zsh and fish show an option's help beside it
        items: list[Any] = super().shell_complete(ctx, incomplete)
        return items

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces: list[str] = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not getattr(param, "hidden", False):
                pieces += [usage_piece(p) for p in param.get_usage_pieces(ctx)]
        return pieces


def usage_piece(piece: str) -> str:
    """``{paths}...`` → ``PATHS...``, ``[name]`` → ``[NAME]``; anything else unchanged."""
    if m := _REQUIRED.fullmatch(piece):
        return m[1].upper() + (m[2] or "")
    if m := _OPTIONAL.fullmatch(piece):
        return f"[{m[1].upper()}]" + (m[2] or "")
    return piece


CONVERSATION_WORD = re.compile(r"^([0-9a-f]{12}|latest)$")


class PairCommand(UsageCommand):
    """A command whose ``-o``/``--option`` takes two words, NAME VALUE, and whose
    ``--continue`` takes an optional conversation id (12 hex digits or ``latest``; alone it
    means ``latest``)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(args):
            arg = args[i]
            if arg == "--continue" and any(p.name == "continue_" for p in self.params):
                given = i + 1 < len(args) and CONVERSATION_WORD.match(args[i + 1])
                out += [arg, args[i + 1] if given else "latest"]
                i += 2 if given else 1
                continue
            if arg in ("-o", "--option") and i + 2 < len(args) and "=" not in args[i + 1]:
                out += [arg, f"{args[i + 1]}={args[i + 2]}"]
                i += 3
                continue
            out.append(arg)
            i += 1
        result: list[str] = super().parse_args(ctx, out)
        return result


def option_pairs(values: list[str] | None) -> dict[str, str]:
    """``NAME=VALUE`` strings as a mapping (typer.BadParameter for a value without a name)."""
    from tablequest.methods import option_name

    out: dict[str, str] = {}
    for item in values or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"-o needs NAME VALUE, got {item!r}", param_hint="-o")
        out[option_name(name)] = value
    return out


def task_name(task: str) -> Task:
    """``fact`` / ``fact_verification`` → fact_verification; anything else table QA."""
    return "fact_verification" if task in ("fact", "fact_verification") else "tableqa"


MethodOpt = Annotated[
    str, typer.Option("--method", "-m", help="A registered method (`tablequest methods`).")
]
OptionOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--option", "-o", metavar="NAME VALUE", help="A method option (repeatable); see "
        "`tablequest methods NAME`.",
    ),
]  # fmt: skip
ConfigOpt = Annotated[
    str | None,
    typer.Option("--config", "-c", help="A named paper configuration, e.g. 10step-5s1-small."),
]


def use_config_file(ctx: typer.Context, value: Path | None) -> Path | None:
    """The ``--config-file`` callback: the file must exist (the command passes it to
    `tablequest.cli._settings.load_settings`, never through the environment); without it,
    the untrusted-file warning."""
    if value is not None and not value.expanduser().is_file():
        raise typer.BadParameter(f"no file at {str(value)!r}", param_hint="--config-file")
    from tablequest.cli._output import err_console
    from tablequest.methods import untrusted_notes

    for note in untrusted_notes(named=value):
        err_console.print(note, markup=False, highlight=False, soft_wrap=True)
    return value


ConfigFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--config-file",
        envvar="TABLEQUEST_CONFIG",
        callback=use_config_file,
        metavar="PATH",
        help="Read settings from this tablequest.toml only, trusted (a ./tablequest.toml not "
        "trusted by `tablequest config trust` cannot set the model URL, key, model, sandbox "
        "isolation or server-side method options).",
    ),
]
TaskOpt = Annotated[str, typer.Option(help="tableqa | fact")]
StepsOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Cap on LLM calls per question (default: the method's)."),
]
LLMUrlOpt = Annotated[
    str | None, typer.Option("--llm-url", metavar="URL", help="OpenAI-compatible URL.")
]
ModelOpt = Annotated[str | None, typer.Option("--model", metavar="NAME", help="Model name.")]
ApiKeyOpt = Annotated[str | None, typer.Option("--api-key", metavar="KEY", help="API key.")]
DeadlineOpt = Annotated[
    float | None,
    typer.Option(
        "--deadline",
        min=0,
        help="Seconds per question for all LLM calls and retries (0 = none; default 600).",
    ),
]
LLMSpecOpt = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="An LLM backend instead of a server: NAME[:ARG][,KEY=VALUE...], e.g. "
        "gguf:/path/model.gguf,n_ctx=4096 (plugins add backends: tablequest.llms).",
    ),
]
NoCacheOpt = Annotated[
    bool, typer.Option("--no-cache", help="Do not use the LLM and embedding caches.")
]
TraceDirOpt = Annotated[Path | None, typer.Option(help="Where the JSONL traces go.")]


def _device(value: str | None) -> str | None:
    """Check ``--device`` (the `embeddings.device` setting's rule)."""
    if value is None:
        return None
    from tablequest.settings import SettingsError, load_section

    try:
        device: str | None = load_section("embeddings", flags={"device": value}, env={})[0].device
    except SettingsError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None
    return device


DeviceOpt = Annotated[
    str | None,
    typer.Option(
        "--device",
        metavar="DEVICE",
        callback=_device,
        help="Where the MiniLM encoders run: auto | cpu | cuda | cuda:N (default: "
        "$TABLEQUEST_DEVICE, else auto; an encoder without a device refuses cuda).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-O",
        metavar="FILE",
        help="Write the export to FILE (parquet and xlsx need it, or a pipe, on a terminal).",
    ),
]
TableIdOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--table-id",
        metavar="ID",
        help="A table to answer from (repeatable): an id (`tablequest tables` lists them, "
        "`search` prints them), or a file's table index 0, 1, ….",
    ),
]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="ADDRESS",
        help="Run on Ray: local | auto | ray://HOST:PORT (default: $TABLEQUEST_RAY_ADDRESS).",
    ),
]
LLMUrlsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--llm-url",
        metavar="URL",
        help="OpenAI-compatible URL; repeat it to load-balance several servers "
        "(or `llm_urls = [...]` under \\[scale] in tablequest.toml).",
    ),
]


# -- the store rule ---------------------------------------------------------------------------
StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        "-s",
        metavar="STORE",
        help="The store: a DuckDB file or a sharded corpus's manifest (default: "
        f"${STORE_ENV}, else corpus.duckdb under the user data dir).",
    ),
]


def default_store_path(store: StoreSettings | None = None) -> Path:
    """The store when --store is not given: the `store.path` setting (`store`, the loaded
    section; default: the environment's, $TABLEQUEST_STORE), else the user data store."""
    from tablequest.settings import StoreSettings, from_env

    named = (store if store is not None else from_env(StoreSettings)).path
    if named is not None:
        return named
    from platformdirs import user_data_dir

    return Path(user_data_dir("tablequest")) / "corpus.duckdb"


def is_store_path(path: Path) -> bool:
    """True when `path` is an existing DuckDB store file or a sharded corpus's manifest."""
    from tablequest.corpus import is_corpus_file

    return is_corpus_file(path)


def deprecated_store_note(command: str, new_usage: str, store: Path) -> None:
    """The one-line note (stderr) for a store given as the first argument."""
    from tablequest.cli._output import err_console

    err_console.print(
        "note: the store as first argument is deprecated; use `"
        + " ".join(w for w in ("tablequest", command, new_usage, f"--store {store}") if w)
        + "`",
        markup=False, highlight=False, soft_wrap=True,
    )  # fmt: skip


def store_and_words(
    command: str,
    words: list[str] | None,
    store: Path | None,
    *,
    names: tuple[str, ...],
    old_first: Callable[[Path], bool] = is_store_path,
    json_out: bool = False,
) -> tuple[Path, list[str]]:
    """The store and the positional words of a command that takes a store.

    `names` are the positional arguments besides the store (``("QUESTION",)`` for search).
    One word more than `names`, no --store, and the first word passes `old_first` (by
    default: an existing store; `ask`, whose source may be a table file or folder, can pass
    ``Path.exists``): the old spelling, accepted with a deprecation note. Otherwise exactly
    `names` words, and the store from --store or `default_store_path`. Anything else ends
    the command (exit 2), naming what the first word is when it looks like a store.
    """
    words = list(words or ())
    new_usage = " ".join(names) if names else ""
    if len(words) == len(names) + 1:
        first = Path(words[0]).expanduser()
        if store is None and old_first(first):
            deprecated_store_note(command, new_usage, first)
            return first, words[1:]
        if store is None and (first.suffix in (".duckdb", ".json") or "/" in words[0]):
            require_store(first, json_out=json_out)  # a typo in an old-style store name
        if store is None and first.exists():
            from tablequest.corpus import what_is

            what = what_is(first) or "not a store"
            fail(f"{str(first)!r} is {what}, not a store (name the store with --store)",
                 json_out=json_out, code="not_a_store")  # fmt: skip
    if len(words) != len(names):
        wanted = f"takes {new_usage}" if names else "takes no arguments"
        fail(
            f"`tablequest {command}` {wanted} and the store as --store STORE; got "
            f"{len(words)} argument(s) (quote a question of several words)",
            json_out=json_out,
        )
    return (store.expanduser() if store is not None else default_store_path()), words


def require_store(path: Path, *, json_out: bool = False, kinds: str = "store") -> Path:
    """`path` when it exists; else end the command (exit 2) saying how to create a store,
    so that a typo never creates an empty one. `kinds` names what the command accepts there
    (``ask``: "store, table file or folder")."""
    if not path.exists():
        fail(
            f"no {kinds} at {str(path)!r}; create one with `tablequest ingest PATH... "
            f"--store {path}`",
            json_out=json_out,
            code="no_store",
            status=USAGE,
        )
    return path
