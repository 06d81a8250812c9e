"""Hypothesis profiles and input strategies shared by the learning property tests.

Profiles are applied per test (`@PROFILE`), not loaded globally, so other hypothesis
users in the same run keep their own settings. HYPOTHESIS_PROFILE=deep selects the
long run; the default `ci` profile is small and derandomized, so CI is reproducible.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from app.learning.skills import EpisodeView

_SLOW_INPUTS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
settings.register_profile(
    "ci",
    max_examples=50,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=_SLOW_INPUTS,
)
settings.register_profile(
    "deep",
    max_examples=1000,
    database=None,
    deadline=None,
    suppress_health_check=_SLOW_INPUTS,
)
PROFILE = settings(settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci")))

MAX_FLOAT = sys.float_info.max
STATUSES = ("ok", "error", "timeout")

# Few distinct names, so duplicates and repeats are common; odd ones included on purpose.
SHORT_NAMES = st.sampled_from(
    [
        "a",
        "b",
        "read",
        "a > b",
        "b > c",
        "a >",
        "> b",
        "x ! y",
        "\\",
        "x.y",
        "é",
        "日本",
        "\x1f",
        " ",
    ]
)
HUGE_NAMES = st.builds(lambda c, n: c * n, st.sampled_from(["a", "ü", "🙂"]), st.integers(1, 2000))
NAMES = st.one_of(SHORT_NAMES, st.text(min_size=1, max_size=20), HUGE_NAMES)
TOOLS = st.one_of(st.none(), st.sampled_from(["shell", "git", "x.y", ""]), NAMES)

UNIT = st.floats(0.0, 1.0, allow_nan=False)
NON_NEGATIVE = st.floats(0.0, MAX_FLOAT, allow_nan=False, allow_infinity=False)
LATENCY = st.one_of(st.none(), NON_NEGATIVE, st.sampled_from([0.0, 5e-324, MAX_FLOAT]))


@st.composite
def step(draw: st.DrawFn) -> dict[str, Any]:
    """One step skeleton as stored: tool, action, status, latency_ms, tokens."""
    return {
        "tool": draw(TOOLS),
        "action": draw(NAMES),
        "status": draw(st.sampled_from(STATUSES)),
        "latency_ms": draw(LATENCY),
        "tokens": draw(st.one_of(st.none(), st.integers(0, 10**12))),
    }


def _repeat(pattern: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    return [dict(s) for _ in range(n) for s in pattern]


# Empty, one step, a few, and thousands (a short pattern repeated, cheap to draw).
STEPS = st.one_of(
    st.just([]),
    st.lists(step(), min_size=1, max_size=1),
    st.lists(step(), max_size=25),
    st.builds(_repeat, st.lists(step(), min_size=1, max_size=3), st.integers(300, 700)),
)

ACTIONS = st.sampled_from(["a", "b", "c", "d", "e", "ü", "a > b"])
FEATURES = st.sampled_from(["domain=web", "domain=cli", "language=py", "language=go", "tag=x"])
REWARDS = st.floats(-1e6, 1e6, allow_nan=False)


@st.composite
def episode_view(draw: st.DrawFn, *, index: int = 0) -> EpisodeView:
    """An episode as skill evolution sees it, over a small vocabulary (duplicates likely)."""
    actions = tuple(draw(st.lists(ACTIONS, max_size=8)))
    statuses = tuple(draw(st.sampled_from(STATUSES)) for _ in actions)
    return EpisodeView(
        id=f"e{index}",
        actions=actions,
        statuses=statuses,
        success=draw(st.booleans()),
        reward=draw(REWARDS),
        context=tuple(draw(st.lists(FEATURES, max_size=3, unique=True))),
        skills=tuple(draw(st.lists(st.sampled_from(["s1", "s2"]), max_size=2))),
    )


@st.composite
def window(draw: st.DrawFn, *, max_size: int = 40) -> list[EpisodeView]:
    """Episodes with distinct ids; sometimes all successes or all failures."""
    n = draw(st.integers(0, max_size))
    views = [draw(episode_view(index=i)) for i in range(n)]
    forced = draw(st.sampled_from([None, True, False]))
    if forced is None:
        return views
    return [
        EpisodeView(v.id, v.actions, v.statuses, forced, v.reward, v.context, v.skills)
        for v in views
    ]
