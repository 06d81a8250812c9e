"""Reward spec for episodes, version episode-v1 (pure).

scalar = round(sum of the components that apply, 10); each component is rounded to 10
decimals and only present when it applies:

outcome      success 1.0; partial = progress clipped to [0, 1] (0.5 when unknown);
             failure 0.0; abstained = 0.1 + 0.1 * early, in [0.1, 0.2], where
             early = 1 - min(1, steps / median_steps) when the baseline is usable (at
             least min_baseline episodes and a median_steps > 0), else 1 / (1 + steps),
             so stopping sooner scores higher. An open episode (outcome None) has none.
             Nor does an unknown outcome (no one said how it went).
             signals["task_success"], when given, overrides it: true 1.0, false 0.0
             (also for an open episode).
efficiency   only with a baseline of at least min_baseline episodes (default 5):
             0.25 * mean of the relative savings available, each clipped to [-1, 1]:
               steps:    (median_steps - steps) / median_steps
               duration: (median_duration_ms - duration) / median_duration_ms
             duration = signals["latency_ms"], else facts.duration_ms, else the sum of
             the steps' latency_ms (when any step has one; a sum past the float range
             is infinite, a saving of -1). A missing, non-positive or infinite median,
             or an unknown duration, drops that term; no terms, no component.
quality      only with steps: -0.25 * error_rate + 0.1 * recovery_rate. error_rate =
             non-ok steps / steps. A non-ok step is recovered when any later step is ok
             with the same tool (the same action when its tool is None);
             recovery_rate = recovered / non-ok steps (0 without errors).
tokens       signals["tokens_used"] given: -0.0001 per token.
user_rating  signals["user_rating"] given: 0.5 * rating, the rating clipped to [-1, 1].
explicit     value given: the value itself, added (it is on the user's own scale).

An episode with several rewards learns from their mean (aggregate).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

EPISODE_SPEC_VERSION = "episode-v1"

_ABSTAIN_BASE = 0.1
_ABSTAIN_EARLY = 0.1
_EFFICIENCY_WEIGHT = 0.25
_ERROR_WEIGHT = -0.25
_RECOVERY_WEIGHT = 0.1
_PER_TOKEN = -0.0001
_RATING_WEIGHT = 0.5
_DEFAULT_PROGRESS = 0.5
_DEFAULT_MIN_BASELINE = 5

EPISODE_SPEC: dict[str, Any] = {
    "version": EPISODE_SPEC_VERSION,
    "scalar": "sum of the components present, rounded to 10 decimals",
    "outcome": {
        "success": 1.0,
        "partial": f"progress in [0, 1] ({_DEFAULT_PROGRESS} when unknown)",
        "failure": 0.0,
        "abstained": f"{_ABSTAIN_BASE} + {_ABSTAIN_EARLY} * early",
        "abstained_early": (
            "1 - min(1, steps / median_steps) with a usable baseline, else 1 / (1 + steps)"
        ),
        "open": "no component",
        "unknown": "no component",
        "task_success_override": {"true": 1.0, "false": 0.0},
    },
    "efficiency": {
        "weight": _EFFICIENCY_WEIGHT,
        "min_baseline": _DEFAULT_MIN_BASELINE,
        "terms": {
            "steps": "(median_steps - steps) / median_steps",
            "duration_ms": "(median_duration_ms - duration) / median_duration_ms",
        },
        "clip": [-1.0, 1.0],
        "combine": "weight * mean of the available terms",
        "duration": "signals.latency_ms, else the episode's duration, else sum of step latency",
    },
    "quality": {
        "error_rate": _ERROR_WEIGHT,
        "recovery_rate": _RECOVERY_WEIGHT,
        "recovery": "a non-ok step later followed by an ok step with the same tool "
        "(the same action when the tool is null)",
    },
    "per_token": _PER_TOKEN,
    "user_rating": _RATING_WEIGHT,
    "explicit_value": "added to the sum of the components when given",
    "aggregate": "mean of the episode's reward scalars",
}


@dataclass(frozen=True, slots=True)
class EpisodeFacts:
    """What an episode did: its outcome, progress, step skeletons and wall time."""

    outcome: str | None
    progress: float | None
    steps: list[dict[str, Any]]
    duration_ms: float | None


@dataclass(frozen=True, slots=True)
class Baseline:
    """Medians over stored episodes of the same task type."""

    episodes: int
    median_steps: float | None
    median_duration_ms: float | None


def median(values: list[float]) -> float | None:
    """The median of values (None when empty)."""
    return float(statistics.median(values)) if values else None


def aggregate(scalars: list[float]) -> float | None:
    """The episode's learning reward from several rewards: their mean (None when empty)."""
    if not scalars:
        return None
    # fsum is exactly rounded, so the mean does not depend on the order of the rewards.
    return round(math.fsum(scalars) / len(scalars), 10)


