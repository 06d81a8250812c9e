"""baseline_v0: hard rules, greedy fill, and exploration whose logged probabilities are exact."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from app.learning.policy import Candidate, decide, rule_mode


def cand(mid: str, **kw: object) -> Candidate:
    base: dict[str, object] = {
        "memory_id": mid,
        "type": "fact",
        "status": "active",
        "sensitivity": "low",
        "criticality": 0.5,
        "confidence": 0.8,
        "retrieval_score": 0.5,
        "expected_utility": 0.5,
        "token_cost": 10,
    }
    return Candidate(**(base | kw))  # type: ignore[arg-type]


def test_modes() -> None:
    assert rule_mode(cand("a", type="constraint", criticality=0.9)) == "constraint"
    assert rule_mode(cand("a", type="constraint", criticality=0.5)) == "context"
    assert rule_mode(cand("a", sensitivity="high", criticality=0.7)) == "constraint"
    assert rule_mode(cand("a", type="episode", criticality=0.3)) == "background"
    assert rule_mode(cand("a", type="reflection", criticality=0.8)) == "context"
    assert rule_mode(cand("a", status="quarantined", type="constraint", criticality=1)) == (
        "reverify_before_use"
    )


def test_hard_rules_and_greedy_fill() -> None:
    cands = [
        cand("deleted", status="deleted", criticality=1.0),
        cand("expired", status="expired"),
        cand("old", status="superseded"),
        cand("secret", sensitivity="restricted", criticality=0.9),
        cand("rule", type="constraint", criticality=0.8, retrieval_score=0.0, token_cost=30),
        cand("hi", criticality=0.9, token_cost=30),
        cand("mid", criticality=0.6, token_cost=30),
        cand("lo", criticality=0.1, token_cost=30),
    ]
    d = decide(
        cands, token_budget=90, k=10, max_sensitivity="high", epsilon=0.0, rng=random.Random(0)
    )
    assert d.order == ["rule", "hi", "mid"]
    assert d.modes["rule"] == "constraint"
    assert d.suppressed["deleted"] == "deleted"
    assert d.suppressed["expired"] == "expired"
    assert d.suppressed["old"].startswith("superseded")
    assert "restricted" in d.suppressed["secret"]
    assert d.suppressed["lo"] == "over the token budget"
    assert d.propensity == 1.0
    allowed = decide(
        cands,
        token_budget=90,
        k=10,
        max_sensitivity="restricted",
        epsilon=0.0,
        rng=random.Random(0),
    )
    assert "secret" in allowed.order
    over_k = decide(
        cands, token_budget=1000, k=2, max_sensitivity="high", epsilon=0.0, rng=random.Random(0)
    )
    assert over_k.order == ["rule", "hi"]
    assert over_k.suppressed["mid"] == "over k"


def test_exploration_never_touches_constraints_or_hard_rules() -> None:
    cands = [
        cand("rule", type="constraint", criticality=0.9),
        cand("gone", status="deleted"),
        *[cand(f"c{i}", criticality=i / 10) for i in range(6)],
    ]
    rng = random.Random(1)
    for _ in range(500):
        d = decide(cands, token_budget=30, k=3, max_sensitivity="high", epsilon=0.5, rng=rng)
        assert "rule" in d.order
        assert "gone" not in d.order
        # A move replaces one soft pick or leaves it out.
        assert len(d.order) == 3 or (d.explored and len(d.order) == 2)


@pytest.mark.parametrize("epsilon", [0.1, 0.4])
def test_inclusion_frequencies_match_logged_probabilities(epsilon: float) -> None:
    cands = [
        cand("rule", type="constraint", criticality=0.9, token_cost=20),
        cand("a", criticality=0.9, token_cost=30),
        cand("b", criticality=0.8, token_cost=10),
        cand("c", criticality=0.7, token_cost=40),
        cand("d", criticality=0.6, token_cost=15),
        cand("e", criticality=0.5, token_cost=60),
        cand("f", criticality=0.4, token_cost=12),
    ]
    rng = random.Random(42)
    runs = 20_000
    counts: Counter[str] = Counter()
    selections: Counter[tuple[str, ...]] = Counter()
    logged: dict[tuple[str, ...], float] = {}
    first = None
    for _ in range(runs):
        d = decide(cands, token_budget=100, k=4, max_sensitivity="high", epsilon=epsilon, rng=rng)
        first = first or d
        assert d.inclusion == first.inclusion  # the probabilities do not depend on the draw
        counts.update(d.order)
        key = tuple(sorted(d.order))
        selections[key] += 1
        logged[key] = d.propensity
    for mid, p in first.inclusion.items():
        assert abs(counts[mid] / runs - p) < 0.015, (mid, counts[mid] / runs, p)
    assert (
        abs(sum(logged.values()) - 1.0) < 1e-9
    )  # every reachable selection, probabilities sum to 1
    for key, n in selections.items():
        assert abs(n / runs - logged[key]) < 0.015, (key, n / runs, logged[key])
    assert first.inclusion["rule"] == 1.0
    # Greedy takes rule, a, b, c (100 tokens); each soft pick is moved with epsilon / 3:
    # a and c each give way to d, to f or to nothing, b (10 tokens of room) only to nothing.
    third = epsilon / 3
    assert first.inclusion == pytest.approx(
        {"rule": 1, "a": 1 - third, "b": 1 - third, "c": 1 - third, "d": 2 * third / 3,
         "e": 0, "f": 2 * third / 3}
    )  # fmt: skip
    assert len(selections) == 8


def test_a_learned_policy_leaves_out_only_what_falls_below_its_models_margin() -> None:
    """A soft pick is left out when its predicted gain is at most -floor (the model's
    margin): a gain the logs cannot tell from 0 keeps it."""
    cands = [cand("up", token_cost=10), cand("flat", token_cost=10), cand("down", token_cost=10)]
    gains = {"up": 0.2, "flat": -0.05, "down": -0.4}

    def chosen(floor: float) -> list[str]:
        d = decide(
            cands, token_budget=100, k=5, max_sensitivity="high", epsilon=0.0,
            rng=random.Random(0), gains=gains, floor=floor,
        )  # fmt: skip
        return d.order

    assert chosen(0.0) == ["up"]
    assert chosen(0.1) == ["up", "flat"]
    assert chosen(0.5) == ["up", "flat", "down"]
