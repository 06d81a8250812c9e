"""Properties of the reward specs episode-v1 and recall-v1 on odd but valid input."""

from __future__ import annotations

import math
import random
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from app.learning.episode_reward import Baseline, EpisodeFacts, aggregate, episode_reward
from app.learning.rewards import EXPLICIT_BOUND, recall_bounds, recall_reward
from tests.learning.strategies import (
    LATENCY,
    MAX_FLOAT,
    NON_NEGATIVE,
    PROFILE,
    STEPS,
    UNIT,
    step,
)

OUTCOMES = st.sampled_from([None, "success", "partial", "failure", "abstained"])
# Signals as the API accepts them (app/schemas/recall.py: Signals).
TOKENS = st.one_of(st.integers(0, 10**9), st.integers(0, 10**300))
SIGNALS = st.fixed_dictionaries(
    {},
    optional={
        "task_success": st.one_of(st.none(), st.booleans()),
        "unsafe_action": st.one_of(st.none(), st.booleans()),
        "stale_memory_error": st.one_of(st.none(), st.booleans()),
        "tokens_used": st.one_of(st.none(), TOKENS),
        "latency_ms": LATENCY,
        "user_correction": st.booleans(),
        "user_rating": st.one_of(st.none(), st.floats(-1.0, 1.0)),
    },
)
VALUES = st.one_of(st.none(), st.floats(-1e6, 1e6))
BASELINES = st.one_of(
    st.none(),
    st.builds(
        Baseline,
        episodes=st.integers(0, 10**6),
        median_steps=st.one_of(st.none(), NON_NEGATIVE, st.integers(0, 5000).map(float)),
        # Stored durations are sums of step latencies, which can overflow to infinity.
        median_duration_ms=st.one_of(st.none(), NON_NEGATIVE, st.just(math.inf)),
    ),
)
FACTS = st.builds(
    EpisodeFacts,
    outcome=OUTCOMES,
    progress=st.one_of(st.none(), UNIT),
    steps=STEPS,
    duration_ms=st.one_of(st.none(), NON_NEGATIVE),
)
COMPONENT_RANGES = {
    "outcome": (0.0, 1.0),
    "efficiency": (-0.25, 0.25),
    "quality": (-0.25, 0.1),
    "user_rating": (-0.5, 0.5),
}
HUGE_LATENCY_STEPS = [
    {"tool": "t", "action": "a", "status": "ok", "latency_ms": MAX_FLOAT, "tokens": None},
] * 2


def _reward(
    facts: EpisodeFacts, baseline: Baseline | None, value: float | None, signals: dict[str, Any]
) -> tuple[float, dict[str, float]]:
    return episode_reward(facts, baseline=baseline, value=value, signals=signals)


@PROFILE
@given(FACTS, BASELINES, VALUES, SIGNALS)
@example(  # step latencies whose sum overflows a float, with a baseline to compare with
    EpisodeFacts("success", None, HUGE_LATENCY_STEPS, None), Baseline(5, 2.0, 10.0), None, {}
)
def test_episode_components_are_finite_bounded_and_sum_to_the_scalar(
    facts: EpisodeFacts, baseline: Baseline | None, value: float | None, signals: dict[str, Any]
) -> None:
    scalar, components = _reward(facts, baseline, value, signals)
    assert set(components) <= {"outcome", "efficiency", "quality", "tokens", "user_rating"} | {
        "explicit"
    }
    assert all(math.isfinite(part) for part in components.values())
    assert math.isfinite(scalar)
    assert scalar == round(math.fsum(components.values()), 10)
    for name, (low, high) in COMPONENT_RANGES.items():
        if name in components:
            assert low <= components[name] <= high, (name, components[name])
    assert ("quality" in components) == bool(facts.steps)
    assert ("outcome" in components) == (
        facts.outcome is not None or signals.get("task_success") is not None
    )
    assert components.get("tokens", 0.0) <= 0.0
    if value is not None:
        assert components["explicit"] == round(value, 10)
    if facts.outcome == "abstained" and signals.get("task_success") is None:
        assert 0.1 <= components["outcome"] <= 0.2


