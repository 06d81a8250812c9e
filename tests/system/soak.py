"""Soak: the real server under a mixed agent workload for a set time, on loopback.

Many keep-alive clients (in one or more processes, tests/system/soak_load.py) record
episodes, write and search memories, recall for tasks and reward those recalls or tasks,
read and list episodes, and one downloads the RL dataset every few seconds, while the
learning worker runs in the server. The report holds per operation the count, latencies,
statuses and transport errors, the server's RSS over time, and what the read-back of
every acknowledged episode and memory found. Run by tests/system/test_soak.py (short, and
longer under the `slow` marker) and by `python -m bench.soak` (minutes, printed).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import orjson

from tests.server import EngramServer
from tests.system.soak_load import Conn, Stats, drive_process

MIB = 2**20
# RSS growth allowed after warm-up. Measured (2-core machine, 32 clients, 300 s): +74 MiB,
# of which +20 MiB in the second half: the allocator's per-thread arenas fill to their
# high-water mark early and then stay there. A leak keeps growing with the requests served,
# so it also shows in the second half, which may grow by at most half the bound.
RSS_BOUND_MIB = 96.0
SERVER_ENV = {
    "ENGRAM_LOG_REQUESTS": "false",
    "ENGRAM_RATE_LIMIT__PER_SECOND": "0",  # one key drives the whole load
    "ENGRAM_LEARNING__PASS_INTERVAL_S": "20",  # mining and skill evolution run during the soak
}


@dataclass
class Report:
    stats: Stats
    seconds: float
    rss: list[tuple[float, int]] = field(default_factory=list)  # (wall clock s, bytes)
    rss_start: int = 0
    rss_mid: int = 0  # halfway through the measured time
    rss_end: int = 0
    unreadable: dict[str, list[str]] = field(default_factory=dict)
    reread: Counter[str] = field(default_factory=Counter)  # second reads' statuses
    readback: Stats = field(default_factory=Stats)  # the read-back's own answers
    jobs: dict[str, int] = field(default_factory=dict)
    drain_s: float | None = None

    @property
    def growth_mib(self) -> float:
        return (self.rss_end - self.rss_start) / MIB

    @property
    def late_growth_mib(self) -> float:
        return (self.rss_end - self.rss_mid) / MIB

    def server_errors(self) -> int:
        return sum(
            n
            for st in (self.stats, self.readback)
            for c in st.statuses.values()
            for s, n in c.items()
            if s >= 500
        )

    def transport_errors(self) -> int:
        return sum(
            n
            for st in (self.stats, self.readback)
            for c in st.transport.values()
            for n in c.values()
        )

    def failures(self, bound_mib: float = RSS_BOUND_MIB) -> list[str]:
        out = []
        if n := self.server_errors():
            out.append(f"{n} responses with a 5xx status")
        if n := self.transport_errors():
            out.append(f"{n} transport errors")
        for what, ids in self.unreadable.items():
            if ids:
                out.append(f"{len(ids)} acknowledged {what} not readable, e.g. {ids[:3]}")
        if self.jobs.get("dead"):
            out.append(f"{self.jobs['dead']} dead-lettered jobs")
        if self.growth_mib > bound_mib:
            out.append(f"RSS grew {self.growth_mib:.1f} MiB after warm-up (bound {bound_mib} MiB)")
        if self.late_growth_mib > bound_mib / 2:
            out.append(
                f"RSS grew {self.late_growth_mib:.1f} MiB in the second half"
                f" (bound {bound_mib / 2} MiB)"
            )
        return out


async def _sample_rss(server: EngramServer, report: Report, done: asyncio.Event) -> None:
    while not done.is_set():
        report.rss.append((time.time(), server.rss_bytes()))
        try:
            await asyncio.wait_for(done.wait(), 1.0)
        except TimeoutError:
            pass


async def _read_back(port: int, stats: Stats, report: Report) -> None:
    """GET every acknowledged episode (with its step count) and memory."""
    check = report.readback
    pending: list[tuple[str, str, int | None]] = [("episodes", e, n) for e, n in stats.episodes]
    pending += [("memories", m, None) for m in stats.memories]
    report.unreadable = {"episodes": [], "memories": []}

    async def reader() -> None:
        conn = Conn(port, check)
        while pending:
            what, ident, steps = pending.pop()
            got = await conn.call(what, "GET", f"/v1/{what}/{ident}", measured=False)
            body = orjson.loads(got[1]) if got and got[0] == 200 else None
            if body is None or (steps is not None and len(body["steps"]) != steps):
                report.unreadable[what].append(ident)
        conn.close()

    await asyncio.gather(*(reader() for _ in range(16)))


async def _read_again(port: int, stats: Stats, report: Report) -> None:
    """Ask for each write not read back again, one at a time: a failed read is not a lost write."""
    conn = Conn(port, Stats())
    for what, ids in report.unreadable.items():
        for ident in list(ids):
            got = await conn.call(what, "GET", f"/v1/{what}/{ident}", measured=False)
            report.reread[f"{what} {got[0] if got else 'no answer'}"] += 1
            if got and got[0] == 200 and (what == "memories" or _steps(got[1], stats, ident)):
                ids.remove(ident)
    conn.close()


def _steps(body: bytes, stats: Stats, ident: str) -> bool:
    return len(orjson.loads(body)["steps"]) == dict(stats.episodes)[ident]


async def _drain(port: int, report: Report, timeout: float) -> None:
    """Wait for the worker to finish the queue; keep the job counts by status."""
    conn = Conn(port, Stats())
    t0 = time.perf_counter()
    while True:
        got = await conn.call("jobs", "GET", "/v1/jobs?limit=1", measured=False)
        if got and got[0] == 200:
            report.jobs = orjson.loads(got[1])["counts"]
            if not any(report.jobs.get(s) for s in ("queued", "running", "failed")):
                report.drain_s = time.perf_counter() - t0
                break
        if time.perf_counter() - t0 > timeout:
            break
        await asyncio.sleep(1.0)
    conn.close()


async def soak(
    server: EngramServer,
    *,
    duration: float,
    warmup: float,
    clients: int,
    procs: int = 1,
    seed: int = 1,
    export_every: float = 5.0,
    drain_timeout: float = 120.0,
) -> Report:
    """Drive the running server; read everything back; return what was measured."""
    shares = [clients // procs + (i < clients % procs) for i in range(procs)]
    start_at = time.time() + 3.0  # client processes start up meanwhile
    jobs = [
        {
            "clients": n,
            "start_at": start_at,
            "seconds": duration,
            "warmup": warmup,
            "seed": seed * 1000 + i,
            "export_every": export_every if i == 0 else 0.0,
        }
        for i, n in enumerate(shares)
    ]
    report = Report(stats=Stats(), seconds=duration)
    done = asyncio.Event()
    sampler = asyncio.create_task(_sample_rss(server, report, done))
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(procs, mp_context=multiprocessing.get_context("spawn")) as pool:
        started = [loop.run_in_executor(pool, drive_process, server.port, j) for j in jobs]
        await asyncio.sleep(start_at + warmup - time.time())
        report.rss_start = server.rss_bytes()
        await asyncio.sleep(start_at + warmup + duration / 2 - time.time())
        report.rss_mid = server.rss_bytes()
        for part in await asyncio.gather(*started):
            report.stats.merge(part)
    report.rss_end = server.rss_bytes()
    done.set()
    await sampler
    await _read_back(server.port, report.stats, report)
    await _drain(server.port, report, drain_timeout)
    await _read_again(server.port, report.stats, report)
    return report


def pct(values: list[float], p: float) -> float:
    data = sorted(values)
    return data[min(len(data) - 1, int(p / 100 * len(data)))] * 1000 if data else float("nan")


def render(report: Report, bound_mib: float = RSS_BOUND_MIB) -> str:
    s = report.stats
    lines = [
        f"{'operation':<13}{'count':>8}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
        f"  2xx/4xx/429/5xx (after warm-up, all phases)   transport errors"
    ]
    for op in sorted(set(s.statuses) | set(s.transport)):
        lat, st = s.latencies.get(op, []), s.statuses.get(op, {})
        by = [sum(n for c, n in st.items() if lo <= c < hi) for lo, hi in
              ((200, 300), (400, 429), (429, 430), (500, 600))]  # fmt: skip
        by[1] += sum(n for c, n in st.items() if 430 <= c < 500)
        lines.append(
            f"{op:<13}{len(lat):>8}{len(lat) / report.seconds:>8.1f}{pct(lat, 50):>9.1f}"
            f"{pct(lat, 95):>9.1f}{pct(lat, 99):>9.1f}  {'/'.join(map(str, by)):<28}"
            f"{dict(sorted(st.items()))}  {s.transport.get(op, {})}"
        )
    total = sum(len(v) for v in s.latencies.values())
    lines.append(
        f"all: {total} requests, {total / report.seconds:.1f} req/s over {report.seconds:.0f} s"
    )
    step = max(1, len(report.rss) // 12)
    t0 = report.rss[0][0]
    samples = ", ".join(f"{t - t0:.0f}s {b / MIB:.1f}" for t, b in report.rss[::step])
    lines += [
        f"server RSS (MiB) over time: {samples}",
        f"server RSS after warm-up {report.rss_start / MIB:.1f} MiB,"
        f" end {report.rss_end / MIB:.1f} MiB,"
        f" peak {max(b for _, b in report.rss) / MIB:.1f} MiB: growth {report.growth_mib:+.1f} MiB"
        f" (bound {bound_mib:.0f} MiB), {report.late_growth_mib:+.1f} MiB in the second half"
        f" (bound {bound_mib / 2:.0f} MiB)",
        f"read back: {len(s.episodes)} acknowledged episodes, {len(report.unreadable['episodes'])}"
        f" unreadable or short; {len(s.memories)} memories,"
        f" {len(report.unreadable['memories'])} unreadable"
        f" (asked again one by one: {dict(report.reread)}); read-back statuses"
        f" {report.readback.statuses}, transport errors {report.readback.transport}",
        f"recalls rewarded: {len(s.recalls)}; dataset downloads: {len(s.exported_rows)},"
        f" rows per download {s.exported_rows[:1]}..{s.exported_rows[-1:]}",
        f"worker: jobs by status {report.jobs}; queue drained "
        + (
            f"{report.drain_s:.0f} s after the load"
            if report.drain_s is not None
            else "NOT in time"
        ),
    ]
    lines += [f"  5xx: {e}" for e in s.server_errors + report.readback.server_errors]
    return "\n".join(lines)
