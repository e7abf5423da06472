"""The model every command builds from the common flags, built one way.

``--llm-url``, ``--model``, ``--api-key``, ``--llm``, ``--no-cache`` and ``--deadline`` mean the
same in every command (ask, batch, research, eval run / judge / reproduce / build-subtab,
doctor, serve): `LLMFlags` holds them, `LLMFlags.config` merges them with the environment and
config files (`llm.config.resolve_config`; ``--no-cache`` turns the cache off, its absence
leaves the cache to the config), and `LLMFlags.build` makes the model (`llm.config.build_llm`).
`model_or_fail` is the common case: one ``error:`` line on a bad configuration;
`required_model` adds `NOT_CONFIGURED_HINT` when a command needs a model and none is
configured.

Commands that catch the errors among others of their own (a dataset that does not load, a bad
token file) call `config`/`build` inside their own ``try``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tablequest.cli._output import fail

if TYPE_CHECKING:
    from tablequest.llm.base import LLM
    from tablequest.llm.config import LLMConfig

__all__ = ["LLMFlags", "model_or_fail", "required_model"]


@dataclass(frozen=True)
class LLMFlags:
    """The common model flags of a command (None: not given)."""

    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    spec: str | None = None
    no_cache: bool = False
    deadline: float | None = None
    max_concurrency: int | None = None

    def config(self) -> LLMConfig:
        """Flags merged with environment, config files and defaults.

        Raises:
            ConfigError: a config file is unreadable or holds a wrong value.
        """
        from tablequest.llm.config import resolve_config

        return resolve_config(
            url=self.url,
            model=self.model,
            api_key=self.api_key,
            cache=False if self.no_cache else None,
            deadline=self.deadline,
            max_concurrency=self.max_concurrency,
        )

    def build(self) -> tuple[LLMConfig, LLM | None]:
        """The merged configuration and its model (None when nothing is configured).

        Raises:
            ConfigError: as `config`, or an unusable combination (`build_llm`).
            LLMError: the local backend is requested but unusable.
        """
        from tablequest.llm.config import build_llm

        config = self.config()
        return config, build_llm(config, llm_spec=self.spec)


def model_or_fail(flags: LLMFlags, *, json_out: bool = False) -> tuple[LLMConfig, LLM | None]:
    """`flags.build()`, or one ``error:`` line and exit 2 on a configuration error."""
    from tablequest.llm.base import LLMError
    from tablequest.llm.config import ConfigError

    try:
        return flags.build()
    except (ConfigError, LLMError) as exc:
        fail(str(exc), json_out=json_out)


def required_model(
    flags: LLMFlags, *, json_out: bool = False, hint: str = ""
) -> tuple[LLMConfig, LLM]:
    """`model_or_fail` for a command that needs a model: with none configured, one
    ``error:`` line, `NOT_CONFIGURED_HINT` followed by `hint`, and exit 2."""
    from tablequest.llm.config import NOT_CONFIGURED_HINT

    config, llm = model_or_fail(flags, json_out=json_out)
    if llm is None:
        fail(NOT_CONFIGURED_HINT + hint, json_out=json_out)
    return config, llm
