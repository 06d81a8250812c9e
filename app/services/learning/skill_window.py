"""The window an evolution pass judges a task type's skills on: its latest episodes as
views, an agent's consecutive turns at one task merged into one episode."""

from __future__ import annotations

from dataclasses import dataclass

from app.core.config import Learning
from app.learning.mining import context_fields
from app.learning.reflection import action_key
from app.learning.skills import EpisodeView
from app.learning.steps import learning_steps, merge_turns
from app.models import Skill
from app.repositories.episode_learning import EpisodeLearningRepository
from app.repositories.skills import SkillRepository
from app.services.learning.lessons import AGENTS


@dataclass
class Window:
    episodes: list[EpisodeView]
    from_agents: bool  # most of them came from coding agents' sessions


async def read_window(
    episodes: EpisodeLearningRepository,
    skills: SkillRepository,
    namespace: str,
    task_type: str,
    *,
    retired: set[str],
    retired_now: list[Skill],
    settings: Learning,
) -> Window:
    """The task type's recent episodes (`retired`: its retired skills' ids; `retired_now`:
    the skills this pass retired, not in the database yet)."""
    since = await skills.last_retirement(namespace, task_type)
    just = [k.retired_at for k in retired_now if k.task_type == task_type]
    if just and just[-1] is not None:
        since = max(since or just[-1], just[-1])
    rows = await episodes.window(namespace, task_type or None, since=None, limit=settings.window)
    from_agents = 2 * sum(r.agent_id in AGENTS for r in rows) > len(rows)
    if since is not None:
        # A retirement restarts the window: the procedure may have changed. An agents'
        # kind keeps the episodes before it that followed no retired skill (its
        # procedure did not change; a wrong skill misled only those who followed it).
        rows = [
            r
            for r in rows
            if r.created_at > since or (from_agents and not retired.intersection(r.skills_applied))
        ]
    learned = await episodes.learned(namespace, [r.id for r in rows])
    followed = await skills.named(namespace, sorted({k for r in rows for k in r.skills_applied}))
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
                shown=frozenset(
                    step["action"]
                    for k in row.skills_applied
                    if (skill := followed.get(k)) is not None
                    for step in skill.steps
                ),
            )
        )
    # An agent's consecutive turns at one task are one episode of it.
    tasks = [r.task_id if r.agent_id in AGENTS else None for r in rows]
    return Window(merge_turns(views, tasks, [r.outcome for r in rows]), from_agents)
