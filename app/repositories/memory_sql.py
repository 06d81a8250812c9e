"""The memories' filter SQL, shared by listings, constraints and search: a filter's
shape (what its SQL depends on) and its parameters; the rows read as plain rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias, cast

from sqlalchemy import ColumnElement, Row, Table, and_, bindparam, or_
from sqlalchemy.sql.elements import TextClause

from app.db.backends import Backend
from app.models import Memory
from app.models.base import UTCDateTime
from app.schemas.filters import MemoryFilters

MEMORIES = cast(Table, Memory.__table__)
# Search and recall read plain rows (no ORM identity map: a recall reads dozens of
# memories, and the ORM's bookkeeping per object is a large share of its time). A row has
# the model's attribute names, `metadata_` included.
COLUMNS = [c.label("metadata_") if c.key == "metadata" else c for c in MEMORIES.c]
MemoryRow: TypeAlias = Row[*tuple[Any, ...]]
MemoryRecord: TypeAlias = Memory | MemoryRow

_NOW = bindparam("now", type_=UTCDateTime())


def status_clause(statuses: Sequence[str]) -> ColumnElement[bool]:
    """Stored status, with "expired" derived from valid_until (no job flips it), as of
    the statement's `now` parameter."""
    not_expired = or_(Memory.valid_until.is_(None), Memory.valid_until > _NOW)
    clauses: list[ColumnElement[bool]] = []
    for status in statuses:
        if status == "expired":
            clauses.append(and_(Memory.status == "active", Memory.valid_until <= _NOW))
        elif status == "active":
            started = or_(Memory.valid_from.is_(None), Memory.valid_from <= _NOW)
            clauses.append(and_(Memory.status == "active", not_expired, started))
        else:
            clauses.append(and_(Memory.status == status, not_expired))
    return or_(*clauses)


def request_ids(scope: Mapping[str, str]) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in scope.items() if k != "level")


@dataclass(frozen=True, slots=True)
class FilterShape:
    """What a filtered statement's SQL depends on (its values are parameters)."""

    types: bool
    statuses: tuple[str, ...]
    sensitivities: bool
    scope_keys: tuple[str, ...]
    applies_to: int | None  # ids in the request scope, None without that filter

    @classmethod
    def of(cls, filters: MemoryFilters) -> FilterShape:
        return cls(
            types=bool(filters.types),
            statuses=tuple(filters.statuses or ()),
            sensitivities=bool(filters.sensitivities),
            scope_keys=tuple(sorted(filters.scope or {})),
            applies_to=(
                None if filters.applies_to is None else len(request_ids(filters.applies_to))
            ),
        )

    def clauses(self) -> list[ColumnElement[bool]]:
        """The filters but `applies_to` (see `match_clauses`)."""
        where: list[ColumnElement[bool]] = [Memory.namespace == bindparam("namespace")]
        if self.types:
            where.append(Memory.type.in_(bindparam("types", expanding=True)))
        if self.statuses:
            where.append(status_clause(self.statuses))
        if self.sensitivities:
            where.append(Memory.sensitivity.in_(bindparam("sensitivities", expanding=True)))
        for i, key in enumerate(self.scope_keys):
            where.append(Memory.scope[key].as_string() == bindparam(f"scope_value_{i}"))
        return where

    def match_clauses(self, backend: type[Backend]) -> list[ColumnElement[bool] | TextClause]:
        """The filters applied where the text matches are ranked, before the best are
        kept: type and scope (without them a filter would see only the best matches of
        the whole namespace, and other scopes' matches could push out every one of its own)."""
        where: list[ColumnElement[bool] | TextClause] = []
        if self.types:
            where.append(Memory.type.in_(bindparam("types", expanding=True)))
        for i, key in enumerate(self.scope_keys):
            where.append(Memory.scope[key].as_string() == bindparam(f"scope_value_{i}"))
        if self.applies_to is not None:
            where.append(backend.scope_applies(self.applies_to))
        return where


def filter_params(
    namespace: str, filters: MemoryFilters, now: datetime, *, backend: type[Backend]
) -> dict[str, Any]:
    params: dict[str, Any] = {"namespace": namespace, "now": now}
    if filters.types:
        params["types"] = list(filters.types)
    if filters.sensitivities:
        params["sensitivities"] = list(filters.sensitivities)
    scope = filters.scope or {}
    for i, key in enumerate(sorted(scope)):
        params[f"scope_value_{i}"] = scope[key]
    if filters.applies_to is not None:
        params |= backend.scope_params(request_ids(filters.applies_to))
    return params
