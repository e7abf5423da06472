"""The LLM layer: one interface, backends, test doubles, cache, usage, parsing.

Backends: `OpenAICompatible` (any OpenAI-compatible server), `LlamaCppLocal` (GGUF file, extra
``[local]``), `Scripted` (in-process fake). `StubServer` is a fault-injecting OpenAI-compatible
HTTP server for tests. Wrappers: `CachedLLM`, `Instrumented`. See docs/llm.md.
"""

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
    cache_clear,
    cache_key,
    cache_stats,
    default_cache_dir,
)
from tablequest.llm.config import (
    NOT_CONFIGURED_HINT,
    ConfigError,
    LLMConfig,
    build_llm,
    register_llm_spec,
    resolve_config,
)
from tablequest.llm.deadline import DEFAULT_DEADLINE, Deadline, call_scope, current_scope
from tablequest.llm.guard import check_model_request, model_requests_allowed
from tablequest.llm.instrument import Instrumented
from tablequest.llm.local import LlamaCppLocal
from tablequest.llm.openai_compat import OpenAICompatible
from tablequest.llm.parse import (
    BadCall,
    BadReAct,
    NoAnswer,
    NoJSONFound,
    ParseError,
    ReactStep,
    TruncatedOutput,
    WrongJSONType,
    extract_answer,
    extract_json,
    is_non_answer,
    parse_f_col,
    parse_f_row,
    parse_react,
    strip_think,
)
from tablequest.llm.repair import DEFAULT_REPAIR_PROMPT, Asked, ask_json, ask_with_repair
from tablequest.llm.scripted import Scripted, ScriptedCall, ScriptExhausted
from tablequest.llm.stub import Fault, StubServer
from tablequest.llm.usage import BudgetExhausted, StepBudget, UsageMeter, UsageTotals

__all__ = [
    "DEFAULT_DEADLINE",
    "DEFAULT_REPAIR_PROMPT",
    "LLM",
    "NOT_CONFIGURED_HINT",
    "Asked",
    "BadCall",
    "BadReAct",
    "BudgetExhausted",
    "CacheError",
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
    "cache_stats",
    "call_scope",
    "check_model_request",
    "current_scope",
    "default_cache_dir",
    "estimate_tokens",
    "extract_answer",
    "extract_json",
    "is_non_answer",
    "model_requests_allowed",
    "parse_f_col",
    "parse_f_row",
    "parse_react",
    "register_llm_spec",
    "resolve_config",
    "strip_think",
]
