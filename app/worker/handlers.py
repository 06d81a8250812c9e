"""Job handlers ("<domain>.<event>"): each takes the jobs of one kind and namespace and
runs in the transaction that marks them done."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.db.engine import Transactions
from app.models import Job
from app.services.learning.passes import run_pass
from app.services.operations.jobs import (
    CREDIT,
    EVOLVE,
    LEARN,
    PASS,
    POLICY_CHECK,
    POLICY_EVALUATE,
    POLICY_TRAIN,
    enqueue,
)
from app.worker import policy_jobs
from app.worker.context import JobContext

Handler = Callable[[AsyncSession, str, Sequence[Job], JobContext], Awaitable[dict[str, Any]]]


async def _evolve_later(
    session: AsyncSession, namespace: str, task_types: list[str], settings: Learning
) -> None:
    if task_types:
        await enqueue(
            session,
            namespace,
            EVOLVE,
            key="evolve",
            payload={"task_types": task_types},
            settings=settings,
        )


async def learn_episodes(
    session: AsyncSession, namespace: str, jobs: Sequence[Job], context: JobContext
) -> dict[str, Any]:
    from app.services.learning.episodes import LearningService

    ids = [j.payload["episode_id"] for j in jobs]
    settings = context.settings
    learning = LearningService(session, settings=settings, references=context.references)
    result = await learning.learn(namespace, ids)
    await _evolve_later(session, namespace, result["task_types"], settings)
    return {"learned": result["learned"]}


async def credit_rewards(
    session: AsyncSession, namespace: str, jobs: Sequence[Job], context: JobContext
) -> dict[str, Any]:
    from app.services.learning.credit import CreditService

    ids = sorted({e for j in jobs for e in j.payload.get("episode_ids", [])})
    result = await CreditService(session).credit(namespace, ids)
    await _evolve_later(session, namespace, result["task_types"], context.settings)
    return {"credited": result["credited"]}


async def evolve_skills(
    session: AsyncSession, namespace: str, jobs: Sequence[Job], context: JobContext
) -> dict[str, Any]:
    from app.services.learning.evolution import EvolutionPass

    task_types = sorted({t for j in jobs for t in j.payload.get("task_types", [])})
    changes = await EvolutionPass(session, settings=context.settings).evolve(namespace, task_types)
    return {"changes": changes}


async def reflect_pass(
    session: AsyncSession, namespace: str, jobs: Sequence[Job], context: JobContext
) -> dict[str, Any]:
    settings = context.settings
    result: dict[str, Any] = {}
    for job in jobs:
        found, remaining = await run_pass(
            session, namespace, job.payload, settings=settings, references=context.references
        )
        result = found.model_dump(mode="json", exclude={"patterns"})
        if remaining:
            # The rest in another job: each transaction stays short.
            await enqueue(
                session, namespace, job.kind, key=job.key, payload=job.payload, settings=settings
            )
            result["continued"] = True
    return result


Preparer = Callable[[Transactions, str, Mapping[str, dict[str, Any]]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Registered:
    """How the worker runs a kind of job."""

    handler: Handler
    # Jobs claimed together run by order, lowest first: learning before evolving, so that
    # evolution sees the episodes just learned.
    order: int = 9
    # Long reads and computing, before the job's transaction (given the jobs' payloads,
    # returning each job's result by id), which then only stores it.
    prepare: Preparer | None = None


# Every kind of job, the one registry: the runner, the metrics, the API's filter
# (schemas.learning.JobKind, held equal by a test) and the CLI read it.
REGISTRY: dict[str, Registered] = {
    LEARN: Registered(learn_episodes, order=0),
    CREDIT: Registered(credit_rewards, order=1),
    PASS: Registered(reflect_pass, order=2),
    EVOLVE: Registered(evolve_skills, order=3),
    POLICY_TRAIN: Registered(policy_jobs.store_training, prepare=policy_jobs.prepare_training),
    POLICY_EVALUATE: Registered(
        policy_jobs.store_evaluation, prepare=policy_jobs.prepare_evaluation
    ),
    POLICY_CHECK: Registered(policy_jobs.check_canary),
}
