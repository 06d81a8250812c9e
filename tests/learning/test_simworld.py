"""The simulated world used to prove learning: determinism, rules, chance and breakage."""

from __future__ import annotations

import random

import pytest

from bench.simagents import SkillAgent
from bench.simworld import Attempt, RandomAgent, World, chance_rate, precision_recall


def success_rate(attempts: list[Attempt]) -> float:
    return sum(a.outcome == "success" for a in attempts) / len(attempts)


def follow(
    world: World, name: str, *, steps: list[str], recoveries: dict[str, str] | None, n: int = 200
) -> float:
    agent = SkillAgent(world, 11, explore=0.0)
    return success_rate(
        [agent.attempt(name, skill_steps=steps, recoveries=recoveries) for _ in range(n)]
    )


def test_world_structure() -> None:
    world = World(0)
    assert len(world.task_types) == 3
    assert len({tuple(t.procedure) for t in world.task_types}) == 3
    assert len({t.name for t in world.task_types}) == 3
    for task in world.task_types:
        assert len(task.procedure) == 4
        assert len(task.vocabulary) == len(set(task.vocabulary)) == 12
        assert set(task.procedure) <= set(task.vocabulary)
        assert set(task.recoveries) == set(task.procedure)
        assert set(task.recoveries.values()) <= set(task.vocabulary) - set(task.procedure)
        assert all(a.count(".") >= 1 for a in task.vocabulary)


def test_same_seed_same_run() -> None:
    def run(world_seed: int, agent_seed: int) -> list[Attempt]:
        world = World(world_seed)
        names = [t.name for t in world.task_types]
        rand, skill = RandomAgent(world, agent_seed), SkillAgent(world, agent_seed)
        out = [rand.attempt(n) for n in names]
        out += [skill.attempt(n, skill_steps=world.task_type(n).procedure) for n in names * 5]
        world.break_procedure(names[0])
        out += [skill.attempt(n, skill_steps=world.task_type(n).procedure) for n in names]
        return out

    assert run(3, 7) == run(3, 7)
    assert World(3).task_types == World(3).task_types
    assert run(3, 7) != run(3, 8)
    assert World(3).task_types != World(4).task_types


def test_steps_have_the_episode_step_shape() -> None:
    world = World(0)
    name = world.task_types[0].name
    attempt = SkillAgent(world, 1).attempt(name, skill_steps=["pip.install", "pytest.run"])
    assert attempt.steps
    for step in attempt.steps:
        assert set(step) == {"tool", "action", "status", "latency_ms", "tokens"}
        assert step["status"] in ("ok", "error")
        assert isinstance(step["latency_ms"], float)
        assert isinstance(step["tokens"], int)
    assert [f"{s['tool']}.{s['action']}" for s in attempt.steps] == attempt.actions


def test_execute_rules_without_failures() -> None:
    world = World(0, fail_rate=0.0)
    task = world.task_types[0]
    rng = random.Random(0)
    a, b, c, d = task.procedure
    extra = next(x for x in task.vocabulary if x not in task.procedure)
    ok = world.execute(task.name, [a, extra, b, c, extra, d], rng)
    assert (ok.outcome, ok.progress) == ("success", 1.0)
    assert all(s["status"] == "ok" for s in ok.steps)
    swapped = world.execute(task.name, [a, b, d, c], rng)
    assert (swapped.outcome, swapped.progress) == ("failure", 0.75)
    missing = world.execute(task.name, [a, b, d], rng)
    assert (missing.outcome, missing.progress) == ("failure", 0.5)
    with pytest.raises(ValueError, match="tool.action"):
        world.execute(task.name, ["noperiod"], rng)


