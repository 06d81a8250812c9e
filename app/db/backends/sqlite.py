"""SQLite (aiosqlite, WAL): the embedded default."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import orjson
from sqlalchemy import Table, event, func, text
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import TextClause

from app.core.config import Settings
from app.core.metrics import Metrics
from app.db import probe
from app.db.backends import checkpoint, sqlite_driver
from app.db.backends.base import Backend, Maintenance, json_text
from app.db.backends.checkpoint import Checkpointer
from app.db.engine import WRITE_OPTION


class SQLiteBackend(Backend):
    name: ClassVar[str] = "sqlite"
    driver: ClassVar[str] = "aiosqlite"
    one_writer = True
    direct_writes = True
    batch_alter = True

    @staticmethod
    def create_engine(settings: Settings) -> AsyncEngine:
        url = make_url(settings.database_url)
        if url.database and url.database != ":memory:":
            Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(
            url,
            # aiosqlite with one thread hand-off per statement instead of four.
            module=sqlite_driver.dbapi(),
            json_serializer=json_text,
            json_deserializer=orjson.loads,
            connect_args={"timeout": settings.sqlite_busy_timeout_ms / 1000},
            pool_size=settings.db_pool_size,
            max_overflow=0,
        )
        synchronous = settings.sqlite_synchronous.value
        busy_ms = settings.sqlite_busy_timeout_ms
        # With the server's checkpoint thread, commits checkpoint only past a larger log.
        autocheckpoint = (
            checkpoint.SAFETY_PAGES
            if settings.sqlite_checkpoint_interval_ms
            else checkpoint.SQLITE_DEFAULT_PAGES
        )

        @event.listens_for(engine.sync_engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # pysqlite's own transaction handling is turned off so that BEGIN is
            # issued by the "begin" hook below.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={synchronous}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={busy_ms}")
            cur.execute(f"PRAGMA wal_autocheckpoint={autocheckpoint}")
            # The tokenizer probe (app/db/probe.py): search learns query terms' stems in it.
            for statement in probe.CREATE:
                cur.execute(statement)
            cur.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _on_begin(conn: Any) -> None:
            # Writers begin IMMEDIATE: they take the write lock up front and wait
            # busy_timeout for it, instead of failing with SQLITE_BUSY when a read
            # transaction is upgraded. Readers stay deferred and never block.
            mode = conn.get_execution_options().get(WRITE_OPTION, False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if mode else "BEGIN")

        return engine

    @property
    def database_file(self) -> str | None:
        path = self.engine.url.database
        return None if path in (None, "", ":memory:") else path

    def checkpointer(self, metrics: Metrics | None) -> Maintenance | None:
        interval_ms = self.settings.sqlite_checkpoint_interval_ms
        path = self.database_file
        if path is None or not interval_ms:
            return None
        return Checkpointer(
            path,
            interval_s=interval_ms / 1000,
            busy_timeout_ms=self.settings.sqlite_busy_timeout_ms,
            metrics=metrics,
        )

    @staticmethod
    def insert_ignoring_duplicates(table: Table, index_elements: list[str]) -> Insert:
        return sqlite_insert(table).on_conflict_do_nothing(index_elements=index_elements)

    @staticmethod
    def scope_applies(n_ids: int) -> TextClause:
        # No key of the memory's scope (but level) is missing from the request's.
        pairs = ", ".join(f"(:applies_key_{i}, :applies_value_{i})" for i in range(n_ids))
        held = (
            f" AND (s.type <> 'text' OR (s.key, s.value) NOT IN (VALUES {pairs}))" if n_ids else ""
        )
        return text(
            "NOT EXISTS (SELECT 1 FROM json_each(memories.scope) AS s "
            f"WHERE s.key <> 'level'{held})"
        )

    @staticmethod
    def scope_params(request_ids: list[tuple[str, str]]) -> dict[str, Any]:
        params: dict[str, Any] = {}
        for i, (key, value) in enumerate(request_ids):
            params[f"applies_key_{i}"] = key
            params[f"applies_value_{i}"] = value
        return params

    @staticmethod
    def clip(value: Any) -> Any:
        return func.max(0.0, func.min(1.0, value))
