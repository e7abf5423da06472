"""`McpService`: what one ``tablequest mcp`` process holds — state, tools and the MCP server."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.mcpserver import MCPServer

from tablequest.llm import LLM
from tablequest.mcpserver.server import build_server
from tablequest.mcpserver.tools import TableTools
from tablequest.service import ServeConfig, ServerState

__all__ = ["McpService", "open_service"]


@dataclass
class McpService:
    """The server's state (store, asks, model), its reading tools and the MCP server."""

    state: ServerState
    tools: TableTools
    server: MCPServer

    def close(self) -> None:
        """Stop the `run_pandas` sandbox, then the asks, the store and the model."""
        self.tools.close()
        self.state.close()


def open_service(config: ServeConfig, *, llm: LLM | None = None, warm: bool = True) -> McpService:
    """Open the store of `config` read-only and build the MCP server over it.

    `llm` overrides the model `config` describes (tests pass a scripted one). With `warm`,
    the grep index and the method registry are loaded now rather than on the first call.

    Raises:
        StoreError: the store cannot be opened (missing, locked for writing, not a store).
        ConfigError: the model configuration is bad.
    """
    state = ServerState(config, llm=llm)
    try:
        if warm:
            state.warm()
        tools = TableTools(state)
        return McpService(state, tools, build_server(state, tools))
    except BaseException:
        state.close()
        raise
