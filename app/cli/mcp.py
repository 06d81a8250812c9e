"""`engram mcp`: a stdio MCP server for clients that launch one, relaying every message to
a running Engram's /mcp over streamable HTTP with the given key."""

from __future__ import annotations

import logging
import sys
from functools import partial
from typing import Annotated, Any

import typer

log = logging.getLogger("engram.mcp")
READ_TIMEOUT_S = 300.0  # a tool call (a reflection that waits) may take minutes


def endpoint(url: str) -> str:
    """The /mcp URL of a service given by its base URL (or already by its /mcp URL)."""
    url = url.rstrip("/")
    return url if url.endswith("/mcp") else f"{url}/mcp"


async def _pump(source: Any, sink: Any, *, where: str) -> None:
    """Forward messages until `source` ends; a transport's error is logged, not relayed."""
    async with sink:
        async for message in source:
            if isinstance(message, Exception):
                log.warning("%s: %s", where, message)
                continue
            await sink.send(message)


async def _report(response: Any) -> None:
    if response.status_code in (401, 403, 429):
        log.warning(
            "%s answered %s: check the key (--key or ENGRAM_KEY)%s",
            response.request.url,
            response.status_code,
            " or slow down" if response.status_code == 429 else "",
        )


UNREACHABLE = -32000  # JSON-RPC's range for a server's own errors


def _answering_transport(url: str) -> Any:
    """An HTTP transport that answers for an Engram that does not: a request the service
    never got (it is down, restarting, or not at `url`) gets a JSON-RPC error naming the
    URL, so the MCP client shows the reason instead of waiting forever."""
    import httpx2

    class Answering(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            try:
                return await self.inner.handle_async_request(request)
            except httpx2.TransportError as exc:
                reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                log.warning("Engram at %s did not answer (%s)", url, reason)
                answer: httpx2.Response = _unreachable(request, url, reason)
                return answer

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Answering()


def _unreachable(request: Any, url: str, reason: str) -> Any:
    """What a request that never reached the service is answered with: a JSON-RPC error
    for a request, 202 for a notification or a response, 405 for the event stream."""
    import json

    import httpx2

    if request.method != "POST":
        return httpx2.Response(405, request=request)
    try:
        message = json.loads(request.content or b"null")
    except ValueError:
        message = None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return httpx2.Response(202, request=request)
    error = {
        "code": UNREACHABLE,
        "message": f"Engram is not reachable at {url} ({reason}): start it with `engram serve`, "
        "or point ENGRAM_URL (--url) at it",
    }
    body = {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return httpx2.Response(200, json=body, request=request)


async def relay(url: str, key: str | None) -> None:
    """Relay between this process's stdin/stdout and `url` until stdin closes."""
    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(10.0, read=READ_TIMEOUT_S),
        transport=_answering_transport(url),
    )
    # A refused key shows in the client's log of this process, not only as a failed call.
    http.event_hooks["response"].append(_report)
    async with (
        http,
        streamable_http_client(url, http_client=http, terminate_on_close=False) as (
            from_server,
            to_server,
        ),
        stdio_server() as (from_client, to_client),
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(partial(_pump, from_server, to_client, where=f"from {url}"))
        # The client closing stdin ends the session: nothing more will be asked.
        await _pump(from_client, to_server, where="from stdin")
        tasks.cancel_scope.cancel()


def mcp_command(
    url: Annotated[
        str,
        typer.Option(
            "--url", envvar="ENGRAM_URL", help="The Engram service (its base URL or its /mcp URL)"
        ),
    ] = "http://127.0.0.1:8080",
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            envvar="ENGRAM_KEY",
            help="API key, sent as Authorization: Bearer (prefer ENGRAM_KEY: arguments are "
            "visible to other users of the machine)",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Log each relay step")] = False,
) -> None:
    """Serve MCP on stdin/stdout, relayed to a running Engram's /mcp (for MCP clients that
    only launch commands). Logs go to stderr: stdout carries the protocol alone."""
    import anyio

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.WARNING,
        format="engram mcp: %(levelname)s %(name)s: %(message)s",
    )
    try:
        anyio.run(relay, endpoint(url), key)
    except KeyboardInterrupt:
        pass
    except Exception as exc:  # one line for the person reading the client's log
        reason = "; ".join(str(leaf) or type(leaf).__name__ for leaf in _leaves(exc))
        typer.echo(f"engram mcp: the relay to {endpoint(url)} stopped: {reason}", err=True)
        raise typer.Exit(1) from None


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]
