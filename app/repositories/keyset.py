"""Keyset pagination over (created_at, id): the rows strictly before or after a key.

Written as row-value comparisons, `(created_at, id) > (?, ?)`, which SQLite and
PostgreSQL both turn into a range of the (namespace, created_at, id) indexes. The
equivalent `created_at > ? OR (created_at = ? AND id > ?)` is not: SQLite then scans the
namespace's index from its start on every page, so reading n rows page by page costs
O(n²).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, tuple_

Key = tuple[datetime, str]


def before(created_at: Any, ident: Any, key: Key) -> ColumnElement[bool]:
    """Rows that come after `key` in newest-first order."""
    return tuple_(created_at, ident) < tuple_(*key, types=[created_at.type, ident.type])


def after(created_at: Any, ident: Any, key: Key) -> ColumnElement[bool]:
    """Rows that come after `key` in oldest-first order."""
    return tuple_(created_at, ident) > tuple_(*key, types=[created_at.type, ident.type])


def up_to(created_at: Any, ident: Any, key: Key) -> ColumnElement[bool]:
    """Rows up to and including `key` in oldest-first order."""
    return tuple_(created_at, ident) <= tuple_(*key, types=[created_at.type, ident.type])
