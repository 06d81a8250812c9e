"""Proof that Engram learns procedures that depend on the context (bench/simcontext.py):
from messy logs, one skill per (type, context) that recall hands out in that context,
never another context's in a context never seen; then an agent that follows them."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from app.worker.runner import Worker
from bench.simagents import messy_chance, messy_episodes
from bench.simcontext import context_world, label, training_keys, values_of
from bench.simworld import World, precision_recall
from tests.system.simulate import post_batch, simulate, skills_by_context

SEED = 7
LOGGED = 400  # messy episodes, half of them successes


async def learned_every_context(
    client: httpx.AsyncClient, world: World, *, logged: int, seed: int
) -> None:
    """Post `logged` messy episodes, learn, and check what recall hands out per context."""
    await post_batch(client, messy_episodes(world, n=logged, seed=seed))
    found = await skills_by_context(client, world, seed=seed)
    for (name, key), got in found.items():
        task = world.task_type(name)
        where = (label(task, key), got)
        if key in training_keys(task):
            precision, recall = precision_recall(got.steps or [], task.procedures[key])
            assert precision >= 0.9, where
            assert recall >= 0.9, where
        else:
            # A context never seen gets the general skill or none, never another's.
            assert not got.trigger.get("context"), where


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.recall.seed = SEED  # the recall policy's exploration too, so runs repeat
    settings.learning.worker = False  # the test runs the jobs itself, after each episode
    return settings


async def test_messy_logs_teach_a_skill_per_context_and_an_agent_follows_them(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    state = app.state.engram
    worker = Worker(state.transactions, state.settings.learning)
    world = context_world(SEED)
    await learned_every_context(client, world, logged=LOGGED, seed=SEED)
    await worker.drain()
    # Every type that depends on its context has a skill per context, none general.
    skills = (await client.get("/v1/skills", params={"status": "active", "limit": 200})).json()
    for task in world.task_types:
        contexts = [s["trigger"]["context"] for s in skills["items"] if s["task_type"] == task.name]
        if task.fields:
            assert sorted(map(sorted, map(dict.items, contexts))) == sorted(
                sorted(values_of(task, key).items()) for key in training_keys(task)
            ), task.name
        else:
            assert contexts == [{}], task.name

    # An agent that mostly does not know the procedures follows what recall hands it.
    run = await simulate(client, world, episodes=200, seed=SEED, wait=worker.drain)
    chance = messy_chance(world, trials=3000)
    assert chance <= 0.2
    assert run.rate(run.memory, 100, 200) >= 0.85, run.curve(50)
    assert run.rate(run.chance, 0, 200) <= 0.3, run.curve(50)


@pytest.mark.slow
@pytest.mark.one_database  # more worlds: the short run covers each database
@pytest.mark.parametrize("seed", [1, 2, 3, 11])
async def test_other_worlds_are_learned_from_500_logged_episodes(
    client: httpx.AsyncClient, seed: int
) -> None:
    # At 400, seeds 1 and 11 still lack a pair cell or two (no skill yet, never a wrong one).
    await learned_every_context(client, context_world(seed), logged=500, seed=seed)
