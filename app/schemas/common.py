"""Shared field types."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field, StringConstraints

from app.core.errors import NotFound

IDENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
Ident = Annotated[str, StringConstraints(pattern=IDENT_PATTERN)]
NAMESPACE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
# Names (task ids, tools, actions) are bounded by the column size; longer ones are a 413.
NAME_MAX = 256
Name = Annotated[str, StringConstraints(min_length=1)]
# How the service's own limits (ENGRAM_LIMITS__*) read in field descriptions.
NAME_LIMIT = "at most 256 characters (longer is a 413)"
TEXT_LIMIT = "at most ENGRAM_LIMITS__MAX_TEXT_CHARS characters (16,384 by default; longer is a 413)"
JSON_LIMIT = "at most ENGRAM_LIMITS__MAX_METADATA_BYTES as JSON (16,384 by default; more is a 413)"
NonNegative = Annotated[float, Field(ge=0)]
# A step's latency and tokens are bounded so that an episode's totals stay finite and fit
# a 64-bit column (1,000 steps of a year each; 10^12 tokens each).
MAX_LATENCY_MS = 365 * 86_400_000.0
MAX_TOKENS = 10**12


def _in_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError:
        # 0001-01-01T00:00+05:00 or 9999-12-31T23:59-05:00: valid ISO 8601, but not a
        # time any store can hold once it is in UTC.
        raise ValueError("out of range once converted to UTC") from None


_INT64 = 2**63


def storable(value: Any) -> Any:
    # The stores' JSON encoder (orjson) takes 64-bit integers only, and JSON has no
    # NaN or Infinity (which the parser would otherwise accept as literals).
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -_INT64 <= item < _INT64:
                raise ValueError("integers must fit in 64 bits")
        elif isinstance(item, float) and not math.isfinite(item):
            raise ValueError("numbers must be finite")
    return value


# Free-form JSON (inputs, outputs, metadata) as the stores can encode it.
JsonValue = Annotated[Any, AfterValidator(storable)]
JsonObject = Annotated[dict[str, Any], AfterValidator(storable)]

_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


def _iso_8601(value: Any) -> Any:
    # pydantic would also read a number as Unix time ("since": 1e-66 is 1970); the
    # document promises ISO 8601 text, and a number there is more likely a mistake.
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number or (isinstance(value, str) and _NUMBER.fullmatch(value)):
        raise ValueError("expected an ISO 8601 date-time with a timezone, e.g. 2026-01-31T12:00Z")
    return value


# Every timestamp the API takes: ISO 8601, timezone-aware, stored and compared in UTC.
Timestamp = Annotated[AwareDatetime, BeforeValidator(_iso_8601), AfterValidator(_in_utc)]

# Clocks of the machines that report events drift; beyond this, a time is a mistake.
CLOCK_SKEW = timedelta(days=1)


def _not_future(value: datetime) -> datetime:
    if value > datetime.now(UTC) + CLOCK_SKEW:
        raise ValueError("in the future: a time something happened cannot be later than now")
    return value


# When something happened (an episode's start, a step): not in the future.
EventTime = Annotated[Timestamp, AfterValidator(_not_future)]


_IDENT = re.compile(IDENT_PATTERN)


def stored_ident(value: str, *, what: str) -> str:
    """A path id as given; one that could never have been stored is simply not found."""
    if not _IDENT.match(value):
        raise NotFound(f"{what} {value!r} not found")
    return value
