"""Off-policy evaluation of a recall policy on logged decisions (pure numpy).

A recall selects a set of memories, so the logged policy's probability of the exact
selection another policy would make is tiny or zero: per-selection importance weights
would leave nothing to average. Rewards are taken as additive over the selected memories
(the model of app/learning/bandit.py), and each decision is reweighted by the
pseudo-inverse estimator for such rewards: with z(S) = [1, indicators of S],
    Γ = E_logging[z zᵀ],   θ = E_target[z],   w = z(S_logged) · Γ⁺ θ,
E_logging[w · reward] is the target's value whenever θ lies in the span of Γ (the logged
policy's selections can express the target's). Where it does not, the decision lacks
support: exploration was off, or the target selects what the logs never could.

Both policies' distributions are exact (app/learning/policy.py's `plan`), rebuilt from the
logged state; a decision whose rebuilt inclusion probabilities differ from those logged is
not used. Estimates: IPS (mean of w·r), self-normalised IPS (Σ w·r / Σ w), doubly robust
(the reward model's prediction for the target, plus w times the logged residual), each
with a bootstrap interval over decisions and held within the reward spec's range. The
verdict judges the improvement decision by decision (the policy's term minus the
baseline's on the same decision, resampled together): `better` when both the IPS and the
doubly robust intervals are above 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from app.learning.policy import Plan

MIN_SUPPORTED = 0.95  # of the decisions, for a verdict
LEVEL = 0.95
Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Term:
    """One decision, for one target policy."""

    supported: bool
    weight: float  # w (0 when unsupported)
    predicted: float  # the reward model's value of the target's selections


def _verified(logging: Plan, selected: frozenset[str], inclusion: Mapping[str, float]) -> bool:
    """The rebuilt distribution is the one the decision was drawn from: the same inclusion
    probabilities, and the logged selection is one it can make."""
    rebuilt = logging.inclusion()
    if any(abs(rebuilt.get(i, 0.0) - p) > 1e-6 for i, p in inclusion.items()):
        return False
    greedy = {c.memory_id for c, _ in logging.greedy}
    out, into = greedy - selected, selected - greedy
    if not out and not into:
        return logging.epsilon < 1.0
    if len(out) != 1 or len(into) > 1:
        return False
    left, taken = next(iter(out)), next(iter(into)) if into else None
    return any(
        m.out == left and m.probability > 0 and (m.drop if taken is None else taken in m.into)
        for m in logging.moves
    )


def _design(p: Plan, index: Mapping[str, int]) -> tuple[Floats, Floats]:
    """z of each selection the plan can make (greedy first, then each move) and its
    probability, built from the greedy selection and the moves without listing sets."""
    g = np.zeros(len(index) + 1)
    g[0] = 1.0
    g[[index[c.memory_id] for c, _ in p.greedy]] = 1.0
    sizes = [len(m.options()) for m in p.moves]
    n = sum(sizes)
    z = np.tile(g, (n + 1, 1))
    rows = np.arange(1, n + 1)
    z[rows, np.repeat([index[m.out] for m in p.moves], sizes).astype(np.int64)] = 0.0
    into = [index[j] for m in p.moves for j in m.options() if j is not None]
    has = np.array([j is not None for m in p.moves for j in m.options()], dtype=bool)
    if into:
        z[rows[has], into] = 1.0
    probs = np.concatenate([[1.0 - p.epsilon], np.repeat([m.probability for m in p.moves], sizes)])
    return z, probs


def _ids(p: Plan) -> set[str]:
    return p.reach()


def terms(
    logging: Plan,
    targets: Sequence[Plan],
    *,
    selected: frozenset[str],
    inclusion: Mapping[str, float],
    gains: Mapping[str, float],
    intercept: float,
) -> tuple[list[Term], float] | None:
    """Each target's term for one logged decision, and the reward model's prediction for
    the logged selection; None when the decision cannot be rebuilt."""
    if not _verified(logging, selected, inclusion):
        return None
    ids = sorted(_ids(logging).union(*(_ids(t) for t in targets)))
    index = {mid: n + 1 for n, mid in enumerate(ids)}
    z, p = _design(logging, index)
    gamma = (z * p[:, None]).T @ z
    inverse = np.linalg.pinv(gamma, rcond=1e-10, hermitian=True)
    beta = np.array([intercept, *(gains.get(mid, 0.0) for mid in ids)])
    z_logged = np.zeros(len(ids) + 1)
    z_logged[0] = 1.0
    z_logged[[index[mid] for mid in selected]] = 1.0
    found = []
    for target in targets:
        tz, tp = _design(target, index)
        theta = tp @ tz
        v = inverse @ theta
        supported = bool(np.allclose(gamma @ v, theta, atol=1e-7, rtol=0.0))
        found.append(
            Term(supported, float(z_logged @ v) if supported else 0.0, float(theta @ beta))
        )
    return found, float(z_logged @ beta)


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    def to_json(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


ESTIMATORS = ("ips", "snips", "dr")
# Estimators of the improvement (the policy's value minus the baseline's, decision by
# decision): the verdict is `better` when both intervals are above 0, and names the one
# whose lower end is the lower. Both, because the doubly robust interval resamples the
# decisions, not the reward model that judges them: on pure noise it left out the true
# improvement, 0, in 5 of 20 seeds of tests/api/test_policies.py's world (2 of them
# above), where IPS held it in all 20. Not the self-normalised one: its intervals held
# the true value in 35 of 40 seeds of tests/learning/test_offpolicy.py's world.
PAIRED = ("ips", "dr")


def _ratio(num: float, den: float) -> float:
    return num / den if abs(den) > 1e-12 else float("nan")


def _values(w: Floats, r: Floats, predicted: Floats, residual: Floats) -> list[float]:
    """IPS (mean of w·r), self-normalised IPS (Σ w·r / Σ w) and doubly robust (the
    model's prediction plus w times the logged residual)."""
    wr, wres = w * r, w * residual
    return [
        float(wr.mean()),
        _ratio(float(wr.sum()), float(w.sum())),
        float((predicted + wres).mean()),
    ]


def _draws(
    pw: Floats, bw: Floats, r: Floats, pp: Floats, bp: Floats, residual: Floats, idx: Any
) -> list[float]:
    """One sample's estimates: the policy's, the baseline's, and the paired improvements."""
    policy = _values(pw[idx], r[idx], pp[idx], residual[idx])
    baseline = _values(bw[idx], r[idx], bp[idx], residual[idx])
    paired = [policy[ESTIMATORS.index(k)] - baseline[ESTIMATORS.index(k)] for k in PAIRED]
    return policy + baseline + paired


def _bootstrap(
    pw: Floats,
    bw: Floats,
    r: Floats,
    pp: Floats,
    bp: Floats,
    residual: Floats,
    *,
    rounds: int,
    seed: int,
) -> tuple[list[float], Floats, Floats]:
    """Point estimates and percentile interval ends, both policies resampled together (the
    same decisions), so that the improvement's interval holds what they share."""
    point = _draws(pw, bw, r, pp, bp, residual, slice(None))
    rng = np.random.default_rng(seed)
    n = len(r)
    draws = np.array(
        [_draws(pw, bw, r, pp, bp, residual, rng.integers(0, n, n)) for _ in range(rounds)]
    )
    tail = (1.0 - LEVEL) / 2 * 100
    return point, np.nanpercentile(draws, tail, axis=0), np.nanpercentile(draws, 100 - tail, axis=0)


def _within(value: float, low: float, high: float, bounds: tuple[float, float]) -> Interval:
    """An estimate held to what it estimates can be: a mean reward lies within the rewards'
    range (an interval cut to it still holds the true value whenever the uncut one did)."""
    lo, hi = bounds
    return Interval(
        float(np.clip(value, lo, hi)), float(np.clip(low, lo, hi)), float(np.clip(high, lo, hi))
    )


def _certify(found: Interval, n: int) -> dict[str, Any]:
    """The smallest improvement these logs could certify (1.96 standard errors: the 95%
    interval's half-width), and how many more rewarded recalls like these would certify
    the estimated one (None: the estimate is no improvement). The half-width shrinks as
    1/√n."""
    smallest = (found.high - found.low) / 2
    more = None
    if found.value > 0 and smallest > 0:
        more = max(0, math.ceil(n * (smallest / found.value) ** 2) - n)
    return {"smallest_improvement": smallest, "more_recalls_needed": more}


def summarise(
    policy: Sequence[Term],
    baseline: Sequence[Term],
    *,
    rewards: Sequence[float],
    logged_predictions: Sequence[float],
    unusable: int,
    bounds: tuple[float, float],
    rounds: int = 400,
    seed: int = 0,
) -> dict[str, Any]:
    """The evaluation: both policies' estimates on the decisions that support the policy,
    the improvement's, and a verdict ("better", "not_better", or "refused" with the
    reason). Estimates and intervals stay within `bounds`, the range the reward spec
    allows (a mean reward lies in it); the verdict is "better" when the improvement's
    lower bound is above 0 by each of PAIRED."""
    total = len(policy) + unusable
    ok = np.array([t.supported for t in policy], dtype=bool) & np.array(
        [t.supported for t in baseline], dtype=bool
    )
    supported = int(ok.sum())
    share = supported / total if total else 0.0
    r = np.asarray(rewards, dtype=np.float64)[ok]
    residual = r - np.asarray(logged_predictions, dtype=np.float64)[ok]
    found: dict[str, Any] = {
        "n_decisions": total,
        "n_supported": supported,
        "supported_share": share,
        "ess": 0.0,
        "estimates": {},
        "verdict": "refused",
    }
    if total == 0:
        return found | {"reason": "no rewarded decisions of a known policy in the window"}
    if share < MIN_SUPPORTED:
        return found | {
            "reason": (
                f"the logs support {share:.0%} of the decisions (at least {MIN_SUPPORTED:.0%} "
                "needed): exploration was off, or the policy selects what the logged "
                "policies never could"
            )
        }
    pw = np.array([t.weight for t in policy])[ok]
    bw = np.array([t.weight for t in baseline])[ok]
    # Kish's effective sample size of the weights' magnitudes (pseudo-inverse weights
    # can be negative, and their plain sum can cancel): at most the decisions' number.
    found["ess"] = float(np.abs(pw).sum() ** 2 / (pw * pw).sum()) if (pw * pw).sum() > 0 else 0.0
    pp = np.array([t.predicted for t in policy])[ok]
    bp = np.array([t.predicted for t in baseline])[ok]
    point, low, high = _bootstrap(pw, bw, r, pp, bp, residual, rounds=rounds, seed=seed)
    span = bounds[1] - bounds[0]
    k = len(ESTIMATORS)
    estimates: dict[str, Any] = {}
    for n, who in enumerate(("policy", "baseline")):
        estimates[who] = {
            name: _within(point[n * k + i], low[n * k + i], high[n * k + i], bounds).to_json()
            for i, name in enumerate(ESTIMATORS)
        }
    # Chosen, certified and judged on the raw intervals (their width is the estimator's
    # measured spread); reported held to the improvement's possible range.
    raw = {
        name: Interval(point[2 * k + i], float(low[2 * k + i]), float(high[2 * k + i]))
        for i, name in enumerate(PAIRED)
    }
    usable = [n for n, v in raw.items() if not (math.isnan(v.low) or math.isnan(v.high))]
    chosen = min(usable or PAIRED, key=lambda name: (raw[name].low, name))
    improvement = raw[chosen]
    better = bool(usable) and improvement.low > 0
    paired = {n: _within(v.value, v.low, v.high, (-span, span)) for n, v in raw.items()}
    shown = paired[chosen]
    return found | {
        "estimates": estimates,
        "reward_range": list(bounds),
        "improvement": {name: v.to_json() for name, v in paired.items()},
        "estimator": chosen,
        **_certify(improvement, supported),
        "verdict": "better" if better else "not_better",
        "reason": (
            f"the improvement over baseline_v0 ({chosen}, decision by decision) is "
            f"{shown.value:.4f}, 95% interval [{shown.low:.4f}, {shown.high:.4f}]: "
            f"{'above' if better else 'not above'} 0"
        ),
    }
