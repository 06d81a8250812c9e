"""Properties of pattern mining: Wilson bounds, what one episode supports, and counts
that add up the same however the episodes are batched or ordered."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from app.learning.mining import (
    MAX_SEQUENCE_ACTIONS,
    Z95,
    context_features,
    episode_patterns,
    pattern_id,
    recoveries,
    wilson_lcb,
    wilson_ucb,
)
from app.learning.reflection import action_key
from tests.learning.strategies import FEATURES, NAMES, PROFILE, STEPS, step

COUNTS = st.integers(0, 10**9).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n)))
FRACTIONAL = st.floats(0.0, 1e9, allow_nan=False).flatmap(
    lambda n: st.tuples(st.floats(0.0, n), st.just(n))
)
SKILLS = st.lists(st.sampled_from(["s1", "s2", "s3"]), max_size=6)
EPISODE = st.tuples(
    st.lists(step(), max_size=12), st.lists(FEATURES, max_size=4), SKILLS, st.booleans()
)


@PROFILE
@given(st.one_of(COUNTS, FRACTIONAL))
@example((0, 0))
@example((1, 1))
@example((10**9, 10**9))
@example((8.631145430163e-312, 8.631145430163e-312))  # once a ZeroDivisionError
def test_wilson_bounds_enclose_the_rate(counts: tuple[float, float]) -> None:
    successes, n = counts
    lcb, ucb = wilson_lcb(successes, n), wilson_ucb(successes, n)
    assert 0.0 <= lcb <= ucb <= 1.0
    if n > 0:
        rate = successes / n
        assert lcb <= rate + 1e-12
        assert rate <= ucb + 1e-12
    else:
        assert (lcb, ucb) == (0.0, 1.0)
    if n >= 1 and successes > 0:  # the textbook form, where it cannot underflow
        z, p = Z95, successes / n
        centre = p + z * z / (2 * n)
        margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        assert math.isclose(lcb, max(0.0, (centre - margin) / (1 + z * z / n)), abs_tol=1e-12)


@PROFILE
@given(st.integers(1, 10**6).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n))))
def test_one_more_success_never_lowers_the_bounds(counts: tuple[int, int]) -> None:
    s, n = counts
    assert wilson_lcb(s + 1, n) >= wilson_lcb(s, n)
    assert wilson_ucb(s + 1, n) >= wilson_ucb(s, n)


def _named(*actions: str) -> list[dict[str, Any]]:
    return [{"tool": None, "action": a, "status": "ok"} for a in actions]


@PROFILE
@given(STEPS, st.lists(FEATURES | NAMES, max_size=6), SKILLS)
# Once both ("a > b", "c") and ("a", "b > c") were the sequence "a > b > c", counted twice.
@example(_named("a", "a > b", "b > c", "c"), [], [])
@example(_named("x >", "x", "> y", "y"), [], [])
def test_each_supported_pattern_is_found_once_and_as_documented(
    steps: list[dict[str, Any]], context: list[str], skills: list[str]
) -> None:
    found = episode_patterns(steps=steps, context=context, skills_applied=skills)
    keys = [action_key(s) for s in steps]
    kinds = Counter(f.kind for f in found)
    assert len({(f.kind, f.items) for f in found}) == len(found)
    # Counters are keyed by signature, so distinct patterns need distinct signatures.
    assert len({(f.kind, f.signature) for f in found}) == len(found)
    assert kinds["task"] == 1
    assert {f.items for f in found if f.kind == "action"} == {(k,) for k in keys}
    first = {k: keys.index(k) for k in keys}
    last = {k: i for i, k in enumerate(keys)}
    paired = sorted(first, key=first.__getitem__)[:MAX_SEQUENCE_ACTIONS]
    pairs = {(a, b) for a in paired for b in paired if a != b and first[a] < last[b]}
    assert {f.items for f in found if f.kind == "sequence"} == pairs
    assert {f.items for f in found if f.kind == "context"} == {(c,) for c in context}
    chains = {(a, b) for a, b in zip(skills, skills[1:], strict=False) if a != b}
    assert {f.items for f in found if f.kind == "skill_chain"} == chains
    failed = {k for k, s in zip(keys, steps, strict=True) if s.get("status", "ok") != "ok"}
    assert {f.items[0] for f in found if f.kind == "recovery"} <= failed


@PROFILE
@given(st.lists(step(), max_size=40))
def test_recoveries_pair_a_failure_with_a_later_ok_step(steps: list[dict[str, Any]]) -> None:
    pairs = recoveries(steps)
    failures = [i for i, s in enumerate(steps) if s["status"] != "ok"]
    recoverable = [i for i in failures if any(s["status"] == "ok" for s in steps[i + 1 :])]
    assert len(pairs) == len(recoverable)
    for i, (failed, fix) in zip(recoverable, pairs, strict=True):
        later = [s for s in steps[i + 1 :] if s["status"] == "ok"]
        tool = steps[i]["tool"]
        same = [s for s in later if tool and s["tool"] == tool]
        assert failed == action_key(steps[i])
        assert fix == action_key((same or later)[0])


def _count(episodes: list[tuple[Any, ...]], task_type: str = "t") -> dict[str, list[int]]:
    """Pattern counters as learning keeps them: support and successes per pattern id."""
    counters: dict[str, list[int]] = {}
    for steps, context, skills, success in episodes:
        for f in episode_patterns(steps=steps, context=context, skills_applied=skills):
            row = counters.setdefault(pattern_id(f.kind, task_type, f.signature), [0, 0])
            row[0] += 1
            row[1] += int(success)
    return counters


@PROFILE
@given(st.lists(EPISODE, max_size=12), st.integers(0, 12), st.randoms(use_true_random=False))
def test_counts_add_up_across_batches_and_orders(
    episodes: list[tuple[Any, ...]], cut: int, rnd: Any
) -> None:
    whole = _count(episodes)
    parts = [_count(episodes[:cut]), _count(episodes[cut:])]
    merged: dict[str, list[int]] = {}
    for part in parts:
        for pid, (support, successes) in part.items():
            row = merged.setdefault(pid, [0, 0])
            row[0] += support
            row[1] += successes
    assert merged == whole
    shuffled = list(episodes)
    rnd.shuffle(shuffled)
    assert _count(shuffled) == whole
    for support, successes in whole.values():
        assert 0 <= successes <= support <= len(episodes)
    task = whole.get(pattern_id("task", "t", ""), [0, 0])
    assert task == [len(episodes), sum(1 for e in episodes if e[3])]
    # No pattern has more support than the task type's own counter.
    assert all(support <= task[0] for support, _ in whole.values())


@PROFILE
@given(st.one_of(st.none(), NAMES), st.one_of(st.none(), NAMES), st.lists(NAMES, max_size=10))
def test_context_features_are_unique_and_prefixed(
    domain: str | None, language: str | None, tags: list[str]
) -> None:
    features = context_features(domain=domain, language=language, tags=tags)
    assert len(features) == len(set(features))
    assert all(f.startswith(("domain=", "language=", "tag=")) for f in features)
    assert sorted(f for f in features if f.startswith("tag=")) == [
        f"tag={t}" for t in sorted(set(tags))
    ]


@PROFILE
@given(st.sampled_from(["action", "sequence", "task"]), NAMES, NAMES)
def test_pattern_ids_are_stable_hex(kind: str, task_type: str, signature: str) -> None:
    pid = pattern_id(kind, task_type, signature)
    assert pid == pattern_id(kind, task_type, signature)
    assert len(pid) == 32
    assert int(pid, 16) >= 0
