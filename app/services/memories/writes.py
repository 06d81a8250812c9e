"""A new memory as the writer's command: inserted, replayed, or refused, decided against
the batch's state (a memory with a chosen id reads the stored one first)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict
from app.db.rows import compiled_insert
from app.repositories.episodes import Key
from app.repositories.memories import MEMORIES, MemoryRepository
from app.services.writer.handler import Command, Replayed, Writes

# What a request to create a memory sets: a repeat with the same values is a retry.
MEMORY_REQUEST_FIELDS = (
    "type",
    "scope",
    "content",
    "confidence",
    "sensitivity",
    "criticality",
    "valid_from",
    "valid_until",
    "source_refs",
    "metadata",
)


@dataclass(slots=True, kw_only=True)
class CreateMemory(Command[Replayed]):
    """A memory's whole row; `client_id`: its id was chosen by the client (or comes from
    an Idempotency-Key), so it may exist already."""

    row: dict[str, Any]
    client_id: bool

    @classmethod
    def of(cls, row: dict[str, Any], *, client_id: bool) -> CreateMemory:
        return cls(key=(row["namespace"], row["id"]), row=row, client_id=client_id)


@dataclass
class Memories:
    """What a batch's new memories will change."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    # Memories with a chosen id: the stored or batched row per id.
    chosen: dict[Key, dict[str, Any]] = field(default_factory=dict)


class MemoryWrites(Writes[CreateMemory, Memories]):
    commands = (CreateMemory,)

    def part(self) -> Memories:
        return Memories()

    def direct(self, cmd: CreateMemory) -> bool:
        return not cmd.client_id

    async def load(
        self, session: AsyncSession, commands: list[CreateMemory], part: Memories
    ) -> None:
        chosen = {c.key for c in commands if c.client_id}
        part.chosen = await MemoryRepository(session).existing(chosen)

    def decide(self, part: Memories, cmd: CreateMemory) -> Replayed:
        row = cmd.row
        existing = part.chosen.get(cmd.key)
        if existing is not None:
            if any(existing[name] != row[name] for name in MEMORY_REQUEST_FIELDS):
                raise Conflict(
                    f"memory {cmd.key[1]!r} exists with different content (a chosen id or "
                    "an Idempotency-Key names one memory)",
                    field="id",
                    id=cmd.key[1],
                )
            return Replayed(existing, replayed=True)
        if cmd.client_id:
            part.chosen[cmd.key] = row
        part.rows.append(row)
        return Replayed(row, replayed=False)

    async def write(self, session: AsyncSession, part: Memories) -> bool:
        await MemoryRepository(session).insert_many(part.rows)
        return bool(part.rows)

    def statements(self, dialect: Any, part: Memories) -> list[tuple[str, Any]]:
        # Multi-row INSERTs: an executemany would flush the full-text index at every row.
        return compiled_insert(MEMORIES, dialect).multi(part.rows) if part.rows else []
