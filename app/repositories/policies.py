"""SQL for learned policies, and the logged decisions they are trained and judged on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Policy, Reward, Transition
from app.repositories import keyset

DECIDING = ("canary", "active")
PAGE = 2_000
LOGGED = (
    Transition.id,
    Transition.created_at,
    Transition.policy_id,
    Transition.policy_version,
    Transition.propensity,
    Transition.reward,
    Transition.observation_vector,
    Transition.dataset_lists,
    Transition.task_type,
)


class PolicyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def add(self, row: Policy) -> None:
        self.session.add(row)

    async def get(self, namespace: str, policy_id: str, *, lock: bool = False) -> Policy | None:
        query = select(Policy).where(Policy.namespace == namespace, Policy.id == policy_id)
        if lock:
            query = query.with_for_update()
        return (await self.session.scalars(query)).first()

    async def in_namespace(self, namespace: str) -> list[Policy]:
        query = select(Policy).where(Policy.namespace == namespace).order_by(Policy.created_at)
        return list(await self.session.scalars(query))

    async def deciding(self, namespace: str) -> list[Policy]:
        """The canary and the active policy, if any (at most one of each)."""
        query = select(Policy).where(Policy.namespace == namespace, Policy.status.in_(DECIDING))
        return list(await self.session.scalars(query))

    async def logged(
        self,
        namespace: str,
        *,
        since: datetime | None,
        until: datetime | None,
        with_action: bool,
        after: keyset.Key | None = None,
        page: int = PAGE,
    ) -> AsyncIterator[Sequence[Row[Any]]]:
        """The window's completed transitions after `after`, oldest first, a page at a
        time (with their `action` when the evaluator needs it)."""
        columns = (*LOGGED, Transition.action) if with_action else LOGGED
        while True:
            query = select(*columns).where(*_window(namespace, since, until))
            if after is not None:
                query = query.where(keyset.after(Transition.created_at, Transition.id, after))
            rows = (await self.session.execute(
                query.order_by(Transition.created_at, Transition.id).limit(page)
            )).all()  # fmt: skip
            if not rows:
                return
            yield rows
            after = (rows[-1].created_at, rows[-1].id)

    async def reward_parts(
        self, namespace: str, *, since: datetime | None, until: datetime | None
    ) -> list[tuple[float | None, dict[str, float]]]:
        """The explicit value (None: computed by the spec) and components of the reward of
        each of the window's completed transitions."""
        query = (
            select(Reward.value, Reward.components)
            .join(
                Transition,
                (Transition.namespace == Reward.namespace) & (Transition.reward_id == Reward.id),
            )
            .where(*_window(namespace, since, until))
        )
        return [(r.value, r.components) for r in (await self.session.execute(query)).all()]

    async def outcomes(
        self, namespace: str, *, since: datetime, policy_id: str, other: bool = False
    ) -> list[float]:
        """The rewards of the recalls `policy_id` decided since `since` (with `other`, those
        the other policies decided), in the order they were rewarded."""
        decided = Transition.policy_id != policy_id if other else Transition.policy_id == policy_id
        query = (
            select(Transition.reward)
            .where(
                Transition.namespace == namespace,
                Transition.status == "completed",
                Transition.created_at >= since,
                decided,
            )
            .order_by(Transition.completed_at, Transition.id)
        )
        return [float(r) for r in await self.session.scalars(query) if r is not None]


def _window(namespace: str, since: datetime | None, until: datetime | None) -> list[Any]:
    where = [Transition.namespace == namespace, Transition.status == "completed"]
    if since is not None:
        where.append(Transition.created_at >= since)
    if until is not None:
        where.append(Transition.created_at < until)
    return where
