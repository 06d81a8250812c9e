"""A deterministic simulated world for proving that Engram learns (pure Python, no I/O).

Each task type hides a procedure: an ordered list of "tool.action" keys drawn from a
catalogue of realistic actions listed in the usual workflow order (fetch source, install,
build, migrate, test, package, deploy, verify). Every catalogue action has one recovery
action (``pip.install`` -> ``pip.upgrade``); procedures follow the workflow order, and a
task type's vocabulary is its procedure steps, their recoveries and other actions as
distractors, in workflow order.

A task type may depend on fields of the attempt's context (an Engram episode's
``context``: language, domain, tags, features): then it hides one procedure per value of
those fields (bench/simcontext.py builds such a world). A type that depends on no field
is the case of a single procedure, the one ``World(seed)`` draws.

An attempt succeeds when the procedure's steps are all done in order, other actions in
between allowed. A procedure step fails with probability ``fail_rate``; a failed step
still counts as done when its recovery is the very next action, or once it is run again
and succeeds.

Chance is the success rate of ``RandomAgent``, the agent without memory: it knows the
usual workflow order but not which actions a task needs, so it picks 4-7 distinct
actions of the vocabulary at random and runs them in that order. In the default world (4
steps, 12 actions, fail_rate 0.15) that succeeds about 1.8% of the time (2.7% with
vocabulary=11, 4.6% with 10). Following the true procedure succeeds 52% of the time
without knowing the recoveries and always when the recoveries are known.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from bench.simshapes import Context, Key, Status, Step, field_value

# (action, recovery) in workflow order; a recovery sorts right after its action.
CATALOGUE: list[tuple[str, str]] = [
    ("git.clone", "git.fetch"),
    ("git.checkout", "git.stash"),
    ("shell.cat", "shell.ls"),
    ("pip.install", "pip.upgrade"),
    ("npm.install", "npm.ci"),
    ("cargo.build", "cargo.update"),
    ("make.build", "make.clean"),
    ("sql.migrate", "sql.rollback"),
    ("sql.query", "sql.reconnect"),
    ("pytest.run", "pytest.rerun"),
    ("npm.test", "npm.rebuild"),
    ("docker.build", "docker.prune"),
    ("docker.push", "docker.login"),
    ("terraform.apply", "terraform.init"),
    ("k8s.apply", "k8s.rollback"),
    ("http.get", "http.retry"),
]
PRIMARIES = [action for action, _ in CATALOGUE]
RECOVERY = dict(CATALOGUE)
RANK = {name: i for i, name in enumerate(name for pair in CATALOGUE for name in pair)}
TASK_NAMES = ["fix-ci", "deploy-api", "migrate-db", "release-lib", "patch-deps", "run-etl"]


@dataclass(frozen=True, slots=True)
class TaskType:
    """A kind of task: its hidden procedure per context, each step's recovery, its actions."""

    name: str
    procedures: dict[Key, list[str]]  # by the values of `fields`; the key () when none
    recoveries: dict[str, str]
    vocabulary: list[str] = field(default_factory=list)
    fields: tuple[str, ...] = ()  # the context fields its procedure depends on

    @property
    def procedure(self) -> list[str]:
        """The procedure of a type that depends on no context field."""
        if self.fields:
            raise ValueError(f"{self.name} depends on {self.fields}: use procedure_for")
        return self.procedures[()]

    def key(self, context: Context | None) -> Key:
        """The values of the fields this type depends on."""
        return tuple(field_value(context, name) for name in self.fields)

    def procedure_for(self, context: Context | None) -> list[str]:
        """The procedure that works in this context."""
        key = self.key(context)
        if key not in self.procedures:
            raise ValueError(
                f"{self.name} has no procedure for {dict(zip(self.fields, key, strict=True))}"
            )
        return self.procedures[key]


@dataclass(slots=True)
class Attempt:
    """The result of one attempt at a task."""

    task_type: str
    actions: list[str]
    steps: list[Step]
    outcome: Literal["success", "failure"]
    progress: float
    followed_skill: bool = False  # the agent followed recalled steps (did not explore)
    context: Context | None = None


def in_workflow_order(actions: list[str]) -> list[str]:
    """Sort actions by the catalogue's workflow order (unknown actions last)."""
    return sorted(actions, key=lambda a: RANK.get(a, len(RANK)))


def precision_recall(learned_steps: list[str], procedure: list[str]) -> tuple[float, float]:
    """Set-based precision (learned steps in the procedure) and recall (procedure steps
    learned); 0.0 when empty."""
    learned, truth = set(learned_steps), set(procedure)
    hits = len(learned & truth)
    return (hits / len(learned) if learned else 0.0, hits / len(truth) if truth else 0.0)


