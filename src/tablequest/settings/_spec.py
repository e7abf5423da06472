"""How one setting is declared (`setting`) and how its raw values are read (the parsers).

A setting is a field of a frozen section dataclass whose metadata holds a `Setting`: its
environment variables, help text, whether an untrusted ``tablequest.toml`` may set it, the
flag that sets it and the parser that turns a raw value (a string from the environment or a
flag, a TOML value) into the field's type. A parser raises `Invalid` with a reason (the
loader names the source and the key) or `SettingsError` with the whole message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tablequest.configfile import ConfigFileError
from tablequest.errors import BadValue

SPEC = "tablequest.setting"
Parser = Callable[[Any, str], Any]
"""(raw value, where it came from: ``$NAME``, a file, ``--flag``) → the typed value."""


class SettingsError(ConfigFileError):
    """A setting whose value cannot be used; the message names where it came from."""


class Invalid(BadValue):
    """A parser's reason; the loader adds where the value came from and the key."""


@dataclass(frozen=True)
class Setting:
    """What a settings field is besides its type and default (the docs render it).

    Attributes:
        help: One sentence for the docs and ``config show``.
        parse: Reads a raw value (see `Parser`).
        env: Environment variables, the first set wins.
        flag: The CLI flag or option that sets it ("" when none; ``NAME`` in it stands
            for the key, and what follows ``=`` or `` (`` is left out of error messages).
        guarded: Why an untrusted ``tablequest.toml`` cannot set it ("" when it can); the
            rule itself is `tablequest.configfile.GUARDED` (a test checks they agree).
        toml: Whether ``tablequest.toml`` may set it (under the section's table).
        secret: Shown as ``***`` by ``config show``.
        default_text: The default in words, when the field's default is a placeholder.
    """

    help: str
    parse: Parser
    env: tuple[str, ...] = ()
    flag: str = ""
    guarded: str = ""
    toml: bool = True
    secret: bool = False
    default_text: str = ""


def setting(default: Any, help: str, parse: Parser, **spec: Any) -> Any:
    """A dataclass field with its `Setting` (the keyword arguments) in its metadata."""
    env = spec.pop("env", ())
    meta = Setting(help, parse, (env,) if isinstance(env, str) else tuple(env), **spec)
    return field(default=default, metadata={SPEC: meta})


# -- parsers -----------------------------------------------------------------------------------
def text(raw: Any, _where: str) -> str | None:
    """A string; empty means unset (None)."""
    if not isinstance(raw, str):
        raise Invalid("expected a string")
    return raw.strip() or None


def filepath(raw: Any, where: str) -> Path | None:
    """A path (``~`` expanded); empty means unset."""
    value = text(str(raw) if isinstance(raw, Path) else raw, where)
    return None if value is None else Path(value).expanduser()


def boolean(raw: Any, _where: str) -> bool:
    """true/false (also 1/0, yes/no, on/off as strings)."""
    if isinstance(raw, str):
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise Invalid("expected true or false")
    if not isinstance(raw, bool):
        raise Invalid("expected true or false")
    return raw


@dataclass(frozen=True)
class Number:
    """A finite number of `kind`, positive (or also 0 with `zero`), within `least`..`most`
    when given: the one range of a setting and of its flag (tests/test_settings.py checks
    that the flags' ``min``/``max`` equal these)."""

    kind: type[int] | type[float]
    zero: bool = False
    least: float | None = None
    most: float | None = None

    def __call__(self, raw: Any, _where: str) -> int | float:
        if isinstance(raw, bool):
            raise Invalid("expected a number")
        if self.kind is int and isinstance(raw, float) and not raw.is_integer():
            raise Invalid("expected a whole number")  # int() would truncate 8765.9 to 8765
        try:
            value = self.kind(raw.strip() if isinstance(raw, str) else raw)
        except (TypeError, ValueError, OverflowError):
            raise Invalid(f"expected a {'whole ' if self.kind is int else ''}number") from None
        if not math.isfinite(value):
            raise Invalid("must be a finite number")
        if value < 0 or (value == 0 and not self.zero):
            raise Invalid("must be >= 0" if self.zero else "must be positive")
        if not (self.least is None or value >= self.least) or not (
            self.most is None or value <= self.most
        ):
            raise Invalid(f"must be {self.range()}")
        return value

    def range(self) -> str:
        """The allowed values in words: ``between 1 and 65535``, ``at least 0.1``."""
        least = self.least if self.least is not None else (0 if self.zero else None)
        if self.most is not None:
            return f"between {least if least is not None else 0:g} and {self.most:g}"
        return f"at least {least:g}" if least is not None else "positive"


