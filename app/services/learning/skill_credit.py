"""How a skill is credited for the episodes that used it: once per use, when the episode
is learned, and corrected exactly when a later reward changes the episode's score.

An agent's task (a Claude Code session, say) is one use of the skills its turns were
handed, however many turns it took: the turn that first acted on a skill tells how
following it went. A later turn that fixes what went wrong, or does a small follow-up,
is not another use; counting it would make a skill that sends agents the wrong way look
as good as the repair that followed it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.models import Skill


class TaskCredits:
    """The skills each agent task has been credited for so far."""

    def __init__(self, known: Mapping[str, set[str]]) -> None:
        self.known = {task: set(ids) for task, ids in known.items()}

    def take(self, task_id: str, skills: Sequence[Skill]) -> list[Skill]:
        """The skills a turn of `task_id` is a use of (those its task was not credited
        for yet), marked as credited."""
        done = self.known.setdefault(task_id, set())
        fresh = [s for s in skills if s.id not in done]
        done.update(s.id for s in fresh)
        return fresh


def credit_skill(skill: Skill, episode_id: str, *, success: bool, reward: float, keep: int) -> None:
    skill.uses += 1
    skill.successes += int(success)
    skill.reward_sum += reward
    entry = {"episode_id": episode_id, "success": success, "reward": reward}
    skill.recent = [*skill.recent, entry][-keep:]


def recredit_skill(skill: Skill, episode_id: str, *, d_success: int, d_reward: float) -> None:
    skill.successes += d_success
    skill.reward_sum += d_reward
    recent = []
    for entry in skill.recent:
        item = dict(entry)
        if item.get("episode_id") == episode_id:
            item["success"] = bool(item["success"]) + d_success > 0
            item["reward"] = float(item["reward"]) + d_reward
        recent.append(item)
    skill.recent = recent
