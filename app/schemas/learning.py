"""Learning loop models: jobs, reflections, patterns, skills and their history."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from app.schemas import learning_examples
from app.schemas.common import Name, Timestamp
from app.schemas.pages import CursorPage, OffsetPage

# Every kind the worker runs (app/services/operations/jobs.py KINDS; a test holds them equal).
JobKind = Literal[
    "episode.learn",
    "reward.credit",
    "skills.evolve",
    "reflect.pass",
    "policy.train",
    "policy.evaluate",
    "policy.check",
]
JobStatus = Literal["queued", "running", "done", "failed", "dead"]
PatternKind = Literal[
    "action", "sequence", "procedure", "recovery", "context", "failure", "skill_chain"
]
PatternSort = Literal["support", "success_rate", "mean_reward", "lcb"]
SkillStatus = Literal["candidate", "active", "retired"]
SkillSort = Literal["created_at", "uses", "lcb", "success_rate"]


_LCB = "Wilson 95% lower bound of the success rate, 0 to 1"


class JobRead(BaseModel):
    """A background job of the learning loop."""

    model_config = ConfigDict(
        from_attributes=True, json_schema_extra={"examples": [learning_examples.JOB_READ]}
    )

    id: str = Field(description="The job's id")
    kind: str = Field(
        description="What it does: `episode.learn`, `reward.credit`, `skills.evolve` or "
        "`reflect.pass`"
    )
    key: str = Field(description="Deduplication key: one job per kind and key at a time")
    payload: dict[str, Any] = Field(description="The job's arguments")
    status: JobStatus = Field(
        description="`queued`, `running`, `done`, `failed` (will be retried) or `dead` "
        "(out of attempts)"
    )
    attempts: int = Field(description="Runs so far")
    max_attempts: int = Field(description="Runs before it is `dead`")
    run_after: datetime = Field(description="Not run before this time (UTC; retry back-off)")
    last_error: str | None = Field(description="The last run's error; null if none")
    result: dict[str, Any] | None = Field(description="What it produced; null until done")
    created_at: datetime = Field(description="When queued (UTC)")
    updated_at: datetime = Field(description="Last change (UTC)")
    finished_at: datetime | None = Field(description="When done or dead (UTC); null before")


class JobPage(CursorPage[JobRead]):
    """A page of jobs, newest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [learning_examples.JOB_PAGE]})

    counts: dict[str, int] = Field(description="Jobs of this namespace by status")


class ReflectRequest(BaseModel):
    """A learning pass over a window of episodes; every field is optional."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"task_type": "code_fix", "wait": True}]},
    )

    since: Timestamp | None = Field(
        default=None,
        description="Episodes created at or after (ISO 8601 with a timezone), not in the "
        "future; null: since the beginning",
    )
    until: Timestamp | None = Field(
        default=None, description="Episodes created before, after `since`; null: up to now"
    )
    task_type: Name | None = Field(default=None, description="Only this task type; null: all")
    wait: StrictBool = Field(
        default=True,
        description="true (default): run now and answer 200 with the result; false: queue "
        "a job and answer 202 with its id",
    )


class PatternRead(BaseModel):
    """A pattern mined from episodes."""

    id: str = Field(description="The pattern's id")
    kind: str = Field(
        description="`action`, `sequence`, `procedure`, `recovery`, `context`, `failure` "
        "or `skill_chain`"
    )
    task_type: str | None = Field(description="Its task type; null: across types")
    signature: str = Field(description="The pattern as one string (its identity)")
    items: list[str] = Field(description="Its parts: actions in order, or context values")
    support: int = Field(description="Episodes that show it")
    successes: int = Field(description="Of those, how many succeeded")
    success_rate: float = Field(description="successes / support, 0 to 1")
    mean_reward: float | None = Field(description="Mean reward of those episodes; null: none")
    lcb: float = Field(description=_LCB)
    evidence: list[str] = Field(description="The latest supporting episodes (at most 20)")
    updated_at: datetime = Field(description="Last change (UTC)")


class PatternPage(OffsetPage[PatternRead]):
    """A page of patterns, best first."""

    model_config = ConfigDict(json_schema_extra={"examples": [learning_examples.PATTERN_PAGE]})


class SkillChange(BaseModel):
    """A change a learning pass made to a skill."""

    skill_id: str = Field(description="The skill")
    name: str = Field(description="Its name")
    change: str = Field(
        description="`created`, `activated`, `refined`, `specialised`, `composed`, `merged`, "
        "`retired` or `superseded`"
    )
    reason: str = Field(description="Why, for people to read")


class ReflectResult(BaseModel):
    """What a learning pass did (200), or the job queued to do it (202)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [learning_examples.REFLECT_DONE, learning_examples.REFLECT_QUEUED]
        }
    )

    job_id: str | None = Field(default=None, description="The queued job; null when done now")
    status: Literal["done", "queued"] = Field(description="`done` (wait=true) or `queued`")
    learned: int = Field(default=0, description="Episodes learned from")
    reflections: int = Field(default=0, description="Reflections written")
    patterns: list[PatternRead] = Field(
        default_factory=list, description="Patterns found or updated"
    )
    skill_changes: list[SkillChange] = Field(
        default_factory=list, description="Skills created, changed or retired"
    )


