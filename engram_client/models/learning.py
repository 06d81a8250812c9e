"""What Engram learns: reflection passes, patterns, skills, and the jobs that run them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from engram_client.models.base import Request, Response


class ReflectRequest(Request):
    """A learning pass over new episodes."""

    since: datetime | None = Field(default=None, description="Episodes created at or after")
    until: datetime | None = Field(default=None, description="Episodes created before")
    task_type: str | None = Field(default=None, description="Only this kind of task")
    wait: bool | None = Field(default=None, description="Run now (default) or queue a job")


class PatternRead(Response):
    id: str
    kind: str
    task_type: str | None
    signature: str
    items: list[str]
    support: int
    successes: int
    success_rate: float
    mean_reward: float | None
    lcb: float
    evidence: list[str]
    updated_at: datetime


class PatternPage(Response):
    items: list[PatternRead]
    next_offset: int | None


class SkillChange(Response):
    skill_id: str
    name: str
    change: str
    reason: str


class ReflectResult(Response):
    job_id: str | None = None
    status: str
    learned: int = 0
    reflections: int = 0
    patterns: list[PatternRead] = Field(default_factory=list)
    skill_changes: list[SkillChange] = Field(default_factory=list)


class SkillStep(Response):
    action: str
    on_error: str | None = None


class SkillRead(Response):
    id: str
    name: str
    task_type: str | None
    trigger: dict[str, Any]
    steps: list[SkillStep]
    status: str
    version: int
    uses: int
    successes: int
    mean_reward: float | None
    support: int
    success_rate: float
    lcb: float
    evidence: list[str]
    parent_ids: list[str]
    memory_id: str | None
    created_at: datetime
    updated_at: datetime
    retired_at: datetime | None


class SkillPage(Response):
    items: list[SkillRead]
    next_offset: int | None


class SkillEventRead(Response):
    id: str
    kind: str
    version: int
    reason: str
    evidence: list[str]
    details: dict[str, Any]
    created_at: datetime


class SkillHistory(Response):
    skill_id: str
    items: list[SkillEventRead]
    next_cursor: str | None


class JobRead(Response):
    id: str
    kind: str
    key: str
    payload: dict[str, Any]
    status: str
    attempts: int
    max_attempts: int
    run_after: datetime
    last_error: str | None
    result: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


class JobPage(Response):
    items: list[JobRead]
    counts: dict[str, int]
    next_cursor: str | None
