"""Confidence sequences: intervals for a mean that hold at every number of observations at
once, so a decision may be checked after each new reward and stopped whenever it is clear
without inflating its error (unlike a fixed-size interval checked again and again).

The interval is the asymptotic confidence sequence of Waudby-Smith et al. ("Time-uniform
central limit theory and asymptotic confidence sequences", 2021): Robbins' normal mixture
boundary with the running variance plugged in. It needs no bound on the rewards (explicit
reward values have none) and is tuned to be tightest near `tight_at` observations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["better", "worse"]


@dataclass(frozen=True, slots=True)
class Bound:
    mean: float
    low: float
    high: float
    n: int


def mixture_rho(tight_at: int, alpha: float) -> float:
    """The mixture's spread that makes the boundary tightest at `tight_at` observations."""
    log_alpha = -2.0 * math.log(alpha)
    return math.sqrt((log_alpha + math.log(log_alpha + 1.0)) / tight_at)


def sequence(values: Sequence[float], *, alpha: float, tight_at: int) -> Bound:
    """The (1 - alpha) confidence sequence's interval after these values (in the order
    they were observed; only their count and moments matter here)."""
    n = len(values)
    if n < 2:
        return Bound(values[0] if values else 0.0, -math.inf, math.inf, n)
    mean = math.fsum(values) / n
    variance = math.fsum((v - mean) ** 2 for v in values) / n
    rho2 = mixture_rho(tight_at, alpha) ** 2
    spread = n * rho2 + 1.0
    half = math.sqrt(variance) * math.sqrt(
        2.0 * spread / (n * n * rho2) * math.log(math.sqrt(spread) / alpha)
    )
    return Bound(mean, mean - half, mean + half, n)


def compare(
    mine: Sequence[float],
    others: Sequence[float],
    *,
    alpha: float,
    tight_at: int,
    ratio: int = 1,
) -> tuple[Verdict | None, Bound]:
    """Whether `mine` has a higher mean than `others` ("better"), a lower one ("worse"), or
    neither is clear yet (None), with the confidence sequence of the difference: the k-th
    of mine less the mean of the k-th block of `ratio` others (the streams' expected
    ratio, fixed in advance), so that a verdict is wrong with probability at most alpha
    however often it is asked. One sequence of differences is about 1.4 times narrower
    than two sequences' intervals that must part, so a verdict comes with about half the
    rewards."""
    ratio = max(1, ratio)
    pairs = min(len(mine), len(others) // ratio)
    differences = [
        mine[k] - math.fsum(others[k * ratio : (k + 1) * ratio]) / ratio for k in range(pairs)
    ]
    gain = sequence(differences, alpha=alpha, tight_at=tight_at)
    return _verdict(gain, 0.0, 0.0), gain


def against(
    mine: Sequence[float], low: float, high: float, *, alpha: float, tight_at: int
) -> tuple[Verdict | None, Bound]:
    """The same against a fixed interval [low, high] for the other mean."""
    a = sequence(mine, alpha=alpha, tight_at=tight_at)
    return _verdict(a, low, high), a


def _verdict(a: Bound, low: float, high: float) -> Verdict | None:
    if a.low > high:
        return "better"
    if a.high < low:
        return "worse"
    return None
