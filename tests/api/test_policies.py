"""Learned recall policies through the API: trained from rewarded recalls, judged
off-policy, activated only on a `better` verdict (or forced, audited), rolled back when
the canary's rewards are surely below the others'; bad requests are 4xx."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from app.services.policies.deciders import TTL_S
from app.worker.runner import Worker

WORDS = "deploy service cluster rollout config".split()


@pytest.fixture
def settings(settings: Settings) -> Settings:
    settings.learning.worker = False  # the tests run the jobs themselves
    settings.learning.canary_min_rewards = 20
    settings.learning.canary_promote_after = 10_000
    settings.recall.epsilon = 0.3
    settings.recall.seed = 3
    return settings


async def drain(app: FastAPI) -> None:
    state = app.state.engram
    await Worker(state.transactions, state.settings.learning).drain()


async def world(client: httpx.AsyncClient) -> dict[str, float]:
    """Twelve memories a deploy task finds: the confident ones help, the doubtful ones
    (which baseline_v0 ranks first: more critical) hurt."""
    effects = {}
    for i in range(12):
        helpful = i % 2 == 0
        body = {
            "type": "fact",
            "content": f"{' '.join(WORDS)} note {i} " + "detail " * (10 + 3 * i),
            "criticality": 0.3 if helpful else 0.6,
            "confidence": 0.9 if helpful else 0.2,
        }
        r = await client.post("/v1/memories", json=body)
        assert r.status_code == 201, r.text
        effects[r.json()["id"]] = 0.3 if helpful else -0.3
    return effects


async def run(
    client: httpx.AsyncClient,
    effects: dict[str, float],
    n: int,
    rng: random.Random,
    shift: float = 1.0,
) -> list[tuple[str, float]]:
    """n recalls, each rewarded 0.5 + the selected memories' effects + noise; (policy, reward)."""
    found = []
    for _ in range(n):
        r = await client.post(
            "/v1/recall", json={"task": "deploy the service", "token_budget": 150, "k": 4}
        )
        assert r.status_code == 200, r.text
        answer = r.json()
        value = 0.5 + sum(shift * effects[m["memory_id"]] for m in answer["selected"])
        value += rng.gauss(0, 0.05)
        reward = await client.post(
            "/v1/rewards", json={"recall_id": answer["recall_id"], "value": value}
        )
        assert reward.status_code == 201, reward.text
        found.append((answer["policy"]["id"], value))
    return found


