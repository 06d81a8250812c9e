"""The learned recall policy's reward model (pure numpy): a per-candidate contextual bandit.

A recall's reward is modelled as additive over what it selected:
    reward ≈ intercept + Σ_{c selected} gain(c),    gain(c) = β · φ(c, request)
where φ is the candidate's logged features (clipped to their range in training,
standardised, and their squares; expected_utility, a clipped copy of reward_mean, left
out), its type and status as one-hot columns, two features of the candidate within its
request (its share of the token budget, its rank among the candidates), and its type for
the request's task type (one-hot columns per kind of task: the MAX_KINDS task types with
MIN_KIND_DECISIONS logged decisions at least, when two have; a memory type that helps one
kind of task and hurts another is told apart only there). Fitted by ridge
regression on the logged transitions, each weighted by its inverse propensity (clipped):
decisions the behaviour policy rarely makes, which show what its usual ones do not, count
more. The numeric features' penalty is chosen by cross-validation (app/learning/ridge.py).

The policy (app/learning/policy.py with `gains`) takes the constraints first, then the soft
candidates by predicted gain while they fit, leaving out those whose gain is below 0 by
more than the model's `margin`. The gains' common level is told from the intercept only
by decisions that select more or fewer memories than usual (exploration's rare
leave-outs); when few, a cut at 0 could leave out every candidate of a kind. The margin
is LEVEL_Z standard errors of that level: a pick is left out where the logs show it hurts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.learning.encodings import MEMORY_STATUSES, MEMORY_TYPES
from app.learning.features import CANDIDATE_FEATURES, REQUEST_FEATURES, SCHEMA_VERSION
from app.learning.ridge import CrossValidation, cv_blocks, penalty

KIND = "linear_bandit"
# 2: expected_utility left out (a clipped copy of reward_mean: the fit gave the two large
# opposite weights, which stopped cancelling once rewards passed the clip), and each
# feature clipped to the range it had in training (no extrapolation, e.g. of counters
# that keep growing under a new policy). 3: the type per kind of task (task type).
# 4: the standardised features held within ±Z_CLIP (a version 2 or 3 model, unheld, still
# loads and predicts as it was fitted, and is written as version 3: JSON has no infinity).
BASIS_VERSION = 4
MAX_KINDS = 8
MIN_KIND_DECISIONS = 20
LEVEL_Z = 2.0  # the margin, in standard errors of the gains' level
Z_CLIP = 3.0
NUMERIC = [
    f
    for f in CANDIDATE_FEATURES
    if f not in ("present", "type_index", "status_index", "expected_utility")
]
_NUMERIC = [CANDIDATE_FEATURES.index(f) for f in NUMERIC]
_TYPE = CANDIDATE_FEATURES.index("type_index")
_STATUS = CANDIDATE_FEATURES.index("status_index")
_COST = CANDIDATE_FEATURES.index("token_cost")
_RANK = CANDIDATE_FEATURES.index("retrieval_rank")
_BUDGET = REQUEST_FEATURES.index("token_budget")
_N = REQUEST_FEATURES.index("n_candidates")
BASIS = [
    *NUMERIC,
    *(f"{f}^2" for f in NUMERIC),
    "token_cost/token_budget",
    "retrieval_rank/n_candidates",
    *(f"type={t}" for t in MEMORY_TYPES.names),
    *(f"status={s}" for s in MEMORY_STATUSES.names),
]
Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
_COLUMNS = 2 * len(NUMERIC) + 2  # the numeric ones after the intercept: z, z², share, rank


def basis_of(kinds: Sequence[str]) -> list[str]:
    """The basis' names given the model's kinds of task."""
    return [*BASIS, *(f"type={t}@{kind}" for kind in kinds for t in MEMORY_TYPES.names)]


def kinds_of(task_types: Sequence[str | None]) -> tuple[str, ...]:
    """The kinds of task given columns of their own: the most frequent task types with
    MIN_KIND_DECISIONS decisions at least (at most MAX_KINDS), when two such are."""
    counts = Counter(t for t in task_types if t)
    kinds = [t for t, n in counts.most_common(MAX_KINDS) if n >= MIN_KIND_DECISIONS]
    return tuple(sorted(kinds)) if len(kinds) >= 2 else ()


def kind_index(kinds: Sequence[str], task_types: Sequence[str | None]) -> Ints:
    """Each task type's place among `kinds` (-1: none of them)."""
    at = {kind: i for i, kind in enumerate(kinds)}
    return np.asarray([at.get(t, -1) if t else -1 for t in task_types], dtype=np.int64)


