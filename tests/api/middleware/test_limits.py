"""Body limits: a body over the size limit is a 413 and one that stalls a 408; neither
writes anything, and a client's body read in time is read as sent."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import ClientDisconnect

from app.api.middleware import AccessLog, BodyLimits
from app.api.middleware.limits import BodyTimeout, _receive_by
from app.core.config import Settings
from app.main import create_app
from tests.conftest import asgi_request, running
from tests.server import EngramServer

JSON = (b"content-type", b"application/json")


def _messages(*bodies: bytes, stalls: bool = False) -> Any:
    """A receive() that hands out these body chunks, then waits for ever (with `stalls`,
    the last chunk says more is coming)."""
    queue = [
        {"type": "http.request", "body": body, "more_body": stalls or i < len(bodies) - 1}
        for i, body in enumerate(bodies)
    ]

    async def receive() -> dict[str, Any]:
        if queue:
            return queue.pop(0)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return receive


async def _read_body(scope: Any, receive: Any, send: Any) -> None:
    """An app that reads the whole body and answers with its length."""
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


def _stack(app: Any, *, max_body_bytes: int = 100, body_timeout_s: float = 30.0) -> Any:
    limits = BodyLimits(app, max_body_bytes=max_body_bytes, body_timeout_s=body_timeout_s)
    return AccessLog(limits, log_requests=False)


def _answer(sent: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    return sent[0]["status"], json.loads(sent[1]["body"])


async def test_a_declared_length_over_the_limit_is_413_before_the_app_runs() -> None:
    called = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        called.append(scope["path"])

    headers = [JSON, (b"content-length", b"101")]
    sent = await asgi_request(_stack(app), "POST", "/v1/episodes", headers, _messages(b""))
    assert called == []
    assert _answer(sent) == (
        413,
        {
            "error": "PayloadTooLarge",
            "detail": "request body over the limit of 100 bytes",
            "field": "body",
        },
    )
    assert (b"connection", b"close") in sent[0]["headers"]


async def test_a_body_that_grows_over_the_limit_is_413() -> None:
    # No length given (chunked), or a false one: counted as it arrives.
    for headers in ([JSON], [JSON, (b"content-length", b"10")]):
        receive = _messages(b"x" * 60, b"x" * 60)
        sent = await asgi_request(_stack(_read_body), "POST", "/", headers, receive)
        assert _answer(sent)[0] == 413
    sent = await asgi_request(
        _stack(_read_body), "POST", "/", [JSON], _messages(b"x" * 50, b"x" * 50)
    )
    assert (sent[0]["status"], sent[1]["body"]) == (200, b"100")  # the limit itself is allowed


async def test_a_body_that_stalls_is_408() -> None:
    app = _stack(_read_body, body_timeout_s=0.05)
    sent = await asgi_request(app, "POST", "/", [JSON], _messages(b'{"task_id": ', stalls=True))
    assert _answer(sent) == (
        408,
        {
            "error": "RequestTimeout",
            "detail": "request body not received within 0.05 s",
            "field": "body",
        },
    )


async def test_after_the_body_receive_has_no_deadline() -> None:
    # A streamed answer listens for the client's disconnect as long as it streams.
    later = []

    async def listens(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        later.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    calls = 0

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"type": "http.request", "body": b"{}", "more_body": False}
        await asyncio.sleep(0.1)
        return {"type": "http.disconnect"}

    sent = await asgi_request(_stack(listens, body_timeout_s=0.02), "GET", "/", [], receive)
    assert sent[0]["status"] == 200
    assert later == [{"type": "http.disconnect"}]


async def test_receive_by_passes_on_values_and_exceptions() -> None:
    loop = asyncio.get_running_loop()

    async def ready() -> dict[str, Any]:
        return {"type": "http.request", "body": b"now"}

    async def after_a_wait() -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"type": "http.request", "body": b"later"}

    async def gone() -> dict[str, Any]:
        await asyncio.sleep(0.01)
        raise ClientDisconnect()

    async def never() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    deadline = loop.time() + 5
    assert (await _receive_by(ready, deadline, 5))["body"] == b"now"
    assert (await _receive_by(after_a_wait, deadline, 5))["body"] == b"later"
    with pytest.raises(ClientDisconnect):
        await _receive_by(gone, deadline, 5)
    with pytest.raises(BodyTimeout):
        await _receive_by(never, loop.time() + 0.01, 0.01)
    # Cancelled while it waits (the client's task ends): the cancellation goes through.
    task = asyncio.create_task(_receive_by(never, deadline, 5))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_stalled_body_through_the_app_is_408_and_nothing_is_written(
    settings: Settings,
) -> None:
    settings.limits.body_timeout_s = 0.2
    app = create_app(settings)
    async with running(app) as client:
        headers = [(b"host", b"localhost"), JSON, (b"content-length", b"200")]
        receive = _messages(b'{"task_id": "slow", "steps": [', stalls=True)
        sent = await asgi_request(app, "POST", "/v1/episodes", headers, receive)
        status, body = _answer(sent)
        assert (status, body["error"], body["field"]) == (408, "RequestTimeout", "body")
        assert (b"connection", b"close") in sent[0]["headers"]
        assert (await client.get("/v1/episodes")).json()["items"] == []


@pytest.fixture
def server(settings: Settings, tmp_path: Path) -> Iterator[EngramServer]:
    srv = EngramServer(
        tmp_path / "srv",
        database_url=settings.database_url,
        ENGRAM_LOG_REQUESTS="false",
        ENGRAM_LIMITS__BODY_TIMEOUT_S="1",
    ).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_a_body_that_stalls_on_a_real_socket_is_408_and_nothing_is_written(
    server: EngramServer,
) -> None:
    head = (
        b"POST /v1/episodes HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: 200\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port)) as conn:
        conn.settimeout(20)  # far beyond the server's 1 s: the server must act first
        conn.sendall(head + b'{"task_id": "slow", "steps": [')
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    status_line, _, rest = reply.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 408 Request Timeout", reply[:300]
    assert b'"error":"RequestTimeout"' in rest
    assert b'"field":"body"' in rest
    # The service answers others meanwhile and afterwards, and stored nothing.
    listed = httpx.get(f"{server.url}/v1/episodes", timeout=10).json()["items"]
    assert listed == []
