"""The libSQL server's HTTP protocol with sqlite3's shape (app/db/backends/hrana.py),
against a real sqld: values both ways, transactions and their round trips, a whole write
transaction in one request that commits all or nothing, and errors as sqlite3's."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime

import pytest

from app.db.backends import hrana
from app.db.backends.libsql import server_url
from tests import sqld
from tests.server import free_port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if sqld.binary() is None:
        pytest.skip("no sqld binary here")
    running = sqld.Sqld(tmp_path_factory.mktemp("sqld")).start()
    try:
        yield server_url(running.url)
    finally:
        running.stop()


@pytest.fixture
def conn(server: str) -> Iterator[hrana.Connection]:
    found = hrana.connect(server, auth_token="")
    table = f"t{threading.get_ident()}_{free_port()}"
    found.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, v, name TEXT UNIQUE)")
    found.table = table  # type: ignore[attr-defined]
    try:
        yield found
    finally:
        found.close()


def _sent(conn: hrana.Connection) -> int:
    return conn.client.round_trips


def test_values_come_back_as_they_went(conn: hrana.Connection) -> None:
    table = conn.table  # type: ignore[attr-defined]
    values = [
        None,
        0,
        -(2**63),
        2**63 - 1,
        1.5,
        "h\u00e9llo \U0001f600",
        b"",
        b"\x00",
        b"\x00\x01",
        bytes(range(256)),
        True,
    ]
    for value in values:
        conn.execute(f"INSERT INTO {table} (v) VALUES (?)", (value,))
    got = [r[0] for r in conn.execute(f"SELECT v FROM {table} ORDER BY id").fetchall()]
    assert got == [1 if v is True else v for v in values]
    moment = datetime(2026, 12, 7, 10, 30, 1, 5, tzinfo=UTC)
    cursor = conn.execute("SELECT ?, ?, ?", (moment, date(2026, 12, 7), bytearray(b"ab")))
    assert cursor.fetchone() == (moment.isoformat(" "), "2026-12-07", b"ab")


def test_rows_fetch_like_sqlite3(conn: hrana.Connection) -> None:
    table = conn.table  # type: ignore[attr-defined]
    conn.executemany(f"INSERT INTO {table} (v) VALUES (?)", [(i,) for i in range(5)])
    cursor = conn.execute(f"SELECT id, v FROM {table} ORDER BY id")
    assert [d[0] for d in cursor.description] == ["id", "v"]
    assert cursor.rowcount == -1
    assert cursor.fetchone() == (1, 0)
    assert cursor.fetchmany(2) == [(2, 1), (3, 2)]
    assert cursor.fetchall() == [(4, 3), (5, 4)]
    assert cursor.fetchone() is None
    written = conn.execute(f"UPDATE {table} SET v = v + 1 WHERE v < 3")
    assert (written.rowcount, written.description) == (3, None)
    made = conn.execute(f"INSERT INTO {table} (v) VALUES (9)")
    assert made.lastrowid == 6


def test_a_transactions_round_trips(conn: hrana.Connection) -> None:
    table = conn.table  # type: ignore[attr-defined]
    before = _sent(conn)
    conn.execute("BEGIN")
    conn.rollback()
    assert _sent(conn) == before, "a transaction that sent nothing costs nothing"
    assert not conn.in_transaction

    before = _sent(conn)
    conn.execute("BEGIN")
    assert conn.in_transaction
    for _ in range(3):
        conn.execute(f"SELECT count(*) FROM {table}").fetchall()
    baton, closed = conn._baton, conn.client.closed_later
    conn.commit()
    assert _sent(conn) - before == 3, (
        "BEGIN goes with the first statement; a read's end waits for nothing"
    )
    assert not conn.in_transaction
    # Its stream is closed all the same, soon after.
    deadline = time.monotonic() + 5
    while conn.client.closed_later == closed:
        assert time.monotonic() < deadline, "the read's stream was left open"
        time.sleep(0.01)
    with pytest.raises(sqlite3.OperationalError, match="stream lost"):
        conn.client.pipeline(None, {"baton": baton, "requests": []})

    before = _sent(conn)
    conn.execute("BEGIN")
    conn.execute(f"SELECT count(*) FROM {table}")
    conn.execute(f"DELETE FROM {table} WHERE id < 0")
    conn.commit()
    assert _sent(conn) - before == 3, "a transaction that may have written waits for its end"

    before = _sent(conn)
    conn.execute("SELECT 1")
    assert _sent(conn) - before == 1
    rows = [(f"n{i}",) for i in range(20)]
    conn.transaction("BEGIN IMMEDIATE", [(f"INSERT INTO {table} (name) VALUES (?)", rows)])
    assert _sent(conn) - before == 2, "a whole write transaction is one request"
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (20,)


def test_a_whole_transaction_commits_all_or_nothing(conn: hrana.Connection) -> None:
    table = conn.table  # type: ignore[attr-defined]
    insert = f"INSERT INTO {table} (name) VALUES (?)"
    conn.transaction("BEGIN IMMEDIATE", [(insert, [("a",)])])
    with pytest.raises(sqlite3.IntegrityError) as failed:
        conn.transaction(
            "BEGIN IMMEDIATE",
            [(insert, [("b",), ("c",)]), (f"UPDATE {table} SET v = 1", [()]), (insert, [("a",)])],
        )
    assert "UNIQUE constraint failed" in str(failed.value)
    assert insert in failed.value.__notes__
    assert not conn.in_transaction
    names = conn.execute(f"SELECT name, v FROM {table} ORDER BY id").fetchall()
    assert names == [("a", None)], "nothing of the failed transaction was written"
    conn.transaction("BEGIN IMMEDIATE", [(insert, [("b",)])])
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (2,)


def test_executemany_stops_at_the_first_failure_as_sqlite3_does(
    conn: hrana.Connection,
) -> None:
    table = conn.table  # type: ignore[attr-defined]
    insert = f"INSERT INTO {table} (name) VALUES (?)"
    with pytest.raises(sqlite3.IntegrityError):
        conn.executemany(insert, [("x",), ("y",), ("x",), ("z",)])
    local = sqlite3.connect(":memory:", isolation_level=None)
    local.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v, name TEXT UNIQUE)")
    with pytest.raises(sqlite3.IntegrityError):
        local.executemany("INSERT INTO t (name) VALUES (?)", [("x",), ("y",), ("x",), ("z",)])
    query = "SELECT name FROM {} ORDER BY id"
    assert (
        conn.execute(query.format(table)).fetchall()
        == local.execute(query.format("t")).fetchall()
        == [("x",), ("y",)]
    )
    assert conn.executemany(insert, [("p",), ("q",)]).rowcount == 2


def test_a_failed_statement_leaves_the_transaction_to_its_owner(conn: hrana.Connection) -> None:
    table = conn.table  # type: ignore[attr-defined]
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(f"INSERT INTO {table} (name) VALUES ('a')")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(f"INSERT INTO {table} (name) VALUES ('a')")
    assert conn.in_transaction
    assert conn.writing
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        conn.execute("SELECT * FROM nowhere")
    assert conn.in_transaction
    conn.rollback()
    assert not conn.in_transaction
    assert not conn.writing
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)


def test_a_lost_stream_and_an_unreachable_server_are_operational_errors(
    conn: hrana.Connection,
) -> None:
    conn.execute("BEGIN")
    conn.execute("SELECT 1")
    conn._baton = "not-a-baton"
    with pytest.raises(sqlite3.OperationalError, match="stream lost"):
        conn.execute("SELECT 2")
    assert not conn.in_transaction
    assert conn.execute("SELECT 3").fetchone() == (3,), "the next statement opens a new stream"
    nowhere = hrana.connect(f"http://127.0.0.1:{free_port()}", auth_token="")
    with pytest.raises(sqlite3.OperationalError, match="unreachable"):
        nowhere.execute("SELECT 1")


def test_rows_beyond_a_pipelines_answer_come_streamed(conn: hrana.Connection) -> None:
    """sqld refuses a pipeline's answer over 10 MB ("Response is too large"): such a read
    is run again through the cursor endpoint, in a transaction or outside one."""
    big = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 150000) "
        "SELECT x, printf('%0100d', x) FROM c"
    )
    for begin in (False, True):
        if begin:
            conn.execute("BEGIN")
        cursor = conn.execute(big)
        assert [d[0] for d in cursor.description] == ["x", "printf('%0100d', x)"]
        rows = cursor.fetchall()
        assert len(rows) == 150000
        assert rows[-1] == (150000, f"{150000:0100d}")
        assert conn.in_transaction == begin
        conn.rollback()
    assert conn._baton is None, "no stream is left open outside a transaction"
