"""One typed, frozen `Settings`: every setting's type, default, environment variables,
``tablequest.toml`` key, flag, help and trust rule, declared once (`_sections`).

Loaded once by an entry point (the CLI, the server, the Python API's `ask`) with the
precedence flags > environment > trusted ``tablequest.toml`` > defaults (`Settings.load`),
then passed down: a section (``settings.reading``, ``settings.traces``, …) is an argument
of the code that needs it, and goes to worker processes pickled, never through
``os.environ``. Library functions called without settings fall back to `from_env` (the
environment and the defaults, what they read before). docs/config.md is generated from
these declarations (`markdown`; ``python -m tablequest.settings --write``).

Layer: above `configfile` (whose trust rules the loader applies), below everything else.
"""

from tablequest.settings._docs import markdown
from tablequest.settings._edit import (
    commented_config,
    lookup_setting,
    set_value,
    shown_value,
    toml_literal,
)
from tablequest.settings._load import Settings, from_env, load_section, spec_of
from tablequest.settings._sections import (
    SECTIONS,
    EmbeddingsSettings,
    LLMSettings,
    ModelServer,
    ReadingSettings,
    SandboxSettings,
    ScaleSettings,
    ServeSettings,
    StoreSettings,
    TracesSettings,
)
from tablequest.settings._spec import Setting, SettingsError, parse_limit

__all__ = [
    "SECTIONS",
    "EmbeddingsSettings",
    "LLMSettings",
    "ModelServer",
    "ReadingSettings",
    "SandboxSettings",
    "ScaleSettings",
    "ServeSettings",
    "Setting",
    "Settings",
    "SettingsError",
    "StoreSettings",
    "TracesSettings",
    "commented_config",
    "from_env",
    "load_section",
    "lookup_setting",
    "markdown",
    "parse_limit",
    "set_value",
    "shown_value",
    "spec_of",
    "toml_literal",
]
