"""MaxScore (Turtle and Flood), a batch at a time with numpy, over a query prepared by
`bm25.py`: the answer of scoring every posting, reading fewer of them."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from app.search.scoring import Query, norms, passing, score_at, scored, weighed


def pruned(q: Query, limit: int, share: int) -> tuple[Any, Any] | None:
    """MaxScore, a batch at a time. The terms that can add most are read first, each
    slot's partial score summed from their postings, until what the other terms could
    add to a slot holding none of these is below a threshold: the `limit`-th best exact
    value among the slots leading on their partial scores. Only the slots whose partial
    score plus what the other terms could add reach the threshold are then scored in
    full. None when that would read more postings than 1/`share` of the slots."""
    order = sorted((g for g in q.groups if g.parts), key=lambda g: g.bound, reverse=True)
    if not order:
        return np.zeros(0, dtype=np.int32), np.zeros(0)
    n = len(q.data.ids)
    partial = np.zeros(n, dtype=np.float64)  # over the terms read
    held = np.zeros(n, dtype=np.float64)  # terms read that a slot holds, or more
    seen = np.zeros(n, dtype=bool)
    batches: list[Any] = []
    read, threshold = 0, -math.inf
    for j, group in enumerate(order):
        read += sum(len(p.slots) for p in group.parts)
        if read * share > n:
            return None
        for p in group.parts:
            partial[p.slots] += group.times * weighed(p, p.tf, norms(q, p.slots))
            held[p.slots] += group.times  # a slot holding two parts: counted twice, a bound
            new = p.slots[~seen[p.slots]]
            seen[new] = True
            batches.append(new)
        slots = np.concatenate(batches)
        batches = [slots]
        left = order[j + 1 :]
        bounds, times = sum(g.bound for g in left), sum(g.times for g in left)
        best = leading(q, slots, partial, held, limit)
        if len(best[1]) >= limit:
            threshold = max(threshold, float(np.partition(best[1], -limit)[-limit]))
        if not left or most(q, bounds, 0.0, times, 0.0) < threshold:
            break
    # Every slot reaching the threshold holds one of the terms read; those that can.
    can = most(q, bounds, partial[slots], times, held[slots]) >= threshold
    slots = np.sort(slots[can])
    return scored(q, slots[passing(q, slots)])


def most(q: Query, bounds: float, partial: Any, times: int, held: Any) -> Any:
    """The most a slot's value can be with this partial score and these terms held when
    the terms left can add at most `bounds` and `times` more."""
    most = (partial + bounds) * ((held + times) / q.terms if q.coordinate else 1.0)
    return most * (1 + 1e-9)  # the partial sums ran in another order than the exact ones


def leading(q: Query, slots: Any, partial: Any, held: Any, limit: int) -> tuple[Any, Any]:
    """The slots leading on their partial values that pass the filters (at least `limit`
    of them when that many of these slots do), and their exact values."""
    approx = partial[slots] * (held[slots] / q.terms if q.coordinate else 1.0)
    take = 4 * limit
    while True:
        if take >= len(slots):
            lead = np.sort(slots)
        else:
            lead = np.sort(slots[np.argpartition(approx, -take)[-take:]])
        lead = lead[passing(q, lead)]
        if len(lead) >= limit or take >= len(slots):
            scores, count = score_at(q, lead)
            return lead, q.values(scores, count)
        take *= 8
