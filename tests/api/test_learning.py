"""The learning loop over HTTP: episode rewards, the job queue and worker, reflections,
patterns and skills, with the worker running in the API process."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from app.core.config import Settings
from app.db.engine import Transactions
from app.main import create_app
from app.models import Job
from app.services.learning import passes as reflect_service
from app.services.learning.credit import CreditService
from app.services.learning.episodes import LearningService
from app.services.operations.jobs import job_row
from app.worker.runner import Worker
from tests.conftest import running


def steps(*names: str, errors: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    out = []
    for i, name in enumerate(names):
        tool, action = name.split(".")
        status = "error" if i in errors else "ok"
        out.append(
            {"tool": tool, "action": action, "status": status, "latency_ms": 10.0, "tokens": 5}
        )
    return out


async def episode(client: httpx.AsyncClient, task_id: str, **fields: Any) -> dict[str, Any]:
    body = {
        "task_id": task_id,
        "task_type": "deploy",
        "steps": steps("git.clone", "pip.install", "pytest.run"),
        "outcome": "success",
    } | fields
    r = await client.post("/v1/episodes", json=body)
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    return created


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.learning.worker = False  # these tests run the jobs themselves (drain)
    return settings


def worker(app: FastAPI) -> Worker:
    state = app.state.engram
    return Worker(state.transactions, state.settings.learning)


async def drain(app: FastAPI) -> None:
    """Run every due job now."""
    await worker(app).drain()


async def test_the_api_process_runs_the_worker(settings: Settings) -> None:
    settings.learning.worker = True
    app = create_app(settings)
    async with running(app) as client:
        ep = await episode(client, "bg")
        for _ in range(500):
            found = (await client.get("/v1/reflections", params={"episode_id": ep["id"]})).json()
            if found["items"]:
                break
            await asyncio.sleep(0.01)
        assert len(found["items"]) == 1


async def test_episode_rewards_are_scored_kept_and_listed(client: httpx.AsyncClient) -> None:
    ep = await episode(client, "t1", outcome="partial", progress=0.5)
    body = {"episode_id": ep["id"], "value": 10, "signals": {"user_rating": 0.5}}
    r = await client.post("/v1/rewards", json=body)
    assert r.status_code == 201, r.text
    reward = r.json()
    assert reward["spec_version"] == "episode-v1"
    assert reward["episode_id"] == ep["id"]
    parts = reward["components"]
    assert parts["outcome"] == 0.5
    assert parts["explicit"] == 10
    assert parts["user_rating"] == 0.25
    assert "efficiency" not in parts  # fewer episodes of the type than the baseline needs
    assert reward["scalar"] == pytest.approx(sum(parts.values()))
    assert reward["episodes"][0]["reward_id"] == reward["id"]

    again = await client.post("/v1/rewards", json=body)
    assert again.status_code == 200
    assert again.json()["id"] == reward["id"]
    other = await client.post("/v1/rewards", json={"episode_id": ep["id"], "value": -5})
    assert other.status_code == 201
    assert other.json()["components"]["explicit"] == -5

    listed = (await client.get("/v1/rewards", params={"episode_id": ep["id"]})).json()["items"]
    assert {r["id"] for r in listed} == {reward["id"], other.json()["id"]}


async def test_efficiency_compares_with_the_task_types_median(client: httpx.AsyncClient) -> None:
    for i in range(5):
        await episode(client, f"base{i}", steps=steps(*[f"shell.s{j}" for j in range(6)]))
    short = await episode(client, "short", steps=steps("shell.s0", "shell.s1", "shell.s2"))
    long = await episode(client, "long", steps=steps(*[f"shell.s{j}" for j in range(12)]))
    fast = await client.post("/v1/rewards", json={"episode_id": short["id"], "value": 0})
    slow = await client.post("/v1/rewards", json={"episode_id": long["id"], "value": 0})
    assert fast.json()["components"]["efficiency"] > 0
    assert slow.json()["components"]["efficiency"] < 0


async def test_bad_episode_rewards(client: httpx.AsyncClient) -> None:
    r = await client.post("/v1/rewards", json={"episode_id": "nope", "value": 1})
    assert r.status_code == 404
    assert r.json()["field"] == "episode_id"
    r = await client.post("/v1/rewards", json={"task_id": "no-such-task", "value": 1})
    assert r.status_code == 404
    ep = await episode(client, "t2")
    r = await client.post("/v1/rewards", json={"episode_id": ep["id"]})
    assert r.status_code == 422
    r = await client.post(
        "/v1/rewards", json={"episode_id": ep["id"], "task_id": "other", "value": 1}
    )
    assert r.status_code == 409


async def test_a_task_reward_scores_its_recalls_and_its_episodes(client: httpx.AsyncClient) -> None:
    await client.post("/v1/memories", json={"type": "fact", "content": "Deploy with the script."})
    rid = (
        await client.post(
            "/v1/recall", json={"task": "deploy script", "task_id": "T", "token_budget": 50}
        )
    ).json()["recall_id"]
    ep = await episode(client, "T")
    first = await client.post(
        "/v1/rewards", json={"task_id": "T", "signals": {"task_success": True}}
    )
    assert first.status_code == 201
    assert first.json()["completed_recalls"] == [rid]
    assert [e["episode_id"] for e in first.json()["episodes"]] == [ep["id"]]
    # A later, different reward of the task scores the episode again; the recall keeps
    # its first reward, and naming the recall with a different reward is a conflict.
    later = await client.post("/v1/rewards", json={"task_id": "T", "value": -1})
    assert later.status_code == 201
    assert later.json()["completed_recalls"] == []
    assert later.json()["episodes"][0]["scalar"] != first.json()["episodes"][0]["scalar"]
    clash = await client.post("/v1/rewards", json={"recall_id": rid, "value": -1})
    assert clash.status_code == 409


async def test_completing_an_episode_queues_learning_and_a_reflection(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    ep = await episode(
        client,
        "t3",
        steps=steps("git.clone", "pip.install", "pip.upgrade", "pytest.run", errors=(1,)),
    )
    jobs = (await client.get("/v1/jobs", params={"kind": "episode.learn"})).json()
    assert [j["payload"]["episode_id"] for j in jobs["items"]] == [ep["id"]]
    await drain(app)
    job = (await client.get(f"/v1/jobs/{jobs['items'][0]['id']}")).json()
    assert job["status"] == "done"
    assert job["result"] == {"learned": 1}

    found = (await client.get("/v1/reflections", params={"episode_id": ep["id"]})).json()
    assert len(found["items"]) == 1
    reflection = found["items"][0]
    assert reflection["episode_id"] == ep["id"]
    assert any("pip.install" in s and "pip.upgrade" in s for s in reflection["successes"])
    assert "pip.install" in reflection["content"]
    memory = (await client.get(f"/v1/memories/{reflection['id']}")).json()
    assert memory["type"] == "reflection"
    assert memory["source_refs"] == [f"episode:{ep['id']}"]


async def test_learning_twice_and_crediting_twice_change_nothing(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    ids = [(await episode(client, f"t{i}"))["id"] for i in range(6)]
    await drain(app)
    before = (await client.get("/v1/patterns", params={"kind": "action"})).json()["items"]
    state = app.state.engram
    async with state.transactions.write() as session:
        again = await LearningService(session, settings=state.settings.learning).learn(
            "default", ids
        )
        await session.commit()
    assert again["learned"] == 0
    assert (await client.get("/v1/patterns", params={"kind": "action"})).json()["items"] == before

    await client.post("/v1/rewards", json={"episode_id": ids[0], "value": 5})
    await drain(app)
    credited = (await client.get("/v1/patterns", params={"kind": "action"})).json()["items"]
    assert credited[0]["mean_reward"] > before[0]["mean_reward"]
    async with state.transactions.write() as session:
        result = await CreditService(session).credit("default", ids)
        await session.commit()
    assert result["credited"] == 0
    assert (await client.get("/v1/patterns", params={"kind": "action"})).json()["items"] == credited


async def test_patterns_need_the_minimum_support(app: FastAPI, client: httpx.AsyncClient) -> None:
    for i in range(4):
        await episode(client, f"few{i}", task_type="rare")
    await drain(app)
    rare = (await client.get("/v1/patterns", params={"task_type": "rare"})).json()["items"]
    assert rare == []
    await episode(client, "few4", task_type="rare")
    await drain(app)
    rare = (await client.get("/v1/patterns", params={"task_type": "rare"})).json()["items"]
    assert {p["kind"] for p in rare} == {"action", "sequence"}
    assert all(p["support"] == 5 and p["success_rate"] == 1.0 for p in rare)
    assert all(len(p["evidence"]) == 5 for p in rare)
    pairs = {p["signature"] for p in rare if p["kind"] == "sequence"}
    assert "git.clone > pytest.run" in pairs  # with a gap between them
    assert "pytest.run > git.clone" not in pairs
    r = await client.get("/v1/patterns", params={"sort": "lcb", "kind": "nope"})
    assert r.status_code == 422


async def test_reflect_on_demand(app: FastAPI, client: httpx.AsyncClient) -> None:
    for i in range(5):
        await episode(client, f"r{i}", task_type="build")
    r = await client.post("/v1/reflect", json={"task_type": "build"})
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["status"] == "done"
    assert result["learned"] == 5
    assert result["reflections"] == 5
    assert {p["task_type"] for p in result["patterns"]} == {"build"}
    queued = await client.post("/v1/reflect", json={"wait": False})
    assert queued.status_code == 202
    job_id = queued.json()["job_id"]
    await drain(app)
    assert (await client.get(f"/v1/jobs/{job_id}")).json()["status"] == "done"

    now = datetime.now(UTC)
    window = {"since": now.isoformat(), "until": (now - timedelta(days=1)).isoformat()}
    assert (await client.post("/v1/reflect", json=window)).status_code == 422
    future = {"since": (now + timedelta(days=1)).isoformat()}
    assert (await client.post("/v1/reflect", json=future)).status_code == 422


async def test_skill_endpoints_404(client: httpx.AsyncClient) -> None:
    assert (await client.get("/v1/skills/nope")).status_code == 404
    assert (await client.get("/v1/skills/nope/history")).status_code == 404
    assert (await client.get("/v1/jobs/nope")).status_code == 404
    assert (await client.get("/v1/skills")).json()["items"] == []


async def test_failing_jobs_back_off_then_dead_letter(settings: Settings) -> None:
    settings.learning.max_attempts = 3
    settings.learning.retry_base_s = 0.001
    app = create_app(settings)
    async with running(app) as client:
        state = app.state.engram
        runner = worker(app)
        async with state.transactions.write() as session:
            row = job_row(
                "default",
                "skills.evolve",
                key="evolve",
                payload={"task_types": 5},  # not a list: the handler fails on it
                now=datetime.now(UTC),
                max_attempts=3,
            )
            await session.execute(Job.__table__.insert(), [row])
            await session.commit()
        await runner.run_once()
        job = (await client.get(f"/v1/jobs/{row['id']}")).json()
        assert job["status"] == "failed"
        assert job["attempts"] == 1
        assert "TypeError" in job["last_error"]
        for _ in range(10):
            await asyncio.sleep(0.01)
            await runner.drain()
        job = (await client.get(f"/v1/jobs/{row['id']}")).json()
        assert job["status"] == "dead"
        assert job["attempts"] == 3
        dead = (await client.get("/v1/jobs", params={"status": "dead"})).json()
        assert dead["counts"]["dead"] == 1


async def test_a_restart_resumes_jobs_left_running(settings: Settings) -> None:
    app = create_app(settings)
    async with running(app) as client:
        ep = await episode(client, "crash")
        state = app.state.engram
        async with state.transactions.write() as session:
            # What a crash in the middle of the job leaves behind.
            job = (await session.scalars(select(Job))).one()
            job.status = "running"
            job.attempts = 1
            job.locked_until = datetime.now(UTC) + timedelta(hours=1)
            await session.commit()
    settings.learning.worker = True  # the API's own worker resumes them when it starts
    app = create_app(settings)
    async with running(app) as client:
        for _ in range(500):
            jobs = (await client.get("/v1/jobs", params={"kind": "episode.learn"})).json()
            if jobs["items"][0]["status"] == "done":
                break
            await asyncio.sleep(0.01)
        assert jobs["items"][0]["status"] == "done"
        assert jobs["items"][0]["attempts"] == 2
        found = (await client.get("/v1/reflections", params={"episode_id": ep["id"]})).json()
        assert len(found["items"]) == 1


async def test_deleting_an_episode_deletes_its_reflection(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    ep = await episode(client, "gone")
    keep = await episode(client, "kept")
    await drain(app)
    found = (await client.get("/v1/reflections", params={"episode_id": ep["id"]})).json()
    reflection = found["items"][0]["id"]
    assert (await client.delete(f"/v1/episodes/{ep['id']}")).status_code == 204
    assert (await client.get(f"/v1/memories/{reflection}")).json()["status"] == "deleted"
    listed = (await client.get("/v1/reflections", params={"episode_id": ep["id"]})).json()
    assert listed["items"] == []
    other = (await client.get("/v1/reflections", params={"episode_id": keep["id"]})).json()
    memory = (await client.get(f"/v1/memories/{other['items'][0]['id']}")).json()
    assert memory["status"] == "active"


async def test_the_periodic_pass_purges_old_finished_jobs(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await episode(client, "old")
    runner = worker(app)
    await runner.drain()
    assert (await client.get("/v1/jobs")).json()["counts"] == {"done": 2}
    runner.settings.keep_done_s = 3600
    await runner.periodic_pass()
    assert (await client.get("/v1/jobs")).json()["counts"] == {"done": 2}
    runner.settings.keep_done_s = 0
    await runner.periodic_pass()
    assert (await client.get("/v1/jobs")).json()["counts"] == {}


async def test_a_long_pass_runs_in_short_transactions(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reflect_service, "PASS_CHUNK", 2)
    monkeypatch.setattr(reflect_service, "PASS_CHUNKS", 1)
    for i in range(5):
        await episode(client, f"p{i}", task_type="batch")
    r = await client.post("/v1/reflect", json={"task_type": "batch"})
    assert r.json()["learned"] == 5  # in three rounds of at most two episodes

    for i in range(5, 10):
        await episode(client, f"p{i}", task_type="batch")
    async with app.state.engram.transactions.write() as session:
        # As for episodes stored before learning existed: only a pass finds them.
        await session.execute(Job.__table__.delete().where(Job.kind == "episode.learn"))
        await session.commit()
    queued = await client.post("/v1/reflect", json={"task_type": "batch", "wait": False})
    await worker(app).drain()
    jobs = (await client.get("/v1/jobs", params={"kind": "reflect.pass"})).json()["items"]
    assert [j["status"] for j in jobs] == ["done", "done", "done"]
    assert jobs[-1]["id"] == queued.json()["job_id"]
    assert [j["result"]["learned"] for j in reversed(jobs)] == [2, 2, 1]
    assert jobs[-1]["result"]["continued"] is True


async def test_two_workers_learn_each_episode_once(
    app: FastAPI, client: httpx.AsyncClient, backend: str
) -> None:
    if backend == "libsql":
        # The libSQL binding holds the GIL while the server makes a writer wait, so two
        # writers of one process would wait on each other until sqld times one out.
        pytest.skip("two writers of one process on libSQL (processes: tests/system)")
    for i in range(40):
        await episode(client, f"c{i}", task_type="pair")
    state = app.state.engram
    small = state.settings.learning.model_copy(update={"batch_size": 7})
    # Two workers without a shared lock, as two `engram worker` processes would be.
    a = Worker(Transactions(state.engine), small)
    b = Worker(Transactions(state.engine), small)
    done = await asyncio.gather(a.drain(), b.drain())
    assert sum(done) >= 40
    jobs = (await client.get("/v1/jobs", params={"kind": "episode.learn", "limit": 100})).json()
    assert len(jobs["items"]) == 40
    assert {j["status"] for j in jobs["items"]} == {"done"}
    assert {j["attempts"] for j in jobs["items"]} == {1}
    base = (await client.get("/v1/patterns", params={"task_type": "pair", "kind": "action"})).json()
    assert {p["support"] for p in base["items"]} == {40}
    reflections = (
        await client.get("/v1/reflections", params={"task_type": "pair", "limit": 100})
    ).json()
    assert len(reflections["items"]) == 40


async def test_recall_of_a_type_is_not_crowded_out_by_other_types(
    client: httpx.AsyncClient,
) -> None:
    for i in range(260):  # many close matches of another type (a task type's reflections)
        body = {"type": "reflection", "content": f"fix ci task reflection number {i} fix ci"}
        assert (await client.post("/v1/memories", json=body)).status_code == 201
    skill = {"type": "skill", "content": "Skill for fix ci: run the linter, then the tests."}
    sid = (await client.post("/v1/memories", json=skill)).json()["id"]
    r = await client.post(
        "/v1/recall",
        json={"task": "fix ci task", "types": ["skill"], "token_budget": 400, "k": 1},
    )
    assert [m["memory_id"] for m in r.json()["selected"]] == [sid]
