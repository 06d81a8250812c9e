"""libSQL (Turso, sqld) for SQLAlchemy: the server through its HTTP protocol (`hrana`; the
binding holds the GIL while it waits, so a round trip through it stops the process), an
embedded replica's file through libsql-experimental (`libsql_replica` pairs the two).

libsql-experimental's connection has sqlite3's shape but not all of it: parameters must
be tuples, a failure is a ValueError that carries the server's code in its text, and
there is no create_function. `_Connection` and `_Cursor` give the rest of sqlite3's
surface that `sqlite_driver` uses, and turn the errors into sqlite3's classes. The
connections run in aiosqlite's threads, as a SQLite file's do, with `sqlite_driver`'s
one hand-off per statement.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
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
from app.db.backends import hrana, libsql_replica, sqlite_driver

# Parameters as tuples and errors as ValueError("Hrana: ... code: ..."), as in 0.0.55.
LIBSQL = Supported("libsql-experimental", at_least="0.0.55", below="0.0.56", user=__name__)
LIBSQL.check()

_CODE = re.compile(r'code: "([A-Z_]+)"')
_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')
_API_ERROR = re.compile(r'"error":"((?:[^"\\]|\\.)*)"')
_HTTP_ERROR = re.compile(r"http error: `(.*?)`*$")


def _error(exc: Exception) -> sqlite3.Error:
    """The sqlite3 exception that says what libSQL's error says."""
    text = str(exc)
    code = _CODE.search(text)
    message = _MESSAGE.search(text)
    kind = code.group(1) if code else ""
    said = message.group(1).replace('\\"', '"') if message else text.strip("`").strip()
    if kind.startswith("SQLITE_CONSTRAINT") or "constraint failed" in said:
        error: sqlite3.Error = sqlite3.IntegrityError(said)
    elif "status=401" in text or "status=403" in text:
        reason = _API_ERROR.search(text)
        error = sqlite3.OperationalError(
            "the libSQL server refused the credentials (ENGRAM_DATABASE_AUTH_TOKEN): "
            + (reason.group(1) if reason else "unauthorized").replace("`", "")
        )
    elif "http error" in text or "Connection refused" in text:
        reason = _HTTP_ERROR.search(text)
        error = sqlite3.OperationalError(
            f"libSQL server unreachable: {(reason.group(1) if reason else text).strip('`')}"
        )
    else:
        error = sqlite3.OperationalError(said)
    if kind:
        error.sqlite_errorname = kind
    return error


RETRY_PAUSES_S = (0.0, 0.005, 0.02, 0.1)
# What an error says when the connection's state on the server is unknown.
_GONE = ("unreachable", "stream lost", "Transaction timed out", "within a transaction")


def _params(parameters: Any) -> tuple[Any, ...]:
    """Parameters as libSQL takes them: a tuple, with dates as text the way sqlite3's
    default adapters write them, and buffers as bytes (libSQL refuses both)."""
    if parameters is None:
        return ()
    values = tuple(parameters)
    if any(isinstance(v, _ADAPTED) for v in values):
        return tuple(_adapt(v) if isinstance(v, _ADAPTED) else v for v in values)
    return values


_ADAPTED = (date, memoryview, bytearray)


def _adapt(value: date | memoryview | bytearray) -> str | bytes:
    if isinstance(value, datetime):
        return value.isoformat(" ")
    if isinstance(value, date):
        return value.isoformat()
    return bytes(value)


class _Cursor:
    """sqlite3.Cursor's surface over a libsql-experimental cursor."""

    def __init__(self, conn: _Connection) -> None:
        self._conn = conn
        self._cursor = conn.raw.cursor()
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
        values = _params(parameters)
        for pause in (*RETRY_PAUSES_S, None):
            try:
                self._cursor.execute(operation, values)
                self._conn.began(operation)
                return self
            except ValueError as exc:
                # sqld answers "SQLite error: interrupted" now and then when a statement
                # follows another on the same connection (4 to 6 in 100 such pairs in a
                # loop here), and within a transaction the connection keeps answering it.
                # Outside a transaction, or in a read transaction (begun again: its
                # snapshot moves forward, nothing was written), the statement runs again;
                # in a write transaction the error stands, and the caller's transaction
                # is retried or fails whole.
                if pause is None or "interrupted" not in str(exc) or self._conn.writing:
                    raise _error(exc) from exc
                time.sleep(pause)
                self._conn.restart_read()
                self._cursor = self._conn.raw.cursor()
        raise AssertionError("unreachable")

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


