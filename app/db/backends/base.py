"""What every database kind gives the rest of Engram: an engine, session factories, and
the few things each does its own way (row locks, ignoring duplicate inserts, a memory's
scope test, the backup snapshot). Nothing outside `app/db/backends/` and `app/search/`
asks which database it runs on; it asks the backend."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import orjson
from sqlalchemy import Table
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ColumnElement, TextClause

from app.core.config import Settings
from app.core.metrics import Metrics
from app.db.engine import Transactions


def json_text(value: Any) -> str:
    """JSON columns' serializer for every engine (orjson, as text)."""
    return orjson.dumps(value).decode()


class Maintenance(Protocol):
    """Work of the server's own on its database, beside the requests: WAL checkpoints
    (a SQLite file), replica syncs (libSQL's embedded replica)."""

    def start(self) -> None: ...

    async def stop(self) -> None: ...


class Backend:
    """One database kind. The class says what it can do; an instance (made in the
    lifespan) holds the engine and its transactions."""

    name: ClassVar[str]
    # The SQLAlchemy async driver it is reached through (how an engine names its kind).
    driver: ClassVar[str]
    # SELECT ... FOR UPDATE takes row locks (PostgreSQL); elsewhere a write transaction is
    # the only writer and reading is enough.
    row_locks: ClassVar[bool] = False
    # One write transaction at a time for the whole database (SQLite): the process's
    # writers queue on an asyncio lock instead of SQLite's busy handler.
    one_writer: ClassVar[bool] = False
    # The writer may commit new memories and recall logs straight through the driver
    # (SQLite: one hand-off to the connection's thread).
    direct_writes: ClassVar[bool] = False
    # Migrations alter tables by copying them (SQLite's ALTER TABLE cannot do the rest).
    batch_alter: ClassVar[bool] = False
    # FTS5's tokenizer probe runs in a private in-memory SQLite, not in a temp table of
    # the database's (a libSQL server has none).
    local_probe: ClassVar[bool] = False

    @staticmethod
    def create_engine(settings: Settings) -> AsyncEngine:
        raise NotImplementedError

    def __init__(self, settings: Settings, engine: AsyncEngine) -> None:
        self.settings = settings
        self.engine = engine
        self.transactions = Transactions(engine, one_writer=self.one_writer)

    @property
    def database_file(self) -> str | None:
        """The database's file, for a database that is one (None otherwise)."""
        return None

    def checkpointer(self, metrics: Metrics | None) -> Maintenance | None:
        """The database's maintenance beside the requests, if it needs any."""
        return None

    def observe(self, metrics: Metrics) -> None:
        """Add the database's own figures, if it has any, to the app's metrics."""

    async def dispose(self) -> None:
        await self.engine.dispose()

    # -- SQL that differs by database ---------------------------------------------------

    @staticmethod
    def insert_ignoring_duplicates(table: Table, index_elements: list[str]) -> Insert:
        """INSERT that skips rows whose key exists (ON CONFLICT DO NOTHING)."""
        raise NotImplementedError

    @staticmethod
    def scope_applies(n_ids: int) -> ColumnElement[bool] | TextClause:
        """The memory applies to a request scope of `n_ids` ids (but level), given by
        `scope_params`: every key of the memory's scope but level equals the request's
        (`app.learning.features.scope_compatible`)."""
        raise NotImplementedError

    @staticmethod
    def scope_params(request_ids: list[tuple[str, str]]) -> dict[str, Any]:
        """The parameters of `scope_applies` for the request's (key, value) ids."""
        raise NotImplementedError

    @staticmethod
    def clip(value: Any) -> Any:
        """`value` clipped to [0, 1]."""
        raise NotImplementedError

    @staticmethod
    async def read_snapshot(conn: AsyncConnection) -> None:
        """Make the transaction on `conn` read one snapshot of the database."""

    @staticmethod
    async def transaction_lock(
        conn: AsyncSession | AsyncConnection, name: str, *, wait: bool = True
    ) -> bool:
        """Take the lock called `name` until the transaction on `conn` ends, so that the
        transactions that take it run one at a time, in every process (PostgreSQL: an
        advisory lock). Without `wait`: whether it was free (and is now held). A database
        with one writer at a time needs none: its write transactions already run alone."""
        return True
