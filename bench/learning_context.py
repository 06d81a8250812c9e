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

from bench.learning_plot import BLUE, GREEN, RED, Panel
from bench.simagents import messy_chance, messy_episodes
from bench.simcontext import context_world, label, training_keys, values_of
from bench.simshapes import Key
from bench.simworld import World, precision_recall
from tests.server import EngramServer
from tests.system.simulate import Recalled, post_batch, settle, simulate, skills_by_context

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
    """Run both parts; print their tables and return the curves."""
    world = context_world(seed)
    logged = messy_episodes(world, n=batch, seed=seed)
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        server = EngramServer(Path(tmp), ENGRAM_LOG_REQUESTS="false").start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
                started = time.perf_counter()
                await post_batch(client, logged)
                await settle(client)
                took = time.perf_counter() - started
                learned = await skills_by_context(client, world, seed=seed)
                skills = await _active(client)
                warm = await simulate(client, world, episodes=episodes, seed=seed)
                warm_end = await skills_by_context(client, world, seed=seed)
        finally:
            server.stop()
    wins = sum(a.outcome == "success" for a in logged)
    print(
        f"context world (seed {seed}): {len(world.task_types)} task types; {batch} messy "
        f"episodes ({wins} successes) posted, rewarded and learned from in {took:.1f} s; "
        f"{len(skills)} active skills"
    )
    print("\nwhat recall hands out after the logged batch:")
    print(table(world, learned), "\n")
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        server = EngramServer(Path(tmp), ENGRAM_LOG_REQUESTS="false").start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                started = time.perf_counter()
                cold = await simulate(client, world, episodes=episodes, seed=seed)
                took = time.perf_counter() - started
                cold_end = await skills_by_context(client, world, seed=seed)
        finally:
            server.stop()
    chance = messy_chance(world, trials=4000)
    print(f"\nmessy agent, {episodes} episodes from no memory ({took:.0f} s over HTTP)")
    print("and as many after the logged batch, on the same task sequence")
    print("| episodes | Engram, after the logs | Engram, from nothing | no memory |")
    print("|---|---|---|---|")
    rows = [
        (n, w, c, none)
        for (n, w, _), (_, c, none) in zip(warm.curve(block), cold.curve(block), strict=True)
    ]
    for n, w, c, none in rows:
        print(f"| {n} | {w:.0%} | {c:.0%} | {none:.0%} |")
    print(f"chance (messy agent without memory, Monte Carlo): {chance:.1%}")
    last = max(0, episodes - 150)
    print(
        f"episodes {last + 1}-{episodes}: {warm.rate(warm.memory, last, episodes):.0%} after "
        f"the logs, {cold.rate(cold.memory, last, episodes):.0%} from nothing, "
        f"{cold.rate(cold.chance, last, episodes):.0%} without memory\n"
    )
    print("what recall hands out after the logs and the curve:")
    print(table(world, warm_end), "\n")
    print("what recall hands out after the curve from nothing:")
    print(table(world, cold_end))
    return Panel(
        "Procedures per context, messy agent: success per block of episodes",
        rows,
        lines=[
            (f"with Engram, after {batch} logged episodes", GREEN),
            ("with Engram, from nothing", BLUE),
            ("no memory", RED),
        ],
        chance=chance,
        legend_at=0.7,
    )
