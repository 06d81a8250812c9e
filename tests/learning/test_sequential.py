"""Confidence sequences: they hold the true mean at every count at once (where a fixed-size
interval asked again and again does not), and a comparison checked after every reward
rarely names a winner where there is none, and finds a real one."""

from __future__ import annotations

import math
import random
import statistics

from app.learning.sequential import against, compare, sequence

ALPHA = 0.05


def _stream(rng: random.Random, n: int, kind: str) -> tuple[list[float], float]:
    """Rewards as a recall gets them: a success or not (-1 or 1), or a skewed cost."""
    if kind == "success":
        return [1.0 if rng.random() < 0.3 else -1.0 for _ in range(n)], -0.4
    return [rng.expovariate(1.0) - 1.0 for _ in range(n)], 0.0


def test_the_sequence_holds_the_mean_at_every_count_where_a_fixed_interval_does_not() -> None:
    for kind in ("success", "skewed"):
        ever_missed = naive_missed = 0
        for seed in range(100):
            values, mean = _stream(random.Random(seed), 600, kind)
            missed = naive = False
            for n in range(50, 601, 10):
                bound = sequence(values[:n], alpha=ALPHA, tight_at=300)
                missed |= not bound.low <= mean <= bound.high
                m = statistics.fmean(values[:n])
                half = 1.96 * statistics.stdev(values[:n]) / math.sqrt(n)
                naive |= not m - half <= mean <= m + half
            ever_missed += missed
            naive_missed += naive
        assert ever_missed <= 8, (kind, ever_missed)  # of 100, at the 0.05 level
        assert naive_missed >= 20, (kind, naive_missed)  # why a fixed interval is not used


def _first_verdict(
    p_mine: float, p_others: float, seed: int, *, ratio: int = 9, parted: bool = False
) -> tuple[str | None, int]:
    """A canary deciding 1/(ratio + 1) of the recalls, checked after every 10 of its
    rewards. `parted`: the verdict of two sequences whose intervals must part instead (what
    the gain's sequence replaced), for comparison."""
    rng = random.Random(seed)
    mine = [float(rng.random() < p_mine) for _ in range(800)]
    others = [float(rng.random() < p_others) for _ in range(800 * ratio)]
    for n in range(50, 801, 10):
        if parted:
            a = sequence(mine[:n], alpha=ALPHA / 2, tight_at=500)
            b = sequence(others[: n * ratio], alpha=ALPHA / 2, tight_at=500)
            verdict = "better" if a.low > b.high else "worse" if a.high < b.low else None
        else:
            verdict, _ = compare(mine[:n], others[: n * ratio], alpha=ALPHA, tight_at=500,
                                 ratio=ratio)  # fmt: skip
        if verdict is not None:
            return verdict, n
    return None, 800


def test_no_verdict_where_there_is_no_difference_and_the_right_one_where_there_is() -> None:
    for ratio in (9, 1):
        null = [_first_verdict(0.5, 0.5, seed, ratio=ratio)[0] for seed in range(60)]
        assert sum(v is not None for v in null) <= 3, (ratio, null)
        better = [_first_verdict(0.65, 0.5, seed, ratio=ratio) for seed in range(30)]
        assert all(v == "better" for v, _ in better), (ratio, better)
        assert statistics.median(n for _, n in better) <= 300, (ratio, better)
        worse = [_first_verdict(0.35, 0.5, seed, ratio=ratio) for seed in range(30)]
        assert all(v == "worse" for v, _ in worse), (ratio, worse)


def test_the_gains_sequence_decides_sooner_than_two_intervals_that_must_part() -> None:
    for ratio in (9, 1):
        paired = [_first_verdict(0.65, 0.5, seed, ratio=ratio)[1] for seed in range(30)]
        parted = [_first_verdict(0.65, 0.5, s, ratio=ratio, parted=True)[1] for s in range(30)]
        assert statistics.median(paired) < 0.8 * statistics.median(parted), (paired, parted)


def test_the_gains_sequence_holds_the_true_gain_at_every_count() -> None:
    missed = 0
    for seed in range(100):
        rng = random.Random(seed)
        mine = [float(rng.random() < 0.6) for _ in range(600)]
        others = [float(rng.random() < 0.45) for _ in range(600)]
        bounds = [compare(mine[:n], others[:n], alpha=ALPHA, tight_at=300)[1]
                  for n in range(50, 601, 10)]  # fmt: skip
        missed += any(not b.low <= 0.15 <= b.high for b in bounds)
    assert missed <= 8, missed


def test_against_a_fixed_interval_and_too_few_values() -> None:
    rng = random.Random(7)
    values = [rng.gauss(0.8, 0.3) for _ in range(400)]
    assert against(values, 0.4, 0.5, alpha=ALPHA, tight_at=200)[0] == "better"
    assert against(values, 1.1, 1.2, alpha=ALPHA, tight_at=200)[0] == "worse"
    assert against(values, 0.7, 0.9, alpha=ALPHA, tight_at=200)[0] is None
    one = sequence([0.5], alpha=ALPHA, tight_at=200)
    assert (one.low, one.high) == (-math.inf, math.inf)
