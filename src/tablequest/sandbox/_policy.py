"""Whether generated code may run without bubblewrap: refused by default, degraded on opt-in.

Without bubblewrap the child has no file-system view of its own and, in a container without
namespaces, no pid or network namespace either; its remaining layers (unprivileged uid,
Landlock, seccomp, rlimits) hold against the attacks we know, but one kernel layer less is one
mistake less tolerated. So the weaker modes are refused unless the user opts in, in this order:
the `isolation=` argument of `Sandbox`, the `TABLEQUEST_SANDBOX` environment variable, then
`isolation` under `[sandbox]` in `tablequest.toml` (working directory, then the user config
directory). Values: "strict" (bubblewrap only; the default) or "degraded".
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from ._types import InvalidArgument

Isolation = Literal["strict", "degraded"]
ENV = "TABLEQUEST_SANDBOX"
CONFIG_FILE = "tablequest.toml"
VALUES: tuple[Isolation, ...] = ("strict", "degraded")
INSTALL = "apt-get install bubblewrap"


def _check(value: object, where: str) -> Isolation:
    if value == "strict" or value == "degraded":
        return value
    raise InvalidArgument(f"{where} must be 'strict' or 'degraded', got {value!r}")


def _config_files(cwd: Path) -> list[Path]:
    found = [cwd / CONFIG_FILE]
    try:
        import platformdirs

        found.append(platformdirs.user_config_path("tablequest") / CONFIG_FILE)
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        pass
    return [p for p in found if p.is_file()]


def _from_config(cwd: Path) -> tuple[Isolation, str] | None:
    for path in _config_files(cwd):
        try:
            with path.open("rb") as fh:
                section = tomllib.load(fh).get("sandbox", {})
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InvalidArgument(f"cannot read {str(path)!r}: {exc}") from exc
        if isinstance(section, dict) and "isolation" in section:
            where = f"isolation under [sandbox] in {path}"
            return _check(section["isolation"], where), str(path)
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
    found = _from_config(Path(cwd) if cwd is not None else Path.cwd())
    return found if found is not None else ("strict", "default")


def refusal(reason: str) -> str:
    """The one-line message when only degraded modes would work here."""
    return (
        f"refusing to run generated code without bubblewrap ({reason}); install it "
        f"({INSTALL}) or set {ENV}=degraded to accept weaker isolation (docs/security.md)"
    )
