"""What a listing is filtered by: built by routes and services, applied by repositories."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from app.core.errors import InvalidInput


def check_window(since: datetime | None, until: datetime | None) -> None:
    """A time-range filter must not be empty or reversed."""
    if since is not None and until is not None and since >= until:
        raise InvalidInput("until: must be after since", field="until")


@dataclass(frozen=True, slots=True)
class MemoryFilters:
    types: Sequence[str] | None = None
    statuses: Sequence[str] | None = None
    sensitivities: Sequence[str] | None = None
    # Memories whose scope holds each of these (key, value) pairs.
    scope: dict[str, str] | None = None
    # A request's scope: memories that apply to it (`scope_compatible`), global ones too.
    applies_to: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class EpisodeFilters:
    task_id: str | None = None
    agent_id: str | None = None
    task_type: str | None = None
    outcome: str | None = None
    status: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class DatasetFilters:
    """Transitions of the RL log and the dataset."""

    since: datetime | None = None
    until: datetime | None = None
    policy_id: str | None = None
    task_type: str | None = None
