"""docs/config.md, rendered from the settings' declarations (`markdown`).

``python -m tablequest.settings`` prints it; ``python -m tablequest.settings --write`` writes
docs/config.md; tests/test_settings.py fails when the file differs from what this renders.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any

from tablequest.configfile import COST_BOUNDS
from tablequest.settings._sections import SECTIONS
from tablequest.settings._spec import SPEC, Number, Setting

HEADER = """\
# Configuration

<!-- Generated from src/tablequest/settings by `python -m tablequest.settings --write`;
do not edit by hand: tests/test_settings.py fails when this file differs. -->

Every setting below has a default. Each is set, highest precedence first, by:

1. a **flag** of the command (or the argument of the Python call);
2. the **environment** (the variables named; the first one set wins);
3. **`tablequest.toml`**: the key under its section's table (`[llm] url = "…"`), from the
   file named by `--config-file PATH` or `$TABLEQUEST_CONFIG` (then the only file read),
   else the one in the working directory, then the one in the user config directory;
4. the **default**.

A `tablequest.toml` that is neither named, in the user config directory, nor trusted by
`tablequest config trust` cannot set the keys marked *guarded*: those that choose where
prompts, tables and the key go, that weaken a protection, or (above their default) that raise
what a question costs (docs/security.md). Such a key is ignored with one warning. Keys marked
*not in toml* are set by flag or environment only.

`tablequest config show` prints every effective value and where it came from (`--json`
too). Method options (`[methods.NAME]`, `-o NAME VALUE`) are documented by
`tablequest methods NAME`; model prices (`[prices]`) in docs/llm.md.
"""


def _default(value: Any, spec: Setting) -> str:
    if spec.default_text:
        return spec.default_text
    if value is None or value == ():
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:_}"
    return str(value)


def _row(section: str, name: str, kind: str, default: Any, spec: Setting) -> str:
    env = ", ".join(f"`{v}`" for v in spec.env) or "—"
    flag = f"`{spec.flag}`" if spec.flag else "—"
    if not spec.toml:
        where = "not in toml"
    elif spec.guarded:
        where = f"`{name}`, guarded: {spec.guarded}"
    else:
        where = f"`{name}`"
    kind = f"`{kind}`"
    if isinstance(spec.parse, Number) and (spec.parse.least or spec.parse.most) is not None:
        kind += f", {spec.parse.range()}"
    cells = [f"`{section}.{name}`", kind, _default(default, spec), env, flag, where]
    cells.append(spec.help)
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def markdown() -> str:
    """docs/config.md: the precedence, then one table per section."""
    out = [HEADER]
    for name, section in SECTIONS.items():
        doc = " ".join((section.__doc__ or "").split())
        out += [f"## [{name}]", "", doc, ""]
        out.append("| setting | type | default | environment | flag | tablequest.toml | meaning |")
        out.append("|---|---|---|---|---|---|---|")
        for f in fields(section):
            default = f.default if f.default is not MISSING else None
            out.append(_row(name, f.name, str(f.type), default, f.metadata[SPEC]))
        out.append("")
    return "\n".join(out + _costs())


COSTS_HEADER = """## Cost-bearing keys

More of these means more model calls, tokens or time on your key (issue 40). An untrusted
`tablequest.toml` may set each at most to its default (more is ignored with the warning); a
request to `tablequest serve` (`POST /v1/ask`) or to `tablequest mcp` (`ask`) at most to the
server's maximum (more: 422 naming the option); flags, `-o` and trusted files set any value.
`[ask] steps` is the `steps` of a request (the CLI's `--steps`). The one table is
`tablequest.configfile.COST_BOUNDS`.

| key | untrusted file: at most | request: at most |
|---|---|---|"""


def _costs() -> list[str]:
    """The table of `COST_BOUNDS` (docs/config.md's last section)."""
    rows = [COSTS_HEADER]
    for section, bounds in COST_BOUNDS.items():
        for key, bound in bounds.items():
            free = "not in toml" if bound.free is None else f"{bound.free:_g}"
            if bound.zero_is_none:
                free += " (not 0: none)"
            most = "not in a request" if bound.most is None else f"{bound.most:_g}"
            rows.append(f"| `[{section}] {key}` | {free} | {most} |")
    return [*rows, ""]
