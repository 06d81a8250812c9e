"""Kinds of an agents' project that turn out to be one kind of work. Part of an evolution
pass (EvolutionPass); never commits.

Words and meaning file a project's first prompts for a kind of work under several kinds
before any is large enough to draw the others ("bump zod to 3.23", "move us to vite@5",
"dependabot wants axios 1.7"). What the agents then did tells: a kind whose successes
mostly performed another kind's active skill, its steps in order, is that kind's work, if
that kind is as large (a fragment joins its kind, not the other way round). It joins it:
its prompts (terms and meaning) are counted there, so that the prompts it would have drawn
are filed there from now on; its own skills step aside. Its past episodes keep their task
type.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.learning.kinds import fold
from app.learning.skills import EpisodeView, contains_in_order
from app.models import TaskKind
from app.repositories.skills import SkillRepository
from app.repositories.task_kinds import TaskKindRepository
from app.services.agents.kinds import kind_of, store, task_type_of
from app.services.learning.skill_rules import actions

MERGE_MIN = 2  # successes that performed the other kind's skill
WITNESS_STEPS = 2  # a skill of fewer steps says too little of a kind of work

log = logging.getLogger("engram.learning")


async def join_kind(
    session: AsyncSession,
    namespace: str,
    task_type: str,
    window: list[EpisodeView],
    now: datetime,
    *,
    share: float,
) -> str | None:
    """The task type whose kind this one's joined, when its successes are that kind's
    work: at least MERGE_MIN of them, and half, performed its active skill in order, the
    skill holds more than half of the actions they share (`share` of them at least), and
    that kind is as large at least."""
    project, sep, name = task_type.partition("/")
    wins = [e for e in window if e.success]
    if not sep or len(wins) < MERGE_MIN:
        return None
    skills = await SkillRepository(session).active_with_prefix(namespace, f"{project}/")
    if not any(k.task_type != task_type for k in skills):
        return None
    kinds = await TaskKindRepository(session).of_project(namespace, project, lock=True)
    rows = {r.name: r for r in kinds if r.merged_into is None}
    mine = rows.get(name)
    own = [actions(k) for k in skills if k.task_type == task_type]
    present = Counter(a for e in wins for a in set(e.actions))
    common = {a for a, n in present.items() if n >= share * len(wins)}
    best: tuple[int, int, TaskKind] | None = None  # successes that did it, its steps
    for skill in skills:
        steps = actions(skill)
        into = rows.get(skill.task_type.partition("/")[2]) if skill.task_type else None
        if mine is None or into is None or into is mine or len(steps) < WITNESS_STEPS:
            continue
        # The smaller kind joins the larger, and not one whose skill this one's holds, or
        # one whose skill is only a part of what its successes share (a typecheck in a bump).
        if into.prompts < mine.prompts or any(contains_in_order(o, steps) for o in own):
            continue
        if 2 * len(common & set(steps)) <= len(common):
            continue
        n = sum(e.performed(steps) for e in wins)
        if n >= MERGE_MIN and 2 * n >= len(wins) and (best is None or (n, len(steps)) > best[:2]):
            best = (n, len(steps), into)  # the most specific skill they did, on a tie
    if mine is None or best is None:
        return None
    n, _, into = best
    _merge(mine, into, now)
    log.info("kind %s joined %s (%d of %d successes did its skill)", name, into.name, n, len(wins))
    return task_type_of(project, into.name)


def _merge(mine: TaskKind, into: TaskKind, now: datetime) -> None:
    # The meaning is summed where both are one model's; else the larger kind's stays.
    model = into.meaning_model if into.meaning is not None else mine.meaning_model
    kind = kind_of(into, model)
    fold(kind, kind_of(mine, model))
    store(into, kind, model, now)
    mine.merged_into, mine.updated_at = into.id, now
