"""What a write is to the writer: a typed command, and the handler its domain registers
for it (load what the batch is decided against, decide each command, write the batch).

A domain declares its commands as dataclasses deriving from `Command[answer type]` and
one `Writes` subclass that handles them; the writer groups the commands of a batch by
handler and runs each handler's steps in the order the handlers were given.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from app.repositories.episodes import Key

A = TypeVar("A")
C = TypeVar("C", bound="Command[Any]")
P = TypeVar("P")


@dataclass(slots=True)
class Replayed:
    """A created row, and whether it was stored before (a retried request)."""

    row: dict[str, Any]
    replayed: bool


@dataclass(slots=True, kw_only=True)
class Command(Generic[A]):
    """What a request queues: the row it concerns; its answer, of type A, comes back on
    `future` once the batch that holds it has committed."""

    key: Key
    future: asyncio.Future[A] = field(init=False, repr=False)
    request_id: str | None = field(default=None, init=False, repr=False)


class Writes(Generic[C, P]):
    """The handler of one domain's commands. A batch gets one part (P) per handler: what
    its commands will change, built while deciding them.

    On a backend that writes directly (`direct_writes`: SQLite's connection thread), a
    batch whose commands all read nothing before their decisions (`direct`) is written
    by `statements`, in one call; otherwise by `write`, in the writer's session. Both
    store the same rows: a handler that offers `statements` is tested against `write`
    on the same batch.
    """

    commands: ClassVar[tuple[type[Command[Any]], ...]]

    def part(self) -> P:
        raise NotImplementedError

    def direct(self, cmd: C) -> bool:
        """Whether the command is decided without reading the database."""
        return False

    async def load(self, session: AsyncSession, commands: list[C], part: P) -> None:
        """Read the stored state the batch's commands are decided against."""

    def waits(self, part: P, cmd: C) -> bool:
        """Whether the command must wait for the next batch (it touches a row an earlier
        command of this batch deletes)."""
        return False

    def decide(self, part: P, cmd: C) -> Any:
        """The command's changes into `part`; returns its answer or raises its AppError."""
        raise NotImplementedError

    async def write(self, session: AsyncSession, part: P) -> bool:
        """Write the part in the session (not committed); whether anything was written."""
        raise NotImplementedError

    def statements(self, dialect: Any, part: P) -> list[tuple[str, Any]]:
        """The part as SQLite statements, each an executemany (direct commands only)."""
        raise NotImplementedError

    async def committed(self, session: AsyncSession | None, part: P) -> None:
        """After the batch commits (session is None on the direct path)."""


@dataclass
class Batch:
    """One group commit: a part per handler, in the writer's order, and the answers."""

    parts: dict[Writes[Any, Any], Any] = field(default_factory=dict)
    results: list[tuple[asyncio.Future[Any], Any]] = field(default_factory=list)
