"""Rewards: for recalls (spec recall-v1, completing each transition once) and for
episodes (spec episode-v1, several kept per episode and aggregated by learning)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.errors import Conflict, NotFound
from app.core.ids import uuid7
from app.learning.policy import POLICY_ID
from app.learning.rewards import RECALL_SPEC_VERSION, recall_reward
from app.models import Reward, Transition
from app.repositories.memories import MemoryUsageRepository
from app.repositories.rewards import RewardRepository
from app.repositories.transitions import TransitionRepository
from app.schemas.recall import EpisodeScore, RewardCreate, RewardPage, RewardRead, Signals
from app.services import pagination
from app.services.operations.jobs import POLICY_CHECK, enqueue
from app.services.rewards.episodes import score, score_episodes, target_episodes


class _LostRace(Exception):
    pass


def _fingerprint(data: RewardCreate) -> str:
    body = data.model_dump(mode="json", exclude_none=True)
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _read(
    reward: Reward, completed: list[str], episodes: list[EpisodeScore] | None = None
) -> RewardRead:
    return RewardRead(
        id=reward.id,
        recall_id=reward.recall_id,
        task_id=reward.task_id,
        episode_id=reward.episode_id,
        value=reward.value,
        signals=reward.signals,
        scalar=reward.scalar,
        components=reward.components,
        spec_version=reward.spec_version,
        source=reward.source,
        completed_recalls=completed,
        episodes=episodes or [],
        created_at=reward.created_at,
    )


class RewardService:
    def __init__(self, session: AsyncSession, *, learning: Learning | None = None) -> None:
        self.session = session
        self.learning = learning or Learning()
        self.transitions = TransitionRepository(session)
        self.rewards = RewardRepository(session)
        self.usage = MemoryUsageRepository(session)

    async def _targets(
        self, namespace: str, data: RewardCreate, *, optional: bool
    ) -> list[Transition]:
        if data.recall_id is None and (data.task_id is None or data.episode_id is not None):
            return []
        if data.recall_id is not None:
            transition = await self.transitions.get(namespace, data.recall_id)
            if transition is None:
                raise NotFound(f"recall {data.recall_id!r} not found", field="recall_id")
            if data.task_id is not None and transition.task_id != data.task_id:
                raise Conflict("the recall belongs to another task", field="task_id")
            return [transition]
        assert data.task_id is not None
        found = await self.transitions.for_task(namespace, data.task_id)
        if not found and not optional:
            raise NotFound(f"no recall or episode for task {data.task_id!r}", field="task_id")
        return found

    async def _replay_or_conflict(
        self, namespace: str, done: list[Transition], fingerprint: str
    ) -> RewardRead:
        rewards = await self.rewards.get_many(namespace, [t.reward_id for t in done if t.reward_id])
        for reward in rewards.values():
            if reward.request_hash != fingerprint:
                raise Conflict(
                    "a different reward already completed this recall",
                    reward_id=reward.id,
                    field="recall_id",
                )
        first = rewards[done[0].reward_id or ""]
        return _read(first, [t.id for t in done if t.reward_id == first.id])

    async def create(self, namespace: str, data: RewardCreate) -> tuple[RewardRead, bool]:
        """(reward, created). Scores the recalls and the episodes the request reaches."""
        fingerprint = _fingerprint(data)
        episodes = await target_episodes(self.session, namespace, data)
        signals = data.signals.model_dump(exclude_none=True) if data.signals else {}
        recall: tuple[RewardRead, bool] | None = None
        if data.recall_id is not None or data.episode_id is None:
            try:
                recall = await self._reward_recalls(
                    namespace, data, fingerprint, signals, optional=bool(episodes)
                )
            except Conflict:
                # A task's recalls are completed by its first reward; later rewards of the
                # task still score its episodes. Naming the recall asks for that recall.
                if data.recall_id is not None or not episodes:
                    raise
        if not episodes:
            assert recall is not None
            return recall
        rewards, created = await score_episodes(
            self.session,
            namespace,
            episodes,
            data,
            fingerprint=fingerprint,
            signals=signals,
            now=datetime.now(UTC),
            settings=self.learning,
        )
        scores = [score(r) for r in rewards]
        if recall is not None:
            read, recall_created = recall
            return read.model_copy(update={"episodes": scores}), created or recall_created
        return _read(rewards[0], [], scores), created

    async def infer(
        self, namespace: str, task_id: str, *, success: bool, confidence: float
    ) -> list[str]:
        """Complete a task's recalls with the outcome inferred from its agent's session
        (its reward scaled by the confidence, marked inferred), until a reward is posted;
        the recalls completed."""
        data = RewardCreate(task_id=task_id, signals=Signals(task_success=success))
        signals = data.signals.model_dump(exclude_none=True) if data.signals else {}
        done = await self._reward_recalls(
            namespace,
            data,
            _fingerprint(data),
            signals,
            optional=True,
            source="inferred",
            confidence=confidence,
        )
        return done[0].completed_recalls if done is not None else []

    async def _reward_recalls(
        self,
        namespace: str,
        data: RewardCreate,
        fingerprint: str,
        signals: dict[str, Any],
        *,
        optional: bool,
        source: str | None = None,
        confidence: float = 1.0,
    ) -> tuple[RewardRead, bool] | None:
        targets = await self._targets(namespace, data, optional=optional)
        if not targets:
            return None
        done = [t for t in targets if t.status == "completed"]
        pending = [t for t in targets if t.status == "pending"]
        # A reward inferred from an agent's session gives way to a posted one, or to a
        # later inference (the user's next words).
        given = await self.rewards.get_many(namespace, [t.reward_id for t in done if t.reward_id])
        inferred = [t for t in done if getattr(given.get(t.reward_id or ""), "source", None)]
        posted = [t for t in done if t not in inferred]
        if posted and source is None:
            replay = await self._replay_or_conflict(namespace, posted, fingerprint)
            if not pending and not inferred:
                return replay, False
        if not pending and not inferred:
            return None
        scalar, components = recall_reward(value=data.value, signals=signals)
        if source is not None:
            scalar *= confidence
        now = datetime.now(UTC)
        reward_id = uuid7()
        row: dict[str, Any] = {
            "namespace": namespace,
            "id": reward_id,
            "recall_id": data.recall_id,
            "task_id": data.task_id,
            "episode_id": None,
            "value": data.value,
            "signals": signals,
            "scalar": scalar,
            "components": components,
            "spec_version": RECALL_SPEC_VERSION,
            "request_hash": fingerprint,
            "source": source,
            "created_at": now,
        }
        ids = [t.id for t in [*pending, *inferred]]
        try:
            async with self.session.begin_nested():
                await self.rewards.insert(row)
                completed = await self.transitions.complete(
                    namespace,
                    ids,
                    reward_id=reward_id,
                    reward=scalar,
                    now=now,
                    source=source,
                    replacing=[t.reward_id for t in inferred if t.reward_id],
                )
                if completed != len(ids):
                    raise _LostRace
        except _LostRace:
            # A concurrent reward completed some of them first: ours is rolled back to the
            # savepoint, and the answer is the one a second, later request gets.
            fresh = await self._reload(namespace, ids)
            return await self._replay_or_conflict(namespace, fresh, fingerprint), False
        await self.usage.lock(
            namespace, (m for t in [*pending, *inferred] for m in t.action["selected"])
        )
        for transition in pending:
            await self.usage.credit(namespace, transition.action["selected"], scalar)
        for transition in inferred:
            # Counted once already: only the difference to the reward it replaces.
            delta = scalar - (transition.reward or 0.0)
            await self.usage.credit(namespace, transition.action["selected"], delta, count=0)
        if self.learning is not None and any(
            t.policy_id != POLICY_ID for t in [*pending, *inferred]
        ):
            # A learned policy decided: its canary's rewards may now warrant a verdict.
            await enqueue(
                self.session,
                namespace,
                POLICY_CHECK,
                key="canary",
                payload={},
                settings=self.learning,
            )
        reward = Reward(**row)
        return _read(reward, ids), True

    async def _reload(self, namespace: str, ids: list[str]) -> list[Transition]:
        reloaded = []
        for tid in ids:
            transition = await self.transitions.get(namespace, tid)
            if transition is not None:
                await self.session.refresh(transition)
                reloaded.append(transition)
        return [t for t in reloaded if t.status == "completed"]

    async def list(
        self,
        namespace: str,
        *,
        recall_id: str | None,
        task_id: str | None,
        episode_id: str | None = None,
        cursor: str | None,
        limit: int,
    ) -> RewardPage:
        rows, next_cursor = await pagination.page(
            lambda key, n: self.rewards.page(
                namespace,
                recall_id=recall_id,
                task_id=task_id,
                episode_id=episode_id,
                after=key,
                limit=n,
            ),
            cursor=cursor,
            limit=limit,
        )
        completed = await self.transitions.ids_by_reward(namespace, [r.id for r in rows])
        items = [_read(r, completed[r.id]) for r in rows]
        return RewardPage(items=items, next_cursor=next_cursor)
