"""Typed method options: one pydantic model per method, defaults equal to the paper's.

Every method declares its knobs once, as a `MethodOptions` subclass whose fields carry a
description and the source of their default (`option(default, help, paper=...)`). The same
model is filled from every place a user can set options, lowest precedence first:

1. the defaults (the paper's),
2. ``[methods.NAME]`` in ``tablequest.toml`` (`toml_options`),
3. a named paper configuration (``-c 10step-5s1-small``; `MethodOptions.from_config`),
4. ``-o NAME VALUE`` pairs on the command line, or an ``options`` object in the HTTP API.

Values given as strings (the command line) are converted by pydantic's lax mode ("5" → 5,
"true" → True); "none" sets an optional value to None. Errors name the method, the option and
the accepted values (`OptionError`), e.g. ``unknown option 'alpah' for method scope; known:
alpha, k, …``.

From a ``tablequest.toml`` that is not trusted (`tablequest.configfile`), the options a
request to the HTTP API may not set either (declared ``request=False``: URLs, paths, sandbox
settings, memory files) are ignored, and so are cost-bearing options set above their default
(`tablequest.configfile.COST_BOUNDS`) (`toml_options`, `untrusted_options`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.config import JsonDict

from tablequest import configfile
from tablequest.configfile import ConfigFile, ConfigFileError
from tablequest.errors import UsageError

__all__ = [
    "MethodOptions",
    "NoOptions",
    "OptionError",
    "OptionInfo",
    "check_method_names",
    "describe_options",
    "merge_options",
    "option",
    "option_name",
    "toml_options",
    "untrusted_options",
]

_NONE_WORDS = frozenset({"none", "null"})


class OptionError(UsageError):
    """An option that does not exist or has a value of the wrong type or range."""

    code = "bad_option"


def option(
    default: Any,
    help: str,
    *,
    paper: str | None = None,
    request: bool = True,
    **constraints: Any,
) -> Any:
    """A documented option: `help` says what it does, `paper` where the default comes from.

    `request=False` makes it server-side only: it names a path, a URL, a sandbox setting or
    a memory file, so the HTTP API refuses it from a request (the operator sets it in
    tablequest.toml); `request_settable` lists the others. `constraints` are pydantic's
    (``ge=1``, ``le=1.0``, …).
    """
    extra: JsonDict = {"paper": paper} if paper else {}
    if not request:
        extra["server_only"] = True
    return Field(default, description=help, json_schema_extra=extra, **constraints)


def request_settable(cls: type[MethodOptions]) -> frozenset[str]:
    """The options of `cls` a request may set (the allowlist of the HTTP API): every option
    not declared with ``request=False``."""
    return frozenset(
        name
        for name, field in cls.model_fields.items()
        if not (isinstance(field.json_schema_extra, dict)
                and field.json_schema_extra.get("server_only"))
    )  # fmt: skip


class MethodOptions(BaseModel):
    """Base of every method's options: frozen, unknown names refused.

    Subclasses may override `from_config` (named paper configurations) and list examples of
    those names in `CONFIGS`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    CONFIGS: ClassVar[tuple[str, ...]] = ()
    """Examples of named configurations, shown by ``tablequest methods NAME``."""
    NOTES: ClassVar[str] = ""
    """What the defaults are and why, shown by ``tablequest methods NAME`` (empty: nothing)."""

    @classmethod
    def from_config(cls, name: str) -> Self:
        """The options of a named configuration (``-c NAME``).

        Raises:
            OptionError: the method has no such configuration.
        """
        raise OptionError(f"this method has no named configurations (got {name!r})")

    def label(self) -> str:
        """A short name of this configuration for reports (default: the non-default options)."""
        changed = {
            name: getattr(self, name)
            for name, field in type(self).model_fields.items()
            if getattr(self, name) != field.default
        }
        return ",".join(f"{k}={v}" for k, v in changed.items()) or "default"

    def default_steps(self) -> int:
        """The cap on LLM calls per question when ``--steps`` is not given."""
        return 1


class NoOptions(MethodOptions):
    """For methods without options."""


@dataclass(frozen=True)
class OptionInfo:
    """One option as `tablequest methods NAME` lists it."""

    name: str
    type: str
    default: Any
    help: str
    paper: str | None
    request: bool = True
    """False for a server-side option (a path, URL, sandbox setting or memory file)."""


def _type_name(annotation: Any) -> str:
    args = get_args(annotation)
    if getattr(annotation, "__origin__", None) is not None and str(annotation).startswith(
        "typing.Literal"
    ):
        return " | ".join(str(a) for a in args)
    if args:
        return " | ".join(_type_name(a) for a in args)
    if annotation is type(None):
        return "none"
    return getattr(annotation, "__name__", str(annotation))


def describe_options(cls: type[MethodOptions]) -> list[OptionInfo]:
    """Every option of `cls` with its type, default, help and source paper."""
    out = []
    for name, field in cls.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        paper = extra.get("paper")
        out.append(
            OptionInfo(
                name=name,
                type=_type_name(field.annotation),
                default=field.default,
                help=field.description or "",
                paper=str(paper) if paper else None,
                request=not extra.get("server_only", False),
            )
        )
    return out


