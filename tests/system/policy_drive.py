"""Drive the learned-policy world (bench/policyworld.py) through Engram's HTTP API.

Plant the notes with `POST /v1/memories`; make recalls of sampled task types, reward each
with the world's noisy reward (`POST /v1/rewards {recall_id, value}`) and keep its true
value by the policy that decided; train a policy, evaluate it on a window of logs,
activate it. Used by the default test run (in-process client, the test drains the
worker) and by bench/policy.py (real server, its own worker).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from bench.kindworld import KindWorld
from bench.policyworld import PolicyWorld

Wait = Callable[[], Awaitable[Any]]
BASELINE = "baseline_v0"


@dataclass
class Log:
    """True values of the recalls made, by the policy that decided each."""

    values: dict[str, list[float]] = field(default_factory=dict)
    explored: int = 0  # recalls whose selection was not the deciding policy's first choice
    since: datetime = field(default_factory=lambda: datetime.now(UTC))
    until: datetime | None = None

    order: list[str] = field(default_factory=list)  # the deciding policy, recall by recall

    def add(self, policy: str, value: float) -> None:
        self.values.setdefault(policy, []).append(value)
        self.order.append(policy)

    def until_nth(self, policy: str, n: int) -> int:
        """How many recalls were made up to the policy's n-th."""
        seen = 0
        for i, decided in enumerate(self.order, start=1):
            seen += decided == policy
            if seen == n:
                return i
        return len(self.order)

    def mean(self, policy: str) -> float:
        """The mean true value of the policy's recalls."""
        values = self.values.get(policy, [])
        return sum(values) / len(values) if values else float("nan")

    def count(self, policy: str) -> int:
        return len(self.values.get(policy, []))

    def window(self) -> dict[str, str]:
        """The log's time window as the policies' routes take it."""
        out = {"since": self.since.isoformat()}
        if self.until is not None:
            out["until"] = self.until.isoformat()
        return out


def ok(response: httpx.Response, *statuses: int) -> Any:
    """The response's JSON, or an error that shows the request and the answer."""
    if response.status_code not in (statuses or (200,)):
        raise AssertionError(
            f"{response.request.method} {response.request.url.path}: "
            f"{response.status_code} {response.text[:2000]}"
        )
    return response.json()


World = PolicyWorld | KindWorld


async def plant(client: httpx.AsyncClient, world: World) -> None:
    """Store the world's notes."""
    for body in world.memory_bodies():
        ok(await client.post("/v1/memories", json=body), 201)


async def recall_once(
    client: httpx.AsyncClient, world: World, i: int, *, seed: int, log: Log
) -> None:
    """Recall for the i-th task (its type and its reward's noise fixed by seed and i)."""
    rng = random.Random(f"policy-drive-{seed}-{world.shifted}-{i}")
    name = world.sample(rng)
    answer = ok(await client.post("/v1/recall", json=world.recall_body(name)))
    selected = [m["memory_id"] for m in answer["selected"]]
    value = world.task_reward(name, selected, rng)
    ok(
        await client.post("/v1/rewards", json={"recall_id": answer["recall_id"], "value": value}),
        200,
        201,
    )
    log.add(answer["policy"]["id"], world.task_value(name, selected))
    log.explored += any(m["probability"] < 0.5 for m in answer["selected"])


async def run(
    client: httpx.AsyncClient,
    world: World,
    *,
    n: int,
    seed: int,
    concurrency: int = 1,
    start: int = 0,
) -> Log:
    """`n` rewarded recalls; with concurrency 1 (the tests) in a fixed order, so a seeded
    server repeats its decisions."""
    log = Log()
    queue = iter(range(start, start + n))

    async def worker() -> None:
        for i in queue:
            await recall_once(client, world, i, seed=seed, log=log)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    log.until = datetime.now(UTC)
    return log


