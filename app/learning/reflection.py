"""Per-episode reflection (pure): what went well, what to improve, what to remember.

Steps are skeletons {"tool", "action", "status", "latency_ms", "tokens"}; a step's action
key is "tool.action", or the action alone when it has no tool. An error (any status other
than "ok") is recovered by the first later ok step with the same tool (the same action
when its tool is None); failing that, when the episode succeeded or partly succeeded, by
the next later ok step (a workaround). Otherwise it is unrecovered.

successes    the outcome with its reward (success or partial); each recovered error;
             "all n steps completed without errors" when every step was ok.
improvements unrecovered errors and timeouts; actions repeated (counted per key, a retry
             right after the same key failed is not counted) two or more times; slow
             steps (latency_ms > slow_ms, or without slow_ms > 3x this episode's median
             step latency when at least 3 steps report one); with a reference, steps it
             does not use, and on failure the reference steps this episode missed.
insights     the outcome and reward; "when X fails, Y recovers it" per recovery; on
             failure, the reference's order.
Each list is deduplicated, in order of first appearance, and holds at most 10 entries.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

MAX_ENTRIES = 10
_SLOW_FACTOR = 3.0
_MIN_LATENCIES = 3

_OUTCOME_WORDS = {
    "success": "succeeded",
    "partial": "partially succeeded",
    "failure": "failed",
    "abstained": "abstained",
    "unknown": "ended, outcome unknown",
}


@dataclass(frozen=True, slots=True)
class Reflection:
    """Successes, improvements and insights drawn from one episode."""

    successes: list[str]
    improvements: list[str]
    insights: list[str]

    def content(self, *, task_type: str | None) -> str:
        """Human-readable, searchable text for a reflection memory."""
        head = f"Reflection on {task_type} episode." if task_type else "Reflection on episode."
        sections = [
            f"{title}: {'; '.join(entries)}."
            for title, entries in (
                ("Successes", self.successes),
                ("Improvements", self.improvements),
                ("Insights", self.insights),
            )
            if entries
        ]
        return " ".join([head, *sections]) if sections else f"{head} Nothing notable."


def action_key(step: dict[str, Any]) -> str:
    """The key "tool.action" of a step, or its action alone when it has no tool."""
    tool = step.get("tool")
    action = str(step.get("action") or "")
    return f"{tool}.{action}" if tool else action


def _ok(step: dict[str, Any]) -> bool:
    return step.get("status") == "ok"


def _fmt(x: float) -> str:
    return f"{round(x, 3):g}"


def _unique(entries: list[str]) -> list[str]:
    # dict keeps first-appearance order, so the lists stay deterministic.
    return list(dict.fromkeys(entries))[:MAX_ENTRIES]


def _recoveries(steps: list[dict[str, Any]], *, workaround: bool) -> list[tuple[int, int | None]]:
    """(failed index, recovering index or None) for every non-ok step."""
    pairs: list[tuple[int, int | None]] = []
    for i, step in enumerate(steps):
        if _ok(step):
            continue
        later = [j for j in range(i + 1, len(steps)) if _ok(steps[j])]
        tool = step.get("tool")
        same = [
            j
            for j in later
            if (steps[j].get("tool") == tool if tool else action_key(steps[j]) == action_key(step))
        ]
        if same:
            pairs.append((i, same[0]))
        elif workaround and later:
            pairs.append((i, later[0]))
        else:
            pairs.append((i, None))
    return pairs


def _repeats(keys: list[str], steps: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    last_ok: dict[str, bool] = {}
    for key, step in zip(keys, steps, strict=True):
        # A retry after the same action failed is recovery, not waste.
        if last_ok.get(key, True):
            counts[key] = counts.get(key, 0) + 1
        last_ok[key] = _ok(step)
    return {key: n for key, n in counts.items() if n >= 2}


def _slow(
    keys: list[str], steps: list[dict[str, Any]], *, slow_ms: float | None
) -> dict[str, float]:
    latencies = [
        (key, float(step["latency_ms"]))
        for key, step in zip(keys, steps, strict=True)
        if step.get("latency_ms") is not None
    ]
    if slow_ms is not None:
        limit = float(slow_ms)
    elif len(latencies) >= _MIN_LATENCIES:
        limit = _SLOW_FACTOR * float(statistics.median(ms for _, ms in latencies))
    else:
        return {}
    slowest: dict[str, float] = {}
    for key, ms in latencies:
        if ms > limit:
            slowest[key] = max(ms, slowest.get(key, ms))
    return slowest


def reflect(
    *,
    steps: list[dict[str, Any]],
    outcome: str | None,
    reward: float | None,
    reference: list[str] | None,
    slow_ms: float | None = None,
) -> Reflection:
    """Successes, improvements and insights for one episode, against a reference if any."""
    keys = [action_key(step) for step in steps]
    succeeded = outcome in ("success", "partial")
    failed = outcome == "failure"
    successes: list[str] = []
    improvements: list[str] = []
    insights: list[str] = []

    reward_text = f" with reward {_fmt(reward)}" if reward is not None else ""
    if outcome == "success":
        successes.append(f"completed the task{reward_text}")
    elif outcome == "partial":
        successes.append(f"partially completed the task{reward_text}")
    insights.append(f"{_OUTCOME_WORDS.get(outcome or '', 'still open')}{reward_text}")

    for i, j in _recoveries(steps, workaround=succeeded):
        if j is not None:
            successes.append(f"recovered from error in {keys[i]} with {keys[j]}")
            insights.append(f"when {keys[i]} fails, {keys[j]} recovers it")
        else:
            kind = "timeout" if steps[i].get("status") == "timeout" else "error"
            improvements.append(f"{kind} in {keys[i]} was not recovered")
    if steps and all(_ok(step) for step in steps):
        successes.append(f"all {len(steps)} steps completed without errors")

    improvements.extend(f"{key} repeated {n} times" for key, n in _repeats(keys, steps).items())
    improvements.extend(
        f"step {key} was slow ({_fmt(ms)} ms)"
        for key, ms in _slow(keys, steps, slow_ms=slow_ms).items()
    )
    if reference is not None:
        wanted = set(reference)
        improvements.extend(
            f"step {key} was not needed by a similar successful episode"
            for key in keys
            if key not in wanted
        )
        if failed:
            done = set(keys)
            improvements.extend(
                f"missing step {key} that successful episodes use"
                for key in reference
                if key not in done
            )
            if reference:
                insights.append(f"successful episodes use the order {', then '.join(reference)}")

    return Reflection(
        successes=_unique(successes),
        improvements=_unique(improvements),
        insights=_unique(insights),
    )
