"""Ridge regression's penalties (pure numpy): none for the intercept, l2 for the one-hot
columns, and l2 times a shrink for the numeric ones, the SHRINK whose models predict the
rewards of decisions they did not see best (blocks in time). Where only the memories'
types tell them apart, the numeric features fit noise, and a window of a thousand
recalls cannot outweigh thirty of them; where they matter, a small shrink wins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
Rows = NDArray[np.int64]
SHRINK = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
CV_FOLDS = 5
MIN_DECISIONS = 4 * CV_FOLDS  # fewer: no choice, a shrink of 1


def penalty(size: int, l2: float, shrink: float, *, numeric: int) -> Floats:
    """Each column's penalty: the intercept (column 0) none, the `numeric` columns after it
    l2 times `shrink`, the rest l2."""
    out = np.full(size, l2)
    out[0] = 0.0
    out[1 : 1 + numeric] = l2 * shrink
    return out


def cv_blocks(n: int, folds: Sequence[Rows]) -> list[Rows]:
    """The blocks of cross-validation: the given folds (decision indices), then the
    decisions they leave cut into CV_FOLDS blocks in time."""
    taken = np.concatenate([np.asarray(f, dtype=np.int64) for f in folds]) if folds else None
    rest = np.setdiff1d(np.arange(n), taken) if taken is not None else np.arange(n)
    tail = [b.astype(np.int64) for b in np.array_split(rest, CV_FOLDS) if len(b)]
    return [np.asarray(f, dtype=np.int64) for f in folds] + tail


@dataclass
class CrossValidation:
    """Blocks of decisions with their regression sums (gram, moment), taken once."""

    a: Floats  # the design, a row per decision
    w: Floats  # each decision's weight in the fit
    rewards: Floats
    blocks: list[Rows]
    parts: list[tuple[Floats, Floats]]
    solve: Callable[[Floats, Floats, Floats], Floats]  # (gram, moment, penalty) -> coefficients

    def shrink(
        self, gram: Floats, moment: Floats, *, l2: float, numeric: int, skip: int | None = None
    ) -> float:
        """The SHRINK whose models, each fitted on `gram`, `moment` less one block, predict
        that block's rewards best (weighted as the fit is); the block `skip` (left out of
        the sums already) takes no part."""
        used = [k for k in range(len(self.blocks)) if k != skip and len(self.blocks[k])]
        if sum(len(self.blocks[k]) for k in used) < MIN_DECISIONS or len(used) < 2:
            return 1.0
        best: tuple[float, float] | None = None
        for shrink in SHRINK:
            penalties = penalty(self.a.shape[1], l2, shrink, numeric=numeric)
            error = 0.0
            for k in used:
                rows, (g, m) = self.blocks[k], self.parts[k]
                beta = self.solve(gram - g, moment - m, penalties)
                error += float(
                    np.sum(self.w[rows] * (self.rewards[rows] - self.a[rows] @ beta) ** 2)
                )
            if best is None or error < best[0]:
                best = (error, shrink)
        assert best is not None
        return best[1]
