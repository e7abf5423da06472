"""Which ``tablequest.toml`` files are read, and which of them may choose where data goes.

The settings loader (`tablequest.settings`: every section but the method options) and
[methods.NAME] in `tablequest.methods.options` find their files here, highest precedence
first:

1. a file named explicitly (``--config-file PATH`` or ``$TABLEQUEST_CONFIG``): then it is
   the only file read (the same rule as ``resolve_config(config_path=...)``);
2. otherwise ``tablequest.toml`` in the working directory, then the one in the user config
   directory (``platformdirs.user_config_path("tablequest")``).

Trust (issue 25): a downloaded corpus folder may hold a ``tablequest.toml``; running ``ask``
there must not send the user's API key and table prompts to the file's URL, nor weaken the
sandbox. So a file is *trusted* when it is named explicitly, lies in the user config
directory, or its absolute path and SHA-256 content hash were recorded by ``tablequest
config trust`` (``trusted.json`` in the user config directory, written atomically with mode
0600; an edited file needs trusting again). An untrusted file still sets harmless keys
(concurrency, cache, prices, method options a request to the HTTP API may set, cost-bearing
keys at or below their default), but its *guarded* keys are ignored: those that choose where
prompts, table text or the key go, that weaken isolation, or that raise what a question
costs:

- ``[llm] url``, ``api_key`` and ``model`` (the model too: with the user's key from the
  environment it picks which service, and at what price, receives the tables),
- ``[embeddings] url`` and ``model`` (where table text is sent to be embedded),
- every key of ``[reading]`` (the budget that protects an ingest from the corpus's files),
- ``[scale] llm_urls``,
- ``[sandbox] isolation = "degraded"`` (a file may only ask for the default, "strict"),
- ``[serve] host`` and ``token_file`` (where the server listens, the secret that opens it),
- ``[methods.NAME]`` options declared server-only (``option(..., request=False)``: URLs,
  paths, sandbox settings, memory files — the same allowlist the HTTP API applies to a
  request),
- a cost-bearing key set above its default (`COST_BOUNDS`, issue 40: self-consistency
  samples, depths, steps, paths, retries, tokens per call, ``[llm] deadline`` and
  ``timeout``, 0 meaning "none" included): the file may make a question cheaper on the
  user's key, never dearer.

`COST_BOUNDS` is the one table of those keys: ``free``, the most an untrusted file may set
(the declared default), and ``most``, the most a request to a server (``POST /v1/ask``, MCP
``ask``) may set (`tablequest.service` refuses more with 422 naming the option).

Guarding keys rather than ignoring the whole file keeps a corpus's harmless settings working;
the library never prints: readers return what they ignored and the CLI prints one warning
(`untrusted_note`). The bytes that are hashed are the bytes that are parsed, so a file changed
between the check and the read cannot slip in.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from tablequest.errors import UsageError

CONFIG_FILE = "tablequest.toml"
ENV = "TABLEQUEST_CONFIG"
TRUST_FILE = "trusted.json"
NAMED = "named (--config-file or $TABLEQUEST_CONFIG)"
USER_DIR = "user config directory"
TRUSTED = "trusted (tablequest config trust)"
UNTRUSTED = "in the working directory, never trusted"
CHANGED = "changed since it was trusted"


class ConfigFileError(UsageError):
    """A config file or the trust list that cannot be read; the message names the file."""


def _weakens(key: str, value: Any) -> bool:
    # only the weaker value is guarded: a bad value still fails, naming the file
    return key == "isolation" and value == "degraded"


@dataclass(frozen=True)
class CostBound:
    """A key whose larger values cost more model calls, tokens or time on the user's key."""

    free: float | None
    """The most an untrusted ``tablequest.toml`` may set: the declared default (None: not a
    toml key)."""
    most: float | None
    """The most a request to a server may set (None: a request cannot set it)."""
    zero_is_none: bool = False
    """0 means "no limit" (``[llm] deadline``): the costliest value."""

    def over(self, value: Any, limit: float | None) -> bool:
        """Whether `value` costs more than `limit` allows (a value that is not a number is
        left to the option's own validation, which names it)."""
        if limit is None or isinstance(value, bool):
            return False
        try:
            number = float(value.strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            return False
        if number != number or (self.zero_is_none and number == 0):  # NaN, or "none"
            return True
        return number > limit


def _bounds(**bounds: tuple[float | None, float | None]) -> dict[str, CostBound]:
    return {key: CostBound(free, most) for key, (free, most) in bounds.items()}


_QA = _bounds(max_tokens=(8192, 16_384))
_RETRIEVAL_QA = {**_QA, **_bounds(top_k=(1, 5))}
COST_BOUNDS: dict[str, dict[str, CostBound]] = {
    "llm": {
        "deadline": CostBound(600, None, zero_is_none=True),
        **_bounds(timeout=(60, None), max_retries=(3, None)),
    },
    "ask": _bounds(steps=(None, 100)),
    "methods.rag": _bounds(
        sc=(1, 8),
        max_depth=(5, 10),
        max_queries=(10, 20),
        budget=(10_000, 100_000),
        step_max_tokens=(512, 4096),
        context_tokens=(16_385, 131_072),
    ),
    "methods.scope": _bounds(
        k=(4, 8), repairs=(2, 4), max_tokens=(2048, 8192), qa_max_tokens=(2048, 8192)
    ),
    "methods.research": _bounds(
        k_paths=(4, 8),
        top_k=(2, 4),
        max_replans=(2, 4),
        steps=(8, 32),
        max_tokens=(1024, 4096),
    ),
    "methods.seek": _bounds(
        max_steps=(5, 20),
        rank_depth=(20, 100),
        fallback_top_k=(1, 5),
        max_tokens=(8192, 16_384),
        qa_table_chars=(60_000, 200_000),
    ),
    "methods.auto": _bounds(max_tables=(3, 5)),
    "methods.direct": _QA,
    "methods.no-table": _QA,
    "methods.bm25": _RETRIEVAL_QA,
    "methods.dense": _RETRIEVAL_QA,
    "methods.hybrid": _RETRIEVAL_QA,
    "methods.rerank": {**_RETRIEVAL_QA, **_bounds(rerank_pool=(5, 50))},
}
"""Cost-bearing keys (issue 40), by section (``llm``; ``methods.NAME``; ``ask``: the steps of
a server's ask): an untrusted file may set each up to ``free`` (more is ignored with the
warning), a request up to ``most`` (more is refused, 422). Flags, ``-o`` and trusted files
set any value. docs/security.md lists them; tests/test_configfile.py checks ``free`` against
the declarations."""


def costlier(section: str, key: str, value: Any) -> bool:
    """Whether an untrusted file's `value` of `key` in `section` costs more than its default
    (`COST_BOUNDS`)."""
    bound = COST_BOUNDS.get(section, {}).get(key)
    return bound is not None and bound.over(value, bound.free)


Guard = Callable[[str, Any], bool]
GUARDED: dict[str, Guard] = {
    "llm": lambda key, value: key in ("url", "api_key", "model") or costlier("llm", key, value),
    "embeddings": lambda key, _value: key in ("url", "model"),
    "reading": lambda _key, _value: True,
    "scale": lambda key, _value: key == "llm_urls",
    "sandbox": _weakens,
    "serve": lambda key, _value: key in ("host", "token_file", "allow_origins"),
}
"""Per section: whether a key (with its value) is guarded. [methods.NAME] is guarded by the
method's option declarations (`tablequest.methods.options.toml_options`)."""


@dataclass(frozen=True)
class ConfigFile:
    """One config file as read: its path, whether it is trusted (and why), its TOML."""

    path: Path
    trusted: bool
    why: str
    data: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """The table `name` (dotted for nested: ``methods.rag``), {} when absent.

        Raises:
            ConfigFileError: it is not a table.
        """
        value: Any = self.data
        for part in name.split("."):
            value = value.get(part, {}) if isinstance(value, dict) else None
        if not isinstance(value, dict):
            raise ConfigFileError(f"{self.path}: [{name}] must be a table")
        return value

    def allowed(self, name: str, guard: Guard | None = None) -> tuple[dict[str, Any], list[str]]:
        """(the keys of section `name` this file may set, the keys ignored as guarded).

        `guard` defaults to the section's entry in `GUARDED`; a trusted file sets every key.
        """
        values = self.section(name)
        check = guard or GUARDED.get(name)
        if self.trusted or check is None:
            return dict(values), []
        ignored = [key for key, value in values.items() if check(key, value)]
        return {k: v for k, v in values.items() if k not in ignored}, ignored


def user_dir() -> Path:
    """The user config directory (its ``tablequest.toml`` and ``trusted.json``)."""
    return platformdirs.user_config_path("tablequest")


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _parse(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigFileError(f"cannot read {str(path)!r}: {exc}") from exc


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigFileError(f"cannot read {str(path)!r}: {exc}") from exc


def named_file(env: Mapping[str, str] | None = None) -> Path | None:
    """The file named by ``$TABLEQUEST_CONFIG``, if any (``--config-file`` is passed to the
    readers as ``named``, never written to the environment)."""
    value = (os.environ if env is None else env).get(ENV, "").strip()
    return Path(value).expanduser() if value else None


def load(path: str | Path, *, named: bool = False) -> ConfigFile:
    """One file, with its trust decided: named, in the user config dir, or on the trust list.

    Raises:
        ConfigFileError: the file is missing, unreadable or not valid TOML.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise ConfigFileError(f"config file not found: {str(path)!r}")
    raw = _read(path)
    data = _parse(path, raw)
    resolved = path.resolve()
    if named:
        return ConfigFile(path, True, NAMED, data)
    if resolved == (user_dir() / CONFIG_FILE).resolve():
        return ConfigFile(path, True, USER_DIR, data)
    recorded = trust_list().get(str(resolved))
    if recorded is None:
        return ConfigFile(path, False, UNTRUSTED, data)
    if recorded != _digest(raw):
        return ConfigFile(path, False, CHANGED, data)
    return ConfigFile(path, True, TRUSTED, data)


def find(
    cwd: str | Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    named: str | Path | None = None,
) -> list[ConfigFile]:
    """The config files to read, highest precedence first (see the module doc).

    Args:
        cwd: Where to look for ``tablequest.toml`` (default: the working directory).
        env: Environment for ``$TABLEQUEST_CONFIG`` (default: ``os.environ``).
        named: A file named by the caller: the only one read, trusted.

    Raises:
        ConfigFileError: a named file is missing, or a file is unreadable or not TOML.
    """
    chosen = Path(named) if named is not None else named_file(env)
    if chosen is not None:
        return [load(chosen, named=True)]
    here = Path(cwd or Path.cwd()) / CONFIG_FILE
    home = user_dir() / CONFIG_FILE
    paths = [here] if here.is_file() else []
    if home.is_file() and not (paths and here.resolve() == home.resolve()):
        paths.append(home)
    return [load(p) for p in paths]


def untrusted_note(file: ConfigFile, ignored: list[str]) -> str:
    """The one warning for an untrusted file: what was ignored and the two ways to allow it."""
    state = "was changed since you trusted it" if file.why == CHANGED else "is not trusted"
    return (
        f"warning: {file.path} {state}; ignored {', '.join(ignored)} (settings that choose "
        "where prompts, tables and your key go, weaken the sandbox or raise what a question "
        "costs); if you wrote it, run "
        f"`tablequest config trust {file.path}` or pass --config-file {file.path}"
    )


# -- the trust list ---------------------------------------------------------------------------
def trust_path() -> Path:
    """``trusted.json`` in the user config directory: {absolute path: SHA-256 of content}."""
    return user_dir() / TRUST_FILE


def trust_list() -> dict[str, str]:
    """The trusted files (absolute path → content hash); {} when none were trusted.

    Raises:
        ConfigFileError: the trust list exists but is not what `trust` writes.
    """
    path = trust_path()
    if not path.is_file():
        return {}
    try:
        data = json.loads(_read(path).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigFileError(f"cannot read {str(path)!r}: {exc}; remove it") from exc
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise ConfigFileError(f'{path}: expected {{"files": {{path: sha256}}}}; remove it')
    return {str(k): v for k, v in files.items()}


def _write_trust_list(files: Mapping[str, str]) -> Path:
    target = trust_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"files": dict(sorted(files.items()))}, indent=1) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".trusted-", dir=target.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def trust(path: str | Path) -> tuple[Path, str]:
    """Record `path` (absolute) with the hash of its current content; (path, hash).

    Raises:
        ConfigFileError: the file is missing or not valid TOML (nothing is recorded).
    """
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise ConfigFileError(f"config file not found: {str(path)!r}")
    raw = _read(file)
    _parse(file, raw)
    digest = _digest(raw)
    _write_trust_list({**trust_list(), str(file): digest})
    return file, digest


def untrust(path: str | Path) -> bool:
    """Forget `path`; False when it was not on the list."""
    key = str(Path(path).expanduser().resolve())
    files = trust_list()
    if key not in files:
        return False
    del files[key]
    _write_trust_list(files)
    return True
