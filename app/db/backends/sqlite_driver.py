"""aiosqlite for SQLAlchemy with one thread hand-off per statement.

aiosqlite runs each call on the connection in the connection's own thread, and
SQLAlchemy's adapter makes four such calls for every statement: open a cursor, execute,
fetch every row, close the cursor. Each call is a round trip through a queue, a thread
wake-up and an event-loop wake-up (slower the busier the machine), and a recall makes a
dozen statements. This adapter runs the four steps as one function in that thread, and
skips the rollback the pool issues when a connection comes back with no transaction
open (after a commit, which is every session but the failed ones).

`Connection.write` runs a whole write transaction (BEGIN, several executemany, COMMIT)
in one call: the writer's group commits of new memories and recall logs need no answer
between their statements.

Server-side cursors (streamed results, the dataset export) are SQLAlchemy's own.
Passed to SQLAlchemy as the engine's DBAPI module (`create_async_engine(module=...)`).
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Sequence
from typing import Any

from app.core.versions import Supported

# The classes below subclass SQLAlchemy's private aiosqlite adapter and use `await_`, which
# 2.1 introduced; checked before they are imported. Tested: 2.1.0 and 2.1.9.
SQLALCHEMY = Supported("sqlalchemy", at_least="2.1.0", below="2.2", user=__name__)
SQLALCHEMY.check()
# Statements run through aiosqlite's private `_execute` on its `_conn`. Tested: 0.20.0, 0.22.1.
AIOSQLITE = Supported("aiosqlite", at_least="0.20.0", below="0.23", user=__name__)
AIOSQLITE.check()

import aiosqlite  # noqa: E402
from sqlalchemy.dialects.sqlite.aiosqlite import (  # noqa: E402
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT  # noqa: E402
from sqlalchemy.util.concurrency import await_  # noqa: E402

_Outcome = tuple[Any, int, int | None, list[Any] | None, bool]


def _run(conn: sqlite3.Connection, operation: str, parameters: Any, many: bool) -> _Outcome:
    """In the connection's thread: the statement, its rows, and whether a transaction
    is open after it."""
    cursor = conn.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else None
        return description, cursor.rowcount, cursor.lastrowid, rows, conn.in_transaction
    finally:
        cursor.close()


def _transaction(
    conn: sqlite3.Connection, begin: str, statements: Sequence[tuple[str, Sequence[Any]]]
) -> None:
    """In the connection's thread: a whole write transaction, rolled back on failure (the
    failing statement's SQL is added to the error as a note). A connection that runs one
    whole (a libSQL server's, in one round trip) is asked to."""
    whole = getattr(conn, "transaction", None)
    if whole is not None:
        whole(begin, statements)
        return
    conn.execute(begin)
    try:
        for operation, rows in statements:
            try:
                conn.executemany(operation, rows)
            except sqlite3.Error as exc:
                exc.add_note(operation)
                raise
        conn.commit()
    except BaseException:
        conn.rollback()
        raise


def _end(conn: sqlite3.Connection, commit: bool) -> None:
    if commit:
        conn.commit()
    else:
        conn.rollback()


class _Cursor(AsyncAdapt_aiosqlite_cursor):
    """A buffered cursor whose statement runs in one call to the connection's thread."""

    __slots__ = ("_description", "_rowcount", "_lastrowid")

    _adapt_connection: Connection

    def __init__(self, adapt_connection: Connection) -> None:
        # No aiosqlite cursor: _run makes and closes a sqlite3 one in the thread.
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    @property
    def arraysize(self) -> int:
        return 1

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        pass

    async def _execute_async(self, operation: Any, parameters: Any) -> Any:
        await self._call(operation, parameters, many=False)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Sequence[Any]) -> Any:
        await self._call(operation, seq_of_parameters, many=True)

    async def _call(self, operation: Any, parameters: Any, *, many: bool) -> None:
        adapt = self._adapt_connection
        async with adapt._execute_mutex:
            try:
                outcome = await self._connection._execute(
                    _run, self._connection._conn, operation, parameters, many
                )
            finally:
                # Unknown after a failure: the next rollback must not be skipped.
                adapt._in_transaction = True
            description, self._rowcount, self._lastrowid, rows, adapt._in_transaction = outcome
            self._description = description
            if rows is not None:
                self._rows = collections.deque(rows)

    async def _async_soft_close(self) -> None:
        return None

    def close(self) -> None:
        self._rows.clear()


class Connection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ("_in_transaction",)

    _cursor_cls = _Cursor  # type: ignore[assignment]

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self._in_transaction = True  # unknown until the first statement

    async def write(
        self, statements: Sequence[tuple[str, Sequence[Any]]], *, begin: str = "BEGIN IMMEDIATE"
    ) -> None:
        """Run `statements` (each an executemany) as one transaction, committed or rolled
        back, in a single call to the connection's thread: a write that needs no answer
        between its statements pays one thread hand-off instead of one per statement.

        The caller holds the raw connection with no transaction open (SQLAlchemy's is
        not begun). A sqlite3.Error comes out as the driver raised it."""
        async with self._execute_mutex:
            self._in_transaction = True  # unknown if the call fails: rollback is not skipped
            await self._connection._execute(_transaction, self._connection._conn, begin, statements)
            self._in_transaction = False

    def rollback(self) -> None:
        if self._in_transaction:
            self._end(commit=False)

    def commit(self) -> None:
        if self._in_transaction:
            self._end(commit=True)

    def _end(self, *, commit: bool) -> None:
        if not self._connection._connection:
            return
        try:
            await_(self._connection._execute(_end, self._connection._conn, commit))
            self._in_transaction = False
        except Exception as error:
            self._handle_exception(error)


class DBAPI(AsyncAdapt_aiosqlite_dbapi):
    def __init__(self) -> None:
        super().__init__(aiosqlite, sqlite3)

    def connect(self, *arg: Any, **kw: Any) -> Connection:
        adapted = super().connect(*arg, **kw)
        return Connection(self, adapted._connection)


def dbapi() -> DBAPI:
    return DBAPI()
