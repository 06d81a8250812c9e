"""Keyset cursors over (created_at, id), and the page cut that goes with them."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from app.core.errors import InvalidInput

Row = TypeVar("Row")


def encode_cursor(created_at: datetime, ident: str) -> str:
    raw = orjson.dumps([created_at.isoformat(), ident])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, ident = orjson.loads(raw)
        created_at = datetime.fromisoformat(stamp)
        if created_at.tzinfo is None or not isinstance(ident, str):
            raise ValueError
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError) as exc:
        raise InvalidInput("cursor: not a cursor returned by this API", field="cursor") from exc
    return created_at.astimezone(UTC), ident


def cut(rows: list[Row], limit: int) -> tuple[list[Row], str | None]:
    """Rows fetched with limit + 1: the page, and the cursor of the next one (or None)."""
    if len(rows) <= limit:
        return rows, None
    page = rows[:limit]
    last: Any = page[-1]
    return page, encode_cursor(last.created_at, last.id)


def after(cursor: str | None) -> tuple[datetime, str] | None:
    return decode_cursor(cursor) if cursor else None


def cut_offset(rows: list[Row], offset: int, limit: int) -> tuple[list[Row], int | None]:
    """Rows fetched with limit + 1 from `offset` (ranked lists): the page and the offset
    of the next one (or None)."""
    return rows[:limit], offset + limit if len(rows) > limit else None
