"""The world of the learned-policy proof (bench/policyworld.py): baseline_v0 falls for the
stale decoy, the best choice is one logged swap away, and the shift turns that around."""

from __future__ import annotations

import random
import statistics

import pytest

from app.learning.policy import Candidate, Decision, decide
from app.learning.ranking import query_terms
from app.schemas.memory import MemoryCreate
from app.services.memories.rows import token_estimate
from bench.policyworld import PolicyWorld, TaskType

SEEDS = range(12)


def candidates(task: TaskType) -> list[Candidate]:
    """The pool as baseline_v0 sees it before any reward (retrieval scores made up: the
    criticalities differ, so they never decide)."""
    return [
        Candidate(
            memory_id=n.id,
            type=n.type,
            status="active",
            sensitivity="low",
            criticality=n.criticality,
            confidence=n.confidence,
            retrieval_score=random.Random(n.id).random(),
            expected_utility=0.5,
            token_cost=n.tokens,
        )
        for n in task.notes
    ]


def baseline(
    world: PolicyWorld, task: TaskType, *, epsilon: float = 0.0, seed: int = 0
) -> Decision:
    """baseline_v0's decision on the pool (its first choice unless it explores)."""
    return decide(
        candidates(task),
        token_budget=world.budget,
        k=world.k,
        max_sensitivity="high",
        epsilon=epsilon,
        rng=random.Random(seed),
    )


def test_same_seed_same_world_and_other_seeds_differ() -> None:
    assert PolicyWorld(3).task_types == PolicyWorld(3).task_types
    assert PolicyWorld(3).task_types != PolicyWorld(4).task_types
    assert PolicyWorld(3, shifted=True).task_types == PolicyWorld(3, shifted=True).task_types


@pytest.mark.parametrize("shifted", [False, True])
def test_recall_finds_a_task_types_notes_and_no_others(shifted: bool) -> None:
    world = PolicyWorld(0, shifted=shifted)
    other = PolicyWorld(0, shifted=not shifted)
    for task in world.task_types:
        terms = set(query_terms(task.task))
        assert len(terms) == 4, task.task
        elsewhere = {n.id for t in [*world.task_types, *other.task_types] for n in t.notes}
        for t in [*world.task_types, *other.task_types]:
            for note in t.notes:
                words = set(query_terms(note.content))
                if note.task_type == task.name:
                    assert words & terms, note
                    elsewhere.discard(note.id)
                else:
                    assert not words & terms, (task.task, note)
        assert len(elsewhere) == len(world.notes) + len(other.notes) - len(task.notes)


def test_notes_are_valid_memories_whose_token_cost_recall_counts_as_the_world_does() -> None:
    world = PolicyWorld(5)
    bodies = world.memory_bodies()
    assert len(bodies) == len({b["id"] for b in bodies}) == 6 * 10
    for body in bodies:
        MemoryCreate.model_validate(body)
        note = world.notes[body["id"]]
        assert token_estimate(body["content"]) == note.tokens
        assert 30 <= note.tokens <= 150
        assert "effect" not in body
        assert note.criticality < 0.7  # no hard constraint decides for the policy


@pytest.mark.parametrize("seed", SEEDS)
def test_baseline_falls_for_the_decoy_and_the_best_choice_is_one_swap_away(seed: int) -> None:
    world = PolicyWorld(seed)
    for task in world.task_types:
        greedy = baseline(world, task)
        assert sorted(greedy.order) == sorted(world.first_choice(task.name))
        assert task.role("decoy")[0].id in greedy.order
        value, best = world.best(task.name)
        assert sorted(best) == sorted(world.learned_choice(task.name))
        assert value - world.value(greedy.order) >= 0.5
        # Exploration logs the best choice: the hidden note may replace the decoy.
        explored = baseline(world, task, epsilon=0.2)
        hidden = task.role("hidden")[0].id
        assert 0 < explored.inclusion[hidden] < 0.2
        # Nothing else fits beside the best choice: a policy filling the budget stops there.
        used = sum(world.notes[i].tokens for i in best)
        assert all(n.tokens > world.budget - used for n in task.notes if n.id not in best)


