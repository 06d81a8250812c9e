"""Recording skill changes: new skills, versions, activation, retirement, the memory
that lets recall hand a skill out, and the event that explains each change. The
decisions are EvolutionService's; this is how they are written down. Never commits."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.ids import uuid7
from app.learning.contexts import context_name, describe_context
from app.learning.skills import EpisodeView, Procedure, contains_in_order
from app.models import Skill
from app.repositories.memories import MemoryRepository
from app.repositories.skills import SkillRepository
from app.services.memories.rows import new_memory

AGENT_MARGIN = 0.1  # of success rate, by which an agents' kind's skill beats going without


def known_recoveries(skill: Skill) -> dict[str, str]:
    return {s["action"]: s["on_error"] for s in skill.steps if s.get("on_error")}


def skill_steps(procedure: Procedure) -> list[dict[str, Any]]:
    return [{"action": a, "on_error": procedure.on_error.get(a)} for a in procedure.steps]


def actions(skill: Skill) -> list[str]:
    return [s["action"] for s in skill.steps]


def describe(skill: Skill) -> str:
    """The skill as a memory's text: what recall hands to the next agent."""
    if any(is_command(s["action"]) for s in skill.steps):
        return describe_commands(skill)
    parts = []
    for i, step in enumerate(skill.steps, 1):
        fix = f" (if it fails: {step['on_error']})" if step.get("on_error") else ""
        parts.append(f"{i}. {step['action']}{fix}")
    context = describe_context(skill.trigger.get("context") or {})
    when = f" when {context}" if context else ""
    return (
        f"Skill {skill.name} for {skill.task_type or 'any task'}{when}: "
        + "; ".join(parts)
        + f". Succeeded in {skill.success_rate:.0%} of {skill.support} recent episodes."
    )


def is_command(action: str) -> bool:
    """An agent's action signature (`git tag <version>`), not a `tool.action` key."""
    return " " in action


def describe_commands(skill: Skill) -> str:
    """A skill learned from agents' sessions as the commands to run, in order, with what to
    do when one fails, and the project and kind of work it holds for."""
    task_type = skill.task_type or "these tasks"
    project, _, kind = task_type.rpartition("/")
    where = f' in project {project} for "{kind}" work' if project else f" for {task_type}"
    lines = [
        f"Skill {skill.name}{where}: the steps that worked ({skill.success_rate:.0%} of "
        f"{skill.support} recent sessions), in order:"
    ]
    for i, step in enumerate(skill.steps, 1):
        fix = step.get("on_error")
        then = f" (if it fails: {fix}, then run it again)" if fix else ""
        lines.append(f"  {i}. {step['action']}{then}")
    lines.append("  (<version>, <path>, <name>, <text>, <n>: this task's own values)")
    return "\n".join(lines)


