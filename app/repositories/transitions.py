"""SQL for the RL transition log as recall and rewards write it: a recall's transition
inserted and linked to its task's previous one, completed by a reward, looked up by id,
task or reward (the dataset's reads are in `dataset.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Transition

TRANSITIONS = cast(Table, Transition.__table__)


# TransitionRepository.link_previous as SQLite text, for the writer's direct group commit.
LINK_PREVIOUS_SQLITE = (
    "UPDATE rl_transitions SET next_id = ? "
    "WHERE namespace = ? AND task_id = ? AND next_id IS NULL AND status = 'pending' AND id != ?"
)


def chain(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """Link new transitions of the same task to each other, in the given order (each
    row's next_id), and return (namespace, task_id, first new id) for each task: the
    task's stored transition still open (no next, still pending) gets that first id
    (`link_previous`, run before the rows are inserted)."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    firsts: list[tuple[str, str, str]] = []
    for row in rows:
        if row["task_id"] is None:
            continue
        key = (row["namespace"], row["task_id"])
        before = last.get(key)
        if before is None:
            firsts.append((row["namespace"], row["task_id"], row["id"]))
        else:
            before["next_id"] = row["id"]
        last[key] = row
    return firsts


class TransitionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def insert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self.session.execute(insert(TRANSITIONS), list(rows))

    async def link_previous(self, namespace: str, task_id: str, new_id: str) -> None:
        """The task's previous recall gets this one as its next state, if no reward has
        completed it yet. A completed transition is final (the dataset may have sent it):
        without a next it ended its episode, and this recall starts a new one. The status
        is checked by the UPDATE itself, so a reward committed meanwhile is seen (on
        PostgreSQL the row is re-checked once the reward's lock is released)."""
        await self.session.execute(
            update(TRANSITIONS)
            .where(
                TRANSITIONS.c.namespace == namespace,
                TRANSITIONS.c.task_id == task_id,
                TRANSITIONS.c.next_id.is_(None),
                TRANSITIONS.c.status == "pending",
                TRANSITIONS.c.id != new_id,
            )
            .values(next_id=new_id)
        )

    async def get(self, namespace: str, transition_id: str) -> Transition | None:
        return await self.session.get(Transition, (namespace, transition_id))

    async def for_task(self, namespace: str, task_id: str) -> list[Transition]:
        stmt = (
            select(Transition)
            .where(Transition.namespace == namespace, Transition.task_id == task_id)
            .order_by(Transition.created_at, Transition.id)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def complete(
        self,
        namespace: str,
        ids: Sequence[str],
        *,
        reward_id: str,
        reward: float,
        now: datetime,
        source: str | None = None,
        replacing: Sequence[str] = (),
    ) -> int:
        """Complete the pending ones among ids (and those that the rewards `replacing`
        completed: an inferred reward gives way); returns how many this call completed."""
        open_ = TRANSITIONS.c.status == "pending"
        if replacing:
            open_ = or_(open_, TRANSITIONS.c.reward_id.in_(list(replacing)))
        result = await self.session.execute(
            update(TRANSITIONS)
            .where(
                TRANSITIONS.c.namespace == namespace,
                TRANSITIONS.c.id.in_(list(ids)),
                open_,
            )
            .values(
                status="completed",
                reward=reward,
                reward_id=reward_id,
                reward_source=source,
                completed_at=now,
            )
        )
        return int(getattr(result, "rowcount", 0))

    async def ids_by_reward(
        self, namespace: str, reward_ids: Sequence[str]
    ) -> dict[str, list[str]]:
        """The transitions each reward completed."""
        out: dict[str, list[str]] = {rid: [] for rid in reward_ids}
        if reward_ids:
            stmt = (
                select(Transition.reward_id, Transition.id)
                .where(
                    Transition.namespace == namespace, Transition.reward_id.in_(list(reward_ids))
                )
                .order_by(Transition.created_at, Transition.id)
            )
            for rid, tid in await self.session.execute(stmt):
                if rid is not None:
                    out[rid].append(tid)
        return out