def test_the_hidden_note_is_logged_in_its_place_when_the_baseline_explores() -> None:
    world = PolicyWorld(1)
    task = world.task_types[0]
    learned = sorted(world.learned_choice(task.name))
    picks = [sorted(baseline(world, task, epsilon=0.2, seed=s).order) for s in range(3000)]
    share = picks.count(learned) / len(picks)
    assert 0.002 < share < 0.05, share
    assert picks.count(sorted(world.first_choice(task.name))) / len(picks) == pytest.approx(
        0.8, abs=0.03
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_in_the_shifted_world_the_learned_choice_is_worse_than_the_baseline(seed: int) -> None:
    world = PolicyWorld(seed, shifted=True)
    for task in world.task_types:
        assert sorted(baseline(world, task).order) == sorted(world.first_choice(task.name))
        first = world.value(world.first_choice(task.name))
        assert first - world.value(world.learned_choice(task.name)) >= 0.5
    assert world.mean_value("first") - world.mean_value("learned") >= 0.5
    unshifted = PolicyWorld(seed)
    assert unshifted.mean_value("learned") - unshifted.mean_value("first") >= 0.5


def test_confidence_tells_the_effects_apart_only_statistically() -> None:
    notes = [n for s in SEEDS for n in PolicyWorld(s).notes.values()]
    by_sign = {
        sign: [n.confidence for n in notes if (n.effect > 0) - (n.effect < 0) == sign]
        for sign in (-1, 0, 1)
    }
    means = [statistics.mean(by_sign[s]) for s in (-1, 0, 1)]
    assert means == sorted(means)
    assert means[2] - means[0] > 0.25
    # The ranges overlap: no threshold on confidence alone sorts every note.
    assert max(by_sign[-1]) > min(by_sign[0])
    assert max(by_sign[0]) > min(by_sign[1])
    # Types lean the same way, with a type shared between effects.
    helpful_types = [n.type for n in notes if n.effect > 0]
    assert sum(t in ("fact", "preference") for t in helpful_types) / len(helpful_types) > 0.6
    assert {n.type for n in notes if n.effect < 0} & set(helpful_types)
    # In the shifted world the low-confidence notes are the helpful ones.
    shifted = [n for s in SEEDS for n in PolicyWorld(s, shifted=True).notes.values()]
    helped = statistics.mean(n.confidence for n in shifted if n.effect > 0 and n.role != "core")
    hurt = statistics.mean(n.confidence for n in shifted if n.effect < 0)
    assert helped < hurt - 0.2


def test_rewards_are_the_true_value_plus_noise() -> None:
    world = PolicyWorld(2)
    pick = world.first_choice(world.task_types[0].name)
    rng = random.Random(9)
    rewards = [world.reward(pick, rng) for _ in range(4000)]
    assert statistics.mean(rewards) == pytest.approx(world.value(pick), abs=0.01)
    assert statistics.stdev(rewards) == pytest.approx(world.noise, rel=0.05)
    assert world.value(["not-a-note", *pick]) == world.value(pick)
    # The rewards of the choices that matter stay within -1 and 1 (expected_utility's
    # scale), in both worlds.
    for w in (world, PolicyWorld(2, shifted=True)):
        for t in w.task_types:
            for choice in (w.first_choice(t.name), w.learned_choice(t.name), w.best(t.name)[1]):
                assert -1 <= w.value(choice) <= 1
    names = [world.sample(rng) for _ in range(600)]
    assert {names.count(t.name) for t in world.task_types} <= set(range(70, 131))


def test_the_kind_world_separates_memories_by_the_kind_and_type_alone() -> None:
    import random

    from bench.kindworld import KINDS, TYPES, KindWorld

    world = KindWorld(3)
    notes = list(world.notes.values())
    assert sorted({n.type for n in notes}) == sorted(TYPES)
    # Each memory helps one kind as much as it hurts the other: the same mean for all.
    for n in notes:
        assert sum(world.helps(n.id, kind) for kind in KINDS) == 0
    # Picking one type is right for one kind and wrong for the other.
    facts = [n.id for n in notes if n.type == "fact"][:7]
    assert world.task_value(KINDS[0], facts) > 0.9
    assert world.task_value(KINDS[1], facts) < 0.1
    # Every task finds every memory (the same words), within the budget seven at a time.
    assert all(
        set(world.recall_body(kind)["task"].split()[1:4]) <= set(n.content.split())
        for n in notes
        for kind in KINDS
    )
    rng = random.Random(1)
    rewards = [world.task_reward(KINDS[0], facts, rng) for _ in range(400)]
    assert 0.9 < sum(rewards) / len(rewards) <= 1.0
    inert = KindWorld(3, inert=True)
    assert inert.task_value(KINDS[0], facts) == inert.task_value(KINDS[1], facts) == 0.5
