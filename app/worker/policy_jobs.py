"""The policy jobs: training and evaluating a learned recall policy (the reading and the
computing prepared before the job's transaction, which only stores the result), and the
canary's check after its recalls are rewarded."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Transactions
from app.learning.bandit import RewardModel
from app.models import Job
from app.repositories.policies import PolicyRepository
from app.schemas.policy import PolicyTrain
from app.services.policies import lifecycle as policy_lifecycle
from app.services.policies import training as policy_training
from app.worker.context import JobContext

log = logging.getLogger("engram.worker")


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


async def _models(transactions: Transactions, namespace: str) -> dict[str, RewardModel]:
    """The namespace's learned policies' models: the evaluator rebuilds their decisions."""
    async with transactions.read() as session:
        rows = await PolicyRepository(session).in_namespace(namespace)
    return {r.id: RewardModel.from_json(r.model) for r in rows if r.model is not None}


Run = Callable[[dict[str, Any], dict[str, RewardModel]], Awaitable[dict[str, Any]]]


async def _prepare(
    transactions: Transactions, namespace: str, payloads: Mapping[str, dict[str, Any]], run: Run
) -> dict[str, Any]:
    """Each job's result, or its error: a failure is stored as the policy's rather than
    retried (a retry would read and fit it all again, and the policy would stay pending)."""
    models = await _models(transactions, namespace)
    found: dict[str, Any] = {}
    for job_id, p in payloads.items():
        try:
            found[job_id] = await run(p, models)
        except policy_training.NotEnoughData as exc:
            found[job_id] = {"error": str(exc)}
        except Exception as exc:
            log.exception("policy job failed", extra={"job_id": job_id})
            found[job_id] = {"error": f"{type(exc).__name__}: {exc}"}
    return found


async def prepare_training(
    transactions: Transactions, namespace: str, payloads: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    async def run(p: dict[str, Any], models: dict[str, RewardModel]) -> dict[str, Any]:
        return await policy_training.train(
            transactions,
            namespace,
            since=_when(p["since"]),
            until=_when(p["until"]),
            # A job queued with `holdout` (before cross-fitting) takes today's default.
            folds=p.get("folds", PolicyTrain.model_fields["folds"].default),
            l2=p["l2"],
            clip=p["clip"],
            epsilon=p["epsilon"],
            logging_models=models,
        )

    return await _prepare(transactions, namespace, payloads, run)


async def prepare_evaluation(
    transactions: Transactions, namespace: str, payloads: Mapping[str, dict[str, Any]]
) -> dict[str, Any]:
    async def run(p: dict[str, Any], models: dict[str, RewardModel]) -> dict[str, Any]:
        if p["policy_id"] not in models:
            return {"error": "the policy has no model"}
        return await policy_training.evaluate(
            transactions,
            namespace,
            since=_when(p["since"]),
            until=_when(p["until"]),
            model=models[p["policy_id"]],
            epsilon=p["epsilon"],
            logging_models=models,
        )

    return await _prepare(transactions, namespace, payloads, run)


Store = Callable[[AsyncSession, str, str, dict[str, Any]], Awaitable[dict[str, Any]]]


def _storing(store: Store) -> Callable[..., Awaitable[dict[str, Any]]]:
    async def handler(
        session: AsyncSession, namespace: str, jobs: Sequence[Job], context: JobContext
    ) -> dict[str, Any]:
        results = [
            await store(session, namespace, j.payload["policy_id"], context.prepared[j.id])
            for j in jobs
        ]
        return {"policies": results}

    return handler


store_training = _storing(policy_lifecycle.store_training)
store_evaluation = _storing(policy_lifecycle.store_evaluation)


async def check_canary(
    session: AsyncSession, namespace: str, jobs: Sequence[Job], context: JobContext
) -> dict[str, Any]:
    return await policy_lifecycle.check_canary(session, namespace, settings=context.settings)
