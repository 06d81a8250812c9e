"""Training and judging a learned recall policy on a namespace's logged decisions.

Reads the window's completed transitions page by page, each page in a read transaction
of its own, and computes in a thread: a worker job calls this before its own (write)
transaction, which only stores the result (app/worker/handlers.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np

from app.db.engine import Transactions
from app.learning.bandit import RewardModel, fit
from app.learning.features import SCHEMA_VERSION
from app.learning.rewards import recall_bounds
from app.repositories.policies import PolicyRepository
from app.services.policies.judge import Logged, judge, logs_of, parse

MIN_DECISIONS = 10
MAX_EVALUATED = 10_000  # the latest held-out decisions an evaluation judges at most


class NotEnoughData(ValueError):
    """The window holds too few rewarded decisions to train or judge on."""


async def read(
    transactions: Transactions,
    namespace: str,
    *,
    since: datetime | None,
    until: datetime | None,
    with_action: bool,
    after: Logged | None = None,
) -> list[Logged]:
    """The window's completed transitions (after `after`), oldest first; without
    `with_action`, only their selected candidates (all that training needs)."""
    found: list[Logged] = []
    key = (after.created_at, after.id) if after is not None else None
    async with transactions.read() as session:
        pages = PolicyRepository(session).logged(
            namespace, since=since, until=until, with_action=with_action, after=key
        )
        async for rows in pages:
            for row in rows:
                if (p := parse(row)) is not None:
                    found.append(p if with_action else p.selected_only())
    return found


async def _bounds(
    transactions: Transactions, namespace: str, *, since: datetime | None, until: datetime | None
) -> tuple[float, float]:
    """The range the window's rewards allow a mean reward in (the reward spec's)."""
    async with transactions.read() as session:
        parts = await PolicyRepository(session).reward_parts(namespace, since=since, until=until)
    return recall_bounds(parts)


def fold_rows(first: int, total: int, folds: int) -> list[np.ndarray]:
    """Decision indices first..total-1 cut into `folds` contiguous blocks, oldest first."""
    return [b.astype(np.int64) for b in np.array_split(np.arange(first, total), folds)]


async def train(
    transactions: Transactions,
    namespace: str,
    *,
    since: datetime | None,
    until: datetime | None,
    folds: int,
    l2: float,
    clip: float,
    epsilon: float,
    logging_models: Mapping[str, RewardModel],
) -> dict[str, Any]:
    """Fit on the window's decisions and judge by cross-fitting: the latest decisions (at
    most MAX_EVALUATED) cut into `folds` blocks, each judged by the model fitted on every
    other decision of the window. {"model", "training", "evaluation"}; NotEnoughData when
    there is too little."""
    started = time.perf_counter()
    everything = await read(transactions, namespace, since=since, until=until, with_action=False)
    if len(everything) < max(2 * MIN_DECISIONS, folds):
        raise NotEnoughData(
            f"the window holds {len(everything)} rewarded recalls: at least "
            f"{max(2 * MIN_DECISIONS, folds)} are needed to train on and judge"
        )
    # The evaluator also needs each decision's action (why each candidate was left out),
    # the largest column: read for the latest decisions only.
    first = max(0, len(everything) - MAX_EVALUATED)
    blocks = fold_rows(first, len(everything), folds)
    after = everything[first - 1] if first > 0 else None
    evaluation = await read(
        transactions, namespace, since=since, until=until, with_action=True, after=after
    )
    # By position in the window (what arrived since the first read is not judged).
    position = {d.id: n for n, d in enumerate(everything)}
    fold_of = {int(n): k for k, block in enumerate(blocks) for n in block}
    by_fold: list[list[Logged]] = [[] for _ in blocks]
    for d in evaluation:
        if (k := fold_of.get(position.get(d.id, -1))) is not None:
            by_fold[k].append(d)
    model, metrics, out_of_fold = await asyncio.to_thread(
        fit, logs_of(everything), l2=l2, clip=clip, folds=blocks
    )
    fitted = time.perf_counter()
    judged = await asyncio.to_thread(
        judge,
        list(zip(by_fold, out_of_fold, strict=True)),
        logging_models=logging_models,
        epsilon=epsilon,
        bounds=await _bounds(transactions, namespace, since=since, until=until),
    )
    return {
        "model": model.to_json(),
        "training": {
            "since": everything[0].created_at.isoformat(),
            "until": everything[-1].created_at.isoformat(),
            "n_train": len(everything),
            "n_holdout": sum(len(f) for f in by_fold),
            "folds": folds,
            "feature_schema_version": SCHEMA_VERSION,
            "metrics": metrics,
            "fit_seconds": round(fitted - started, 3),
            "evaluate_seconds": round(time.perf_counter() - fitted, 3),
        },
        "evaluation": judged,
    }


async def evaluate(
    transactions: Transactions,
    namespace: str,
    *,
    since: datetime | None,
    until: datetime | None,
    model: RewardModel,
    epsilon: float,
    logging_models: Mapping[str, RewardModel],
) -> dict[str, Any]:
    """Judge a trained policy on another window's decisions (the logs of a new workload)."""
    decisions = await read(transactions, namespace, since=since, until=until, with_action=False)
    if len(decisions) < MIN_DECISIONS:
        raise NotEnoughData(
            f"the window holds {len(decisions)} rewarded recalls: at least "
            f"{MIN_DECISIONS} are needed"
        )
    after = decisions[-MAX_EVALUATED - 1] if len(decisions) > MAX_EVALUATED else None
    decisions = await read(
        transactions, namespace, since=since, until=until, with_action=True, after=after
    )
    bounds = await _bounds(transactions, namespace, since=since, until=until)
    return await asyncio.to_thread(
        judge, [(decisions, model)], logging_models=logging_models, epsilon=epsilon, bounds=bounds
    )
