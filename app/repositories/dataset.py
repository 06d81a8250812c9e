"""SQL for the transition log as the dataset reads it: pages in (created_at, id) order
under the dataset's filters (the listing, and the completed transitions a download
sends, as models or as streamed raw rows), the boundary of a download, next states."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, Text, and_, case, or_, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncResult, AsyncSession

from app.models import Transition
from app.repositories import keyset
from app.repositories.transitions import TRANSITIONS
from app.schemas.filters import DatasetFilters

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
    Transition.reward_source,
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


class DatasetRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

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
