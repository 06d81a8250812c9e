"""Learned recall policies through the client, sync and async, against a real server whose
own worker runs the jobs: trained on logged recalls, judged off-policy, waited for,
activated as a canary and retired; and the refusals a user meets, each as its class."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from engram_client import (
    AsyncEngram,
    Conflict,
    Engram,
    Forbidden,
    InvalidInput,
    NotFound,
    TimedOut,
)
from engram_client.models import Evaluation, PolicyRead
from tests.client.policy_seed import log_recalls
from tests.server import EngramServer, serving
from tests.system.policy_drive import Log

KEY = "egk_client-policy-tests-operator-key-0123456789"
LOGGED = 150  # rewarded recalls of baseline_v0, exploring: enough for estimates
WAIT_S = 120.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngramServer]:
    # The server's own worker trains and evaluates; seeded exploration repeats the logs.
    with serving(
        tmp_path_factory.mktemp("client-policies"),
        key=KEY,
        ENGRAM_RECALL__SEED="7",
        ENGRAM_RECALL__EPSILON="0.3",
    ) as srv:
        yield srv


@pytest.fixture(scope="module")
def logged(server: EngramServer) -> Log:
    return log_recalls(server.url, KEY, n=LOGGED)


@pytest.fixture
def engram(server: EngramServer) -> Iterator[Engram]:
    with Engram(server.url, key=KEY) as client:
        yield client


def judged(evaluation: Evaluation | None) -> Evaluation:
    """A done evaluation with a verdict, its reason, and every estimate of both policies
    with its interval."""
    assert evaluation is not None
    assert evaluation.status == "done", evaluation
    assert evaluation.verdict in ("better", "not_better"), evaluation
    assert evaluation.reason
    for who in ("policy", "baseline"):
        for how in ("ips", "snips", "dr"):
            estimate = evaluation.estimates[who][how]
            assert estimate.low <= estimate.high, (who, how, estimate)
    assert evaluation.estimator in evaluation.improvement
    assert evaluation.smallest_improvement is not None
    return evaluation


def test_trained_judged_activated_and_retired(engram: Engram, logged: Log) -> None:
    first = engram.policies.list()[0]
    assert (first.id, first.kind, first.status) == ("baseline_v0", "rules", "active")
    policy = engram.policies.train(since=logged.since, folds=4, wait=True, timeout=WAIT_S)
    assert isinstance(policy, PolicyRead)
    assert (policy.status, policy.kind, policy.parent_id) == (
        "candidate",
        "linear_bandit",
        "baseline_v0",
    )
    assert policy.training is not None
    # Fitted on every logged recall, each judged by the model of the other 3 folds.
    assert policy.training["n_train"] == policy.training["n_holdout"] == LOGGED
    assert policy.training["folds"] == 4
    evaluation = judged(policy.evaluation)
    assert evaluation.n_decisions == policy.training["n_holdout"]
    assert engram.policies.evaluation(policy.id) == evaluation

    # Forced, so that the test holds whatever the verdict on these few logs.
    canary = engram.policies.activate(
        policy.id, canary_share=0.5, force=True, reason="client test: a canary on purpose"
    )
    assert (canary.status, canary.canary_share) == ("canary", 0.5)
    listed = {p.id: p.status for p in engram.policies.list()}
    assert listed[policy.id] == "canary"
    assert list(listed)[0] == "baseline_v0"  # first, and still the active one
    assert listed["baseline_v0"] == "active"

    retired = engram.policies.retire(policy.id)
    assert retired.status == "retired"
    assert engram.policies.get(policy.id).retired_at is not None
    assert engram.policies.get("baseline_v0").status == "active"


def test_waiting_for_training_and_evaluation(engram: Engram, logged: Log) -> None:
    started = engram.policies.train(since=logged.since)
    assert started.status == "training"  # the answer comes before the job runs
    with pytest.raises(TimedOut) as gave_up:
        engram.policies.train(since=logged.since, wait=True, timeout=0)
    assert gave_up.value.status is None
    assert "training not done after 0 s" in gave_up.value.detail
    assert gave_up.value.body["policy"]["status"] == "training"

    # The same policy, waited for: the wait asks until the job has run.
    policy = engram.policies.train(since=logged.since, wait=True, timeout=WAIT_S)
    assert policy.status == "candidate"
    again = engram.policies.evaluate(
        policy.id, since=logged.since, until=logged.until, wait=True, timeout=WAIT_S
    )
    evaluation = judged(again.evaluation)
    assert evaluation.n_decisions == LOGGED  # the whole window this time, not the held-out part


def test_refusals_are_the_hierarchy_s_classes(
    server: EngramServer, engram: Engram, logged: Log
) -> None:
    with pytest.raises(Conflict) as fallback:
        engram.policies.retire("baseline_v0")
    assert "cannot be retired" in fallback.value.detail
    with pytest.raises(NotFound):
        engram.policies.get("lp_no-such-policy")
    with pytest.raises(NotFound):
        engram.policies.evaluation("baseline_v0")  # the reference is not judged
    with pytest.raises(InvalidInput) as folds:
        engram.policies.train(folds=1)
    assert folds.value.field == "folds"

    policy = engram.policies.train(since=logged.since, wait=True, timeout=WAIT_S)
    with pytest.raises(InvalidInput) as reasonless:
        engram.policies.activate(policy.id, force=True)
    assert reasonless.value.field == "reason"

    made = httpx.post(
        f"{server.url}/v1/keys", json={"role": "reader"}, headers={"Authorization": f"Bearer {KEY}"}
    )
    assert made.status_code == 201, made.text
    with Engram(server.url, key=made.json()["key"]) as reader:
        assert policy.id in {p.id for p in reader.policies.list()}
        with pytest.raises(Forbidden):
            reader.policies.train()
        with pytest.raises(Forbidden):
            reader.policies.activate(policy.id, canary_share=1.0)
    assert engram.policies.get(policy.id).status == "candidate"


async def test_the_async_client_waits_too(server: EngramServer, logged: Log) -> None:
    async with AsyncEngram(server.url, key=KEY) as engram:
        policy = await engram.policies.train(since=logged.since, wait=True, timeout=WAIT_S)
        assert policy.status == "candidate"
        again = await engram.policies.evaluate(
            policy.id, until=logged.until, wait=True, timeout=WAIT_S
        )
        assert judged(again.evaluation).n_decisions == LOGGED
        assert await engram.policies.evaluation(policy.id) == again.evaluation
        canary = await engram.policies.activate(
            policy.id, canary_share=0.2, force=True, reason="client test: a canary on purpose"
        )
        assert (canary.status, canary.canary_share) == ("canary", 0.2)
        assert policy.id in [p.id for p in await engram.policies.list()]
        assert (await engram.policies.retire(policy.id)).status == "retired"
        assert (await engram.policies.get(policy.id)).status == "retired"