class ReflectionRead(BaseModel):
    """A reflection on one episode."""

    id: str = Field(description="The reflection's memory id")
    episode_id: str | None = Field(description="The episode reflected on")
    task_type: str | None = Field(description="Its task type; null if none")
    outcome: str | None = Field(description="Its outcome")
    reward: float | None = Field(description="Its reward; null: none yet")
    content: str = Field(description="The reflection as text")
    successes: list[str] = Field(description="What went well")
    improvements: list[str] = Field(description="What to do better")
    insights: list[str] = Field(description="Lessons for next time")
    created_at: datetime = Field(description="When written (UTC)")


class ReflectionPage(CursorPage[ReflectionRead]):
    """A page of reflections, newest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [learning_examples.REFLECTION_PAGE]})


class SkillStep(BaseModel):
    """A step of a skill."""

    action: str = Field(description="The action to take")
    on_error: str | None = Field(
        default=None, description="The action that recovered when it failed; null: none known"
    )
    optional: bool = Field(
        default=False,
        description="Most successes did it, but those without it did as well: shown, not required",
    )


class SkillRead(BaseModel):
    """A learned skill: steps that worked for a task type."""

    model_config = ConfigDict(json_schema_extra={"examples": [learning_examples.SKILL_READ]})

    id: str = Field(description="The skill's id")
    name: str = Field(description="Its name")
    task_type: str | None = Field(description="The task type it is for; null: any")
    trigger: dict[str, Any] = Field(description="When recall offers it (task type, context)")
    steps: list[SkillStep] = Field(description="The steps, in order")
    status: SkillStatus = Field(
        description="`candidate` (not offered yet), `active` (recall offers it) or `retired`"
    )
    version: int = Field(description="1, then +1 per change of its steps")
    uses: int = Field(description="Episodes that applied it")
    successes: int = Field(description="Of those, how many succeeded")
    mean_reward: float | None = Field(description="Mean reward when applied; null: none")
    support: int = Field(description="Recent episodes that performed its steps in order")
    success_rate: float = Field(description="Success rate of those episodes, 0 to 1")
    lcb: float = Field(description=_LCB)
    evidence: list[str] = Field(description="Supporting episodes (the latest)")
    parent_ids: list[str] = Field(description="Skills it was derived from (merged, composed)")
    memory_id: str | None = Field(description="The memory recall offers it as; null: none")
    created_at: datetime = Field(description="When learned (UTC)")
    updated_at: datetime = Field(description="Last change (UTC)")
    retired_at: datetime | None = Field(description="When retired (UTC); null: not retired")


class SkillPage(OffsetPage[SkillRead]):
    """A page of skills."""

    model_config = ConfigDict(json_schema_extra={"examples": [learning_examples.SKILL_PAGE]})


class SkillEventRead(BaseModel):
    """A change of a skill."""

    model_config = ConfigDict(from_attributes=True)

    id: str = Field(description="The event's id")
    kind: str = Field(
        description="`created`, `activated`, `refined`, `specialised`, `composed`, `merged`, "
        "`retired` (it stopped working) or `superseded` (skills per context replace it)"
    )
    version: int = Field(description="The skill's version after the change")
    reason: str = Field(description="Why, for people to read")
    evidence: list[str] = Field(description="Episodes that led to it")
    details: dict[str, Any] = Field(description="What changed (steps, child or parent ids)")
    created_at: datetime = Field(description="When (UTC)")


class SkillHistory(CursorPage[SkillEventRead]):
    """A skill's changes, oldest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [learning_examples.SKILL_HISTORY]})

    skill_id: str = Field(description="The skill")
