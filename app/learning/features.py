"""State features of a recall (pure): named per candidate and per request, and the
fixed-size vectors offline-RL tools want (candidate slots padded with zeros)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

import orjson

from app.learning.encodings import MEMORY_STATUSES, MEMORY_TYPES, SENSITIVITY_LEVELS
from app.learning.policy import Candidate

# 2: observations, actions and next_observations are the vectors; the per-candidate
# lists (candidate_ids, modes, inclusion_pscores) are arrays in slot order; the slots
# cover the constraints as well as the text matches. 1 had the named state as
# observations and the vectors beside it. (The codes of type_index, status_index and
# sensitivity_level have versions of their own: app/learning/encodings.py.)
SCHEMA_VERSION = "2"
REQUEST_FEATURES = ["token_budget", "k", "n_candidates", "tokens_available", "n_scope_keys"]
CANDIDATE_FEATURES = [
    "present",
    "retrieval_score",
    "retrieval_rank",
    "type_index",
    "status_index",
    "scope_match",
    "criticality",
    "confidence",
    "sensitivity_level",
    "age_days",
    "days_since_use",
    "use_count",
    "token_cost",
    "reward_count",
    "reward_mean",
    "expected_utility",
]


def scope_compatible(memory_scope: dict[str, str], request_scope: dict[str, str]) -> bool:
    """A memory applies when every id it is scoped to (all keys but level) matches the request."""
    return all(request_scope.get(k) == v for k, v in memory_scope.items() if k != "level")


def scope_match(memory_scope: dict[str, str], request_scope: dict[str, str]) -> float:
    keys = [k for k in request_scope if k != "level"]
    if not keys:
        return 1.0
    return sum(1 for k in keys if memory_scope.get(k) == request_scope[k]) / len(keys)


def expected_utility(reward_count: int, reward_sum: float) -> float:
    """(mean reward + 1) / 2 clipped to [0, 1]; 0.5 before any reward."""
    if reward_count == 0:
        return 0.5
    return max(0.0, min(1.0, (reward_sum / reward_count + 1.0) / 2.0))


def candidate_features(
    m: Any, *, status: str, score: float, rank: int, request_scope: dict[str, str], now: datetime
) -> dict[str, float]:
    """Named features of one candidate memory (m has the Memory model's attributes)."""
    mean = m.reward_sum / m.reward_count if m.reward_count else 0.0
    return {
        "present": 1.0,
        "retrieval_score": round(score, 6),
        "retrieval_rank": float(rank),
        "type_index": MEMORY_TYPES.code(m.type),
        "status_index": MEMORY_STATUSES.code(status),
        "scope_match": scope_match(m.scope, request_scope),
        "criticality": m.criticality,
        "confidence": m.confidence,
        "sensitivity_level": SENSITIVITY_LEVELS.code(m.sensitivity),
        "age_days": round((now - m.created_at).total_seconds() / 86400, 6),
        "days_since_use": (
            round((now - m.last_used_at).total_seconds() / 86400, 6) if m.last_used_at else -1.0
        ),
        "use_count": float(m.use_count),
        "token_cost": float(m.token_estimate),
        "reward_count": float(m.reward_count),
        "reward_mean": round(mean, 6),
        "expected_utility": expected_utility(m.reward_count, m.reward_sum),
    }


_AT = {name: i for i, name in enumerate(CANDIDATE_FEATURES)}


def as_candidate(memory_id: str, values: Sequence[float], *, n_scope_keys: int) -> Candidate:
    """The policy's view of a candidate, from its logged features alone (`values` in
    CANDIDATE_FEATURES order): a recall decides on this, so an evaluator rebuilding the
    decision from the log gets the same input. Specificity is the request's scope ids the
    memory holds (all of its ids match)."""
    return Candidate(
        memory_id=memory_id,
        type=MEMORY_TYPES.names[int(values[_AT["type_index"]])],
        status=MEMORY_STATUSES.names[int(values[_AT["status_index"]])],
        sensitivity=SENSITIVITY_LEVELS.names[int(values[_AT["sensitivity_level"]])],
        criticality=values[_AT["criticality"]],
        confidence=values[_AT["confidence"]],
        retrieval_score=values[_AT["retrieval_score"]],
        expected_utility=values[_AT["expected_utility"]],
        token_cost=int(values[_AT["token_cost"]]),
        specificity=round(values[_AT["scope_match"]] * n_scope_keys),
    )


def feature_values(features: dict[str, float]) -> tuple[float, ...]:
    """A candidate's named features in CANDIDATE_FEATURES order."""
    return tuple(_CANDIDATE(features))


_REQUEST = itemgetter(*REQUEST_FEATURES)
_CANDIDATE = itemgetter(*CANDIDATE_FEATURES)


def observation_vector(state: dict[str, Any], slots: int, *, pad: bool = True) -> list[float]:
    """Request features, then `slots` candidate slots of CANDIDATE_FEATURES (zeros if empty;
    without `pad`, the slots of absent candidates are left out)."""
    # itemgetter: the export builds this for every row, and a loop per value is its
    # largest cost.
    vector: list[float] = [float(v) for v in _REQUEST(state["request"])]
    candidates = state["candidates"][:slots]
    for cand in candidates:
        vector.extend(_CANDIDATE(cand["features"]))
    if pad:
        vector.extend([0.0] * (len(CANDIDATE_FEATURES) * (slots - len(candidates))))
    return vector


def action_vector(candidate_ids: Sequence[str], selected: Sequence[str], slots: int) -> list[int]:
    """1 in the slot of each selected candidate (candidates in the state's order)."""
    chosen = set(selected)
    ids = candidate_ids[:slots]
    return [1 if mid in chosen else 0 for mid in ids] + [0] * (slots - len(ids))


def dataset_lists(
    state: dict[str, Any], action: dict[str, Any], slots: int | None = None
) -> dict[str, Any]:
    """The decision as the dataset gives it: the selection in priority order, then one
    entry per candidate slot (the first `slots` candidates, all of them by default) for
    the candidate ids, logged modes, inclusion probabilities and the action vector, which
    comes last and is not padded (the export pads it to the dataset's slots)."""
    ids = [c["memory_id"] for c in state["candidates"][:slots]]
    modes = action["modes"]
    inclusion = action["inclusion"]
    return {
        "selected": action["selected"],
        "explored": action["explored"],
        "candidate_ids": ids,
        "modes": [modes.get(mid, "suppressed") for mid in ids],
        "inclusion_pscores": [inclusion.get(mid, 0.0) for mid in ids],
        "actions": action_vector(ids, action["selected"], len(ids)),
    }


def dataset_parts(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    """The transition's columns the dataset export copies instead of rebuilding: the
    observation vector of every candidate (unpadded), their number, and dataset_lists
    as JSON text."""
    n = len(state["candidates"])
    return {
        "observation_vector": observation_vector(state, n, pad=False),
        "n_candidates": n,
        "dataset_lists": orjson.dumps(dataset_lists(state, action)).decode(),
    }
