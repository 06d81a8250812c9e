"""What the policy jobs store: a training's model and evaluation, a new evaluation, and
the canary's fate (promoted once its rewards are surely better than the others', rolled
back once they are surely worse)."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.learning import sequential
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


async def check_canary(
    session: AsyncSession, namespace: str, *, settings: Learning
) -> dict[str, Any]:
    """Promote the canary once its rewards are surely better than the others', roll it
    back once they are surely worse, or its gain surely too small to be worth it; else
    leave it deciding its share. "Surely": by a confidence sequence of the gain
    (app/learning/sequential.py), so that checking after every reward does not make a
    wrong verdict likelier than `canary_alpha`. The others are the recalls the other
    policies decided meanwhile or, when it decides them all, baseline_v0's estimate in
    the canary's evaluation."""
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
    alpha, tight_at = settings.canary_alpha, settings.canary_promote_after
    mean = statistics.fmean(mine)
    if len(others) >= settings.canary_min_rewards:
        share = canary.canary_share or 0.5
        ratio = max(1, round((1.0 - share) / share))
        verdict, gain = sequential.compare(
            mine, others, alpha=alpha, tight_at=tight_at, ratio=ratio
        )
        spread = statistics.pstdev([*mine, *others])
        figures = (
            f"mean reward {mean:.4f} over {len(mine)} recalls, "
            f"{statistics.fmean(others):.4f} over the {len(others)} the others decided "
            f"meanwhile; gain {gain.mean:+.4f} [{gain.low:+.4f}, {gain.high:+.4f}]"
        )
        low, most = gain.low, gain.high
    else:
        estimate = ((canary.evaluation or {}).get("estimates") or {}).get("baseline", {}).get("dr")
        if estimate is None:
            return {"policy_id": canary.id, "rewards": len(mine), "baseline": None}
        verdict, bound = sequential.against(
            mine, estimate["low"], estimate["high"], alpha=alpha, tight_at=tight_at
        )
        spread = statistics.pstdev(mine)
        figures = (
            f"mean reward {mean:.4f} [{bound.low:.4f}, {bound.high:.4f}] over {len(mine)} "
            f"recalls; baseline_v0's estimate in its evaluation: "
            f"[{estimate['low']:.4f}, {estimate['high']:.4f}]"
        )
        low, most = bound.low - estimate["high"], bound.high - estimate["low"]
    now = datetime.now(UTC)
    found = {"policy_id": canary.id, "rewards": len(mine), "mean": mean, "gain_low": low}
    if verdict == "worse":
        retire(canary, now, f"rolled back: {figures}")
        return found | {"rolled_back": True}
    if verdict == "better":
        for other_row in deciding:
            if other_row.status == "active":
                retire(other_row, now, f"replaced by {canary.id}")
        canary.status = "active"
        canary.status_reason = f"promoted: {figures}"
        canary.updated_at = now
        canary.canary_share = None
        return found | {"promoted": True}
    if len(mine) >= settings.canary_max_rewards:
        retire(canary, now, f"rolled back, no difference shown: {figures}")
        return found | {"rolled_back": True}
    margin = settings.canary_min_effect * spread
    if margin > 0 and most < margin:
        little = f"its gain is surely below {margin:.4f} ({settings.canary_min_effect:g} sd)"
        retire(canary, now, f"rolled back, {little}: {figures}")
        return found | {"rolled_back": True}
    return found


def retire(row: Policy, now: datetime, reason: str) -> None:
    """The policy stops deciding, with the reason."""
    row.status = "retired"
    row.status_reason = reason
    row.retired_at = now
    row.updated_at = now
