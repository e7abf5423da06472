"""`tablequest config init | set | get | trust | untrust | show`, and the one warning for an
untrusted file.

`init` writes the user config file (``tablequest.toml`` in the user config directory, or
``--file``) with every key commented out, refusing to overwrite one without ``--force``;
`set KEY VALUE` checks VALUE with the setting's parser and writes it there; `get KEY` prints
the effective value (`tablequest.settings`). An unknown key or a bad value exits 2
naming the known keys or the allowed values.

A ``tablequest.toml`` in the working directory that is neither named (``--config-file``,
``$TABLEQUEST_CONFIG``) nor trusted cannot set the keys that choose where data and the key go
or that weaken the sandbox (`tablequest.configfile`). Every command that reads the config
declares ``--config-file`` (`tablequest.cli._options.ConfigFileOpt`); its callback
(`tablequest.cli._options.use_config_file`) names the file for the command and prints
`untrusted_notes` once on stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tablequest.cli._defaults import CONFIG_FILE
from tablequest.cli._output import fail, fail_on

if TYPE_CHECKING:
    from tablequest.configfile import ConfigFile
    from tablequest.settings import Settings

app = typer.Typer(
    help="Which tablequest.toml files are read, and which are trusted to choose where data goes.",
    no_args_is_help=True,
)

PathArg = Annotated[
    Path,
    typer.Argument(metavar="PATH", help=f"The config file (default: ./{CONFIG_FILE})."),
]


@app.command("trust")
def trust_command(path: PathArg = Path(CONFIG_FILE)) -> None:
    """Trust PATH as it is now: it may then set the model URL, key, sandbox isolation and
    server-side method options. Editing it withdraws the trust until you trust it again."""
    from tablequest import configfile
    from tablequest.configfile import ConfigFileError

    try:
        file, digest = configfile.trust(path)
    except ConfigFileError as exc:
        fail_on(exc)
    from tablequest.cli._output import console

    console.print(f"trusted {file} (sha256 {digest[:12]}…)", highlight=False, soft_wrap=True)


@app.command("untrust")
def untrust_command(path: PathArg = Path(CONFIG_FILE)) -> None:
    """Stop trusting PATH."""
    from tablequest import configfile
    from tablequest.configfile import ConfigFileError

    try:
        removed = configfile.untrust(path)
    except ConfigFileError as exc:
        fail_on(exc)
    if not removed:
        fail(f"{str(path)!r} was not trusted (`tablequest config show` lists the files read)")
    from tablequest.cli._output import console

    console.print(f"no longer trusted: {Path(path).resolve()}", highlight=False, soft_wrap=True)


FileOpt = Annotated[
    Path | None,
    typer.Option(
        "--file",
        metavar="PATH",
        help=f"The config file to write (default: {CONFIG_FILE} in the user config directory, "
        "which is always trusted).",
    ),
]


def _user_file(file: Path | None) -> Path:
    from tablequest.configfile import user_dir

    return file.expanduser() if file is not None else user_dir() / CONFIG_FILE


@app.command("init")
def init_command(
    file: FileOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented config file: every setting a file may set, with its help and
    default, commented out (refuses to overwrite one without --force)."""
    from tablequest.cli._output import console
    from tablequest.settings import commented_config

    path = _user_file(file)
    if path.exists() and not force:
        fail(f"{str(path)!r} exists; pass --force to overwrite it (or `config set KEY VALUE`)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(commented_config(), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {str(path)!r}: {exc.strerror or exc}", status=1)
    console.print(f"wrote {path}", markup=False, highlight=False, soft_wrap=True)


KeyArg = Annotated[str, typer.Argument(metavar="KEY", help="section.key, e.g. llm.url.")]


@app.command("set")
def set_command(
    key: KeyArg,
    value: Annotated[str, typer.Argument(metavar="VALUE", help="Its value (lists: a,b).")],
    file: FileOpt = None,
) -> None:
    """Set KEY to VALUE in the config file (checked as the setting reads it)."""
    from tablequest.cli._output import console
    from tablequest.settings import SettingsError, set_value, toml_literal

    path = _user_file(file)
    try:
        typed = set_value(path, key, value)
    except SettingsError as exc:
        fail_on(exc)
    except OSError as exc:
        fail(f"cannot write {str(path)!r}: {exc.strerror or exc}", status=1)
    shown = toml_literal(value if typed is None else typed)
    console.print(f"{key} = {shown} in {path}", markup=False, highlight=False, soft_wrap=True)


