"""Library values the commands show in their help or take as option defaults, copied here
so that registering the commands imports no library module (``tablequest --version`` and
``--help`` start without DuckDB, pandas or the model client).

`SOURCES` names the library attribute each copy stands for; tests/test_startup.py checks
that every copy equals it. Lists a plugin may extend (retrievers, encoders) are not copied:
their help texts are `tablequest.cli._options.lazy_help` placeholders.
"""

from __future__ import annotations

from typing import Final

CONFIG_FILE: Final = "tablequest.toml"
MODEL_TIMEOUT: Final = 10.0
CHECKS: Final = ("config", "model", "sandbox", "extras", "store")
SQL_LIMIT: Final = 1000
SQL_TIMEOUT: Final = 10.0
HYBRID_ALPHA: Final = 0.7
ENCODER: Final = "minilm-32"
RETRIEVAL_METHOD: Final = "phrase-hybrid"
EVAL_PROMPTS: Final = (
    "Rudimentary Analysis",
    "Summary Analysis",
    "Predictive Analysis",
    "Exploratory Analysis",
    "Anomaly Analysis",
)

SOURCES: Final = {
    "CONFIG_FILE": "tablequest.configfile:CONFIG_FILE",
    "MODEL_TIMEOUT": "tablequest.doctor:MODEL_TIMEOUT",
    "CHECKS": "tablequest.doctor:CHECKS",
    "SQL_LIMIT": "tablequest.corpus.storage.sql:DEFAULT_LIMIT",
    "SQL_TIMEOUT": "tablequest.corpus.storage.sql:DEFAULT_TIMEOUT",
    "HYBRID_ALPHA": "tablequest.corpus.lexical.rank:HYBRID_ALPHA",
    "ENCODER": "tablequest.corpus.retrieval.retrievers:DEFAULT_ENCODER",
    "RETRIEVAL_METHOD": "tablequest.eval.retrieval:DEFAULT_METHOD",
    "EVAL_PROMPTS": "tablequest.eval.metrics.judge_prompts:EVAL_PROMPTS",
}
"""copy → ``module:attribute`` it equals (a mapping's copy holds its keys, in order)."""
