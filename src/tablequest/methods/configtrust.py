"""Every key an untrusted ``tablequest.toml`` sets that is ignored, across all its readers.

The readers each guard their own section (`tablequest.configfile.GUARDED` for [llm],
[embeddings], [reading], [scale] and [sandbox]; `tablequest.methods.options.untrusted_options`
for [methods.NAME]); this module lists them together for the one warning the CLI prints,
``tablequest config show`` and ``tablequest doctor``. It sits in the methods layer because
[methods.NAME] needs the registry to know which options are server-only.
"""

from __future__ import annotations

from pathlib import Path

from tablequest import configfile
from tablequest.configfile import ConfigFile, ConfigFileError
from tablequest.methods.options import MethodOptions, OptionError, untrusted_options
from tablequest.methods.registry import UnknownMethod, get_method

__all__ = ["guarded_keys", "untrusted_notes"]


def _options_class(method: str) -> type[MethodOptions] | None:
    try:
        return get_method(method).options
    except UnknownMethod:
        return None  # no class: an untrusted file sets none of its options


def guarded_keys(file: ConfigFile) -> list[str]:
    """The keys `file` sets that are ignored because it is not trusted (``[llm] url``, …);
    [] for a trusted file.

    Raises:
        ConfigFileError, OptionError: a section is not a table.
    """
    out = []
    for section in configfile.GUARDED:
        out += [f"[{section}] {key}" for key in file.allowed(section)[1]]
    methods = file.data.get("methods", {})
    for name in methods if isinstance(methods, dict) else ():
        _kept, ignored = untrusted_options(name, file, _options_class(name))
        out += [f"[methods.{name}] {key}" for key in ignored]
    return out


def untrusted_notes(cwd: Path | None = None, *, named: Path | None = None) -> list[str]:
    """One warning per untrusted config file that sets guarded keys (none with a `named`
    file: the only one read, trusted). A file that cannot be read gives none here: the
    command that reads it reports the error."""
    try:
        return [
            configfile.untrusted_note(f, keys)
            for f in configfile.find(cwd, named=named)
            if not f.trusted and (keys := guarded_keys(f))
        ]
    except (ConfigFileError, OptionError):
        return []
