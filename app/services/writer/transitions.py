"""Recall decisions (RL transitions): queued as they come, then logged with the links
that chain each task's recalls and the use counts of the memories they chose."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.repositories.memories import MemoryUsageRepository
from app.repositories.transitions import TransitionRepository, chain
from app.services.writer.commands import Batch, Command


def decide_transition(batch: Batch, cmd: Command) -> None:
    batch.transitions.append(cmd.data)
    batch.results.append((cmd.future, cmd.data))


async def log_transitions(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Recall decisions: the rows, the link from each task's previous recall, and the
    chosen memories' use counts."""
    transitions = TransitionRepository(session)
    usage = MemoryUsageRepository(session)
    new = [r["row"] for r in rows]
    for namespace, task_id, first in chain(new):
        await transitions.link_previous(namespace, task_id, first)
    await transitions.insert_many(new)
    # Transitions first, then memories in id order, as a reward takes them.
    chosen: dict[str, set[str]] = {}
    for r in rows:
        chosen.setdefault(r["row"]["namespace"], set()).update(r["selected"])
    for namespace in sorted(chosen):
        await usage.lock(namespace, chosen[namespace])
    for r in rows:
        row = r["row"]
        await usage.mark_used(row["namespace"], r["selected"], now=row["created_at"])
