"""Recall policies: baseline_v0's rules and learned ones, their training, their
off-policy evaluation and their promotion through a canary."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from app.schemas import examples
from app.schemas.common import Timestamp
from app.schemas.strict import Strict

Status = Literal["training", "candidate", "canary", "active", "standby", "retired", "failed"]


class Window(Strict):
    since: Timestamp | None = Field(
        default=None, description="Recalls logged at or after this (ISO 8601 with a timezone)"
    )
    until: Timestamp | None = Field(
        default=None, description="Recalls logged before this (ISO 8601 with a timezone)"
    )


class PolicyTrain(Window):
    """Train a policy on the rewarded recalls of a time window (default: all of them)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"since": "2026-11-01T00:00:00Z", "folds": 10}]}
    )

    folds: int = Field(
        default=10,
        ge=2,
        le=20,
        description="Cross-fitting: the window's latest decisions cut into this many blocks, "
        "each judged by the model fitted on every other decision",
    )
    l2: float = Field(default=1.0, gt=0, le=1e6, description="Ridge penalty of the reward model")
    clip: float = Field(
        default=20.0, ge=1, le=1e6, description="Largest inverse-propensity weight in training"
    )


class PolicyEvaluate(Window):
    """Judge a policy again on another window's rewarded recalls (a new workload's)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"since": "2026-12-01T00:00:00Z"}]})


class PolicyActivate(Strict):
    """Put a policy to work on a share of the recalls, as a canary."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"canary_share": 0.5}]})

    # Half: a policy activated on a `better` verdict proves itself online within about a
    # hundred recalls (bench.policy --share), and is rolled back by the canary's test
    # if it does worse.
    canary_share: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="The share of recalls it decides (the rest: the active one)",
    )
    force: StrictBool = Field(
        default=False, description="Activate without a `better` verdict (audited; needs a reason)"
    )
    reason: str | None = Field(
        default=None,
        max_length=1000,
        description="Why: required with force, recorded in the audit log",
    )


class Estimate(BaseModel):
    value: float = Field(description="Point estimate of the policy's mean reward")
    low: float = Field(description="Lower end of the 95% bootstrap interval")
    high: float = Field(description="Upper end of the 95% bootstrap interval")


class Evaluation(BaseModel):
    """An off-policy evaluation on logged decisions."""

    status: Literal["pending", "done", "failed"] = Field(description="pending, done or failed")
    since: datetime | None = Field(default=None, description="The first decision evaluated")
    until: datetime | None = Field(default=None, description="The last decision evaluated")
    n_decisions: int = Field(default=0, description="Logged decisions in the window")
    n_supported: int = Field(default=0, description="Those the estimates use (with support)")
    n_left_out: int = Field(
        default=0,
        description="A learned policy's decisions whose logs cannot judge this one, left out",
    )
    supported_share: float | None = Field(
        default=None, description="Share of the decisions whose logs can express the policy"
    )
    ess: float | None = Field(default=None, description="Effective sample size of the weights")
    epsilon: float | None = Field(default=None, description="Exploration assumed for both policies")
    estimates: dict[str, dict[str, Estimate]] = Field(
        default_factory=dict,
        description="`policy` and `baseline` (baseline_v0): `ips`, `snips` and `dr` estimates",
    )
    reward_range: list[float] | None = Field(
        default=None, description="The logged rewards' lowest and highest: no estimate leaves it"
    )
    improvement: dict[str, Estimate] = Field(
        default_factory=dict,
        description="The policy's value minus baseline_v0's, decision by decision: `ips`, `dr`",
    )
    estimator: str | None = Field(
        default=None, description="The improvement's estimator the verdict used (the narrower)"
    )
    smallest_improvement: float | None = Field(
        default=None, description="The smallest improvement these logs could certify"
    )
    more_recalls_needed: int | None = Field(
        default=None,
        description="Rewarded recalls like these still needed to certify the estimated "
        "improvement (0: certified; null: the estimate is no improvement)",
    )
    verdict: Literal["better", "not_better", "refused"] | None = Field(
        default=None,
        description="better (the improvement's lower bound is above 0), "
        "not_better, or refused (no verdict: see reason)",
    )
    reason: str | None = Field(default=None, description="Why, in words")


class PolicyRead(BaseModel):
    """A recall policy."""

    model_config = ConfigDict(json_schema_extra={"examples": [examples.POLICY_READ]})

    id: str = Field(description="Policy id")
    version: int = Field(description="Policy version")
    kind: str = Field(description="`rules` (baseline_v0) or `linear_bandit` (learned)")
    status: Status = Field(
        description="training, candidate, canary, active, standby (baseline_v0 while a learned "
        "policy is active), retired or failed"
    )
    status_reason: str | None = Field(default=None, description="Why its status is what it is")
    description: str = Field(description="How it chooses, for people to read")
    action_space: dict[str, Any] = Field(description="What it can decide per candidate")
    settings: dict[str, Any] = Field(description="Its configured parameters")
    parent_id: str | None = Field(
        default=None, description="The policy that decided when it was trained (lineage)"
    )
    created_at: datetime | None = Field(default=None, description="When it was trained")
    activated_at: datetime | None = Field(default=None, description="When it became a canary")
    retired_at: datetime | None = Field(default=None, description="When it stopped deciding")
    canary_share: float | None = Field(default=None, description="Share of recalls it decides")
    training: dict[str, Any] | None = Field(
        default=None, description="Window, feature schema, sizes, hyper-parameters and metrics"
    )
    evaluation: Evaluation | None = Field(default=None, description="Its latest evaluation")
    error: str | None = Field(default=None, description="Why training or evaluation failed")