class SkillRecords:
    def __init__(self, session: AsyncSession, *, settings: Learning) -> None:
        self.session = session
        self.settings = settings
        self.skills = SkillRepository(session)
        self.memories = MemoryRepository(session)
        self.changes: list[dict[str, Any]] = []
        self._events: list[dict[str, Any]] = []
        self._base_rate = 0.0
        self._counterfactual: list[EpisodeView] | None = None
        self._retired: list[Skill] = []

    def _activatable(self, skill: Skill) -> bool:
        # An agents' kind's skills are handed out on the support they are created on.
        s = self.settings
        return (
            skill.support >= min(s.min_support, s.skill_min_support)
            and skill.lcb >= self.settings.activate_lcb
            and self._beats(actions(skill), skill.lcb, skill.success_rate, self._base_rate)
        )

    def _beats(self, steps: Sequence[str], lcb: float, rate: float, base: float) -> bool:
        """Whether following the steps does better than going without: the lower bound of
        their success rate beats `base` (the rate of the episodes they are for). For an
        agents' kind (outcomes mostly inferred: a turn that left a step out often looks
        fine), their rate beats by AGENT_MARGIN that of the episodes that did not perform
        them in order: a person's agent that mostly succeeds is handed what it does too."""
        if self._counterfactual is None:
            return lcb > base
        without = [e for e in self._counterfactual if not contains_in_order(e.actions, steps)]
        if len(without) < self.settings.min_support:
            return lcb > 0.0
        return rate >= sum(e.success for e in without) / len(without) + AGENT_MARGIN

    def _measure(self, skill: Skill, proc: Procedure, now: datetime) -> None:
        skill.support = proc.support
        skill.success_rate = proc.success_rate
        skill.lcb = proc.lcb
        if proc.evidence:
            skill.evidence = list(proc.evidence)
        skill.updated_at = now

    def _event(
        self,
        skill: Skill,
        kind: str,
        reason: str,
        evidence: list[str],
        now: datetime,
        **details: Any,
    ) -> None:
        self._events.append(
            {
                "namespace": skill.namespace,
                "id": uuid7(),
                "skill_id": skill.id,
                "kind": kind,
                "version": skill.version,
                "reason": reason,
                "evidence": evidence[-20:],
                "details": details,
                "created_at": now,
            }
        )
        self.changes.append(
            {"skill_id": skill.id, "name": skill.name, "change": kind, "reason": reason}
        )

    async def _create(
        self,
        namespace: str,
        task_type: str,
        proc: Procedure,
        now: datetime,
        *,
        context: dict[str, str] | None = None,
        parents: list[str] | None = None,
        kind: str = "created",
        reason: str | None = None,
    ) -> Skill:
        suffix = context_name(context) if context else ""
        base = "-".join(part for part in (task_type or "task", suffix) if part)
        name = f"{base}-v{uuid7()[-6:]}" if kind != "created" else base
        existing = await self.skills.named(namespace, [name])
        if name in existing:
            name = f"{base}-{uuid7()[-6:]}"
        skill = Skill(
            namespace=namespace,
            id=uuid7(),
            name=name,
            task_type=task_type,
            trigger={
                "task_type": task_type or None,
                "context": dict(context or {}),
                "keywords": sorted({a.split(".", 1)[0] for a in proc.steps}),
            },
            steps=skill_steps(proc),
            status="candidate",
            version=1,
            uses=0,
            successes=0,
            reward_sum=0.0,
            recent=[],
            support=proc.support,
            success_rate=proc.success_rate,
            lcb=proc.lcb,
            evidence=list(proc.evidence),
            parent_ids=list(parents or []),
            memory_id=None,
            created_at=now,
            updated_at=now,
            retired_at=None,
        )
        self.session.add(skill)
        why = reason or (
            f"{proc.successes} of {proc.support} recent episodes that performed these steps "
            f"in order succeeded (lower bound {proc.lcb:.2f})"
        )
        self._event(skill, kind, why, list(proc.evidence), now, steps=skill.steps)
        if self._activatable(skill):
            await self._activate(skill, now)
        return skill

    async def _activate(self, skill: Skill, now: datetime) -> None:
        skill.status = "active"
        skill.updated_at = now
        await self._publish(skill, now)
        self._event(
            skill,
            "activated",
            f"lower bound of its success rate {skill.lcb:.2f} >= {self.settings.activate_lcb}",
            list(skill.evidence),
            now,
        )

    async def _publish(self, skill: Skill, now: datetime) -> None:
        """Write the skill's memory (a new version when it had one), so recall can pick it."""
        content = describe(skill)
        previous = skill.memory_id
        memory_id = uuid7()
        scope = {"level": "global", **({"task_type": skill.task_type} if skill.task_type else {})}
        scope.update(skill.trigger.get("context", {}))
        version = 1
        if previous is not None:
            old = await self.memories.get(skill.namespace, previous)
            if old is not None:
                version = old.version + 1
                await self.memories.transition(
                    skill.namespace,
                    previous,
                    from_statuses=("active", "quarantined", "contradicted"),
                    values={"status": "superseded", "superseded_by": memory_id, "updated_at": now},
                )
        row = new_memory(
            skill.namespace,
            memory_id,
            content=content,
            confidence=round(skill.lcb, 6),
            sensitivity="low",
            criticality=0.6,
            source_refs=[f"skill:{skill.id}", *(f"episode:{e}" for e in skill.evidence[-5:])],
            metadata={
                "skill_id": skill.id,
                "name": skill.name,
                "version": skill.version,
                "task_type": skill.task_type or None,
                "steps": skill.steps,
                "trigger": skill.trigger,
            },
            now=now,
            version=version,
            previous_id=previous,
        )
        await self.memories.insert(row | {"type": "skill", "scope": scope})
        skill.memory_id = memory_id

    async def _refine(self, skill: Skill, proc: Procedure, now: datetime, *, why: str) -> None:
        before = skill.steps
        skill.steps = skill_steps(proc)
        skill.version += 1
        steps = why == "steps"
        if steps:  # retirement judges these steps on their own uses, not the old ones'
            skill.recent = []
        self._measure(skill, proc, now)
        if skill.status == "active":
            await self._publish(skill, now)
        reason = "the steps recent successes share changed" if steps else "learned recoveries"
        self._event(
            skill,
            "refined",
            f"{reason}; episodes that performed them succeeded in "
            f"{proc.successes} of {proc.support} (lower bound {proc.lcb:.2f})",
            list(proc.evidence),
            now,
            before=before,
            after=skill.steps,
        )

    async def _retire(
        self, skill: Skill, why: str, evidence: list[str], now: datetime, *, kind: str = "retired"
    ) -> None:
        """Stop handing the skill out. `retired`: it stopped working, so the episodes
        before it no longer teach its task type (the window starts after them);
        `superseded`: skills for each context replace it, and those episodes still count."""
        skill.status = "retired"
        skill.retired_at = now
        if kind == "retired":
            self._retired.append(skill)
        skill.updated_at = now
        if skill.memory_id is not None:
            await self.memories.transition(
                skill.namespace,
                skill.memory_id,
                from_statuses=("active", "quarantined"),
                values={
                    "status": "contradicted" if kind == "retired" else "superseded",
                    "updated_at": now,
                },
            )
        self._event(skill, kind, why, evidence, now)
