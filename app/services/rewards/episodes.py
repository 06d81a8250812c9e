"""Rewards for episodes: each scored by spec episode-v1 against its task type's recent
episodes, kept (several per episode), and handed to learning by a credit job."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.errors import Conflict, NotFound
from app.core.ids import uuid7
from app.learning.episode_reward import EPISODE_SPEC_VERSION, episode_reward
from app.models import Episode, Reward
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.episodes import EpisodeRepository
from app.repositories.rewards import RewardRepository
from app.schemas.recall import EpisodeScore, RewardCreate
from app.services.learning.episodes import baseline_of, facts_of
from app.services.operations.jobs import CREDIT, enqueue


async def target_episodes(
    session: AsyncSession, namespace: str, data: RewardCreate
) -> list[Episode]:
    """The episodes a reward scores: the one named, else the task's (maybe none)."""
    if data.episode_id is not None:
        episode = await session.get(Episode, (namespace, data.episode_id))
        if episode is None:
            raise NotFound(f"episode {data.episode_id!r} not found", field="episode_id")
        if data.task_id is not None and episode.task_id != data.task_id:
            raise Conflict("the episode belongs to another task", field="task_id")
        return [episode]
    if data.task_id is None or data.recall_id is not None:
        return []
    return await EpisodeRepository(session).of_task(namespace, data.task_id)


def _signals_for(episode: Episode, signals: dict[str, Any], *, whole_task: bool) -> dict[str, Any]:
    """The signals a task's reward gives one of its episodes. An agent's turn that failed
    by its own session (a failing check, the user's complaint in the next prompt) keeps
    that failure when the task later succeeded: the task's success is where it ended, after
    a later turn put it right, not what this turn did."""
    if (
        whole_task
        and signals.get("task_success") is True
        and episode.outcome == "failure"
        and episode.outcome_source == "inferred"
    ):
        return {k: v for k, v in signals.items() if k != "task_success"}
    return signals


def score(reward: Reward) -> EpisodeScore:
    return EpisodeScore(
        reward_id=reward.id,
        episode_id=reward.episode_id or "",
        scalar=reward.scalar,
        components=reward.components,
        spec_version=reward.spec_version,
    )


async def score_episodes(
    session: AsyncSession,
    namespace: str,
    episodes: list[Episode],
    data: RewardCreate,
    *,
    fingerprint: str,
    signals: dict[str, Any],
    now: datetime,
    settings: Learning,
) -> tuple[list[Reward], bool]:
    """One reward row per episode (the same request again reuses its rows)."""
    repo = EpisodeLearningRepository(session)
    existing = await repo.rewards(namespace, [e.id for e in episodes])
    rewards: list[Reward] = []
    new: list[Reward] = []
    baselines: dict[str, Any] = {}
    for episode in episodes:
        same = [r for r in existing.get(episode.id, []) if r.request_hash == fingerprint]
        if same:
            rewards.append(same[0])
            continue
        task_type = episode.task_type or ""
        own = _signals_for(episode, signals, whole_task=data.episode_id is None)
        if task_type not in baselines:
            rows = await repo.recent_sizes(namespace, episode.task_type, limit=settings.window)
            baselines[task_type] = baseline_of(rows)
        scalar, components = episode_reward(
            facts_of(episode),
            baseline=baselines[task_type],
            value=data.value,
            signals=own,
            min_baseline=settings.min_baseline,
        )
        reward = Reward(
            namespace=namespace,
            id=uuid7(),
            recall_id=None,
            task_id=episode.task_id,
            episode_id=episode.id,
            value=data.value,
            signals=own,
            scalar=scalar,
            components=components,
            spec_version=EPISODE_SPEC_VERSION,
            request_hash=fingerprint,
            created_at=now,
        )
        new.append(reward)
        rewards.append(reward)
    if new:
        reward_rows = RewardRepository(session)
        for reward in new:
            await reward_rows.insert(
                {c.name: getattr(reward, c.key) for c in Reward.__mapper__.columns}
            )
        await enqueue(
            session,
            namespace,
            CREDIT,
            key="credit",
            payload={"episode_ids": sorted({r.episode_id or "" for r in new})},
            settings=settings,
        )
    return rewards, bool(new)
