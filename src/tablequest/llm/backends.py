"""LLM backends: one small interface for ``--llm NAME[:ARG][,KEY=VALUE...]``.

A backend is a factory from validated options to an `LLM`, registered by name
(`tablequest.llm.config.register_llm_backend`). Its options are a pydantic model
(`BackendOptions`), as a method's are: typed, defaulted, documented, and checked before the
factory runs, so ``--llm gguf:/m.gguf,n_ctx=lots`` fails naming the option instead of deep in
the backend. Built in: ``gguf`` (a local GGUF file through llama.cpp). Installed
distributions add backends under the entry-point group ``tablequest.llms``.

The spec grammar (ours): ``NAME``, then optionally ``:ARG``; ARG is a comma-separated list
whose trailing ``KEY=VALUE`` items (KEY a Python identifier) set options, and whose remaining
text fills the backend's positional option (`BackendOptions.ARG`, e.g. gguf's ``path``).
Items are peeled from the end, so a path with commas or ``=`` still reads as the path unless
it ends in ``,KEY=VALUE``; an unknown KEY is an error naming the known ones, not a silent
part of the path. Values are strings converted by
pydantic's lax mode ("4096" → 4096, "true" → True), as ``-o`` values of methods are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tablequest.llm.base import LLM
from tablequest.llm.local import LlamaCppLocal

__all__ = [
    "BackendFactory",
    "BackendOptions",
    "GGUFOptions",
    "LLMBackend",
    "NoBackendOptions",
    "SpecArgOptions",
    "build_gguf",
]


class BackendOptions(BaseModel):
    """Base of a backend's options: unknown keys are errors; `ARG` names the field that
    ``NAME:ARG`` fills (None: the backend takes no positional argument)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ARG: ClassVar[str | None] = None


class NoBackendOptions(BackendOptions):
    """A backend without options (``--llm NAME``)."""


class SpecArgOptions(BackendOptions):
    """The one string a `register_llm_spec` factory takes (``--llm PREFIX:ARG``)."""

    ARG: ClassVar[str | None] = "arg"
    arg: str = Field(min_length=1, description="what follows PREFIX:")


BackendFactory = Callable[[Any], LLM]
"""``factory(options) -> LLM`` (options: the backend's own `BackendOptions`)."""


@dataclass(frozen=True)
class LLMBackend:
    """A registered LLM backend.

    Attributes:
        name: What users type (``--llm NAME...``), lower case.
        factory: Builds the model from validated options.
        options: Its `BackendOptions` subclass.
        description: One line for help and listings.
    """

    name: str
    factory: BackendFactory
    options: type[BackendOptions]
    description: str = ""

    def parse_arg(self, arg: str) -> dict[str, str]:
        """The option values an ``ARG`` text sets (module docstring: the grammar).

        Raises:
            ValueError: text left over for a backend without a positional option.
        """
        fields = self.options.model_fields
        values: dict[str, str] = {}
        items = arg.split(",") if arg else []
        while items:
            key, eq, value = items[-1].partition("=")
            if not eq or not key.strip().isidentifier():
                break
            values.setdefault(key.strip(), value)  # the last of repeated keys wins
            items.pop()
        rest = ",".join(items)
        if rest:
            if self.options.ARG is None:
                known = ", ".join(fields) or "none"
                raise ValueError(
                    f"--llm {self.name}: unexpected {rest!r}; options are KEY=VALUE "
                    f"(known: {known})"
                )
            values.setdefault(self.options.ARG, rest)
        return values

    def make_options(self, values: Mapping[str, Any]) -> BackendOptions:
        """Validated options from values (strings converted as ``-o`` values are).

        Raises:
            ValueError: an unknown option or a bad value; the message names both.
        """
        try:
            return self.options.model_validate(dict(values))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}"
                for err in exc.errors()
            )
            known = ", ".join(self.options.model_fields) or "none"
            raise ValueError(f"--llm {self.name}: {problems} (options: {known})") from None


class GGUFOptions(BackendOptions):
    """Options of the local llama.cpp backend (``--llm gguf:/path/model.gguf,n_ctx=4096``)."""

    ARG: ClassVar[str | None] = "path"
    path: str = Field(min_length=1, description="the .gguf model file")
    n_ctx: int = Field(8192, gt=0, description="context window in tokens")
    n_gpu_layers: int = Field(0, ge=-1, description="layers offloaded to a GPU (-1: all)")
    n_threads: int | None = Field(None, gt=0, description="CPU threads (default: llama.cpp's)")
    seed: int = Field(0, description="sampling seed")
    chat_format: str | None = Field(None, description="chat template name (default: the file's)")


def build_gguf(options: GGUFOptions) -> LLM:
    """The local llama.cpp model of `options`."""
    return LlamaCppLocal(
        options.path,
        n_ctx=options.n_ctx,
        n_gpu_layers=options.n_gpu_layers,
        n_threads=options.n_threads,
        seed=options.seed,
        chat_format=options.chat_format,
    )
