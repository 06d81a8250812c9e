"""The reward model: fitted on logged selections, it tells the memories that help from
those that hurt, never extrapolates past what it was trained on, and survives a round trip
through its stored form; a fold's model never sees the fold's rewards."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.learning.bandit import Logs, RewardModel, fit
from app.learning.encodings import MEMORY_TYPES
from app.learning.features import CANDIDATE_FEATURES, REQUEST_FEATURES
from app.learning.ridge import SHRINK

CONFIDENCE = CANDIDATE_FEATURES.index("confidence")
USE_COUNT = CANDIDATE_FEATURES.index("use_count")


def logs(n: int, rng: np.random.Generator) -> Logs:
    """n decisions of 4 selected candidates; a confident memory adds 0.3, a doubtful one
    takes 0.3 away."""
    rows = rng.uniform(0, 1, (n * 4, len(CANDIDATE_FEATURES)))
    rows[:, CANDIDATE_FEATURES.index("type_index")] = 2
    rows[:, CANDIDATE_FEATURES.index("status_index")] = 0
    rows[:, USE_COUNT] = rng.integers(0, 10, n * 4)
    owner = np.repeat(np.arange(n), 4)
    effect = np.where(rows[:, CONFIDENCE] > 0.5, 0.3, -0.3)
    rewards = 0.5 + np.bincount(owner, weights=effect, minlength=n) + rng.normal(0, 0.05, n)
    requests = np.tile([400.0, 8, 20, 0, 0], (n, 1))
    assert requests.shape[1] == len(REQUEST_FEATURES)
    return Logs(rows, owner, requests, rewards, rng.uniform(0.05, 1.0, n))


def test_it_tells_helpful_from_harmful_and_does_not_extrapolate() -> None:
    rng = np.random.default_rng(1)
    model, metrics, _ = fit(logs(3000, rng), l2=1.0, clip=20.0)
    assert metrics["weighted_r2"] > 0.6  # a step in confidence, fitted by a quadratic
    assert metrics["numeric_shrink"] < max(SHRINK)  # (confidence matters: not the most)
    probe = rng.uniform(0, 1, (200, len(CANDIDATE_FEATURES)))
    probe[:, CANDIDATE_FEATURES.index("type_index")] = 2
    probe[:, CANDIDATE_FEATURES.index("status_index")] = 0
    probe[:, USE_COUNT] = 5
    requests = np.tile([400.0, 8, 20, 0, 0], (200, 1))
    gains = model.gains(probe, requests)
    helpful = probe[:, CONFIDENCE] > 0.6
    harmful = probe[:, CONFIDENCE] < 0.4
    assert (gains[helpful] > 0).mean() > 0.95
    assert (gains[harmful] < 0).mean() > 0.95
    # A counter far past its training range counts as its largest value seen.
    far = probe.copy()
    far[:, USE_COUNT] = 10_000
    edge = probe.copy()
    edge[:, USE_COUNT] = 9
    assert np.allclose(model.gains(far, requests), model.gains(edge, requests))
    again = RewardModel.from_json(model.to_json())
    assert np.allclose(again.gains(probe, requests), gains)


def test_a_folds_model_never_sees_the_folds_rewards() -> None:
    rng = np.random.default_rng(2)
    clean = logs(2000, rng)
    fold, rest = np.arange(0, 500), np.arange(500, 2000)
    _, _, (without_fold, without_rest) = fit(clean, l2=1.0, clip=20.0, folds=[fold, rest])
    # The fold's rewards turned upside down: its own model is the same, the others' is not.
    upside_down = Logs(
        clean.rows, clean.owner, clean.requests, clean.rewards.copy(), clean.propensities
    )
    upside_down.rewards[fold] = 10.0 - upside_down.rewards[fold]
    _, _, (again, changed) = fit(upside_down, l2=1.0, clip=20.0, folds=[fold, rest])
    assert again.intercept == pytest.approx(without_fold.intercept)
    assert np.allclose(again.weights, without_fold.weights)
    assert not np.allclose(changed.weights, without_rest.weights)
    # No fold left out: the model of every decision.
    whole, _, (same,) = fit(clean, l2=1.0, clip=20.0, folds=[np.arange(0)])
    assert np.allclose(same.weights, whole.weights)


def test_a_type_that_helps_one_kind_of_task_and_hurts_another_is_told_apart() -> None:
    """Facts help a deploy and hurt a review, preferences the other way round: across the
    two kinds every memory's mean effect is 0, so only the type per kind tells them apart."""
    rng = np.random.default_rng(3)
    n = 3000
    fact, preference = MEMORY_TYPES.names.index("fact"), MEMORY_TYPES.names.index("preference")
    rows = rng.uniform(0, 1, (n * 4, len(CANDIDATE_FEATURES)))
    rows[:, CANDIDATE_FEATURES.index("type_index")] = rng.choice([fact, preference], n * 4)
    rows[:, CANDIDATE_FEATURES.index("status_index")] = 0
    owner = np.repeat(np.arange(n), 4)
    kinds = rng.choice(["deploy", "review"], n)
    helps = (rows[:, CANDIDATE_FEATURES.index("type_index")] == fact) == (kinds[owner] == "deploy")
    effect = np.where(helps, 0.2, -0.2)
    rewards = 0.5 + np.bincount(owner, weights=effect, minlength=n) + rng.normal(0, 0.1, n)
    requests = np.tile([400.0, 8, 20, 0, 0], (n, 1))
    logs = Logs(rows, owner, requests, rewards, rng.uniform(0.05, 1.0, n), list(kinds))
    model, metrics, _ = fit(logs, l2=1.0, clip=20.0)
    assert model.kinds == ("deploy", "review")
    # The numeric features tell nothing here: cross-validation shrinks them the most.
    assert metrics["numeric_shrink"] == max(SHRINK)
    probe = rows[:200].copy()
    is_fact = probe[:, CANDIDATE_FEATURES.index("type_index")] == fact
    for kind, sign in (("deploy", 1), ("review", -1)):
        gains = model.gains(probe, requests[:200], kind)
        assert (np.sign(gains[is_fact]) == sign).all()
        assert (np.sign(gains[~is_fact]) == -sign).all()
    # A kind it was not fitted on: no type is told apart from the other.
    other = model.gains(probe, requests[:200], "audit")
    assert abs(other[is_fact].mean() - other[~is_fact].mean()) < 0.05
    # The kinds survive the stored form; without them the model is as it was (version 2).
    again = RewardModel.from_json(model.to_json())
    assert np.allclose(
        again.gains(probe, requests[:200], "review"), model.gains(probe, requests[:200], "review")
    )
    without, _, _ = fit(Logs(rows, owner, requests, rewards, logs.propensities), l2=1.0, clip=20.0)
    stored = without.to_json() | {"basis_version": 2}
    stored.pop("kinds")
    assert RewardModel.from_json(stored).kinds == ()
    assert np.allclose(
        without.gains(probe, requests[:200], "deploy"), without.gains(probe, requests[:200])
    )


