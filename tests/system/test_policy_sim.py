"""Proof that a recall policy learned from the logged dataset beats baseline_v0 and is
trusted only as far as the off-policy evaluator backs it (bench/policyworld.py; the deep
version is `python -m bench.policy`): the learned policy's true online value beats the
baseline's, the evaluator's interval holds it, logs without exploration get no verdict,
and a policy judged on a shifted workload is caught before it decides anything."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from app.core.config import Settings
from app.worker.runner import Worker
from tests.system.kind_drive import on_kinds
from tests.system.policy_drive import estimate, prove, without_exploration

SEED = 7
# Exploration of the logged policy: each move is one of a few dozen, and at 0.4 the
# short run logs each often enough for the evaluator (bench/policy.py compares 0.2).
EPSILON = 0.4
LOGGED = 800  # baseline_v0's recalls, exploring, that the policy is trained on
ONLINE = 150  # recalls the learned policy decides
SHIFTED = 400  # baseline_v0's recalls on the shifted workload
MARGIN = 0.3  # of true reward per recall; the world's gap is 0.5 to 0.9


@pytest.fixture
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    settings.recall.seed = SEED  # the recall policy's exploration too, so runs repeat
    settings.recall.epsilon = getattr(request, "param", EPSILON)
    settings.learning.worker = False  # the test runs the jobs itself
    return settings


def drain(app: FastAPI) -> Worker:
    state = app.state.engram
    return Worker(state.transactions, state.settings.learning)


async def check_proof(app: FastAPI, client: httpx.AsyncClient, *, seed: int) -> None:
    proof = await prove(
        client,
        seed=seed,
        logged=LOGGED,
        online=ONLINE,
        shifted=SHIFTED,
        wait=drain(app).drain,
    )
    evaluation = proof.evaluation
    assert evaluation["verdict"] == "better", evaluation
    assert proof.activated == 200
    # The canary kept deciding: its reward did not fall below the baseline's interval.
    assert proof.learned_recalls == ONLINE
    assert proof.learned_true - proof.baseline_true >= MARGIN, proof
    # The evaluator was right about it before it ran. Its 95% interval holds the online
    # value in 8 of 10 seeds of bench.policy (the online states drift from the held-out
    # ones), so one seed is held to the point estimate, within 0.15, not to the interval.
    dr = estimate(evaluation, "policy")
    assert abs(proof.learned_true - dr["value"]) <= 0.15, (proof.learned_true, dr)

    # On the shifted workload the same training's estimate drops below the baseline's,
    # and the policy is not let near a recall.
    shifted = proof.shifted
    assert proof.shifted_baseline_true - proof.shifted_learned_true >= MARGIN, proof
    assert shifted["verdict"] != "better", shifted
    assert shifted["estimates"] is not None, shifted
    # The worlds' rewards differ in scale, so the estimate is judged against the baseline's
    # in the same logs: its advantage drops, and below nothing. (Candidates' ages are wall
    # clock, so a seed's estimates move by about 0.03 between runs.)
    advantage = estimate(evaluation, "policy")["value"] - estimate(evaluation, "baseline")["value"]
    dropped = estimate(shifted, "policy")["value"] - estimate(shifted, "baseline")["value"]
    assert dropped < min(0.0, advantage - MARGIN), shifted
    # Not let near a recall, or only on trial (the canary's own test then decides): when
    # the logs cannot rule a gain out.
    chosen = shifted["improvement"][shifted["estimator"]]
    assert proof.shifted_activated == 409 or chosen["high"] > 0, shifted


async def test_a_learned_policy_beats_the_baseline_and_its_evaluation_holds(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await check_proof(app, client, seed=SEED)


@pytest.mark.parametrize("settings", [0.0], indirect=True)
async def test_without_exploration_the_evaluator_refuses_a_verdict(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    evaluation, activated = await without_exploration(
        client, seed=SEED, logged=200, wait=drain(app).drain
    )
    assert evaluation["verdict"] == "refused", evaluation
    assert "exploration" in evaluation["reason"], evaluation
    assert activated == 409


@pytest.mark.slow
@pytest.mark.one_database  # more worlds and seeds: the short run covers each database
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_other_worlds_too(app: FastAPI, client: httpx.AsyncClient, seed: int) -> None:
    await check_proof(app, client, seed=seed)


@pytest.mark.slow
@pytest.mark.one_database  # more worlds and seeds: the short run covers each database
@pytest.mark.parametrize("settings", [0.1], indirect=True)
async def test_a_gain_only_the_task_kind_shows_is_learned_tried_and_promoted(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The kind world (bench/kindworld.py) at the default exploration: facts help one kind
    of task and preferences the other. The logs cannot certify the learned policy (it is
    far from baseline_v0's choices), so it goes on trial as a canary, and its own test
    promotes it (bench.policy --world kinds: in 10 of 10 seeds within 2,100 rewarded
    recalls; this one within 3,000); on the same world made inert, it is
    never promoted."""
    found = await on_kinds(client, seed=2, wait=drain(app).drain, budget=3000)
    assert found.status == "active", found
    assert found.promoted_after is not None, found
    # Surely better (its canary's test said so): 0.45 better in this seed on SQLite.
    assert found.learned_true - found.baseline_true >= 0.1, found


@pytest.mark.slow
@pytest.mark.one_database  # more worlds and seeds: the short run covers each database
@pytest.mark.parametrize("settings", [0.1], indirect=True)
async def test_on_an_inert_kind_world_nothing_is_promoted(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    found = await on_kinds(client, seed=2, wait=drain(app).drain, inert=True)
    assert found.status != "active", found
    assert "better" not in found.verdicts, found
