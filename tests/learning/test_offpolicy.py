"""The off-policy evaluator on a world whose rewards are known: its estimates of a policy
it never ran are right within their intervals, it needs exploration to judge anything but
the logging policy, and a rebuilt decision that does not match the log is not used."""

from __future__ import annotations

import random

import pytest

from app.learning.offpolicy import summarise, terms
from app.learning.policy import Candidate, decide, plan

EFFECT = {True: 0.3, False: -0.3}  # a confident memory helps, a doubtful one hurts
BUDGET = {"token_budget": 200, "k": 5, "max_sensitivity": "restricted"}


def request(rng: random.Random) -> list[Candidate]:
    return [
        Candidate(
            memory_id=f"m{i}",
            type="fact",
            status="active",
            sensitivity="low",
            criticality=rng.uniform(0, 0.69),
            confidence=rng.uniform(0, 1),
            retrieval_score=rng.uniform(0, 1),
            expected_utility=0.5,
            token_cost=rng.randint(20, 80),
        )
        for i in range(10)
    ]


def value(cands: list[Candidate], selection: frozenset[str]) -> float:
    helps = {c.memory_id: EFFECT[c.confidence > 0.5] for c in cands}
    return 0.5 + sum(helps[m] for m in selection)


def evaluate(epsilon: float, n: int, *, seed: int = 1) -> tuple[dict[str, object], float, float]:
    """Log baseline_v0 exploring with `epsilon`, judge the policy that knows the effects:
    (summary, its true value, baseline_v0's true value)."""
    rng, draws = random.Random(seed), random.Random(seed + 1)
    policy, baseline, rewards, predicted = [], [], [], []
    true_policy = true_baseline = 0.0
    for _ in range(n):
        cands = request(rng)
        gains = {c.memory_id: EFFECT[c.confidence > 0.5] for c in cands}
        d = decide(cands, epsilon=epsilon, rng=draws, **BUDGET)
        logging = plan(cands, epsilon=epsilon, **BUDGET)
        target = plan(cands, epsilon=0.2, gains=gains, **BUDGET)
        base = plan(cands, epsilon=0.2, **BUDGET)
        true_policy += sum(p * value(cands, s) for s, p in target.selections()) / n
        true_baseline += sum(p * value(cands, s) for s, p in base.selections()) / n
        found = terms(
            logging,
            [target, base],
            selected=frozenset(d.order),
            inclusion=d.inclusion,
            gains={},  # no reward model: the doubly robust estimate is IPS
            intercept=0.0,
        )
        assert found is not None
        (p, b), logged = found
        policy.append(p)
        baseline.append(b)
        rewards.append(value(cands, frozenset(d.order)) + draws.gauss(0, 0.1))
        predicted.append(logged)
    summary = summarise(
        policy, baseline, rewards=rewards, logged_predictions=predicted, unusable=0, rounds=200
    )
    return summary, true_policy, true_baseline


def test_a_policy_never_run_is_estimated_within_its_interval() -> None:
    summary, truth, base_truth = evaluate(0.2, 2000)
    assert summary["supported_share"] == 1.0
    estimates = summary["estimates"]
    assert isinstance(estimates, dict)
    for name in ("ips", "dr"):
        got = estimates["policy"][name]
        assert got["low"] <= truth <= got["high"], (name, got, truth)
    assert estimates["baseline"]["ips"]["value"] == pytest.approx(base_truth, abs=0.05)
    assert truth > base_truth + 0.5
    assert summary["verdict"] == "better"


def test_without_exploration_there_is_no_verdict() -> None:
    summary, _, _ = evaluate(0.0, 300)
    assert summary["verdict"] == "refused"
    assert summary["supported_share"] < 0.95
    assert "exploration was off" in str(summary["reason"])


def test_a_decision_that_does_not_match_its_log_is_not_used() -> None:
    rng = random.Random(4)
    cands = request(rng)
    d = decide(cands, epsilon=0.2, rng=random.Random(5), **BUDGET)
    rebuilt = plan(cands, epsilon=0.3, **BUDGET)  # not the epsilon it was drawn with
    found = terms(
        rebuilt,
        [rebuilt],
        selected=frozenset(d.order),
        inclusion=d.inclusion,
        gains={},
        intercept=0,
    )
    assert found is None
