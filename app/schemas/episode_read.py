"""Episode response models: a step, an episode's summary, a whole episode, a page."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas import examples
from app.schemas.episode import EpisodeContext, EpisodeStatus, Outcome, StepStatus
from app.schemas.pages import CursorPage


class StepRead(BaseModel):
    """A stored step."""

    seq: int = Field(description="Position in the episode, from 0")
    action: str = Field(description="What the agent did")
    tool: str | None = Field(default=None, description="The tool used; null when none")
    signature: list[str] | None = Field(
        default=None,
        description="The step's action signatures, what learning mines (`uv run pytest -q "
        "<path>`); [] for exploration (reads, searches); null: learned as `tool.action`",
    )
    input: Any = Field(default=None, description="The step's input as sent")
    output: Any = Field(default=None, description="The step's output as sent")
    status: StepStatus = Field(description="How the step ended")
    error: str | None = Field(default=None, description="The error message; null when none")
    latency_ms: float | None = Field(default=None, description="Milliseconds; null if not sent")
    tokens: int | None = Field(default=None, description="Tokens used; null if not sent")
    started_at: datetime | None = Field(default=None, description="When it began (UTC)")
    metadata: dict[str, Any] = Field(default_factory=dict, description="As sent")


class EpisodeSummary(BaseModel):
    """An episode without its steps."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.EPISODE_SUMMARY]})

    id: str = Field(description="The episode's id (given, or assigned)")
    task_id: str = Field(description="The task it worked on")
    agent_id: str | None = Field(description="The agent; null if not given")
    task_type: str | None = Field(description="Kind of task; null if not given")
    description: str | None = Field(description="Free text; null if not given")
    status: EpisodeStatus = Field(description="`open` until it has an outcome")
    outcome: Outcome | None = Field(description="How it ended; null while open")
    verdict: str | None = Field(description="Why that outcome; null if not given")
    outcome_source: Literal["inferred"] | None = Field(
        default=None,
        description="null: the outcome was reported; `inferred`: Engram inferred it from the "
        "agent's session (its last checks, failures left, the user's next words); a reported "
        "outcome or an explicit reward always wins over it",
    )
    outcome_confidence: float | None = Field(
        default=None, description="How sure an inferred outcome is, 0 to 1; null if reported"
    )
    progress: float | None = Field(description="Fraction completed, 0 to 1; null if not given")
    domain: str | None = Field(description="The context's domain; null if not given")
    language: str | None = Field(description="The context's language; null if not given")
    tags: list[str] = Field(description="The context's tags")
    skills_applied: list[str] = Field(description="Skills the agent followed")
    step_count: int = Field(description="Steps recorded")
    error_count: int = Field(description="Steps whose status is not `ok`")
    total_latency_ms: float = Field(description="Sum of the steps' latency_ms")
    total_tokens: int = Field(description="Sum of the steps' tokens")
    started_at: datetime | None = Field(description="When it began (UTC); null if not given")
    ended_at: datetime | None = Field(description="When it ended (UTC); null if not given")
    completed_at: datetime | None = Field(
        description="When the outcome was recorded; null while open"
    )
    created_at: datetime = Field(description="When the service stored it (UTC)")
    updated_at: datetime = Field(description="Last change (UTC)")


class EpisodeRead(EpisodeSummary):
    """A whole episode, with every step."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.EPISODE_READ]})

    context: EpisodeContext = Field(description="Where it happened")
    steps: list[StepRead] = Field(description="Every step, in order")
    metadata: dict[str, Any] = Field(description="As sent")


class EpisodePage(CursorPage[EpisodeSummary]):
    """A page of episodes, newest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.EPISODE_PAGE]})
