"""The exported names of tablequest.llm and tablequest.trace are the intended ones."""

from __future__ import annotations

import tablequest.llm
import tablequest.trace

LLM_API = {
    # interface and types
    "LLM", "Message", "Completion", "Usage", "estimate_tokens",
    # errors
    "LLMError", "LLMUnavailable", "LLMTimeout", "LLMBadResponse", "LLMRequestRejected",
    "ModelRequestsDisallowed", "ModelUnreachable", "ScriptExhausted", "BudgetExhausted",
    "CacheError", "ConfigError",
    "DeadlineExceeded",
    # backends and doubles
    "OpenAICompatible", "LlamaCppLocal", "Scripted", "ScriptedCall", "StubServer", "Fault",
    # wrappers, config
    "CachedLLM", "Instrumented", "LLMConfig", "resolve_config", "build_llm",
    "register_llm_spec", "NOT_CONFIGURED_HINT",
    # cache, guard, usage
    "cache_stats", "cache_clear", "cache_key", "default_cache_dir",
    "check_model_request", "model_requests_allowed",
    "UsageMeter", "UsageTotals", "StepBudget",
    # deadline and call scope
    "Deadline", "DEFAULT_DEADLINE", "call_scope", "current_scope",
    # parsing
    "ParseError", "NoJSONFound", "WrongJSONType", "TruncatedOutput", "BadCall", "NoAnswer",
    "BadReAct", "ReactStep", "extract_json", "extract_answer", "strip_think", "parse_f_row",
    "parse_f_col", "parse_react", "ask_with_repair", "DEFAULT_REPAIR_PROMPT", "is_non_answer",
    "ask_json", "Asked", "NO_ANSWER_IN_FORMAT", "is_chatter", "reply_start",
    # what the methods and the surfaces use (docs/architecture.md, "Packages")
    "register_llm_backend", "BackendOptions", "OPENAI_URL", "ModelServer", "ModelServerError",
    "server_root", "CacheFile", "cache_path", "QA",
}  # fmt: skip

TRACE_API = {
    "Trace", "EventKind", "KINDS", "TRACE_DIR_ENV", "UnreadableTrace", "default_trace_dir",
    "new_trace_path", "read_trace", "render_trace", "summarize", "latest_trace",
    "parse_trace_name", "describe_event", "run_trace_dir", "store_of", "store_key",
}  # fmt: skip


def test_llm_exports() -> None:
    assert set(tablequest.llm.__all__) == LLM_API
    assert all(hasattr(tablequest.llm, name) for name in LLM_API)


def test_trace_exports() -> None:
    assert set(tablequest.trace.__all__) == TRACE_API
    assert all(hasattr(tablequest.trace, name) for name in TRACE_API)
