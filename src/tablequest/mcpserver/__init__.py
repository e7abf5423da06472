"""`tablequest mcp STORE`: the corpus as an MCP server (tools, resources, a prompt).

Built on the official `mcp` SDK (2.x) over `tablequest.service.ServerState`, the object
behind every route of ``tablequest serve``, so the MCP path has the server's option
allowlist, ask limits, sandbox, public source names and token rules. Needs the ``mcp``
extra (``pip install 'tablequest[mcp]'``, which brings the ``serve`` extra for uvicorn).

    from tablequest.mcpserver import open_service, run_stdio
    run_stdio(open_service(ServeConfig(store=path, trace_dir=traces, token=None)))
"""

from tablequest.mcpserver.server import INSTRUCTIONS, build_server
from tablequest.mcpserver.service import McpService, open_service
from tablequest.mcpserver.tools import NoSuchTable, TableTools
from tablequest.mcpserver.transport import (
    BearerGate,
    OriginGate,
    http_app,
    parse_bind,
    run_http,
    run_stdio,
    uvicorn_config,
)

__all__ = [
    "INSTRUCTIONS",
    "BearerGate",
    "McpService",
    "NoSuchTable",
    "OriginGate",
    "TableTools",
    "build_server",
    "http_app",
    "open_service",
    "parse_bind",
    "run_http",
    "run_stdio",
    "uvicorn_config",
]
