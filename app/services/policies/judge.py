"""Judging a learned recall policy on logged decisions: each decision parsed from its
transition, both policies' distributions rebuilt from its state, and the off-policy
estimates (app/learning/offpolicy.py). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
import orjson

from app.learning import offpolicy
from app.learning.bandit import Logs, RewardModel
from app.learning.features import CANDIDATE_FEATURES, REQUEST_FEATURES, as_candidate
from app.learning.policy import (
    EXPLORED_OUT,
    NO_GAIN,
    OVER_BUDGET,
    OVER_K,
    POLICY_ID,
    POLICY_VERSION,
    UNREACHED,
    Candidate,
    plan,
)

# Suppressions a policy's own fill or exploration made: the candidate was eligible.
SOFT_REASONS = {OVER_K, OVER_BUDGET, NO_GAIN, UNREACHED, EXPLORED_OUT}
_WIDTH = len(CANDIDATE_FEATURES)
_REQ = len(REQUEST_FEATURES)
_BUDGET = REQUEST_FEATURES.index("token_budget")
_K = REQUEST_FEATURES.index("k")
_SCOPE_KEYS = REQUEST_FEATURES.index("n_scope_keys")


@dataclass
class Logged:
    """One completed transition, parsed."""

    id: str
    created_at: datetime
    policy_id: str
    policy_version: int
    propensity: float
    reward: float
    request: np.ndarray
    rows: np.ndarray  # (n, CANDIDATE_FEATURES)
    ids: list[str]
    actions: list[int]
    inclusion: list[float]
    action: dict[str, Any] | None = None
    task_type: str | None = None

    def selected_only(self) -> Logged:
        """The same decision with only its selected candidates (what training reads)."""
        keep = [i for i, a in enumerate(self.actions) if a and i < len(self.rows)]
        return replace(
            self,
            rows=self.rows[keep],
            ids=[self.ids[i] for i in keep],
            actions=[1] * len(keep),
            inclusion=[self.inclusion[i] for i in keep],
        )


def parse(row: Any) -> Logged | None:
    """None for a row logged before the dataset's parts were stored with it."""
    if row.observation_vector is None or row.dataset_lists is None or row.reward is None:
        return None
    vector = np.asarray(row.observation_vector, dtype=np.float64)
    lists = orjson.loads(row.dataset_lists)
    action = getattr(row, "action", None)
    return Logged(
        id=row.id,
        created_at=row.created_at,
        policy_id=row.policy_id,
        policy_version=row.policy_version,
        propensity=float(row.propensity),
        reward=float(row.reward),
        request=vector[:_REQ],
        rows=vector[_REQ:].reshape(-1, _WIDTH),
        ids=lists["candidate_ids"],
        actions=lists["actions"],
        inclusion=lists["inclusion_pscores"],
        action=action,
        task_type=getattr(row, "task_type", None),
    )


def logs_of(decisions: Sequence[Logged]) -> Logs:
    """The decisions' selected candidates as the reward model's training arrays."""
    rows, owner = [], []
    for n, d in enumerate(decisions):
        chosen = [i for i, a in enumerate(d.actions) if a]
        rows.append(d.rows[chosen])
        owner.extend([n] * len(chosen))
    return Logs(
        rows=np.vstack(rows) if rows else np.zeros((0, _WIDTH)),
        owner=np.asarray(owner, dtype=np.int64),
        requests=np.stack([d.request for d in decisions]) if decisions else np.zeros((0, _REQ)),
        rewards=np.asarray([d.reward for d in decisions], dtype=np.float64),
        propensities=np.asarray([d.propensity for d in decisions], dtype=np.float64),
        task_types=[d.task_type for d in decisions],
    )


@dataclass
class Judged:
    """The evaluation's inputs gathered decision by decision."""

    policy: list[offpolicy.Term] = field(default_factory=list)
    baseline: list[offpolicy.Term] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    logged_predictions: list[float] = field(default_factory=list)
    unusable: int = 0
    # Decisions of a learned policy whose logs cannot express the target's (or baseline's)
    # choices: left out, not counted against the support. Which policy decided a recall
    # was drawn independently of the request, so the rest are still a fair sample.
    left_out: int = 0


