"""libSQL (Turso, sqld) for SQLAlchemy: the server through its HTTP protocol (`hrana`; the
binding holds the GIL while it waits, so a round trip through it stops the process), an
embedded replica's file through libsql-experimental (`libsql_replica` pairs the two).

libsql-experimental's connection reads the replica's file and syncs it: its parameters
must be tuples, a failure is a ValueError that carries the server's code in its text
(`_error` turns it into sqlite3's classes), and there is no create_function. The
connections run in aiosqlite's threads, as a SQLite file's do, with `sqlite_driver`'s
one hand-off per statement.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Sequence
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


def _is_replica(connection: Any) -> bool:
    """Whether SQLAlchemy's DB-API connection wraps an embedded replica's."""
    inner = getattr(getattr(connection, "_connection", None), "_conn", None)
    return isinstance(inner, libsql_replica.Connection)


class _File:
    """An embedded replica's file through the binding: the reads outside a transaction,
    and the syncs that pull the server's changes (`libsql_replica.Local` holds the one
    per process and its lock)."""

    def __init__(self, conn: Any) -> None:
        self.raw = conn

    def read(self, operation: str, parameters: Any, *, many: bool) -> hrana.Result:
        found = hrana.Result(None)
        try:
            cursor = self.raw.cursor()
            if many:
                cursor.executemany(operation, [_params(p) for p in parameters])
            else:
                cursor.execute(operation, _params(parameters))
            found.description = cursor.description
            if found.description:
                found.rows = [tuple(row) for row in cursor.fetchall()]
        except ValueError as exc:
            raise _error(exc) from exc
        found.rowcount, found.lastrowid = int(cursor.rowcount), cursor.lastrowid
        return found

    def sync(self) -> None:
        try:
            self.raw.sync()
        except ValueError as exc:
            raise _error(exc) from exc


def connect(
    database: str, *, sync_url: str | None, auth_token: str
) -> hrana.Connection | libsql_replica.Connection:
    """A connection to the server at `database` (an http(s) URL), or to the embedded
    replica file `database` of the server at `sync_url` (synced once on connect)."""
    if sync_url is None:
        return hrana.connect(database, auth_token=auth_token)

    def local() -> _File:
        try:
            conn = libsql_experimental.connect(database, sync_url=sync_url, auth_token=auth_token)
        except ValueError as exc:
            raise _error(exc) from exc
        file = _File(conn)
        file.sync()
        return file

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
