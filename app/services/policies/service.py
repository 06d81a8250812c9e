"""The recall policies of a namespace: baseline_v0 and the learned ones, trained and
judged by jobs, activated as a canary only on a `better` verdict (or forced, audited)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.config import Recall as RecallSettings
from app.core.errors import Conflict, InvalidInput, NotFound
from app.core.ids import uuid7
from app.learning import bandit, policy
from app.models import Policy
from app.repositories.policies import PolicyRepository
from app.schemas.policy import (
    Evaluation,
    PolicyActivate,
    PolicyEvaluate,
    PolicyRead,
    PolicyTrain,
)
from app.services.access import audit
from app.services.access.auth import Principal
from app.services.operations.jobs import POLICY_EVALUATE, POLICY_TRAIN, enqueue
from app.services.policies.lifecycle import retire

LEARNED_DESCRIPTION = (bandit.__doc__ or "").strip()


def _action_space() -> dict[str, Any]:
    return {
        "per_candidate": [*policy.MODES, "suppressed"],
        "selection": "a subset of the candidates within token_budget and k",
        "suppression_reasons": sorted(
            [*policy.SUPPRESSED_STATUSES.values(), policy.OVER_K, policy.OVER_BUDGET]
            + [policy.NO_GAIN, policy.UNREACHED, policy.EXPLORED_OUT]
            + ["<sensitivity> above the request's limit"]
        ),
    }


def _exploration(settings: RecallSettings) -> dict[str, Any]:
    return {
        "exploration": "epsilon_move",
        "epsilon": settings.epsilon,
        "seeded": settings.seed is not None,
        "critical_threshold": policy.CRITICAL,
        "max_candidates": settings.max_candidates,
        "max_constraints": settings.max_constraints,
    }


def baseline(settings: RecallSettings, *, standby: bool = False) -> PolicyRead:
    return PolicyRead(
        id=policy.POLICY_ID,
        version=policy.POLICY_VERSION,
        kind="rules",
        status="standby" if standby else "active",
        description=(policy.__doc__ or "").strip(),
        action_space=_action_space(),
        settings=_exploration(settings),
    )


def read(row: Policy, settings: RecallSettings) -> PolicyRead:
    return PolicyRead(
        id=row.id,
        version=row.version,
        kind=row.kind,
        status=row.status,
        status_reason=row.status_reason,
        description=LEARNED_DESCRIPTION,
        action_space=_action_space(),
        settings=_exploration(settings) | {"hyperparameters": row.hyperparameters},
        parent_id=row.parent_id,
        created_at=row.created_at,
        activated_at=row.activated_at,
        retired_at=row.retired_at,
        canary_share=row.canary_share,
        training=row.training,
        evaluation=Evaluation.model_validate(row.evaluation) if row.evaluation else None,
        error=row.error,
    )


class PolicyService:
    def __init__(
        self, session: AsyncSession, *, recall: RecallSettings, learning: Learning
    ) -> None:
        self.session = session
        self.repo = PolicyRepository(session)
        self.recall = recall
        self.learning = learning

    async def list(self, namespace: str) -> list[PolicyRead]:
        """baseline_v0 first, then the learned policies, oldest first."""
        rows = await self.repo.in_namespace(namespace)
        standby = any(r.status == "active" for r in rows)
        return [baseline(self.recall, standby=standby), *(read(r, self.recall) for r in rows)]

    async def get(self, namespace: str, policy_id: str) -> PolicyRead:
        if policy_id == policy.POLICY_ID:
            return (await self.list(namespace))[0]
        return read(await self._row(namespace, policy_id), self.recall)

    async def evaluation(self, namespace: str, policy_id: str) -> Evaluation:
        found = await self.get(namespace, policy_id)
        if found.evaluation is None:
            raise NotFound(f"policy {policy_id!r} has no evaluation (baseline_v0 is the reference)")
        return found.evaluation

    async def _row(self, namespace: str, policy_id: str, *, lock: bool = False) -> Policy:
        row = await self.repo.get(namespace, policy_id, lock=lock)
        if row is None:
            raise NotFound(f"policy {policy_id!r} not found", id=policy_id)
        return row

    async def train(self, namespace: str, body: PolicyTrain) -> PolicyRead:
        """A policy in training: the job fits and judges it."""
        now = datetime.now(UTC)
        deciding = await self.repo.deciding(namespace)
        active = next((r.id for r in deciding if r.status == "active"), policy.POLICY_ID)
        hyper = {"folds": body.folds, "l2": body.l2, "clip": body.clip}
        row = Policy(
            namespace=namespace,
            id=f"lp_{uuid7()}",
            kind=bandit.KIND,
            version=1,
            status="training",
            parent_id=active,
            created_at=now,
            updated_at=now,
            hyperparameters=hyper,
            training={"since": _iso(body.since), "until": _iso(body.until)},
            evaluation={"status": "pending"},
        )
        self.repo.add(row)
        await self.session.flush()
        payload = {"policy_id": row.id, "since": _iso(body.since), "until": _iso(body.until)}
        await enqueue(
            self.session,
            namespace,
            POLICY_TRAIN,
            key=row.id,
            payload=payload | hyper | {"epsilon": self.recall.epsilon},
            settings=self.learning,
        )
        return read(row, self.recall)

    async def evaluate(self, namespace: str, policy_id: str, body: PolicyEvaluate) -> PolicyRead:
        row = await self._row(namespace, policy_id, lock=True)
        if row.model is None:
            raise Conflict(f"policy {policy_id!r} is {row.status}: it has no model to evaluate")
        row.evaluation = {"status": "pending"}
        row.updated_at = datetime.now(UTC)
        payload = {"policy_id": row.id, "since": _iso(body.since), "until": _iso(body.until)}
        await enqueue(
            self.session,
            namespace,
            POLICY_EVALUATE,
            key=row.id,
            payload=payload | {"epsilon": self.recall.epsilon},
            settings=self.learning,
        )
        return read(row, self.recall)

    async def activate(
        self, namespace: str, policy_id: str, body: PolicyActivate, *, actor: Principal | None
    ) -> PolicyRead:
        """Make it the canary: on a `better` verdict; on trial when its evaluation could
        not certify it but does not rule out a gain (the canary's test decides then); or
        forced with a reason."""
        row = await self._row(namespace, policy_id, lock=True)
        if row.status not in ("candidate", "retired"):
            raise Conflict(f"policy {policy_id!r} is {row.status}: only a candidate or a retired "
                           "policy can be activated")  # fmt: skip
        evaluation = row.evaluation or {}
        verdict = evaluation.get("verdict")
        if body.force and not body.reason:
            raise InvalidInput("reason: a forced activation needs one", field="reason")
        how = "better" if verdict == "better" else "trial" if may_try(evaluation) else None
        if how is None and not body.force:
            why = evaluation.get("reason") or "it has not been evaluated"
            raise Conflict(
                f"policy {policy_id!r} is not activated: its evaluation's verdict is "
                f"{verdict or 'none'} ({why})",
                id=policy_id,
            )
        how = how or "forced"
        now = datetime.now(UTC)
        for other in await self.repo.deciding(namespace):
            if other.status == "canary" and other.id != row.id:
                retire(other, now, f"replaced as the canary by {row.id}")
        row.status = "canary"
        row.canary_share = body.canary_share
        row.activated_at = now
        row.retired_at = None
        row.updated_at = now
        row.status_reason = {
            "better": f"evaluated better: {evaluation.get('reason')}",
            "trial": f"on trial (the logs could not certify it): {evaluation.get('reason')}",
            "forced": f"forced: {body.reason}",
        }[how]
        await audit.record(
            self.session,
            action="policy.activate",
            namespace=namespace,
            actor=actor,
            target=policy_id,
            canary_share=body.canary_share,
            forced=how == "forced",
            trial=how == "trial",
            verdict=verdict,
            reason=body.reason,
        )
        return read(row, self.recall)

    async def retire(
        self, namespace: str, policy_id: str, *, actor: Principal | None
    ) -> PolicyRead:
        """Stop it deciding: the active policy (or baseline_v0) decides its share again."""
        if policy_id == policy.POLICY_ID:
            raise Conflict("baseline_v0 is the fallback of every namespace: it cannot be retired")
        row = await self._row(namespace, policy_id, lock=True)
        if row.status in ("training", "failed", "retired"):
            raise Conflict(f"policy {policy_id!r} is {row.status}: nothing to retire")
        retire(row, datetime.now(UTC), "retired by request")
        await audit.record(
            self.session, action="policy.retire", namespace=namespace, actor=actor, target=policy_id
        )
        return read(row, self.recall)


def may_try(evaluation: dict[str, Any]) -> bool:
    """Whether an evaluation that does not certify a policy leaves a gain possible: its
    verdict is `not_better` (the decisions were supported) and the improvement's interval,
    by the verdict's estimator, reaches above 0. Such a policy may be tried as a canary,
    whose own test promotes it or rolls it back."""
    found = (evaluation.get("improvement") or {}).get(evaluation.get("estimator") or "")
    if evaluation.get("verdict") != "not_better" or not found:
        return False
    return bool(found["high"] > 0)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
