"""Properties of per-episode reflection on odd but valid steps and outcomes."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.learning.reflection import MAX_ENTRIES, action_key, reflect
from tests.learning.strategies import NAMES, NON_NEGATIVE, PROFILE, STEPS, step

OUTCOMES = st.sampled_from([None, "success", "partial", "failure", "abstained"])
REWARD = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))
REFERENCE = st.one_of(st.none(), st.lists(NAMES, max_size=6))
SLOW = st.one_of(st.none(), NON_NEGATIVE)


@PROFILE
@given(STEPS, OUTCOMES, REWARD, REFERENCE, SLOW)
def test_lists_are_short_unique_and_readable(
    steps: list[dict[str, Any]],
    outcome: str | None,
    reward: float | None,
    reference: list[str] | None,
    slow_ms: float | None,
) -> None:
    r = reflect(steps=steps, outcome=outcome, reward=reward, reference=reference, slow_ms=slow_ms)
    for entries in (r.successes, r.improvements, r.insights):
        assert len(entries) <= MAX_ENTRIES
        assert len(set(entries)) == len(entries)
    assert r.insights  # the outcome is always the first insight
    text = r.content(task_type="t")
    assert text.startswith("Reflection on t episode.")
    assert all(entry in text for entry in r.successes + r.improvements + r.insights)
    assert r == reflect(
        steps=steps, outcome=outcome, reward=reward, reference=reference, slow_ms=slow_ms
    )


@PROFILE
@given(STEPS, OUTCOMES, REWARD)
def test_outcome_and_clean_runs_are_reported(
    steps: list[dict[str, Any]], outcome: str | None, reward: float | None
) -> None:
    clean = [s | {"status": "ok"} for s in steps]
    r = reflect(steps=clean, outcome=outcome, reward=reward, reference=None)
    assert not any("not recovered" in i for i in r.improvements)
    if steps:
        assert r.successes[-1] == f"all {len(steps)} steps completed without errors"
    done = {"success": "completed the task", "partial": "partially completed the task"}
    if outcome in done:
        assert r.successes[0].startswith(done[outcome])
    else:
        assert not any(s.startswith(("completed", "partially")) for s in r.successes)


def _fix(steps: list[dict[str, Any]], i: int, *, workaround: bool) -> int | None:
    """The step that recovers step i's error, as the module's docstring words it."""
    later = [j for j in range(i + 1, len(steps)) if steps[j]["status"] == "ok"]
    tool = steps[i]["tool"]
    for j in later:
        if (steps[j]["tool"] == tool) if tool else action_key(steps[j]) == action_key(steps[i]):
            return j
    return later[0] if workaround and later else None


@PROFILE
@given(st.lists(step(), max_size=30), OUTCOMES)
def test_every_error_is_recovered_or_reported(
    steps: list[dict[str, Any]], outcome: str | None
) -> None:
    r = reflect(steps=steps, outcome=outcome, reward=None, reference=None)
    workaround = outcome in ("success", "partial")
    keys = [action_key(s) for s in steps]
    recovered, unrecovered = [], []
    for i, s in enumerate(steps):
        if s["status"] == "ok":
            continue
        j = _fix(steps, i, workaround=workaround)
        if j is None:
            kind = "timeout" if s["status"] == "timeout" else "error"
            unrecovered.append(f"{kind} in {keys[i]} was not recovered")
        else:
            recovered.append(f"recovered from error in {keys[i]} with {keys[j]}")
    # Unrecovered errors lead the improvements; recoveries follow the outcome's success.
    expected = list(dict.fromkeys(unrecovered))[:MAX_ENTRIES]
    assert r.improvements[: len(expected)] == expected
    offset = 1 if workaround else 0
    expected = list(dict.fromkeys(recovered))[: MAX_ENTRIES - offset]
    assert r.successes[offset : offset + len(expected)] == expected


@PROFILE
@given(st.lists(step(), max_size=30), NON_NEGATIVE)
def test_only_steps_over_the_limit_are_slow(steps: list[dict[str, Any]], slow_ms: float) -> None:
    r = reflect(steps=steps, outcome="success", reward=None, reference=None, slow_ms=slow_ms)
    keys = {action_key(s) for s in steps}
    over = {action_key(s) for s in steps if (s["latency_ms"] or 0.0) > slow_ms}
    slow = [e for e in r.improvements if e.startswith("step ")]
    reported = {k for k in keys if any(e.startswith(f"step {k} was slow (") for e in slow)}
    assert reported <= over
    if len(r.improvements) < MAX_ENTRIES:
        assert reported == over


@PROFILE
@given(st.lists(step(), max_size=20), st.lists(NAMES, min_size=1, max_size=5))
def test_a_failure_is_told_the_reference_steps_it_missed(
    steps: list[dict[str, Any]], reference: list[str]
) -> None:
    r = reflect(steps=steps, outcome="failure", reward=0.0, reference=reference)
    done = {action_key(s) for s in steps}
    missing = [f"missing step {k} that successful episodes use" for k in reference if k not in done]
    if len(r.improvements) < MAX_ENTRIES:
        assert set(missing) <= set(r.improvements)
    order = f"successful episodes use the order {', then '.join(reference)}"
    assert order in r.insights or len(r.insights) == MAX_ENTRIES