def number(
    kind: type[int] | type[float],
    *,
    zero: bool = False,
    least: float | None = None,
    most: float | None = None,
) -> Number:
    """A finite number of `kind`, positive (or also 0 with `zero`), within `least`..`most`."""
    return Number(kind, zero, least, most)


def seconds(raw: Any, where: str) -> float:
    """A number of seconds; a negative one counts as 0."""
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise SettingsError(f"{where}={raw!r} is not a number of seconds")
    return max(0.0, value)


def megabytes(raw: Any, where: str) -> int:
    """A positive whole number of MB."""
    try:
        value = int(raw) if not isinstance(raw, bool) else 0
    except (TypeError, ValueError):
        value = 0
    if value <= 0:
        raise SettingsError(f"{where} must be a positive number of MB, got {raw!r}")
    return value


def limit(fractional: bool) -> Parser:
    """A reading-budget limit: a non-negative number; 0 or "none" removes the limit."""

    def parse(raw: Any, where: str) -> int | float | None:
        return parse_limit(str(raw).strip(), where, fractional)

    return parse


def parse_limit(raw: str, name: str, fractional: bool) -> int | float | None:
    """`raw` as a limit for setting `name`: a non-negative number; 0 or "none" = no limit.

    Raises:
        SettingsError: anything else (the message names `name` and the value).
    """
    if raw.lower() in ("none", "off", "unlimited"):
        return None
    try:
        value: int | float = float(raw) if fractional else int(raw.replace("_", ""))
    except ValueError:
        kind = "a number of seconds" if fractional else "a whole number"
        raise SettingsError(f"{name}={raw!r}: expected {kind}, 0 or 'none' (no limit)") from None
    if value < 0 or not math.isfinite(value):
        raise SettingsError(f"{name}={raw!r}: must not be negative (0 or 'none': no limit)")
    return value or None


def count(raw: Any, where: str) -> int | None:
    """A whole number of items; 0 means no limit."""
    if not str(raw).strip().isdigit():
        raise SettingsError(f"{where}={raw!r} is not a whole number (0 means no limit)")
    return int(str(raw).strip()) or None


_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_BYTES = re.compile(r"^(\d+)\s*([KMG]?)(?:I?B)?$", re.IGNORECASE)


def byte_size(raw: Any, where: str) -> int | None:
    """Bytes, e.g. 500M or 2G; 0 means no limit."""
    match = _BYTES.match(str(raw).strip())
    if match is None or isinstance(raw, bool):
        raise SettingsError(
            f"{where}={raw!r} is not a whole number of bytes, e.g. 500M or 2G (0 means no limit)"
        )
    return int(match[1]) * _UNITS[match[2].upper()] or None


def days(raw: Any, where: str) -> float | None:
    """A number of days, e.g. 30 or 0.5; 0 means no limit."""
    try:
        value = -1.0 if isinstance(raw, bool) else float(raw)
    except (TypeError, ValueError):
        value = -1.0
    if not 0 <= value < float("inf"):
        raise SettingsError(
            f"{where}={raw!r} is not a number of days, e.g. 30 or 0.5 (0 means no limit)"
        )
    return value or None


DEVICE_RE = re.compile(r"auto|cpu|cuda(:\d+)?")


def device(raw: Any, where: str) -> str:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (lower-cased)."""
    value = str(raw).strip().lower()
    if not DEVICE_RE.fullmatch(value):
        raise SettingsError(f"{where}: unknown device {raw!r}; use auto, cpu, cuda or cuda:N")
    return value


def choice(*values: str) -> Parser:
    """One of `values`."""

    def parse(raw: Any, where: str) -> str:
        if raw not in values:
            allowed = " or ".join(repr(v) for v in values)
            raise SettingsError(f"{where} must be {allowed}, got {raw!r}")
        return str(raw)

    return parse


def strings(raw: Any, _where: str) -> tuple[str, ...]:
    """A list of strings (a TOML array); duplicates dropped, order kept."""
    if not isinstance(raw, list | tuple) or not all(isinstance(u, str) for u in raw):
        raise Invalid("expected a list of strings")
    return tuple(dict.fromkeys(raw))
