"""Recall and the rewards that score it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from engram_client.models.base import Request, Response


class RecallRequest(Request):
    """What should I remember for this task?"""

    task: str = Field(description="The task, in words")
    token_budget: int = Field(description="Most tokens the chosen memories may take")
    task_id: str | None = Field(default=None, description="The task's id (rewards name it)")
    agent_id: str | None = Field(default=None, description="The agent asking")
    task_type: str | None = Field(default=None, description="The kind of task")
    scope: dict[str, str] | None = Field(default=None, description="Only memories of this scope")
    types: list[str] | None = Field(default=None, description="Only these memory types")
    k: int | None = Field(default=None, description="Most memories chosen (default 10)")
    max_sensitivity: str | None = Field(default=None, description="Most sensitive chosen")


class RecalledMemory(Response):
    memory_id: str
    type: str
    content: str
    scope: dict[str, str]
    mode: str
    score: float
    reason: str
    probability: float
    token_estimate: int
    metadata: dict[str, Any] = Field(default_factory=dict)


class SuppressedMemory(Response):
    memory_id: str
    reason: str
    probability: float


class PolicyRef(Response):
    id: str
    version: int


class RecallResponse(Response):
    recall_id: str
    policy: PolicyRef
    token_budget: int
    tokens_used: int
    selected: list[RecalledMemory]
    suppressed: list[SuppressedMemory]
    propensity: float


class Signals(Request):
    """What happened, as signals the reward spec scores."""

    task_success: bool | None = Field(default=None, description="Did the task succeed")
    unsafe_action: bool | None = Field(default=None, description="Did it do something unsafe")
    stale_memory_error: bool | None = Field(default=None, description="Misled by a stale memory")
    tokens_used: int | None = Field(default=None, description="Tokens the task used")
    latency_ms: float | None = Field(default=None, description="How long the task took")
    user_correction: bool | None = Field(default=None, description="Did the user correct it")
    user_rating: float | None = Field(default=None, description="The user's rating, -1 to 1")


class RewardCreate(Request):
    """A score for a recall, an episode or a task: a value, signals, or both."""

    recall_id: str | None = Field(default=None, description="The recall it scores")
    task_id: str | None = Field(default=None, description="The task it scores")
    episode_id: str | None = Field(default=None, description="The episode it scores")
    value: float | None = Field(default=None, description="Explicit score on your own scale")
    signals: Signals | None = Field(default=None, description="What happened")


class EpisodeScore(Response):
    reward_id: str
    episode_id: str
    scalar: float
    components: dict[str, float]
    spec_version: str


class RewardRead(Response):
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
    episodes: list[EpisodeScore] = Field(default_factory=list)
    created_at: datetime
