"""bench.learning context: Engram against the simulated world whose procedures depend on
the context (bench/simcontext.py), on a real server.

First a batch of messy logged episodes (bench/simagents.py) is posted and rewarded, and
one `POST /v1/reflect {"wait": true}` learns from it: per (type, context), the skill
recall hands out there is compared with the context's procedure (precision, recall), and
a context never seen in training must get the general skill or none. Then, on a fresh
server, a messy agent follows the skills recall hands it, against one without memory.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.learning_plot import Panel
from bench.simagents import messy_chance, messy_episodes
from bench.simcontext import context_world, label, training_keys, values_of
from bench.simshapes import Key
from bench.simworld import World, precision_recall
from tests.server import EngramServer
from tests.system.simulate import Recalled, post_batch, simulate, skills_by_context

SEED = 7


def verdict(got: Recalled, values: dict[str, str]) -> str:
    """What recall gave for a context: none, the general skill, its own or another's."""
    if got.steps is None:
        return "none"
    trigger = got.trigger.get("context") or {}
    if not trigger:
        return "general"
    return "its own" if trigger == values else "WRONG: " + _describe(trigger)


def _describe(values: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "-"


def table(world: World, found: dict[tuple[str, Key], Recalled]) -> str:
    """Print what recall hands out per (type, context) as Markdown tables; returns a
    summary line."""
    print("| type, context | skill handed out (steps) | trigger context | P | R |")
    print("|---|---|---|---|---|")
    scores, unseen = [], []
    for (name, key), got in found.items():
        task = world.task_type(name)
        if key not in training_keys(task):
            unseen.append((task, key, got))
            continue
        p, r = precision_recall(got.steps or [], task.procedures[key])
        scores.append((p, r))
        steps, trigger = " ".join(got.steps or ["-"]), _describe(got.trigger.get("context") or {})
        print(f"| {label(task, key)} | {steps} | {trigger} | {p:.2f} | {r:.2f} |")
    print()
    print("| never seen in training | recall hands out | steps |")
    print("|---|---|---|")
    wrong = 0
    for task, key, got in unseen:
        said = verdict(got, values_of(task, key))
        wrong += said.startswith("WRONG")
        print(f"| {label(task, key)} | {said} | {' '.join(got.steps or ['-'])} |")
    print()
    precision, recall = [p for p, _ in scores], [r for _, r in scores]
    return (
        f"{len(scores)} (type, context) cells: precision min {min(precision):.2f} mean "
        f"{sum(precision) / len(scores):.2f}, recall min {min(recall):.2f} mean "
        f"{sum(recall) / len(scores):.2f}; wrong specific skills in unseen contexts: {wrong}"
    )


async def _active(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    page = await client.get("/v1/skills", params={"status": "active", "limit": 200})
    items: list[dict[str, Any]] = page.json()["items"]
    return items


async def context(*, batch: int, episodes: int, block: int, seed: int = SEED) -> Panel:
    """Run both parts; print their tables and return the curve."""
    world = context_world(seed)
    logged = messy_episodes(world, n=batch, seed=seed)
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        # The API only stores: the one reflect pass does the learning.
        server = EngramServer(
            Path(tmp), ENGRAM_LOG_REQUESTS="false", ENGRAM_LEARNING__WORKER="false"
        ).start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
                started = time.perf_counter()
                result = await post_batch(client, logged)
                took = time.perf_counter() - started
                learned = await skills_by_context(client, world, seed=seed)
                skills = await _active(client)
        finally:
            server.stop()
    wins = sum(a.outcome == "success" for a in logged)
    print(
        f"context world (seed {seed}): {len(world.task_types)} task types; {batch} messy "
        f"episodes ({wins} successes), posted, rewarded and reflected on in {took:.1f} s; "
        f"{len(result.get('skill_changes', []))} skill changes, {len(skills)} active skills"
    )
    print("after the batch:", table(world, learned))
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        server = EngramServer(Path(tmp), ENGRAM_LOG_REQUESTS="false").start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                started = time.perf_counter()
                run = await simulate(client, world, episodes=episodes, seed=seed)
                took = time.perf_counter() - started
                after = await skills_by_context(client, world, seed=seed)
        finally:
            server.stop()
    chance = messy_chance(world, trials=4000)
    print(f"\nmessy agent from no memory, {episodes} episodes ({took:.0f} s over HTTP)")
    print("| episodes | with Engram | no memory |")
    print("|---|---|---|")
    rows = run.curve(block)
    for n, with_memory, without in rows:
        print(f"| {n} | {with_memory:.0%} | {without:.0%} |")
    print(f"chance (messy agent without memory, Monte Carlo): {chance:.1%}")
    last = max(0, episodes - 150)
    print(
        f"episodes {last + 1}-{episodes}: {run.rate(run.memory, last, episodes):.0%} with "
        f"Engram, {run.rate(run.chance, last, episodes):.0%} without\n"
    )
    print("what recall hands out at the end of the curve:")
    print("after the curve:", table(world, after))
    return Panel(
        "Procedures per context, messy agent: success per block of episodes",
        rows,
        chance=chance,
    )
