"""The decisions of skill evolution, as pure functions of skills, procedures and the
window of episodes they are judged on: when a skill is handed out, when new steps
replace a skill's, which near-duplicate survives a merge, where a skill is specialised,
what two chained skills compose into. No I/O: the evolution pass
(evolution.py) asks, and its ledger writes the answers down."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.core.config import Learning
from app.learning.contexts import ContextPlan, in_context
from app.learning.skills import (
    EpisodeView,
    Procedure,
    Split,
    contains_in_order,
    context_split,
    jaccard,
)
from app.models import Pattern, Skill

AGENT_MARGIN = 0.1  # of success rate, by which an agents' kind's skill beats going without
REFINE_MARGIN = 0.05  # of lower bound, by which new steps must beat a skill's own
RECOVERY_SUPPORT = 2  # successful episodes a recovery is seen in before a skill learns it


def actions(skill: Skill) -> list[str]:
    """The steps a skill needs, in order (its optional ones are only shown)."""
    return [s["action"] for s in skill.steps if not s.get("optional")]


def optional(skill: Skill) -> frozenset[str]:
    return frozenset(s["action"] for s in skill.steps if s.get("optional"))


def known_recoveries(skill: Skill) -> dict[str, str]:
    return {s["action"]: s["on_error"] for s in skill.steps if s.get("on_error")}


def skill_steps(procedure: Procedure) -> list[dict[str, Any]]:
    """A procedure's steps as a skill stores them: its optional ones marked."""
    out: list[dict[str, Any]] = []
    for a in procedure.shown or procedure.steps:
        out.append({"action": a, "on_error": procedure.on_error.get(a)})
        if a in procedure.optional:
            out[-1]["optional"] = True
    return out


def context_of(skill: Skill) -> dict[str, str]:
    return dict(skill.trigger.get("context") or {})


def window_of(skill: Skill, window: list[EpisodeView]) -> list[EpisodeView]:
    """The episodes a skill is measured on: those of its context (all, for a general one)."""
    context = context_of(skill)
    return [e for e in window if in_context(e, context)] if context else window


@dataclass
class Judge:
    """Whether steps are worth handing out, for one task type in one pass. `base_rate`:
    the success rate of the type's window; `counterfactual`: for an agents' kind, its
    window, against which following the steps is compared with going without them."""

    settings: Learning
    base_rate: float = 0.0
    counterfactual: list[EpisodeView] | None = None

    def beats(self, steps: Sequence[str], lcb: float, rate: float, base: float) -> bool:
        """Whether following the steps does better than going without: the lower bound of
        their success rate beats `base` (the rate of the episodes they are for). For an
        agents' kind (outcomes mostly inferred: a turn that left a step out often looks
        fine), their rate beats by AGENT_MARGIN that of the episodes that did not perform
        them in order: a person's agent that mostly succeeds is handed what it does too."""
        if self.counterfactual is None:
            return lcb > base
        without = [e for e in self.counterfactual if not e.performed(steps)]
        if len(without) < self.settings.min_support:
            return lcb > 0.0
        return rate >= sum(e.success for e in without) / len(without) + AGENT_MARGIN

    def activatable(self, skill: Skill) -> bool:
        # An agents' kind's skills are handed out on the support they are created on.
        s = self.settings
        return (
            skill.support >= min(s.min_support, s.skill_min_support)
            and skill.lcb >= s.activate_lcb
            and self.beats(actions(skill), skill.lcb, skill.success_rate, self.base_rate)
        )

    def beats_base(self, proc: Procedure, base: float) -> bool:
        """Whether following the procedure beats acting without it (`base`: the success
        rate of the episodes it is for), by the lower bound of its success rate."""
        return proc.lcb >= self.settings.skill_min_lcb and self.beats(
            proc.steps, proc.lcb, proc.success_rate, base
        )

    def worth_a_skill(self, proc: Procedure, base: float) -> bool:
        return proc.support >= self.settings.skill_min_support and self.beats_base(proc, base)


