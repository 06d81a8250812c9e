"""`engram serve`'s checks before it binds: a payload store that holds none of the
stored episodes' payloads (ENGRAM_BLOB_STORE changed without moving them)."""

from __future__ import annotations

import socket

import pytest

from app.core.config import Settings
from app.main import create_app
from tests.cli.test_commands import engram, one_line_error
from tests.conftest import episode_body, running


@pytest.mark.parametrize(("written", "served"), [("leveldb", "sql"), ("sql", "leveldb")])
async def test_serve_refuses_a_payload_store_without_the_episodes_payloads(
    settings: Settings, written: str, served: str
) -> None:
    """Every episode would read as missing: the server does not start, and says how to
    move the payloads."""
    stored = settings.model_copy(update={"blob_store": written})
    async with running(create_app(stored)) as client:
        assert (await client.post("/v1/episodes", json=episode_body())).status_code == 201

    # Migrated already: the migrations' log lines stay out of the one line.
    refused = engram(settings, "serve", ENGRAM_BLOB_STORE=served, ENGRAM_MIGRATE_ON_START="false")
    line = one_line_error(refused)
    assert f"ENGRAM_BLOB_STORE={served}" in line
    assert "engram backup" in line
    assert "engram restore --force" in line


def test_a_port_in_use_is_one_line_before_anything_else(settings: Settings) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        refused = engram(settings, "serve", "--port", str(port), ENGRAM_HOST="127.0.0.1")
    line = one_line_error(refused)
    assert f"ENGRAM_PORT (--port): 127.0.0.1:{port} cannot be bound" in line
    assert "another `engram serve`" in line
