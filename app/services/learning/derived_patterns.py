"""Patterns derived at evolution time rather than counted per episode: a task type's
current procedure and the actions that fail it. Runs in the job's session; never
commits."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.learning.mining import pattern_id, wilson_ucb
from app.learning.skills import Procedure
from app.models import Pattern
from app.repositories.patterns import PatternRepository

COPIED = (
    *("support", "successes", "reward_sum", "reward_count", "success_rate"),
    *("mean_reward", "lcb", "evidence"),
)


async def save_procedure_pattern(
    session: AsyncSession,
    namespace: str,
    *,
    task_type: str,
    procedure: Procedure,
    now: datetime,
) -> None:
    """The task type's current procedure as a pattern: the longest action sequence its
    recent successes share (counted on the window, unlike the running counters)."""
    pid = pattern_id("procedure", task_type, "")
    row = await PatternRepository(session).get(namespace, pid)
    if row is None:
        row = Pattern(
            namespace=namespace, id=pid, kind="procedure", task_type=task_type, created_at=now
        )
        session.add(row)
    row.signature = " > ".join(procedure.steps)
    row.items = list(procedure.steps)
    row.support = procedure.support
    row.successes = procedure.successes
    row.reward_count = procedure.support
    row.reward_sum = (procedure.mean_reward or 0.0) * procedure.support
    row.success_rate = procedure.success_rate
    row.mean_reward = procedure.mean_reward
    row.lcb = procedure.lcb
    row.evidence = list(procedure.evidence)
    row.updated_at = now


async def update_failure_patterns(
    session: AsyncSession,
    namespace: str,
    *,
    task_type: str,
    now: datetime,
    min_support: int,
) -> None:
    """Actions whose success rate is significantly below the task type's base rate become
    failure patterns (a copy of the action's counters); those no longer below it go."""
    patterns = PatternRepository(session)
    rows = await patterns.of_kinds(namespace, task_type, ["task", "action", "failure"])
    base = next((p for p in rows if p.kind == "task"), None)
    if base is None or base.support == 0:
        return
    failures = {p.signature: p for p in rows if p.kind == "failure"}
    for action in (p for p in rows if p.kind == "action"):
        bad = (
            action.support >= min_support
            and wilson_ucb(action.successes, action.support) < base.success_rate
        )
        row = failures.get(action.signature)
        if bad:
            if row is None:
                row = Pattern(
                    namespace=namespace,
                    id=pattern_id("failure", task_type, action.signature),
                    kind="failure",
                    task_type=task_type,
                    signature=action.signature,
                    items=list(action.items),
                    created_at=now,
                )
                session.add(row)
            for col in COPIED:
                setattr(row, col, getattr(action, col))
            row.updated_at = now
        elif row is not None:
            await session.delete(row)
