"""Rewarded recalls for a real server's policies to learn from, made over HTTP: the notes
of the simulated world (bench/policyworld.py) and recalls rewarded as that world scores
them, in a fixed order (tests/system/policy_drive.py), so a seeded server repeats them."""

from __future__ import annotations

import asyncio

import httpx

from bench.policyworld import PolicyWorld
from tests.system.policy_drive import Log, plant, run

SEED = 7


def log_recalls(url: str, key: str, *, n: int, seed: int = SEED) -> Log:
    """Plant the world of `seed` and make `n` rewarded recalls of it; their log."""

    async def made() -> Log:
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
            world = PolicyWorld(seed)
            await plant(client, world)
            return await run(client, world, n=n, seed=seed)

    return asyncio.run(made())
