"""Memory use cases: create, read, list, the lifecycle (forget, supersede, quarantine,
restore) and ranked search. Runs in the request's session; never commits. The rows they
write and read are built in `memory_rows.py`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Limits
from app.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from app.core.ids import uuid7
from app.models import Memory
from app.repositories.memories import MemoryRecord, MemoryRepository
from app.schemas.filters import MemoryFilters
from app.schemas.memory import (
    MemoryCreate,
    MemoryPage,
    MemoryRead,
    MemorySupersede,
    lower_sensitivity,
    readable_sensitivities,
    within_sensitivity,
)
from app.schemas.search import (
    MemoryHit,
    MemorySearch,
    MemorySearchResult,
    RetrievalParts,
    ScoreParts,
)
from app.search import Mode, NoEmbedder, Retrieval
from app.services import pagination
from app.services.access.idempotency import checked_key, keyed_id
from app.services.memories.rows import check_limits, memory_row, status_at, to_read
from app.services.memories.writes import CreateMemory
from app.services.writer import Writer

# A memory can leave these statuses through each transition; anything else is a 409.
FORGETTABLE = ("active", "quarantined", "superseded", "contradicted")
SUPERSEDABLE = ("active", "quarantined", "contradicted")

_READ_FIELDS = tuple(MemoryRead.model_fields)


def writable(sensitivity: str, ceiling: str, *, what: str = "a memory") -> None:
    """A key writes, and acts on, memories at or below the sensitivity it may read."""
    if not within_sensitivity(sensitivity, ceiling):
        raise Forbidden(
            f"{what} is {sensitivity}; this key reads and writes memories up to {ceiling}",
            field="sensitivity",
        )


async def create_memory(
    writer: Writer,
    namespace: str,
    data: MemoryCreate,
    *,
    limits: Limits,
    ceiling: str,
    idempotency_key: str | None = None,
) -> tuple[dict[str, Any], bool]:
    """Store a new memory through the writer's group commit; returns MemoryRead's fields
    in its order (the row comes from a validated request: no second validation) and
    whether they are a retry's first result, replayed. `ceiling`: the caller's cap."""
    writable(data.sensitivity.value, ceiling, what="the new memory")
    check_limits(data, limits)
    now = datetime.now(UTC)
    memory_id = data.id
    key = checked_key(idempotency_key)
    if memory_id is None and key is not None:
        memory_id = keyed_id(namespace, "memory", key)
    row = memory_row(namespace, memory_id or uuid7(), data, now=now)
    row |= {"type": data.type.value, "scope": dict(data.scope)}
    result = await writer.submit(CreateMemory.of(row, client_id=memory_id is not None))
    stored = result.row
    mean = stored["reward_sum"] / stored["reward_count"] if stored["reward_count"] else None
    status = status_at(stored["status"], stored["valid_until"], now=now)
    read = {**stored, "status": status, "reward_mean": mean, "redacted": False}
    return {name: read[name] for name in _READ_FIELDS}, result.replayed


class MemoryService:
    def __init__(
        self,
        session: AsyncSession,
        *,
        limits: Limits,
        searcher: Retrieval | None = None,
        ceiling: str = "restricted",
    ) -> None:
        """`searcher`: for `search` only. `ceiling`: the highest sensitivity the caller may
        read (search is capped at it, other answers redact what is above it)."""
        self.session = session
        self.searcher = searcher
        self.repo = MemoryRepository(session)
        self.limits = limits
        self.ceiling = ceiling

    def _read(self, memory: MemoryRecord, *, now: datetime) -> MemoryRead:
        return to_read(memory, now=now, ceiling=self.ceiling)

    async def _require(self, namespace: str, memory_id: str) -> Memory:
        memory = await self.repo.get(namespace, memory_id)
        if memory is None:
            raise NotFound(f"memory {memory_id!r} not found")
        return memory

    async def _writable(self, namespace: str, memory_id: str) -> Memory:
        """The memory, if the caller may act on it (at or below its cap)."""
        memory = await self._require(namespace, memory_id)
        writable(memory.sensitivity, self.ceiling, what=f"memory {memory_id!r}")
        return memory

    async def get(self, namespace: str, memory_id: str) -> MemoryRead:
        memory = await self._require(namespace, memory_id)
        return self._read(memory, now=datetime.now(UTC))

    async def list(
        self, namespace: str, filters: MemoryFilters, *, cursor: str | None, limit: int
    ) -> MemoryPage:
        """Newest first, with a keyset cursor."""
        now = datetime.now(UTC)
        rows, next_cursor = await pagination.page(
            lambda key, n: self.repo.list(namespace, filters, now=now, after=key, limit=n),
            cursor=cursor,
            limit=limit,
        )
        return MemoryPage(items=[self._read(m, now=now) for m in rows], next_cursor=next_cursor)

    async def _transition(
        self, namespace: str, memory_id: str, *, allowed: tuple[str, ...], target: str
    ) -> MemoryRead:
        memory = await self._writable(namespace, memory_id)
        if memory.status == target:
            return self._read(memory, now=datetime.now(UTC))  # repeating it changes nothing
        now = datetime.now(UTC)
        values = {"status": target, "updated_at": now}
        if not await self.repo.transition(
            namespace, memory_id, from_statuses=allowed, values=values
        ):
            raise Conflict(
                f"memory {memory_id!r} is {memory.status}; it cannot become {target}",
                field="status",
            )
        await self.repo.session.refresh(memory)
        return self._read(memory, now=now)

    async def forget(self, namespace: str, memory_id: str) -> MemoryRead:
        """Soft delete: kept for history, never recalled again."""
        return await self._transition(namespace, memory_id, allowed=FORGETTABLE, target="deleted")

    async def quarantine(self, namespace: str, memory_id: str) -> MemoryRead:
        """Suspect: recall offers it only to be re-verified."""
        return await self._transition(
            namespace, memory_id, allowed=("active", "contradicted"), target="quarantined"
        )

    async def restore(self, namespace: str, memory_id: str) -> MemoryRead:
        """Back from quarantine."""
        return await self._transition(
            namespace, memory_id, allowed=("quarantined",), target="active"
        )

    async def supersede(self, namespace: str, memory_id: str, data: MemorySupersede) -> MemoryRead:
        """A new version replaces the memory; both changes in one transaction."""
        check_limits(data, self.limits)
        old = await self._writable(namespace, memory_id)
        if data.sensitivity is not None:
            writable(data.sensitivity.value, self.ceiling, what="the new version")
        now = datetime.now(UTC)
        new_id = uuid7()
        marked = await self.repo.transition(
            namespace,
            memory_id,
            from_statuses=SUPERSEDABLE,
            values={"status": "superseded", "superseded_by": new_id, "updated_at": now},
        )
        if not marked:
            raise Conflict(
                f"memory {memory_id!r} is {old.status}; only a current memory can be superseded",
                field="status",
            )
        row = memory_row(namespace, new_id, data, now=now)
        row |= {
            "type": old.type,
            "scope": old.scope,
            "version": old.version + 1,
            "previous_id": old.id,
            "confidence": old.confidence if data.confidence is None else data.confidence,
            "criticality": old.criticality if data.criticality is None else data.criticality,
            "sensitivity": old.sensitivity if data.sensitivity is None else data.sensitivity.value,
            "valid_from": data.valid_from or old.valid_from,
            "valid_until": data.valid_until or old.valid_until,
            "source_refs": list(data.source_refs) or old.source_refs,
            "metadata": data.metadata or old.metadata_,
        }
        await self.repo.insert(row)
        return await self.get(namespace, new_id)

    async def search(self, namespace: str, data: MemorySearch) -> MemorySearchResult:
        """Ranked search (lexical, dense or hybrid), without a policy or a transition."""
        cap = lower_sensitivity(data.max_sensitivity.value, self.ceiling)
        allowed = readable_sensitivities(cap)
        filters = MemoryFilters(
            types=[t.value for t in data.types] if data.types else None,
            statuses=[s.value for s in data.statuses],
            sensitivities=allowed,
            scope=dict(data.scope) if data.scope else None,
        )
        now = datetime.now(UTC)
        assert self.searcher is not None, "MemoryService(searcher=...) answers searches"
        try:
            found = await self.searcher.rank(
                self.session,
                namespace,
                data.query,
                filters,
                now=now,
                limit=data.limit,
                mode=Mode(data.mode) if data.mode else None,
            )
        except NoEmbedder as exc:
            raise InvalidInput(str(exc), field="mode") from exc
        hits = [
            MemoryHit(
                memory=self._read(hit.memory, now=now),
                score=hit.parts["score"],
                parts=ScoreParts(
                    text=hit.parts["text"],
                    criticality=hit.memory.criticality,
                    confidence=hit.memory.confidence,
                    value=hit.parts["value"],
                    staleness=hit.parts["staleness"],
                ),
                retrieval=RetrievalParts.model_validate(hit.retrieval),
            )
            for hit in found.hits
        ]
        return MemorySearchResult(
            query_terms=found.terms,
            hits=hits,
            mode=found.mode.value,
            missing_vectors=found.missing_vectors,
        )
