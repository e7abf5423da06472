"""The command's one `Settings` load: its flags over the environment over the config files.

``--config-file PATH`` (`tablequest.cli._options.ConfigFileOpt`) names the command's only
config file: the command passes it to `load_settings`, which passes it to `Settings.load` as
``config_path`` (never through the environment). A command loads once, at its start, and
passes the sections down.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tablequest.settings import Settings

__all__ = ["load_settings", "loaded_or_fail"]


def load_settings(
    flags: Mapping[str, Any] | None = None, config_file: Path | None = None
) -> Settings:
    """`Settings.load` with the command's flags (``{"section.key": value}``, None: not
    given) and its ``--config-file`` (None: found as usual).

    Raises:
        SettingsError: a value of the wrong type, or an unknown key in a section.
        ConfigFileError: a named file is missing, or a file is unreadable or not TOML.
    """
    from tablequest.settings import Settings

    return Settings.load(flags, config_path=config_file)


def loaded_or_fail(
    flags: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
    *,
    json_out: bool = False,
) -> Settings:
    """`load_settings`, or one ``error:`` line naming the bad value or file, and exit 2."""
    from tablequest.cli._output import fail_on
    from tablequest.configfile import ConfigFileError

    try:
        return load_settings(flags, config_file)
    except ConfigFileError as exc:  # SettingsError too
        fail_on(exc, json_out=json_out)