@PROFILE
@given(FACTS, BASELINES, VALUES, SIGNALS)
def test_better_outcomes_never_score_lower(
    facts: EpisodeFacts, baseline: Baseline | None, value: float | None, signals: dict[str, Any]
) -> None:
    def score(outcome: str, progress: float | None = None) -> float:
        f = EpisodeFacts(outcome, progress, facts.steps, facts.duration_ms)
        return _reward(f, baseline, value, signals)[0]

    # success >= partial (any progress) >= failure, and abstaining beats failing.
    assert score("success") >= score("partial", facts.progress) >= score("failure")
    assert score("abstained") >= score("failure")
    # Strictly better, unless a huge token cost absorbs the difference in float arithmetic.
    if signals.get("task_success") is None and abs(score("failure")) < 2.0**40:
        assert score("abstained") > score("failure")
        assert score("success") > score("failure")


@PROFILE
@given(FACTS, BASELINES, VALUES, SIGNALS, TOKENS, TOKENS)
def test_more_tokens_never_increase_the_reward(
    facts: EpisodeFacts,
    baseline: Baseline | None,
    value: float | None,
    signals: dict[str, Any],
    fewer: int,
    more: int,
) -> None:
    fewer, more = sorted((fewer, more))
    low = _reward(facts, baseline, value, signals | {"tokens_used": more})[0]
    high = _reward(facts, baseline, value, signals | {"tokens_used": fewer})[0]
    assert low <= high
    without = _reward(facts, baseline, value, signals | {"tokens_used": None})[0]
    assert without == _reward(facts, baseline, value, signals | {"tokens_used": 0})[0]


@PROFILE
@given(FACTS, BASELINES, SIGNALS, st.floats(-1e6, 1e6), st.floats(-1e6, 1e6))
def test_rating_value_and_progress_are_monotonic(
    facts: EpisodeFacts, baseline: Baseline | None, signals: dict[str, Any], x: float, y: float
) -> None:
    lo, hi = sorted((x, y))
    assert _reward(facts, baseline, lo, signals)[0] <= _reward(facts, baseline, hi, signals)[0]
    r_lo, r_hi = sorted((max(-1.0, min(1.0, lo)), max(-1.0, min(1.0, hi))))
    assert (
        _reward(facts, baseline, None, signals | {"user_rating": r_lo})[0]
        <= _reward(facts, baseline, None, signals | {"user_rating": r_hi})[0]
    )
    p_lo, p_hi = sorted((abs(x) % 1.0, abs(y) % 1.0))
    part_lo = EpisodeFacts("partial", p_lo, facts.steps, facts.duration_ms)
    part_hi = EpisodeFacts("partial", p_hi, facts.steps, facts.duration_ms)
    assert (
        _reward(part_lo, baseline, None, signals)[0] <= _reward(part_hi, baseline, None, signals)[0]
    )


@PROFILE
@given(FACTS, BASELINES, st.booleans())
def test_task_success_overrides_the_outcome(
    facts: EpisodeFacts, baseline: Baseline | None, success: bool
) -> None:
    components = _reward(facts, baseline, None, {"task_success": success})[1]
    assert components["outcome"] == (1.0 if success else 0.0)


@PROFILE
@given(STEPS, BASELINES, st.integers(0, 3))
def test_abstaining_sooner_never_scores_a_lower_outcome(
    steps: list[dict[str, Any]], baseline: Baseline | None, cut: int
) -> None:
    shorter = steps[: max(0, len(steps) - cut)]

    def outcome(s: list[dict[str, Any]]) -> float:
        return _reward(EpisodeFacts("abstained", None, s, None), baseline, None, {})[1]["outcome"]

    assert outcome(shorter) >= outcome(steps)


@PROFILE
@given(STEPS)
def test_quality_extremes(steps: list[dict[str, Any]]) -> None:
    all_ok = [s | {"status": "ok"} for s in steps]
    all_failed = [s | {"status": "error"} for s in steps]
    ok_parts = _reward(EpisodeFacts("success", None, all_ok, None), None, None, {})[1]
    failed_parts = _reward(EpisodeFacts("failure", None, all_failed, None), None, None, {})[1]
    if steps:
        assert ok_parts["quality"] == 0.0
        assert failed_parts["quality"] == -0.25  # nothing ok later: nothing recovered
    else:
        assert "quality" not in ok_parts