def extends(skill: Skill, proc: Procedure, settings: Learning) -> bool:
    """Whether the procedure is the skill's steps with more that the successes share
    and need (derive's tests), and those who did them all succeeded as often at least.
    Its lower bound alone would never say so: fewer episodes did more steps."""
    steps = actions(skill)
    return (
        len(proc.steps) > len(steps)
        and contains_in_order(proc.steps, steps)
        and proc.support >= settings.skill_min_support
        and proc.success_rate >= skill.success_rate
    )


def similar_generic(live: list[Skill], proc: Procedure, settings: Learning) -> Skill | None:
    """The general skill a procedure derived for its task type is a version of: one
    whose steps it extends, or the most similar (merge_similarity at least)."""
    generic = [k for k in live if not context_of(k) and k.status != "retired"]
    extended = [k for k in generic if contains_in_order(proc.steps, actions(k))]
    if extended:
        return max(extended, key=lambda k: (len(k.steps), k.lcb))
    similar = max(generic, key=lambda k: jaccard(actions(k), proc.steps), default=None)
    if similar is not None and jaccard(actions(similar), proc.steps) >= settings.merge_similarity:
        return similar
    return None


def settled(skill: Skill, proc: Procedure, settings: Learning) -> tuple[Procedure, str] | None:
    """What a skill becomes given the procedure just derived for it, and why: new steps
    if they do clearly better or extend its own ("steps"), or its steps with the
    recoveries learned since ("recoveries") or an optional step the successes now show
    ("optional steps"); None when it stays as it is."""
    merged = {**known_recoveries(skill), **proc.on_error}
    if tuple(actions(skill)) != proc.steps:
        if proc.lcb > skill.lcb + REFINE_MARGIN or extends(skill, proc, settings):
            return proc, "steps"
        return None
    if known_recoveries(skill) != merged:
        return replace(proc, on_error=merged), "recoveries"
    if proc.optional - optional(skill):  # (one that dropped below goes with new steps)
        return proc, "optional steps"
    return None


def superseded_by(skill: Skill, found: ContextPlan) -> bool:
    """Whether a plan that found the procedure to depend on `found.fields` replaces the
    skill: one not of those fields, unless it is general and the plan keeps a general
    procedure."""
    context = context_of(skill)
    if context and set(context) == set(found.fields):
        return False
    return not (not context and found.general is not None)


def mergeable(a: Skill, b: Skill, settings: Learning) -> bool:
    """Near-duplicates: both live, the same context, steps similar enough."""
    return (
        a.status != "retired"
        and b.status != "retired"
        and context_of(a) == context_of(b)
        and jaccard(actions(a), actions(b)) >= settings.merge_similarity
    )


def merge_order(a: Skill, b: Skill) -> tuple[Skill, Skill]:
    """(kept, absorbed): the higher lower bound, then the older, is kept."""
    if (a.lcb, -a.created_at.timestamp()) >= (b.lcb, -b.created_at.timestamp()):
        return a, b
    return b, a


def specialisation(
    skill: Skill, window: list[EpisodeView], settings: Learning
) -> tuple[Procedure, Split] | None:
    """A general skill's steps, for the context where they work, when they work in one
    context and fail in another."""
    split = context_split(
        actions(skill),
        window,
        min_support=settings.min_support,
        good_lcb=settings.activate_lcb,
        bad_below=settings.retire_below,
    )
    if split is None:
        return None
    proc = Procedure(
        steps=tuple(actions(skill)),
        on_error=known_recoveries(skill),
        support=split.good.support,
        successes=split.good.successes,
        mean_reward=split.good.mean_reward,
        lcb=split.good.lcb,
        evidence=split.good.evidence,
    )
    return proc, split


def composition(first: Skill, second: Skill, chain: Pattern) -> Procedure:
    """Two skills that reliably follow each other in successful episodes, as one."""
    return Procedure(
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


def fixes(recoveries: list[Pattern]) -> dict[str, str]:
    """For each failing action, what recovered it: the mined recovery pattern seen most
    often in successful episodes (at least RECOVERY_SUPPORT of them)."""
    best: dict[str, Pattern] = {}
    for p in recoveries:
        failed = p.items[0]
        if p.successes >= RECOVERY_SUPPORT:
            if failed not in best or p.successes > best[failed].successes:
                best[failed] = p
    return {failed: p.items[1] for failed, p in best.items()}
