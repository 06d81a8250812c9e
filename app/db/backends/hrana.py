"""A libSQL server (sqld, Turso) over its HTTP protocol, Hrana 3 (`POST /v3/pipeline`),
with sqlite3's connection shape, on httpx.

Not libsql-experimental's remote connection: the binding holds the GIL while it waits for
the server, so every round trip stopped the process. Here the wait is in httpx's socket
calls, which release it: the event loop and the other connections' threads run meanwhile.

Round trips. A Hrana stream is the server's connection; it lives for one transaction:
- BEGIN is held and goes with the transaction's first statement; a transaction that
  ends with nothing sent (a read that found its answer elsewhere) costs nothing;
- the statement that ends a transaction closes the stream in the same request, and so
  does a statement outside one; a transaction that only read is ended by closing its
  stream off the caller's path (nothing waits for a read's end);
- `executemany` is one request (a batch that stops at the first failure, as sqlite3's
  does), and `transaction` a whole write transaction: BEGIN, the statements, then COMMIT
  if every one succeeded or ROLLBACK if not, in one batch, one round trip.
`hrana_wire.Client.round_trips` counts the requests waited for. Errors come out as
sqlite3's classes (a constraint is an IntegrityError, no server an OperationalError)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from app.db.backends import hrana_wire as wire

_ENDS = ("COMMIT", "ROLLBACK", "END")
_READS = ("SELECT", "WITH", "PRAGMA", "VALUES")


class Result:
    __slots__ = ("description", "rows", "rowcount", "lastrowid")

    def __init__(self, result: dict[str, Any] | None) -> None:
        self.description: Any = None
        self.rows: list[tuple[Any, ...]] = []
        self.rowcount = -1
        self.lastrowid: int | None = None
        if result is None:
            return
        columns = result.get("cols") or []
        if columns:
            self.description = tuple(
                (c["name"], None, None, None, None, None, None) for c in columns
            )
            self.rows = [tuple(wire.python(v) for v in row) for row in result["rows"]]
        else:
            self.rowcount = int(result.get("affected_row_count") or 0)
        rowid = result.get("last_insert_rowid")
        self.lastrowid = int(rowid) if rowid is not None else None


class Cursor:
    """sqlite3.Cursor's surface: the statement runs, its rows are buffered."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._result = Result(None)
        self._next = 0
        self.arraysize = 1

    @property
    def description(self) -> Any:
        return self._result.description

    @property
    def rowcount(self) -> int:
        return self._result.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._result.lastrowid

    def execute(self, operation: str, parameters: Any = None) -> Cursor:
        self._result, self._next = self._conn.run(operation, parameters), 0
        return self

    def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> Cursor:
        self._result, self._next = self._conn.run_many(operation, seq_of_parameters), 0
        return self

    def fetchone(self) -> Any:
        rows = self._result.rows
        if self._next >= len(rows):
            return None
        self._next += 1
        return rows[self._next - 1]

    def fetchmany(self, size: int | None = None) -> list[Any]:
        start = self._next
        self._next = min(len(self._result.rows), start + (size or self.arraysize))
        return self._result.rows[start : self._next]

    def fetchall(self) -> list[Any]:
        start, self._next = self._next, len(self._result.rows)
        return self._result.rows[start:]

    def close(self) -> None:
        self._result = Result(None)