class Trial:
    """One attempt in progress: feed actions one at a time and see each status."""

    def __init__(
        self,
        task: TaskType,
        *,
        rng: random.Random,
        fail_rate: float,
        context: Context | None = None,
    ) -> None:
        self.task = task
        self.procedure = task.procedure_for(context)
        self.context = context
        self.rng = rng
        self.fail_rate = fail_rate
        self.actions: list[str] = []
        self.steps: list[Step] = []
        self.done = 0  # procedure steps done in order so far
        self._failed: str | None = None  # the expected step that just failed

    def step(self, action: str, *, error: bool = False) -> Status:
        """Run one action and return its status (`error`: it fails whatever the odds)."""
        tool, dot, name = action.partition(".")
        if not (tool and dot and name):
            raise ValueError(f"action keys look like 'tool.action', got {action!r}")
        procedure = self.procedure
        status: Status = "error" if error else "ok"
        if self._failed is not None and self.task.recoveries.get(self._failed) == action:
            if not error:
                self.done += 1
        elif action in procedure:
            if error or self.rng.random() < self.fail_rate:
                status = "error"
            expected = self.done < len(procedure) and procedure[self.done] == action
            if expected and status == "ok":
                self.done += 1
        failed = status == "error" and self.done < len(procedure)
        self._failed = action if failed and procedure[self.done] == action else None
        self.actions.append(action)
        self.steps.append(
            Step(
                tool=tool,
                action=name,
                status=status,
                latency_ms=round(self.rng.uniform(20.0, 400.0), 1),
                tokens=self.rng.randint(10, 200),
            )
        )
        return status

    def finish(self) -> Attempt:
        """Close the attempt: success iff every procedure step was done in order."""
        total = len(self.procedure)
        return Attempt(
            task_type=self.task.name,
            actions=list(self.actions),
            steps=list(self.steps),
            outcome="success" if self.done == total else "failure",
            progress=self.done / total if total else 1.0,
            context=self.context,
        )


class World:
    """Task types with hidden procedures, built from one seed."""

    def __init__(
        self,
        seed: int,
        *,
        task_types: int = 3,
        procedure_length: int = 4,
        vocabulary: int = 12,
        fail_rate: float = 0.15,
    ) -> None:
        if procedure_length < 1 or not 0.0 <= fail_rate <= 1.0:
            raise ValueError("procedure_length must be >= 1 and fail_rate within [0, 1]")
        if not 2 * procedure_length < vocabulary <= len(PRIMARIES) + procedure_length:
            raise ValueError(
                f"vocabulary must be in ({2 * procedure_length}, "
                f"{len(PRIMARIES) + procedure_length}] for procedure_length={procedure_length}"
            )
        self.rng = random.Random(seed)
        self.procedure_length = procedure_length
        self.vocabulary = vocabulary
        self.fail_rate = fail_rate
        self.task_types: list[TaskType] = []
        seen: set[tuple[str, ...]] = set()
        for i in range(task_types):
            name = TASK_NAMES[i] if i < len(TASK_NAMES) else f"task-{i}"
            for _ in range(1000):
                drawn = self.rng.sample(PRIMARIES, vocabulary - procedure_length)
                procedure = in_workflow_order(drawn[:procedure_length])
                if tuple(procedure) not in seen:
                    break
            else:
                raise ValueError("cannot draw that many distinct procedures")
            seen.add(tuple(procedure))
            self.task_types.append(_task_type(name, procedure, drawn[procedure_length:]))

    def task_type(self, name: str) -> TaskType:
        """Look a task type up by name."""
        for task in self.task_types:
            if task.name == name:
                return task
        raise KeyError(name)

    def break_procedure(self, name: str) -> TaskType:
        """Swap one procedure step for one of the task's distractors: the old one now fails."""
        old = self.task_type(name)
        distractors = [a for a in old.vocabulary if a in RECOVERY and a not in old.procedure]
        i = self.rng.randrange(len(old.procedure))
        new_step = self.rng.choice(distractors)
        procedure = in_workflow_order([*old.procedure[:i], new_step, *old.procedure[i + 1 :]])
        rest = [d for d in distractors if d != new_step] + [old.procedure[i]]
        new = _task_type(name, procedure, rest)
        self.task_types[self.task_types.index(old)] = new
        return new

    def begin(
        self, task_type_name: str, rng: random.Random, *, context: Context | None = None
    ) -> Trial:
        """Start an interactive attempt at a task (in a context, if its type needs one)."""
        task = self.task_type(task_type_name)
        return Trial(task, rng=rng, fail_rate=self.fail_rate, context=context)

    def execute(
        self,
        task_type_name: str,
        actions: list[str],
        rng: random.Random,
        *,
        context: Context | None = None,
    ) -> Attempt:
        """Run a fixed sequence of actions."""
        trial = self.begin(task_type_name, rng, context=context)
        for action in actions:
            trial.step(action)
        return trial.finish()


def _task_type(name: str, procedure: list[str], distractors: list[str]) -> TaskType:
    recoveries = {step: RECOVERY[step] for step in procedure}
    vocabulary = in_workflow_order([*procedure, *recoveries.values(), *distractors])
    return TaskType(
        name=name, procedures={(): procedure}, recoveries=recoveries, vocabulary=vocabulary
    )


def in_task_order(task: TaskType, actions: list[str]) -> list[str]:
    """Sort a task's actions as its vocabulary lists them (its workflow order)."""
    order = {a: i for i, a in enumerate(task.vocabulary)}
    return sorted(actions, key=lambda a: order.get(a, len(order)))


class RandomAgent:
    """The agent without memory: 4-7 random actions of the vocabulary, in workflow order."""

    def __init__(self, world: World, seed: int) -> None:
        self.world = world
        self.rng = random.Random(seed)

    def act(self, task_type_name: str) -> list[str]:
        """Pick the actions of one attempt."""
        task = self.world.task_type(task_type_name)
        k = min(self.rng.randint(4, 7), len(task.vocabulary))
        return in_task_order(task, self.rng.sample(task.vocabulary, k))

    def attempt(self, task_type_name: str, *, context: Context | None = None) -> Attempt:
        """Make one attempt at a task."""
        actions = self.act(task_type_name)
        return self.world.execute(task_type_name, actions, self.rng, context=context)


def chance_rate(world: World, task_type_name: str, trials: int = 2000, seed: int = 0) -> float:
    """Monte-Carlo success rate of the RandomAgent on one task type."""
    agent = RandomAgent(world, seed)
    wins = sum(agent.attempt(task_type_name).outcome == "success" for _ in range(trials))
    return wins / trials
