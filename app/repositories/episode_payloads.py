"""SQL of episode payloads kept in SQL (`app/storage/sql.py`): an episode's rows by
(namespace, episode id, part), in that order."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Integer,
    Table,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    select,
    true,
    tuple_,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from app.models import EpisodePayload
from app.repositories.episodes import EPISODES

PAYLOADS = cast(Table, EpisodePayload.__table__)
# (namespace, episode id, part): a payload's key, its fields apart.
Part = tuple[str, str, str]
_DELETE = delete(PAYLOADS).where(
    PAYLOADS.c.namespace == bindparam("ns"),
    PAYLOADS.c.episode_id == bindparam("eid"),
    PAYLOADS.c.part == bindparam("part"),
)
_ORDER = (PAYLOADS.c.namespace, PAYLOADS.c.episode_id, PAYLOADS.c.part)


def _under(episode: tuple[str, str] | None) -> ColumnElement[bool]:
    if episode is None:
        return true()
    ns, eid = episode
    return and_(PAYLOADS.c.namespace == ns, PAYLOADS.c.episode_id == eid)


class EpisodePayloadRepository:
    """Every call takes an episode (namespace, id), or None for every episode."""

    def __init__(self, session: AsyncSession | AsyncConnection) -> None:
        self.session = session

    async def write(self, puts: Sequence[tuple[Part, bytes]], deletes: Sequence[Part]) -> None:
        if deletes:
            await self.session.execute(
                _DELETE, [{"ns": ns, "eid": eid, "part": part} for ns, eid, part in deletes]
            )
        if puts:
            await self.session.execute(
                insert(PAYLOADS),
                [
                    {"namespace": ns, "episode_id": eid, "part": part, "data": data}
                    for (ns, eid, part), data in puts
                ],
            )

    async def get(self, ns: str, eid: str, part: str) -> bytes | None:
        stmt = select(PAYLOADS.c.data).where(_under((ns, eid)), PAYLOADS.c.part == part)
        data: bytes | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return data

    async def items(self, episode: tuple[str, str] | None) -> list[tuple[Part, bytes]]:
        stmt = select(*_ORDER, PAYLOADS.c.data).where(_under(episode)).order_by(*_ORDER)
        return [((ns, eid, part), data) for ns, eid, part, data in await self.session.execute(stmt)]

    async def keys(
        self, episode: tuple[str, str] | None, *, after: Part | None, limit: int
    ) -> list[Part]:
        stmt = select(*_ORDER).where(_under(episode))
        if after is not None:
            stmt = stmt.where(tuple_(*_ORDER) > tuple_(*after))
        rows = await self.session.execute(stmt.order_by(*_ORDER).limit(limit))
        return [(ns, eid, part) for ns, eid, part in rows]

    async def delete(self, episode: tuple[str, str] | None) -> int:
        result: Any = await self.session.execute(delete(PAYLOADS).where(_under(episode)))
        return int(result.rowcount)

    async def delete_orphans(self) -> int:
        """Remove the payloads no row points to: of no episode, or chunks from the
        episode's step_count on (a restored archive of LevelDB may hold them)."""
        kept = (
            select(1)
            .where(
                EPISODES.c.namespace == PAYLOADS.c.namespace,
                EPISODES.c.id == PAYLOADS.c.episode_id,
                # The document's part is "doc", a chunk's "c" and its first seq.
                case(
                    (PAYLOADS.c.part == "doc", -1),
                    else_=sql_cast(func.substr(PAYLOADS.c.part, 2), Integer),
                )
                < EPISODES.c.step_count,
            )
            .exists()
        )
        result: Any = await self.session.execute(delete(PAYLOADS).where(~kept))
        return int(result.rowcount)

    async def stream(self, *, batch: int) -> AsyncGenerator[list[tuple[Part, bytes]]]:
        """Every payload in key order, through a cursor, `batch` at a time."""
        stmt = select(*_ORDER, PAYLOADS.c.data).order_by(*_ORDER)
        result = await self.session.stream(stmt.execution_options(yield_per=batch))
        try:
            async for rows in result.partitions(batch):
                yield [((ns, eid, part), data) for ns, eid, part, data in rows]
        finally:
            await result.close()
