"""Crediting learned episodes: when a later reward changes an episode's score, bring
the pattern counters and skill statistics counted for it in line, exactly. Runs in
the job's session; never commits."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.models import EpisodeLearning
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.patterns import PatternRepository
from app.repositories.skills import SkillRepository
from app.services.learning.episodes import judged, refresh
from app.services.learning.skill_credit import recredit_skill


class CreditService:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.episodes = EpisodeLearningRepository(session)
        self.patterns = PatternRepository(session)
        self.skills = SkillRepository(session)

    async def credit(self, namespace: str, episode_ids: Sequence[str]) -> dict[str, Any]:
        """Bring learned episodes in line with their rewards: only the difference between
        what was counted and what is due is applied, so crediting twice changes nothing."""
        learned = await self.episodes.learned(namespace, episode_ids)
        rows = {r.id: r for r in await self.episodes.completed(namespace, list(learned))}
        rewards = await self.episodes.rewards(namespace, list(learned))
        changed: list[EpisodeLearning] = []
        deltas: dict[str, tuple[int, float]] = {}
        skill_ids = sorted({sid for record in learned.values() for sid in record.skill_ids})
        skills = await self.skills.named(namespace, skill_ids, lock=True)
        for eid, record in learned.items():
            row = rows.get(eid)
            if row is None:
                continue
            success, reward = judged(row, rewards.get(eid, []), record.reward)
            d_success = int(success) - int(record.success)
            d_reward = reward - record.reward
            if d_success == 0 and abs(d_reward) < 1e-12:
                continue
            for pid in record.pattern_ids:
                s, r = deltas.get(pid, (0, 0.0))
                deltas[pid] = (s + d_success, r + d_reward)
            for sid in record.skill_ids:
                if sid in skills:
                    recredit_skill(skills[sid], eid, d_success=d_success, d_reward=d_reward)
            record.success, record.reward = success, reward
            changed.append(record)
        patterns = await self.patterns.counters(namespace, sorted(deltas), lock=True)
        for pid, (d_success, d_reward) in deltas.items():
            counters = patterns.get(pid)
            if counters is not None:
                counters["successes"] += d_success
                counters["reward_sum"] += d_reward
                counters["updated_at"] = datetime.now(UTC)
                refresh(counters)
        await self.patterns.update_counters(list(patterns.values()))
        await self.session.flush()
        return {
            "credited": len(changed),
            "task_types": sorted({r.task_type for r in changed}),
        }
