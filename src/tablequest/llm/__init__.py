"""The LLM layer: one interface, backends, test doubles, cache, usage, parsing.

Backends: `OpenAICompatible` (any OpenAI-compatible server), `LlamaCppLocal` (GGUF file, extra
``[local]``), `Scripted` (in-process fake). `StubServer` is a fault-injecting OpenAI-compatible
HTTP server for tests. Wrappers: `CachedLLM`, `Instrumented`. See docs/llm.md.

This module is the package's public surface: code outside `tablequest.llm` imports from here,
never from its modules (tests/test_layers.py).
"""

from tablequest.llm.backends import BackendOptions
from tablequest.llm.base import (
    LLM,
    Completion,
    DeadlineExceeded,
    LLMBadResponse,
    LLMError,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
    Message,
    ModelRequestsDisallowed,
    ModelUnreachable,
    Usage,
    estimate_tokens,
)
from tablequest.llm.cache import (
    CachedLLM,
    CacheError,
    CacheFile,
    cache_clear,
    cache_key,
    cache_path,
    cache_stats,
    default_cache_dir,
)
from tablequest.llm.config import (
    NOT_CONFIGURED_HINT,
    OPENAI_URL,
    ConfigError,
    LLMConfig,
    build_llm,
    register_llm_backend,
    register_llm_spec,
    resolve_config,
)
from tablequest.llm.deadline import DEFAULT_DEADLINE, Deadline, call_scope, current_scope
from tablequest.llm.guard import check_model_request, model_requests_allowed
from tablequest.llm.instrument import Instrumented
from tablequest.llm.local import LlamaCppLocal
from tablequest.llm.modelserver import ModelServer, ModelServerError, server_root
from tablequest.llm.openai_compat import OpenAICompatible
from tablequest.llm.parse import (
    NO_ANSWER_IN_FORMAT,
    BadCall,
    BadReAct,
    NoAnswer,
    NoJSONFound,
    ParseError,
    ReactStep,
    TruncatedOutput,
    WrongJSONType,
    extract_answer,
    is_chatter,
    is_non_answer,
    parse_f_col,
    parse_f_row,
    parse_react,
    reply_start,
    strip_think,
)
from tablequest.llm.parse_json import extract_json
from tablequest.llm.repair import DEFAULT_REPAIR_PROMPT, Asked, ask_json, ask_with_repair
from tablequest.llm.scripted import Scripted, ScriptedCall, ScriptExhausted
from tablequest.llm.stub import Fault, StubServer
from tablequest.llm.usage import QA, BudgetExhausted, StepBudget, UsageMeter, UsageTotals

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_REPAIR_PROMPT",
    "LLM",
    "NOT_CONFIGURED_HINT",
    "NO_ANSWER_IN_FORMAT",
    "OPENAI_URL",
    "QA",
    "Asked",
    "BackendOptions",
    "BadCall",
    "BadReAct",
    "BudgetExhausted",
    "CacheError",
    "CacheFile",
    "CachedLLM",
    "Completion",
    "ConfigError",
    "Deadline",
    "DeadlineExceeded",
    "Fault",
    "Instrumented",
    "LLMBadResponse",
    "LLMConfig",
    "LLMError",
    "LLMRequestRejected",
    "LLMTimeout",
    "LLMUnavailable",
    "LlamaCppLocal",
    "Message",
    "ModelRequestsDisallowed",
    "ModelServer",
    "ModelServerError",
    "ModelUnreachable",
    "NoAnswer",
    "NoJSONFound",
    "OpenAICompatible",
    "ParseError",
    "ReactStep",
    "ScriptExhausted",
    "Scripted",
    "ScriptedCall",
    "StepBudget",
    "StubServer",
    "TruncatedOutput",
    "Usage",
    "UsageMeter",
    "UsageTotals",
    "WrongJSONType",
    "ask_json",
    "ask_with_repair",
    "build_llm",
    "cache_clear",
    "cache_key",
    "cache_path",
    "cache_stats",
    "call_scope",
    "check_model_request",
    "current_scope",
    "default_cache_dir",
    "estimate_tokens",
    "extract_answer",
    "extract_json",
    "is_chatter",
    "is_non_answer",
    "model_requests_allowed",
    "parse_f_col",
    "parse_f_row",
    "parse_react",
    "register_llm_backend",
    "register_llm_spec",
    "reply_start",
    "resolve_config",
    "server_root",
    "strip_think",
]
