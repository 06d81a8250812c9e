"""Drive the simulated world (bench/simworld.py) through Engram's HTTP API.

Each episode, the agent with memory asks `POST /v1/recall` for skills of its task
type, follows the one it gets (its steps and `on_error` recoveries come in the
memory's metadata), records the episode with the skills it applied, and rewards the
task. The agent without memory acts at chance on the same task sequence. Used by the
default test run (in-process client) and by bench/learning.py (real server).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.simagents import SkillAgent
from bench.simworld import RandomAgent, World


@dataclass
class Run:
    memory: list[bool] = field(default_factory=list)
    chance: list[bool] = field(default_factory=list)
    task_types: list[str] = field(default_factory=list)

    def rate(self, which: list[bool], start: int, end: int) -> float:
        part = which[start:end]
        return sum(part) / len(part) if part else 0.0

    def curve(self, block: int) -> list[tuple[int, float, float]]:
        """(episodes so far, success with memory, success without) per block."""
        out = []
        for start in range(0, len(self.memory), block):
            end = min(start + block, len(self.memory))
            out.append(
                (end, self.rate(self.memory, start, end), self.rate(self.chance, start, end))
            )
        return out


async def settle(client: httpx.AsyncClient, *, timeout: float = 60.0) -> None:
    """Wait until the background worker has run every job that is due."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        counts = (await client.get("/v1/jobs", params={"limit": 1})).json()["counts"]
        if not counts.get("queued") and not counts.get("running"):
            return
        await asyncio.sleep(0.005)
    raise TimeoutError("jobs did not finish")


async def recall_skill(
    client: httpx.AsyncClient, task_type: str, task_id: str
) -> tuple[list[str] | None, dict[str, str], str | None]:
    """(steps, recoveries, skill name) of the skill recall hands out, if any."""
    response = await client.post(
        "/v1/recall",
        json={
            "task": f"{task_type} task",
            "task_id": task_id,
            "task_type": task_type,
            "scope": {"task_type": task_type},
            "types": ["skill"],
            "token_budget": 400,
            "k": 1,
        },
    )
    response.raise_for_status()
    for memory in response.json()["selected"]:
        meta = memory.get("metadata") or {}
        if memory["type"] == "skill" and meta.get("steps"):
            steps = [s["action"] for s in meta["steps"]]
            fixes = {s["action"]: s["on_error"] for s in meta["steps"] if s.get("on_error")}
            return steps, fixes, meta.get("name")
    return None, {}, None


async def simulate(
    client: httpx.AsyncClient,
    world: World,
    *,
    episodes: int,
    seed: int,
    run: Run | None = None,
    prefix: str = "sim",
    explore: float = 0.03,
    skip: float = 0.01,
    wait: Callable[[], Awaitable[Any]] | None = None,
) -> Run:
    """Run `episodes` more episodes of both agents on the same task sequence; after each,
    wait for learning (`wait`, else poll the job queue)."""
    run = run or Run()
    pick = random.Random(seed)
    agent = SkillAgent(world, seed, explore=explore, skip=skip)
    blind = RandomAgent(world, seed + 1)
    names = [t.name for t in world.task_types]
    for _ in range(episodes):
        n = len(run.memory)
        task_type = pick.choice(names)
        task_id = f"{prefix}-{n}"
        steps, fixes, skill = await recall_skill(client, task_type, task_id)
        attempt = agent.attempt(task_type, skill_steps=steps, recoveries=fixes)
        body: dict[str, Any] = {
            "task_id": task_id,
            "task_type": task_type,
            "steps": attempt.steps,
            "outcome": attempt.outcome,
            "progress": attempt.progress,
            "skills_applied": [skill] if skill and attempt.followed_skill else [],
        }
        (await client.post("/v1/episodes", json=body)).raise_for_status()
        success = attempt.outcome == "success"
        reward = await client.post(
            "/v1/rewards", json={"task_id": task_id, "signals": {"task_success": success}}
        )
        reward.raise_for_status()
        await (wait() if wait is not None else settle(client))
        run.memory.append(success)
        run.chance.append(blind.attempt(task_type).outcome == "success")
        run.task_types.append(task_type)
    return run


async def learned_steps(client: httpx.AsyncClient) -> dict[str, list[str]]:
    """The steps of each task type's active generic skill."""
    found: dict[str, list[str]] = {}
    skills = (await client.get("/v1/skills", params={"status": "active", "limit": 200})).json()
    for skill in skills["items"]:
        if not skill["trigger"].get("context") and not skill["parent_ids"]:
            found.setdefault(skill["task_type"], [s["action"] for s in skill["steps"]])
    return found
