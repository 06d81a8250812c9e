"""The embedded replica with its server (app/db/backends/libsql_replica.py), against a
real sqld: reads from the local file with no round trip, a write visible to the next read
(read-your-writes), one file connection shared by the engine's connections, and local
reads that do not wait for a write transaction open on the server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.db.backends import libsql_driver, libsql_replica
from app.db.backends.libsql import server_url
from tests import sqld


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    if sqld.binary() is None:
        pytest.skip("no sqld binary here")
    running = sqld.Sqld(tmp_path / "sqld").start()
    try:
        yield server_url(running.url)
    finally:
        running.stop()


def _connect(path: Path, url: str) -> libsql_replica.Connection:
    found = libsql_driver.connect(str(path), sync_url=url, auth_token="")
    assert isinstance(found, libsql_replica.Connection)
    return found


def test_reads_are_local_and_see_the_processes_own_writes(server: str, tmp_path: Path) -> None:
    one = _connect(tmp_path / "replica.db", server)
    other = _connect(tmp_path / "replica.db", server)
    assert one.local is other.local, "one connection to the file per process"
    one.transaction("BEGIN IMMEDIATE", [("CREATE TABLE t (id INTEGER PRIMARY KEY, v)", [()])])
    trips = one.remote.client.round_trips
    for n in range(1, 4):
        one.execute("BEGIN IMMEDIATE")
        one.execute("INSERT INTO t (v) VALUES (?)", (n,))
        one.commit()
        # The next read, on either connection, is the file's, synced first.
        assert other.execute("SELECT count(*) FROM t").fetchone() == (n,)
    written = one.remote.client.round_trips - trips
    for _ in range(20):
        assert one.execute("SELECT max(v) FROM t").fetchone() == (3,)
    assert one.remote.client.round_trips - trips == written, "a read costs no round trip"
    assert written == 6  # each write: BEGIN with its INSERT, then COMMIT


def test_a_local_read_does_not_wait_for_a_write_open_on_the_server(
    server: str, tmp_path: Path
) -> None:
    writer = _connect(tmp_path / "replica.db", server)
    reader = _connect(tmp_path / "replica.db", server)
    writer.transaction("BEGIN IMMEDIATE", [("CREATE TABLE t (id INTEGER PRIMARY KEY, v)", [()])])
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO t (v) VALUES (1)")
    assert writer.in_transaction
    # The server's write lock is held; the file answers at once, without the uncommitted row.
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (0,)
    writer.commit()
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (1,)
