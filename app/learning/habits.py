"""A procedure's habits (pure): what most successes did at one place among the steps,
though the outcome did not depend on it (a commit at the end, `npm ci` first). Skills
show them as optional steps (app/learning/skills.py `derive`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.learning.skills import EpisodeView


def firsts(e: EpisodeView) -> dict[str, int]:
    """Where each action of the episode was first done."""
    first: dict[str, int] = {}
    for i, action in enumerate(e.actions):
        first.setdefault(action, i)
    return first


def _place(first: dict[str, int], steps: Sequence[str], at: int) -> int:
    """How many of the steps come before the action done at `at`: those up to the last
    step done before it (a step this episode left out is not counted as coming after)."""
    return max((n + 1 for n, step in enumerate(steps) if first.get(step, at) < at), default=0)


def places_of_habits(
    wins: Sequence[EpisodeView], steps: Sequence[str], share: float, same_place: float
) -> dict[str, int]:
    """The actions other than the steps done (not failed: a first try that was corrected
    is no habit) in at least `share` of the successes, at the same place among the steps
    in at least `same_place` of those done right the first time: each with its place (the
    steps before it). An action done anywhere, now here, now there, is no habit."""
    done: Counter[str] = Counter()
    places: dict[str, Counter[int]] = {}
    for e in wins:
        first = firsts(e)
        for i, (action, status) in enumerate(zip(e.actions, e.statuses, strict=True)):
            if status != "ok" or action in steps or first[action] != i:
                continue
            done[action] += 1
            if not e.repaired:  # (put right later: the fix came after it, wherever it goes)
                places.setdefault(action, Counter())[_place(first, steps, i)] += 1
    out = {}
    for action, n in done.items():
        if n < share * len(wins) or action not in places:
            continue
        place, m = places[action].most_common(1)[0]
        if m >= same_place * places[action].total():
            out[action] = place
    return out
