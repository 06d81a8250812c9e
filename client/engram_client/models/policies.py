"""Recall policies: the rules of baseline_v0 and learned ones, their training, their
off-policy evaluation and their promotion through a canary."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from engram_client.models.base import Request, Response


class PolicyTrain(Request):
    """Train a policy on the logged transitions of a time window."""

    since: datetime | None = Field(default=None, description="Transitions at or after")
    until: datetime | None = Field(default=None, description="Transitions before")
    folds: int | None = Field(default=None, description="Cross-fitting blocks, 2 to 20 (10)")
    l2: float | None = Field(default=None, description="L2 regularisation of the reward model")
    clip: float | None = Field(default=None, description="Largest importance weight")


class PolicyEvaluate(Request):
    """Evaluate a policy off-policy on the logged transitions of a time window."""

    since: datetime | None = Field(default=None, description="Transitions at or after")
    until: datetime | None = Field(default=None, description="Transitions before")


class PolicyActivate(Request):
    """Put a policy to work on a share of the recalls."""

    canary_share: float | None = Field(default=None, description="Share of recalls it decides")
    force: bool | None = Field(default=None, description="Without a better verdict (audited)")
    reason: str | None = Field(default=None, description="Why (recorded with a forced one)")


class Estimate(Response):
    value: float = Field(description="Point estimate of the mean reward")
    low: float = Field(description="Lower end of the 95% bootstrap interval")
    high: float = Field(description="Upper end of the 95% bootstrap interval")


class Evaluation(Response):
    status: str = Field(description="pending, done or failed")
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
    epsilon: float | None = Field(default=None, description="Exploration assumed for both")
    estimates: dict[str, dict[str, Estimate]] = Field(
        default_factory=dict, description="policy and baseline: ips, snips and dr estimates"
    )
    reward_range: list[float] | None = Field(
        default=None, description="The range the reward spec allows: no estimate leaves it"
    )
    improvement: dict[str, Estimate] = Field(
        default_factory=dict, description="The policy minus baseline_v0, decision by decision"
    )
    estimator: str | None = Field(default=None, description="The improvement's, for the verdict")
    smallest_improvement: float | None = Field(
        default=None, description="The smallest improvement these logs could certify"
    )
    more_recalls_needed: int | None = Field(
        default=None, description="Rewarded recalls still needed to certify the estimated one"
    )
    verdict: str | None = Field(default=None, description="better, not_better or refused")
    reason: str | None = Field(default=None, description="Why, in words")


class PolicyRead(Response):
    id: str = Field(description="Policy id")
    version: int = Field(description="Policy version")
    kind: str = Field(description="rules (baseline_v0) or linear_bandit (learned)")
    status: str = Field(
        description="training, candidate, canary, active, standby, retired or failed"
    )
    status_reason: str | None = Field(default=None, description="Why its status is what it is")
    description: str = Field(description="How it chooses, for people to read")
    action_space: dict[str, Any] = Field(description="What it can decide per candidate")
    settings: dict[str, Any] = Field(description="Its parameters")
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