def _is_replica(connection: Any) -> bool:
    """Whether SQLAlchemy's DB-API connection wraps an embedded replica's."""
    inner = getattr(getattr(connection, "_connection", None), "_conn", None)
    return bool(getattr(inner, "_replica", False))


class _Connection:
    """sqlite3.Connection's surface over a libsql-experimental connection."""

    def __init__(self, conn: Any, *, replica: bool) -> None:
        self.raw = conn
        self._replica = replica
        # The open transaction began with BEGIN IMMEDIATE (a writer's) or BEGIN (a reader's).
        self.writing = False
        self._reading = False

    @property
    def in_transaction(self) -> bool:
        return bool(self.raw.in_transaction)

    @property
    def isolation_level(self) -> str | None:
        return self.raw.isolation_level  # type: ignore[no-any-return]

    def began(self, operation: str) -> None:
        statement = operation.strip().upper()
        if statement.startswith("BEGIN"):
            self.writing = "IMMEDIATE" in statement or "EXCLUSIVE" in statement
            self._reading = not self.writing
        elif statement in ("COMMIT", "ROLLBACK", "END"):
            self.writing = self._reading = False

    def restart_read(self) -> None:
        """End the read transaction, if one is open, and begin another."""
        if self._reading:
            self.rollback()
            self.raw.cursor().execute("BEGIN", ())
            self._reading = True

    def cursor(self) -> _Cursor:
        return _Cursor(self)

    def execute(self, operation: str, parameters: Any = None) -> _Cursor:
        return self.cursor().execute(operation, parameters)

    def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> _Cursor:
        return self.cursor().executemany(operation, seq_of_parameters)

    def commit(self) -> None:
        wrote = self.raw.in_transaction and self.writing
        self.writing = self._reading = False
        try:
            self.raw.commit()
            if wrote and self._replica:
                self.raw.sync()
        except ValueError as exc:
            raise _error(exc) from exc

    def rollback(self) -> None:
        self.writing = self._reading = False
        try:
            self.raw.rollback()
        except ValueError as exc:
            raise _error(exc) from exc

    def sync(self) -> None:
        try:
            self.raw.sync()
        except ValueError as exc:
            raise _error(exc) from exc

    def close(self) -> None:
        self.raw.close()


def connect(
    database: str, *, sync_url: str | None, auth_token: str
) -> hrana.Connection | libsql_replica.Connection:
    """A connection to the server at `database` (an http(s) URL), or to the embedded
    replica file `database` of the server at `sync_url` (synced once on connect)."""
    if sync_url is None:
        return hrana.connect(database, auth_token=auth_token)

    def local() -> _Connection:
        try:
            conn = libsql_experimental.connect(database, sync_url=sync_url, auth_token=auth_token)
            conn.sync()
            return _Connection(conn, replica=True)
        except ValueError as exc:
            raise _error(exc) from exc

    return libsql_replica.connect(database, sync_url, auth_token=auth_token, make_local=local)


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

    def is_disconnect(self, e: Exception, connection: Any, cursor: Any) -> bool:
        # The server is gone, or ended the transaction itself (it times out a writer
        # that keeps others waiting): the connection's state is unknown, so it is dropped.
        # Not an embedded replica's when the server is gone: its file still reads, and a
        # new connection could not open (the binding syncs on connect).
        text = str(e)
        if "unreachable" in text and _is_replica(connection):
            return False
        gone = any(sign in text for sign in _GONE)
        return gone or super().is_disconnect(e, connection, cursor)  # type: ignore[arg-type]

    def on_connect(self) -> None:  # type: ignore[override]
        # pysqlite's registers a REGEXP function; libSQL's connection has no create_function.
        return None
