"""Recall decisions (RL transitions) as the writer's command: logged in group commits
with the links that chain each task's recalls and the use counts of the memories they
chose."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.metrics import Metrics
from app.db.rows import compiled_insert
from app.repositories.memories import MemoryUsageRepository
from app.repositories.transitions import (
    LINK_PREVIOUS_SQLITE,
    TRANSITIONS,
    TransitionRepository,
    chain,
)
from app.services.writer.handler import Command, Writes


@dataclass(slots=True, kw_only=True)
class LogRecall(Command[None]):
    """A recall's transition row and the memories it chose."""

    row: dict[str, Any]
    selected: list[str]

    @classmethod
    def of(cls, row: dict[str, Any], *, selected: list[str]) -> LogRecall:
        return cls(key=(row["namespace"], row["id"]), row=row, selected=selected)


@dataclass
class Logs:
    logged: list[LogRecall] = field(default_factory=list)


class RecallLogs(Writes[LogRecall, Logs]):
    commands = (LogRecall,)

    def __init__(self, metrics: Metrics | None = None) -> None:
        self._metrics = metrics

    def part(self) -> Logs:
        return Logs()

    def direct(self, cmd: LogRecall) -> bool:
        return True

    def decide(self, part: Logs, cmd: LogRecall) -> None:
        part.logged.append(cmd)

    async def write(self, session: AsyncSession, part: Logs) -> bool:
        """The rows, the link from each task's previous recall, and the chosen memories'
        use counts."""
        if not part.logged:
            return False
        transitions = TransitionRepository(session)
        usage = MemoryUsageRepository(session)
        new = [log.row for log in part.logged]
        for namespace, task_id, first in chain(new):
            await transitions.link_previous(namespace, task_id, first)
        await transitions.insert_many(new)
        # Transitions first, then memories in id order, as a reward takes them.
        chosen: dict[str, set[str]] = {}
        for log in part.logged:
            chosen.setdefault(log.row["namespace"], set()).update(log.selected)
        for namespace in sorted(chosen):
            await usage.lock(namespace, chosen[namespace])
        for log in part.logged:
            await usage.mark_used(log.row["namespace"], log.selected, now=log.row["created_at"])
        return True

    def statements(self, dialect: Any, part: Logs) -> list[tuple[str, Any]]:
        """`write`'s rows as SQLite statements."""
        if not part.logged:
            return []
        new = [log.row for log in part.logged]
        statements: list[tuple[str, Any]] = []
        links = [(first, ns, task_id, first) for ns, task_id, first in chain(new)]
        if links:
            statements.append((LINK_PREVIOUS_SQLITE, links))
        statements.append(compiled_insert(TRANSITIONS, dialect).many(new))
        uses = [(log.row["namespace"], log.selected, log.row["created_at"]) for log in part.logged]
        sql, params = MemoryUsageRepository.mark_used_sqlite(uses)
        if params:
            statements.append((sql, params))
        return statements

    async def committed(self, session: AsyncSession | None, part: Logs) -> None:
        if self._metrics is None:
            return
        for log in part.logged:
            candidates = log.row["state"]["request"]["n_candidates"]
            self._metrics.observe_recall(candidates=candidates, selected=len(log.selected))
