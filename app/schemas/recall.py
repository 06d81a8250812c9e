"""Recall, reward and policy models."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, model_validator

from app.schemas import examples
from app.schemas.common import MAX_LATENCY_MS, MAX_TOKENS, Ident, Name
from app.schemas.episode import TaskContext
from app.schemas.memory import MemoryType, Scope, Sensitivity
from app.schemas.pages import CursorPage
from app.schemas.strict import Strict

Mode = Literal["constraint", "context", "background", "reverify_before_use"]


_MODE = (
    "How to use it: `constraint` (a rule to obey), `context` (use as background for this "
    "task), `background` (low priority), `reverify_before_use` (suspect: check it first)"
)


class RecallRequest(Strict):
    """A task to recall memories for, under a token budget."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "task": "Fix the login redirect loop in the web app",
                    "task_id": "fix-login-bug",
                    "agent_id": "coder-1",
                    "task_type": "code_fix",
                    "scope": {"level": "task", "task_id": "fix-login-bug"},
                    "token_budget": 800,
                    "k": 8,
                }
            ]
        }
    )

    task: Annotated[str, StringConstraints(min_length=1, max_length=4096)] = Field(
        description="What the agent is about to do, in words (1 to 4096 characters)"
    )
    task_id: Name | None = Field(
        default=None,
        description="The task's id: rewards and episodes of the task score this recall",
    )
    agent_id: Name | None = Field(default=None, description="The agent asking")
    task_type: Name | None = Field(
        default=None, description="Kind of task: skills learned for it are offered"
    )
    scope: Scope = Field(
        default_factory=dict,
        description="The request's scope ids (`session_id`, `task_id`, ...): memories "
        "scoped to other ids are left out, global ones always apply",
    )
    types: list[MemoryType] | None = Field(
        default=None, description="Only these memory types; null: all"
    )
    token_budget: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        description="Tokens the selected memories may take in all (1 to 1,000,000)"
    )
    k: Annotated[int, Field(ge=1, le=100)] = Field(
        default=10, description="At most this many memories selected (1 to 100, default 10)"
    )
    max_sensitivity: Sensitivity = Field(
        default=Sensitivity.HIGH,
        description="The most sensitive memories to consider (default high), capped at the key's",
    )
    context: TaskContext | None = Field(
        default=None,
        description="Where the task happens, as an episode's context gives it (no text): a "
        "skill learned for this context (`language`, `domain`, a tag, a feature or two of "
        "them) comes before the general one, and skills of other contexts are left out",
    )

    @model_validator(mode="after")
    def _context_agrees_with_scope(self) -> RecallRequest:
        given = self.scope.get("task_type", self.task_type)
        if self.task_type is not None and given != self.task_type:
            raise ValueError(f"scope.task_type is {given!r} but task_type is {self.task_type!r}")
        if self.context is not None:
            for key, value in self.context.fields().items():
                if key in self.scope and self.scope[key] != value:
                    raise ValueError(
                        f"scope.{key} is {self.scope[key]!r} but the context says {value!r}"
                    )
        return self

    def applies_to(self) -> dict[str, str]:
        """The scope memories must apply to: the request's (its task type among them, so
        that the skills learned for it apply), and its context's fields."""
        typed = {"task_type": self.task_type} if self.task_type else {}
        return {**typed, **self.scope, **(self.context.fields() if self.context else {})}


class RecalledMemory(BaseModel):
    """A memory the policy selected."""

    memory_id: str = Field(description="The memory's id")
    type: MemoryType = Field(description="Its type")
    content: str = Field(description="Its text")
    scope: dict[str, str] = Field(description="Its scope")
    mode: Mode = Field(description=_MODE)
    score: float = Field(description="The policy's score for it, higher first")
    reason: str = Field(description="Why it was selected, for people to read")
    probability: float = Field(description="P(this memory is selected) under the policy")
    token_estimate: int = Field(description="Tokens it takes from the budget")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="The memory's metadata (a skill's steps, for one)"
    )


class SuppressedMemory(BaseModel):
    """A candidate the policy left out."""

    memory_id: str = Field(description="The memory's id")
    reason: str = Field(
        description="Why it was left out (`over k`, `over the token budget`, its status, ...)"
    )
    probability: float = Field(description="P(it would have been selected) under the policy")


class PolicyRef(BaseModel):
    """The policy that made a decision."""

    id: str = Field(description="Policy id (see /v1/policies)")
    version: int = Field(description="Policy version")


class RetrievalInfo(BaseModel):
    """How the candidates were searched."""

    mode: Literal["lexical", "dense", "hybrid"] = Field(
        description="lexical (BM25), dense (vectors) or hybrid (both, fused by rank)"
    )
    missing_vectors: int = Field(
        default=0,
        description="Candidates without a vector yet (embedded in the background): the "
        "vector search could not find them, BM25 could",
    )


