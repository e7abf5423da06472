"""`auto`: route each question to the method it needs (ours; see `auto.router`)."""

from tablequest.methods.auto.router import AutoOptions, AutoRouter, Route, choose_route
from tablequest.methods.auto.signals import question_signals, table_signals

__all__ = [
    "AutoOptions",
    "AutoRouter",
    "Route",
    "choose_route",
    "question_signals",
    "register",
    "table_signals",
]


def register() -> None:
    """Register ``auto`` (a built-in, through the same call a plugin makes)."""
    from tablequest.methods.registry import register_method

    register_method(
        "auto",
        AutoRouter,
        AutoOptions,
        input="any",
        description="picks the method: corpus → table → TableRAG | DTR | TabScope | QA",
        title="auto",
        paper=None,
    )