def _clip(x: float, low: float, high: float) -> float:
    return max(low, min(high, x))


def _positive(m: float | None) -> float | None:
    # An infinite median (of durations that overflowed) makes every saving NaN.
    return m if m is not None and 0 < m < math.inf else None


def _usable_median(baseline: Baseline | None, *, min_baseline: int) -> float | None:
    if baseline is None or baseline.episodes < min_baseline:
        return None
    return _positive(baseline.median_steps)


def _outcome(
    facts: EpisodeFacts, *, baseline: Baseline | None, signals: dict[str, Any], min_baseline: int
) -> float | None:
    success = signals.get("task_success")
    if success is not None:
        return 1.0 if success else 0.0
    steps_done = len(facts.steps)
    if facts.outcome == "success":
        return 1.0
    if facts.outcome == "partial":
        progress = _DEFAULT_PROGRESS if facts.progress is None else float(facts.progress)
        return _clip(progress, 0.0, 1.0)
    if facts.outcome == "failure":
        return 0.0
    if facts.outcome == "abstained":
        median_steps = _usable_median(baseline, min_baseline=min_baseline)
        if median_steps is not None:
            early = 1.0 - min(1.0, steps_done / median_steps)
        else:
            early = 1.0 / (1.0 + steps_done)
        return _ABSTAIN_BASE + _ABSTAIN_EARLY * early
    return None


def _duration(facts: EpisodeFacts, *, signals: dict[str, Any]) -> float | None:
    if signals.get("latency_ms") is not None:
        return float(signals["latency_ms"])
    if facts.duration_ms is not None:
        return float(facts.duration_ms)
    latencies = [float(s["latency_ms"]) for s in facts.steps if s.get("latency_ms") is not None]
    if not latencies:
        return None
    try:
        return math.fsum(latencies)
    except OverflowError:  # latencies near the float maximum: longer than any median
        return math.inf


def _efficiency(
    facts: EpisodeFacts, *, baseline: Baseline | None, signals: dict[str, Any], min_baseline: int
) -> float | None:
    if baseline is None or baseline.episodes < min_baseline:
        return None
    savings: list[float] = []
    median_steps = _positive(baseline.median_steps)
    if median_steps is not None:
        savings.append(_clip((median_steps - len(facts.steps)) / median_steps, -1.0, 1.0))
    median_duration = _positive(baseline.median_duration_ms)
    duration = _duration(facts, signals=signals)
    if median_duration is not None and duration is not None:
        savings.append(_clip((median_duration - duration) / median_duration, -1.0, 1.0))
    if not savings:
        return None
    return _EFFICIENCY_WEIGHT * math.fsum(savings) / len(savings)


def _quality(steps: list[dict[str, Any]]) -> float | None:
    if not steps:
        return None
    # One pass from the end, remembering which tools (and tool-less actions) later
    # succeeded, so a long episode of failures costs linear, not quadratic, time.
    ok_tools: set[Any] = set()
    ok_actions: set[Any] = set()
    failed = recovered = 0
    for step in reversed(steps):
        tool = step.get("tool")
        if step.get("status") != "ok":
            failed += 1
            recovered += (tool in ok_tools) if tool else (step.get("action") in ok_actions)
        elif tool:
            ok_tools.add(tool)
        else:
            ok_actions.add(step.get("action"))
    error_rate = failed / len(steps)
    recovery_rate = recovered / failed if failed else 0.0
    return _ERROR_WEIGHT * error_rate + _RECOVERY_WEIGHT * recovery_rate


def episode_reward(
    facts: EpisodeFacts,
    *,
    baseline: Baseline | None,
    value: float | None,
    signals: dict[str, Any],
    min_baseline: int = _DEFAULT_MIN_BASELINE,
) -> tuple[float, dict[str, float]]:
    """(scalar, components) under episode-v1."""
    parts: dict[str, float | None] = {
        "outcome": _outcome(facts, baseline=baseline, signals=signals, min_baseline=min_baseline),
        "efficiency": _efficiency(
            facts, baseline=baseline, signals=signals, min_baseline=min_baseline
        ),
        "quality": _quality(facts.steps),
    }
    if signals.get("tokens_used") is not None:
        parts["tokens"] = _PER_TOKEN * float(signals["tokens_used"])
    if signals.get("user_rating") is not None:
        parts["user_rating"] = _RATING_WEIGHT * _clip(float(signals["user_rating"]), -1.0, 1.0)
    if value is not None:
        parts["explicit"] = float(value)
    components = {name: round(part, 10) for name, part in parts.items() if part is not None}
    return round(math.fsum(components.values()), 10), components
