"""Learning from episodes: reflect on each, count its patterns, credit the skills it
applied (learning_credit.py corrects all of it when a later reward changes the
episode's score). Runs in the job's session; never commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.ids import uuid7
from app.db.backends import backend_of
from app.learning.episode_reward import Baseline, EpisodeFacts, aggregate, episode_reward, median
from app.learning.mining import context_features, episode_patterns, pattern_id, wilson_lcb
from app.learning.reflection import reflect
from app.learning.steps import actions_of, learning_steps, uses_skills
from app.models import Reward
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.memories import MemoryRepository
from app.repositories.patterns import PatternRepository
from app.repositories.skills import SkillRepository
from app.services.learning.lessons import AGENTS, KindLessons
from app.services.learning.references import Reference, References
from app.services.learning.skill_credit import TaskCredits, credit_skill
from app.services.learning.skill_rules import actions
from app.services.memories.rows import new_memory

MAX_EVIDENCE = 20


def duration_ms(row: Any) -> float | None:
    if row.started_at is not None and row.ended_at is not None:
        return max(0.0, float((row.ended_at - row.started_at).total_seconds()) * 1000)
    return float(row.total_latency_ms) if row.total_latency_ms else None


def baseline_of(rows: Sequence[Any]) -> Baseline:
    """Medians of steps and duration over a task type's recent episodes."""
    durations = [d for d in (duration_ms(r) for r in rows) if d is not None]
    return Baseline(
        episodes=len(rows),
        median_steps=median([float(r.step_count) for r in rows]),
        median_duration_ms=median(durations),
    )


def facts_of(row: Any) -> EpisodeFacts:
    return EpisodeFacts(
        outcome=row.outcome, progress=row.progress, steps=row.steps, duration_ms=duration_ms(row)
    )


def judged(row: Any, rewards: Sequence[Reward], implicit: float) -> tuple[bool, float]:
    """(success, reward) that learning takes from an episode: the outcome unless a reward
    reported task_success; the mean of its rewards, else its own score under the spec."""
    success = row.outcome == "success"
    for reward in rewards:
        if reward.signals.get("task_success") is not None:
            success = bool(reward.signals["task_success"])
    mean = aggregate([r.scalar for r in rewards])
    return success, implicit if mean is None else mean


def _tells_success(rewards: Sequence[Reward]) -> bool:
    return any(r.signals.get("task_success") is not None for r in rewards)


def refresh(row: dict[str, Any]) -> None:
    """Recompute a pattern's rates from its counters."""
    support, successes = row["support"], row["successes"]
    row["success_rate"] = successes / support if support else 0.0
    row["mean_reward"] = row["reward_sum"] / row["reward_count"] if row["reward_count"] else None
    row["lcb"] = wilson_lcb(successes, support)


@dataclass
class _Counts:
    kind: str
    task_type: str
    signature: str
    items: list[str]
    support: int = 0
    successes: int = 0
    reward_sum: float = 0.0
    evidence: list[str] = field(default_factory=list)


