"""libSQL (Turso, sqld) for SQLAlchemy, through libsql-experimental.

libsql-experimental's connection has sqlite3's shape (cursor, execute, commit, rollback,
in_transaction) but not all of it: parameters must be tuples, a failure is a ValueError
that carries the server's code in its text, and there is no create_function. `_Connection`
and `_Cursor` give the rest of sqlite3's surface that `sqlite_driver` uses, and turn the
errors into sqlite3's classes, so SQLAlchemy reports a constraint as an IntegrityError and
an unreachable server as an OperationalError. The connection runs in aiosqlite's thread,
as a SQLite file's does, with `sqlite_driver`'s one hand-off per statement.

The binding holds the GIL while it waits for the server, so a remote round trip (about
1 ms on loopback) stops the process's other threads and its event loop for that long.
An embedded replica reads its local file instead (~20 us a statement).

A replica connection syncs from the server after each write transaction it commits.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

# The binding logs every replication handshake at INFO through Rust's tracing.
os.environ.setdefault("RUST_LOG", "warn")

import aiosqlite
import libsql_experimental  # type: ignore[import-untyped]
from sqlalchemy import pool
from sqlalchemy.dialects.sqlite.aiosqlite import SQLiteDialect_aiosqlite
from sqlalchemy.engine import URL
from sqlalchemy.util.concurrency import await_

from app.core.versions import Supported
from app.db.backends import sqlite_driver

# Parameters as tuples and errors as ValueError("Hrana: ... code: ..."), as in 0.0.55.
LIBSQL = Supported("libsql-experimental", at_least="0.0.55", below="0.0.56", user=__name__)
LIBSQL.check()

_CODE = re.compile(r'code: "([A-Z_]+)"')
_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')


def _error(exc: Exception) -> sqlite3.Error:
    """The sqlite3 exception that says what libSQL's error says."""
    text = str(exc)
    code = _CODE.search(text)
    message = _MESSAGE.search(text)
    said = message.group(1).replace('\\"', '"') if message else text
    kind = code.group(1) if code else ""
    if kind.startswith("SQLITE_CONSTRAINT") or "constraint failed" in said:
        error: sqlite3.Error = sqlite3.IntegrityError(said)
    elif kind in ("SQL_INPUT_ERROR", "SQLITE_UNKNOWN", "SQLITE_ERROR") or "no such" in said:
        error = sqlite3.OperationalError(said)
    elif code is None and "Hrana" not in text:
        # Not the server's answer: a connection refused, a timeout, a reset.
        error = sqlite3.OperationalError(f"libSQL server unreachable: {said}")
    else:
        error = sqlite3.OperationalError(said)
    if kind:
        error.sqlite_errorname = kind
    return error


def _params(parameters: Any) -> tuple[Any, ...]:
    """Parameters as libSQL takes them: a tuple, with dates as text the way sqlite3's
    default adapters write them (libSQL refuses date objects)."""
    if parameters is None:
        return ()
    values = tuple(parameters)
    if any(isinstance(v, date) for v in values):
        return tuple(
            v.isoformat(" ")
            if isinstance(v, datetime)
            else v.isoformat()
            if isinstance(v, date)
            else v
            for v in values
        )
    return values


class _Cursor:
    """sqlite3.Cursor's surface over a libsql-experimental cursor."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor
        self.arraysize = 1

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid  # type: ignore[no-any-return]

    def execute(self, operation: str, parameters: Any = None) -> _Cursor:
        try:
            self._cursor.execute(operation, _params(parameters))
        except ValueError as exc:
            raise _error(exc) from exc
        return self

    def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> _Cursor:
        try:
            self._cursor.executemany(operation, [_params(p) for p in seq_of_parameters])
        except ValueError as exc:
            raise _error(exc) from exc
        return self

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchmany(self, size: int | None = None) -> list[Any]:
        return list(self._cursor.fetchmany(size or self.arraysize))

    def fetchall(self) -> list[Any]:
        return list(self._cursor.fetchall())

    def close(self) -> None:
        self._cursor.close()


class _Connection:
    """sqlite3.Connection's surface over a libsql-experimental connection."""

    def __init__(self, conn: Any, *, replica: bool) -> None:
        self._conn = conn
        self._replica = replica

    @property
    def in_transaction(self) -> bool:
        return bool(self._conn.in_transaction)

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level  # type: ignore[no-any-return]

    def cursor(self) -> _Cursor:
        return _Cursor(self._conn.cursor())

    def execute(self, operation: str, parameters: Any = None) -> _Cursor:
        return self.cursor().execute(operation, parameters)

    def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> _Cursor:
        return self.cursor().executemany(operation, seq_of_parameters)

    def commit(self) -> None:
        wrote = self._conn.in_transaction
        try:
            self._conn.commit()
            if wrote and self._replica:
                self._conn.sync()
        except ValueError as exc:
            raise _error(exc) from exc

    def rollback(self) -> None:
        try:
            self._conn.rollback()
        except ValueError as exc:
            raise _error(exc) from exc

    def sync(self) -> None:
        try:
            self._conn.sync()
        except ValueError as exc:
            raise _error(exc) from exc

    def close(self) -> None:
        self._conn.close()


def connect(database: str, *, sync_url: str | None, auth_token: str) -> _Connection:
    """A connection to the server at `database` (an http(s) URL), or to the embedded
    replica file `database` of the server at `sync_url` (synced once on connect)."""
    try:
        if sync_url is None:
            return _Connection(
                libsql_experimental.connect(database, auth_token=auth_token), replica=False
            )
        conn = libsql_experimental.connect(database, sync_url=sync_url, auth_token=auth_token)
        conn.sync()
        return _Connection(conn, replica=True)
    except ValueError as exc:
        raise _error(exc) from exc


class DBAPI(sqlite_driver.DBAPI):
    def connect(self, *arg: Any, **kw: Any) -> sqlite_driver.Connection:
        database, sync_url, auth_token = kw["database"], kw.get("sync_url"), kw["auth_token"]

        def connector() -> Any:
            return connect(database, sync_url=sync_url, auth_token=auth_token)

        connection = aiosqlite.Connection(connector, iter_chunk_size=64)
        connection._thread.daemon = True
        return sqlite_driver.Connection(self, await_(connection))


class LibSQLDialect(SQLiteDialect_aiosqlite):
    """SQLite's dialect with the libSQL connection (registered as sqlite+libsql)."""

    driver = "libsql"
    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> DBAPI:
        return DBAPI()

    @classmethod
    def get_pool_class(cls, url: URL) -> type[pool.Pool]:
        return pool.AsyncAdaptedQueuePool

    def create_connect_args(self, url: URL) -> tuple[Sequence[Any], dict[str, Any]]:
        # Everything comes in the engine's connect_args (the backend builds them).
        return [], {}

    def on_connect(self) -> None:  # type: ignore[override]
        # pysqlite's registers a REGEXP function; libSQL's connection has no create_function.
        return None
