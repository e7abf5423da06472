"""`tablequest serve`: the HTTP API (``/v1``, OpenAPI at ``/openapi.json``) and the web app,
over the same library calls as the CLI. Needs the ``serve`` extra (FastAPI, uvicorn, Jinja2).

The server's state, settings, token and HTTP protections live in `tablequest.service`, which
``tablequest mcp`` shares; `ServeConfig` and `Limits` are re-exported here for `create_app`.
"""

from tablequest.serve.app import create_app, run_server
from tablequest.serve.render import render_trace_html
from tablequest.service import Limits, ServeConfig

__all__ = ["Limits", "ServeConfig", "create_app", "render_trace_html", "run_server"]
