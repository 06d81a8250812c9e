"""libSQL/Turso: URLs and tokens, a server that asks for a JWT, and the embedded replica,
against real sqld servers (the whole suite also runs on one: ENGRAM_TEST_DATABASE_URL)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from app.core.config import Settings
from app.db.backends import LibSQLBackend, check_connection, create_engine, kind_for
from app.db.backends.libsql import server_url
from app.db.errors import DatabaseConfigError, DatabaseUnreachable
from app.db.migrate import migrate
from tests import sqld
from tests.server import EngramServer

needs_sqld = pytest.mark.skipif(sqld.binary() is None, reason="no sqld binary here")


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("libsql://db.example.turso.io", "https://db.example.turso.io"),
        ("libsql://127.0.0.1:8080?tls=0", "http://127.0.0.1:8080"),
        ("https://db.example.turso.io", "https://db.example.turso.io"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ],
)
def test_libsql_urls_name_their_server(url: str, server: str) -> None:
    assert kind_for(Settings(database_url=url)) is LibSQLBackend
    assert server_url(url) == server


def test_turso_names_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    monkeypatch.setenv("TURSO_DATABASE_URL", "libsql://db.example.turso.io")
    monkeypatch.setenv("TURSO_AUTH_TOKEN", "a-token")
    settings = Settings()
    assert settings.database_url == "libsql://db.example.turso.io"
    assert settings.database_auth_token is not None
    assert settings.database_auth_token.get_secret_value() == "a-token"
    # Engram's own names win.
    monkeypatch.setenv("ENGRAM_DATABASE_URL", "libsql://other.turso.io")
    assert Settings().database_url == "libsql://other.turso.io"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("sqlite+libsql:///x.db", "libsql://"),
        ("libsql://", "libsql://HOST"),
    ],
)
def test_unusable_libsql_urls_say_what_to_write(url: str, says: str) -> None:
    with pytest.raises(DatabaseConfigError) as refused:
        create_engine(Settings(database_url=url))
    assert says in str(refused.value)


@pytest.fixture
def jwt() -> sqld.JwtKey:
    return sqld.JwtKey()


@pytest.fixture
def secured(tmp_path: Path, jwt: sqld.JwtKey) -> Iterator[sqld.Sqld]:
    if sqld.binary() is None:
        pytest.skip("no sqld binary here")
    server = sqld.Sqld(tmp_path / "sqld", jwt=jwt).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def primary(tmp_path: Path) -> Iterator[sqld.Sqld]:
    if sqld.binary() is None:
        pytest.skip("no sqld binary here")
    server = sqld.Sqld(tmp_path / "sqld").start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_server_that_asks_for_a_token(secured: sqld.Sqld, jwt: sqld.JwtKey) -> None:
    for token in (None, "not-a-jwt"):
        engine = create_engine(Settings(database_url=secured.url, database_auth_token=token))
        with pytest.raises(DatabaseUnreachable) as refused:
            await check_connection(engine)
        assert "refused the credentials" in str(refused.value)
        await engine.dispose()
    engine = create_engine(Settings(database_url=secured.url, database_auth_token=jwt.token()))
    try:
        await check_connection(engine)
        await migrate(engine)
        async with engine.connect() as conn:
            assert await conn.scalar(text("SELECT count(*) FROM memories")) == 0
    finally:
        await engine.dispose()


async def test_serve_on_turso_names_with_a_token(
    secured: sqld.Sqld, jwt: sqld.JwtKey, tmp_path: Path
) -> None:
    server = EngramServer(
        tmp_path / "engram",
        database_url="sqlite+aiosqlite:///unused.db",
        TURSO_DATABASE_URL=secured.url,
        TURSO_AUTH_TOKEN=jwt.token(),
    )
    server.env.pop("ENGRAM_DATABASE_URL")
    server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url) as client:
            made = await client.post(
                "/v1/memories", json={"type": "fact", "content": "the token opens the door"}
            )
            assert made.status_code == 201, made.text
            found = await client.post("/v1/memories/search", json={"query": "door"})
            assert [h["memory"]["id"] for h in found.json()["hits"]] == [made.json()["id"]]
    finally:
        server.stop()


@pytest.fixture
async def apps(primary: sqld.Sqld, tmp_path: Path) -> AsyncIterator[tuple[str, object]]:
    """Two services on one server: one (a process of its own: two services' writers in one
    process would wait on each other, see README) reaches it directly, one in this process
    through an embedded replica."""
    from app.main import create_app

    direct = EngramServer(tmp_path / "direct", database_url=primary.url).start()
    replica = create_app(
        Settings(
            database_url=primary.url,
            log_requests=False,
            sweep_interval_s=0,
            blob_dir=tmp_path / "replica-blobs",
            database_replica=tmp_path / "replica" / "engram.db",
            database_sync_interval_s=0.1,
        )
    )
    try:
        async with replica.router.lifespan_context(replica):
            yield direct.url, replica
    finally:
        direct.stop()


def _client(app: object) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://localhost")


async def test_the_embedded_replica_reads_locally_and_writes_to_the_server(
    apps: tuple[str, object], primary: sqld.Sqld, tmp_path: Path
) -> None:
    direct, replica = apps
    async with httpx.AsyncClient(base_url=direct) as d, _client(replica) as r:
        # A write through the replica goes to the server: the other service reads it at once,
        # and the replica reads its own write.
        made = await r.post("/v1/memories", json={"type": "fact", "content": "replicas sync"})
        assert made.status_code == 201, made.text
        memory_id = made.json()["id"]
        assert (await d.get(f"/v1/memories/{memory_id}")).status_code == 200
        assert (await r.get(f"/v1/memories/{memory_id}")).status_code == 200
        # A write elsewhere reaches the replica by its sync.
        other = await d.post("/v1/memories", json={"type": "fact", "content": "pulled later"})
        other_id = other.json()["id"]
        deadline = time.monotonic() + 10
        while (await r.get(f"/v1/memories/{other_id}")).status_code != 200:
            assert time.monotonic() < deadline, "the replica never synced the other write"
            await asyncio.sleep(0.05)
        found = await r.post("/v1/memories/search", json={"query": "pulled"})
        assert found.status_code == 200, found.text
        hits = found.json()["hits"]
        assert [h["memory"]["id"] for h in hits] == [other_id]
        # Its lag is exposed, and held near its sync interval (0.1 s here).
        ready = (await r.get("/ready")).json()
        assert ready["replica"]["lag_s"] < 1.0, ready
        assert ready["replica"]["sync_interval_s"] == 0.1
        metrics = (await r.get("/metrics")).text
        assert "engram_db_replica_lag_seconds " in metrics
        # Reads are the replica's own: they answer with the server gone, while its syncs
        # (every 0.1 s here), the worker's and the embedder's writes fail meanwhile. (A
        # failed write did drop the one connection, which cannot reopen without the
        # server; a search waited 30 s on the vector index's catch-up for it: 503.)
        primary.stop()
        for _ in range(5):
            await asyncio.sleep(0.2)
            assert (await r.get(f"/v1/memories/{memory_id}")).status_code == 200
            found = await r.post("/v1/memories/search", json={"query": "replicas"})
            assert found.status_code == 200, found.text
            assert [h["memory"]["id"] for h in found.json()["hits"]] == [memory_id]
        # Meanwhile its lag grows, and the failed syncs are counted.
        gone = (await r.get("/ready")).json()["replica"]
        assert gone["lag_s"] >= 0.8, gone
        assert gone["failures"] > 0, gone
    # The replica is a local SQLite file holding the rows.
    assert (tmp_path / "replica" / "engram.db").stat().st_size > 0
    syncs = replica.state.engram.checkpointer.syncs  # type: ignore[attr-defined]
    assert syncs > 0


async def test_two_processes_share_a_libsql_server(primary: sqld.Sqld, tmp_path: Path) -> None:
    """Two `engram serve` processes, payloads in SQL, one libSQL server: each reads what
    the other wrote, and both write at once (the server serialises their writers)."""
    servers = [
        EngramServer(
            tmp_path / f"api-{i}",
            database_url=primary.url,
            ENGRAM_BLOB_STORE="sql",
            ENGRAM_LEARNING__WORKER="false",
        ).start()
        for i in range(2)
    ]
    try:
        async with (
            httpx.AsyncClient(base_url=servers[0].url, timeout=30) as a,
            httpx.AsyncClient(base_url=servers[1].url, timeout=30) as b,
        ):

            async def write(client: httpx.AsyncClient, n: int) -> list[str]:
                ids = []
                for i in range(n):
                    body = {"task_id": f"t{i}", "steps": [{"action": "edit"}, {"action": "test"}]}
                    made = await client.post("/v1/episodes", json=body)
                    assert made.status_code == 201, made.text
                    ids.append(made.json()["id"])
                return ids

            from_a, from_b = await asyncio.gather(write(a, 25), write(b, 25))
            for client, ids in ((b, from_a), (a, from_b)):
                for episode_id in ids:
                    got = await client.get(f"/v1/episodes/{episode_id}")
                    assert got.status_code == 200, got.text
                    assert [s["action"] for s in got.json()["steps"]] == ["edit", "test"]
            memory = await a.post("/v1/memories", json={"type": "fact", "content": "shared"})
            found = await b.post("/v1/memories/search", json={"query": "shared"})
            assert [h["memory"]["id"] for h in found.json()["hits"]] == [memory.json()["id"]]
    finally:
        for server in servers:
            server.stop()


async def test_read_transactions_survive_the_servers_interruptions(
    primary: sqld.Sqld, tmp_path: Path
) -> None:
    """sqld answers "interrupted" to some statements that follow another on a connection
    (a search's ranking query after its full-text one: 4 to 6 in 100 here); the read
    transaction is begun again and the search answers."""
    from app.main import create_app

    app = create_app(
        Settings(database_url=primary.url, blob_dir=tmp_path / "blobs", log_requests=False)
    )
    async with app.router.lifespan_context(app), _client(app) as client:
        await client.post("/v1/memories", json={"type": "fact", "content": "port 8080 default"})
        for _ in range(150):
            found = await client.post("/v1/memories/search", json={"query": "port default"})
            assert found.status_code == 200, found.text
