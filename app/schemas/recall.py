"""Recall, reward and policy models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from app.schemas.common import MAX_LATENCY_MS, MAX_TOKENS, Ident, Name
from app.schemas.memory import MemoryType, Scope, Sensitivity

Mode = Literal["constraint", "context", "background", "reverify_before_use"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class RecallRequest(Strict):
    task: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    task_id: Name | None = None
    agent_id: Name | None = None
    task_type: Name | None = None
    scope: Scope = Field(default_factory=dict)
    types: list[MemoryType] | None = None
    token_budget: Annotated[int, Field(ge=1, le=1_000_000)]
    k: Annotated[int, Field(ge=1, le=100)] = 10
    max_sensitivity: Sensitivity = Sensitivity.HIGH


class RecalledMemory(BaseModel):
    memory_id: str
    type: MemoryType
    content: str
    scope: dict[str, str]
    mode: Mode
    score: float
    reason: str
    probability: float = Field(description="P(this memory is selected) under the policy")
    token_estimate: int
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="The memory's metadata (a skill's steps, for one)"
    )


class SuppressedMemory(BaseModel):
    memory_id: str
    reason: str
    probability: float


class PolicyRef(BaseModel):
    id: str
    version: int


class RecallResponse(BaseModel):
    recall_id: str
    policy: PolicyRef
    token_budget: int
    tokens_used: int
    selected: list[RecalledMemory]
    suppressed: list[SuppressedMemory]
    propensity: float = Field(description="P(this exact selection) under the policy")


class Signals(Strict):
    task_success: bool | None = None
    unsafe_action: bool | None = None
    stale_memory_error: bool | None = None
    tokens_used: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = None
    latency_ms: Annotated[float, Field(ge=0, le=MAX_LATENCY_MS)] | None = None
    user_correction: bool | None = None
    user_rating: Annotated[float, Field(ge=-1, le=1)] | None = None


class RewardCreate(Strict):
    recall_id: Ident | None = None
    task_id: Name | None = None
    episode_id: Ident | None = None
    value: Annotated[float, Field(ge=-1_000_000, le=1_000_000)] | None = None
    signals: Signals | None = None

    @model_validator(mode="after")
    def _shape(self) -> RewardCreate:
        if self.recall_id is None and self.task_id is None and self.episode_id is None:
            raise ValueError("give `recall_id`, `task_id` or `episode_id`")
        if self.value is None and (
            self.signals is None or not self.signals.model_dump(exclude_none=True)
        ):
            raise ValueError("give a `value`, `signals`, or both")
        return self


class EpisodeScore(BaseModel):
    """One episode's reward under the episode spec."""

    reward_id: str
    episode_id: str
    scalar: float
    components: dict[str, float]
    spec_version: str


class RewardRead(BaseModel):
    id: str
    recall_id: str | None
    task_id: str | None
    episode_id: str | None = None
    value: float | None
    signals: dict[str, Any]
    scalar: float
    components: dict[str, float]
    spec_version: str
    completed_recalls: list[str]
    episodes: list[EpisodeScore] = Field(
        default_factory=list, description="The episodes this reward scored (spec episode-v1)"
    )
    created_at: datetime


class RewardPage(BaseModel):
    items: list[RewardRead]
    next_cursor: str | None


class PolicyRead(BaseModel):
    id: str
    version: int
    description: str
    action_space: dict[str, Any]
    settings: dict[str, Any]


class TransitionRead(BaseModel):
    id: str
    task_id: str | None
    agent_id: str | None
    task_type: str | None
    policy_id: str
    policy_version: int
    state: dict[str, Any]
    action: dict[str, Any]
    propensity: float
    status: Literal["pending", "completed"]
    reward: float | None
    reward_id: str | None
    next_id: str | None
    created_at: datetime
    completed_at: datetime | None


class TransitionPage(BaseModel):
    items: list[TransitionRead]
    next_cursor: str | None
