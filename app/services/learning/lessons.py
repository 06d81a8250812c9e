"""What agents' sessions taught about one kind of work, as one memory per kind.

A coding agent runs a turn every few minutes: a reflection memory per turn would be noise
that nobody reads and that slows recall. So the turns of agents' sessions are reflected on
together: one `reflection` memory per kind of work holds its lessons (which commands failed
and what fixed them), written again only when the lessons change (a new version, the old
one superseded). Runs in the job's session; never commits."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.ids import uuid7
from app.learning.mining import wilson_lcb
from app.repositories.memories import MemoryRepository, MemoryUsageRepository
from app.repositories.patterns import PatternRepository
from app.services.memories.rows import new_memory

AGENTS = frozenset({"claude-code", "codex", "cursor"})
MAX_LESSONS = 6
MIN_SEEN = 2
FAILING, FAILING_LEAVE = 0.5, 0.65  # of the best action's success rate


def lessons_text(task_type: str, recoveries: list[tuple[str, str]], failing: list[str]) -> str:
    project, _, kind = task_type.rpartition("/")
    where = f'"{kind}" work in project {project}' if project else task_type
    parts = [f"Lessons from agents' sessions of {where}:"]
    parts.extend(f"- when `{a}` fails, `{b}` fixed it" for a, b in recoveries)
    parts.extend(
        f"- the turns that ran `{a}` here mostly went wrong: check its result" for a in failing
    )
    return "\n".join(parts)


class KindLessons:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.patterns = PatternRepository(session)
        self.memories = MemoryRepository(session)
        self.usage = MemoryUsageRepository(session)

    async def update(self, namespace: str, task_type: str, *, now: datetime) -> str | None:
        """Write the kind's lessons again if they changed; the memory's id (None: none yet)."""
        found = await self.patterns.of_kinds(namespace, task_type, ["recovery", "action"])
        recoveries = sorted(
            (p for p in found if p.kind == "recovery" and p.successes >= MIN_SEEN),
            key=lambda p: (-p.successes, p.signature),
        )
        # In a fixed order, so that the text changes only when the lessons do.
        fixes = sorted((p.items[0], p.items[1]) for p in recoveries[:MAX_LESSONS])
        scope = {"level": "global", "task_type": task_type, "lessons": "kind"}
        current = [
            m
            for m in await self.usage.top_of_type(
                namespace, "reflection", now=now, limit=5, applies_to=scope
            )
            if m.scope.get("lessons") == "kind" and m.scope.get("task_type") == task_type
        ]
        actions = [p for p in found if p.kind == "action" and p.support >= MIN_SEEN * 2]
        base = max((p.success_rate for p in actions), default=0.0)
        # An action listed stays listed until its turns do clearly better (FAILING_LEAVE):
        # a rate hovering at the line would write the memory again at every turn.
        before = await self.memories.get(namespace, current[0].id) if current else None
        listed = set((before.metadata_ if before is not None else {}).get("failing") or [])
        failing = sorted(
            p.items[0]
            for p in actions
            if wilson_lcb(p.successes, p.support) < 0.3
            and p.success_rate < (FAILING_LEAVE if p.items[0] in listed else FAILING) * base
        )[:MAX_LESSONS]
        if not fixes and not failing:
            return str(current[0].id) if current else None
        content = lessons_text(task_type, fixes, failing)
        if current and current[0].content == content:
            return str(current[0].id)
        memory_id = uuid7()
        previous = current[0] if current else None
        if previous is not None:
            await self.memories.transition(
                namespace,
                previous.id,
                from_statuses=("active",),
                values={"status": "superseded", "superseded_by": memory_id, "updated_at": now},
            )
        row = new_memory(
            namespace,
            memory_id,
            content=content,
            confidence=0.6,
            sensitivity="low",
            criticality=0.3,
            source_refs=[f"task_type:{task_type}"],
            metadata={"task_type": task_type, "recoveries": fixes, "failing": failing},
            now=now,
            version=(previous.version + 1) if previous is not None else 1,
            previous_id=previous.id if previous is not None else None,
        )
        await self.memories.insert(row | {"type": "reflection", "scope": scope})
        return memory_id
