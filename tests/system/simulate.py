"""Drive the simulated world (bench/simworld.py) through Engram's HTTP API.

Each episode, the agent with memory asks `POST /v1/recall` for skills of its task
type, follows the one it gets (its steps and `on_error` recoveries come in the
memory's metadata), records the episode with the skills it applied, and rewards the
task. The agent without memory acts at chance on the same task sequence. In a world
with context (bench/simcontext.py) each attempt happens in a sampled context, sent with
the episode and the recall, and the agents are messy ones (bench/simagents.py). Used by
the default test run (in-process client) and by bench/learning.py (real server).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import httpx

from bench.simagents import MessyAgent, SkillAgent
from bench.simcontext import sample_context, training_keys, unseen_key, values_of
from bench.simshapes import Context, Key
from bench.simworld import Attempt, RandomAgent, World

# A recall's selection has this probability or more unless the policy explored.
GREEDY = 0.5


@dataclass
class Run:
    memory: list[bool] = field(default_factory=list)
    chance: list[bool] = field(default_factory=list)
    task_types: list[str] = field(default_factory=list)
    contexts: list[Context | None] = field(default_factory=list)

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


class Recalled(NamedTuple):
    """The skill recall handed out: its steps, recoveries, name and trigger."""

    steps: list[str] | None
    fixes: dict[str, str]
    name: str | None
    trigger: dict[str, Any]
    greedy: bool  # the policy's first choice, not an exploration


async def recall_skill(
    client: httpx.AsyncClient,
    task_type: str,
    task_id: str | None,
    *,
    context: Context | None = None,
) -> Recalled:
    """The skill recall hands out for the task (in its context, if given), if any."""
    body: dict[str, Any] = {
        "task": f"{task_type} task",
        "task_id": task_id,
        "task_type": task_type,
        "scope": {"task_type": task_type},
        "types": ["skill"],
        "token_budget": 400,
        "k": 1,
    }
    if context is not None:
        body["context"] = context  # sent only then: a server without context refuses it
    response = await client.post("/v1/recall", json=body)
    response.raise_for_status()
    for memory in response.json()["selected"]:
        meta = memory.get("metadata") or {}
        if memory["type"] == "skill" and meta.get("steps"):
            # The steps it needs: the simulated agent does what a skill marks optional
            # (usually done, not needed) only if it would have anyway.
            steps = [s["action"] for s in meta["steps"] if not s.get("optional")]
            fixes = {s["action"]: s["on_error"] for s in meta["steps"] if s.get("on_error")}
            greedy = memory["probability"] >= GREEDY
            return Recalled(steps, fixes, meta.get("name"), meta.get("trigger") or {}, greedy)
    return Recalled(None, {}, None, {}, True)


def episode_body(attempt: Attempt, task_id: str, *, skills: list[str]) -> dict[str, Any]:
    """The `POST /v1/episodes` body of an attempt (its context only when it has one)."""
    body: dict[str, Any] = {
        "task_id": task_id,
        "task_type": attempt.task_type,
        "steps": attempt.steps,
        "outcome": attempt.outcome,
        "progress": attempt.progress,
        "skills_applied": skills,
    }
    if attempt.context is not None:
        body["context"] = attempt.context
    return body


async def record(
    client: httpx.AsyncClient, attempt: Attempt, task_id: str, *, skills: list[str]
) -> None:
    """Post the attempt as an episode and reward its task."""
    body = episode_body(attempt, task_id, skills=skills)
    (await client.post("/v1/episodes", json=body)).raise_for_status()
    success = attempt.outcome == "success"
    reward = await client.post(
        "/v1/rewards", json={"task_id": task_id, "signals": {"task_success": success}}
    )
    reward.raise_for_status()


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
    contextual = any(t.fields for t in world.task_types)
    agent: SkillAgent | MessyAgent
    blind: RandomAgent | MessyAgent
    if contextual:
        agent = MessyAgent(world, seed, explore=explore, skip=skip)
        blind = MessyAgent(world, seed + 1)
    else:
        agent = SkillAgent(world, seed, explore=explore, skip=skip)
        blind = RandomAgent(world, seed + 1)
    names = [t.name for t in world.task_types]
    for _ in range(episodes):
        n = len(run.memory)
        task_type = pick.choice(names)
        context = sample_context(pick) if contextual else None
        task_id = f"{prefix}-{n}"
        got = await recall_skill(client, task_type, task_id, context=context)
        attempt = agent.attempt(
            task_type, skill_steps=got.steps, recoveries=got.fixes, context=context
        )
        applied = [got.name] if got.name and attempt.followed_skill else []
        await record(client, attempt, task_id, skills=applied)
        await (wait() if wait is not None else settle(client))
        run.memory.append(attempt.outcome == "success")
        run.chance.append(blind.attempt(task_type, context=context).outcome == "success")
        run.task_types.append(task_type)
        run.contexts.append(context)
    return run


async def post_batch(
    client: httpx.AsyncClient, attempts: list[Attempt], *, prefix: str = "log"
) -> dict[str, Any]:
    """Post logged attempts as rewarded episodes, then run a learning pass and wait for it."""
    for i, attempt in enumerate(attempts):
        await record(client, attempt, f"{prefix}-{i}", skills=[])
    response = await client.post("/v1/reflect", json={"wait": True})
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


async def skills_by_context(
    client: httpx.AsyncClient, world: World, *, seed: int, tries: int = 5
) -> dict[tuple[str, Key], Recalled]:
    """Per (type, context), the skill recall hands out there: every training context, and
    the context never seen in training of each type that has context fields. Each context
    holds random values of the other fields; an exploring choice is asked again."""
    rng = random.Random(seed)
    found = {}
    for task in world.task_types:
        keys = [*training_keys(task), *([unseen_key(task)] if task.fields else [])]
        for key in keys:
            context = sample_context(rng, values=values_of(task, key))
            for _ in range(tries):
                got = await recall_skill(client, task.name, None, context=context)
                if got.greedy:
                    break
            found[(task.name, key)] = got
    return found


async def learned_steps(client: httpx.AsyncClient) -> dict[str, list[str]]:
    """The steps of each task type's active generic skill (those it needs)."""
    found: dict[str, list[str]] = {}
    skills = (await client.get("/v1/skills", params={"status": "active", "limit": 200})).json()
    for skill in skills["items"]:
        if not skill["trigger"].get("context") and not skill["parent_ids"]:
            needed = [s["action"] for s in skill["steps"] if not s.get("optional")]
            found.setdefault(skill["task_type"], needed)
    return found
