"""Ridge regression's penalties (pure numpy): none for the intercept, l2 for the one-hot
columns, and l2 times a shrink for the numeric ones, the SHRINK whose models predict the
rewards of decisions they did not see best (CV_FOLDS blocks in time). Where only the
memories' types tell them apart, the numeric features fit noise, and a window of a
thousand recalls cannot outweigh thirty of them; where they matter, the least shrink wins."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
Rows = NDArray[np.int64]
SHRINK = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
CV_FOLDS = 5


def penalty(size: int, l2: float, shrink: float, *, numeric: int) -> Floats:
    """Each column's penalty: the intercept (column 0) none, the `numeric` columns after it
    l2 times `shrink`, the rest l2."""
    out = np.full(size, l2)
    out[0] = 0.0
    out[1 : 1 + numeric] = l2 * shrink
    return out


def choose_shrink(
    a: Floats,
    w: Floats,
    rewards: Floats,
    sums: Callable[[Rows], tuple[Floats, Floats]],
    solve: Callable[[Floats, Floats, Floats], Floats],
    left_out: Rows,
    *,
    l2: float,
    numeric: int,
) -> float:
    """The SHRINK whose models, each fitted without one of CV_FOLDS blocks of the decisions
    (those of `left_out` aside), predict the blocks' rewards best, weighted by `w` as the
    fit is; 1 with too few decisions. `sums(rows)` is the regression's (gram, moment) over
    those rows, `solve(gram, moment, penalty)` its coefficients."""
    kept = np.setdiff1d(np.arange(len(rewards)), left_out)
    if len(kept) < 4 * CV_FOLDS:
        return 1.0
    blocks = [b.astype(np.int64) for b in np.array_split(kept, CV_FOLDS)]
    gram, moment = sums(kept)
    parts = [sums(b) for b in blocks]
    best: tuple[float, float] | None = None
    for shrink in SHRINK:
        penalties = penalty(a.shape[1], l2, shrink, numeric=numeric)
        error = 0.0
        for rows, (g, m) in zip(blocks, parts, strict=True):
            beta = solve(gram - g, moment - m, penalties)
            error += float(np.sum(w[rows] * (rewards[rows] - a[rows] @ beta) ** 2))
        if best is None or error < best[0]:
            best = (error, shrink)
    assert best is not None
    return best[1]