async def settled(
    client: httpx.AsyncClient,
    policy_id: str,
    wait: Wait,
    *,
    timeout: float = 300.0,
) -> dict[str, Any]:
    """The policy once its training or evaluation job has run."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await wait()
        policy: dict[str, Any] = ok(await client.get(f"/v1/policies/{policy_id}"))
        evaluation = policy.get("evaluation") or {}
        if policy["status"] != "training" and evaluation.get("status") != "pending":
            return policy
        if loop.time() > deadline:
            raise TimeoutError(f"policy {policy_id} still {policy['status']}: {policy}")
        await asyncio.sleep(0.05)


async def train(client: httpx.AsyncClient, wait: Wait, **body: Any) -> dict[str, Any]:
    """Train a policy on the logs (`body`: the window, folds, l2, clip) and evaluate it."""
    started = ok(await client.post("/v1/policies/train", json=body), 202)
    return await settled(client, started["id"], wait)


async def evaluate(
    client: httpx.AsyncClient, policy_id: str, wait: Wait, *, window: dict[str, str]
) -> dict[str, Any]:
    """Evaluate the policy off-policy on the logs of `window`; the evaluation."""
    ok(await client.post(f"/v1/policies/{policy_id}/evaluate", json=window), 202)
    await settled(client, policy_id, wait)
    evaluation: dict[str, Any] = ok(await client.get(f"/v1/policies/{policy_id}/evaluation"))
    return evaluation


async def activate(
    client: httpx.AsyncClient, policy_id: str, *, share: float = 1.0
) -> httpx.Response:
    """Ask for the policy to decide `share` of the recalls (200, or 409 when the
    evaluation does not back it)."""
    return await client.post(f"/v1/policies/{policy_id}/activate", json={"canary_share": share})


def estimate(evaluation: dict[str, Any], who: str, how: str = "dr") -> dict[str, float]:
    """{value, low, high} of `who` ("policy" or "baseline") by `how` (ips, snips, dr)."""
    out: dict[str, float] = evaluation["estimates"][who][how]
    return out


def within(value: float, interval: dict[str, float]) -> bool:
    return interval["low"] <= value <= interval["high"]


@dataclass
class Proof:
    """One seed's run: true values, the evaluator's estimates, and what activation said."""

    seed: int
    baseline_true: float  # baseline_v0 (exploring) on the logged workload
    learned_true: float  # the learned policy online, on the same workload
    learned_recalls: int  # recalls it decided online (the canary may be rolled back)
    evaluation: dict[str, Any]  # of the learned policy, cross-fitted on its logs
    activated: int  # the status of its activation
    shifted_baseline_true: float  # baseline_v0 on the shifted workload
    shifted_learned_true: float  # what the learned choice is worth there (the world says)
    shifted: dict[str, Any]  # the evaluation of a policy trained the same way, on the shift
    shifted_activated: int  # the status of its activation after that evaluation
    status: str = ""  # the learned policy's status after its online recalls
    promoted_after: int | None = None  # rewarded recalls, logged and online, when promoted

    def improvement_covered(self) -> bool:
        """The improvement's interval, by the verdict's estimator, holds the true gain (an
        evaluation without one, as an older server's, holds nothing)."""
        chosen = self.evaluation.get("estimator")
        found = (self.evaluation.get("improvement") or {}).get(chosen)
        return found is not None and within(self.learned_true - self.baseline_true, found)

    def covered(self, who: str = "policy", how: str = "dr") -> bool:
        """The estimate's interval holds the true online value."""
        true = self.learned_true if who == "policy" else self.baseline_true
        return within(true, estimate(self.evaluation, who, how))


async def prove(
    client: httpx.AsyncClient,
    *,
    seed: int,
    logged: int,
    online: int,
    shifted: int,
    wait: Wait,
    concurrency: int = 1,
    share: float = 1.0,
) -> Proof:
    """Log baseline_v0 on the world, train, activate for `share` of the recalls, run the
    learned policy; then log the shifted world and evaluate a policy trained the same way
    on it."""
    world = PolicyWorld(seed)
    await plant(client, world)
    logs = await run(client, world, n=logged, seed=seed, concurrency=concurrency)
    learned = await train(client, wait, **logs.window())
    response = await activate(client, learned["id"], share=share)
    online_log = await run(
        client, world, n=online, seed=seed, concurrency=concurrency, start=logged
    )
    await wait()
    policy = ok(await client.get(f"/v1/policies/{learned['id']}"))
    promoted_after = None
    found = re.search(r"over (\d+) recalls", policy.get("status_reason") or "")
    if policy["status"] == "active" and found:
        # Promoted on its n-th reward: the recalls made until then, logged and online.
        promoted_after = logged + online_log.until_nth(learned["id"], int(found[1]))
    if response.status_code == 200:
        ok(await client.post(f"/v1/policies/{learned['id']}/retire"))

    other = PolicyWorld(seed, shifted=True)
    await plant(client, other)
    shifted_logs = await run(client, other, n=shifted, seed=seed, concurrency=concurrency)
    again = await train(client, wait, **logs.window())
    shifted_eval = await evaluate(client, again["id"], wait, window=shifted_logs.window())
    refused = await activate(client, again["id"])
    return Proof(
        seed=seed,
        baseline_true=logs.mean(BASELINE),
        learned_true=online_log.mean(learned["id"]),
        learned_recalls=online_log.count(learned["id"]),
        evaluation=learned["evaluation"],
        activated=response.status_code,
        shifted_baseline_true=shifted_logs.mean(BASELINE),
        shifted_learned_true=other.mean_value("learned"),
        shifted=shifted_eval,
        shifted_activated=refused.status_code,
        status=policy["status"],
        promoted_after=promoted_after,
    )


async def without_exploration(
    client: httpx.AsyncClient, *, seed: int, logged: int, wait: Wait
) -> tuple[dict[str, Any], int]:
    """On a server whose recalls never explore: the trained policy's evaluation, and the
    status of its activation."""
    world = PolicyWorld(seed)
    await plant(client, world)
    logs = await run(client, world, n=logged, seed=seed)
    assert logs.explored == 0, "the server explores"
    policy = await train(client, wait, **logs.window())
    return policy["evaluation"], (await activate(client, policy["id"])).status_code


@dataclass
class OnNoise:
    """A seed of the inert world: what the evaluator and the canary made of pure noise."""

    seed: int
    verdict: str
    activated: int
    status: str  # the policy's status after the online recalls
    recalls: int  # online recalls it decided


async def on_noise(
    client: httpx.AsyncClient,
    *,
    seed: int,
    logged: int,
    online: int,
    wait: Wait,
    share: float | None,
    force: bool = False,
    concurrency: int = 1,
) -> OnNoise:
    """Log baseline_v0 on the inert world, train, ask to activate a canary for `share` of
    the recalls (None: the service's default; `force`: whatever the verdict, to put the
    canary's own test to work), make `online` more, and report where the policy ended."""
    world = PolicyWorld(seed, inert=True)
    await plant(client, world)
    logs = await run(client, world, n=logged, seed=seed, concurrency=concurrency)
    learned = await train(client, wait, **logs.window())
    body: dict[str, Any] = {} if share is None else {"canary_share": share}
    if force:
        body |= {"force": True, "reason": "the canary's test on pure noise"}
    response = await client.post(f"/v1/policies/{learned['id']}/activate", json=body)
    online_log = await run(
        client, world, n=online, seed=seed, concurrency=concurrency, start=logged
    )
    await wait()
    policy = ok(await client.get(f"/v1/policies/{learned['id']}"))
    return OnNoise(
        seed=seed,
        verdict=learned["evaluation"]["verdict"],
        activated=response.status_code,
        status=policy["status"],
        recalls=online_log.count(learned["id"]),
    )
