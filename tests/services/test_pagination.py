"""The one page cut: a page fetched with one row more than asked, and where the next
page starts (a keyset cursor, or an offset for ranked lists)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from app.core.errors import InvalidInput
from app.repositories.keyset import Key
from app.services import pagination

START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Row:
    id: str
    created_at: datetime


ROWS = [Row(f"r{i}", START + timedelta(minutes=i)) for i in range(5)]


async def fetch(key: Key | None, n: int) -> list[Row]:
    """Oldest first, the rows strictly after `key`."""
    return [r for r in ROWS if key is None or (r.created_at, r.id) > key][:n]


async def test_cursor_pages_visit_every_row_once() -> None:
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        rows, cursor = await pagination.page(fetch, cursor=cursor, limit=2)
        seen += [r.id for r in rows]
        pages += 1
        if cursor is None:
            break
    assert seen == [r.id for r in ROWS]
    assert pages == 3


async def test_a_full_last_page_has_no_next_cursor() -> None:
    asked: list[int] = []

    async def counted(key: Key | None, n: int) -> list[Row]:
        asked.append(n)
        return await fetch(key, n)

    rows, cursor = await pagination.page(counted, cursor=None, limit=5)
    assert [r.id for r in rows] == [r.id for r in ROWS]
    assert cursor is None
    assert asked == [6]


async def test_a_foreign_cursor_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        await pagination.page(fetch, cursor="not-a-cursor", limit=2)


async def test_offset_pages() -> None:
    async def ranked(offset: int, n: int) -> list[Row]:
        return ROWS[offset : offset + n]

    rows, next_offset = await pagination.offset_page(ranked, offset=0, limit=2)
    assert ([r.id for r in rows], next_offset) == (["r0", "r1"], 2)
    rows, next_offset = await pagination.offset_page(ranked, offset=4, limit=2)
    assert ([r.id for r in rows], next_offset) == (["r4"], None)
    rows, next_offset = await pagination.offset_page(ranked, offset=3, limit=2)
    assert ([r.id for r in rows], next_offset) == (["r3", "r4"], None)
