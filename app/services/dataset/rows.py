"""Rows of the dataset's tables as dicts keyed by column name, rebuilt from a transition's
stored state and action (Parquet, and the candidates table in NDJSON)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from app.learning.features import dataset_lists, observation_vector
from app.models import Transition
from app.services.dataset.columns import CANDIDATES, TRANSITIONS, Column, Part, reader


def _part_name(columns: tuple[Column, ...], part: Part) -> str:
    (name,) = [c.name for c in columns if c.value is part]
    return name


OBSERVATIONS = _part_name(TRANSITIONS.columns, Part.OBSERVATIONS)
NEXT_OBSERVATIONS = _part_name(TRANSITIONS.columns, Part.NEXT_OBSERVATIONS)
_HEAD = reader(TRANSITIONS.columns, "t.{}".format)
_FIXED = reader(CANDIDATES.columns, "t.{}".format)
# Each candidates column: None where the value is the transition's (in _FIXED).
_PER_CANDIDATE = tuple((c.name, c.value if callable(c.value) else None) for c in CANDIDATES.columns)


def decision(state: dict[str, Any], action: dict[str, Any], slots: int) -> dict[str, Any]:
    """dataset_lists with the action vector padded, and the observations."""
    lists = dataset_lists(state, action, slots)
    lists["actions"].extend([0] * (slots - len(lists["actions"])))
    lists[OBSERVATIONS] = observation_vector(state, slots)
    return lists


def transition_row(t: Transition, next_state: dict[str, Any] | None, slots: int) -> dict[str, Any]:
    """A transitions row rebuilt from the stored state and action."""
    row = _HEAD(t)
    row.update(decision(t.state, t.action, slots))
    row[NEXT_OBSERVATIONS] = (
        observation_vector(next_state, slots) if next_state is not None else None
    )
    return row


def candidate_rows(t: Transition) -> Iterator[dict[str, Any]]:
    fixed = _FIXED(t)
    for position, cand in enumerate(t.state["candidates"]):
        yield {
            name: fixed[name] if get is None else get(t, position, cand)
            for name, get in _PER_CANDIDATE
        }
