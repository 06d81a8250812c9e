"""The fixed-size vectors of the dataset follow the layout the metadata describes."""

from __future__ import annotations

from app.learning.features import (
    CANDIDATE_FEATURES,
    REQUEST_FEATURES,
    action_vector,
    observation_vector,
    scope_compatible,
    scope_match,
)


def test_observation_and_action_vectors() -> None:
    request = {name: float(i + 1) for i, name in enumerate(REQUEST_FEATURES)} | {"task_type": "x"}
    cands = [
        {
            "memory_id": f"m{j}",
            "features": {n: j * 100.0 + i for i, n in enumerate(CANDIDATE_FEATURES)},
        }
        for j in range(3)
    ]
    state = {"request": request, "candidates": cands}
    vec = observation_vector(state, slots=4)
    f = len(CANDIDATE_FEATURES)
    assert len(vec) == len(REQUEST_FEATURES) + 4 * f
    assert vec[: len(REQUEST_FEATURES)] == [1.0, 2.0, 3.0, 4.0, 5.0]
    start = len(REQUEST_FEATURES)
    assert vec[start + f : start + 2 * f] == [100.0 + i for i in range(f)]
    assert vec[start + 3 * f :] == [0.0] * f  # the empty fourth slot
    assert (
        observation_vector(state, slots=2)[start + f : start + 2 * f]
        == vec[start + f : start + 2 * f]
    )
    assert action_vector([c["memory_id"] for c in state["candidates"]], ["m2", "m0"], slots=4) == [
        1,
        0,
        1,
        0,
    ]


def test_scope_rules() -> None:
    assert scope_compatible({"level": "global"}, {"session_id": "s1"})
    assert scope_compatible(
        {"level": "session", "session_id": "s1"}, {"session_id": "s1", "user": "u"}
    )
    assert not scope_compatible({"level": "session", "session_id": "s2"}, {"session_id": "s1"})
    assert not scope_compatible({"level": "task", "task_id": "t"}, {})
    assert scope_match({"session_id": "s1"}, {"session_id": "s1", "user": "u"}) == 0.5
    assert scope_match({}, {"level": "global"}) == 1.0


def test_query_terms() -> None:
    from app.learning.ranking import query_terms

    assert query_terms("How do we deploy the Deploy service?") == ["deploy", "service"]
    assert query_terms("ünïcödé café, naïve résumé") == ["ünïcödé", "café", "naïve", "résumé"]
    assert query_terms('near NEAR( "x" * AND') == ["near"]
    assert query_terms("!!! ...") == []
