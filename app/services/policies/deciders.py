"""Which policy decides a recall: the namespace's canary for its share of the recalls, else
its active learned policy, else baseline_v0. Cached per namespace for a second (another
process's activation is seen within that; this process's at once)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.learning.bandit import RewardModel
from app.learning.policy import POLICY_ID, POLICY_VERSION
from app.repositories.policies import PolicyRepository

TTL_S = 1.0


@dataclass(frozen=True)
class Decider:
    id: str
    version: int
    model: RewardModel | None  # None: baseline_v0


BASELINE = Decider(POLICY_ID, POLICY_VERSION, None)


@dataclass(frozen=True)
class Deciding:
    active: Decider
    canary: Decider | None
    share: float

    def draw(self, rng: random.Random) -> Decider:
        """The canary with probability `share` (independent of the request), else the
        active one; no draw without a canary, so a seeded run's exploration is unchanged."""
        if self.canary is not None and rng.random() < self.share:
            return self.canary
        return self.active


class Deciders:
    def __init__(self, *, ttl_s: float = TTL_S) -> None:
        self.ttl_s = ttl_s
        self._cache: dict[str, tuple[float, Deciding]] = {}

    def forget(self, namespace: str) -> None:
        self._cache.pop(namespace, None)

    async def get(self, session: AsyncSession, namespace: str) -> Deciding:
        now = time.monotonic()
        cached = self._cache.get(namespace)
        if cached is not None and now - cached[0] < self.ttl_s:
            return cached[1]
        active, canary, share = BASELINE, None, 0.0
        for row in await PolicyRepository(session).deciding(namespace):
            if row.model is None:
                continue
            decider = Decider(row.id, row.version, RewardModel.from_json(row.model))
            if row.status == "active":
                active = decider
            else:
                canary, share = decider, row.canary_share or 0.0
        found = Deciding(active, canary, share)
        self._cache[namespace] = (now, found)
        return found
