"""Properties of the recall policy baseline_v0: hard rules, budget, k, and exploration
probabilities that agree with every selection the policy can make."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from hypothesis import given
from hypothesis import strategies as st

from app.learning.policy import (
    SENSITIVITY_LEVELS,
    SUPPRESSED_STATUSES,
    Candidate,
    Decision,
    decide,
    rule_mode,
)
from app.schemas.memory import MemoryStatus, MemoryType
from tests.learning.strategies import PROFILE, UNIT

if TYPE_CHECKING:
    from _typeshed import SupportsLenAndGetItem

T = TypeVar("T")


@st.composite
def candidates(draw: st.DrawFn) -> list[Candidate]:
    n = draw(st.integers(0, 30))
    costs = st.one_of(st.integers(1, 60), st.integers(0, 2_000_000))
    return [
        Candidate(
            memory_id=f"m{i}",
            type=draw(st.sampled_from([t.value for t in MemoryType])),
            status=draw(st.sampled_from([s.value for s in MemoryStatus])),
            sensitivity=draw(st.sampled_from(SENSITIVITY_LEVELS)),
            criticality=draw(st.one_of(UNIT, st.sampled_from([0.0, 0.7, 1.0]))),
            confidence=draw(UNIT),
            retrieval_score=draw(st.one_of(UNIT, st.just(0.0))),
            expected_utility=draw(UNIT),
            token_cost=draw(costs),
        )
        for i in range(n)
    ]


REQUEST = st.fixed_dictionaries(
    {
        "token_budget": st.one_of(st.integers(1, 300), st.integers(1, 1_000_000)),
        "k": st.integers(1, 100),
        "max_sensitivity": st.sampled_from(SENSITIVITY_LEVELS),
        "epsilon": st.one_of(UNIT, st.sampled_from([0.0, 0.1, 1.0])),
    }
)


class Scripted(random.Random):
    """Takes the branch it is told to: explore or not, and which items to choose."""

    def __init__(self, explore: bool, picks: Sequence[int]) -> None:
        super().__init__(0)
        self.explore, self.picks, self.lengths = explore, list(picks), list[int]()

    def random(self) -> float:
        return 0.0 if self.explore else 1.0

    def choice(self, seq: SupportsLenAndGetItem[T]) -> T:
        self.lengths.append(len(seq))
        return seq[self.picks[len(self.lengths) - 1]]


def outcomes(cands: list[Candidate], req: dict[str, Any]) -> list[tuple[float, Decision]]:
    """Every selection the policy can make, with its probability under the documented
    scheme: greedy 1 - epsilon, each move epsilon / |A| / (|F(i)| + 1)."""
    greedy = decide(cands, **req, rng=Scripted(False, []))
    eps = req["epsilon"]
    probe = Scripted(True, [0, 0])
    decide(cands, **req, rng=probe)
    if not probe.lengths:  # no soft pick to move: the greedy selection is certain
        return [(1.0, greedy)]
    found = [(1.0 - eps, greedy)]
    for a in range(probe.lengths[0]):
        first = Scripted(True, [a, 0])
        decide(cands, **req, rng=first)
        for f in range(first.lengths[1]):
            found.append((eps / first.lengths[0] / first.lengths[1], decide(
                cands, **req, rng=Scripted(True, [a, f])
            )))  # fmt: skip
    return found


def by_id(cands: list[Candidate]) -> dict[str, Candidate]:
    return {c.memory_id: c for c in cands}


@PROFILE
@given(candidates(), REQUEST, st.integers(0, 2**32))
def test_hard_rules_budget_and_k_hold_for_every_draw(
    cands: list[Candidate], req: dict[str, Any], seed: int
) -> None:
    d = decide(cands, **req, rng=random.Random(seed))
    c = by_id(cands)
    ceiling = SENSITIVITY_LEVELS.index(req["max_sensitivity"])
    assert set(d.modes).isdisjoint(d.suppressed)
    assert set(d.modes) | set(d.suppressed) == set(c)
    assert d.order == list(d.modes)
    assert len(d.order) <= req["k"]
    assert sum(c[i].token_cost for i in d.order) <= req["token_budget"]
    for mid, cand in c.items():
        if cand.status in SUPPRESSED_STATUSES:
            assert d.suppressed[mid] == SUPPRESSED_STATUSES[cand.status]
            assert d.inclusion[mid] == 0.0
        elif SENSITIVITY_LEVELS.index(cand.sensitivity) > ceiling:
            assert "sensitivity" in d.suppressed[mid]
            assert d.inclusion[mid] == 0.0
        else:
            assert mid in d.eligible
    for mid, mode in d.modes.items():
        assert mode == rule_mode(c[mid])
        assert (mode == "reverify_before_use") == (c[mid].status == "quarantined")
        if c[mid].sensitivity == "restricted":
            assert req["max_sensitivity"] == "restricted"
    assert set(d.inclusion) == set(c)
    assert all(0.0 <= p <= 1.0 for p in d.inclusion.values())
    assert 0.0 < d.propensity <= 1.0 or (d.explored and req["epsilon"] < 1e-300)


@PROFILE
@given(candidates(), REQUEST)
def test_logged_probabilities_agree_with_every_reachable_selection(
    cands: list[Candidate], req: dict[str, Any]
) -> None:
    found = outcomes(cands, req)
    eps = req["epsilon"]
    # The selections are distinct, their probabilities sum to 1, and each logs its own.
    assert len({frozenset(d.order) for _, d in found}) == len(found)
    assert math.isclose(math.fsum(p for p, _ in found), 1.0, abs_tol=1e-9)
    greedy = found[0][1]
    for p, d in found:
        assert math.isclose(d.propensity, p, rel_tol=1e-12, abs_tol=1e-300)
        assert d.explored == (d is not greedy)
        assert d.inclusion == greedy.inclusion  # logged before the draw, the same for all
        # Hard-rule suppressions, with their reasons, never depend on the draw.
        assert {i: r for i, r in d.suppressed.items() if i not in d.eligible} == {
            i: r for i, r in greedy.suppressed.items() if i not in greedy.eligible
        }
        # A move replaces a pick or leaves it out.
        assert len(d.order) in (len(greedy.order), len(greedy.order) - 1)
        # Constraint-mode picks are never moved out.
        assert {i for i, m in greedy.modes.items() if m == "constraint"} <= set(d.order)
    for mid, logged in greedy.inclusion.items():
        exact = math.fsum(p for p, d in found if mid in d.modes)
        assert math.isclose(logged, exact, abs_tol=1e-9), (mid, logged, exact)
    expected_size = math.fsum(p * len(d.order) for p, d in found)
    assert math.isclose(math.fsum(greedy.inclusion.values()), expected_size, abs_tol=1e-9)
    if len(found) > 1 and eps > 0:
        assert greedy.propensity == 1.0 - eps


@PROFILE
@given(candidates(), REQUEST, st.integers(0, 2**32), st.integers(0, 2**32))
def test_without_exploration_the_choice_is_deterministic_and_greedy(
    cands: list[Candidate], req: dict[str, Any], seed1: int, seed2: int
) -> None:
    req = req | {"epsilon": 0.0}
    d = decide(cands, **req, rng=random.Random(seed1))
    assert d == decide(cands, **req, rng=random.Random(seed2))
    assert d.propensity == 1.0
    assert not d.explored
    assert d.inclusion == {mid: (1.0 if mid in d.modes else 0.0) for mid in by_id(cands)}
    c = by_id(cands)

    def priority(mid: str) -> tuple[float, ...]:
        x = c[mid]
        return (
            0.0 if rule_mode(x) == "constraint" else 1.0,
            -x.criticality,
            -x.expected_utility,
            -x.retrieval_score,
            -x.confidence,
        )

    ranked = sorted(d.eligible, key=priority)  # stable: ties keep the candidates' order
    assert d.order == [mid for mid in ranked if mid in d.modes]
    for mid in set(d.eligible) - set(d.modes):  # left out only when it did not fit
        ahead = [x for x in ranked[: ranked.index(mid)] if x in d.modes]
        used = sum(c[x].token_cost for x in ahead)
        assert len(ahead) >= req["k"] or used + c[mid].token_cost > req["token_budget"]
        assert d.suppressed[mid] == (
            "over k" if len(d.order) >= req["k"] else "over the token budget"
        )


@PROFILE
@given(candidates(), REQUEST, st.integers(0, 2**32))
def test_seeded_runs_are_reproducible(
    cands: list[Candidate], req: dict[str, Any], seed: int
) -> None:
    first, second = random.Random(seed), random.Random(seed)
    for _ in range(5):
        assert decide(cands, **req, rng=first) == decide(cands, **req, rng=second)
