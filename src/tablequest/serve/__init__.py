"""`tablequest serve`: the HTTP API (``/v1``, OpenAPI at ``/openapi.json``) and the web app,
over the same library calls as the CLI. Needs the ``serve`` extra (FastAPI, uvicorn, Jinja2).
"""

from tablequest.serve.app import create_app, run_server
from tablequest.serve.config import (
    Limits,
    ServeConfig,
    ServeError,
    check_bind,
    default_token_file,
    is_loopback,
    load_or_create_token,
)
from tablequest.serve.render import render_trace_html

__all__ = [
    "Limits",
    "ServeConfig",
    "ServeError",
    "check_bind",
    "create_app",
    "default_token_file",
    "is_loopback",
    "load_or_create_token",
    "render_trace_html",
    "run_server",
]
