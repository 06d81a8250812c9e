"""Prometheus metrics of one app, in a registry of its own (apps in one process never clash).

Label values come from small fixed sets only: HTTP methods, route templates, status
codes, job kinds and statuses, store names. Never paths, keys, namespaces or task text.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

# Requests to paths no route matches share one label, so scanners cannot grow the series.
UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
COUNT_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500)


class RequestStats(Collector):
    """HTTP request metrics, kept as plain numbers and turned into metrics when scraped."""

    # Every request updates these, so they skip prometheus_client's per-update lock and
    # label lookup: the event loop is the only writer.
    def __init__(self) -> None:
        self.in_flight = 0
        # (method, route, status) -> [count, sum of seconds, one count per bucket, +Inf]
        self._series: dict[tuple[str, str, int], list[float]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request under its route template."""
        series = self._series.get((method, route, status))
        if series is None:
            key = (method if method in METHODS else "OTHER", route, status)
            series = self._series.setdefault(key, [0, 0.0] + [0] * (len(LATENCY_BUCKETS) + 1))
        series[0] += 1
        series[1] += seconds
        series[2 + bisect_left(LATENCY_BUCKETS, seconds)] += 1

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily]:
        counts = CounterMetricFamily(
            "engram_http_requests",
            "HTTP requests answered, by method, route template and status code",
            labels=["method", "route", "status"],
        )
        by_class: dict[tuple[str, str, str], list[float]] = {}
        # Scrapes format in a thread: take a copy first (copying a dict of tuples and
        # lists happens under the GIL, so requests cannot change it midway).
        snapshot = sorted((key, list(series)) for key, series in list(self._series.items()))
        for (method, route, status), series in snapshot:
            counts.add_metric([method, route, str(status)], series[0])
            merged = by_class.setdefault((method, route, f"{status // 100}xx"), [0.0] * len(series))
            for i, v in enumerate(series):
                merged[i] += v
        latency = HistogramMetricFamily(
            "engram_http_request_duration_seconds",
            "Time to answer an HTTP request, by method, route template and status class",
            labels=["method", "route", "status_class"],
        )
        for labels, series in by_class.items():
            cumulative, buckets = 0.0, []
            for bound, n in zip((*LATENCY_BUCKETS, float("inf")), series[2:], strict=True):
                cumulative += n
                buckets.append(("+Inf" if bound == float("inf") else str(bound), cumulative))
            latency.add_metric(list(labels), buckets, series[1])
        yield counts
        yield latency
        yield GaugeMetricFamily(
            "engram_http_requests_in_flight", "HTTP requests being served", value=self.in_flight
        )


class Metrics:
    def __init__(self) -> None:
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
        self.http = RequestStats()
        registry.register(self.http)
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
            "Store failures (answered with 503, or met counting jobs), by store (sql, leveldb)",
            ["store"],
            registry=registry,
        )
        for store in ("sql", "leveldb"):
            self.store_errors.labels(store)  # present at zero: increase() sees the first one
        self.wal_checkpoint_seconds = Histogram(
            "engram_sqlite_wal_checkpoint_seconds",
            "SQLite WAL checkpoints run by the server's checkpoint thread, by duration",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.wal_pages = Gauge(
            "engram_sqlite_wal_pages",
            "Pages (frames) in SQLite's write-ahead log at the last of those checkpoints",
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