def _unknown(method: str, cls: type[MethodOptions], names: Iterable[str]) -> None:
    known = sorted(cls.model_fields)
    for name in names:
        if name not in cls.model_fields:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            listed = ", ".join(known) if known else "none"
            raise OptionError(f"unknown option {name!r} for method {method}{hint}; known: {listed}")


def _prepare(cls: type[MethodOptions], values: Mapping[str, Any]) -> dict[str, Any]:
    """Strings "none"/"null" become None where the option allows None."""
    out = dict(values)
    for name, value in values.items():
        field = cls.model_fields[name]
        allows_none = type(None) in get_args(field.annotation)
        if allows_none and isinstance(value, str) and value.strip().lower() in _NONE_WORDS:
            out[name] = None
    return out


def merge_options(
    method: str,
    cls: type[MethodOptions],
    *layers: Mapping[str, Any] | MethodOptions | None,
) -> MethodOptions:
    """Options of `cls` from layers, lowest precedence first (a later layer wins).

    A layer is a mapping of option names to values (strings are converted) or a ready
    `MethodOptions` (only the values it sets explicitly count, so a named configuration does
    not reset options a lower layer set and it left alone).

    Raises:
        OptionError: an unknown option or an invalid value; the message names both.
    """
    values: dict[str, Any] = {}
    for layer in layers:
        if layer is None:
            continue
        if isinstance(layer, MethodOptions):
            values.update({k: getattr(layer, k) for k in layer.model_fields_set})
            continue
        _unknown(method, cls, layer)
        values.update(_prepare(cls, layer))
    try:
        return cls.model_validate(values)
    except ValidationError as exc:
        raise OptionError(_validation_message(method, exc)) from None


def _validation_message(method: str, exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        name = ".".join(str(p) for p in error["loc"]) or "options"
        value = error.get("input")
        parts.append(f"option {name!r} of method {method}: {error['msg']} (got {value!r})")
    return "; ".join(parts)


def option_name(name: str) -> str:
    """``route.fit-fraction`` → ``route_fit_fraction`` (dots and dashes as underscores)."""
    return name.strip().replace("-", "_").replace(".", "_")


def _flatten(section: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """TOML dotted keys (``route.big = "rag"``) are nested tables: flatten them."""
    out: dict[str, Any] = {}
    for key, value in section.items():
        name = option_name(f"{prefix}{key}")
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}_"))
        else:
            out[name] = value
    return out


def untrusted_options(
    method: str, file: ConfigFile, cls: type[MethodOptions] | None
) -> tuple[dict[str, Any], list[str]]:
    """(the options of ``[methods.METHOD]`` in `file` that apply, the names ignored): an
    untrusted file sets only request-settable options of `cls` (none when `cls` is None),
    cost-bearing ones at most to their default (`configfile.COST_BOUNDS`).

    Raises:
        OptionError: the section is not a table.
    """
    try:
        values = _flatten(file.section(f"methods.{method}"))
    except ConfigFileError as exc:
        raise OptionError(str(exc)) from exc
    if file.trusted:
        return values, []
    if cls is None:
        return {}, list(values)
    allowed = request_settable(cls)
    section = f"methods.{method}"
    # an unknown name is kept, so that merge_options names it as usual; a cost-bearing one
    # above its default is ignored (issue 40: samples, depths, steps on the user's key)
    ignored = [
        k for k, v in values.items()
        if k in cls.model_fields and (k not in allowed or configfile.costlier(section, k, v))
    ]  # fmt: skip
    return {k: v for k, v in values.items() if k not in ignored}, ignored


def check_method_names(file: ConfigFile, known: Iterable[str]) -> None:
    """Every ``[methods.NAME]`` of `file` names one of the `known` methods (a typo, or a
    plugin that is not installed, would otherwise be ignored without a word).

    Raises:
        OptionError: an unknown NAME (with the closest known one, and the known ones).
    """
    methods = file.data.get("methods", {})
    names = sorted(known)
    for name in methods if isinstance(methods, dict) else ():
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f" (did you mean [methods.{close[0]}]?)" if close else ""
            listed = ", ".join(names) or "none"
            raise OptionError(f"{file.path}: no method {name!r} for [methods.{name}]{hint}; "
                              f"registered: {listed}")  # fmt: skip


def toml_options(
    method: str,
    files: Iterable[Path | ConfigFile] | None = None,
    options: type[MethodOptions] | None = None,
    known: Iterable[str] | None = None,
) -> dict[str, Any]:
    """``[methods.METHOD]`` of the config files (highest precedence first), merged.

    `files` default: `tablequest.configfile.find()`. A `Path` is a file the caller named
    (trusted); a `ConfigFile` carries its own trust, and an untrusted one sets only the
    request-settable options of `options` (`untrusted_options`). With `known` (the
    registered methods), every ``[methods.NAME]`` must name one (`check_method_names`).

    Raises:
        OptionError: a file is unreadable, the section is not a table, or an unknown NAME.
    """
    merged: dict[str, Any] = {}
    try:
        found = configfile.find() if files is None else list(files)
    except ConfigFileError as exc:
        raise OptionError(str(exc)) from exc
    for item in reversed(found):
        try:
            file = configfile.load(item, named=True) if isinstance(item, Path) else item
        except ConfigFileError as exc:
            raise OptionError(str(exc)) from exc
        if known is not None:
            check_method_names(file, known)
        values, _ignored = untrusted_options(method, file, options)
        merged.update(values)
    return merged
