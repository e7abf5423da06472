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

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from tablequest import configfile
from tablequest.configfile import ConfigFileError
from tablequest.settings import load_section

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


def resolve(
    isolation: str | None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
) -> tuple[Isolation, str]:
    """(isolation, where it came from): argument > environment > tablequest.toml > strict.

    The last three are the ``[sandbox] isolation`` setting (`tablequest.settings`: its
    precedence, and the trust rule that an untrusted file cannot ask for "degraded"); an
    entry point that loaded the settings passes their value as the argument.
    """
    if isolation is not None:
        return _check(isolation, "isolation"), "argument"
    try:
        files = configfile.find(cwd, env=env)
        section, sources, _ignored = load_section("sandbox", env=env, files=files)
    except ConfigFileError as exc:  # SettingsError too: the message names the source
        raise InvalidArgument(str(exc)) from exc
    source = sources["isolation"]
    return _check(section.isolation, source), source.removeprefix("$")


def refusal(reason: str) -> str:
    """The one-line message when only degraded modes would work here."""
    return (
        f"refusing to run generated code without bubblewrap ({reason}); install it "
        f"({INSTALL}) or set {ENV}=degraded to accept weaker isolation (docs/security.md)"
    )
