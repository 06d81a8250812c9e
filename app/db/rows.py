"""Whole-row INSERTs on SQLite with the values converted once, as SQLAlchemy would.

The writer's group commits insert many rows of a table at once (new memories, recall
transitions). Through SQLAlchemy each row pays for its general bind processing and each
statement for several trips to the driver's thread; here the statement is compiled once
per table and dialect, and a row's values are converted by the columns' own bind
processors (plus a cheaper equivalent for UTCDateTime), ready for one `executemany`.

A table with a full-text trigger (memories) takes its rows as multi-row INSERTs instead:
FTS5 writes its pending terms out as a new segment (and does merge work) at every
statement savepoint, and an executemany is one statement per row, so one statement of
many rows does that work once (bench.fts_insert compares the two).
"""

from __future__ import annotations

import operator
import sqlite3
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Table, insert
from sqlalchemy.exc import DBAPIError, StatementError

from app.models.base import UTCDateTime

# SQLite's default cap on a statement's parameters (999 before 3.32), and a cap on rows
# per statement so that its text stays short to parse.
MAX_VARIABLES = 32_766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999
MULTI_ROWS = 256


@dataclass(frozen=True, slots=True)
class CompiledInsert:
    """INSERT of whole rows of a table as SQLAlchemy compiles it, and each row's values
    in its parameter order, converted as SQLAlchemy's bind processors convert them."""

    sql: str
    values: Callable[[dict[str, Any]], tuple[Any, ...]]
    converters: tuple[tuple[int, Callable[[Any], Any]], ...]
    head: str  # sql up to its VALUES list
    row_marks: str  # one row's "(?, ?, ...)"

    def params(self, row: dict[str, Any]) -> list[Any]:
        values = list(self.values(row))
        last: tuple[Any, Any] = (None, None)
        for i, convert in self.converters:
            value = values[i]
            if value is not None and value is last[0]:
                values[i] = last[1]  # created_at and updated_at: one datetime
                continue
            values[i] = converted = convert(value)
            last = (value, converted)
        return values

    def many(self, rows: Sequence[dict[str, Any]]) -> tuple[str, list[list[Any]]]:
        """(sql, parameters) of an executemany over rows."""
        return self.sql, [self.params(row) for row in rows]

    def multi(self, rows: Sequence[dict[str, Any]]) -> list[tuple[str, list[list[Any]]]]:
        """The rows as multi-row INSERTs, each (sql, [parameters]) run once, as few as the
        statement size limits allow."""
        per = max(1, min(MULTI_ROWS, MAX_VARIABLES // self.row_marks.count("?")))
        out: list[tuple[str, list[list[Any]]]] = []
        for lo in range(0, len(rows), per):
            chunk = rows[lo : lo + per]
            sql = self.head + ", ".join([self.row_marks] * len(chunk))
            out.append((sql, [[v for row in chunk for v in self.params(row)]]))
        return out


def sqlite_utc_text(value: datetime | None) -> str | None:
    """UTCDateTime's value on SQLite as its two bind processors make it (naive UTC in
    SQLite DATETIME's text) for a fraction of their cost."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("naive datetime given to a UTC column")
    return value.astimezone(UTC).isoformat(" ", "microseconds")[:26]


_COMPILED: weakref.WeakKeyDictionary[Any, dict[str, CompiledInsert]] = weakref.WeakKeyDictionary()


def compiled_insert(table: Table, dialect: Any) -> CompiledInsert:
    """The table's whole-row INSERT for this (SQLite) dialect, built once."""
    per_table = _COMPILED.setdefault(dialect, {})
    found = per_table.get(table.name)
    if found is not None:
        return found
    columns = {c.key: c for c in table.c}
    compiled = insert(table).compile(dialect=dialect, column_keys=list(columns))
    order = list(compiled.positiontup or ())
    converters: list[tuple[int, Callable[[Any], Any]]] = []
    for i, key in enumerate(order):
        column_type = columns[key].type
        if isinstance(column_type, UTCDateTime):
            converters.append((i, sqlite_utc_text))
        elif (convert := column_type.dialect_impl(dialect).bind_processor(dialect)) is not None:
            converters.append((i, convert))
    head, values, row_marks = compiled.string.rpartition(" VALUES ")
    found = per_table[table.name] = CompiledInsert(
        compiled.string,
        operator.itemgetter(*order),
        tuple(converters),
        head + values,
        row_marks,
    )
    return found


def as_sqlalchemy_error(statement: str, exc: sqlite3.Error) -> StatementError:
    """A driver error as SQLAlchemy raises it (IntegrityError, OperationalError...), so
    that callers classify it the same way whichever path ran the statement."""
    return DBAPIError.instance(statement, None, exc, sqlite3.Error)