def basis(
    rows: Floats,
    requests: Floats,
    mean: Floats,
    scale: Floats,
    low: Floats,
    high: Floats,
    *,
    kinds: Ints | None = None,
    n_kinds: int = 0,
    z_clip: float = Z_CLIP,
) -> Floats:
    """φ of each candidate row (CANDIDATE_FEATURES) given its request's row (REQUEST_FEATURES,
    of which it uses token_budget and n_candidates, known before the decision) and the
    index of its request's kind of task among the model's `n_kinds` (-1: none of them);
    the numeric features clipped to [low, high], their range in training."""
    # Standardised values held within ±Z_CLIP: a counter's first values (reward_mean before
    # any reward, z ≈ -9) would otherwise weigh 80 times a typical one in z².
    z = np.clip((np.clip(rows[:, _NUMERIC], low, high) - mean) / scale, -z_clip, z_clip)
    n = len(rows)
    n_types = len(MEMORY_TYPES.names)
    type_codes = rows[:, _TYPE].astype(np.int64)
    types = np.zeros((n, n_types))
    types[np.arange(n), type_codes] = 1.0
    statuses = np.zeros((n, len(MEMORY_STATUSES.names)))
    statuses[np.arange(n), rows[:, _STATUS].astype(np.int64)] = 1.0
    share = rows[:, _COST] / np.maximum(requests[:, _BUDGET], 1.0)
    rank = rows[:, _RANK] / np.maximum(requests[:, _N], 1.0)
    per_kind = np.zeros((n, n_kinds * n_types))
    if n_kinds and kinds is not None:
        known = np.flatnonzero(kinds >= 0)
        per_kind[known, kinds[known] * n_types + type_codes[known]] = 1.0
    return np.hstack([z, z * z, share[:, None], rank[:, None], types, statuses, per_kind])


