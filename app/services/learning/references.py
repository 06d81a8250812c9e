"""Each task type's baseline and successful run, as learning compares an episode with them."""

from __future__ import annotations

import time

from app.learning.episode_reward import Baseline

REFERENCE_TTL_S = 10.0
Reference = tuple[Baseline, list[str] | None]


class References:
    """Each task type's baseline and successful run, kept for REFERENCE_TTL_S (both move
    slowly; learning asks on every batch). The worker keeps one for its life."""

    def __init__(self, ttl_s: float = REFERENCE_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._kept: dict[tuple[str, str], tuple[float, Reference]] = {}

    def get(self, namespace: str, task_type: str) -> Reference | None:
        kept = self._kept.get((namespace, task_type))
        if kept is None or time.monotonic() - kept[0] >= self.ttl_s:
            return None
        return kept[1]

    def keep(self, namespace: str, task_type: str, found: Reference) -> None:
        if len(self._kept) > 10_000:
            self._kept.clear()
        self._kept[(namespace, task_type)] = (time.monotonic(), found)
