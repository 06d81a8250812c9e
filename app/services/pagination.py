"""Keyset cursors over (created_at, id), and the pages fetched with them (or with offsets)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson

from app.core.errors import InvalidInput
from app.repositories.keyset import Key

Row = TypeVar("Row")


def encode_cursor(created_at: datetime, ident: str) -> str:
    raw = orjson.dumps([created_at.isoformat(), ident])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> Key:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, ident = orjson.loads(raw)
        created_at = datetime.fromisoformat(stamp)
        if created_at.tzinfo is None or not isinstance(ident, str):
            raise ValueError
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError) as exc:
        raise InvalidInput("cursor: not a cursor returned by this API", field="cursor") from exc
    return created_at.astimezone(UTC), ident


def after(cursor: str | None) -> Key | None:
    return decode_cursor(cursor) if cursor else None


async def page(
    fetch: Callable[[Key | None, int], Awaitable[list[Row]]], *, cursor: str | None, limit: int
) -> tuple[list[Row], str | None]:
    """A page of `limit` rows after `cursor`, and the cursor of the next one (or None).
    `fetch(key, n)` returns the first n rows past the key (None: from the first); it is
    asked for one more than the page, to learn whether another follows."""
    rows = await fetch(after(cursor), limit + 1)
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    last: Any = rows[-1]
    return rows, encode_cursor(last.created_at, last.id)


async def offset_page(
    fetch: Callable[[int, int], Awaitable[list[Row]]], *, offset: int, limit: int
) -> tuple[list[Row], int | None]:
    """A page of `limit` rows from `offset` (ranked lists), and the offset of the next one
    (or None). `fetch(offset, n)` returns the n rows from that offset."""
    rows = await fetch(offset, limit + 1)
    return rows[:limit], offset + limit if len(rows) > limit else None
