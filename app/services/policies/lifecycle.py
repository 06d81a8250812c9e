"""What the policy jobs store: a training's model and evaluation, a new evaluation, and
the canary's fate (promoted once its rewards hold up, rolled back when they fall below
the baseline's interval)."""

from __future__ import annotations

import math
import statistics
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.models import Policy
from app.repositories.policies import PolicyRepository


async def store_training(
    session: AsyncSession, namespace: str, policy_id: str, result: dict[str, Any]
) -> dict[str, Any]:
    """Store a training job's result ({"model", "training", "evaluation"} or {"error"})."""
    row = await PolicyRepository(session).get(namespace, policy_id, lock=True)
    if row is None or row.status != "training":
        return {"policy_id": policy_id, "stored": False}
    row.updated_at = datetime.now(UTC)
    if "error" in result:
        row.status = "failed"
        row.error = result["error"]
        row.evaluation = {"status": "failed", "reason": result["error"]}
        return {"policy_id": policy_id, "status": row.status, "error": row.error}
    row.status = "candidate"
    row.model = result["model"]
    row.training = (row.training or {}) | result["training"]
    row.evaluation = {"status": "done"} | result["evaluation"]
    return {"policy_id": policy_id, "status": row.status, "verdict": row.evaluation["verdict"]}


async def store_evaluation(
    session: AsyncSession, namespace: str, policy_id: str, result: dict[str, Any]
) -> dict[str, Any]:
    row = await PolicyRepository(session).get(namespace, policy_id, lock=True)
    if row is None:
        return {"policy_id": policy_id, "stored": False}
    row.updated_at = datetime.now(UTC)
    if "error" in result:
        row.evaluation = {"status": "failed", "reason": result["error"]}
    else:
        row.evaluation = {"status": "done"} | result
    return {"policy_id": policy_id, "verdict": row.evaluation.get("verdict")}


def _interval(rewards: list[float]) -> tuple[float, float, float]:
    mean = statistics.fmean(rewards)
    half = 1.96 * statistics.stdev(rewards) / math.sqrt(len(rewards)) if len(rewards) > 1 else 0.0
    return mean, mean - half, mean + half


async def check_canary(
    session: AsyncSession, namespace: str, *, settings: Learning
) -> dict[str, Any]:
    """Roll the canary back when the mean reward of its recalls falls below the baseline's
    interval: the recalls the others decided meanwhile, or (when it decides them all) the
    baseline's estimate in its evaluation. Promote it once enough recalls held up."""
    repo = PolicyRepository(session)
    deciding = await repo.deciding(namespace)
    canary = next((r for r in deciding if r.status == "canary"), None)
    if canary is None or canary.activated_at is None:
        return {}
    mine = await repo.outcomes(namespace, since=canary.activated_at, policy_id=canary.id)
    if len(mine) < settings.canary_min_rewards:
        return {"policy_id": canary.id, "rewards": len(mine)}
    others = await repo.outcomes(
        namespace, since=canary.activated_at, policy_id=canary.id, other=True
    )
    if len(others) >= settings.canary_min_rewards:
        _, low, high = _interval(others)
        source = f"the {len(others)} recalls the others decided meanwhile"
    else:
        estimate = ((canary.evaluation or {}).get("estimates") or {}).get("baseline", {}).get("dr")
        if estimate is None:
            return {"policy_id": canary.id, "rewards": len(mine), "baseline": None}
        low, high = estimate["low"], estimate["high"]
        source = "baseline_v0's estimate in its evaluation"
    mean = statistics.fmean(mine)
    now = datetime.now(UTC)
    figures = f"mean reward {mean:.4f} over {len(mine)} recalls; {source}: [{low:.4f}, {high:.4f}]"
    if mean < low:
        _set(canary, "retired", now, f"rolled back: {figures}")
        canary.retired_at = now
        return {"policy_id": canary.id, "rolled_back": True, "mean": mean, "low": low}
    if len(mine) >= settings.canary_promote_after:
        for other in deciding:
            if other.status == "active":
                _set(other, "retired", now, f"replaced by {canary.id}")
                other.retired_at = now
        _set(canary, "active", now, f"promoted: {figures}")
        canary.canary_share = None
        return {"policy_id": canary.id, "promoted": True, "mean": mean, "low": low}
    return {"policy_id": canary.id, "rewards": len(mine), "mean": mean, "low": low}


def _set(row: Policy, status: str, now: datetime, reason: str) -> None:
    row.status = status
    row.status_reason = reason
    row.updated_at = now
