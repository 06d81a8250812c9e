"""SQL for recall transitions and rewards."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    Select,
    Table,
    Text,
    and_,
    case,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncResult, AsyncSession

from app.models import Reward, Transition
from app.repositories import keyset
from app.schemas.filters import DatasetFilters

TRANSITIONS = cast(Table, Transition.__table__)
REWARDS = cast(Table, Reward.__table__)


RAW_COLUMNS = (
    Transition.id,
    Transition.task_id,
    Transition.agent_id,
    Transition.task_type,
    Transition.policy_id,
    Transition.policy_version,
    Transition.created_at,
    Transition.completed_at,
    Transition.propensity,
    Transition.reward,
    Transition.next_id,
    Transition.n_candidates,
    Transition.dataset_lists,
)


def _rebuilt(table: Any, slots: int) -> Any:
    """SQL: true for a transition whose stored dataset parts the export cannot copy into
    `slots` slots (logged before they existed, or with more candidates than slots)."""
    vector = sql_cast(table.c.observation_vector, Text)
    return or_(
        table.c.dataset_lists.is_(None),
        table.c.n_candidates.is_(None),
        table.c.n_candidates > slots,
        table.c.observation_vector.is_(None),
        vector == "null",
    )


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
        self, namespace: str, ids: Sequence[str], *, reward_id: str, reward: float, now: datetime
    ) -> int:
        """Complete the pending ones among ids; returns how many this call completed."""
        result = await self.session.execute(
            update(TRANSITIONS)
            .where(
                TRANSITIONS.c.namespace == namespace,
                TRANSITIONS.c.id.in_(list(ids)),
                TRANSITIONS.c.status == "pending",
            )
            .values(status="completed", reward=reward, reward_id=reward_id, completed_at=now)
        )
        return int(getattr(result, "rowcount", 0))

    async def page(
        self,
        namespace: str,
        *,
        status: str | None,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Transition]:
        """Oldest first, keyset on (created_at, id)."""
        stmt = self._select(namespace, status=status, filters=filters, after=after)
        return list((await self.session.execute(stmt.limit(limit))).scalars())

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

    async def boundary(
        self,
        namespace: str,
        *,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> tuple[tuple[datetime, str] | None, bool]:
        """Key of the limit-th completed transition from `after`, and whether more follow."""
        stmt = self._completed(namespace, filters, after).with_only_columns(
            Transition.created_at, Transition.id
        )
        rows = (await self.session.execute(stmt.offset(limit - 1).limit(2))).all()
        if rows:
            return (rows[0][0], rows[0][1]), len(rows) > 1
        # Fewer than `limit` rows remain: the boundary is the last of them.
        newest = stmt.order_by(None).order_by(Transition.created_at.desc(), Transition.id.desc())
        row = (await self.session.execute(newest.limit(1))).first()
        return ((row[0], row[1]) if row else None), False

    def _completed(
        self,
        namespace: str,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        columns: Sequence[Any] = (),
    ) -> Select[Any]:
        return self._select(
            namespace, status="completed", filters=filters, after=after, columns=columns
        )

    def _select(
        self,
        namespace: str,
        *,
        status: str | None,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        columns: Sequence[Any] = (),
    ) -> Select[Any]:
        """Transitions of the namespace matching the filters, after `after`, oldest first."""
        stmt = select(*columns) if columns else select(Transition)
        stmt = stmt.where(Transition.namespace == namespace)
        if status is not None:
            stmt = stmt.where(Transition.status == status)
        if filters.since is not None:
            stmt = stmt.where(Transition.created_at >= filters.since)
        if filters.until is not None:
            stmt = stmt.where(Transition.created_at < filters.until)
        if filters.policy_id is not None:
            stmt = stmt.where(Transition.policy_id == filters.policy_id)
        if filters.task_type is not None:
            stmt = stmt.where(Transition.task_type == filters.task_type)
        if after is not None:
            stmt = stmt.where(keyset.after(Transition.created_at, Transition.id, after))
        return stmt.order_by(Transition.created_at, Transition.id)

    async def completed_chunk(
        self,
        namespace: str,
        *,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        until_key: tuple[datetime, str],
        limit: int,
    ) -> list[Transition]:
        """Completed transitions after `after`, up to and including `until_key`."""
        stmt = self._completed(namespace, filters, after).where(
            keyset.up_to(Transition.created_at, Transition.id, until_key)
        )
        return list((await self.session.execute(stmt.limit(limit))).scalars())

    async def completed_raw(
        self,
        namespace: str,
        *,
        filters: DatasetFilters,
        after: tuple[datetime, str] | None,
        until_key: tuple[datetime, str],
        batch: int,
        slots: int,
    ) -> AsyncResult[Any]:
        """Completed transitions after `after`, up to and including `until_key`, as one
        streamed result fetched `batch` rows at a time: plain rows with the stored dataset
        parts as the JSON text stored (the export copies them instead of decoding and
        encoding them), and the next transition's vector joined in. State and action
        (`state`, `action`, `next_state`) are read only for the transitions whose parts
        cannot be copied into `slots` slots, which the export rebuilds from them. The
        export reads the columns by position: RAW_COLUMNS, vector, state, action,
        next_n_candidates, next_vector, next_state."""
        following = TRANSITIONS.alias("following")
        rebuilt = _rebuilt(TRANSITIONS, slots)
        next_rebuilt = _rebuilt(following, slots)
        columns = (
            *RAW_COLUMNS,
            sql_cast(Transition.observation_vector, Text).label("vector"),
            case((rebuilt, sql_cast(Transition.state, Text))).label("state"),
            case((rebuilt, sql_cast(Transition.action, Text))).label("action"),
            following.c.n_candidates.label("next_n_candidates"),
            sql_cast(following.c.observation_vector, Text).label("next_vector"),
            case((next_rebuilt, sql_cast(following.c.state, Text))).label("next_state"),
        )
        stmt: Select[Any] = (
            self._completed(namespace, filters, after, columns)
            .where(keyset.up_to(Transition.created_at, Transition.id, until_key))
            .outerjoin(
                following,
                and_(following.c.namespace == namespace, following.c.id == Transition.next_id),
            )
            .execution_options(yield_per=batch)
        )
        result: AsyncResult[Any] = await self.session.stream(stmt)
        return result

    async def states(self, namespace: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        stmt = select(Transition.id, Transition.state).where(
            Transition.namespace == namespace, Transition.id.in_(list(ids))
        )
        rows = (await self.session.execute(stmt)).all()
        return {row[0]: row[1] for row in rows}


class RewardRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def insert(self, row: dict[str, Any]) -> None:
        await self.session.execute(insert(REWARDS), [row])

    async def get_many(self, namespace: str, ids: Sequence[str]) -> dict[str, Reward]:
        if not ids:
            return {}
        stmt = select(Reward).where(Reward.namespace == namespace, Reward.id.in_(list(ids)))
        return {r.id: r for r in (await self.session.execute(stmt)).scalars()}

    async def page(
        self,
        namespace: str,
        *,
        recall_id: str | None,
        task_id: str | None,
        episode_id: str | None = None,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[Reward]:
        stmt = select(Reward).where(Reward.namespace == namespace)
        if episode_id is not None:
            stmt = stmt.where(Reward.episode_id == episode_id)
        if recall_id is not None:
            stmt = stmt.where(Reward.recall_id == recall_id)
        if task_id is not None:
            stmt = stmt.where(Reward.task_id == task_id)
        if after is not None:
            stmt = stmt.where(keyset.before(Reward.created_at, Reward.id, after))
        stmt = stmt.order_by(Reward.created_at.desc(), Reward.id.desc()).limit(limit)
        return list((await self.session.execute(stmt)).scalars())
