"""Memory request and response models."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from app.schemas.common import Ident, JsonObject, Timestamp


class MemoryType(StrEnum):
    CONSTRAINT = "constraint"
    PREFERENCE = "preference"
    FACT = "fact"
    PROFILE = "profile"
    EPISODE = "episode"
    REFLECTION = "reflection"
    SKILL = "skill"
    PROCEDURE = "procedure"
    TASK_STATE = "task_state"
    PROJECT_STATE = "project_state"
    TOOL_MEMORY = "tool_memory"
    DOCUMENT_REFERENCE = "document_reference"


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    CONTRADICTED = "contradicted"
    QUARANTINED = "quarantined"
    DELETED = "deleted"
    EXPIRED = "expired"


class Sensitivity(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    RESTRICTED = "restricted"


SENSITIVITY_ORDER = [s.value for s in Sensitivity]


def within_sensitivity(level: str, ceiling: str) -> bool:
    """A memory of sensitivity `level` may be read where `ceiling` is the highest allowed."""
    return SENSITIVITY_ORDER.index(level) <= SENSITIVITY_ORDER.index(ceiling)


def lower_sensitivity(a: str, b: str) -> str:
    """The lower of two sensitivities (a request's ask capped at a key's ceiling)."""
    return a if within_sensitivity(a, b) else b


ScopeKey = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,31}$")]
ScopeValue = Annotated[str, StringConstraints(min_length=1, max_length=256)]
# A scope's level, and the id a level other than global needs beside it.
SCOPE_LEVELS = {"global": None, "session": "session_id", "task": "task_id"}


def _scope_error(kind: str, message: str, key: str, value: Any, **ctx: Any) -> ValidationError:
    # Raised as a ValidationError of its own, so the error's place is the key inside the
    # scope (scope.level), not the whole scope.
    error = PydanticCustomError(kind, message, ctx)
    return ValidationError.from_exception_data(
        "Scope", [InitErrorDetails(type=error, loc=(key,), input=value)]
    )


def _scope(scope: dict[str, str]) -> dict[str, str]:
    level = scope.get("level")
    if level is None:
        return scope
    if level not in SCOPE_LEVELS:
        message = "not a scope level: {level} (one of global, session, task)"
        raise _scope_error("scope_level", message, "level", level, level=level)
    needed = SCOPE_LEVELS[level]
    if needed is not None and needed not in scope:
        message = "a {level}-level scope needs its {needed}"
        raise _scope_error("scope_id_missing", message, needed, scope, level=level, needed=needed)
    return scope


Scope = Annotated[dict[ScopeKey, ScopeValue], Field(max_length=16), AfterValidator(_scope)]
Unit = Annotated[float, Field(ge=0, le=1)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class MemoryFields(Strict):
    content: Annotated[str, StringConstraints(min_length=1)]
    confidence: Unit = 0.8
    sensitivity: Sensitivity = Sensitivity.LOW
    criticality: Unit = 0.5
    valid_from: Timestamp | None = None
    valid_until: Timestamp | None = None
    source_refs: list[Annotated[str, StringConstraints(min_length=1, max_length=512)]] = Field(
        default_factory=list, max_length=64
    )
    metadata: JsonObject = Field(default_factory=dict)

    @model_validator(mode="after")
    def _window(self) -> MemoryFields:
        if self.valid_from and self.valid_until and self.valid_until <= self.valid_from:
            raise ValueError("`valid_until` must be after `valid_from`")
        return self


class MemoryCreate(MemoryFields):
    id: Ident | None = None
    type: MemoryType
    scope: Scope = Field(default_factory=lambda: {"level": "global"})


class MemorySupersede(MemoryFields):
    """The new version; fields left out keep the old version's values, except content."""

    confidence: Unit | None = None  # type: ignore[assignment]
    sensitivity: Sensitivity | None = None  # type: ignore[assignment]
    criticality: Unit | None = None  # type: ignore[assignment]


class MemoryRead(BaseModel):
    id: str
    type: MemoryType
    scope: dict[str, str]
    content: str
    status: MemoryStatus
    confidence: float
    sensitivity: Sensitivity
    criticality: float
    valid_from: datetime | None
    valid_until: datetime | None
    source_refs: list[str]
    metadata: dict[str, Any]
    version: int
    previous_id: str | None
    superseded_by: str | None
    token_estimate: int
    use_count: int
    last_used_at: datetime | None
    reward_count: int
    reward_mean: float | None
    created_at: datetime
    updated_at: datetime
    redacted: bool = Field(
        default=False,
        description="Content and metadata withheld: the memory is more sensitive than the "
        "key may read",
    )


class MemoryPage(BaseModel):
    items: list[MemoryRead]
    next_cursor: str | None


class MemorySearch(Strict):
    query: Annotated[str, StringConstraints(min_length=1, max_length=2048)]
    types: list[MemoryType] | None = None
    scope: Scope | None = None
    statuses: list[MemoryStatus] = Field(default_factory=lambda: [MemoryStatus.ACTIVE])
    max_sensitivity: Sensitivity = Sensitivity.HIGH
    limit: Annotated[int, Field(ge=1, le=100)] = 10


class ScoreParts(BaseModel):
    text: float
    criticality: float
    confidence: float
    value: float
    staleness: float


class MemoryHit(BaseModel):
    memory: MemoryRead
    score: float
    parts: ScoreParts


class MemorySearchResult(BaseModel):
    query_terms: list[str]
    hits: list[MemoryHit]
