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
    id: str = Field(description="Pattern id")
    kind: str = Field(description="sequence, recovery, context, failure, ...")
    task_type: str | None = Field(description="The kind of task")
    signature: str = Field(description="The pattern, in words")
    items: list[str] = Field(description="Its actions or features")
    support: int = Field(description="Episodes that show it")
    successes: int = Field(description="Of those, successes")
    success_rate: float = Field(description="successes / support")
    mean_reward: float | None = Field(description="Mean reward of those episodes")
    lcb: float = Field(description="Wilson 95% lower bound of the success rate")
    evidence: list[str] = Field(description="The latest supporting episodes")
    updated_at: datetime = Field(description="Last change")


class PatternPage(Response):
    items: list[PatternRead] = Field(description="This page's patterns")
    next_offset: int | None = Field(description="The next page's offset; null at the end")


class SkillChange(Response):
    skill_id: str = Field(description="Skill id")
    name: str = Field(description="Skill name")
    change: str = Field(description="created, refined, merged, retired, ...")
    reason: str = Field(description="Why")


class ReflectResult(Response):
    job_id: str | None = Field(default=None, description="The queued job (wait=false)")
    status: str = Field(description="done or queued")
    learned: int = Field(default=0, description="Episodes learned from")
    reflections: int = Field(default=0, description="Reflections written")
    patterns: list[PatternRead] = Field(default_factory=list, description="Patterns after the pass")
    skill_changes: list[SkillChange] = Field(default_factory=list, description="Skills changed")


class SkillStep(Response):
    action: str = Field(description="The step's action")
    on_error: str | None = Field(default=None, description="What to do when it fails")
    optional: bool = Field(default=False, description="Usually done, not needed: shown only")


class SkillRead(Response):
    id: str = Field(description="Skill id")
    name: str = Field(description="Skill name")
    task_type: str | None = Field(description="The kind of task")
    trigger: dict[str, Any] = Field(description="When it applies")
    steps: list[SkillStep] = Field(description="Its steps, in order")
    status: str = Field(description="candidate, active or retired")
    version: int = Field(description="Version, from 1")
    uses: int = Field(description="Episodes that applied it")
    successes: int = Field(description="Of those, successes")
    mean_reward: float | None = Field(description="Mean reward of those")
    support: int = Field(description="Recent episodes that performed its steps in order")
    success_rate: float = Field(description="Success rate")
    lcb: float = Field(description="Lower confidence bound of the success rate")
    evidence: list[str] = Field(description="Supporting episodes")
    parent_ids: list[str] = Field(description="Skills it came from")
    memory_id: str | None = Field(description="The memory recall hands out for it")
    created_at: datetime = Field(description="When it was created")
    updated_at: datetime = Field(description="Last change")
    retired_at: datetime | None = Field(description="When it was retired")


class SkillPage(Response):
    items: list[SkillRead] = Field(description="This page's skills")
    next_offset: int | None = Field(description="The next page's offset; null at the end")


class SkillEventRead(Response):
    id: str = Field(description="Event id")
    kind: str = Field(description="created, refined, merged, retired, ...")
    version: int = Field(description="The skill's version after it")
    reason: str = Field(description="Why")
    evidence: list[str] = Field(description="The episodes behind it")
    details: dict[str, Any] = Field(description="What changed")
    created_at: datetime = Field(description="When")


class SkillHistory(Response):
    skill_id: str = Field(description="Skill id")
    items: list[SkillEventRead] = Field(description="Its changes, oldest first")
    next_cursor: str | None = Field(description="The next page's cursor; null at the end")


class JobRead(Response):
    id: str = Field(description="Job id")
    kind: str = Field(description="episode.learn, reward.credit, ...")
    key: str = Field(description="Its deduplication key")
    payload: dict[str, Any] = Field(description="Its input")
    status: str = Field(description="queued, running, done, failed or dead")
    attempts: int = Field(description="Attempts so far")
    max_attempts: int = Field(description="Attempts before it is dead")
    run_after: datetime = Field(description="Not run before")
    last_error: str | None = Field(description="The last failure")
    result: dict[str, Any] | None = Field(description="What it produced")
    created_at: datetime = Field(description="When it was queued")
    updated_at: datetime = Field(description="Last change")
    finished_at: datetime | None = Field(description="When it ended")


class JobPage(Response):
    items: list[JobRead] = Field(description="This page's jobs")
    counts: dict[str, int] = Field(description="The namespace's jobs by status")
    next_cursor: str | None = Field(description="The next page's cursor; null at the end")
