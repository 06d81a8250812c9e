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
    context: dict[str, Any] | None = Field(
        default=None,
        description="domain, language, tags, features: the skill of this context comes first",
    )


class RecalledMemory(Response):
    memory_id: str = Field(description="Memory id")
    type: str = Field(description="Memory type")
    content: str = Field(description="What to remember")
    scope: dict[str, str] = Field(description="Where it applies")
    mode: str = Field(description="constraint, context, background or reverify_before_use")
    score: float = Field(description="Rank score")
    reason: str = Field(description="Why it was chosen")
    probability: float = Field(description="P(chosen) under the policy")
    token_estimate: int = Field(description="Tokens it takes")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Its metadata (a skill's steps, for one)"
    )


class SuppressedMemory(Response):
    memory_id: str = Field(description="Memory id")
    reason: str = Field(description="Why it was left out")
    probability: float = Field(description="P(chosen) under the policy")


class PolicyRef(Response):
    id: str = Field(description="Policy id")
    version: int = Field(description="Policy version")


class RetrievalInfo(Response):
    mode: str = Field(description="lexical, dense or hybrid: how candidates were searched")
    missing_vectors: int = Field(description="Candidates without a vector yet")


class RecallResponse(Response):
    recall_id: str = Field(description="Names the recall in a reward")
    policy: PolicyRef = Field(description="The policy that chose")
    token_budget: int = Field(description="The budget asked for")
    tokens_used: int = Field(description="Tokens the chosen memories take")
    selected: list[RecalledMemory] = Field(description="The chosen memories")
    suppressed: list[SuppressedMemory] = Field(description="Candidates left out")
    propensity: float = Field(description="P(this exact selection) under the policy")
    retrieval: RetrievalInfo = Field(description="How the candidates were searched")


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
    reward_id: str = Field(description="Reward id")
    episode_id: str = Field(description="The episode scored")
    scalar: float = Field(description="Its reward")
    components: dict[str, float] = Field(description="The reward's parts")
    spec_version: str = Field(description="The reward spec used")


class RewardRead(Response):
    id: str = Field(description="Reward id")
    recall_id: str | None = Field(description="The recall it scored")
    task_id: str | None = Field(description="The task it scored")
    episode_id: str | None = Field(default=None, description="The episode it scored")
    value: float | None = Field(description="The explicit score given")
    signals: dict[str, Any] = Field(description="The signals given")
    scalar: float = Field(description="The reward under the spec")
    components: dict[str, float] = Field(description="The reward's parts")
    spec_version: str = Field(description="The reward spec used")
    completed_recalls: list[str] = Field(description="Recalls whose transitions it completed")
    episodes: list[EpisodeScore] = Field(default_factory=list, description="The episodes it scored")
    created_at: datetime = Field(description="When it was stored")
