"""Retries are safe: an Idempotency-Key or a client-chosen id returns the first result."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from tests.conftest import episode_body


async def count(client: httpx.AsyncClient) -> int:
    return len((await client.get("/v1/episodes", params={"limit": "200"})).json()["items"])


async def test_idempotency_key_replays_first_result(client: httpx.AsyncClient) -> None:
    headers = {"Idempotency-Key": "retry-1"}
    first = await client.post("/v1/episodes", json=episode_body(), headers=headers)
    second = await client.post("/v1/episodes", json=episode_body(), headers=headers)
    assert first.status_code == second.status_code == 201
    assert second.json()["id"] == first.json()["id"]
    assert second.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert await count(client) == 1


async def test_idempotency_key_with_other_content_is_a_conflict(client: httpx.AsyncClient) -> None:
    headers = {"Idempotency-Key": "retry-2"}
    first = await client.post("/v1/episodes", json=episode_body("a"), headers=headers)
    other = await client.post("/v1/episodes", json=episode_body("b"), headers=headers)
    assert other.status_code == 409
    assert other.json()["error"] == "Conflict"
    assert other.json()["id"] == first.json()["id"]
    assert await count(client) == 1


async def test_client_supplied_id_is_idempotent(client: httpx.AsyncClient) -> None:
    body = episode_body(id="agent-7:run-42")
    first = await client.post("/v1/episodes", json=body)
    again = await client.post("/v1/episodes", json=body)
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"] == "agent-7:run-42"
    different = await client.post("/v1/episodes", json={**body, "verdict": "other"})
    assert different.status_code == 409
    assert (await client.get("/v1/episodes/agent-7:run-42")).status_code == 200
    assert await count(client) == 1


async def test_concurrent_identical_posts_make_one_episode(client: httpx.AsyncClient) -> None:
    headers = {"Idempotency-Key": "burst"}
    results = await asyncio.gather(
        *(client.post("/v1/episodes", json=episode_body(), headers=headers) for _ in range(25))
    )
    assert {r.status_code for r in results} == {201}
    assert len({r.json()["id"] for r in results}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in results) == 24
    by_id = await asyncio.gather(
        *(client.post("/v1/episodes", json=episode_body(id="same")) for _ in range(25))
    )
    assert {r.status_code for r in by_id} == {201}
    assert await count(client) == 2


async def test_replay_survives_deletion_of_nothing_else(client: httpx.AsyncClient) -> None:
    """After the first episode is deleted, the same key creates a new one (nothing to replay)."""
    headers = {"Idempotency-Key": "gone"}
    first = (await client.post("/v1/episodes", json=episode_body(), headers=headers)).json()
    assert (await client.delete(f"/v1/episodes/{first['id']}")).status_code == 204
    again = await client.post("/v1/episodes", json=episode_body(), headers=headers)
    assert again.status_code == 201
    assert again.json()["id"] != first["id"]
    assert "idempotent-replayed" not in again.headers


async def test_concurrent_conflicting_completions_one_wins(client: httpx.AsyncClient) -> None:
    eid = (await client.post("/v1/episodes", json={"task_id": "race"})).json()["id"]
    outcomes = ["success", "failure", "partial", "abstained"] * 5
    results = await asyncio.gather(
        *(client.post(f"/v1/episodes/{eid}/complete", json={"outcome": o}) for o in outcomes)
    )
    won = {r.json()["outcome"] for r in results if r.status_code == 200}
    assert len(won) == 1
    winner = won.pop()
    for outcome, r in zip(outcomes, results, strict=True):
        assert r.status_code == (200 if outcome == winner else 409), r.text
    assert (await client.get(f"/v1/episodes/{eid}")).json()["outcome"] == winner


MEMORY = {"type": "constraint", "content": "Never push to main on Fridays.", "criticality": 0.9}


async def _memory_count(client: httpx.AsyncClient) -> int:
    return len((await client.get("/v1/memories", params={"limit": "200"})).json()["items"])


async def test_memory_idempotency_key_replays_first_result(client: httpx.AsyncClient) -> None:
    headers = {"Idempotency-Key": "mem-1"}
    first = await client.post("/v1/memories", json=MEMORY, headers=headers)
    second = await client.post("/v1/memories", json=MEMORY, headers=headers)
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    other = await client.post("/v1/memories", json={**MEMORY, "content": "x"}, headers=headers)
    assert other.status_code == 409
    assert other.json()["id"] == first.json()["id"]
    # Without a key, two posts are two memories, as before.
    assert (await client.post("/v1/memories", json=MEMORY)).status_code == 201
    assert await _memory_count(client) == 2


async def test_memory_chosen_id_replays_and_conflicts(client: httpx.AsyncClient) -> None:
    body = {**MEMORY, "id": "rule-7"}
    first = await client.post("/v1/memories", json=body)
    again = await client.post("/v1/memories", json=body)
    assert first.status_code == again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true"
    assert (await client.post("/v1/memories", json={**body, "criticality": 0.1})).status_code == 409
    assert await _memory_count(client) == 1


async def test_concurrent_keyed_memories_make_one(client: httpx.AsyncClient) -> None:
    headers = {"Idempotency-Key": "mem-burst"}
    results = await asyncio.gather(
        *(client.post("/v1/memories", json=MEMORY, headers=headers) for _ in range(20))
    )
    assert {r.status_code for r in results} == {201}
    assert len({r.json()["id"] for r in results}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in results) == 19
    assert await _memory_count(client) == 1


async def _transitions(client: httpx.AsyncClient) -> list[dict[str, object]]:
    r = await client.get("/v1/rl/transitions", params={"status": "pending", "limit": "200"})
    assert r.status_code == 200, r.text
    items: list[dict[str, object]] = r.json()["items"]
    return items


async def test_recall_idempotency_key_logs_one_transition(client: httpx.AsyncClient) -> None:
    await client.post("/v1/memories", json=MEMORY)
    ask = {"task": "push to main", "task_id": "t1", "token_budget": 500}
    headers = {"Idempotency-Key": "recall-1"}
    first = await client.post("/v1/recall", json=ask, headers=headers)
    results = await asyncio.gather(
        *(client.post("/v1/recall", json=ask, headers=headers) for _ in range(10))
    )
    assert first.status_code == 200, first.text
    assert first.json()["selected"], "the memory is recalled"
    assert all(r.status_code == 200 for r in results)
    assert all(r.json() == first.json() for r in results)
    assert all(r.headers["idempotent-replayed"] == "true" for r in results)
    assert [t["id"] for t in await _transitions(client)] == [first.json()["recall_id"]]
    other = await client.post("/v1/recall", json={**ask, "k": 3}, headers=headers)
    assert other.status_code == 409
    assert other.json()["field"] == "Idempotency-Key"
    # Without a key, a repeated recall is a second decision.
    plain = await client.post("/v1/recall", json=ask)
    assert plain.json()["recall_id"] != first.json()["recall_id"]
    assert len(await _transitions(client)) == 2


async def test_idempotency_key_must_be_short(client: httpx.AsyncClient) -> None:
    long = {"Idempotency-Key": "k" * 257}
    for path, body in [("/v1/memories", MEMORY), ("/v1/recall", {"task": "t", "token_budget": 5})]:
        r = await client.post(path, json=body, headers=long)
        assert r.status_code == 422
        assert r.json()["field"] == "Idempotency-Key"


async def test_keyed_rewards_keys_and_supersedes_replay(client: httpx.AsyncClient) -> None:
    await client.post("/v1/episodes", json=episode_body("task-r"))
    reward = {"task_id": "task-r", "value": 1.0}
    headers = {"Idempotency-Key": "reward-1"}
    first = await client.post("/v1/rewards", json=reward, headers=headers)
    again = await client.post("/v1/rewards", json=reward, headers=headers)
    assert first.status_code == again.status_code == 201, first.text
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    other = await client.post("/v1/rewards", json={**reward, "value": -1.0}, headers=headers)
    assert other.status_code == 409
    assert other.json()["field"] == "Idempotency-Key"
    listed = (await client.get("/v1/rewards", params={"task_id": "task-r"})).json()["items"]
    assert len(listed) == 1
    # Under another key, another score for the episode is a second reward (episodes keep
    # each one).
    second = await client.post(
        "/v1/rewards", json={**reward, "value": -1.0}, headers={"Idempotency-Key": "reward-2"}
    )
    assert second.status_code == 201
    listed = (await client.get("/v1/rewards", params={"task_id": "task-r"})).json()["items"]
    assert len(listed) == 2


async def test_keyed_key_creation_makes_one_key_and_never_shows_its_secret_again(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    admin = {"Authorization": f"Bearer {await make_key('ns', 'admin')}", "Idempotency-Key": "k"}
    made = await client.post("/v1/keys", json={"role": "reader"}, headers=admin)
    assert made.status_code == 201, made.text
    # The retry learns which key was made, not its secret: only the hash is stored.
    remade = await client.post("/v1/keys", json={"role": "reader"}, headers=admin)
    assert remade.status_code == 409, remade.text
    assert (remade.json()["field"], remade.json()["id"]) == ("Idempotency-Key", made.json()["id"])
    assert "revoke it" in remade.json()["detail"]
    assert made.json()["key"] not in remade.text
    listed = (await client.get("/v1/keys", headers=admin)).json()["items"]
    assert sorted(k["role"] for k in listed) == ["admin", "reader"]
    bearer = {"Authorization": f"Bearer {made.json()['key']}"}
    assert (await client.get("/v1/memories", headers=bearer)).status_code == 200
    audit = await client.get("/v1/audit", params={"action": "key.create.replayed"}, headers=admin)
    [event] = audit.json()["items"]
    assert (event["target"], event["outcome"]) == (made.json()["id"], "denied")


async def test_a_kept_answer_belongs_to_the_key_that_made_it(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    """Two keys of one namespace under the same Idempotency-Key: the second never gets the
    first's answer (here a recall of restricted memories), it gets a 409."""
    wide = {"Authorization": f"Bearer {await make_key('ns', 'admin', 'restricted')}"}
    other = {"Authorization": f"Bearer {await make_key('ns', 'admin', 'high')}"}
    secret = {**MEMORY, "content": "The vault token is s.8f2k", "sensitivity": "restricted"}
    assert (await client.post("/v1/memories", json=secret, headers=wide)).status_code == 201
    ask = {"task": "vault token", "token_budget": 500, "max_sensitivity": "restricted"}
    keyed = {"Idempotency-Key": "shared-1"}
    first = await client.post("/v1/recall", json=ask, headers=wide | keyed)
    assert "s.8f2k" in first.text
    second = await client.post("/v1/recall", json=ask, headers=other | keyed)
    assert second.status_code == 409, second.text
    assert "s.8f2k" not in second.text
    reward = {"task_id": "task-x", "value": 1.0}
    await client.post("/v1/episodes", json=episode_body("task-x"), headers=wide)
    assert (await client.post("/v1/rewards", json=reward, headers=wide | keyed)).status_code == 201
    assert (await client.post("/v1/rewards", json=reward, headers=other | keyed)).status_code == 409