async def trained(app: FastAPI, client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await client.post("/v1/policies/train", json=body)
    assert r.status_code == 202, r.text
    assert r.json()["status"] == "training"
    await drain(app)
    got = (await client.get(f"/v1/policies/{r.json()['id']}")).json()
    return dict(got)


async def test_a_policy_learned_from_logs_is_judged_better_and_decides_as_a_canary(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    effects = await world(client)
    rng = random.Random(5)
    logged = await run(client, effects, 400, rng)
    assert {p for p, _ in logged} == {"baseline_v0"}
    policy = await trained(app, client)
    assert policy["status"] == "candidate", policy
    assert policy["parent_id"] == "baseline_v0"
    # Fitted on every decision; each of the 10 folds judged by the model fitted without it.
    assert policy["training"]["n_train"] == 400
    assert policy["training"]["n_holdout"] == 400
    assert policy["training"]["folds"] == 10
    evaluation = (await client.get(f"/v1/policies/{policy['id']}/evaluation")).json()
    assert evaluation["verdict"] == "better", (evaluation["reason"], evaluation["estimates"])
    assert evaluation["supported_share"] >= 0.95
    est = evaluation["estimates"]
    chosen = evaluation["improvement"][evaluation["estimator"]]
    assert chosen["low"] > 0  # the policy's value minus the baseline's, decision by decision
    assert evaluation["more_recalls_needed"] == 0, str(evaluation)
    low, high = evaluation["reward_range"]
    for name in ("ips", "snips", "dr"):
        for who in ("policy", "baseline"):
            e = est[who][name]
            assert low <= e["low"] <= e["value"] <= e["high"] <= high, (who, name, e)

    r = await client.post(f"/v1/policies/{policy['id']}/activate", json={"canary_share": 1.0})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canary"
    online = await run(client, effects, 60, rng)
    assert {p for p, _ in online} == {policy["id"]}
    baseline_mean = sum(v for _, v in logged) / len(logged)
    learned_mean = sum(v for _, v in online) / len(online)
    assert learned_mean > baseline_mean + 0.2
    # The evaluator's estimate was right about it, within what 60 recalls can tell and what
    # changed since the logs (the memories' use counts and reward means, which the policy
    # reads, grew meanwhile: the whole window's states are judged, not the next ones).
    ips, dr = est["policy"]["ips"], est["policy"]["dr"]
    assert ips["low"] <= learned_mean <= ips["high"], (learned_mean, est)
    assert dr["low"] - 0.25 <= learned_mean <= dr["high"] + 0.1, (learned_mean, est)
    listed = (await client.get("/v1/policies")).json()
    assert [p["id"] for p in listed] == ["baseline_v0", policy["id"]]
    params = {"policy_id": policy["id"], "limit": 100}
    transitions = (await client.get("/v1/rl/transitions", params=params)).json()["items"]
    assert len(transitions) == 60  # each logged with the policy that decided it
    assert all(t["action"]["epsilon"] == 0.3 for t in transitions)
    metadata = (await client.get("/v1/rl/metadata")).json()
    named = {p["id"]: p for p in metadata["policies"]}
    assert named[policy["id"]]["status"] == "canary"
    assert named[policy["id"]]["parent_id"] == "baseline_v0"
    assert "learned" in metadata["fields"]["policy_id"]

    r = await client.post(f"/v1/policies/{policy['id']}/retire")
    assert r.status_code == 200
    assert r.json()["status"] == "retired"
    assert {p for p, _ in await run(client, effects, 5, rng)} == {"baseline_v0"}

    # Back as a canary for half the recalls, when the workload has shifted (the doubtful
    # notes are now the right ones): its rewards fall below the interval of the recalls
    # baseline_v0 decided meanwhile, and it is rolled back by itself.
    r = await client.post(f"/v1/policies/{policy['id']}/activate", json={"canary_share": 0.5})
    assert r.status_code == 200, r.text
    shifted = await run(client, effects, 80, rng, shift=-1.0)
    assert {p for p, _ in shifted} == {"baseline_v0", policy["id"]}
    await drain(app)
    after = (await client.get(f"/v1/policies/{policy['id']}")).json()
    assert after["status"] == "retired", after
    assert after["status_reason"].startswith("rolled back"), after["status_reason"]
    await asyncio.sleep(TTL_S)  # the worker rolled it back: the API sees it within TTL_S
    assert {p for p, _ in await run(client, effects, 5, rng)} == {"baseline_v0"}


async def test_without_exploration_the_evaluator_refuses_and_activation_is_409(
    app: FastAPI, client: httpx.AsyncClient, settings: Settings
) -> None:
    settings.recall.epsilon = 0.0
    effects = await world(client)
    await run(client, effects, 100, random.Random(1))
    settings.recall.epsilon = 0.3  # the policy would explore when it runs
    policy = await trained(app, client)
    assert policy["evaluation"]["verdict"] == "refused", policy["evaluation"]
    assert "support" in policy["evaluation"]["reason"]
    r = await client.post(f"/v1/policies/{policy['id']}/activate", json={})
    assert r.status_code == 409
    assert "refused" in r.json()["detail"]
    r = await client.post(f"/v1/policies/{policy['id']}/activate", json={"force": True})
    assert r.status_code == 422
    assert r.json()["field"] == "reason"
    r = await client.post(
        f"/v1/policies/{policy['id']}/activate", json={"force": True, "reason": "manual trial"}
    )
    assert r.status_code == 200
    assert r.json()["status_reason"] == "forced: manual trial"
    audit = (await client.get("/v1/audit", params={"limit": 50})).json()["items"]
    assert any(e["action"] == "policy.activate" and e["detail"]["forced"] for e in audit)


async def test_bad_requests_are_clear(app: FastAPI, client: httpx.AsyncClient) -> None:
    for folds in (1, 21, 2.5):
        r = await client.post("/v1/policies/train", json={"folds": folds})
        assert r.status_code == 422
        assert r.json()["field"] == "folds"
    r = await client.post(
        "/v1/policies/train",
        json={"since": "2026-12-02T00:00:00Z", "until": "2026-12-01T00:00:00Z"},
    )
    assert r.status_code == 422
    assert (await client.get("/v1/policies/nope")).status_code == 404
    assert (await client.post("/v1/policies/nope/activate", json={})).status_code == 404
    assert (await client.post("/v1/policies/baseline_v0/retire")).status_code == 409
    # Too little to learn from: the training fails, saying why.
    policy = await trained(app, client)
    assert policy["status"] == "failed"
    assert "rewarded recalls" in policy["error"]


async def test_a_canary_that_shows_no_difference_goes_back(
    app: FastAPI, client: httpx.AsyncClient, settings: Settings
) -> None:
    """On rewards that are pure noise, a canary forced into service is neither promoted
    nor kept forever: after canary_max_rewards without a verdict it is retired."""
    settings.learning.canary_max_rewards = 30
    effects = dict.fromkeys(await world(client), 0.0)
    rng = random.Random(11)
    await run(client, effects, 200, rng)
    policy = await trained(app, client)
    body = {"canary_share": 0.5, "force": True, "reason": "try it on noise"}
    r = await client.post(f"/v1/policies/{policy['id']}/activate", json=body)
    assert r.status_code == 200, r.text
    decided = [p for p, _ in await run(client, effects, 100, rng)]
    assert decided.count(policy["id"]) >= 30
    await drain(app)
    after = (await client.get(f"/v1/policies/{policy['id']}")).json()
    assert after["status"] == "retired", after
    assert after["status_reason"].startswith("rolled back, no difference shown"), after


async def test_a_policy_the_logs_cannot_certify_is_tried_and_rolled_back_when_it_gains_nothing(
    app: FastAPI, client: httpx.AsyncClient, settings: Settings
) -> None:
    """On rewards that are pure noise the evaluation cannot say `better`, but neither can it
    rule a gain out: asked to activate, the policy goes on trial as a canary (audited as
    such), and its own test rolls it back once its gain is surely below the minimum
    worth its share."""
    settings.learning.canary_min_effect = 2.0  # (a gain of two sd: surely not, soon)
    settings.learning.canary_promote_after = 500
    effects = dict.fromkeys(await world(client), 0.0)
    rng = random.Random(12)
    await run(client, effects, 200, rng)
    policy = await trained(app, client)
    evaluation = policy["evaluation"]
    assert evaluation["verdict"] == "not_better", evaluation
    assert evaluation["improvement"][evaluation["estimator"]]["high"] > 0, evaluation
    r = await client.post(f"/v1/policies/{policy['id']}/activate", json={})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canary"
    assert r.json()["status_reason"].startswith("on trial (the logs could not certify it)")
    audit = (await client.get("/v1/audit", params={"action": "policy.activate"})).json()
    assert [(e["detail"]["trial"], e["detail"]["forced"]) for e in audit["items"]] == [
        (True, False)
    ], audit
    await run(client, effects, 120, rng)
    await drain(app)
    after = (await client.get(f"/v1/policies/{policy['id']}")).json()
    assert after["status"] == "retired", after
    assert after["status_reason"].startswith("rolled back, its gain is surely below"), after


def test_a_trial_needs_a_supported_evaluation_that_leaves_a_gain_possible() -> None:
    from app.services.policies.service import may_try

    def evaluation(verdict: str, high: float) -> dict[str, Any]:
        return {
            "verdict": verdict,
            "estimator": "dr",
            "improvement": {"dr": {"value": high - 0.5, "low": high - 1, "high": high}},
        }

    assert may_try(evaluation("not_better", 0.2))
    assert not may_try(evaluation("not_better", -0.01))  # surely no gain
    assert not may_try(evaluation("better", 0.2))  # (activated as better, not on trial)
    assert not may_try({"verdict": "refused", "reason": "no exploration"})
    assert not may_try({})
