"""Learning passes and the read side of what learning produced: reflections, patterns,
skills and their history. Never commits."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.errors import NotFound
from app.models import Memory, Pattern, Skill
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.memories import MemoryRepository
from app.repositories.patterns import PatternRepository
from app.repositories.skills import SkillRepository
from app.schemas.filters import MemoryFilters
from app.schemas.learning import (
    PatternPage,
    PatternRead,
    ReflectionPage,
    ReflectionRead,
    ReflectResult,
    SkillChange,
    SkillEventRead,
    SkillHistory,
    SkillPage,
    SkillRead,
)
from app.services import pagination

if TYPE_CHECKING:
    from app.services.learning.references import References

PASS_CHUNK = 500
PASS_CHUNKS = 2


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


async def run_pass(
    session: AsyncSession,
    namespace: str,
    payload: dict[str, Any],
    *,
    settings: Learning,
    references: References | None = None,
    max_chunks: int | None = None,
) -> tuple[ReflectResult, bool]:
    """Learn completed episodes of the window not learned yet (at most `max_chunks` of
    PASS_CHUNK, so that one transaction stays short), then evolve skills. Returns the
    result and whether episodes remain for another round."""
    from app.services.learning.episodes import LearningService
    from app.services.learning.evolution import EvolutionPass

    episode_rows = EpisodeLearningRepository(session)
    pattern_rows = PatternRepository(session)
    learning = LearningService(session, settings=settings, references=references)
    # Evolution's lock before learning's row locks, in the order an evolution takes them.
    await SkillRepository(session).lock_evolution(namespace)
    task_type = payload.get("task_type")
    learned = reflections = 0
    touched: set[str] = set()
    remaining = False
    for _ in range(max_chunks or PASS_CHUNKS):
        ids = await episode_rows.unlearned(
            namespace,
            since=_when(payload.get("since")),
            until=_when(payload.get("until")),
            task_type=task_type,
            limit=PASS_CHUNK,
        )
        chunk: dict[str, Any] = await learning.learn(namespace, ids) if ids else {"learned": 0}
        remaining = len(ids) == PASS_CHUNK and bool(chunk["learned"])
        if not chunk["learned"]:
            break
        learned += chunk["learned"]
        reflections += len(chunk["reflections"])
        touched.update(chunk["task_types"])
    if task_type is not None:
        touched.add(task_type)
    elif not touched:
        touched.update(await pattern_rows.task_types(namespace))
    changes = await EvolutionPass(session, settings=settings).evolve(namespace, sorted(touched))
    patterns: list[PatternRead] = []
    for t in sorted(touched):
        found = await pattern_rows.page(
            namespace,
            kind=None,
            task_type=t,
            min_support=settings.min_support,
            sort="lcb",
            offset=0,
            limit=10,
        )
        patterns.extend(pattern_read(p) for p in found)
    result = ReflectResult(
        status="done",
        learned=learned,
        reflections=reflections,
        patterns=patterns,
        skill_changes=[SkillChange(**c) for c in changes],
    )
    return result, remaining


def pattern_read(p: Pattern) -> PatternRead:
    return PatternRead(
        id=p.id,
        kind=p.kind,
        task_type=p.task_type or None,
        signature=p.signature,
        items=p.items,
        support=p.support,
        successes=p.successes,
        success_rate=round(p.success_rate, 6),
        mean_reward=None if p.mean_reward is None else round(p.mean_reward, 6),
        lcb=round(p.lcb, 6),
        evidence=p.evidence,
        updated_at=p.updated_at,
    )


def skill_read(s: Skill) -> SkillRead:
    return SkillRead.model_validate(
        {
            **{name: getattr(s, name) for name in SkillRead.model_fields if hasattr(s, name)},
            "task_type": s.task_type or None,
            "mean_reward": s.reward_sum / s.uses if s.uses else None,
        }
    )


def reflection_read(m: Memory) -> ReflectionRead:
    meta = m.metadata_
    return ReflectionRead(
        id=m.id,
        episode_id=meta.get("episode_id"),
        task_type=meta.get("task_type"),
        outcome=meta.get("outcome"),
        reward=meta.get("reward"),
        content=m.content,
        successes=meta.get("successes", []),
        improvements=meta.get("improvements", []),
        insights=meta.get("insights", []),
        created_at=m.created_at,
    )


class KnowledgeService:
    """What the learning loop has found, as the API shows it."""

    def __init__(self, session: AsyncSession) -> None:
        self.memories = MemoryRepository(session)
        self.pattern_rows = PatternRepository(session)
        self.skill_rows = SkillRepository(session)

    async def reflections(
        self,
        namespace: str,
        *,
        episode_id: str | None,
        task_type: str | None,
        cursor: str | None,
        limit: int,
        now: datetime,
    ) -> ReflectionPage:
        scope = {}
        if episode_id is not None:
            scope["episode_id"] = episode_id
        if task_type is not None:
            scope["task_type"] = task_type
        # A deleted reflection (its episode was deleted, or it was forgotten) is not listed.
        live = ["active", "quarantined", "superseded", "contradicted", "expired"]
        filters = MemoryFilters(types=["reflection"], statuses=live, scope=scope or None)
        rows, next_cursor = await pagination.page(
            lambda key, n: self.memories.list(namespace, filters, now=now, after=key, limit=n),
            cursor=cursor,
            limit=limit,
        )
        return ReflectionPage(items=[reflection_read(m) for m in rows], next_cursor=next_cursor)

    async def patterns(
        self,
        namespace: str,
        *,
        kind: str | None,
        task_type: str | None,
        min_support: int,
        sort: str,
        offset: int,
        limit: int,
    ) -> PatternPage:
        page, next_offset = await pagination.offset_page(
            lambda skip, n: self.pattern_rows.page(
                namespace,
                kind=kind,
                task_type=task_type,
                min_support=min_support,
                sort=sort,
                offset=skip,
                limit=n,
            ),
            offset=offset,
            limit=limit,
        )
        return PatternPage(items=[pattern_read(p) for p in page], next_offset=next_offset)

    async def skills(
        self,
        namespace: str,
        *,
        status: str | None,
        task_type: str | None,
        sort: str,
        offset: int,
        limit: int,
    ) -> SkillPage:
        page, next_offset = await pagination.offset_page(
            lambda skip, n: self.skill_rows.page(
                namespace, status=status, task_type=task_type, sort=sort, offset=skip, limit=n
            ),
            offset=offset,
            limit=limit,
        )
        return SkillPage(items=[skill_read(s) for s in page], next_offset=next_offset)

    async def skill(self, namespace: str, skill_id: str) -> SkillRead:
        found = await self.skill_rows.get(namespace, skill_id)
        if found is None:
            raise NotFound(f"skill {skill_id!r} not found")
        return skill_read(found)

    async def history(
        self, namespace: str, skill_id: str, *, cursor: str | None, limit: int
    ) -> SkillHistory:
        await self.skill(namespace, skill_id)
        rows, next_cursor = await pagination.page(
            lambda key, n: self.skill_rows.events(namespace, skill_id, after=key, limit=n),
            cursor=cursor,
            limit=limit,
        )
        return SkillHistory(
            skill_id=skill_id,
            items=[SkillEventRead.model_validate(e) for e in rows],
            next_cursor=next_cursor,
        )