@app.command("get")
def get_command(
    key: KeyArg,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print KEY's effective value (flags aside: environment, config files, default)."""
    from tablequest.configfile import ConfigFileError
    from tablequest.settings import Settings, lookup_setting

    try:
        lookup_setting(key)
        loaded = Settings.load()
        value, source = shown(loaded, key.strip())
    except ConfigFileError as exc:  # SettingsError too: an unknown key, a bad file
        fail_on(exc, json_out=json_out)
    if json_out:
        typer.echo(json.dumps({"key": key, "value": value, "source": source}))
        return
    typer.echo("none" if value is None else json.dumps(value) if not isinstance(value, str)
               else value)  # fmt: skip
    typer.echo(f"({source})", err=True)


def describe(file: ConfigFile) -> dict[str, Any]:
    """What `config show` says of one file: path, trust, what it sets, what is ignored."""
    from tablequest.configfile import ConfigFileError
    from tablequest.methods import OptionError, guarded_keys

    try:
        ignored = guarded_keys(file)
    except (ConfigFileError, OptionError) as exc:
        ignored = [f"(unreadable: {exc})"]
    sets = [f"[{name}] {key}" if name else key for name, key in _keys(file.data)]
    return {
        "path": str(file.path),
        "trusted": file.trusted,
        "why": file.why,
        "sets": sets,
        "ignored": ignored,
    }


def _keys(data: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict) and (not prefix or prefix == "methods"):
            out += _keys(value, name)
        elif prefix:
            out.append((prefix, key))
        else:
            out.append(("", key))
    return out


@app.command("show")
def show_command(
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the config files read here, highest precedence first: trusted or not, the keys
    each sets, and the keys ignored because the file is not trusted; then every effective
    setting and where it came from (flag, $VARIABLE, a file, default; docs/config.md)."""
    from tablequest import configfile
    from tablequest.configfile import ConfigFileError
    from tablequest.methods import OptionError, check_method_tables
    from tablequest.settings import Settings

    try:
        loaded = Settings.load()  # the command's one load
        check_method_tables(loaded.files)
        files = [describe(f) for f in loaded.files]
        settings = effective(loaded)
    except (ConfigFileError, OptionError) as exc:
        fail_on(exc, json_out=json_out)
    if json_out:
        trust_list = str(configfile.trust_path())
        typer.echo(json.dumps({"files": files, "trust_list": trust_list, "settings": settings}))
        return
    from tablequest.cli._output import console

    if not files:
        console.print(f"no {CONFIG_FILE} here or in {configfile.user_dir()}", highlight=False)
    for item in files:
        state = "trusted" if item["trusted"] else "NOT trusted"
        line = f"{item['path']}: {state} ({item['why']})"
        console.print(line, highlight=False, markup=False, soft_wrap=True)
        console.print(
            f"  sets: {', '.join(item['sets']) or 'nothing'}", markup=False, soft_wrap=True
        )
        if item["ignored"]:
            console.print(f"  ignored: {', '.join(item['ignored'])}", markup=False, soft_wrap=True)
    console.print("settings (docs/config.md):", highlight=False)
    for name, item in settings.items():
        value = "none" if item["value"] is None else item["value"]
        line = f"  {name} = {value}  ({item['source']})"
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def effective(settings: Settings) -> dict[str, dict[str, Any]]:
    """``section.key`` → {"value" (JSON; a secret as ``***``), "source"} of every setting."""
    out: dict[str, dict[str, Any]] = {}
    for name, _value, _spec in settings.items():
        value, source = shown(settings, name)
        out[name] = {"value": value, "source": source}
    return out


COMPUTED = "default, computed"
"""The source of a default that is computed where the setting is used (a path under the user
directories, half the memory)."""


def shown(settings: Settings, dotted: str) -> tuple[Any, str]:
    """(the effective value of ``section.key`` as JSON shows it, where it came from): a
    default computed where it is used is computed here too (source `COMPUTED`)."""
    from tablequest.settings import shown_value

    value, source = shown_value(settings, dotted), settings.source(dotted)
    if value is None and source == "default":
        computed = computed_default(settings, dotted)
        if computed is not None:
            return str(computed) if isinstance(computed, Path) else computed, COMPUTED
    return value, source


def computed_default(settings: Settings, dotted: str) -> Any:
    """What the code that reads ``section.key`` uses when it is unset (None: nothing), by
    calling the function that code calls, so that the two cannot differ."""
    if dotted == "store.path":
        from tablequest.cli._options import default_store_path

        return default_store_path(settings.store)
    if dotted == "store.cache_dir":
        from tablequest.llm import default_cache_dir

        return default_cache_dir(settings.store)
    if dotted == "traces.dir":
        from tablequest.trace import default_trace_dir

        return default_trace_dir(settings.traces)
    if dotted == "serve.token_file":
        from tablequest.service import default_token_file

        return default_token_file()
    if dotted == "sandbox.memory_budget_mb":
        from tablequest.sandbox import Sandbox

        return Sandbox.from_settings(settings).budget.total_mb
    if dotted == "embeddings.device":
        return "auto"  # the encoders' `requested_device` when unset (not a corpus export)
    return None


def register(root: typer.Typer) -> None:
    """Add the ``config`` group to the root application."""
    root.add_typer(app, name="config")
