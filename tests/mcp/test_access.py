"""Who may call what over /mcp: the API's keys, roles and namespaces, and RequestGuard's
refusal of pages of other sites and of foreign host names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.mcp.conftest import OPERATOR_KEY, api, bearer, connect, data, error, make_key
from tests.server import EngramServer

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def write_call(content: str) -> dict[str, Any]:
    """tools/call write_memory as one JSON-RPC request."""
    return {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "write_memory", "arguments": {"type": "fact", "content": content}},
    }


@pytest.mark.parametrize("key", [None, "egk_not-a-key-of-this-service"])
def test_without_a_valid_key_the_answer_is_401(server: EngramServer, key: str | None) -> None:
    headers = MCP_HEADERS | (bearer(key) if key else {})
    r = httpx.post(f"{server.url}/mcp", json=INITIALIZE, headers=headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    body = r.json()
    assert body["error"]["message"] in (
        "an API key is required: send `Authorization: Bearer <key>`",
        "invalid or revoked API key",
    )
    assert body["error"]["data"]["error"] == "Unauthorized"


async def test_the_x_api_key_header_is_accepted(server: EngramServer, namespace: str) -> None:
    key = make_key(server, namespace, "reader")
    async with connect(f"{server.url}/mcp", headers={"X-API-Key": key}) as client:
        assert len((await client.list_tools()).tools) == 11


async def test_a_reader_key_reads_but_cannot_write(server: EngramServer, namespace: str) -> None:
    reader = make_key(server, namespace, "reader")
    async with connect(f"{server.url}/mcp", headers=bearer(reader)) as client:
        found = data(await client.call_tool("search_memories", {"query": "deploy"}))
        skills = data(await client.call_tool("list_skills", {}))
        refused = [
            error(await client.call_tool("write_memory", {"type": "fact", "content": "x"})),
            error(await client.call_tool("record_episode", {"task_id": "t", "action": "a"})),
            error(await client.call_tool("recall", {"task": "t", "token_budget": 100})),
            error(await client.call_tool("reflect", {})),
        ]
    assert found["hits"] == []
    assert skills["items"] == []
    for message in refused:
        assert "this action needs the agent role; the key has reader" in message
    with api(server, reader) as http:
        assert http.get("/v1/memories").json()["items"] == []
        assert http.get("/v1/episodes").json()["items"] == []
    # Each refusal is in the audit log, as a refused HTTP request is.
    with api(server, OPERATOR_KEY) as http:
        audit = http.get("/v1/audit", params={"namespace": namespace, "action": "request.denied"})
    targets = sorted(event["target"] for event in audit.json()["items"])
    assert targets == [
        f"mcp tool {name}" for name in ("recall", "record_episode", "reflect", "write_memory")
    ]


async def test_another_namespace_is_invisible(server: EngramServer, namespace: str) -> None:
    mine, theirs = make_key(server, namespace), make_key(server, namespace + "-other")
    async with connect(f"{server.url}/mcp", headers=bearer(mine)) as client:
        secret = data(
            await client.call_tool(
                "write_memory",
                {"type": "fact", "content": "The staging password rotates on Fridays"},
            )
        )
    async with connect(f"{server.url}/mcp", headers=bearer(theirs)) as client:
        found = data(await client.call_tool("search_memories", {"query": "staging password"}))
        recalled = data(
            await client.call_tool(
                "recall", {"task": "when does the staging password rotate", "token_budget": 500}
            )
        )
        forget = error(await client.call_tool("forget_memory", {"memory_id": secret["id"]}))
    assert found["hits"] == []
    assert recalled["selected"] == []
    assert "NotFound (404)" in forget
    with api(server, mine) as http:
        assert http.get(f"/v1/memories/{secret['id']}").json()["status"] == "active"


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    """No key exists: open mode, on loopback only."""
    engram = EngramServer(tmp_path_factory.mktemp("open")).start()
    yield engram
    engram.stop()


async def test_open_mode_needs_no_key(open_server: EngramServer) -> None:
    async with connect(f"{open_server.url}/mcp") as client:
        written = data(
            await client.call_tool("write_memory", {"type": "fact", "content": "CI runs on arm64"})
        )
    memories = httpx.get(f"{open_server.url}/v1/memories").json()["items"]
    assert [m["id"] for m in memories] == [written["id"]]


@pytest.mark.parametrize(
    ("header", "status"),
    [
        ({"Origin": "https://attacker.example"}, 403),
        ({"Host": "rebound.attacker.example"}, 400),
        ({"Sec-Fetch-Site": "cross-site"}, 403),
    ],
)
def test_pages_of_other_sites_and_foreign_host_names_are_refused(
    open_server: EngramServer, header: dict[str, str], status: int
) -> None:
    content = f"written through a page {header}"
    refused = httpx.post(
        f"{open_server.url}/mcp", json=write_call(content), headers=MCP_HEADERS | header
    )
    assert refused.status_code == status, refused.text
    # The same call without that header is served: the refusal was the guard's.
    served = httpx.post(
        f"{open_server.url}/mcp", json=write_call(content + "!"), headers=MCP_HEADERS
    )
    assert served.status_code == 200, served.text
    contents = [m["content"] for m in httpx.get(f"{open_server.url}/v1/memories").json()["items"]]
    assert content + "!" in contents
    assert content not in contents


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_only_post_is_served(open_server: EngramServer, method: str) -> None:
    r = httpx.request(method, f"{open_server.url}/mcp", headers=MCP_HEADERS, timeout=10)
    # Stateless: no stream of server messages to hold open, no session to end.
    assert r.status_code == 405
    assert r.headers["allow"] == "POST"


async def test_a_capped_key_neither_writes_nor_forgets_above_its_cap(
    server: EngramServer, namespace: str
) -> None:
    owner = make_key(server, namespace, "admin", max_sensitivity="restricted")
    with api(server, owner) as http:
        body = {
            "type": "fact",
            "content": "The vault unseal key is in the safe",
            "sensitivity": "restricted",
        }
        secret = http.post("/v1/memories", json=body).json()["id"]
    agent = make_key(server, namespace)  # up to high
    async with connect(f"{server.url}/mcp", headers=bearer(agent)) as client:
        refused = [
            error(await client.call_tool("write_memory", {**body, "content": "a new secret"})),
            error(await client.call_tool("forget_memory", {"memory_id": secret})),
        ]
        allowed = data(await client.call_tool("write_memory", {**body, "sensitivity": "high"}))
    for message in refused:
        assert "Forbidden (403)" in message, message
        assert "up to high" in message, message
    assert allowed["sensitivity"] == "high"
    with api(server, owner) as http:
        assert http.get(f"/v1/memories/{secret}").json()["status"] == "active"
        listed = http.get("/v1/memories", params={"sensitivity": "restricted"}).json()["items"]
    assert [m["id"] for m in listed] == [secret]


async def test_write_tools_retried_under_an_idempotency_key_write_once(
    server: EngramServer, namespace: str
) -> None:
    key = make_key(server, namespace)
    fact = {"type": "fact", "content": "The release branch is cut on Thursdays"}
    episode = {"task_id": "t-1", "action": "cut the branch", "outcome": "success"}
    keyed = bearer(key) | {"Idempotency-Key": "retry-1"}
    written, recorded = [], []
    for _ in range(2):  # the client's retry: the same calls under the same key
        async with connect(f"{server.url}/mcp", headers=keyed) as client:
            written.append(data(await client.call_tool("write_memory", fact))["id"])
            recorded.append(data(await client.call_tool("record_episode", episode))["id"])
    assert written[0] == written[1]
    assert recorded[0] == recorded[1]
    with api(server, key) as http:
        assert [m["id"] for m in http.get("/v1/memories").json()["items"]] == written[:1]
        assert [e["id"] for e in http.get("/v1/episodes").json()["items"]] == recorded[:1]
