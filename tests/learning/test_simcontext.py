"""The simulated world with context: procedures per context, messy logs, the messy agent."""

from __future__ import annotations

import random

import pytest

from bench.simagents import MessyAgent, messy_attempt, messy_chance, messy_episodes
from bench.simcontext import (
    FIELDS,
    context_world,
    label,
    quality,
    sample_context,
    training_keys,
    unseen_key,
    values_of,
)
from bench.simshapes import Context, Key, field_value
from bench.simworld import Attempt, TaskType, World


def rate(attempts: list[Attempt]) -> float:
    return sum(a.outcome == "success" for a in attempts) / len(attempts)


def follow(world: World, task: TaskType, context: Context, steps: list[str], n: int = 200) -> float:
    agent = MessyAgent(world, 3, explore=0.0)
    return rate([agent.attempt(task.name, context=context, skill_steps=steps) for _ in range(n)])


def retried(attempt: Attempt) -> bool:
    pairs = zip(attempt.actions, attempt.actions[1:], attempt.steps, strict=False)
    return any(a == b and step["status"] == "error" for a, b, step in pairs)


def test_types_depend_on_none_one_or_two_fields() -> None:
    world = context_world(0)
    fields = {t.name: t.fields for t in world.task_types}
    assert fields == {
        "release-lib": ("language",),
        "deploy-api": ("features.cloud",),
        "migrate-db": ("language", "features.db"),
        "fix-ci": (),
    }
    assert world.task_type("fix-ci").procedure == ["git.checkout", "lint.fix", "ci.rerun"]
    with pytest.raises(ValueError, match="procedure_for"):
        _ = world.task_type("release-lib").procedure
    with pytest.raises(ValueError, match="no procedure"):
        world.task_type("release-lib").procedure_for(Context(domain="web"))


def test_procedures_share_an_end_and_differ_in_the_middle() -> None:
    world = context_world(0)
    for task in world.task_types:
        keys = [*training_keys(task), unseen_key(task)] if task.fields else [()]
        procedures = [task.procedures[k] for k in keys]
        assert all(3 <= len(p) <= 4 for p in procedures)
        assert len({tuple(p) for p in procedures}) == len(keys)
        shared = {p[0] for p in procedures} if len({p[0] for p in procedures}) == 1 else set()
        shared |= {p[-1] for p in procedures} if len({p[-1] for p in procedures}) == 1 else set()
        assert shared
        # What is left once the shared steps are taken out differs between any two contexts.
        rests = [frozenset(p) - shared for p in procedures]
        assert len(set(rests)) == len(keys)
        assert all(rest for rest in rests)
        steps = {a for p in task.procedures.values() for a in p}
        assert set(task.recoveries) == steps
        assert steps | set(task.recoveries.values()) < set(task.vocabulary)
        assert len(task.vocabulary) == len(set(task.vocabulary))
    release = world.task_type("release-lib")
    assert release.procedures[("python",)] == [
        "git.tag",
        "python.build",
        "pytest.run",
        "twine.upload",
    ]
    assert release.procedures[("node",)] == ["git.tag", "npm.build", "npm.test", "npm.publish"]


def test_the_unseen_context_has_a_procedure_of_its_own() -> None:
    world = context_world(0)
    for task in [t for t in world.task_types if t.fields]:
        unseen = task.procedures[unseen_key(task)]
        seen = [task.procedures[k] for k in training_keys(task)]
        assert all(unseen != p for p in seen)
        assert set(unseen[1:-1]).isdisjoint(a for p in seen for a in p)
        context = sample_context(random.Random(1), values=values_of(task, unseen_key(task)))
        assert task.key(context) == unseen_key(task)
        assert follow(world, task, context, unseen) >= 0.9
        assert all(follow(world, task, context, p, n=50) == 0.0 for p in seen)


def test_contexts_hold_every_field_the_irrelevant_ones_at_random() -> None:
    rng = random.Random(0)
    contexts = [sample_context(rng) for _ in range(300)]
    for context in contexts:
        assert set(context) == {"language", "domain", "tags", "features"}
        assert set(context["features"]) == {"cloud", "db", "runner"}
        for name, (seen, unseen) in FIELDS.items():
            assert field_value(context, name) in seen
            assert field_value(context, name) != unseen
    for name in ["language", "domain", "features.cloud", "features.db", "features.runner"]:
        assert len({field_value(c, name) for c in contexts}) >= 2
    assert len({c["tags"][0] for c in contexts}) == 3
    fixed = sample_context(random.Random(0), values={"language": "rust", "features.db": "sqlite"})
    assert (fixed["language"], fixed["features"]["db"]) == ("rust", "sqlite")
    # The other fields come from the same stream as without `values`.
    assert fixed["domain"] == contexts[0]["domain"]