def test_recovery_must_come_next() -> None:
    world = World(0, fail_rate=1.0)
    task = world.task_types[0]
    rng = random.Random(0)
    rec = task.recoveries
    extra = next(x for x in task.vocabulary if x not in task.procedure and x not in rec.values())
    recovered = [x for step in task.procedure for x in (step, rec[step])]
    attempt = world.execute(task.name, recovered, rng)
    assert attempt.outcome == "success"
    assert [s["status"] for s in attempt.steps] == ["error", "ok"] * 4
    first = task.procedure[0]
    late = world.execute(task.name, [first, extra, rec[first]], rng)
    assert late.progress == 0.0
    plain = world.execute(task.name, task.procedure, rng)
    assert (plain.outcome, plain.progress) == ("failure", 0.0)


def test_following_the_procedure_with_recoveries_succeeds() -> None:
    world = World(1)
    for task in world.task_types:
        with_rec = follow(world, task.name, steps=task.procedure, recoveries=task.recoveries)
        without = follow(world, task.name, steps=task.procedure, recoveries=None)
        assert with_rec >= 0.95
        assert without < with_rec - 0.2  # 0.85 ** 4 ~ 0.52


def test_noise_and_exploration_cost_little() -> None:
    world = World(2)
    task = world.task_types[0]
    agent = SkillAgent(world, 5, explore=0.1, noise=0.3)
    attempts = [
        agent.attempt(task.name, skill_steps=task.procedure, recoveries=task.recoveries)
        for _ in range(300)
    ]
    assert 0.8 <= success_rate(attempts) < 1.0
    planned = set(task.procedure) | set(task.recoveries.values())
    assert any(set(a.actions) - planned for a in attempts)  # noise inserted distractors


def test_random_agent_is_rarely_right() -> None:
    world = World(0)
    for task in world.task_types:
        assert 0.01 <= chance_rate(world, task.name) <= 0.15
    agent = RandomAgent(world, 0)
    name = world.task_types[0].name
    for _ in range(50):
        actions = agent.act(name)
        assert 4 <= len(actions) <= 7
        assert len(set(actions)) == len(actions)
        assert set(actions) <= set(world.task_type(name).vocabulary)


def test_skill_agent_without_a_skill_acts_randomly() -> None:
    world = World(0)
    task = world.task_types[0]
    attempts = [SkillAgent(world, s).attempt(task.name) for s in range(300)]
    assert success_rate(attempts) <= 0.1
    assert all(4 <= len(a.actions) <= 7 for a in attempts)


def test_breaking_a_procedure() -> None:
    world = World(0)
    name = world.task_types[1].name
    old = world.task_type(name)
    others = [t for t in world.task_types if t.name != name]
    new = world.break_procedure(name)
    assert world.task_type(name) is new
    assert new.procedure != old.procedure
    assert len(new.procedure) == len(old.procedure)
    assert len(new.vocabulary) == len(old.vocabulary)
    assert set(new.procedure) <= set(new.vocabulary)
    assert set(new.recoveries) == set(new.procedure)
    assert [t for t in world.task_types if t.name != name] == others
    old_rate = follow(world, name, steps=old.procedure, recoveries=old.recoveries)
    assert old_rate <= 0.05
    assert follow(world, name, steps=new.procedure, recoveries=new.recoveries) >= 0.95


@pytest.mark.parametrize(
    ("learned", "procedure", "expected"),
    [
        (["a.x", "b.y"], ["a.x", "b.y"], (1.0, 1.0)),
        (["a.x", "c.z"], ["a.x", "b.y"], (0.5, 0.5)),
        (["a.x"], ["a.x", "b.y", "c.z", "d.w"], (1.0, 0.25)),
        (["a.x", "b.y", "c.z", "e.v"], ["b.y", "a.x", "f.u"], (0.5, 2 / 3)),
        (["a.x", "a.x", "c.z"], ["a.x"], (0.5, 1.0)),
        ([], ["a.x"], (0.0, 0.0)),
        (["c.z"], ["a.x"], (0.0, 0.0)),
    ],
)
def test_precision_recall(
    learned: list[str], procedure: list[str], expected: tuple[float, float]
) -> None:
    assert precision_recall(learned, procedure) == pytest.approx(expected)
