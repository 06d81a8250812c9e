"""GET /metrics: the Prometheus text format, for an operator key or the metrics token."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.deps import AppState, read_session, require_operator
from app.core.metrics import Metrics
from app.services.operations.jobs import JobService
from app.worker.handlers import REGISTRY

log = logging.getLogger("engram.metrics")
router = APIRouter()
JOB_STATUSES = ("queued", "running", "failed", "dead")


def app_metrics(request: Request) -> Metrics | None:
    metrics: Metrics | None = getattr(request.app.state, "metrics", None)
    return metrics


def count_store_error(request: Request, store: str) -> None:
    metrics = app_metrics(request)
    if metrics is not None:
        metrics.store_error(store)


class JobDepth:
    """The job gauge, refreshed from SQL at most once per `ttl_s` however often scraped."""

    def __init__(self, metrics: Metrics, *, ttl_s: float) -> None:
        self.metrics = metrics
        self.ttl_s = ttl_s
        self._at: float | None = None
        self._lock = asyncio.Lock()

    async def refresh(self, state: AppState) -> None:
        async with self._lock:
            now = time.monotonic()
            if self._at is not None and now - self._at < self.ttl_s:
                return
            try:
                async with read_session(state) as session:
                    counts = await JobService(session).depth()
            except Exception as exc:
                # The scrape still answers (with the last counts): an outage is when it matters.
                log.warning("job depth query failed", extra={"exc_type": type(exc).__name__})
                self.metrics.store_error("sql")
                return
            self._at = now
            gauge = self.metrics.jobs
            gauge.clear()
            # Every known pair is present (zero when empty): alerts need no absent() checks.
            for status in JOB_STATUSES:
                for kind in REGISTRY:
                    gauge.labels(status, kind).set(0)
            for status, kind, count in counts:
                gauge.labels(status, kind).set(count)


async def _authorize(request: Request, state: AppState) -> None:
    """The metrics token when it is set and given; otherwise an operator key (or open mode)."""
    token = state.settings.metrics_token
    if token is not None:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        expected = token.get_secret_value().encode()
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected):
            return
    # The whole service's figures: a namespace's own admin does not see other tenants'.
    # Denials are audited like every other.
    await require_operator(request)


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Prometheus metrics of this process (request rates and latency, queues, jobs, stores)."""
    state: AppState = request.app.state.engram
    await _authorize(request, state)
    depth: JobDepth = request.app.state.job_depth
    await depth.refresh(state)
    # Formatting takes time in proportion to the series (long for a busy service): off the loop.
    body = await asyncio.to_thread(generate_latest, depth.metrics.registry)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
