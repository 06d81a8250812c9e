"""Prometheus metrics of one app, in a registry of its own (apps in one process never clash).

Label values come from small fixed sets only: HTTP methods, route templates, status
codes, job kinds and statuses, store names. Never paths, keys, namespaces or task text.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

# Requests to paths no route matches share one label, so scanners cannot grow the series.
UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
COUNT_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500)


class Metrics:
    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        self.requests = Counter(
            "engram_http_requests",
            "HTTP requests answered, by method, route template and status code",
            ["method", "route", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "engram_http_request_duration_seconds",
            "Time to answer an HTTP request, by method, route template and status class",
            ["method", "route", "status_class"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge(
            "engram_http_requests_in_flight", "HTTP requests being served", registry=registry
        )
        self.ingest_batch = Histogram(
            "engram_ingest_batch_size",
            "Commands (episode writes, memories, recall decisions) per group commit",
            buckets=BATCH_BUCKETS,
            registry=registry,
        )
        self.ingest_queue = Gauge(
            "engram_ingest_queue_depth",
            "Commands waiting for the episode writer",
            registry=registry,
        )
        self.jobs = Gauge(
            "engram_jobs",
            "Jobs not done, by status and kind (counted at scrape time, cached)",
            ["status", "kind"],
            registry=registry,
        )
        self.job_failures = Counter(
            "engram_job_failures",
            "Job runs that failed, by kind",
            ["kind"],
            registry=registry,
        )
        self.job_dead_letters = Counter(
            "engram_job_dead_letters",
            "Jobs dead-lettered after their last attempt failed, by kind",
            ["kind"],
            registry=registry,
        )
        self.store_errors = Counter(
            "engram_store_errors",
            "Store failures answered with 503, by store (sql, leveldb)",
            ["store"],
            registry=registry,
        )
        self.recalls = Counter("engram_recalls", "Recall decisions made", registry=registry)
        self.recall_candidates = Histogram(
            "engram_recall_candidates",
            "Memories considered per recall",
            buckets=COUNT_BUCKETS,
            registry=registry,
        )
        self.recall_selected = Histogram(
            "engram_recall_selected",
            "Memories handed out per recall",
            buckets=COUNT_BUCKETS,
            registry=registry,
        )
        # labels() takes a lock and builds a key on every call; the children are cached.
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request under its route template."""
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            label = method if method in METHODS else "OTHER"
            children = (
                self.requests.labels(label, route, str(status)),
                self.latency.labels(label, route, f"{status // 100}xx"),
            )
            if method in METHODS:
                self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def observe_recall(self, *, candidates: int, selected: int) -> None:
        self.recalls.inc()
        self.recall_candidates.observe(candidates)
        self.recall_selected.observe(selected)

    def job_failed(self, kind: str, *, dead: bool) -> None:
        self.job_failures.labels(kind).inc()
        if dead:
            self.job_dead_letters.labels(kind).inc()

    def store_error(self, store: str) -> None:
        self.store_errors.labels(store).inc()
