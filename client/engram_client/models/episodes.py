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

    domain: str | None = Field(default=None, description="Domain, e.g. python")
    language: str | None = Field(default=None, description="Language")
    tags: list[str] = Field(default_factory=list, description="Tags")
    text: str | None = Field(default=None, description="Free text")
    features: dict[str, Any] = Field(default_factory=dict, description="Named scalar features")


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
    seq: int = Field(description="Position in the episode, from 0")
    action: str = Field(description="What the agent did")
    tool: str | None = Field(default=None, description="The tool it used")
    input: Any = Field(default=None, description="The step's input")
    output: Any = Field(default=None, description="The step's output")
    status: str = Field(description="ok, error or timeout")
    error: str | None = Field(default=None, description="What went wrong")
    latency_ms: float | None = Field(default=None, description="How long it took")
    tokens: int | None = Field(default=None, description="Tokens it used")
    started_at: datetime | None = Field(default=None, description="When it started")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form JSON")


class EpisodeSummary(Response):
    id: str = Field(description="Episode id")
    task_id: str = Field(description="The task it attempted")
    agent_id: str | None = Field(description="The agent that ran it")
    task_type: str | None = Field(description="The kind of task")
    description: str | None = Field(description="What the task was")
    status: str = Field(description="open or completed")
    outcome: str | None = Field(description="How it ended (null while open)")
    verdict: str | None = Field(description="Why it ended so")
    progress: float | None = Field(description="Fraction completed")
    domain: str | None = Field(description="Context domain")
    language: str | None = Field(description="Context language")
    tags: list[str] = Field(description="Context tags")
    skills_applied: list[str] = Field(description="Skills it followed")
    step_count: int = Field(description="Steps recorded")
    error_count: int = Field(description="Steps that failed")
    total_latency_ms: float = Field(description="Sum of the steps' latencies")
    total_tokens: int = Field(description="Sum of the steps' tokens")
    started_at: datetime | None = Field(description="When it started")
    ended_at: datetime | None = Field(description="When it ended")
    completed_at: datetime | None = Field(description="When the outcome was recorded")
    created_at: datetime = Field(description="When it was stored")
    updated_at: datetime = Field(description="Last change")


class EpisodeRead(EpisodeSummary):
    context: EpisodeContext = Field(description="Where it happened")
    steps: list[StepRead] = Field(description="Every step, in order")
    metadata: dict[str, Any] = Field(description="Free-form JSON")


class EpisodePage(Response):
    items: list[EpisodeSummary] = Field(description="This page's episodes")
    next_cursor: str | None = Field(description="The next page's cursor; null at the end")