class Connection:
    """sqlite3.Connection's surface over Hrana streams (see the module's docstring)."""

    def __init__(self, client: wire.Client) -> None:
        self.client = client
        self._baton: str | None = None
        self._base: str | None = None
        self._held: list[dict[str, Any]] = []  # BEGIN, until the transaction's first statement
        self._open = False  # a transaction is open on the stream
        # The open transaction began with BEGIN IMMEDIATE (a writer's) or BEGIN (a reader's).
        self.writing = False
        self._wrote = False  # a statement of the open transaction may have written

    @property
    def in_transaction(self) -> bool:
        return self._open or bool(self._held)

    @property
    def isolation_level(self) -> str | None:
        return None  # every transaction is begun explicitly

    def cursor(self) -> Cursor:
        return Cursor(self)

    def execute(self, operation: str, parameters: Any = None) -> Cursor:
        return self.cursor().execute(operation, parameters)

    def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> Cursor:
        return self.cursor().executemany(operation, seq_of_parameters)

    def run(self, operation: str, parameters: Any) -> Result:
        word = operation.lstrip()[:16].upper()
        if word.startswith("BEGIN") and not self.in_transaction:
            self._held = [{"type": "execute", "stmt": {"sql": operation}}]
            self.writing = "IMMEDIATE" in word or "EXCLUSIVE" in word
            return Result(None)
        if word.startswith(_ENDS) and self._held and not self._open:
            self._held, self.writing = [], False  # nothing was sent: nothing to end
            return Result(None)
        if word.startswith(_ENDS) and self._open and not (self.writing or self._wrote):
            # It only read: closing its stream ends it, and no one need wait for that.
            if self._baton is not None:
                self.client.close_later(self._base, self._baton)
            self._lost()
            return Result(None)
        if self.in_transaction and not word.startswith(_READS):
            self._wrote = True
        ends = word.startswith(_ENDS) or not self.in_transaction
        stmt = wire.stmt(operation, parameters)
        result = self._send({"type": "execute", "stmt": stmt}, close=ends)
        if "error" in result:
            if result["error"].get("code") == "RESPONSE_TOO_LARGE":
                return self._streamed(stmt)
            raise wire.error(result["error"])
        return Result(result["response"]["result"])

    def _streamed(self, stmt: dict[str, Any]) -> Result:
        """A statement whose rows are more than a pipeline's answer may hold (a read: run
        again, through the cursor endpoint), on the stream of the open transaction, or on
        one of its own, closed after."""
        try:
            head, *entries = self.client.cursor(
                self._base, {"baton": self._baton, "batch": {"steps": [{"stmt": stmt}]}}
            )
        except sqlite3.Error:
            self._lost()
            raise
        self._baton, self._base = head.get("baton"), head.get("base_url") or self._base
        if not self._open:
            self.close()
        found = Result(None)
        for entry in entries:
            kind = entry.get("type")
            if kind == "step_begin":
                found.description = tuple(
                    (c["name"], None, None, None, None, None, None) for c in entry["cols"]
                )
            elif kind == "row":
                found.rows.append(tuple(wire.python(v) for v in entry["row"]))
            elif kind in ("step_error", "error"):
                raise wire.error(entry["error"])
        return found

    def run_many(self, operation: str, seq_of_parameters: Iterable[Any]) -> Result:
        """Each parameter row in turn, stopping at the first that fails, in one request."""
        steps = [{"stmt": wire.stmt(operation, p)} for p in seq_of_parameters]
        if not steps:
            return Result(None)
        self._wrote = self._wrote or self.in_transaction
        found = self._batch(steps, close=not self.in_transaction)
        count = sum(int((r or {}).get("affected_row_count") or 0) for r in found)
        done = Result(None)
        done.rowcount = count
        return done

    def transaction(self, begin: str, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """A whole write transaction in one request: `begin`, each statement's rows (as
        executemany), then COMMIT when every step succeeded, else ROLLBACK. The first
        failure comes out with its statement's SQL as a note."""
        if self.in_transaction:
            raise sqlite3.OperationalError("cannot start a transaction within a transaction")
        steps: list[dict[str, Any]] = [{"stmt": {"sql": begin}}]
        named: list[str] = [begin]
        for operation, rows in statements:
            for row in rows:
                steps.append({"stmt": wire.stmt(operation, row)})
                named.append(operation)
        steps.append({"stmt": {"sql": "COMMIT"}})
        named.append("COMMIT")
        self._batch(steps, close=True, named=named, rollback=True)

    def _batch(
        self,
        steps: list[dict[str, Any]],
        *,
        close: bool,
        named: list[str] | None = None,
        rollback: bool = False,
    ) -> list[dict[str, Any] | None]:
        for i in range(1, len(steps)):
            steps[i]["condition"] = {"type": "ok", "step": i - 1}
        if rollback:
            last = len(steps) - 1
            failed = {"type": "not", "cond": {"type": "ok", "step": last}}
            steps.append({"stmt": {"sql": "ROLLBACK"}, "condition": failed})
        result = self._send({"type": "batch", "batch": {"steps": steps}}, close=close)
        if "error" in result:
            raise wire.error(result["error"])
        found = result["response"]["result"]
        for i, error in enumerate(found["step_errors"]):
            if error is not None:
                exc = wire.error(error)
                if named is not None:
                    exc.add_note(named[i])
                raise exc
        return list(found["step_results"])

    def _send(self, request: dict[str, Any], *, close: bool) -> dict[str, Any]:
        """One request on the stream (after the held BEGIN), with the stream's state; the
        stream is closed with it when `close`. Returns the request's own result."""
        held, self._held = self._held, []
        requests = [*held, request, {"type": "get_autocommit"}]
        if close:
            requests.append({"type": "close"})
        body = {"baton": self._baton, "requests": requests}
        try:
            answer = self.client.pipeline(self._base, body)
        except sqlite3.Error:
            self._lost()
            raise
        results = answer["results"]
        if close:
            self._lost()
        else:
            self._baton, self._base = answer.get("baton"), answer.get("base_url") or self._base
        for begun in results[: len(held)]:
            if begun.get("type") == "error":
                self._lost()
                raise wire.error(begun["error"])
        state = results[len(held) + 1]
        self._open = state.get("type") == "ok" and not state["response"]["is_autocommit"]
        if close and self._open:
            self._open = False  # closing the stream rolled it back
        if not self._open:
            self.writing = self._wrote = False
        return dict(results[len(held)])

    def _lost(self) -> None:
        """The stream is done with (closed, or the server no longer has it)."""
        self._baton = self._base = None
        self._open = self.writing = self._wrote = False

    def commit(self) -> None:
        if self.in_transaction:
            self.run("COMMIT", None)

    def rollback(self) -> None:
        if self.in_transaction:
            self.run("ROLLBACK", None)

    def close(self) -> None:
        if self._baton is not None:
            try:
                closing = {"baton": self._baton, "requests": [{"type": "close"}]}
                self.client.pipeline(self._base, closing)
            except sqlite3.Error:
                pass
        self._lost()


def connect(url: str, *, auth_token: str) -> Connection:
    """A connection to the server at `url` (http or https). Nothing is sent until its first
    statement, which finds an unreachable server (an embedded replica's reads need none)."""
    return Connection(wire.Client.of(url, auth_token))
