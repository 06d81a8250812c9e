"""Query and path parameters shared by the routes, each described once for the document."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Path, Query
from pydantic import BeforeValidator, Field

from app.schemas.common import Timestamp

_WHEN = "ISO 8601 with a timezone, e.g. 2026-01-31T12:00:00Z"

_DIGITS = re.compile(r"-?[0-9]+")


def digits(value: Any) -> Any:
    """A query's integer as written: digits only (no spaces, signs of plus, or decimals)."""
    if isinstance(value, str) and not _DIGITS.fullmatch(value):
        raise ValueError("an integer, written with digits only")
    return value


# An integer of a query string: "422 " is refused, as the document's `integer` says. Its
# bounds go before the validator, or the document would show them as pydantic's own
# words (`ge`) rather than JSON Schema's (`minimum`).
PositiveInt = Annotated[int, Field(ge=1), BeforeValidator(digits)]

Cursor = Annotated[
    str | None,
    Query(description="The `next_cursor` of the previous page; leave out for the first page"),
]
Limit = Annotated[
    PositiveInt | None,
    Query(
        description="Items per page, from 1 to ENGRAM_LIMITS__MAX_PAGE_SIZE (200 by default; "
        "more is a 422); left out: ENGRAM_LIMITS__DEFAULT_PAGE_SIZE (50 by default)",
        examples=[50],
    ),
]
Offset = Annotated[
    Annotated[int, Field(ge=0, le=1_000_000), BeforeValidator(digits)],
    Query(
        description="Items to skip, 0 to 1,000,000: the previous page's `next_offset`",
        examples=[0],
    ),
]
Since = Annotated[
    Timestamp | None, Query(description=f"Only those created at or after this time; {_WHEN}")
]
Until = Annotated[
    Timestamp | None,
    Query(description=f"Only those created before this time, after `since`; {_WHEN}"),
]
TaskId = Annotated[str | None, Query(description="Only those of this task id")]
AgentId = Annotated[str | None, Query(description="Only those of this agent id")]
TaskType = Annotated[
    str | None, Query(description="Only those of this task type", examples=["code_fix"])
]
EpisodeIdFilter = Annotated[str | None, Query(description="Only those of this episode id")]
PolicyId = Annotated[str | None, Query(description="Only those logged by this policy")]
AuditNamespace = Annotated[
    str | None,
    Query(description="Operators: only this namespace (left out: every one); others: ignored"),
]
KeysNamespace = Annotated[
    str | None,
    Query(
        description="Operators: only this namespace (left out: every one); admins: their own "
        "only (another is a 403)"
    ),
]


def path_id(what: str, example: str) -> object:
    """A path parameter naming a record by its id."""
    return Path(description=f"The {what}'s id", examples=[example])
