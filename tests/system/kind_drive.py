"""Drive the kind world (bench/kindworld.py) as a user with the default settings would:
log recalls with the server's own exploration, train a policy after `first` rewarded
recalls and ask to activate it as a canary (the default share); when the activation is
refused, or the canary's own test rolls it back, log `every` more and train again (on
everything logged, the canary's recalls too); stop once a canary is promoted or `budget`
rewarded recalls in all were made."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.kindworld import KindWorld
from tests.system.policy_drive import BASELINE, Log, Wait, ok, plant, recall_once, train

CHUNK = 100  # recalls between two looks at the canary


@dataclass
class OnKinds:
    seed: int
    verdicts: list[str] = field(default_factory=list)  # of each training, in order
    activated_at: int | None = None  # rewarded recalls when a canary was accepted
    promoted_after: int | None = None  # rewarded recalls when the canary was promoted
    status: str = "none"  # the last policy's status at the end
    baseline_true: float = float("nan")  # baseline_v0's true mean over the recalls
    learned_true: float = float("nan")  # the learned policy's, over the recalls it decided
    evaluation: dict[str, Any] = field(default_factory=dict)  # the last training's


async def on_kinds(
    client: httpx.AsyncClient,
    *,
    seed: int,
    wait: Wait,
    inert: bool = False,
    budget: int = 2100,
    first: int = 1000,
    every: int = 300,
    concurrency: int = 1,
) -> OnKinds:
    world = KindWorld(seed, inert=inert)
    await plant(client, world)
    log, out = Log(), OnKinds(seed)
    made = 0

    async def more(n: int) -> None:
        nonlocal made
        queue = iter(range(made, min(budget, made + n)))

        async def worker() -> None:
            for i in queue:
                await recall_once(client, world, i, seed=seed, log=log)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        made = min(budget, made + n)

    await more(first)
    policy: dict[str, Any] | None = None
    while made < budget:
        await wait()
        policy = await train(client, wait, since=log.since.isoformat())
        out.verdicts.append(policy["evaluation"]["verdict"])
        out.evaluation = policy["evaluation"]
        response = await client.post(f"/v1/policies/{policy['id']}/activate", json={})
        if response.status_code != 200:
            await more(every)
            continue
        policy, out.activated_at = response.json(), made
        while made < budget and policy["status"] == "canary":
            await more(CHUNK)
            await wait()
            policy = ok(await client.get(f"/v1/policies/{policy['id']}"))
        if policy["status"] == "active":
            break
        if policy["status"] == "retired":
            await more(every)
    if policy is not None:
        await wait()
        policy = ok(await client.get(f"/v1/policies/{policy['id']}"))
        out.status = policy["status"]
        found = re.search(r"over (\d+) recalls", policy.get("status_reason") or "")
        if out.status == "active" and found and out.activated_at is not None:
            # Promoted on its n-th reward: the recalls made until then.
            out.promoted_after = log.until_nth(policy["id"], int(found[1]))
        out.learned_true = log.mean(policy["id"])
    out.baseline_true = log.mean(BASELINE)
    return out
