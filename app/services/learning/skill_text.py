"""A skill as a memory's text: what recall hands to the next agent."""

from __future__ import annotations

from app.learning.contexts import describe_context
from app.models import Skill


def describe(skill: Skill) -> str:
    """The skill's steps in order, with what to do when one fails, and how often they
    worked."""
    if any(is_command(s["action"]) for s in skill.steps):
        return describe_commands(skill)
    parts = []
    for i, step in enumerate(skill.steps, 1):
        fix = f" (if it fails: {step['on_error']})" if step.get("on_error") else ""
        usual = " (optional)" if step.get("optional") else ""
        parts.append(f"{i}. {step['action']}{usual}{fix}")
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
        usual = " (optional: usually done, not needed)" if step.get("optional") else ""
        lines.append(f"  {i}. {step['action']}{usual}{then}")
    lines.append("  (<version>, <path>, <name>, <text>, <n>: this task's own values)")
    return "\n".join(lines)
