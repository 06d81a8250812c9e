"""Keyset pagination over (created_at, id): the rows strictly before or after a key."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, or_

Key = tuple[datetime, str]


def before(created_at: Any, ident: Any, key: Key) -> ColumnElement[bool]:
    """Rows that come after `key` in newest-first order."""
    stamp, last_id = key
    return or_(created_at < stamp, and_(created_at == stamp, ident < last_id))


def after(created_at: Any, ident: Any, key: Key) -> ColumnElement[bool]:
    """Rows that come after `key` in oldest-first order."""
    stamp, last_id = key
    return or_(created_at > stamp, and_(created_at == stamp, ident > last_id))
