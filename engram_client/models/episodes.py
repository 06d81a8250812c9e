"""Episodes: what an agent did, step by step, and how it ended."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from engram_client.models.base import Request, Response


class StepCreate(Request):
    """One step of an episode."""

    action: str = Field(description="What the agent did (read_file, run_tests, ...)")
    tool: str | None = Field(default=None, description="The tool it used")
    input: Any = Field(default=None, description="The step's input (any JSON)")
    output: Any = Field(default=None, description="The step's output (any JSON)")
    status: str | None = Field(default=None, description="ok (default), error or timeout")
    error: str | None = Field(default=None, description="What went wrong, for a failed step")
    latency_ms: float | None = Field(default=None, description="How long it took")
    tokens: int | None = Field(default=None, description="Tokens it used")
    started_at: datetime | None = Field(default=None, description="When it started")
    metadata: dict[str, Any] | None = Field(default=None, description="Free-form JSON")


class EpisodeContext(Response):
    """Where the episode happened."""

    domain: str | None = None
    language: str | None = None
    tags: list[str] = Field(default_factory=list)
    text: str | None = None
    features: dict[str, Any] = Field(default_factory=dict)


class EpisodeCreate(Request):
    """A whole episode (with outcome), an open one (steps added later), or one step."""

    id: str | None = Field(default=None, description="Your id for it; a retry returns it")
    task_id: str = Field(description="The task the episode attempted")
    agent_id: str | None = Field(default=None, description="The agent that ran it")
    task_type: str | None = Field(default=None, description="The kind of task (fix_bug, ...)")
    description: str | None = Field(default=None, description="What the task was")
    context: dict[str, Any] | str | None = Field(
        default=None, description="domain, language, tags, text, features; or free text"
    )
    steps: list[StepCreate] | None = Field(default=None, description="The steps, in order")
    action: str | None = Field(default=None, description="Shorthand for a one-step episode")
    tool: str | None = Field(default=None, description="The one step's tool (with `action`)")
    outcome: str | None = Field(
        default=None, description="success, partial, failure or abstained; none: open"
    )
    verdict: str | None = Field(default=None, description="Why it ended so")
    progress: float | None = Field(default=None, description="Fraction completed, 0 to 1")
    skills_applied: list[str] | None = Field(default=None, description="Skills it followed")
    started_at: datetime | None = Field(default=None, description="When it started")
    ended_at: datetime | None = Field(default=None, description="When it ended")
    metadata: dict[str, Any] | None = Field(default=None, description="Free-form JSON")


class StepsAppend(Request):
    """Steps added to an open episode."""

    steps: list[StepCreate] = Field(description="The new steps, in order")


class EpisodeComplete(Request):
    """The outcome of an open episode."""

    outcome: str = Field(description="success, partial, failure or abstained")
    verdict: str | None = Field(default=None, description="Why it ended so")
    progress: float | None = Field(default=None, description="Fraction completed, 0 to 1")
    ended_at: datetime | None = Field(default=None, description="When it ended")


class StepRead(Response):
    seq: int
    action: str
    tool: str | None = None
    input: Any = None
    output: Any = None
    status: str
    error: str | None = None
    latency_ms: float | None = None
    tokens: int | None = None
    started_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class EpisodeSummary(Response):
    id: str
    task_id: str
    agent_id: str | None
    task_type: str | None
    description: str | None
    status: str
    outcome: str | None
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


class EpisodePage(Response):
    items: list[EpisodeSummary]
    next_cursor: str | None
