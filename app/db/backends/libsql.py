"""libSQL (Turso, sqld): SQLite's SQL on a server, reached over HTTP, or an embedded replica.

ENGRAM_DATABASE_URL names the server: `libsql://host[:port]` (TLS; `?tls=0` for plain
HTTP, as a local sqld serves), `https://host` or `http://host:port`; with
ENGRAM_DATABASE_AUTH_TOKEN (or TURSO_AUTH_TOKEN) when it asks for one. With
ENGRAM_DATABASE_REPLICA=FILE the process keeps that file as an embedded replica: reads
are served from it, writes go to the server, and it is synced after every write
transaction and every ENGRAM_DATABASE_SYNC_INTERVAL_S.

The dialect is SQLite's (`libsql_driver`): FTS5, JSON1 and the migrations are the same.
What differs: no temp tables on the server (search's tokenizer probe runs in a private
in-memory SQLite), no PRAGMAs of the file's own, no in-memory search index (it reads
a local file), and one write transaction at a time across every process (sqld's lock).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import orjson
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import event
from sqlalchemy.dialects import registry
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from app.core.config import Settings
from app.core.metrics import Metrics
from app.core.tasks import cancel_and_wait
from app.db.backends import sqlite_driver
from app.db.backends.base import json_text
from app.db.backends.sqlite import SQLiteBackend
from app.db.engine import WRITE_OPTION
from app.db.errors import DatabaseConfigError

log = logging.getLogger("engram.db")

# Loaded on first use, so that libsql-experimental (an extra) is imported only when asked for.
registry.register("sqlite.libsql", "app.db.backends.libsql_driver", "LibSQLDialect")

SCHEMES = ("libsql", "https", "http")


def server_url(database_url: str) -> str:
    """The http(s) URL of the server a libsql://, https:// or http:// URL names."""
    url = make_url(database_url)
    scheme = url.drivername
    if scheme == "libsql":
        plain = str(url.query.get("tls", "1")) in ("0", "false", "no")
        scheme = "http" if plain else "https"
    if not url.host:
        raise DatabaseConfigError(
            "ENGRAM_DATABASE_URL: a libSQL URL names its server: libsql://HOST[:PORT]"
        )
    port = f":{url.port}" if url.port else ""
    return f"{scheme}://{url.host}{port}"


class ReplicaSync:
    """Syncs the embedded replica from the server every interval, through the process's
    one connection to the file (`libsql_replica.Local`: the binding's replica connections
    each pull frames into the file, and two of them corrupted it under load here). Its
    lag (time since the last sync that succeeded) is in /ready and /metrics."""

    def __init__(self, engine: AsyncEngine, *, interval_s: float) -> None:
        self.engine = engine
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        self.syncs = 0
        self.failures = 0
        self._synced_at = time.monotonic()  # connecting synced it

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)

    def lag_s(self) -> float:
        """Seconds since the replica last synced: changes made on the server since then
        may not be read yet."""
        return time.monotonic() - self._synced_at

    def figures(self) -> dict[str, Any]:
        return {
            "lag_s": round(self.lag_s(), 3),
            "sync_interval_s": self.interval_s,
            "syncs": self.syncs,
            "failures": self.failures,
        }

    async def sync(self) -> None:
        started = time.monotonic()
        async with self.engine.connect() as conn:
            adapter = (await conn.get_raw_connection()).dbapi_connection
            assert isinstance(adapter, sqlite_driver.Connection)
            # In the connection's own thread, like its statements.
            connection = adapter._connection
            await connection._execute(connection._conn.sync)
        self.syncs += 1
        self._synced_at = started

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.sync()
            except Exception as exc:
                self.failures += 1
                log.warning("replica sync failed", extra={"error": str(exc)[:200]})


class ReplicaLag(Collector):
    def __init__(self, replica: ReplicaSync) -> None:
        self.replica = replica

    def collect(self) -> Iterator[GaugeMetricFamily]:
        found = GaugeMetricFamily(
            "engram_db_replica_lag_seconds",
            "Seconds since the embedded replica last synced from the libSQL server",
        )
        found.add_metric([], self.replica.lag_s())
        yield found


class LibSQLBackend(SQLiteBackend):
    name: ClassVar[str] = "libsql"
    driver: ClassVar[str] = "libsql"
    one_writer = True
    direct_writes = True
    batch_alter = True
    # Search learns stems in a private in-memory SQLite: the server has no temp tables.
    local_probe: ClassVar[bool] = True

    @staticmethod
    def create_engine(settings: Settings) -> AsyncEngine:
        try:
            from app.db.backends import libsql_driver  # noqa: F401
        except ImportError as exc:
            raise DatabaseConfigError(
                "ENGRAM_DATABASE_URL names a libSQL server, but libsql-experimental is not "
                "installed: pip install 'engram[libsql]'"
            ) from exc
        server = server_url(settings.database_url)
        token = settings.database_auth_token
        args: dict[str, Any] = {
            "database": server,
            "sync_url": None,
            "auth_token": token.get_secret_value() if token is not None else "",
        }
        replica = settings.database_replica is not None
        if settings.database_replica is not None:
            path = settings.database_replica.expanduser()
            path.parent.mkdir(parents=True, exist_ok=True)
            args.update(database=str(path), sync_url=server)
        where = make_url(server)
        engine = create_async_engine(
            # The server's address, for messages; the connection is made from `args`.
            URL.create(
                "sqlite+libsql",
                host=where.host,
                port=where.port,
                query={"replica": "1"} if replica else {},
            ),
            connect_args=args,
            json_serializer=json_text,
            json_deserializer=orjson.loads,
            # With an embedded replica too: each connection has its own stream to the
            # server, and they share the process's one connection to the file.
            pool_size=settings.db_pool_size,
            max_overflow=0,
        )

        @event.listens_for(engine.sync_engine, "begin")
        def _on_begin(conn: Any) -> None:
            # As on SQLite: writers take the lock up front, readers never block. An
            # embedded replica sends every explicit transaction to the server (it might
            # write), so there readers run without one, each statement on the local file
            # as it is then; a backup's snapshot begins one (`read_snapshot`).
            if conn.get_execution_options().get(WRITE_OPTION, False):
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            elif not replica:
                conn.exec_driver_sql("BEGIN")

        return engine

    @staticmethod
    async def read_snapshot(conn: AsyncConnection) -> None:
        # Where readers begin no transaction (an embedded replica), the snapshot's is begun
        # here; elsewhere the read transaction already is one.
        if conn.engine.url.query.get("replica"):
            await conn.exec_driver_sql("BEGIN")

    @property
    def database_file(self) -> str | None:
        return None

    def observe(self, metrics: Metrics) -> None:
        from app.db.backends import hrana_wire

        metrics.registry.register(hrana_wire.RoundTrips())

    def checkpointer(self, metrics: Metrics | None) -> ReplicaSync | None:
        settings = self.settings
        interval = settings.database_sync_interval_s
        if settings.database_replica is None or not interval:
            return None
        replica = ReplicaSync(self.engine, interval_s=interval)
        if metrics is not None:
            metrics.registry.register(ReplicaLag(replica))
        return replica