def _naive_quality(steps: list[dict[str, Any]]) -> float:
    """The quality component exactly as the spec words it, step by step."""

    def recovers(failed: dict[str, Any], later: dict[str, Any]) -> bool:
        if later.get("status") != "ok":
            return False
        if failed.get("tool"):
            return bool(later.get("tool") == failed["tool"])
        return not later.get("tool") and later.get("action") == failed.get("action")

    bad = [i for i, s in enumerate(steps) if s.get("status") != "ok"]
    fixed = sum(1 for i in bad if any(recovers(steps[i], s) for s in steps[i + 1 :]))
    return -0.25 * len(bad) / len(steps) + 0.1 * (fixed / len(bad) if bad else 0.0)


@PROFILE
@given(st.lists(step(), min_size=1, max_size=30))
def test_quality_follows_the_spec(steps: list[dict[str, Any]]) -> None:
    components = _reward(EpisodeFacts(None, None, steps, None), None, None, {})[1]
    assert components["quality"] == round(_naive_quality(steps), 10)


@PROFILE
@given(st.lists(st.floats(-1e12, 1e12), max_size=200), st.randoms(use_true_random=False))
@example([-905176091493.5756] * 200, random.Random(0))  # the mean is an ulp off the value
def test_aggregate_is_an_order_free_mean(scalars: list[float], rnd: Any) -> None:
    mean = aggregate(scalars)
    if not scalars:
        assert mean is None
        return
    assert mean is not None
    # The division after the exact sum may round by an ulp, and the result to 10 decimals.
    slack = 1e-10 + 4 * math.ulp(max(abs(min(scalars)), abs(max(scalars))))
    assert min(scalars) - slack <= mean <= max(scalars) + slack
    shuffled = list(scalars)
    rnd.shuffle(shuffled)
    assert aggregate(shuffled) == mean


@PROFILE
@given(VALUES, SIGNALS)
def test_recall_components_are_finite_and_sum_to_the_scalar(
    value: float | None, signals: dict[str, Any]
) -> None:
    scalar, components = recall_reward(value=value, signals=signals)
    assert all(math.isfinite(part) for part in components.values())
    assert math.isfinite(scalar)
    if value is None:
        assert scalar == round(math.fsum(components.values()), 10)
    else:
        assert scalar == value
    assert "user_correction" not in components  # stored, but no weight in recall-v1
    assert all(part <= 0 for name, part in components.items() if name != "task_success")


@PROFILE
@given(SIGNALS, TOKENS, TOKENS, NON_NEGATIVE, NON_NEGATIVE)
def test_recall_reward_orders_outcomes_and_costs(
    signals: dict[str, Any], t1: int, t2: int, l1: float, l2: float
) -> None:
    def scalar(**changes: Any) -> float:
        return recall_reward(value=None, signals=signals | changes)[0]

    assert scalar(task_success=True) >= scalar(task_success=False)
    assert scalar(unsafe_action=True) <= scalar(unsafe_action=False)
    assert scalar(stale_memory_error=True) <= scalar(stale_memory_error=None)
    if abs(scalar(task_success=None)) < 2.0**40:  # else the costs absorb a difference of 1
        assert scalar(task_success=True) > scalar(task_success=False)
        assert scalar(unsafe_action=True) < scalar(unsafe_action=False)
        assert scalar(stale_memory_error=True) < scalar(stale_memory_error=None)
    fewer, more = sorted((t1, t2))
    assert scalar(tokens_used=more) <= scalar(tokens_used=fewer)
    faster, slower = sorted((l1, l2))
    assert scalar(latency_ms=slower) <= scalar(latency_ms=faster)


@given(st.lists(st.tuples(VALUES, SIGNALS), min_size=1, max_size=8))
def test_every_recall_reward_lies_within_the_specs_bounds(
    posted: list[tuple[float | None, dict[str, Any]]],
) -> None:
    rewards = [recall_reward(value=v, signals=s) for v, s in posted]
    low, high = recall_bounds(
        [(v, parts) for (v, _), (_, parts) in zip(posted, rewards, strict=True)]
    )
    assert all(low <= scalar <= high for scalar, _ in rewards)
    if all(v is None for v, _ in posted):
        assert high == 1.0  # at best a success at no cost
    else:
        assert low <= -EXPLICIT_BOUND
        assert high == EXPLICIT_BOUND
