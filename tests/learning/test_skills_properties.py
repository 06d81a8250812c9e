"""Properties of skill derivation and the evolution decisions (measure, prune, split,
retire, merge) on random windows of episodes."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from app.learning.mining import wilson_ucb
from app.learning.skills import (
    MAX_EVIDENCE,
    EpisodeView,
    Procedure,
    contains_in_order,
    context_split,
    derive,
    jaccard,
    measure,
    recoveries_of,
    retire_reason,
    unneeded,
)
from tests.learning.strategies import ACTIONS, PROFILE, REWARDS, UNIT, window

SHARES = st.one_of(UNIT, st.sampled_from([0.0, 0.5, 0.8, 1.0]))
SUPPORT = st.integers(0, 6)
STEPS = st.lists(ACTIONS, max_size=5, unique=True)


def _check(proc: Procedure, win: list[EpisodeView]) -> None:
    """What any measured procedure promises about the window it was measured on."""
    hits = [e for e in win if contains_in_order(e.actions, proc.steps)]
    assert proc.support == len(hits)
    assert proc.successes == sum(e.success for e in hits)
    assert 0 <= proc.successes <= proc.support <= len(win)
    assert 0.0 <= proc.lcb <= proc.success_rate <= 1.0
    if hits:
        assert proc.mean_reward is not None
        low, high = min(e.reward for e in hits), max(e.reward for e in hits)
        assert low - 1e-6 <= proc.mean_reward <= high + 1e-6
    else:
        assert proc.mean_reward is None
    wins = {e.id for e in hits if e.success}
    assert set(proc.evidence) <= wins
    assert len(proc.evidence) == min(len(wins), MAX_EVIDENCE)


@PROFILE
@given(window(), SUPPORT, SHARES)
# Every episode had the action and min_support was 0: once a ZeroDivisionError.
@example([EpisodeView("e0", ("a",), ("ok",), True, 1.0)], 0, 1.0)
def test_derived_steps_come_from_the_successes(
    win: list[EpisodeView], min_support: int, share: float
) -> None:
    proc = derive(win, min_support=min_support, step_share=share)
    wins = [e for e in win if e.success]
    if len(wins) < min_support:
        assert proc is None
    if proc is None:
        return
    _check(proc, win)
    assert proc.steps
    assert len(set(proc.steps)) == len(proc.steps)
    for s in proc.steps:  # each step is in at least `share` of the successes
        assert sum(s in e.actions for e in wins) >= share * len(wins)
    assert set(proc.on_error) <= set(proc.steps)
    assert all(fix != s for s, fix in proc.on_error.items())


@st.composite
def ordered_window(draw: st.DrawFn) -> tuple[list[EpisodeView], tuple[str, ...]]:
    """Successes that all do the same actions in the same order, with noise between."""
    order = tuple(draw(st.lists(st.sampled_from("pqrs"), min_size=1, max_size=4, unique=True)))
    views = []
    for i in range(draw(st.integers(1, 12))):
        actions: list[str] = []
        for a in order:
            actions += draw(st.lists(st.sampled_from(["n1", "n2", "ü"]), max_size=2)) + [a]
        actions += draw(st.lists(st.sampled_from(["n1", *order]), max_size=3))
        views.append(EpisodeView(f"e{i}", tuple(actions), ("ok",) * len(actions), True, 1.0))
    return views, order


@PROFILE
@given(ordered_window())
def test_steps_keep_the_order_the_successes_share(data: tuple[list[EpisodeView], Any]) -> None:
    win, order = data
    proc = derive(win, min_support=1, step_share=1.0)
    assert proc is not None
    # Every shared action is a step; the shared ones come in the successes' order.
    assert [s for s in proc.steps if s in order] == list(order)
    if set(proc.steps) <= set(order):  # noise in every success may order either way
        assert proc.support == proc.successes == len(win)


@PROFILE
@given(st.lists(ACTIONS, max_size=10), STEPS)
def test_contains_in_order_is_the_subsequence_test(actions: list[str], steps: list[str]) -> None:
    def naive(xs: list[str], ys: list[str]) -> bool:
        if not ys:
            return True
        if not xs:
            return False
        return naive(xs[1:], ys[1:]) if xs[0] == ys[0] else naive(xs[1:], ys)

    assert contains_in_order(actions, steps) == naive(actions, steps)
    assert contains_in_order(actions, actions)
    assert contains_in_order(actions, [])


@PROFILE
@given(STEPS, window())
def test_measure_counts_what_it_claims(steps: list[str], win: list[EpisodeView]) -> None:
    _check(measure(steps, win), win)
    if not steps:
        assert measure(steps, win).support == len(win)


@PROFILE
@given(STEPS, window())
def test_recoveries_follow_failures_at_least_twice(
    steps: list[str], win: list[EpisodeView]
) -> None:
    wins = [e for e in win if e.success]
    for step, fix in recoveries_of(steps, wins).items():
        followed = sum(
            1
            for e in wins
            for i in range(len(e.actions) - 1)
            if e.actions[i] == step and e.statuses[i] != "ok" and e.actions[i + 1] == fix
        )
        assert step in steps
        assert fix != step
        assert followed >= 2


@PROFILE
@given(STEPS, window(), SUPPORT, st.floats(0.0, 1.0))
def test_unneeded_steps_did_about_as_well(
    steps: list[str], followers: list[EpisodeView], min_support: int, margin: float
) -> None:
    full = measure(steps, followers)
    for step, without in unneeded(steps, followers, min_support=min_support, margin=margin):
        assert step in steps
        assert step not in without.steps
        assert without.support >= min_support
        assert without.success_rate >= full.success_rate - margin


@PROFILE
@given(STEPS, window(), SUPPORT, UNIT, UNIT)
def test_context_split_names_a_good_and_a_bad_value(
    steps: list[str], win: list[EpisodeView], min_support: int, good: float, bad: float
) -> None:
    split = context_split(steps, win, min_support=min_support, good_lcb=good, bad_below=bad)
    if split is None:
        return
    assert split.feature != split.bad_feature
    assert split.feature.split("=", 1)[0] == split.bad_feature.split("=", 1)[0]
    assert split.good.support >= min_support
    assert split.good.lcb >= good
    assert split.bad.support >= min_support
    assert wilson_ucb(split.bad.successes, split.bad.support) < bad


USES = st.lists(
    st.fixed_dictionaries(
        {"success": st.booleans()}, optional={"reward": st.one_of(st.none(), REWARDS)}
    ),
    max_size=30,
)


@PROFILE
@given(USES, st.integers(1, 12), UNIT)
def test_retirement_judges_the_latest_uses(
    uses: list[dict[str, Any]], after: int, below: float
) -> None:
    reason = retire_reason(uses, after_uses=after, below=below)
    if len(uses) < after:
        assert reason is None
        return
    last = uses[-after:]
    rate = sum(bool(u["success"]) for u in last) / after
    total = sum(float(u.get("reward") or 0.0) for u in last)
    assert (reason is None) == (rate >= below and total > 0)
    # Only the latest uses count: older history never changes the verdict.
    assert retire_reason([{"success": False}] * 5 + uses, after_uses=after, below=below) == reason


@PROFILE
@given(STEPS, STEPS)
def test_jaccard_is_a_symmetric_similarity(a: list[str], b: list[str]) -> None:
    assert 0.0 <= jaccard(a, b) == jaccard(b, a) <= 1.0
    assert jaccard(a, a) == 1.0
