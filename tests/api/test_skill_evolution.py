"""Skill evolution beyond creation and retirement: specialising a skill that works in one
context and fails in another, merging near-duplicates, composing skills used together."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from app.core.ids import uuid7
from app.models import Skill
from app.worker.runner import Worker


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.learning.worker = False  # the tests run the jobs themselves
    return settings


async def drain(app: FastAPI) -> None:
    state = app.state.engram
    await Worker(state.transactions, state.settings.learning).drain()


def steps(*names: str) -> list[dict[str, Any]]:
    return [{"tool": n.split(".")[0], "action": n.split(".")[1], "status": "ok"} for n in names]


async def post(client: httpx.AsyncClient, i: int, **body: Any) -> None:
    r = await client.post("/v1/episodes", json={"task_id": f"t{i}", **body})
    assert r.status_code == 201, r.text


async def skill(app: FastAPI, name: str, task_type: str, actions: list[str], **extra: Any) -> str:
    now = datetime.now(UTC)
    fields: dict[str, Any] = {
        "namespace": "default",
        "id": uuid7(),
        "name": name,
        "task_type": task_type,
        "trigger": {"task_type": task_type, "context": {}, "keywords": []},
        "steps": [{"action": a, "on_error": None} for a in actions],
        "status": "active",
        "version": 1,
        "uses": 0,
        "successes": 0,
        "reward_sum": 0.0,
        "recent": [],
        "support": 0,
        "success_rate": 0.0,
        "lcb": 0.0,
        "evidence": [],
        "parent_ids": [],
        "memory_id": None,
        "created_at": now,
        "updated_at": now,
        "retired_at": None,
    }
    row = Skill(**(fields | extra))
    async with app.state.engram.transactions.write() as session:
        session.add(row)
        await session.commit()
    return row.id


async def test_a_skill_that_fails_in_one_context_is_specialised(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    rng = random.Random(3)
    procedure = ["git.clone", "npm.install", "npm.test"]
    i = 0
    for domain, outcome in (("web", "success"), ("cli", "failure")):
        for _ in range(20):
            i += 1
            await post(
                client,
                i,
                task_type="ship",
                context={"domain": domain},
                steps=steps(*procedure),
                outcome=outcome,
            )
    for _ in range(40):  # agents that did something else, and failed
        i += 1
        others = rng.sample(["shell.ls", "shell.cat", "http.get", "make.build"], 3)
        await post(client, i, task_type="ship", steps=steps(*others), outcome="failure")
    await drain(app)

    skills = (await client.get("/v1/skills", params={"task_type": "ship"})).json()["items"]
    generic = next(s for s in skills if not s["trigger"]["context"])
    child = next(s for s in skills if s["trigger"]["context"])
    assert [s["action"] for s in generic["steps"]] == procedure
    found = (await client.get("/v1/patterns", params={"kind": "procedure"})).json()["items"]
    assert [(p["task_type"], p["items"]) for p in found] == [("ship", procedure)]
    assert found[0]["support"] == 40
    assert found[0]["successes"] == 20
    assert child["trigger"]["context"] == {"domain": "web"}
    assert child["parent_ids"] == [generic["id"]]
    events = (await client.get(f"/v1/skills/{generic['id']}/history")).json()["items"]
    special = next(e for e in events if e["kind"] == "specialised")
    assert "domain=web" in special["reason"]
    assert "domain=cli" in special["reason"]
    assert special["details"]["child"] == child["id"]
    memory = (await client.get(f"/v1/memories/{child['memory_id']}")).json()
    assert memory["scope"] == {"level": "global", "task_type": "ship", "domain": "web"}


async def test_near_duplicate_skills_are_merged(app: FastAPI, client: httpx.AsyncClient) -> None:
    a = await skill(
        app,
        "deploy-a",
        "deploy",
        ["git.clone", "pip.install", "pytest.run", "k8s.apply", "http.get"],
        uses=8,
        successes=7,
        lcb=0.6,
    )
    b = await skill(
        app,
        "deploy-b",
        "deploy",
        ["git.clone", "pip.install", "pytest.run", "k8s.apply"],
        uses=3,
        successes=2,
        lcb=0.3,
    )
    await post(client, 1, task_type="deploy", steps=steps("git.clone"), outcome="failure")
    await drain(app)
    kept = (await client.get(f"/v1/skills/{a}")).json()
    gone = (await client.get(f"/v1/skills/{b}")).json()
    assert kept["status"] == "active"
    assert kept["uses"] == 11
    assert kept["successes"] == 9
    assert gone["status"] == "retired"
    history = (await client.get(f"/v1/skills/{b}/history")).json()["items"]
    assert history[-1]["kind"] == "retired"
    assert history[-1]["reason"] == "merged into deploy-a"


async def test_skills_used_one_after_the_other_are_composed(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    first = await skill(app, "fetch", "release", ["git.clone", "git.checkout"])
    second = await skill(app, "publish", "release", ["docker.build", "docker.push"])
    for i in range(6):
        await post(
            client,
            i,
            task_type="release",
            steps=steps("git.clone", "git.checkout", "docker.build", "docker.push"),
            outcome="success",
            skills_applied=["fetch", "publish"],
        )
    await drain(app)
    skills = (await client.get("/v1/skills", params={"task_type": "release"})).json()["items"]
    composed = next(s for s in skills if s["parent_ids"] == [first, second])
    assert [s["action"] for s in composed["steps"]] == [
        "git.clone",
        "git.checkout",
        "docker.build",
        "docker.push",
    ]
    events = (await client.get(f"/v1/skills/{composed['id']}/history")).json()["items"]
    assert events[0]["kind"] == "composed"
    assert len(events[0]["evidence"]) == 6
    used = (await client.get(f"/v1/skills/{first}")).json()
    assert used["uses"] == 6
    assert used["successes"] == 6


async def test_an_agents_kind_keeps_what_unguided_sessions_showed_after_a_wrong_skill_retires(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """Coding agents' sessions: a wrong skill (the right steps in the wrong order) misled
    those who followed it and retires. The sessions before it that followed no skill
    still show the procedure (it did not change): a new skill is learned from them."""
    kind = "shop/release"
    wrong = await skill(app, "shop/release-wrong", kind, ["git.push", "git.tag"])
    right = steps("uv.test", "git.tag", "git.push")
    for i in range(8):  # before the skill: unguided, mostly right
        ok = i < 6
        body = {"steps": right if ok else right[:1], "outcome": "success" if ok else "failure"}
        await post(client, i, agent_id="claude-code", task_type=kind, **body)
    for i in range(8, 20):  # following the wrong skill: failures
        wrong_order = steps("uv.test", "git.push", "git.tag")
        await post(
            client, i, agent_id="claude-code", task_type=kind, steps=wrong_order,
            outcome="failure", skills_applied=[wrong],
        )  # fmt: skip
    await drain(app)
    found = (await client.get("/v1/skills", params={"task_type": kind})).json()["items"]
    status = {s["name"]: s["status"] for s in found}
    assert status.pop("shop/release-wrong") == "retired"
    [(name, state)] = status.items()
    assert state == "active", found
    [learned] = [s for s in found if s["name"] == name]
    assert [s["action"] for s in learned["steps"]] == ["uv.test", "git.tag", "git.push"]
