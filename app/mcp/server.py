"""The MCP server at /mcp (streamable HTTP): the same keys, namespaces and roles as the
HTTP API, behind the same RequestGuard; the lifespan runs its transport."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator
from importlib import metadata

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.api.deps import get_principal
from app.core.config import Settings
from app.core.errors import AppError, StoreUnavailable
from app.mcp.adapter import PRINCIPAL
from app.mcp.knowledge import add_skill_resources, knowledge_tools
from app.mcp.tools import task_tools

# JSON-RPC's range for server errors; the HTTP status says which.
AUTH_ERROR = -32001
INSTRUCTIONS = (
    "Engram is your long-term memory across tasks. At the start of a task call `recall` "
    "with the task and a token budget, and follow the constraints and skills it returns. "
    "Record what you did with `record_episode` (or open it, `add_steps`, "
    "`complete_episode`), then score it with `reward` using the recall_id. Store durable "
    "facts, preferences and lessons with `write_memory`; look things up with "
    "`search_memories`; `forget_memory` what turned out wrong."
)


@functools.cache
def _tools() -> tuple[Tool, ...]:
    """The tools, built once per process: their argument models and schemas (most of a
    server's making) are the same for every server."""
    return (*task_tools(), *knowledge_tools())


def build_server() -> MCPServer:
    """The tools and resources, over the services the HTTP routes use."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    server: MCPServer = MCPServer(
        "engram",
        title="Engram",
        instructions=INSTRUCTIONS,
        version=metadata.version("engram"),
        tools=list(_tools()),
        subscriptions=False,
    )
    # MCPServer sets up the root logger when nothing has yet; the service's logging (JSON,
    # configured by `engram serve`) stays as it is.
    root.handlers[:] = handlers
    root.setLevel(level)
    add_skill_resources(server)
    return server


METHOD_NOT_ALLOWED = JSONResponse(
    {"error": "MethodNotAllowed", "detail": "MCP messages are sent with POST /mcp"},
    status_code=405,
    headers={"Allow": "POST"},
)


def refusal(exc: AppError) -> Response:
    """A 401 or 429 as a JSON-RPC error (MCP clients show its message; the API's error body
    is its data), with the status and headers (WWW-Authenticate, Retry-After) of the API's."""
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": AUTH_ERROR, "message": exc.message, "data": exc.body()},
    }
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers or None)


class McpEndpoint:
    """ASGI app of /mcp: authenticates as the HTTP API does (401 without a valid key, 429
    over its rate), then hands the request to the transport; tools read its principal."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.server = build_server()
        self._manager: StreamableHTTPSessionManager | None = None
        # Added to the app's routes; named in the scope, as FastAPI's routes are, for the
        # access log and the metrics.
        self.route = Route("/mcp", endpoint=self, include_in_schema=False)

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Run the transport for the app's lifetime (a new one for each start)."""
        self.server.streamable_http_app(
            # Stateless, plain JSON answers: any replica answers any request, each request
            # carries its own key, and no session outlives it.
            stateless_http=True,
            json_response=True,
            # Host and Origin are checked by RequestGuard with the service's own settings
            # (ENGRAM_ALLOWED_HOSTS, ENGRAM_CORS_ORIGINS), before this app is reached.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=self.settings.limits.max_body_bytes,
        )
        manager = self.server.session_manager
        # The transport's task group must be left in the task that entered it, and a
        # lifespan may end in another task than it began in: a task of its own runs it.
        started, stop = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            async with manager.run():
                self._manager = manager
                started.set()
                try:
                    await stop.wait()
                finally:
                    self._manager = None

        task = asyncio.create_task(run(), name="mcp transport")
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if task.done():
            task.result()  # its failure to start, raised here
        try:
            yield
        finally:
            stop.set()
            await task

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._manager is None:
            raise StoreUnavailable("the MCP endpoint is not running")
        if scope["method"] != "POST":
            # Stateless: no session to end (DELETE) and no stream of server messages (GET),
            # which the transport would hold open with nothing to send. 405 tells clients.
            await METHOD_NOT_ALLOWED(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            principal = await get_principal(request)
        except AppError as exc:
            await refusal(exc)(scope, receive, send)
            return
        scope.setdefault("state", {})[PRINCIPAL] = principal
        scope["route"] = self.route
        await self._manager.handle_request(scope, receive, send)
