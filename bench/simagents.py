"""Agents of the simulated world: one that follows recalled skills, the messy population
that logged agents look like (a generator of their episodes), and a messy agent for the
learning curve.

Logged episodes (`messy_episodes`): half succeed (the context's procedure with 0-3
unrelated steps inserted and, in 30% of them, one step that errored and was retried);
a quarter are near misses (the procedure with one step left out: they fail); a quarter
are random steps (they fail).

The messy agent without a skill mostly does not know the procedure: 15% of the time it
does (messily, retrying errors), 15% it makes a near miss, 70% it acts at random; its
success rate, `messy_chance`, is about 15%. With a recalled skill it follows the skill's
steps in its context, inserts an unrelated step now and then, and on an error runs the
step's known recovery, or the step again.
"""

from __future__ import annotations

import random
from typing import Literal

from bench.simcontext import sample_context
from bench.simshapes import Context
from bench.simworld import Attempt, RandomAgent, Trial, World, in_task_order

Kind = Literal["success", "near_miss", "random"]


class SkillAgent(RandomAgent):
    """Follows recalled skill steps, recovering failed steps it knows a recovery for."""

    def __init__(
        self,
        world: World,
        seed: int,
        *,
        explore: float = 0.1,
        noise: float = 0.1,
        skip: float = 0.0,
    ):
        super().__init__(world, seed)
        self.explore = explore
        self.noise = noise
        self.skip = skip  # agents sometimes leave a step out

    def attempt(
        self,
        task_type_name: str,
        *,
        skill_steps: list[str] | None = None,
        recoveries: dict[str, str] | None = None,
        context: Context | None = None,
    ) -> Attempt:
        """Follow `skill_steps` (random with probability `explore`, or without a skill)."""
        if not skill_steps or self.rng.random() < self.explore:
            return super().attempt(task_type_name, context=context)
        known = recoveries or {}
        vocabulary = self.world.task_type(task_type_name).vocabulary
        extras = [a for a in vocabulary if a not in skill_steps]
        trial = self.world.begin(task_type_name, self.rng, context=context)
        for i, action in enumerate(skill_steps):
            if i and extras and self.rng.random() < self.noise:
                trial.step(self.rng.choice(extras))
            if self.rng.random() < self.skip:
                continue
            if trial.step(action) == "error":
                # Try the known recovery; without one, something else (it may work).
                fix = known.get(action) or (self.rng.choice(extras) if extras else None)
                if fix is not None:
                    trial.step(fix)
        attempt = trial.finish()
        attempt.followed_skill = True
        return attempt


def noisy(plan: list[str], extras: list[str], rng: random.Random, *, most: int = 3) -> list[str]:
    """The plan with 0 to `most` of the extra actions inserted at random places."""
    out = list(plan)
    for _ in range(rng.randint(0, most) if extras else 0):
        out.insert(rng.randint(0, len(out)), rng.choice(extras))
    return out


def messy_attempt(
    world: World, task_type_name: str, *, context: Context, kind: Kind, rng: random.Random
) -> Attempt:
    """One logged attempt of a kind; its outcome follows from the world's rules."""
    task = world.task_type(task_type_name)
    procedure = task.procedure_for(context)
    extras = [a for a in task.vocabulary if a not in procedure]
    while True:
        # No step fails by chance: the only errors are the retried ones.
        trial = Trial(task, rng=rng, fail_rate=0.0, context=context)
        if kind == "success":
            retried = rng.choice(procedure) if rng.random() < 0.3 else None
            for action in noisy(procedure, extras, rng):
                if action == retried:
                    trial.step(action, error=True)
                    retried = None
                trial.step(action)
        elif kind == "near_miss":
            gone = rng.randrange(len(procedure))
            for action in noisy(procedure[:gone] + procedure[gone + 1 :], extras, rng):
                trial.step(action)
        else:
            k = min(rng.randint(3, 6), len(task.vocabulary))
            for action in in_task_order(task, rng.sample(task.vocabulary, k)):
                trial.step(action)
        attempt = trial.finish()
        if kind != "random" or attempt.outcome == "failure":
            return attempt  # random steps that happen to work are drawn again


def messy_episodes(world: World, *, n: int, seed: int) -> list[Attempt]:
    """`n` logged attempts over the world's types in random training contexts."""
    rng = random.Random(seed)
    names = [t.name for t in world.task_types]
    out = []
    for _ in range(n):
        name, context, draw = rng.choice(names), sample_context(rng), rng.random()
        kind: Kind = "success" if draw < 0.5 else "near_miss" if draw < 0.75 else "random"
        out.append(messy_attempt(world, name, context=context, kind=kind, rng=rng))
    return out


class MessyAgent:
    """Without a skill, the messy population at about 15% success; with one, follows it."""

    def __init__(
        self,
        world: World,
        seed: int,
        *,
        explore: float = 0.05,
        noise: float = 0.1,
        skip: float = 0.0,
        knows: float = 0.15,
        near_miss: float = 0.15,
        retries: int = 2,
    ) -> None:
        self.world = world
        self.rng = random.Random(seed)
        self.explore = explore
        self.noise = noise
        self.skip = skip  # agents sometimes leave a step out
        self.knows = knows
        self.near_miss = near_miss
        self.retries = retries

    def attempt(
        self,
        task_type_name: str,
        *,
        context: Context | None = None,
        skill_steps: list[str] | None = None,
        recoveries: dict[str, str] | None = None,
    ) -> Attempt:
        """Follow `skill_steps` (unguided with probability `explore`, or without a skill)."""
        trial = self.world.begin(task_type_name, self.rng, context=context)
        if not skill_steps or self.rng.random() < self.explore:
            for action in self._unguided(trial):
                self._run(trial, action, {})
            return trial.finish()
        vocabulary = trial.task.vocabulary
        extras = [a for a in vocabulary if a not in skill_steps]
        for action in skill_steps:
            if extras and self.rng.random() < self.noise:
                trial.step(self.rng.choice(extras))
            if self.rng.random() >= self.skip:
                self._run(trial, action, recoveries or {})
        attempt = trial.finish()
        attempt.followed_skill = True
        return attempt

    def _unguided(self, trial: Trial) -> list[str]:
        task, procedure, draw = trial.task, trial.procedure, self.rng.random()
        extras = [a for a in task.vocabulary if a not in procedure]
        if draw < self.knows:
            return noisy(procedure, extras, self.rng)
        if draw < self.knows + self.near_miss:
            gone = self.rng.randrange(len(procedure))
            return noisy(procedure[:gone] + procedure[gone + 1 :], extras, self.rng)
        k = min(self.rng.randint(3, 6), len(task.vocabulary))
        return in_task_order(task, self.rng.sample(task.vocabulary, k))

    def _run(self, trial: Trial, action: str, known: dict[str, str]) -> None:
        status, tries = trial.step(action), 0
        while status == "error" and tries < self.retries:
            fix = known.get(action)
            if fix and fix != action:
                trial.step(fix)
                return
            status, tries = trial.step(action), tries + 1


def messy_chance(world: World, *, trials: int = 2000, seed: int = 0) -> float:
    """Monte-Carlo success rate of the messy agent without a skill, over the world's types
    in random training contexts."""
    agent, rng = MessyAgent(world, seed), random.Random(seed)
    names = [t.name for t in world.task_types]
    wins = 0
    for _ in range(trials):
        name, context = rng.choice(names), sample_context(rng)
        wins += agent.attempt(name, context=context).outcome == "success"
    return wins / trials
