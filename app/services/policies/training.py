"""Training and judging a learned recall policy on a namespace's logged decisions.

Reads the window's completed transitions page by page, each page in a read transaction
of its own, and computes in a thread: a worker job calls this before its own (write)
transaction, which only stores the result (app/worker/handlers.py)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from app.db.engine import Transactions
from app.learning.bandit import RewardModel, fit
from app.learning.features import SCHEMA_VERSION
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


async def train(
    transactions: Transactions,
    namespace: str,
    *,
    since: datetime | None,
    until: datetime | None,
    holdout: float,
    l2: float,
    clip: float,
    epsilon: float,
    logging_models: Mapping[str, RewardModel],
) -> dict[str, Any]:
    """Fit on the window's older decisions and judge on its latest `holdout` share:
    {"model", "training", "evaluation"}; NotEnoughData when there is too little."""
    started = time.perf_counter()
    everything = await read(transactions, namespace, since=since, until=until, with_action=False)
    cut = len(everything) - math.ceil(len(everything) * holdout)
    if cut < MIN_DECISIONS or len(everything) - cut < MIN_DECISIONS:
        raise NotEnoughData(
            f"the window holds {len(everything)} rewarded recalls: at least "
            f"{MIN_DECISIONS} are needed to train on and {MIN_DECISIONS} held out"
        )
    training = everything[:cut]
    # The evaluator also needs each decision's action (why each candidate was left out),
    # the largest column: read for the latest held-out decisions only.
    first = max(cut, len(everything) - MAX_EVALUATED)
    del everything[first:]
    evaluation = await read(
        transactions, namespace, since=since, until=until, with_action=True, after=everything[-1]
    )
    model, metrics = await asyncio.to_thread(fit, logs_of(training), l2=l2, clip=clip)
    fitted = time.perf_counter()
    judged = await asyncio.to_thread(
        judge, evaluation, model=model, logging_models=logging_models, epsilon=epsilon
    )
    return {
        "model": model.to_json(),
        "training": {
            "since": training[0].created_at.isoformat() if training else None,
            "until": training[-1].created_at.isoformat() if training else None,
            "n_train": len(training),
            "n_holdout": len(evaluation),
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
    return await asyncio.to_thread(
        judge,
        decisions,
        model=model,
        logging_models=logging_models,
        epsilon=epsilon,
    )
