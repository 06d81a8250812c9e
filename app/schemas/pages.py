"""The two kinds of page every listing answers with; each named page subclasses one, so
its OpenAPI component keeps its own name, description and examples."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, Field

Item = TypeVar("Item")

NEXT_CURSOR = "Pass as `cursor` for the next page; null on the last page"
NEXT_OFFSET = "Pass as `offset` for the next page; null on the last page"


class CursorPage(BaseModel, Generic[Item]):
    """A page of a listing in a fixed order (keyset cursor)."""

    items: list[Item] = Field(description="The page's items")
    next_cursor: str | None = Field(description=NEXT_CURSOR)


class OffsetPage(BaseModel, Generic[Item]):
    """A page of a ranked listing (offset)."""

    items: list[Item] = Field(description="The page's items")
    next_offset: int | None = Field(description=NEXT_OFFSET)
