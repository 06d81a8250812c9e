"""`engram mcp`: a stdio MCP server for clients that launch one, relaying every message to
a running Engram's /mcp over streamable HTTP with the given key."""

from __future__ import annotations

import logging
import sys
from functools import partial
from typing import Annotated, Any

import typer

log = logging.getLogger("engram.mcp")


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


async def relay(url: str, key: str | None) -> None:
    """Relay between this process's stdin/stdout and `url` until stdin closes."""
    import anyio
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = create_mcp_http_client(headers=headers)
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
    ] = "http://127.0.0.1:8000",
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