def test_field_values_as_engram_names_them() -> None:
    context = Context(language="node", domain="web", tags=["ci"], features={"db": "mysql"})
    assert field_value(context, "language") == "node"
    assert field_value(context, "domain") == "web"
    assert field_value(context, "tag.ci") == "true"
    assert field_value(context, "tag.nightly") is None
    assert field_value(context, "features.db") == "mysql"
    assert field_value(context, "features.cloud") is None
    assert field_value(None, "language") is None
    with pytest.raises(ValueError, match="unknown"):
        field_value(context, "colour")


def test_same_seed_same_world_and_episodes() -> None:
    assert context_world(3).task_types == context_world(3).task_types
    assert messy_episodes(context_world(3), n=50, seed=1) == messy_episodes(
        context_world(3), n=50, seed=1
    )
    assert messy_episodes(context_world(3), n=50, seed=1) != messy_episodes(
        context_world(3), n=50, seed=2
    )

    def run(seed: int) -> list[Attempt]:
        world, rng = context_world(seed), random.Random(seed)
        agent = MessyAgent(world, seed)
        out = []
        for task in world.task_types * 10:
            context = sample_context(rng)
            steps = task.procedure_for(context) if rng.random() < 0.5 else None
            out.append(agent.attempt(task.name, context=context, skill_steps=steps))
        return out

    assert run(4) == run(4)
    assert run(4) != run(5)


def test_messy_episodes_mix_successes_near_misses_and_random_steps() -> None:
    world, sure = context_world(0), context_world(0, fail_rate=0.0)
    episodes = messy_episodes(world, n=800, seed=0)
    wins = [e for e in episodes if e.outcome == "success"]
    assert 0.45 <= len(wins) / len(episodes) <= 0.55
    assert 0.2 <= sum(map(retried, wins)) / len(wins) <= 0.4
    assert not any(retried(e) for e in episodes if e.outcome == "failure")
    for e in episodes:
        assert e.context is not None
        task = world.task_type(e.task_type)
        procedure = task.procedure_for(e.context)
        replay = sure.execute(e.task_type, e.actions, random.Random(0), context=e.context)
        if e.outcome == "success":
            assert replay.progress == 1.0  # the world's rules agree without failures
            extra = len(e.actions) - len(procedure) - retried(e)
            assert 0 <= extra <= 3
        else:
            assert replay.progress < 1.0
        for step in e.steps:
            assert set(step) == {"tool", "action", "status", "latency_ms", "tokens"}
    assert len({e.task_type for e in episodes}) == 4
    assert len({e.context["language"] for e in episodes if e.context}) == 2


@pytest.mark.parametrize("seed", range(5))
def test_near_misses_leave_one_step_out_and_fail(seed: int) -> None:
    world, rng = context_world(seed), random.Random(seed)
    for task in world.task_types:
        context = sample_context(rng)
        procedure = task.procedure_for(context)
        miss = messy_attempt(world, task.name, context=context, kind="near_miss", rng=rng)
        assert miss.outcome == "failure"
        assert len(set(procedure) - set(miss.actions)) == 1
        noise = messy_attempt(world, task.name, context=context, kind="random", rng=rng)
        assert noise.outcome == "failure"
        assert 3 <= len(noise.actions) <= 6


def test_the_messy_agent_is_at_chance_without_a_skill() -> None:
    for seed in (0, 1):
        assert 0.05 <= messy_chance(context_world(seed), trials=3000, seed=seed) <= 0.20


def test_the_messy_agent_succeeds_with_the_right_skill_only() -> None:
    world, rng = context_world(1), random.Random(2)
    for task in world.task_types:
        for key in training_keys(task):
            context = sample_context(rng, values=values_of(task, key))
            assert follow(world, task, context, task.procedures[key]) >= 0.9, label(task, key)
            for other in training_keys(task):
                if other != key:
                    wrong = follow(world, task, context, task.procedures[other], n=100)
                    assert wrong <= 0.1, (label(task, key), other)
    agent = MessyAgent(world, 0)
    context = sample_context(rng)
    steps = world.task_type("fix-ci").procedure
    assert agent.attempt("fix-ci", context=context, skill_steps=steps).followed_skill


def test_quality_per_type_and_context() -> None:
    world = context_world(0)
    node: Key = ("node",)
    python: Key = ("python",)
    learned: dict[tuple[str, Key], list[str] | None] = {
        ("release-lib", node): ["git.tag", "npm.build", "npm.test", "npm.publish"],
        ("release-lib", python): ["git.tag"],
        ("fix-ci", ()): None,
    }
    assert quality(world, learned) == {
        ("release-lib", node): (1.0, 1.0),
        ("release-lib", python): (1.0, 0.25),
        ("fix-ci", ()): (0.0, 0.0),
    }
    task = world.task_type("migrate-db")
    assert label(task, ("node", "mysql")) == "migrate-db language=node, features.db=mysql"
    assert label(world.task_type("fix-ci"), ()) == "fix-ci any"
