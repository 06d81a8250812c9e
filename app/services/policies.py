"""The recall policies this service runs, described for clients and data scientists."""

from __future__ import annotations

from app.core.config import Recall as RecallSettings
from app.core.errors import NotFound
from app.learning import policy
from app.schemas.recall import PolicyRead


def describe(settings: RecallSettings) -> list[PolicyRead]:
    return [
        PolicyRead(
            id=policy.POLICY_ID,
            version=policy.POLICY_VERSION,
            description=(policy.__doc__ or "").strip(),
            action_space={
                "per_candidate": [*policy.MODES, "suppressed"],
                "selection": "a subset of the candidates within token_budget and k",
                "suppression_reasons": sorted(policy.SUPPRESSED_STATUSES.values())
                + ["over k", "over the token budget", "<sensitivity> above the request's limit"],
            },
            settings={
                "exploration": "epsilon_swap",
                "epsilon": settings.epsilon,
                "seeded": settings.seed is not None,
                "critical_threshold": policy.CRITICAL,
                "max_candidates": settings.max_candidates,
                "max_constraints": settings.max_constraints,
            },
        )
    ]


def get(settings: RecallSettings, policy_id: str) -> PolicyRead:
    for item in describe(settings):
        if item.id == policy_id:
            return item
    raise NotFound(f"policy {policy_id!r} not found")
