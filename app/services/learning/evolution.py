"""Skill evolution: create, activate, refine, specialise, merge, compose and retire
skills from a bounded window of each task type's latest episodes, one per context where
the context decides the procedure (context_skills.py); keep the procedure and failure
patterns current (derived_patterns.py). Every change is a skill event
with its reason and evidence.
Runs in the job's session; never commits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.learning.contexts import plan
from app.learning.mining import context_fields
from app.learning.reflection import action_key
from app.learning.skills import (
    EpisodeView,
    Procedure,
    jaccard,
    measure,
    retire_reason,
    unneeded,
)
from app.learning.steps import learning_steps, merge_turns
from app.models import Pattern, Skill
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.patterns import PatternRepository
from app.services.learning.context_skills import ContextSkills, context_of, window_of
from app.services.learning.derived_patterns import save_procedure_pattern, update_failure_patterns
from app.services.learning.kind_merges import join_kind
from app.services.learning.lessons import AGENTS
from app.services.learning.skill_records import actions

RECOVERY_SUPPORT = 2


class EvolutionService(ContextSkills):
    """The decisions of one evolution pass (SkillRecords writes them down)."""

    def __init__(self, session: AsyncSession, *, settings: Learning) -> None:
        super().__init__(session, settings=settings)
        self.episodes = EpisodeLearningRepository(session)
        self.patterns = PatternRepository(session)
        self._from_agents = False

    async def evolve(self, namespace: str, task_types: list[str]) -> list[dict[str, Any]]:
        """One evolution pass over these task types; returns the changes made."""
        await self.skills.lock_evolution(namespace)  # before reading anything
        now = datetime.now(UTC)
        for task_type in sorted(set(task_types)):
            await self._evolve_type(namespace, task_type, now)
            await update_failure_patterns(
                self.session,
                namespace,
                task_type=task_type,
                now=now,
                min_support=self.settings.min_support,
            )
        await self.skills.insert_events(self._events)
        await self.session.flush()
        return self.changes

    async def _window(self, namespace: str, task_type: str, retired: set[str]) -> list[EpisodeView]:
        """The task type's recent episodes as views (`retired`: its retired skills' ids)."""
        since = await self.skills.last_retirement(namespace, task_type)
        retired_now = [k.retired_at for k in self._retired if k.task_type == task_type]
        if retired_now and retired_now[-1] is not None:
            # What this pass just retired is not in the database yet.
            since = max(since or retired_now[-1], retired_now[-1])
        rows = await self.episodes.window(
            namespace, task_type or None, since=None, limit=self.settings.window
        )
        self._from_agents = 2 * sum(r.agent_id in AGENTS for r in rows) > len(rows)
        if since is not None:
            # A retirement restarts the window: the procedure may have changed. An agents'
            # kind keeps the episodes before it that followed no retired skill (its
            # procedure did not change; a wrong skill misled only those who followed it).
            rows = [
                r
                for r in rows
                if r.created_at > since
                or (self._from_agents and not retired.intersection(r.skills_applied))
            ]
        learned = await self.episodes.learned(namespace, [r.id for r in rows])
        views = []
        for row in rows:
            record = learned.get(row.id)
            success = record.success if record else row.outcome == "success"
            reward = record.reward if record else float(success)
            context = context_fields(
                domain=row.domain, language=row.language, tags=row.tags, features=row.features
            )
            steps = learning_steps(row.steps)
            views.append(
                EpisodeView(
                    id=row.id,
                    actions=tuple(action_key(s) for s in steps),
                    statuses=tuple(s.get("status", "ok") for s in steps),
                    success=success,
                    reward=reward,
                    context=tuple(context.items()),
                    skills=tuple(row.skills_applied),
                )
            )
        # An agent's consecutive turns at one task are one episode of it.
        tasks = [r.task_id if r.agent_id in AGENTS else None for r in rows]
        return merge_turns(views, tasks, [r.outcome for r in rows])

    async def _evolve_type(self, namespace: str, task_type: str, now: datetime) -> None:
        general = self.settings
        try:
            await self._evolve_one(namespace, task_type, now)
        finally:
            self.settings = general
            self._counterfactual = None

    async def _evolve_one(self, namespace: str, task_type: str, now: datetime) -> None:
        s = self.settings
        skills = await self.skills.of_type(namespace, task_type)
        live = [k for k in skills if k.status != "retired"]
        for skill in live:
            reason = retire_reason(
                skill.recent, after_uses=s.retire_after_uses, below=s.retire_below
            )
            if reason is not None:
                await self._retire(skill, reason, [r["episode_id"] for r in skill.recent], now)
        live = [k for k in live if k.status != "retired"]
        retired = {k.id for k in skills if k.status == "retired"}
        window = await self._window(namespace, task_type, retired)
        self._counterfactual = window if self._from_agents else None
        if self._from_agents:
            joined = await join_kind(
                self.session, namespace, task_type, window, now, share=s.step_share
            )
            if joined is not None:
                for skill in live:
                    why = f"its kind of work joined {joined}"
                    await self._retire(skill, why, list(skill.evidence), now, kind="superseded")
                return
            s = self.settings = s.model_copy(
                update={"skill_min_support": s.agent_skill_min_support}
            )
        # This task type's base rate, before a candidate is judged against it.
        self._base_rate = sum(e.success for e in window) / len(window) if window else 0.0
        for skill in live:
            self._measure(skill, measure(actions(skill), window_of(skill, window)), now)
            if skill.status == "candidate" and self._activatable(skill):
                await self._activate(skill, now)
            await self._prune(skill, window, now)
        found = plan(
            window,
            min_support=s.skill_min_support,
            step_share=s.step_share,
            fixes=await self._fixes(namespace, task_type),
            detect_support=s.min_support,
        )
        proc = found.general
        if proc is not None:
            await save_procedure_pattern(
                self.session, namespace, task_type=task_type, procedure=proc, now=now
            )
        if (
            proc is not None
            and proc.support >= s.skill_min_support
            and self._beats_base(proc, self._base_rate)
        ):
            generic = [k for k in live if not context_of(k)]
            similar = self._similar_generic(live, proc)
            if similar is not None:
                await self._settle(similar, proc, now)
            elif not generic:
                live.append(await self._create(namespace, task_type, proc, now))
        await self._per_context(namespace, task_type, live, window, found, now)
        await self._merge(live, now)
        await self._specialise(namespace, task_type, live, window, now)
        await self._compose(namespace, task_type, live, now)

    async def _fixes(self, namespace: str, task_type: str) -> dict[str, str]:
        """For each failing action, what recovered it: the mined recovery pattern seen most
        often in successful episodes (at least RECOVERY_SUPPORT of them)."""
        best: dict[str, Pattern] = {}
        for p in await self.patterns.of_kinds(namespace, task_type, ["recovery"]):
            failed = p.items[0]
            if p.successes >= RECOVERY_SUPPORT:
                if failed not in best or p.successes > best[failed].successes:
                    best[failed] = p
        return {failed: p.items[1] for failed, p in best.items()}

    async def _prune(self, skill: Skill, window: list[EpisodeView], now: datetime) -> None:
        """Drop a step the skill's followers succeeded without."""
        followers = [e for e in window if skill.id in e.skills or skill.name in e.skills]
        found = unneeded(actions(skill), followers, min_support=self.settings.min_support)
        if not found or len(skill.steps) < 2:
            return
        step, without = found[0]
        before = skill.steps
        skill.steps = [s for s in skill.steps if s["action"] != step]
        skill.version += 1
        self._measure(skill, measure(actions(skill), window), now)
        if skill.status == "active":
            await self._publish(skill, now)
        self._event(
            skill,
            "refined",
            f"step {step} was not needed: {without.successes} of {without.support} episodes "
            "that followed the skill without it succeeded",
            list(without.evidence),
            now,
            before=before,
            after=skill.steps,
        )

    async def _merge(self, live: list[Skill], now: datetime) -> None:
        """Near-duplicates (same trigger, steps similar enough) become one: the better one
        keeps the other's statistics."""
        alive = [k for k in live if k.status != "retired"]
        for i, a in enumerate(alive):
            for b in alive[i + 1 :]:
                if a.status == "retired" or b.status == "retired":
                    continue
                if context_of(a) != context_of(b):
                    continue
                if jaccard(actions(a), actions(b)) < self.settings.merge_similarity:
                    continue
                keep, drop = (
                    (a, b)
                    if (a.lcb, -a.created_at.timestamp()) >= (b.lcb, -b.created_at.timestamp())
                    else (b, a)
                )
                keep.uses += drop.uses
                keep.successes += drop.successes
                keep.reward_sum += drop.reward_sum
                keep.parent_ids = sorted({*keep.parent_ids, drop.id})
                self._event(
                    keep,
                    "merged",
                    f"absorbed the near-duplicate {drop.name}",
                    list(drop.evidence),
                    now,
                    absorbed=drop.id,
                )
                await self._retire(drop, f"merged into {keep.name}", list(drop.evidence), now)

    async def _compose(
        self, namespace: str, task_type: str, live: list[Skill], now: datetime
    ) -> None:
        """Skills that reliably follow each other in successful episodes become one."""
        s = self.settings
        chains = await self.patterns.of_kinds(namespace, task_type, ["skill_chain"])
        for chain in chains:
            if chain.support < s.min_support or chain.lcb < s.activate_lcb:
                continue
            parents = await self.skills.named(namespace, chain.items)
            if len(chain.items) != 2 or any(p not in parents for p in chain.items):
                continue
            first, second = parents[chain.items[0]], parents[chain.items[1]]
            if first.status != "active" or second.status != "active":
                continue
            ids = [first.id, second.id]
            if any(k.parent_ids == ids and k.status != "retired" for k in live):
                continue
            proc = Procedure(
                steps=(*actions(first), *actions(second)),
                on_error={
                    st["action"]: st["on_error"]
                    for st in [*first.steps, *second.steps]
                    if st.get("on_error")
                },
                support=chain.support,
                successes=chain.successes,
                mean_reward=chain.mean_reward,
                lcb=chain.lcb,
                evidence=tuple(chain.evidence),
            )
            reason = (
                f"{first.name} then {second.name} succeeded together in {chain.successes} of "
                f"{chain.support} episodes (lower bound {chain.lcb:.2f})"
            )
            live.append(
                await self._create(
                    namespace, task_type, proc, now, parents=ids, kind="composed", reason=reason
                )
            )
