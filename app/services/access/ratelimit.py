"""Per-key token buckets: each key may make `per_second` requests on average, `burst` at once."""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass

from app.core.errors import AppError


class RateLimited(AppError):
    status_code = 429

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        seconds = max(1, math.ceil(retry_after_s))
        super().__init__(message, retry_after_s=seconds)
        self.headers = {"Retry-After": str(seconds)}


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    """Token buckets by name (a key id, or a client address for failed authentications).

    At most `max_buckets` are kept; the least recently used go first, which at worst
    hands a forgotten caller a full bucket again.
    """

    def __init__(self, *, per_second: float, burst: int, max_buckets: int = 100_000) -> None:
        self.per_second = per_second
        self.burst = max(1, burst)
        self.max_buckets = max_buckets
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.per_second > 0

    def wait_s(self, name: str, *, now: float | None = None) -> float:
        """Take a token for `name`: 0 if granted, else the seconds until one is free."""
        if not self.enabled:
            return 0.0
        now = time.monotonic() if now is None else now
        bucket = self._buckets.get(name)
        if bucket is None:
            bucket = _Bucket(float(self.burst), now)
            self._buckets[name] = bucket
            if len(self._buckets) > self.max_buckets:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(name)
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.per_second)
            bucket.at = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.per_second

    def check(self, name: str, what: str) -> None:
        """Raise 429 with Retry-After when `name` has no token left."""
        wait = self.wait_s(name)
        if wait > 0:
            raise RateLimited(
                f"rate limit of {what} exceeded ({self.per_second:g} requests/s, "
                f"bursts of {self.burst}); retry after {math.ceil(wait)} s",
                retry_after_s=wait,
            )