def test_the_margin_is_wide_where_few_decisions_vary_how_many_they_select() -> None:
    """The gains' common level is told from the intercept only by decisions that select
    more or fewer memories than usual: with a handful of those, the model's margin (how far
    below 0 a gain must fall to be left out) is wide; with many, narrow."""
    rng = np.random.default_rng(4)

    def varied(share: float) -> float:
        n = 1500
        sizes = np.where(rng.uniform(size=n) < share, rng.integers(2, 7, n), 4)
        owner = np.repeat(np.arange(n), sizes)
        rows = rng.uniform(0, 1, (len(owner), len(CANDIDATE_FEATURES)))
        rows[:, CANDIDATE_FEATURES.index("type_index")] = 2
        rows[:, CANDIDATE_FEATURES.index("status_index")] = 0
        rows[:, USE_COUNT] = rng.integers(0, 10, len(owner))
        rewards = (rng.uniform(size=n) < 0.5).astype(float)
        requests = np.tile([400.0, 8, 20, 0, 0], (n, 1))
        found = Logs(rows, owner, requests, rewards, rng.uniform(0.05, 1.0, n))
        model, metrics, _ = fit(found, l2=1.0, clip=20.0)
        assert metrics["margin"] == model.margin
        assert RewardModel.from_json(model.to_json()).margin == model.margin
        return model.margin

    rare, common = varied(0.005), varied(0.5)
    assert rare > 2 * common > 0, (rare, common)


def test_standardised_features_are_held_and_an_older_model_predicts_as_fitted() -> None:
    rng = np.random.default_rng(5)
    model, _, _ = fit(logs(1000, rng), l2=1.0, clip=20.0)
    probe = rng.uniform(0, 1, (50, len(CANDIDATE_FEATURES)))
    probe[:, CANDIDATE_FEATURES.index("type_index")] = 2
    probe[:, CANDIDATE_FEATURES.index("status_index")] = 0
    probe[:, USE_COUNT] = 0  # at the edge of its range: several sd below its mean
    requests = np.tile([400.0, 8, 20, 0, 0], (50, 1))
    held = model.gains(probe, requests)
    assert RewardModel.from_json(model.to_json()).z_clip == model.z_clip < np.inf
    assert np.allclose(RewardModel.from_json(model.to_json()).gains(probe, requests), held)
    # A version 3 model was fitted on unheld features, and predicts on them.
    older = RewardModel.from_json(model.to_json() | {"basis_version": 3})
    assert older.z_clip == np.inf
    # Written again, it is still a version 3 model, in JSON that has no infinity.
    again = json.loads(json.dumps(older.to_json(), allow_nan=False))
    assert again["basis_version"] == 3
    assert "z_clip" not in again
    assert RewardModel.from_json(again).z_clip == np.inf
    assert np.allclose(
        RewardModel.from_json(again).gains(probe, requests), older.gains(probe, requests)
    )
    tight = RewardModel.from_json(model.to_json() | {"z_clip": 0.5})
    assert not np.allclose(tight.gains(probe, requests), held)
