"""Loading the settings once: flags > environment > tablequest.toml (trust applied) > defaults.

`Settings.load` reads the config files once (`tablequest.configfile.find`: a named file, else
the working directory's then the user config directory's), applies the trust rules of
`tablequest.configfile` (an untrusted file's guarded keys are ignored, with one note per
file in `Settings.notes`), then the environment, then the flags. `Settings.sources` says
where each value came from: ``flag``, ``$NAME``, a file's path or ``default``.

`from_env` reads one section from the environment and the defaults only: the fallback of
library functions called without settings, which read just the environment before.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from tablequest import configfile
from tablequest.configfile import ConfigFile
from tablequest.settings._sections import (
    SECTIONS,
    EmbeddingsSettings,
    LLMSettings,
    ReadingSettings,
    SandboxSettings,
    ScaleSettings,
    ServeSettings,
    StoreSettings,
    TracesSettings,
)
from tablequest.settings._spec import SPEC, Invalid, Setting, SettingsError

S = TypeVar("S")


def spec_of(section: type, key: str) -> Setting:
    """The `Setting` of field `key` of the section class."""
    for f in fields(section):
        if f.name == key:
            spec: Setting = f.metadata[SPEC]
            return spec
    raise KeyError(key)


def _parse(spec: Setting, key: str, raw: Any, where: str) -> Any:
    try:
        return spec.parse(raw, where)
    except SettingsError:
        raise
    except (Invalid, TypeError, ValueError) as exc:
        raise SettingsError(f"{where}: invalid {key} = {raw!r} ({exc})") from None


def _from_files(
    name: str, files: list[ConfigFile], values: dict[str, Any], sources: dict[str, str]
) -> dict[Path, list[str]]:
    """Fill `values` from section `name` of each file (lowest precedence first); returns the
    guarded keys ignored per untrusted file."""
    section = SECTIONS[name]
    known = [f.name for f in fields(section) if f.metadata[SPEC].toml]
    ignored: dict[Path, list[str]] = {}
    for file in reversed(files):
        allowed, skipped = file.allowed(name)
        unknown = set(allowed) - set(known)
        if unknown:
            raise SettingsError(
                f"{file.path}: unknown [{name}] key(s) {sorted(unknown)}; known: {tuple(known)}"
            )
        if skipped:
            ignored.setdefault(file.path, []).extend(f"[{name}] {key}" for key in skipped)
        for key, raw in allowed.items():
            where = f"{key} under [{name}] in {file.path}"
            values[key] = _parse(spec_of(section, key), key, raw, where)
            sources[key] = str(file.path)
    return ignored


OTHER_TABLES = ("methods", "prices")
"""Top-level tables read outside `SECTIONS`: ``[methods.NAME]`` (`tablequest.methods`, which
checks NAME against its registry) and ``[prices]`` (`tablequest.llm`)."""


def check_tables(files: list[ConfigFile]) -> None:
    """Every top-level table of `files` is one some reader reads (a typo such as ``[lm]``
    would otherwise be ignored without a word).

    Raises:
        SettingsError: an unknown table or top-level key, naming the file and the known ones.
    """
    known = [*SECTIONS, *OTHER_TABLES]
    listed = ", ".join(f"[{name}]" for name in known)
    for file in files:
        for name, value in file.data.items():
            if name in known:
                continue
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean [{close[0]}]?)" if close else ""
            what = f"section [{name}]" if isinstance(value, dict) else f"top-level key {name!r}"
            raise SettingsError(f"{file.path}: unknown {what}{hint}; known: {listed}")


def _from_env(
    name: str, env: Mapping[str, str], values: dict[str, Any], sources: dict[str, str]
) -> None:
    for f in fields(SECTIONS[name]):
        spec: Setting = f.metadata[SPEC]
        for var in spec.env:
            raw = env.get(var, "").strip()
            if raw:
                values[f.name] = _parse(spec, f.name, raw, f"${var}")
                sources[f.name] = f"${var}"
                break


def load_section(
    name: str,
    *,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    files: list[ConfigFile] | None = None,
) -> tuple[Any, dict[str, str], dict[Path, list[str]]]:
    """(section `name`, where each field came from, guarded keys ignored per file).

    `flags` maps field names to values (None: not given); `files` are the config files,
    highest precedence first (None: none).

    Raises:
        SettingsError: a value of the wrong type, or an unknown key in a file's section.
        ConfigFileError: a file's section is not a table.
    """
    section = SECTIONS[name]
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    ignored = _from_files(name, files or [], values, sources)
    _from_env(name, os.environ if env is None else env, values, sources)
    for key, raw in (flags or {}).items():
        if raw is None:
            continue
        spec = spec_of(section, key)
        label = spec.flag.split(" (")[0].split("=")[0].replace("NAME", key)
        where = label or "--" + key.replace("_", "-")
        values[key] = _parse(spec, key, raw, where)
        sources[key] = "flag"
    for f in fields(section):
        sources.setdefault(f.name, "default")
    return section(**values), sources, ignored


def from_env(section: type[S], env: Mapping[str, str] | None = None) -> S:
    """A section from the environment and the defaults (no files, no flags).

    Raises:
        SettingsError: a variable holds a value of the wrong type.
    """
    name = next(n for n, cls in SECTIONS.items() if cls is section)
    value: S = load_section(name, env=env)[0]
    return value


@dataclass(frozen=True)
class Settings:
    """Every setting, loaded once (`load`) and passed down; a frozen, picklable value."""

    llm: LLMSettings = field(default_factory=LLMSettings)
    embeddings: EmbeddingsSettings = field(default_factory=EmbeddingsSettings)
    reading: ReadingSettings = field(default_factory=ReadingSettings)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    traces: TracesSettings = field(default_factory=TracesSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    scale: ScaleSettings = field(default_factory=ScaleSettings)
    serve: ServeSettings = field(default_factory=ServeSettings)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False)
    """``section.key`` → ``flag``, ``$NAME``, a config file's path or ``default``."""
    notes: tuple[str, ...] = field(default=(), compare=False)
    """One warning per untrusted file whose guarded keys were ignored (for the CLI)."""
    files: tuple[ConfigFile, ...] = field(default=(), compare=False)
    """The config files read, highest precedence first (other readers use their tables)."""

    @classmethod
    def load(
        cls,
        flags: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        config_path: str | Path | None = None,
    ) -> Settings:
        """Flags (``{"section.key": value}``, None: not given) over the environment over
        the config files (trust applied) over the defaults.

        Args:
            env: The environment (default: ``os.environ``), also for ``$TABLEQUEST_CONFIG``.
            cwd: Where to look for ``tablequest.toml`` (default: the working directory).
            config_path: The one file to read, trusted (as ``--config-file``).

        Raises:
            SettingsError: a value of the wrong type or out of range, an unknown key in a
                section, or an unknown section.
            ConfigFileError: a named file is missing, or a file is unreadable or not TOML.
        """
        environ = os.environ if env is None else env
        files = configfile.find(cwd, env=environ, named=config_path)
        check_tables(files)
        by_section: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        for dotted, value in (flags or {}).items():
            name, _, key = dotted.partition(".")
            by_section[name][key] = value
        sections: dict[str, Any] = {}
        sources: dict[str, str] = {}
        ignored: dict[Path, list[str]] = {}
        for name in SECTIONS:
            value, where, skipped = load_section(
                name, flags=by_section[name], env=environ, files=files
            )
            sections[name] = value
            sources.update({f"{name}.{key}": src for key, src in where.items()})
            for file_path, keys in skipped.items():
                ignored.setdefault(file_path, []).extend(keys)
        notes = tuple(
            configfile.untrusted_note(f, ignored[f.path]) for f in files if f.path in ignored
        )
        return cls(**sections, sources=sources, notes=notes, files=tuple(files))

    def with_flags(self, flags: Mapping[str, Any]) -> Settings:
        """These settings with `flags` (``{"section.key": value}``) applied over them."""
        sections: dict[str, Any] = {}
        sources = dict(self.sources)
        for dotted, raw in flags.items():
            if raw is None:
                continue
            name, _, key = dotted.partition(".")
            current = sections.get(name, getattr(self, name))
            value, where, _ = load_section(name, flags={key: raw}, env={})
            sections[name] = replace(current, **{key: getattr(value, key)})
            sources[dotted] = where[key]
        return replace(self, **sections, sources=sources)

    def demanded_device(self) -> str | None:
        """`embeddings.device` when a flag set it (a demand encoders without a device refuse);
        None when it came from elsewhere (the environment's is a preference: `from_env`)."""
        return self.embeddings.device if self.source("embeddings.device") == "flag" else None

    def source(self, dotted: str) -> str:
        """Where ``section.key`` came from (``default`` when never set)."""
        return self.sources.get(dotted, "default")

    def items(self) -> Iterator[tuple[str, Any, Setting]]:
        """(``section.key``, value, its `Setting`) for every field, sections in order."""
        for name, section in SECTIONS.items():
            current = getattr(self, name)
            for f in fields(section):
                yield f"{name}.{f.name}", getattr(current, f.name), f.metadata[SPEC]
