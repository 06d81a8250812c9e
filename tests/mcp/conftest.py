"""A real `engram serve` with keys, MCP clients of its /mcp, and the keys to give them."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult

from tests.server import EngramServer

OPERATOR_KEY = "egk_" + secrets.token_urlsafe(32)
# Learning thresholds low enough for a handful of episodes to make a skill.
LEARNING = {
    "ENGRAM_LEARNING__WORKER": "false",
    "ENGRAM_LEARNING__MIN_SUPPORT": "2",
    "ENGRAM_LEARNING__SKILL_MIN_SUPPORT": "3",
    "ENGRAM_LEARNING__SKILL_MIN_LCB": "0.05",
    "ENGRAM_LEARNING__ACTIVATE_LCB": "0.05",
}


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    """One server for the package: each test works in namespaces of its own."""
    data = tmp_path_factory.mktemp("mcp")
    engram = EngramServer(data, ENGRAM_BOOTSTRAP_KEY=OPERATOR_KEY, **LEARNING).start()
    yield engram
    engram.stop()


@pytest.fixture
def namespace() -> str:
    return "ns-" + secrets.token_hex(4)


def make_key(
    server: EngramServer, namespace: str, role: str = "agent", max_sensitivity: str = "high"
) -> str:
    """A new key of `role` in `namespace`, created over the HTTP API by the operator."""
    body = {"role": role, "namespace": namespace, "name": f"{role} for mcp tests"}
    r = httpx.post(
        f"{server.url}/v1/keys",
        json=body | {"max_sensitivity": max_sensitivity},
        headers={"Authorization": f"Bearer {OPERATOR_KEY}"},
    )
    assert r.status_code == 201, r.text
    key: str = r.json()["key"]
    return key


def api(server: EngramServer, key: str) -> httpx.Client:
    """The HTTP API as the holder of `key`: where the tools' effects are checked."""
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"})


@contextlib.asynccontextmanager
async def connect(
    url: str, *, headers: dict[str, str] | None = None, mode: str = "auto"
) -> AsyncIterator[Client]:
    """An MCP client of `url` (streamable HTTP), connected: `auto` speaks the newest
    protocol, `legacy` the initialize handshake of the clients before it."""
    http = create_mcp_http_client(headers=headers)
    transport = streamable_http_client(url, http_client=http)
    async with http, Client(transport, mode=mode) as client:
        yield client


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def text(result: CallToolResult) -> str:
    """The tool's answer (or its error) as the model reads it."""
    return "".join(getattr(block, "text", "") for block in result.content)


def data(result: CallToolResult) -> Any:
    """A successful tool's JSON answer, the same as text (for models) and as structured
    content (for programs)."""
    assert not result.is_error, text(result)
    answer = json.loads(text(result))
    assert result.structured_content == answer
    return answer


def error(result: CallToolResult) -> str:
    """A failed tool's message."""
    assert result.is_error, text(result)
    return text(result)
