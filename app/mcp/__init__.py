"""The MCP server: Engram's tools and resources for agents that speak the Model Context
Protocol, served at /mcp."""

from app.mcp.server import McpEndpoint

__all__ = ["McpEndpoint"]
