"""Episode request and response models."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from app.schemas.common import (
    MAX_LATENCY_MS,
    MAX_TOKENS,
    EventTime,
    Ident,
    JsonObject,
    JsonValue,
    Name,
    storable,
)


class StepStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"


class Outcome(StrEnum):
    SUCCESS = "success"
    PARTIAL = "partial"
    FAILURE = "failure"
    ABSTAINED = "abstained"
    # Ended without anyone saying how it went (a Claude Code session, say); a later reward
    # with `task_success` tells learning.
    UNKNOWN = "unknown"


class EpisodeStatus(StrEnum):
    OPEN = "open"
    COMPLETED = "completed"


Scalar = str | int | float | bool | None


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _progress_fits_outcome(cls: type[BaseModel], value: float | None, info: ValidationInfo) -> Any:
    """A success got all the way (1), a partial some of it (between 0 and 1), a failure
    or an abstention not all of it (below 1)."""
    outcome = info.data.get("outcome")
    if value is None or outcome is None:
        return value
    if outcome == Outcome.SUCCESS and value != 1:
        raise ValueError("a success has progress 1 (leave it out, or report a partial)")
    if outcome == Outcome.PARTIAL and not 0 < value < 1:
        raise ValueError("a partial outcome has progress between 0 and 1")
    if outcome in (Outcome.FAILURE, Outcome.ABSTAINED) and value == 1:
        raise ValueError(f"a {outcome.value} has progress below 1 (progress 1 is a success)")
    return value


class StepCreate(Strict):
    action: Name
    tool: Name | None = None
    input: JsonValue = None
    output: JsonValue = None
    status: StepStatus = StepStatus.OK
    error: str | None = None
    latency_ms: float | None = Field(default=None, ge=0, le=MAX_LATENCY_MS)
    tokens: int | None = Field(default=None, ge=0, le=MAX_TOKENS)
    started_at: EventTime | None = None
    metadata: JsonObject = Field(default_factory=dict)


class EpisodeContext(Strict):
    domain: Name | None = None
    language: Name | None = None
    tags: list[Name] = Field(default_factory=list, max_length=64)
    text: str | None = None
    features: Annotated[dict[str, Scalar], AfterValidator(storable)] = Field(
        default_factory=dict, max_length=64
    )


class EpisodeCreate(Strict):
    """A whole episode, an open one (no outcome yet), or the one-step shorthand `action`."""

    id: Ident | None = Field(
        default=None, description="Client-chosen id; a retry returns the first result"
    )
    task_id: Name
    agent_id: Name | None = None
    task_type: Name | None = None
    description: str | None = None
    context: EpisodeContext | str | None = None
    steps: list[StepCreate] = Field(default_factory=list)
    action: Name | None = Field(default=None, description="Shorthand for a one-step episode")
    tool: Name | None = None
    outcome: Outcome | None = None
    verdict: str | None = None
    progress: float | None = Field(default=None, ge=0, le=1, description="Fraction completed")
    skills_applied: list[Name] = Field(default_factory=list, max_length=64)
    started_at: EventTime | None = None
    ended_at: EventTime | None = None
    metadata: JsonObject = Field(default_factory=dict)

    _progress = field_validator("progress")(_progress_fits_outcome)

    @model_validator(mode="after")
    def _normalise(self) -> EpisodeCreate:
        if self.action is not None:
            if self.steps:
                raise ValueError("give either `action` (one-step shorthand) or `steps`, not both")
            self.steps = [StepCreate(action=self.action, tool=self.tool)]
        elif self.tool is not None:
            raise ValueError("`tool` without `action`: put tools inside `steps`")
        if isinstance(self.context, str):
            self.context = EpisodeContext(text=self.context)
        if self.outcome is None and (self.verdict is not None or self.progress is not None):
            raise ValueError("`verdict` and `progress` need an `outcome`")
        if self.started_at and self.ended_at and self.ended_at < self.started_at:
            raise ValueError("`ended_at` is before `started_at`")
        return self


class StepsAppend(Strict):
    steps: list[StepCreate] = Field(min_length=1)


class EpisodeComplete(Strict):
    outcome: Outcome
    verdict: str | None = None
    progress: float | None = Field(default=None, ge=0, le=1)
    ended_at: EventTime | None = None

    _progress = field_validator("progress")(_progress_fits_outcome)


class StepRead(BaseModel):
    seq: int
    action: str
    tool: str | None = None
    input: Any = None
    output: Any = None
    status: StepStatus
    error: str | None = None
    latency_ms: float | None = None
    tokens: int | None = None
    started_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class EpisodeSummary(BaseModel):
    id: str
    task_id: str
    agent_id: str | None
    task_type: str | None
    description: str | None
    status: EpisodeStatus
    outcome: Outcome | None
    verdict: str | None
    progress: float | None
    domain: str | None
    language: str | None
    tags: list[str]
    skills_applied: list[str]
    step_count: int
    error_count: int
    total_latency_ms: float
    total_tokens: int
    started_at: datetime | None
    ended_at: datetime | None
    completed_at: datetime | None
    created_at: datetime
    updated_at: datetime


class EpisodeRead(EpisodeSummary):
    context: EpisodeContext
    steps: list[StepRead]
    metadata: dict[str, Any]


class EpisodePage(BaseModel):
    items: list[EpisodeSummary]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next page; null at the end"
    )
