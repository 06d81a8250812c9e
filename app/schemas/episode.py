"""Episode request and response models."""

from __future__ import annotations

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

from app.learning.mining import context_fields
from app.schemas import examples
from app.schemas.common import (
    JSON_LIMIT,
    MAX_LATENCY_MS,
    MAX_TOKENS,
    NAME_LIMIT,
    TEXT_LIMIT,
    EventTime,
    Ident,
    JsonObject,
    JsonValue,
    Name,
    storable,
)
from app.schemas.strict import Strict


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


_WHEN = "ISO 8601 with a timezone (stored in UTC), at most a day ahead of the server's clock"


class StepCreate(Strict):
    """One step of an episode: an action, the tool it used, and how it went."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.STEP_CREATE]})

    action: Name = Field(
        description="What the agent did, as a short stable name (`search_code`); learning "
        "mines patterns and skills from these names; " + NAME_LIMIT
    )
    tool: Name | None = Field(default=None, description="The tool used; " + NAME_LIMIT)
    signature: list[Name] | None = Field(
        default=None,
        max_length=64,
        description="The action signatures learning mines for this step, e.g. "
        "[`git tag <version>`]; [] marks exploration. Left out, Engram derives them from a "
        "coding agent's tool call (Bash, Edit, shell, apply_patch, mcp__...) and its input, "
        "and other steps are learned as `tool.action`",
    )
    input: JsonValue = Field(default=None, description="The step's input, any JSON value")
    output: JsonValue = Field(default=None, description="The step's output, any JSON value")
    status: StepStatus = Field(
        default=StepStatus.OK, description="How the step ended; `ok` when left out"
    )
    error: str | None = Field(default=None, description="The error message; " + TEXT_LIMIT)
    latency_ms: float | None = Field(
        default=None, ge=0, le=MAX_LATENCY_MS, description="Wall time in milliseconds (0 to a year)"
    )
    tokens: int | None = Field(
        default=None, ge=0, le=MAX_TOKENS, description="Model tokens the step used (0 to 10^12)"
    )
    started_at: EventTime | None = Field(default=None, description="When it began; " + _WHEN)
    metadata: JsonObject = Field(
        default_factory=dict,
        description="Free-form JSON object kept with the step; a whole step is at most "
        "ENGRAM_LIMITS__MAX_STEP_BYTES as JSON (65,536 by default; more is a 413)",
    )


class TaskContext(Strict):
    """Where a task happens: skills are learned, and handed out, per context."""

    domain: Name | None = Field(default=None, description="Area of work (`web`); " + NAME_LIMIT)
    language: Name | None = Field(
        default=None, description="Programming or natural language; " + NAME_LIMIT
    )
    tags: list[Name] = Field(
        default_factory=list,
        max_length=64,
        description="Free labels (at most 64), each " + NAME_LIMIT,
    )
    features: Annotated[dict[str, Scalar], AfterValidator(storable)] = Field(
        default_factory=dict,
        max_length=64,
        description="Named scalar values (string, number, boolean or null; at most 64 of "
        "them), " + JSON_LIMIT,
    )

    def fields(self) -> dict[str, str]:
        """The context as skill triggers key it: `domain`, `language`, `tag.<tag>`,
        `features.<name>`."""
        return context_fields(
            domain=self.domain, language=self.language, tags=self.tags, features=self.features
        )


class EpisodeContext(TaskContext):
    """Where the episode happened: used to match skills and filter learning."""

    text: str | None = Field(default=None, description="Free text about the context; " + TEXT_LIMIT)


class EpisodeCreate(Strict):
    """A whole episode, an open one (no outcome yet), or the one-step shorthand `action`."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.EPISODE_CREATE]})

    id: Ident | None = Field(
        default=None,
        description="Client-chosen id (letters, digits, `._:-`, at most 64); a retry with it "
        "returns the first result; null: the service assigns one",
    )
    task_id: Name = Field(
        description="The task this episode worked on (rewards can name it); " + NAME_LIMIT
    )
    agent_id: Name | None = Field(default=None, description="The agent that ran it; " + NAME_LIMIT)
    task_type: Name | None = Field(
        default=None,
        description="Kind of task (`code_fix`): patterns and skills are per type; " + NAME_LIMIT,
    )
    description: str | None = Field(
        default=None, description="Free text about the episode; " + TEXT_LIMIT
    )
    context: EpisodeContext | str | None = Field(
        default=None, description="Where it happened; a string is shorthand for `{text: ...}`"
    )
    steps: list[StepCreate] = Field(
        default_factory=list,
        description="The steps in order, at most ENGRAM_LIMITS__MAX_STEPS (1,000 by default; "
        "more is a 413)",
    )
    action: Name | None = Field(
        default=None, description="Shorthand for a one-step episode; not with `steps`"
    )
    tool: Name | None = Field(default=None, description="The one step's tool (with `action`)")
    outcome: Outcome | None = Field(
        default=None, description="How it ended; null leaves the episode open for more steps"
    )
    verdict: str | None = Field(
        default=None, description="Why that outcome (needs `outcome`); " + TEXT_LIMIT
    )
    progress: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Fraction completed, 0 to 1 (needs `outcome`): 1 for a success, strictly "
        "between 0 and 1 for a partial, below 1 for a failure or an abstention",
    )
    skills_applied: list[Name] = Field(
        default_factory=list,
        max_length=64,
        description="Names of skills the agent followed (at most 64), each " + NAME_LIMIT,
    )
    started_at: EventTime | None = Field(default=None, description="When it began; " + _WHEN)
    ended_at: EventTime | None = Field(
        default=None, description="When it ended, not before `started_at`; " + _WHEN
    )
    metadata: JsonObject = Field(
        default_factory=dict, description="Free-form JSON object, " + JSON_LIMIT
    )

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
    """Steps to add to an open episode."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"steps": [{"action": "run_tests", "tool": "pytest"}]}]}
    )

    steps: list[StepCreate] = Field(min_length=1, description="At least one step, in order")


class EpisodeComplete(Strict):
    """The outcome of an open episode."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"outcome": "partial", "verdict": "2 of 3 tests pass", "progress": 0.66}]
        }
    )

    outcome: Outcome = Field(description="How it ended")
    verdict: str | None = Field(default=None, description="Why that outcome")
    progress: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Fraction completed, 0 to 1: 1 for a success, strictly between 0 and 1 "
        "for a partial, below 1 for a failure or an abstention",
    )
    ended_at: EventTime | None = Field(
        default=None, description="When it ended (default: now); " + _WHEN
    )

    _progress = field_validator("progress")(_progress_fits_outcome)
