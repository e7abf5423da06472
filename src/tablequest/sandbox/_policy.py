"""Whether generated code may run without bubblewrap: refused by default, degraded on opt-in.

Without bubblewrap the child has no file-system view of its own and, in a container without
namespaces, no pid or network namespace either; its remaining layers (unprivileged uid,
Landlock, seccomp, rlimits) hold against the attacks we know, but one kernel layer less is one
mistake less tolerated. So the weaker modes are refused unless the user opts in, in this order:
the `isolation=` argument of `Sandbox`, the `TABLEQUEST_SANDBOX` environment variable, then
`isolation` under `[sandbox]` in `tablequest.toml` (working directory, then the user config
directory, or the one file named by ``$TABLEQUEST_CONFIG``). Values: "strict" (bubblewrap
only; the default) or "degraded".

A ``tablequest.toml`` that is not trusted (`tablequest.configfile`: in the working directory
and neither named nor recorded by ``tablequest config trust``) cannot weaken isolation: its
``isolation = "degraded"`` is ignored (the CLI warns; ``tablequest config show`` lists it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from tablequest import configfile
from tablequest.configfile import ConfigFile, ConfigFileError

from ._types import InvalidArgument

Isolation = Literal["strict", "degraded"]
ENV = "TABLEQUEST_SANDBOX"
CONFIG_FILE = configfile.CONFIG_FILE
VALUES: tuple[Isolation, ...] = ("strict", "degraded")
INSTALL = "apt-get install bubblewrap"


def _check(value: object, where: str) -> Isolation:
    if value == "strict" or value == "degraded":
        return value
    raise InvalidArgument(f"{where} must be 'strict' or 'degraded', got {value!r}")


def _files(cwd: Path, env: Mapping[str, str] | None) -> list[ConfigFile]:
    try:
        return configfile.find(cwd, env=env)
    except ConfigFileError as exc:
        raise InvalidArgument(str(exc)) from exc


def _from_config(cwd: Path, env: Mapping[str, str] | None) -> tuple[Isolation, str] | None:
    for file in _files(cwd, env):
        try:
            section, _ignored = file.allowed("sandbox")
        except ConfigFileError as exc:
            raise InvalidArgument(str(exc)) from exc
        if "isolation" in section:
            where = f"isolation under [sandbox] in {file.path}"
            return _check(section["isolation"], where), str(file.path)
    return None


def resolve(
    isolation: str | None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> tuple[Isolation, str]:
    """(isolation, where it came from): argument > environment > tablequest.toml > strict."""
    if isolation is not None:
        return _check(isolation, "isolation"), "argument"
    value = (os.environ if env is None else env).get(ENV, "").strip()
    if value:
        return _check(value, ENV), ENV
    found = _from_config(Path(cwd) if cwd is not None else Path.cwd(), env)
    return found if found is not None else ("strict", "default")


def refusal(reason: str) -> str:
    """The one-line message when only degraded modes would work here."""
    return (
        f"refusing to run generated code without bubblewrap ({reason}); install it "
        f"({INSTALL}) or set {ENV}=degraded to accept weaker isolation (docs/security.md)"
    )
