"""Skills per context: one procedure per language, domain, tag or feature value (or pair
of them) where the context decides the procedure (app/learning/contexts.py), and a
skill that works in one context and fails in another, specialised to the first.
Part of an evolution pass (EvolutionService); never commits."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from app.learning.contexts import ContextPlan, describe_context, in_context
from app.learning.skills import (
    EpisodeView,
    Procedure,
    contains_in_order,
    context_split,
    jaccard,
)
from app.models import Skill
from app.services.learning.skill_records import SkillRecords, actions, known_recoveries

REFINE_MARGIN = 0.05


def context_of(skill: Skill) -> dict[str, str]:
    return dict(skill.trigger.get("context") or {})


def window_of(skill: Skill, window: list[EpisodeView]) -> list[EpisodeView]:
    """The episodes a skill is measured on: those of its context (all, for a general one)."""
    context = context_of(skill)
    return [e for e in window if in_context(e, context)] if context else window


class ContextSkills(SkillRecords):
    """The context decisions of an evolution pass."""

    def _beats_base(self, proc: Procedure, base: float) -> bool:
        """Whether following the procedure beats acting without it (`base`: the success
        rate of the episodes it is for), by the lower bound of its success rate."""
        return proc.lcb >= self.settings.skill_min_lcb and self._beats(
            proc.steps, proc.lcb, proc.success_rate, base
        )

    def _extends(self, skill: Skill, proc: Procedure) -> bool:
        """Whether the procedure is the skill's steps with more that the successes share
        and need (derive's tests), and those who did them all succeeded as often at least.
        Its lower bound alone would never say so: fewer episodes did more steps."""
        steps = actions(skill)
        return (
            len(proc.steps) > len(steps)
            and contains_in_order(proc.steps, steps)
            and proc.support >= self.settings.skill_min_support
            and proc.success_rate >= skill.success_rate
        )

    def _similar_generic(self, live: list[Skill], proc: Procedure) -> Skill | None:
        """The general skill a procedure derived for its task type is a version of: one
        whose steps it extends, or the most similar (merge_similarity at least)."""
        generic = [k for k in live if not context_of(k) and k.status != "retired"]
        extended = [k for k in generic if contains_in_order(proc.steps, actions(k))]
        if extended:
            return max(extended, key=lambda k: (len(k.steps), k.lcb))
        similar = max(generic, key=lambda k: jaccard(actions(k), proc.steps), default=None)
        if similar is not None and jaccard(actions(similar), proc.steps) >= (
            self.settings.merge_similarity
        ):
            return similar
        return None

    async def _settle(self, skill: Skill, proc: Procedure, now: datetime) -> None:
        """Bring a skill to the procedure just derived for it: new steps if they do clearly
        better or extend its own, or the recoveries learned since."""
        merged = {**known_recoveries(skill), **proc.on_error}
        if tuple(actions(skill)) != proc.steps:
            if proc.lcb > skill.lcb + REFINE_MARGIN or self._extends(skill, proc):
                await self._refine(skill, proc, now, why="steps")
        elif known_recoveries(skill) != merged:
            await self._refine(skill, replace(proc, on_error=merged), now, why="recoveries")

    async def _per_context(
        self,
        namespace: str,
        task_type: str,
        live: list[Skill],
        window: list[EpisodeView],
        found: ContextPlan,
        now: datetime,
    ) -> None:
        """A skill for each context of the plan whose procedure beats its context's base
        rate; then the skills the plan replaces are superseded."""
        s = self.settings
        if not found.fields:
            return
        placed: list[Skill] = []
        for pairs, proc in sorted(found.specific.items()):
            context = dict(pairs)
            group = [e for e in window if in_context(e, context)]
            base = sum(e.success for e in group) / len(group)
            same = [k for k in live if k.status != "retired" and context_of(k) == context]
            same = [k for k in same if not k.parent_ids]  # not a specialised or composed one
            if proc.successes < s.skill_min_support or not self._beats_base(proc, base):
                placed.extend(same)
                continue
            similar = max(same, key=lambda k: jaccard(actions(k), proc.steps), default=None)
            if similar is not None:
                await self._settle(similar, proc, now)
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
                namespace, task_type, proc, now, context=context, reason=reason
            )
            live.append(child)
            placed.append(child)
        if not placed:
            return
        names = ", ".join(k.name for k in placed)
        for skill in [k for k in live if k.status != "retired" and not k.parent_ids]:
            context = context_of(skill)
            if context and set(context) == set(found.fields):
                continue
            if not context and found.general is not None:
                continue
            by = ", ".join(found.fields)
            reason = f"the procedure of {task_type or 'these tasks'} depends on {by}: {names}"
            await self._retire(skill, reason, list(skill.evidence), now, kind="superseded")

    async def _specialise(
        self,
        namespace: str,
        task_type: str,
        live: list[Skill],
        window: list[EpisodeView],
        now: datetime,
    ) -> None:
        """A general skill that works in one context and fails in another gets a child for
        the context where it works."""
        s = self.settings
        for skill in [k for k in live if k.status == "active" and not context_of(k)]:
            split = context_split(
                actions(skill),
                window,
                min_support=s.min_support,
                good_lcb=s.activate_lcb,
                bad_below=s.retire_below,
            )
            if split is None:
                continue
            key, value = split.feature
            if any(context_of(k) == {key: value} for k in live if k.status != "retired"):
                continue
            good, bad = (describe_context(dict([f])) for f in (split.feature, split.bad_feature))
            reason = (
                f"works when {good} ({split.good.successes}/{split.good.support}) and "
                f"fails when {bad} ({split.bad.successes}/{split.bad.support})"
            )
            proc = Procedure(
                steps=tuple(actions(skill)),
                on_error=known_recoveries(skill),
                support=split.good.support,
                successes=split.good.successes,
                mean_reward=split.good.mean_reward,
                lcb=split.good.lcb,
                evidence=split.good.evidence,
            )
            child = await self._create(
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
            self._event(skill, "specialised", reason, list(split.bad.evidence), now, child=child.id)
