"""Slow and stalled clients against the real server: they lose their connection and never
hold the service (a body that stalls: tests/api/middleware/test_limits.py)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.core.config import Settings
from tests.server import EngramServer


@pytest.fixture
def server(settings: Settings, tmp_path: Path) -> Iterator[EngramServer]:
    srv = EngramServer(
        tmp_path / "srv",
        database_url=settings.database_url,
        ENGRAM_LOG_REQUESTS="false",
        ENGRAM_LIMITS__HEADER_TIMEOUT_S="1",
    ).start()
    try:
        yield srv
    finally:
        srv.stop()


def _connect(srv: EngramServer) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", srv.port))
    conn.settimeout(20)  # far beyond the server's 1 s: the server must act first
    return conn


def _read_all(conn: socket.socket) -> bytes:
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return data


def test_a_silent_connection_is_closed(server: EngramServer) -> None:
    with _connect(server) as conn:
        started = time.monotonic()
        assert _read_all(conn) == b""  # closed by the server, before our own timeout
        assert time.monotonic() - started < 15


def test_headers_sent_a_byte_at_a_time_are_cut_off(server: EngramServer) -> None:
    request = b"POST /v1/episodes HTTP/1.1\r\nHost: engram\r\nX-Padding: " + b"a" * 200
    with _connect(server) as conn:
        closed = False
        for byte in request:
            try:
                conn.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            time.sleep(0.05)
        if not closed:
            assert _read_all(conn) == b""


def test_a_normal_client_on_a_kept_alive_connection_is_unaffected(server: EngramServer) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for i in range(3):
            r = client.post("/v1/episodes", json={"task_id": f"t{i}", "action": "a"})
            assert r.status_code == 201, r.text
            time.sleep(0.6)  # idle between requests less than the keep-alive timeout
        assert len(client.get("/v1/episodes").json()["items"]) == 3