@dataclass(frozen=True)
class RewardModel:
    intercept: float
    weights: Floats  # over BASIS
    mean: Floats  # of the NUMERIC features, for standardising
    scale: Floats
    low: Floats  # their range in training
    high: Floats
    kinds: tuple[str, ...] = ()  # the task types with a type weight of their own
    margin: float = 0.0  # a soft pick is left out when its gain is at most -margin
    z_clip: float = Z_CLIP  # the standardised features' bound (inf: a version 2 or 3 model)

    def gains(self, rows: Floats, requests: Floats, task_type: str | None = None) -> Floats:
        """Predicted reward gain of selecting each candidate (all of one request, of
        `task_type`)."""
        if len(rows) == 0:
            return np.zeros(0)
        kinds = np.repeat(kind_index(self.kinds, [task_type]), len(rows))
        phi = basis(
            rows, requests, self.mean, self.scale, self.low, self.high,
            kinds=kinds, n_kinds=len(self.kinds), z_clip=self.z_clip,
        )  # fmt: skip
        return phi @ self.weights

    def gains_of(
        self,
        features: dict[str, dict[str, float]],
        *,
        token_budget: int,
        k: int,
        n_scope_keys: int,
        task_type: str | None = None,
    ) -> dict[str, float]:
        """Predicted gain by memory id, from each candidate's named features; the request
        row as the state logs it (tokens_available, decided after, is not in the basis)."""
        rows = np.array([[f[name] for name in CANDIDATE_FEATURES] for f in features.values()])
        request = [float(token_budget), float(k), float(len(features)), 0.0, float(n_scope_keys)]
        values = self.gains(rows, np.repeat(np.array([request]), len(rows), axis=0), task_type)
        return dict(zip(features, values.tolist(), strict=True))

    def to_json(self) -> dict[str, Any]:
        held = math.isfinite(self.z_clip)
        return {
            "kind": KIND,
            "basis_version": BASIS_VERSION if held else 3,
            "feature_schema": SCHEMA_VERSION,
            "basis": basis_of(self.kinds),
            "kinds": list(self.kinds),
            "intercept": self.intercept,
            "weights": self.weights.tolist(),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "margin": self.margin,
            **({"z_clip": self.z_clip} if held else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RewardModel:
        # Version 2 is 3 without kinds; 3 is 4 with its features not held.
        kinds = tuple(data.get("kinds") or ())
        version = data.get("basis_version")
        if version not in (2, 3, BASIS_VERSION) or data.get("basis") != basis_of(kinds):
            raise ValueError("the model was fitted on another feature basis")
        return cls(
            intercept=float(data["intercept"]),
            weights=np.asarray(data["weights"], dtype=np.float64),
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            low=np.asarray(data["low"], dtype=np.float64),
            high=np.asarray(data["high"], dtype=np.float64),
            kinds=kinds,
            margin=float(data.get("margin") or 0.0),
            z_clip=float(data["z_clip"]) if version == BASIS_VERSION else math.inf,
        )


@dataclass
class Logs:
    """Logged decisions as arrays: the selected candidates' rows, whose decision each is,
    and per decision its request row, reward and propensity."""

    rows: Floats  # (m, len(CANDIDATE_FEATURES)), the selected candidates
    owner: NDArray[np.int64]  # (m,), the decision of each row
    requests: Floats  # (n, len(REQUEST_FEATURES))
    rewards: Floats  # (n,)
    propensities: Floats  # (n,)
    task_types: Sequence[str | None] = ()  # (n,) when known


def fit(
    logs: Logs, *, l2: float, clip: float, folds: Sequence[NDArray[np.int64]] = ()
) -> tuple[RewardModel, dict[str, float], list[RewardModel]]:
    """Weighted ridge regression of the reward on the sum of the selected candidates' φ:
    the model of every decision, its metrics, and for each of `folds` (decision indices)
    the model of every decision but those (cross-fitting: each fold judged by a model that
    never saw its rewards). The standardisation is the whole window's; a fold's model
    takes the regression's sums less the fold's own, so it costs a solve, not a fit."""
    n = len(logs.rewards)
    if len(logs.rows):
        numeric = logs.rows[:, _NUMERIC]
        mean, scale = numeric.mean(axis=0), numeric.std(axis=0)
        low, high = numeric.min(axis=0), numeric.max(axis=0)
    else:
        mean, scale = np.zeros(len(NUMERIC)), np.ones(len(NUMERIC))
        low, high = np.full(len(NUMERIC), -np.inf), np.full(len(NUMERIC), np.inf)
    scale = np.where(scale > 1e-9, scale, 1.0)
    kinds = kinds_of(logs.task_types)
    at = kind_index(kinds, logs.task_types or [None] * n)
    phi = basis(
        logs.rows, logs.requests[logs.owner], mean, scale, low, high,
        kinds=at[logs.owner], n_kinds=len(kinds),
    )  # fmt: skip
    x = np.zeros((n, len(basis_of(kinds))))
    np.add.at(x, logs.owner, phi)
    w = np.minimum(1.0 / np.maximum(logs.propensities, 1e-12), clip)
    a = np.hstack([np.ones((n, 1)), x])

    def sums(rows: NDArray[np.int64] | slice) -> tuple[Floats, Floats]:
        weighted = a[rows] * w[rows, None]
        return weighted.T @ a[rows], weighted.T @ logs.rewards[rows]

    def solve(gram: Floats, moment: Floats, penalty: Floats) -> Floats:
        return np.linalg.solve(gram + np.diag(penalty), moment).astype(np.float64)

    gram, moment = sums(slice(None))
    # The level's direction: the mean selected candidate's φ (not the intercept).
    level = np.concatenate([[0.0], phi.mean(axis=0)]) if len(phi) else np.zeros(a.shape[1])
    meat = (a * (w * w)[:, None]).T @ a  # Σ w² a aᵀ: the weighted sums' covariance / σ²
    noise = float(np.average((logs.rewards - logs.rewards.mean()) ** 2, weights=w)) if n else 0.0

    def model(gram: Floats, moment: Floats, shrink: float, meat: Floats = meat) -> RewardModel:
        penalties = penalty(a.shape[1], l2, shrink, numeric=_COLUMNS)
        beta = solve(gram, moment, penalties)
        # The level's standard error: σ² uᵀ (G+P)⁻¹ (Σ w² a aᵀ) (G+P)⁻¹ u, σ² the rewards'.
        v = solve(gram, level, penalties)
        se = float(np.sqrt(max(noise * float(v @ meat @ v), 0.0)))
        return RewardModel(
            float(beta[0]), beta[1:], mean, scale, low, high, kinds, margin=LEVEL_Z * se
        )

    # Cross-validation's blocks: the folds, then what they leave cut in CV_FOLDS; each
    # block's sums are taken once.
    blocks = cv_blocks(n, folds)
    cv = CrossValidation(a, w, logs.rewards, blocks, [sums(b) for b in blocks], solve)
    chosen = cv.shrink(gram, moment, l2=l2, numeric=_COLUMNS)
    whole = model(gram, moment, chosen)
    out_of_fold = []
    for k, rows in enumerate(folds):
        # The fold's rewards choose nothing of its model, its shrink included.
        g, m = sums(rows)
        shrink = cv.shrink(gram - g, moment - m, l2=l2, numeric=_COLUMNS, skip=k)
        fold_meat = meat - (a[rows] * (w[rows] ** 2)[:, None]).T @ a[rows]
        out_of_fold.append(model(gram - g, moment - m, shrink, fold_meat))
    predicted = a @ np.concatenate([[whole.intercept], whole.weights])
    residual = logs.rewards - predicted
    total = float(np.sum(w * (logs.rewards - np.average(logs.rewards, weights=w)) ** 2))
    metrics = {
        "decisions": float(n),
        "selected_rows": float(len(logs.rows)),
        "mean_reward": float(logs.rewards.mean()) if n else 0.0,
        "weighted_r2": 1.0 - float(np.sum(w * residual**2)) / total if total > 0 else 0.0,
        "rmse": float(np.sqrt(np.mean(residual**2))) if n else 0.0,
        "numeric_shrink": chosen,
        "margin": whole.margin,
        "clipped_share": float(np.mean(1.0 / np.maximum(logs.propensities, 1e-12) > clip))
        if n
        else 0.0,
    }
    return whole, metrics, out_of_fold
