"""Skill evolution: one pass over a namespace's task types that creates, activates,
refines, specialises, merges, composes and retires skills from a bounded window of each
type's latest episodes, one skill per context where the context decides the procedure;
it keeps the procedure and failure patterns current. Read top to bottom: `_evolve_type`
is the order of the steps. The decisions are pure functions (skill_rules.py); the
ledger (skill_ledger.py) writes each change with its reason and evidence.
Runs in the job's session; never commits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.learning.contexts import ContextPlan, describe_context, in_context, plan
from app.learning.skills import EpisodeView, Procedure, jaccard, measure, retire_reason, unneeded
from app.models import Skill
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.patterns import PatternRepository
from app.services.learning.derived_patterns import save_procedure_pattern, update_failure_patterns
from app.services.learning.kind_merges import join_kind
from app.services.learning.skill_ledger import SkillLedger
from app.services.learning.skill_rules import (
    Judge,
    actions,
    composition,
    context_of,
    fixes,
    merge_order,
    mergeable,
    settled,
    similar_generic,
    specialisation,
    superseded_by,
    window_of,
)
from app.services.learning.skill_window import read_window


class EvolutionPass:
    """One evolution pass; `evolve` returns the changes it made."""

    def __init__(self, session: AsyncSession, *, settings: Learning) -> None:
        self.session = session
        self.settings = settings
        self.ledger = SkillLedger(session, settings=settings)
        self.episodes = EpisodeLearningRepository(session)
        self.patterns = PatternRepository(session)

    async def evolve(self, namespace: str, task_types: list[str]) -> list[dict[str, Any]]:
        await self.ledger.skills.lock_evolution(namespace)  # before reading anything
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
        await self.ledger.save()
        return self.ledger.changes

    async def _evolve_type(self, namespace: str, task_type: str, now: datetime) -> None:
        s, ledger = self.settings, self.ledger
        skills = await ledger.skills.of_type(namespace, task_type)
        live = [k for k in skills if k.status != "retired"]
        # 1. Skills whose recent uses failed too often retire.
        for skill in live:
            reason = retire_reason(
                skill.recent, after_uses=s.retire_after_uses, below=s.retire_below
            )
            if reason is not None:
                await ledger.retire(skill, reason, [r["episode_id"] for r in skill.recent], now)
        live = [k for k in live if k.status != "retired"]
        retired = {k.id for k in skills if k.status == "retired"}
        window = await read_window(
            self.episodes,
            ledger.skills,
            namespace,
            task_type,
            retired=retired,
            retired_now=ledger.retired,
            settings=s,
        )
        episodes = window.episodes
        # 2. An agents' kind of work that joined another hands its skills over to it.
        if window.from_agents:
            joined = await join_kind(
                self.session, namespace, task_type, episodes, now, share=s.step_share
            )
            if joined is not None:
                for skill in live:
                    why = f"its kind of work joined {joined}"
                    await ledger.retire(skill, why, list(skill.evidence), now, kind="superseded")
                return
            s = s.model_copy(update={"skill_min_support": s.agent_skill_min_support})
        base_rate = sum(e.success for e in episodes) / len(episodes) if episodes else 0.0
        judge = Judge(s, base_rate, episodes if window.from_agents else None)
        # 3. Every live skill measured on the window: a candidate that now does well
        # enough is handed out; a step its followers succeeded without is dropped.
        for skill in live:
            ledger.measure(skill, measure(actions(skill), window_of(skill, episodes)), now)
            if skill.status == "candidate" and judge.activatable(skill):
                await ledger.activate(skill, now)
            await self._prune(skill, episodes, s, now)
        # 4. The procedure the window shows, per context where the context decides it.
        recoveries = await self.patterns.of_kinds(namespace, task_type, ["recovery"])
        found = plan(
            episodes,
            min_support=s.skill_min_support,
            step_share=s.step_share,
            habit_share=s.habit_share,
            fixes=fixes(recoveries),
            detect_support=s.min_support,
        )
        proc = found.general
        if proc is not None:
            await save_procedure_pattern(
                self.session, namespace, task_type=task_type, procedure=proc, now=now
            )
        if proc is not None and judge.worth_a_skill(proc, base_rate):
            similar = similar_generic(live, proc, s)
            if similar is not None:
                await self._settle(similar, proc, s, now)
            elif not [k for k in live if not context_of(k)]:
                live.append(await self._create(judge, namespace, task_type, proc, now))
        await self._per_context(judge, namespace, task_type, live, episodes, found, now)
        # 5. Near-duplicates merge; a skill that fails in one context is specialised to
        # the other; skills that follow each other become one.
        alive = [k for k in live if k.status != "retired"]
        for i, a in enumerate(alive):
            for b in alive[i + 1 :]:
                if mergeable(a, b, s):
                    await ledger.merge(*merge_order(a, b), now)
        await self._specialise(judge, namespace, task_type, live, episodes, now)
        await self._compose(judge, namespace, task_type, live, now)

    async def _create(
        self,
        judge: Judge,
        namespace: str,
        task_type: str,
        proc: Procedure,
        now: datetime,
        **how: Any,
    ) -> Skill:
        skill = await self.ledger.create(namespace, task_type, proc, now, **how)
        if judge.activatable(skill):
            await self.ledger.activate(skill, now)
        return skill

    async def _settle(self, skill: Skill, proc: Procedure, s: Learning, now: datetime) -> None:
        change = settled(skill, proc, s)
        if change is not None:
            await self.ledger.refine(skill, change[0], now, why=change[1])

    async def _prune(
        self, skill: Skill, window: list[EpisodeView], s: Learning, now: datetime
    ) -> None:
        followers = [e for e in window if skill.id in e.skills or skill.name in e.skills]
        found = unneeded(actions(skill), followers, min_support=s.min_support)
        if not found or len(actions(skill)) < 2:
            return
        step, without = found[0]
        measured = measure([a for a in actions(skill) if a != step], window)
        await self.ledger.drop_step(skill, step, without, measured, now)

    async def _per_context(
        self,
        judge: Judge,
        namespace: str,
        task_type: str,
        live: list[Skill],
        window: list[EpisodeView],
        found: ContextPlan,
        now: datetime,
    ) -> None:
        """A skill for each context of the plan whose procedure beats its context's base
        rate; then the skills the plan replaces are superseded."""
        if not found.fields:
            return
        placed: list[Skill] = []
        for pairs, proc in sorted(found.specific.items()):
            context = dict(pairs)
            group = [e for e in window if in_context(e, context)]
            base = sum(e.success for e in group) / len(group)
            same = [k for k in live if k.status != "retired" and context_of(k) == context]
            same = [k for k in same if not k.parent_ids]  # not a specialised or composed one
            if proc.successes < judge.settings.skill_min_support or not judge.beats_base(
                proc, base
            ):
                placed.extend(same)
                continue
            similar = max(same, key=lambda k: jaccard(actions(k), proc.steps), default=None)
            if similar is not None:
                await self._settle(similar, proc, judge.settings, now)
                placed.append(similar)
                continue
            others = [describe_context(dict(p)) for p in found.specific if p != pairs]
            reason = (
                f"where {describe_context(context)}, {proc.successes} of {proc.support} recent "
                f"episodes that performed these steps in order succeeded (lower bound "
                f"{proc.lcb:.2f}); the procedure differs where "
                + ("; ".join(others) if others else "the context is another")
            )
            child = await self._create(
                judge, namespace, task_type, proc, now, context=context, reason=reason
            )
            live.append(child)
            placed.append(child)
        if not placed:
            return
        names = ", ".join(k.name for k in placed)
        for skill in [k for k in live if k.status != "retired" and not k.parent_ids]:
            if superseded_by(skill, found):
                by = ", ".join(found.fields)
                reason = f"the procedure of {task_type or 'these tasks'} depends on {by}: {names}"
                await self.ledger.retire(
                    skill, reason, list(skill.evidence), now, kind="superseded"
                )

    async def _specialise(
        self,
        judge: Judge,
        namespace: str,
        task_type: str,
        live: list[Skill],
        window: list[EpisodeView],
        now: datetime,
    ) -> None:
        for skill in [k for k in live if k.status == "active" and not context_of(k)]:
            found = specialisation(skill, window, judge.settings)
            if found is None:
                continue
            proc, split = found
            key, value = split.feature
            if any(context_of(k) == {key: value} for k in live if k.status != "retired"):
                continue
            good, bad = (describe_context(dict([f])) for f in (split.feature, split.bad_feature))
            reason = (
                f"works when {good} ({split.good.successes}/{split.good.support}) and "
                f"fails when {bad} ({split.bad.successes}/{split.bad.support})"
            )
            child = await self._create(
                judge,
                namespace,
                task_type,
                proc,
                now,
                context={key: value},
                parents=[skill.id],
                kind="specialised",
                reason=reason,
            )
            live.append(child)
            self.ledger.event(
                skill, "specialised", reason, list(split.bad.evidence), now, child=child.id
            )

    async def _compose(
        self, judge: Judge, namespace: str, task_type: str, live: list[Skill], now: datetime
    ) -> None:
        s = judge.settings
        for chain in await self.patterns.of_kinds(namespace, task_type, ["skill_chain"]):
            if chain.support < s.min_support or chain.lcb < s.activate_lcb:
                continue
            parents = await self.ledger.skills.named(namespace, chain.items)
            if len(chain.items) != 2 or any(p not in parents for p in chain.items):
                continue
            first, second = parents[chain.items[0]], parents[chain.items[1]]
            if first.status != "active" or second.status != "active":
                continue
            ids = [first.id, second.id]
            if any(k.parent_ids == ids and k.status != "retired" for k in live):
                continue
            reason = (
                f"{first.name} then {second.name} succeeded together in {chain.successes} of "
                f"{chain.support} episodes (lower bound {chain.lcb:.2f})"
            )
            proc = composition(first, second, chain)
            live.append(
                await self._create(
                    judge,
                    namespace,
                    task_type,
                    proc,
                    now,
                    parents=ids,
                    kind="composed",
                    reason=reason,
                )
            )
