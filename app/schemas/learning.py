"""Learning loop models: jobs, reflections, patterns, skills and their history."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas.common import Name, Timestamp

JobKind = Literal["episode.learn", "reward.credit", "skills.evolve", "reflect.pass"]
JobStatus = Literal["queued", "running", "done", "failed", "dead"]
PatternKind = Literal[
    "action", "sequence", "procedure", "recovery", "context", "failure", "skill_chain"
]
PatternSort = Literal["support", "success_rate", "mean_reward", "lcb"]
SkillStatus = Literal["candidate", "active", "retired"]
SkillSort = Literal["created_at", "uses", "lcb", "success_rate"]


class JobRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    kind: str
    key: str
    payload: dict[str, Any]
    status: JobStatus
    attempts: int
    max_attempts: int
    run_after: datetime
    last_error: str | None
    result: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None


class JobPage(BaseModel):
    items: list[JobRead]
    counts: dict[str, int] = Field(description="Jobs of this namespace by status")
    next_cursor: str | None


class ReflectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    since: Timestamp | None = None
    until: Timestamp | None = None
    task_type: Name | None = None
    wait: bool = True


class PatternRead(BaseModel):
    id: str
    kind: str
    task_type: str | None
    signature: str
    items: list[str]
    support: int
    successes: int
    success_rate: float
    mean_reward: float | None
    lcb: float = Field(description="Wilson 95% lower bound of the success rate")
    evidence: list[str] = Field(description="The latest supporting episodes (at most 20)")
    updated_at: datetime


class PatternPage(BaseModel):
    items: list[PatternRead]
    next_offset: int | None


class SkillChange(BaseModel):
    skill_id: str
    name: str
    change: str
    reason: str


class ReflectResult(BaseModel):
    job_id: str | None = None
    status: Literal["done", "queued"]
    learned: int = 0
    reflections: int = 0
    patterns: list[PatternRead] = Field(default_factory=list)
    skill_changes: list[SkillChange] = Field(default_factory=list)


class ReflectionRead(BaseModel):
    id: str
    episode_id: str | None
    task_type: str | None
    outcome: str | None
    reward: float | None
    content: str
    successes: list[str]
    improvements: list[str]
    insights: list[str]
    created_at: datetime


class ReflectionPage(BaseModel):
    items: list[ReflectionRead]
    next_cursor: str | None


class SkillStep(BaseModel):
    action: str
    on_error: str | None = None


class SkillRead(BaseModel):
    id: str
    name: str
    task_type: str | None
    trigger: dict[str, Any]
    steps: list[SkillStep]
    status: SkillStatus
    version: int
    uses: int
    successes: int
    mean_reward: float | None
    support: int = Field(description="Recent episodes that performed its steps in order")
    success_rate: float
    lcb: float
    evidence: list[str]
    parent_ids: list[str]
    memory_id: str | None
    created_at: datetime
    updated_at: datetime
    retired_at: datetime | None


class SkillPage(BaseModel):
    items: list[SkillRead]
    next_offset: int | None


class SkillEventRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    kind: str
    version: int
    reason: str
    evidence: list[str]
    details: dict[str, Any]
    created_at: datetime


class SkillHistory(BaseModel):
    skill_id: str
    items: list[SkillEventRead]
    next_cursor: str | None
