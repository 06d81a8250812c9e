"""Reward spec for recalls, version 1 (pure).

scalar = explicit value, when one is given; otherwise the sum of the components:
  task_success: +1 on success, -1 on failure (0 when not reported)
  unsafe_action: -2 more          stale_memory_error: -1 more
  tokens_used: -0.0001 per token  latency_ms: -0.001 per millisecond
user_correction is stored with the signals but carries no weight in v1. Components are
always computed from the signals given and stored beside the scalar.
"""

from __future__ import annotations

from typing import Any

RECALL_SPEC_VERSION = "recall-v1"
RECALL_SPEC: dict[str, Any] = {
    "version": RECALL_SPEC_VERSION,
    "task_success": {"true": 1.0, "false": -1.0},
    "unsafe_action": -2.0,
    "stale_memory_error": -1.0,
    "per_token": -0.0001,
    "per_latency_ms": -0.001,
    "explicit_value": "replaces the sum of the components when given",
}


def recall_reward(
    *, value: float | None, signals: dict[str, Any]
) -> tuple[float, dict[str, float]]:
    """(scalar, components) for one reward under spec recall-v1."""
    components: dict[str, float] = {}
    success = signals.get("task_success")
    if success is not None:
        components["task_success"] = 1.0 if success else -1.0
    if signals.get("unsafe_action"):
        components["unsafe_action"] = RECALL_SPEC["unsafe_action"]
    if signals.get("stale_memory_error"):
        components["stale_memory_error"] = RECALL_SPEC["stale_memory_error"]
    if signals.get("tokens_used") is not None:
        components["tokens_used"] = RECALL_SPEC["per_token"] * float(signals["tokens_used"])
    if signals.get("latency_ms") is not None:
        components["latency_ms"] = RECALL_SPEC["per_latency_ms"] * float(signals["latency_ms"])
    components = {name: round(part, 10) for name, part in components.items()}
    scalar = float(value) if value is not None else round(sum(components.values()), 10)
    return scalar, components


# What a recall's reward can be under spec recall-v1: an explicit value within the API's
# bounds; otherwise task_success (+1 at best) less the flags' penalties (-4 at worst) and
# its costs (tokens, latency), taken as logged.
EXPLICIT_BOUND = 1_000_000.0


def recall_bounds(parts: list[tuple[float | None, dict[str, float]]]) -> tuple[float, float]:
    """The range a mean reward of these recalls' kind can lie in, from each reward's
    explicit value (or not) and components."""
    if not parts:
        return -EXPLICIT_BOUND, EXPLICIT_BOUND
    worst = RECALL_SPEC["task_success"]["false"] + RECALL_SPEC["unsafe_action"]
    worst += RECALL_SPEC["stale_memory_error"]
    lows, highs = [], []
    for value, components in parts:
        if value is not None:
            lows.append(-EXPLICIT_BOUND)
            highs.append(EXPLICIT_BOUND)
        else:
            cost = components.get("tokens_used", 0.0) + components.get("latency_ms", 0.0)
            lows.append(worst + cost)
            highs.append(RECALL_SPEC["task_success"]["true"])
    return min(lows), max(highs)
