"""Engine and session factories, one per backend, chosen by the URL's scheme."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from app.core.config import Settings
from app.db import checkpoint, probe, sqlite_driver
from app.db.errors import DatabaseConfigError, DatabaseUnreachable, is_store_outage, outage_reason

WRITE_OPTION = "engram_write"


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _sqlite_engine(settings: Settings) -> AsyncEngine:
    url = make_url(settings.database_url)
    if url.database and url.database != ":memory:":
        Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(
        url,
        # aiosqlite with one thread hand-off per statement instead of four.
        module=sqlite_driver.dbapi() if url.drivername == "sqlite+aiosqlite" else None,
        json_serializer=_json_dumps,
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


def _postgres_engine(settings: Settings) -> AsyncEngine:
    return create_async_engine(
        settings.database_url,
        json_serializer=_json_dumps,
        json_deserializer=orjson.loads,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_pool_size,
        pool_pre_ping=True,
        connect_args={
            "server_settings": {
                "lock_timeout": str(settings.db_lock_timeout_ms),
                "statement_timeout": str(settings.db_statement_timeout_ms),
            }
        },
    )


# Each backend with the one async driver it is written for.
_FACTORIES: dict[str, tuple[str, Callable[[Settings], AsyncEngine]]] = {
    "sqlite": ("aiosqlite", _sqlite_engine),
    "postgresql": ("asyncpg", _postgres_engine),
}
_EXAMPLES = "sqlite+aiosqlite:///./data/engram.db or postgresql+asyncpg://user:password@host/db"


def create_engine(settings: Settings) -> AsyncEngine:
    """The engine for ENGRAM_DATABASE_URL; DatabaseConfigError, saying what to set, for a
    URL Engram cannot use."""
    try:
        url = make_url(settings.database_url)
    except ArgumentError:
        raise DatabaseConfigError(
            f"ENGRAM_DATABASE_URL is not a database URL; use {_EXAMPLES}"
        ) from None
    # From the URL's text: asking SQLAlchemy would load (or fail to find) the dialect.
    backend, _, driver = url.drivername.partition("+")
    if "libsql" in (backend, driver):
        raise DatabaseConfigError(
            f"ENGRAM_DATABASE_URL: libSQL/Turso is not supported yet; use {_EXAMPLES}"
        )
    if backend not in _FACTORIES:
        raise DatabaseConfigError(
            f"ENGRAM_DATABASE_URL: {backend!r} databases are not supported; use {_EXAMPLES}"
        )
    wanted, factory = _FACTORIES[backend]
    if driver != wanted:
        fixed = url.set(drivername=f"{backend}+{wanted}").render_as_string(hide_password=True)
        raise DatabaseConfigError(
            f"ENGRAM_DATABASE_URL: Engram reaches {backend} through {wanted}: use {fixed}"
        )
    try:
        return factory(settings)
    except OSError as exc:  # SQLite: the file's directory cannot be created
        message = f"ENGRAM_DATABASE_URL: cannot create the database: {exc}"
        raise DatabaseConfigError(message) from exc


async def check_connection(engine: AsyncEngine) -> None:
    """Connect once; DatabaseUnreachable, saying what to check, if that fails."""
    try:
        async with engine.connect():
            pass
    except Exception as exc:
        if not (is_store_outage(exc) or isinstance(exc, DBAPIError)):
            raise
        where = engine.url.render_as_string(hide_password=True)
        check = (
            "check ENGRAM_DATABASE_URL (a file in a directory this user may write)"
            if engine.url.get_backend_name() == "sqlite"
            else "check ENGRAM_DATABASE_URL and that the server is running and reachable"
        )
        raise DatabaseUnreachable(
            f"cannot connect to the database {where} ({outage_reason(exc)}): {check}"
        ) from exc


@contextlib.asynccontextmanager
async def transaction(
    factory: async_sessionmaker[AsyncSession], *, lock: asyncio.Lock | None = None
) -> AsyncIterator[AsyncSession]:
    """A session whose transaction commits when the block ends and rolls back when it
    raises; with `lock` (SQLite: the process's writers), held for the whole of it."""
    async with contextlib.AsyncExitStack() as stack:
        if lock is not None:
            await stack.enter_async_context(lock)
        session = await stack.enter_async_context(factory())
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


def create_sessionmaker(
    engine: AsyncEngine, *, write: bool = False
) -> async_sessionmaker[AsyncSession]:
    bind = engine.execution_options(**{WRITE_OPTION: True}) if write else engine
    return async_sessionmaker(bind, expire_on_commit=False, autoflush=False)
