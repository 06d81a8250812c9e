"""episode-v1: exact components per outcome, baseline-gated efficiency, quality, extras."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.learning.episode_reward import (
    EPISODE_SPEC,
    EPISODE_SPEC_VERSION,
    Baseline,
    EpisodeFacts,
    aggregate,
    episode_reward,
    median,
)


def step(
    tool: str | None, action: str, status: str = "ok", latency_ms: float | None = None
) -> dict[str, Any]:
    return {
        "tool": tool,
        "action": action,
        "status": status,
        "latency_ms": latency_ms,
        "tokens": None,
    }


def facts(
    outcome: str | None,
    steps: list[dict[str, Any]] | None = None,
    *,
    progress: float | None = None,
    duration_ms: float | None = None,
) -> EpisodeFacts:
    return EpisodeFacts(
        outcome=outcome, progress=progress, steps=steps or [], duration_ms=duration_ms
    )


def reward(
    f: EpisodeFacts,
    *,
    baseline: Baseline | None = None,
    value: float | None = None,
    signals: dict[str, Any] | None = None,
) -> tuple[float, dict[str, float]]:
    return episode_reward(f, baseline=baseline, value=value, signals=signals or {})


def test_spec_is_json_and_versioned() -> None:
    assert EPISODE_SPEC_VERSION == "episode-v1"
    assert json.loads(json.dumps(EPISODE_SPEC))["version"] == "episode-v1"


@pytest.mark.parametrize(
    ("outcome", "progress", "expected"),
    [
        ("success", None, 1.0),
        ("partial", 0.3, 0.3),
        ("partial", None, 0.5),
        ("partial", 1.7, 1.0),
        ("failure", None, 0.0),
        ("abstained", None, 0.2),  # no steps: early = 1 / (1 + 0) = 1
    ],
)
def test_outcome_component(outcome: str, progress: float | None, expected: float) -> None:
    scalar, components = reward(facts(outcome, progress=progress))
    assert components == {"outcome": expected}
    assert scalar == expected


def test_open_episode_has_no_outcome() -> None:
    assert reward(facts(None)) == (0.0, {})


def test_task_success_overrides_outcome() -> None:
    assert reward(facts("failure"), signals={"task_success": True})[1] == {"outcome": 1.0}
    assert reward(facts("success"), signals={"task_success": False})[1] == {"outcome": 0.0}
    assert reward(facts(None), signals={"task_success": True})[1] == {"outcome": 1.0}


def test_abstained_early_beats_abstained_late() -> None:
    early = reward(facts("abstained", [step("a", "x")]))[1]["outcome"]
    late = reward(facts("abstained", [step("a", "x")] * 4))[1]["outcome"]
    assert early == pytest.approx(0.1 + 0.1 / 2)
    assert late == pytest.approx(0.1 + 0.1 / 5)
    assert early > late

    base = Baseline(episodes=5, median_steps=4.0, median_duration_ms=None)
    one = reward(facts("abstained", [step("a", "x")]), baseline=base)[1]["outcome"]
    four = reward(facts("abstained", [step("a", "x")] * 4), baseline=base)[1]["outcome"]
    assert one == pytest.approx(0.1 + 0.1 * 0.75)
    assert four == pytest.approx(0.1)


def test_efficiency_needs_min_baseline() -> None:
    steps = [step("a", "x")] * 2
    few = Baseline(episodes=4, median_steps=4.0, median_duration_ms=None)
    assert "efficiency" not in reward(facts("success", steps), baseline=few)[1]
    enough = Baseline(episodes=5, median_steps=4.0, median_duration_ms=None)
    assert reward(facts("success", steps), baseline=enough)[1]["efficiency"] == 0.125
    custom = episode_reward(
        facts("success", steps), baseline=few, value=None, signals={}, min_baseline=3
    )
    assert custom[1]["efficiency"] == 0.125


def test_efficiency_sign_and_duration_sources() -> None:
    base = Baseline(episodes=10, median_steps=2.0, median_duration_ms=1000.0)
    slow = [step("a", "x", latency_ms=1500.0)] * 4
    # steps (2-4)/2 = -1, duration from step latencies 6000 ms -> clipped to -1
    assert reward(facts("success", slow), baseline=base)[1]["efficiency"] == -0.25
    quick = [step("a", "x")]
    # steps 0.5, duration from facts (1000-500)/1000 = 0.5
    f = facts("success", quick, duration_ms=500.0)
    assert reward(f, baseline=base)[1]["efficiency"] == 0.125
    # signals latency wins over the recorded duration: (1000-1000)/1000 = 0
    got = reward(f, baseline=base, signals={"latency_ms": 1000.0})[1]["efficiency"]
    assert got == 0.0625


def test_efficiency_skips_missing_and_zero_medians() -> None:
    f = facts("success", [step("a", "x")])
    zero = Baseline(episodes=9, median_steps=0.0, median_duration_ms=0.0)
    assert "efficiency" not in reward(f, baseline=zero)[1]
    only_duration = Baseline(episodes=9, median_steps=None, median_duration_ms=100.0)
    assert "efficiency" not in reward(f, baseline=only_duration)[1]  # no duration known
    got = reward(facts("success", [step("a", "x")], duration_ms=50.0), baseline=only_duration)
    assert got[1]["efficiency"] == 0.125


def test_quality_with_and_without_recovery() -> None:
    clean = [step("a", "x"), step("b", "y")]
    assert reward(facts("success", clean))[1]["quality"] == 0.0
    unrecovered = [step("a", "x", "error"), step("b", "y")]
    assert reward(facts("failure", unrecovered))[1]["quality"] == -0.125
    recovered = [step("a", "x", "timeout"), step("b", "y"), step("a", "z")]
    # error_rate 1/3, recovery_rate 1 (same tool "a" later ok)
    assert reward(facts("success", recovered))[1]["quality"] == pytest.approx(
        -0.25 / 3 + 0.1, abs=1e-10
    )
    no_tool = [step(None, "think", "error"), step(None, "think")]
    assert reward(facts("success", no_tool))[1]["quality"] == pytest.approx(-0.125 + 0.1)
    other_action = [step(None, "think", "error"), step(None, "plan")]
    assert reward(facts("success", other_action))[1]["quality"] == -0.125


def test_tokens_rating_explicit_and_sum() -> None:
    scalar, components = reward(
        facts("success", [step("a", "x")]),
        value=2.0,
        signals={"tokens_used": 1000, "user_rating": -0.5},
    )
    assert components == {
        "outcome": 1.0,
        "quality": 0.0,
        "tokens": -0.1,
        "user_rating": -0.25,
        "explicit": 2.0,
    }
    assert scalar == 2.65


def test_deterministic() -> None:
    f = facts("partial", [step("a", "x", "error", 10.0), step("a", "x", latency_ms=20.0)])
    base = Baseline(episodes=6, median_steps=3.0, median_duration_ms=100.0)
    runs = {repr(reward(f, baseline=base, signals={"tokens_used": 7})) for _ in range(5)}
    assert len(runs) == 1


def test_aggregate_and_median() -> None:
    assert aggregate([]) is None
    assert aggregate([1.0, 0.0, 0.5]) == 0.5
    assert aggregate([0.1, 0.2]) == 0.15
    assert median([]) is None
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0]) == 2.5