class RecallResponse(BaseModel):
    """The memories to use for the task, and how they were chosen."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.RECALL_RESPONSE]})

    recall_id: str = Field(description="This decision's id: send it with the reward")
    policy: PolicyRef = Field(description="The policy that chose")
    token_budget: int = Field(description="The budget asked for")
    tokens_used: int = Field(description="Tokens the selected memories take (at most the budget)")
    selected: list[RecalledMemory] = Field(description="The memories to use, in priority order")
    suppressed: list[SuppressedMemory] = Field(description="Candidates left out, and why")
    propensity: float = Field(description="P(this exact selection) under the policy")
    retrieval: RetrievalInfo = Field(description="How the candidates were searched")


class Signals(Strict):
    """What happened after a recall; the reward spec turns these into a scalar."""

    task_success: StrictBool | None = Field(
        default=None, description="Did the task succeed (+1 / -1)"
    )
    unsafe_action: StrictBool | None = Field(
        default=None, description="Did the agent do something unsafe (-2)"
    )
    stale_memory_error: StrictBool | None = Field(
        default=None, description="Did an out-of-date memory cause an error (-1)"
    )
    tokens_used: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = Field(
        default=None, description="Tokens the task used (-0.0001 each; 0 to 10^12)"
    )
    latency_ms: Annotated[float, Field(ge=0, le=MAX_LATENCY_MS)] | None = Field(
        default=None, description="Milliseconds the task took (-0.001 each; 0 to a year)"
    )
    user_correction: StrictBool | None = Field(
        default=None, description="Did a person correct the agent (kept with the reward)"
    )
    user_rating: Annotated[float, Field(ge=-1, le=1)] | None = Field(
        default=None, description="A person's rating, -1 to 1 (kept with the reward)"
    )


class RewardCreate(Strict):
    """A reward for a recall, an episode, or a task; give an id and a value or signals."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "recall_id": "rc_01HZX3",
                    "signals": {"task_success": True, "tokens_used": 4200},
                },
                {"task_id": "fix-login-bug", "value": 1.0},
            ]
        }
    )

    recall_id: Ident | None = Field(default=None, description="The recall to score")
    task_id: Name | None = Field(
        default=None, description="Score the task: its pending recalls and its episodes"
    )
    episode_id: Ident | None = Field(default=None, description="The episode to score")
    value: Annotated[float, Field(ge=-1_000_000, le=1_000_000)] | None = Field(
        default=None,
        description="The scalar reward (-10^6 to 10^6); replaces the signals' sum when given",
    )
    signals: Signals | None = Field(default=None, description="What happened, scored by the spec")

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

    reward_id: str = Field(description="The reward")
    episode_id: str = Field(description="The episode it scored")
    scalar: float = Field(description="The episode's reward")
    components: dict[str, float] = Field(description="The scalar's parts by name")
    spec_version: str = Field(description="The spec that computed it (`episode-v1`)")


class RewardRead(BaseModel):
    """A stored reward and what it scored."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.REWARD_READ]})

    id: str = Field(description="The reward's id")
    recall_id: str | None = Field(description="The recall it names; null if none")
    task_id: str | None = Field(description="The task it names; null if none")
    episode_id: str | None = Field(default=None, description="The episode it names; null if none")
    value: float | None = Field(description="The value sent; null if only signals were")
    signals: dict[str, Any] = Field(description="The signals sent")
    scalar: float = Field(description="The reward under the recall spec")
    components: dict[str, float] = Field(description="The scalar's parts by signal")
    spec_version: str = Field(description="The spec that computed it (`recall-v1`)")
    source: str | None = Field(default=None, description="null: posted; `inferred`: Engram's")
    completed_recalls: list[str] = Field(description="Recalls whose transitions it completed")
    episodes: list[EpisodeScore] = Field(
        default_factory=list, description="The episodes this reward scored (spec episode-v1)"
    )
    created_at: datetime = Field(description="When it was stored (UTC)")


class RewardPage(CursorPage[RewardRead]):
    """A page of rewards, newest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.REWARD_PAGE]})


class TransitionRead(BaseModel):
    """One logged recall decision (an RL transition)."""

    id: str = Field(description="The recall's id")
    task_id: str | None = Field(description="The recall's task; null if not given")
    agent_id: str | None = Field(description="The recall's agent; null if not given")
    task_type: str | None = Field(description="The recall's task type; null if not given")
    policy_id: str = Field(description="The logging policy")
    policy_version: int = Field(description="Its version")
    state: dict[str, Any] = Field(description="What the policy saw: request and candidates")
    action: dict[str, Any] = Field(description="What it chose: selection, modes, probabilities")
    propensity: float = Field(description="P(this exact selection) under the policy")
    status: Literal["pending", "completed"] = Field(
        description="`pending` until a reward completes it"
    )
    reward: float | None = Field(description="The reward's scalar; null while pending")
    reward_id: str | None = Field(description="The completing reward; null while pending")
    next_id: str | None = Field(
        description="The task's next recall made before this one was rewarded; null if none"
    )
    created_at: datetime = Field(description="When the recall was made (UTC)")
    completed_at: datetime | None = Field(description="When rewarded (UTC); null while pending")


class TransitionPage(CursorPage[TransitionRead]):
    """A page of transitions, oldest first."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.TRANSITION_PAGE]})
