"""The ledger of an evolution pass: how each skill change is written down (new skills,
versions, activation, retirement, the memory that lets recall hand a skill out) with
the event that explains it. The decisions are the pass's; never commits."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import Learning
from app.core.ids import uuid7
from app.learning.contexts import context_name
from app.learning.skills import Procedure
from app.models import Skill
from app.repositories.memories import MemoryRepository
from app.repositories.skills import SkillRepository
from app.services.learning.skill_rules import skill_steps
from app.services.learning.skill_text import describe
from app.services.memories.rows import new_memory


class SkillLedger:
    def __init__(self, session: AsyncSession, *, settings: Learning) -> None:
        self.session = session
        self.settings = settings
        self.skills = SkillRepository(session)
        self.memories = MemoryRepository(session)
        self.changes: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.retired: list[Skill] = []  # retired (not superseded) in this pass

    async def save(self) -> None:
        await self.skills.insert_events(self.events)
        await self.session.flush()

    def event(
        self,
        skill: Skill,
        kind: str,
        reason: str,
        evidence: list[str],
        now: datetime,
        **details: Any,
    ) -> None:
        self.events.append(
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

    def measure(self, skill: Skill, proc: Procedure, now: datetime) -> None:
        skill.support = proc.support
        skill.success_rate = proc.success_rate
        skill.lcb = proc.lcb
        if proc.evidence:
            skill.evidence = list(proc.evidence)
        skill.updated_at = now

    async def create(
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
        """A candidate skill with the procedure's steps and measures."""
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
        self.event(skill, kind, why, list(proc.evidence), now, steps=skill.steps)
        return skill

    async def activate(self, skill: Skill, now: datetime) -> None:
        skill.status = "active"
        skill.updated_at = now
        await self._publish(skill, now)
        self.event(
            skill,
            "activated",
            f"lower bound of its success rate {skill.lcb:.2f} >= {self.settings.activate_lcb}",
            list(skill.evidence),
            now,
        )

    async def refine(self, skill: Skill, proc: Procedure, now: datetime, *, why: str) -> None:
        """New steps ("steps"), or the same with recoveries learned ("recoveries") or other
        optional steps ("optional steps")."""
        before = skill.steps
        skill.steps = skill_steps(proc)
        skill.version += 1
        steps = why == "steps"
        if steps:  # retirement judges these steps on their own uses, not the old ones'
            skill.recent = []
        self.measure(skill, proc, now)
        if skill.status == "active":
            await self._publish(skill, now)
        reason = {
            "steps": "the steps recent successes share changed",
            "recoveries": "learned recoveries",
        }.get(why, "the optional steps recent successes share changed")
        self.event(
            skill,
            "refined",
            f"{reason}; episodes that performed them succeeded in "
            f"{proc.successes} of {proc.support} (lower bound {proc.lcb:.2f})",
            list(proc.evidence),
            now,
            before=before,
            after=skill.steps,
        )

    async def drop_step(
        self, skill: Skill, step: str, without: Procedure, measured: Procedure, now: datetime
    ) -> None:
        """A step the skill's followers succeeded without, gone (`measured`: the skill's
        measures without it)."""
        before = skill.steps
        skill.steps = [s for s in skill.steps if s["action"] != step]
        skill.version += 1
        self.measure(skill, measured, now)
        if skill.status == "active":
            await self._publish(skill, now)
        self.event(
            skill,
            "refined",
            f"step {step} was not needed: {without.successes} of {without.support} episodes "
            "that followed the skill without it succeeded",
            list(without.evidence),
            now,
            before=before,
            after=skill.steps,
        )

    async def merge(self, keep: Skill, drop: Skill, now: datetime) -> None:
        """The kept skill takes the absorbed one's statistics; the absorbed one retires."""
        keep.uses += drop.uses
        keep.successes += drop.successes
        keep.reward_sum += drop.reward_sum
        keep.parent_ids = sorted({*keep.parent_ids, drop.id})
        self.event(
            keep,
            "merged",
            f"absorbed the near-duplicate {drop.name}",
            list(drop.evidence),
            now,
            absorbed=drop.id,
        )
        await self.retire(drop, f"merged into {keep.name}", list(drop.evidence), now)

    async def retire(
        self, skill: Skill, why: str, evidence: list[str], now: datetime, *, kind: str = "retired"
    ) -> None:
        """Stop handing the skill out. `retired`: it stopped working, so the episodes
        before it no longer teach its task type (the window starts after them);
        `superseded`: skills for each context replace it, and those episodes still count."""
        skill.status = "retired"
        skill.retired_at = now
        if kind == "retired":
            self.retired.append(skill)
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
        self.event(skill, kind, why, evidence, now)

    async def _publish(self, skill: Skill, now: datetime) -> None:
        """Write the skill's memory (a new version when it had one), so recall can pick it."""
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
            content=describe(skill),
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
