"""Shared field types."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, StringConstraints

from app.core.errors import NotFound

IDENT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
Ident = Annotated[str, StringConstraints(pattern=IDENT_PATTERN)]
NAMESPACE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
# Names (task ids, tools, actions) are bounded by the column size; longer ones are a 413.
NAME_MAX = 256
Name = Annotated[str, StringConstraints(min_length=1)]
NonNegative = Annotated[float, Field(ge=0)]


_IDENT = re.compile(IDENT_PATTERN)


def stored_ident(value: str, *, what: str) -> str:
    """A path id as given; one that could never have been stored is simply not found."""
    if not _IDENT.match(value):
        raise NotFound(f"{what} {value!r} not found")
    return value
