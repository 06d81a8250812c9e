"""Properties of recall state features, the dataset vectors and search's query terms."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.learning.encodings import MEMORY_STATUSES, MEMORY_TYPES, SENSITIVITY_LEVELS
from app.learning.features import (
    CANDIDATE_FEATURES,
    REQUEST_FEATURES,
    action_vector,
    candidate_features,
    expected_utility,
    observation_vector,
    scope_compatible,
    scope_match,
)
from app.learning.ranking import MAX_TERMS, STOP_WORDS, query_terms
from app.schemas.memory import MemoryStatus, MemoryType, Sensitivity
from tests.learning.strategies import HUGE_NAMES, PROFILE, UNIT

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SCOPES = st.dictionaries(
    st.sampled_from(["level", "session_id", "task_id", "agent_id"]),
    st.sampled_from(["s1", "s2", "ü", "x" * 256]),
    max_size=4,
)
SUMS = st.floats(-1e12, 1e12)
AGES = st.timedeltas(timedelta(0), timedelta(days=36500))


@st.composite
def memory(draw: st.DrawFn) -> SimpleNamespace:
    """The attributes of a stored memory that the features read."""
    count = draw(st.integers(0, 10**9))
    return SimpleNamespace(
        type=draw(st.sampled_from([t.value for t in MemoryType])),
        scope=draw(SCOPES),
        criticality=draw(UNIT),
        confidence=draw(UNIT),
        sensitivity=draw(st.sampled_from([s.value for s in Sensitivity])),
        created_at=NOW - draw(AGES),
        last_used_at=draw(st.one_of(st.none(), AGES.map(lambda a: NOW - a))),
        use_count=draw(st.integers(0, 10**12)),
        token_estimate=draw(st.integers(1, 10**9)),
        reward_count=count,
        reward_sum=draw(SUMS) if count else 0.0,
    )


@PROFILE
@given(st.integers(0, 10**9), SUMS, SUMS)
def test_expected_utility_is_a_monotonic_unit_value(count: int, a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    u_lo, u_hi = expected_utility(count, lo), expected_utility(count, hi)
    assert 0.0 <= u_lo <= u_hi <= 1.0
    if count == 0:
        assert u_lo == u_hi == 0.5


@PROFILE
@given(SCOPES, SCOPES)
def test_scope_match_is_a_fraction_and_compatibility_is_containment(
    memory_scope: dict[str, str], request_scope: dict[str, str]
) -> None:
    assert 0.0 <= scope_match(memory_scope, request_scope) <= 1.0
    ids = {k: v for k, v in memory_scope.items() if k != "level"}
    assert scope_compatible(memory_scope, request_scope) == (ids.items() <= request_scope.items())
    assert scope_compatible(request_scope, request_scope)
    assert scope_match(request_scope, request_scope) == 1.0


@PROFILE
@given(
    memory(), st.sampled_from([s.value for s in MemoryStatus]), UNIT, st.integers(0, 1000), SCOPES
)
def test_candidate_features_are_named_finite_floats(
    m: SimpleNamespace, status: str, score: float, rank: int, scope: dict[str, str]
) -> None:
    f = candidate_features(m, status=status, score=score, rank=rank, request_scope=scope, now=NOW)
    assert list(f) == CANDIDATE_FEATURES
    assert all(isinstance(v, float) and math.isfinite(v) for v in f.values())
    assert f["present"] == 1.0
    # The codes are the encodings' (the dataset's), for every value the enums allow.
    assert f["type_index"] == MEMORY_TYPES.names.index(m.type)
    assert f["status_index"] == MEMORY_STATUSES.names.index(status)
    assert f["sensitivity_level"] == SENSITIVITY_LEVELS.names.index(m.sensitivity)
    assert 0.0 <= f["expected_utility"] <= 1.0
    assert f["age_days"] >= 0.0
    assert f["days_since_use"] >= 0.0 or (m.last_used_at is None and f["days_since_use"] == -1.0)


@st.composite
def state(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(0, 60))
    values = st.floats(-1e9, 1e9)
    return {
        "request": {name: draw(values) for name in REQUEST_FEATURES},
        "candidates": [
            {"memory_id": f"m{i}", "features": {name: draw(values) for name in CANDIDATE_FEATURES}}
            for i in range(n)
        ],
    }


@PROFILE
@given(state(), st.integers(0, 80), st.booleans(), st.data())
def test_vectors_have_the_documented_layout(
    s: dict[str, Any], slots: int, pad: bool, data: st.DataObject
) -> None:
    vector = observation_vector(s, slots, pad=pad)
    shown = s["candidates"][:slots]
    width = len(CANDIDATE_FEATURES)
    assert len(vector) == len(REQUEST_FEATURES) + width * (slots if pad else len(shown))
    assert vector[: len(REQUEST_FEATURES)] == [s["request"][n] for n in REQUEST_FEATURES]
    for i, cand in enumerate(shown):
        start = len(REQUEST_FEATURES) + i * width
        assert vector[start : start + width] == [cand["features"][n] for n in CANDIDATE_FEATURES]
    assert all(v == 0.0 for v in vector[len(REQUEST_FEATURES) + width * len(shown) :])
    ids = [c["memory_id"] for c in s["candidates"]]
    selected = data.draw(st.lists(st.sampled_from(ids), unique=True) if ids else st.just([]))
    actions = action_vector(ids, selected, slots)
    assert len(actions) == slots
    assert actions == [1 if i < len(ids) and ids[i] in selected else 0 for i in range(slots)]


QUERIES = st.one_of(
    st.text(max_size=300), HUGE_NAMES, st.sampled_from(["The a of", "Ünïcode ÜNÏCODE"])
)


@PROFILE
@given(QUERIES)
def test_query_terms_are_bounded_lowercase_and_unique(query: str) -> None:
    terms = query_terms(query)
    assert len(terms) <= MAX_TERMS
    assert len(set(terms)) == len(terms)
    lowered = query.lower()
    for term in terms:
        assert len(term) > 1
        assert term not in STOP_WORDS
        assert term in lowered
        assert not term.startswith("_")  # an underscore only inside an identifier
        assert not term.endswith("_")
        assert not any(ch.isspace() for ch in term)
    assert query_terms(" ".join(terms)) == terms
