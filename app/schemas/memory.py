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

from app.schemas import examples
from app.schemas.common import JSON_LIMIT, TEXT_LIMIT, Ident, JsonObject, Timestamp
from app.schemas.pages import CursorPage
from app.schemas.strict import Strict


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


def readable_sensitivities(ceiling: str) -> list[str]:
    """The sensitivities a caller whose highest is `ceiling` may read, lowest first."""
    return SENSITIVITY_ORDER[: SENSITIVITY_ORDER.index(ceiling) + 1]


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


_SCOPE = (
    'Where the memory applies: `{"level": "global"}`, `{"level": "session", "session_id": '
    '...}` or `{"level": "task", "task_id": ...}`, plus other ids (lower-case keys, values of '
    "1 to 256 characters, at most 16 entries); recall offers it only to requests whose scope "
    "has the same ids"
)
_CONFIDENCE = "How sure the source is, 0 to 1"
_SENSITIVITY = (
    "Who may read it: keys read up to their max_sensitivity (low < medium < high < restricted)"
)
_CRITICALITY = (
    "How much it matters, 0 to 1; high criticality ranks first and is never dropped lightly"
)


class MemoryFields(Strict):
    content: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="The memory itself, as text recall hands back (at least 1 character), "
        + TEXT_LIMIT
    )
    confidence: Unit = Field(default=0.8, description=_CONFIDENCE + " (default 0.8)")
    sensitivity: Sensitivity = Field(
        default=Sensitivity.LOW, description=_SENSITIVITY + " (default low)"
    )
    criticality: Unit = Field(default=0.5, description=_CRITICALITY + " (default 0.5)")
    valid_from: Timestamp | None = Field(
        default=None, description="Not recalled before this time (ISO 8601 with a timezone)"
    )
    valid_until: Timestamp | None = Field(
        default=None,
        description="Expires at this time (ISO 8601 with a timezone), after `valid_from`",
    )
    source_refs: list[Annotated[str, StringConstraints(min_length=1, max_length=512)]] = Field(
        default_factory=list,
        max_length=64,
        description="Where it came from (URLs, episode ids; at most 64 of 512 characters)",
    )
    metadata: JsonObject = Field(
        default_factory=dict, description="Free-form JSON object, " + JSON_LIMIT
    )

    @model_validator(mode="after")
    def _window(self) -> MemoryFields:
        if self.valid_from and self.valid_until and self.valid_until <= self.valid_from:
            raise ValueError("`valid_until` must be after `valid_from`")
        return self


class MemoryCreate(MemoryFields):
    """A memory to store."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.MEMORY_CREATE]})

    id: Ident | None = Field(
        default=None,
        description="Client-chosen id (letters, digits, `._:-`, at most 64); null: assigned",
    )
    type: MemoryType = Field(
        description="What kind of memory: recall treats constraints as rules, preferences "
        "and facts as context, the rest as background"
    )
    scope: Scope = Field(
        default_factory=lambda: {"level": "global"}, description=_SCOPE + " (default global)"
    )


class MemorySupersede(MemoryFields):
    """The new version; fields left out keep the old version's values, except content."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"content": "Migrations run only from the release pipeline"}]
        }
    )

    confidence: Unit | None = Field(  # type: ignore[assignment]
        default=None, description=_CONFIDENCE + "; null keeps the old version's"
    )
    sensitivity: Sensitivity | None = Field(  # type: ignore[assignment]
        default=None, description=_SENSITIVITY + "; null keeps the old version's"
    )
    criticality: Unit | None = Field(  # type: ignore[assignment]
        default=None, description=_CRITICALITY + "; null keeps the old version's"
    )


class MemoryRead(BaseModel):
    """A stored memory."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.MEMORY_READ]})

    id: str = Field(description="The memory's id (each version has its own)")
    type: MemoryType = Field(description="What kind of memory")
    scope: dict[str, str] = Field(description="Where it applies (`level` and ids)")
    content: str = Field(description="The memory's text; empty when `redacted`")
    status: MemoryStatus = Field(
        description="Only `active` ones are recalled (quarantined ones for re-verification)"
    )
    confidence: float = Field(description=_CONFIDENCE)
    sensitivity: Sensitivity = Field(description=_SENSITIVITY)
    criticality: float = Field(description="How much it matters, 0 to 1")
    valid_from: datetime | None = Field(description="Not recalled before (UTC); null: always")
    valid_until: datetime | None = Field(description="Expiry (UTC); null: never")
    source_refs: list[str] = Field(description="Where it came from")
    metadata: dict[str, Any] = Field(description="As sent; empty when `redacted`")
    version: int = Field(description="1 for a first version, +1 per supersede")
    previous_id: str | None = Field(description="The version it replaced; null for a first one")
    superseded_by: str | None = Field(description="The version that replaced it; null if current")
    token_estimate: int = Field(description="Tokens its content costs in a recall budget")
    use_count: int = Field(description="Times recall selected it")
    last_used_at: datetime | None = Field(description="Last selected (UTC); null: never")
    reward_count: int = Field(description="Rewards of recalls that selected it")
    reward_mean: float | None = Field(description="Their mean; null without any")
    created_at: datetime = Field(description="When it was stored (UTC)")
    updated_at: datetime = Field(description="Last change (UTC)")
    redacted: bool = Field(
        default=False,
        description="Content and metadata withheld: the memory is more sensitive than the "
        "key may read",
    )


class MemoryPage(CursorPage[MemoryRead]):
    """A page of memories, newest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.MEMORY_PAGE]})