async def test_keyed_supersede_replays(client: httpx.AsyncClient) -> None:
    old = (await client.post("/v1/memories", json=MEMORY)).json()["id"]
    headers = {"Idempotency-Key": "sup-1"}
    new = {"content": "Never push to main."}
    first = await client.post(f"/v1/memories/{old}/supersede", json=new, headers=headers)
    again = await client.post(f"/v1/memories/{old}/supersede", json=new, headers=headers)
    assert first.status_code == again.status_code == 201, first.text
    assert again.json()["id"] == first.json()["id"]
    assert again.headers["idempotent-replayed"] == "true"
    # Without the key, the retry finds the memory superseded: a 409.
    assert (await client.post(f"/v1/memories/{old}/supersede", json=new)).status_code == 409
    assert await _memory_count(client) == 2


async def test_keyed_step_appends_add_their_steps_once(
    client: httpx.AsyncClient, make_key: Callable[..., Any]
) -> None:
    agent = {"Authorization": f"Bearer {await make_key('ns', 'agent')}"}
    other = {"Authorization": f"Bearer {await make_key('ns', 'agent')}"}
    body = episode_body("task-s", steps=1)
    del body["outcome"], body["verdict"]
    eid = (await client.post("/v1/episodes", json=body, headers=agent)).json()["id"]
    step = {"tool": "shell", "action": "pytest", "status": "ok"}
    keyed = agent | {"Idempotency-Key": "append-1"}
    answers = await asyncio.gather(
        *(client.post(f"/v1/episodes/{eid}/steps", json=[step], headers=keyed) for _ in range(5))
    )
    assert all(r.status_code == 200 for r in answers), [r.text for r in answers]
    assert {r.json()["step_count"] for r in answers} == {2}
    # Another append under the key, or the same one from another key, is a conflict.
    changed = await client.post(
        f"/v1/episodes/{eid}/steps", json=[{**step, "action": "ruff"}], headers=keyed
    )
    assert (changed.status_code, changed.json()["field"]) == (409, "Idempotency-Key")
    theirs = other | {"Idempotency-Key": "append-1"}
    assert (
        await client.post(f"/v1/episodes/{eid}/steps", json=[step], headers=theirs)
    ).status_code == 409
    # A new key adds; the first one's retry still adds nothing, even once it is completed.
    again = agent | {"Idempotency-Key": "append-2"}
    assert (await client.post(f"/v1/episodes/{eid}/steps", json=[step], headers=again)).json()[
        "step_count"
    ] == 3
    done = await client.post(
        f"/v1/episodes/{eid}/complete", json={"outcome": "success"}, headers=agent
    )
    assert done.status_code == 200, done.text
    late = await client.post(f"/v1/episodes/{eid}/steps", json=[step], headers=keyed)
    assert (late.status_code, late.json()["step_count"]) == (200, 3)
    full = (await client.get(f"/v1/episodes/{eid}", headers=agent)).json()
    assert [s["action"] for s in full["steps"]] == ["step_0", "pytest", "pytest"]
