"""Writing ``tablequest.toml``: `config init`, `config set` and `config get` (issue 39).

`commented_config()` is a config file in which every key a file may set is present but
commented out, with its help line and default, section by section: uncommenting a line is
all a user does. `lookup_setting(KEY)` finds a setting by ``section.key`` (an unknown one is
an error naming the section's keys, or the sections); `set_value(path, KEY, VALUE)` checks
VALUE with the setting's own parser (the error names the allowed values) and writes it into
the file, replacing the key's line (commented or not) in its section, adding the section when
missing, and keeping every other line and comment as it was. The file is parsed again before it is
replaced, so a write never leaves invalid TOML.

Choices (ours): the TOML written is a small subset (strings as JSON-escaped basic strings,
numbers, booleans, arrays of strings); a value the parser reads as unset ("", "none") is
written as the string given. A key that a file may not set (``not in toml``) is refused,
naming its variable or flag instead.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from tablequest.settings._docs import _default
from tablequest.settings._load import Settings, spec_of
from tablequest.settings._sections import SECTIONS
from tablequest.settings._spec import SPEC, Invalid, Setting, SettingsError

__all__ = ["commented_config", "lookup_setting", "set_value", "shown_value", "toml_literal"]


def lookup_setting(dotted: str) -> tuple[str, str, Setting]:
    """(section, key, its `Setting`) of ``section.key``.

    Raises:
        SettingsError: no such section or key (naming the known ones).
    """
    name, _, key = dotted.strip().partition(".")
    if name not in SECTIONS:
        raise SettingsError(f"unknown setting {dotted!r}: sections are {', '.join(SECTIONS)}")
    keys = [f.name for f in fields(SECTIONS[name])]
    if key not in keys:
        known = ", ".join(f"{name}.{k}" for k in keys)
        raise SettingsError(f"unknown setting {dotted!r}; [{name}] has {known}")
    return name, key, spec_of(SECTIONS[name], key)


def parse_value(dotted: str, raw: str) -> Any:
    """VALUE (a command-line string) read by the setting's parser: the typed value.

    Raises:
        SettingsError: a key a file may not set, or a value its parser refuses (named).
    """
    name, key, spec = lookup_setting(dotted)
    if not spec.toml:
        ways = ", ".join([*(f"${v}" for v in spec.env), *([spec.flag] if spec.flag else [])])
        raise SettingsError(f"{dotted} is not read from tablequest.toml; set it with {ways}")
    value: Any = raw
    if _is_list(name, key):
        value = [part.strip() for part in raw.split(",") if part.strip()]
    try:
        return spec.parse(value, dotted)
    except SettingsError:
        raise
    except (Invalid, TypeError, ValueError) as exc:
        raise SettingsError(f"invalid {dotted} = {raw!r} ({exc})") from None


def _is_list(name: str, key: str) -> bool:
    field = next(f for f in fields(SECTIONS[name]) if f.name == key)
    return isinstance(field.default, tuple)


def toml_literal(value: Any) -> str:
    """`value` as a TOML value (the subset `set_value` writes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def set_value(path: Path, dotted: str, raw: str) -> Any:
    """Write ``section.key = VALUE`` into the config file at `path` (created when missing);
    returns the typed value. Raises SettingsError (see `parse_value`), or when the file is
    not valid TOML before or after."""
    name, key, _ = lookup_setting(dotted)
    value = parse_value(dotted, raw)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"cannot edit {str(path)!r}: it is not valid TOML ({exc})") from None
    line = f"{key} = {toml_literal(raw if value is None else value)}"
    updated = _with_line(text, name, key, line)
    written = tomllib.loads(updated)  # the subset written is always valid TOML
    assert key in written.get(name, {}), updated
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(updated, encoding="utf-8")
    os.replace(tmp, path)
    return value


def _with_line(text: str, section: str, key: str, line: str) -> str:
    """`text` with `line` as the one setting of `key` in `[section]`."""
    lines = text.splitlines()
    header = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")
    own = re.compile(rf"^\s*#?\s*{re.escape(key)}\s*=")
    start = next((i for i, ln in enumerate(lines) if (m := header.match(ln)) and
                  m.group(1).strip() == section), None)  # fmt: skip
    if start is None:
        tail = ["", f"[{section}]", line] if lines else [f"[{section}]", line]
        return "\n".join([*lines, *tail]) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if header.match(lines[i])), len(lines))
    at = [i for i in range(start + 1, end) if own.match(lines[i])]
    live = [i for i in at if not lines[i].lstrip().startswith("#")]
    if live or at:
        keep = (live or at)[0]
        lines[keep] = line
        lines = [ln for i, ln in enumerate(lines) if i == keep or i not in live]
    else:
        lines.insert(start + 1, line)
    return "\n".join(lines) + "\n"


def commented_config() -> str:
    """A ``tablequest.toml`` with every key a file may set commented out (module doc)."""
    out = [
        "# tablequest configuration (docs/config.md). Uncomment a line to set it; flags and",
        "# environment variables still win. `tablequest config set KEY VALUE` edits this file,",
        "# `tablequest config show` prints every effective value and where it came from.",
    ]
    for name, section in SECTIONS.items():
        settable = [f for f in fields(section) if f.metadata[SPEC].toml]
        if settable:  # a section of environment-only keys ([traces]) is left out
            out += ["", f"[{name}]"]
        for f in settable:
            spec: Setting = f.metadata[SPEC]
            default = f.default if f.default is not MISSING else None
            out.append(f"# {spec.help} (default: {_default(default, spec)})")
            sample = "" if default is None else toml_literal(default)
            out.append(f"# {f.name} = {sample}".rstrip())
    return "\n".join(out) + "\n"


def shown_value(settings: Settings, dotted: str) -> Any:
    """The effective value of ``section.key`` as JSON shows it (a secret as ``***``)."""
    name, key, spec = lookup_setting(dotted)
    value = getattr(getattr(settings, name), key)
    if spec.secret and value is not None:
        return "***"
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value
