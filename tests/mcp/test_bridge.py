"""`engram mcp`: an MCP client that only launches commands reaches the server through it."""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from app.core.config import Settings
from tests.mcp.conftest import api, data, make_key
from tests.server import EngramServer

ROOT = Path(__file__).resolve().parents[2]


def bridge(url: str, key: str, *args: str) -> StdioServerParameters:
    """`engram mcp` as an MCP client would launch it, given ENGRAM_URL and ENGRAM_KEY."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "app.cli", "mcp", *args],
        env={**os.environ, "ENGRAM_URL": url, "ENGRAM_KEY": key},
        cwd=ROOT,
    )


async def test_tools_listed_and_called_through_the_bridge(
    server: EngramServer, namespace: str
) -> None:
    key = make_key(server, namespace)
    # The initialize handshake, as the stdio clients of today speak it.
    async with Client(bridge(server.url, key), mode="legacy") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        recalled = data(
            await client.call_tool("recall", {"task": "release the app", "token_budget": 300})
        )
    assert "recall" in names
    assert len(names) == 11
    with api(server, key) as http:
        logged = [t["id"] for t in http.get("/v1/rl/transitions").json()["items"]]
    assert logged == [recalled["recall_id"]]


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


async def test_a_wrong_key_is_reported_to_the_client(server: EngramServer) -> None:
    with pytest.raises(BaseException) as refused:  # noqa: PT011 (the client's error group)
        async with Client(bridge(f"{server.url}/mcp", "egk_wrong")) as client:
            await client.list_tools()
    assert "invalid or revoked API key" in [str(leaf) for leaf in leaves(refused.value)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_service_that_is_not_there_is_named_to_the_client() -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    with pytest.raises(BaseException) as refused:  # noqa: PT011 (the client's error group)
        async with Client(bridge(url, "egk_any")) as client:
            await client.list_tools()
    [message] = [str(leaf) for leaf in leaves(refused.value)]
    assert f"Engram is not reachable at {url}/mcp" in message
    assert "engram serve" in message


async def test_a_call_while_the_service_is_down_fails_at_once_and_the_next_goes_through(
    tmp_path: Path,
) -> None:
    server = EngramServer(tmp_path / "data").start()
    try:
        async with Client(bridge(server.url, ""), mode="legacy") as client:
            assert len((await client.list_tools()).tools) == 11
            server.stop()
            with pytest.raises(MCPError, match="Engram is not reachable"):
                await asyncio.wait_for(client.call_tool("recall", {"task": "t"}), 30)
            server.start()
            back = await client.call_tool("recall", {"task": "release", "token_budget": 100})
            assert not back.is_error, back.content
    finally:
        server.stop()


def test_the_bridge_points_where_the_service_listens_by_default() -> None:
    from app.cli.mcp import mcp_command

    default = inspect.signature(mcp_command).parameters["url"].default
    assert default == f"http://127.0.0.1:{Settings.model_fields['port'].default}"