def _eligible(d: Logged) -> tuple[list[Candidate], np.ndarray, list[str]]:
    suppressed = (d.action or {}).get("suppressed", {})
    keep = [i for i, mid in enumerate(d.ids) if d.actions[i] or suppressed.get(mid) in SOFT_REASONS]
    scope_keys = int(d.request[_SCOPE_KEYS])
    rows = d.rows[keep]
    cands = [
        as_candidate(d.ids[i], values, n_scope_keys=scope_keys)
        for i, values in zip(keep, rows.tolist(), strict=True)
    ]
    return cands, rows, [d.ids[i] for i in keep]


def _gains(
    model: RewardModel | None, rows: np.ndarray, d: Logged, ids: list[str]
) -> dict[str, float] | None:
    if model is None:
        return None
    values = model.gains(rows, np.repeat(d.request[None, :], len(rows), axis=0), d.task_type)
    return dict(zip(ids, values.tolist(), strict=True))


def _judged(
    decisions: Sequence[Logged],
    *,
    model: RewardModel,
    logging_models: Mapping[str, RewardModel],
    epsilon: float,
    found: Judged,
) -> None:
    """Each decision's terms for `model`'s policy and baseline_v0, added to `found`. A
    decision counts when its logging policy can be rebuilt: baseline_v0 of this version,
    or a learned policy of `logging_models`."""
    for d in decisions:
        logged_eps = (d.action or {}).get("epsilon")
        if d.policy_id == POLICY_ID:
            logging_model = None
            known = d.policy_version == POLICY_VERSION
        else:
            logging_model = logging_models.get(d.policy_id)
            known = logging_model is not None
        if not known or logged_eps is None:
            found.unusable += 1
            continue
        cands, rows, ids = _eligible(d)
        budget, k = int(d.request[_BUDGET]), int(d.request[_K])
        target_gains = _gains(model, rows, d, ids) or {}

        rebuilt = partial(plan, cands, token_budget=budget, k=k, max_sensitivity="restricted")
        baseline = rebuilt(epsilon=epsilon)
        reach = baseline.reach() if epsilon > 0 else rebuilt(epsilon=1.0).reach()
        if logging_model is None and float(logged_eps) == epsilon:
            logging = baseline
        else:
            logged_gains = _gains(logging_model, rows, d, ids)
            logging = rebuilt(
                epsilon=float(logged_eps),
                gains=logged_gains,
                reach=reach,
                floor=logging_model.margin if logging_model is not None else 0.0,
            )
        target = rebuilt(epsilon=epsilon, gains=target_gains, reach=reach, floor=model.margin)
        selected = frozenset(mid for mid, a in zip(d.ids, d.actions, strict=False) if a)
        out = offpolicy.terms(
            logging,
            [target, baseline],
            selected=selected,
            inclusion=dict(zip(d.ids, d.inclusion, strict=False)),
            gains=target_gains,
            intercept=model.intercept,
        )
        if out is None:
            found.unusable += 1
            continue
        (p, b), predicted = out
        if logging_model is not None and not (p.supported and b.supported):
            found.left_out += 1
            continue
        found.policy.append(p)
        found.baseline.append(b)
        found.rewards.append(d.reward)
        found.logged_predictions.append(predicted)


def judge(
    folds: Sequence[tuple[Sequence[Logged], RewardModel]],
    *,
    logging_models: Mapping[str, RewardModel],
    epsilon: float,
    bounds: tuple[float, float],
    seed: int = 0,
) -> dict[str, Any]:
    """Off-policy evaluation of a learned policy against baseline_v0 on logged decisions,
    given as (decisions, the model that judges them): cross-fitted, each fold's decisions
    by the model fitted without their rewards; one summary over them all."""
    found = Judged()
    for decisions, model in folds:
        _judged(decisions, model=model, logging_models=logging_models, epsilon=epsilon, found=found)
    summary = offpolicy.summarise(
        found.policy,
        found.baseline,
        rewards=found.rewards,
        logged_predictions=found.logged_predictions,
        unusable=found.unusable,
        bounds=bounds,
        seed=seed,
    )
    summary["epsilon"] = epsilon
    summary["n_left_out"] = found.left_out
    every = [d for decisions, _ in folds for d in decisions]
    if every:
        summary["since"] = min(d.created_at for d in every).isoformat()
        summary["until"] = max(d.created_at for d in every).isoformat()
    return summary