class LearningService:
    def __init__(
        self, session: AsyncSession, *, settings: Learning, references: References | None = None
    ) -> None:
        self.session = session
        self.settings = settings
        self.references = references if references is not None else References()
        self.episodes = EpisodeLearningRepository(session)
        self.patterns = PatternRepository(session)
        self.skills = SkillRepository(session)
        self.memories = MemoryRepository(session)

    async def _references(self, namespace: str, task_type: str) -> Reference:
        """The task type's baseline and what a successful run of it looks like (its active
        skill's steps, else the shortest recent successful episode)."""
        found = self.references.get(namespace, task_type)
        if found is None:
            found = await self._read_references(namespace, task_type)
            self.references.keep(namespace, task_type, found)
        return found

    async def _read_references(
        self, namespace: str, task_type: str
    ) -> tuple[Baseline, list[str] | None]:
        rows = await self.episodes.recent_sizes(
            namespace, task_type or None, limit=self.settings.window
        )
        for skill in await self.skills.of_type(namespace, task_type):
            if skill.status == "active" and not skill.trigger.get("context"):
                return baseline_of(rows), actions(skill)
        best = await self.episodes.shortest_success(namespace, task_type or None, among=50)
        reference = actions_of(best) if best is not None else None
        return baseline_of(rows), reference

    async def learn(self, namespace: str, episode_ids: Sequence[str]) -> dict[str, Any]:
        """Take in completed episodes not learned yet (learning one twice changes nothing)."""
        # One learner at a time per namespace (a job and a pass may take the same episode):
        # what is learned is read after the lock, so the second sees the first's.
        await backend_of(self.session).transaction_lock(self.session, f"learn:{namespace}")
        rows = await self.episodes.completed(namespace, episode_ids)
        done = await self.episodes.learned(namespace, [r.id for r in rows])
        rows = [r for r in rows if r.id not in done]
        if not rows:
            return {"learned": 0, "task_types": []}
        rewards = await self.episodes.rewards(namespace, [r.id for r in rows])
        refs = {}
        for task_type in sorted({r.task_type or "" for r in rows}):
            refs[task_type] = await self._references(namespace, task_type)
        names = sorted({name for r in rows for name in r.skills_applied})
        skills = await self.skills.named(namespace, names, lock=True)
        agents = [r.task_id for r in rows if r.agent_id in AGENTS and r.skills_applied]
        tasks = TaskCredits(await self.episodes.credited_by_tasks(namespace, agents))
        counts: dict[str, _Counts] = {}
        memories: list[dict[str, Any]] = []
        learned: list[dict[str, Any]] = []
        consolidated: set[str] = set()
        now = datetime.now(UTC)
        for row in rows:
            task_type = row.task_type or ""
            baseline, reference = refs[task_type]
            implicit, _ = episode_reward(
                facts_of(row),
                baseline=baseline,
                value=None,
                signals={},
                min_baseline=self.settings.min_baseline,
            )
            if row.outcome_source == "inferred":
                # An outcome inferred from the session counts as much as it is sure.
                implicit *= row.outcome_confidence or 0.0
            success, reward = judged(row, rewards.get(row.id, []), implicit)
            context = context_features(
                domain=row.domain, language=row.language, tags=row.tags, features=row.features
            )
            applied = [skills[n] for n in dict.fromkeys(row.skills_applied) if n in skills]
            steps = learning_steps(row.steps)
            found = episode_patterns(
                steps=steps, context=context, skills_applied=[s.id for s in applied]
            )
            pids = [pattern_id(f.kind, task_type, f.signature) for f in found]
            for f, pid in zip(found, pids, strict=True):
                c = counts.get(pid)
                if c is None:
                    c = counts[pid] = _Counts(f.kind, task_type, f.signature, list(f.items))
                c.support += 1
                c.successes += int(success)
                c.reward_sum += reward
                c.evidence.append(row.id)
            if row.agent_id in AGENTS:  # a use per task, by a turn that acted and was judged
                told = _tells_success(rewards.get(row.id, []))
                acted = uses_skills(steps, row.outcome, told)
                applied = tasks.take(row.task_id, applied) if acted else []
            for skill in applied:
                credit_skill(skill, row.id, success=success, reward=reward, keep=self._keep)
            memory_id: str | None = None
            if row.agent_id in AGENTS:
                consolidated.add(task_type)  # one memory of lessons per kind, below
            else:
                memory_id = uuid7()
                memories.append(self._reflection(namespace, memory_id, row, reference, reward, now))
            learned.append(
                {
                    "namespace": namespace,
                    "episode_id": row.id,
                    "task_type": task_type,
                    "pattern_ids": pids,
                    "skill_ids": [s.id for s in applied],
                    "success": success,
                    "reward": reward,
                    "reflection_id": memory_id,
                    "learned_at": now,
                }
            )
        await self._count(namespace, counts, now)
        await self.memories.insert_many(memories)
        await self.episodes.insert_many(learned)
        lessons = KindLessons(self.session)
        kept = [await lessons.update(namespace, t, now=now) for t in sorted(consolidated)]
        return {
            "learned": len(rows),
            "reflections": [m["id"] for m in memories] + [k for k in kept if k],
            "task_types": sorted(refs),
        }

    @property
    def _keep(self) -> int:
        return max(self.settings.retire_after_uses * 2, 20)

    def _reflection(
        self,
        namespace: str,
        memory_id: str,
        row: Any,
        reference: list[str] | None,
        reward: float,
        now: datetime,
    ) -> dict[str, Any]:
        found = reflect(
            steps=learning_steps(row.steps), outcome=row.outcome, reward=reward, reference=reference
        )
        content = found.content(task_type=row.task_type)
        # The episode id in the scope lets a scope filter find an episode's reflection.
        scope = {"level": "global", "episode_id": row.id}
        if row.task_type:
            scope["task_type"] = row.task_type
        memory = new_memory(
            namespace,
            memory_id,
            content=content,
            confidence=0.6,
            sensitivity="low",
            criticality=0.3,
            source_refs=[f"episode:{row.id}"],
            metadata={
                "episode_id": row.id,
                "task_type": row.task_type,
                "outcome": row.outcome,
                "reward": reward,
                "successes": found.successes,
                "improvements": found.improvements,
                "insights": found.insights,
            },
            now=now,
        )
        return memory | {"type": "reflection", "scope": scope}

    async def _count(self, namespace: str, counts: dict[str, _Counts], now: datetime) -> None:
        """Add this batch's counts to the patterns' counters: one read, one executemany
        of updates and one of inserts, however many patterns the batch touched.

        The counters are read for update (see counters_for_update), so that two workers
        adding to the same ones take turns instead of one overwriting the other's counts."""
        fresh = {
            pid: {
                "namespace": namespace,
                "id": pid,
                "kind": c.kind,
                "task_type": c.task_type,
                "signature": c.signature,
                "items": c.items,
                "support": 0,
                "successes": 0,
                "reward_sum": 0.0,
                "reward_count": 0,
                "success_rate": 0.0,
                "mean_reward": None,
                "lcb": 0.0,
                "evidence": [],
                "created_at": now,
                "updated_at": now,
            }
            for pid, c in counts.items()
        }
        existing = await self.patterns.counters_for_update(namespace, fresh)
        changed = []
        for pid, c in counts.items():
            row = existing[pid]
            changed.append(row)
            row["support"] += c.support
            row["successes"] += c.successes
            row["reward_sum"] += c.reward_sum
            row["reward_count"] += c.support
            row["evidence"] = [*row["evidence"], *c.evidence][-MAX_EVIDENCE:]
            row["updated_at"] = now
            refresh(row)
        await self.patterns.update_counters(changed)
