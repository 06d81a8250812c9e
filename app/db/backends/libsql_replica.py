"""An embedded replica that reads locally and writes over HTTP.

The binding's replica connection (libsql-experimental) reads its local file in about
20 µs, but sends writes to the server holding the GIL for every round trip, and a
process may keep only one (two corrupted the file here), so every request queued behind
every write's round trips. Here each of the engine's connections pairs:
- the process's one binding connection (`Local`, shared, a lock around each use): the
  reads outside a transaction, and the syncs that pull the server's changes;
- a server connection of its own (`hrana.Connection`, no GIL held while it waits): every
  transaction (a writer's, or a backup's snapshot) and every write.
After a write commits, the next local read syncs the replica first (read-your-writes:
one sync for every read that follows a burst of writes), and `ReplicaSync` syncs it
every interval for the other processes' writes.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from app.db.backends import hrana

log = logging.getLogger("engram.db")
_READS = ("SELECT", "WITH", "PRAGMA", "VALUES", "EXPLAIN")


class Local:
    """The process's binding connection to one replica file."""

    _shared: dict[tuple[str, str], Local] = {}
    _made = threading.Lock()

    def __init__(self, conn: Any) -> None:
        self.conn = conn  # libsql_driver._File: the binding's connection to the file
        self.lock = threading.Lock()
        self.behind = False  # a write committed since the last sync

    @classmethod
    def of(cls, path: str, sync_url: str, make: Any) -> Local:
        """The replica file's one connection in this process, made (and synced) once."""
        with cls._made:
            found = cls._shared.get((path, sync_url))
            if found is None:
                found = cls._shared[(path, sync_url)] = cls(make())
            return found

    def read(self, operation: str, parameters: Any, many: bool) -> hrana.Result:
        with self.lock:
            if self.behind:
                # Not again before the next write, whether it worked or not: with the
                # server gone the file answers as it is (the interval's syncs go on trying).
                self.behind = False
                try:
                    self.conn.sync()
                except sqlite3.Error:
                    log.warning("replica sync before a read failed: read as it is")
            found: hrana.Result = self.conn.read(operation, parameters, many=many)
            return found

    def sync(self) -> None:
        with self.lock:
            self.conn.sync()
            self.behind = False


class Cursor(hrana.Cursor):
    """A statement on the local file or on the server, as `Connection` routes it."""

    _conn: Connection  # type: ignore[assignment]

    def execute(self, operation: str, parameters: Any = None) -> Cursor:
        self._result, self._next = self._conn.run(operation, parameters, many=False), 0
        return self

    def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> Cursor:
        self._result, self._next = self._conn.run(operation, seq_of_parameters, many=True), 0
        return self


class Connection:
    """sqlite3.Connection's surface over an embedded replica and its server."""

    def __init__(self, local: Local, remote: hrana.Connection) -> None:
        self.local = local
        self.remote = remote

    @property
    def in_transaction(self) -> bool:
        return self.remote.in_transaction

    @property
    def writing(self) -> bool:
        return self.remote.writing

    @property
    def isolation_level(self) -> str | None:
        return None

    def cursor(self) -> Cursor:
        return Cursor(self)  # type: ignore[arg-type]

    def execute(self, operation: str, parameters: Any = None) -> Cursor:
        return self.cursor().execute(operation, parameters)

    def executemany(self, operation: str, seq_of_parameters: Iterable[Any]) -> Cursor:
        return self.cursor().executemany(operation, seq_of_parameters)

    def run(self, operation: str, parameters: Any, *, many: bool) -> hrana.Result:
        word = operation.lstrip()[:8].upper()
        if not self.remote.in_transaction and word.startswith(_READS):
            return self.local.read(operation, parameters, many)
        try:
            if many:
                return self.remote.run_many(operation, parameters)
            return self.remote.run(operation, parameters)
        finally:
            if not self.remote.in_transaction:
                self.local.behind = True  # a write outside a transaction, or its end

    def transaction(self, begin: str, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        try:
            self.remote.transaction(begin, statements)
        finally:
            self.local.behind = True

    def commit(self) -> None:
        if self.remote.in_transaction:
            self.remote.commit()
            self.local.behind = True

    def rollback(self) -> None:
        self.remote.rollback()

    def sync(self) -> None:
        self.local.sync()

    def close(self) -> None:
        self.remote.close()  # the local connection is the process's, kept open


def connect(path: str, sync_url: str, *, auth_token: str, make_local: Any) -> Connection:
    """A connection to the replica file `path` of the server at `sync_url`."""
    local = Local.of(path, sync_url, make_local)
    return Connection(local, hrana.connect(sync_url, auth_token=auth_token))
