"""Crash loop: SIGKILL the real server at random moments under a mix of writes, restart
it, and check after every restart that nothing acknowledged was lost or half-written.

Run by tests/system/test_crash_loop.py (short, and deep under the `slow` marker) and by
`python -m bench.crashloop` (as many kills as asked, with progress lines).
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.server import EngramServer, reset_database
from tests.system.crash_checks import Report, check_down, same_steps
from tests.system.crash_traffic import Client, EpisodeAck, Ledger, Lost

SAMPLE = 10  # older episodes read back over HTTP after each restart, besides the new ones


@dataclass
class Result:
    kills: int = 0
    quiet_kills: int = 0  # kills while no request was in flight (the worker busy)
    orphans_found: int = 0
    mid_job_kills: int = 0  # kills that left jobs running (resumed at the restart)
    orphans_swept: int = 0
    checks: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    seconds: float = 0.0

    def add(self, report: Report) -> None:
        self.checks.update(report.checks)
        self.failures += report.failures

    def lines(self) -> list[str]:
        led = self.ledger
        writes = Counter({k: n for k, n in led.acked.items() if k != "read"})
        return [
            f"kills: {self.kills} ({self.quiet_kills} with the traffic stopped, "
            f"{self.mid_job_kills} with jobs running)",
            f"acknowledged writes: {dict(sorted(writes.items()))}",
            f"reads (episodes read back, lookups): {led.acked['read']}",
            f"in flight when killed (lost, not acknowledged): {dict(sorted(led.lost.items()))}",
            f"refused while down: {sum(led.refused.values())}",
            f"orphan payloads found while down: {self.orphans_found}, "
            f"swept at restart: {self.orphans_swept}",
            f"checks passed: {sum(self.checks.values())} {dict(sorted(self.checks.items()))}",
            f"failures: {len(self.failures)}",
            *[f"  {f}" for f in self.failures[:20]],
            f"wall time: {self.seconds:.1f} s",
        ]


def sweep_removed(server: EngramServer, offset: int, *, timeout: float = 30.0) -> int:
    """The number the start-up sweep logged (it runs once the server is up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with server.log_path.open("rb") as log:
            log.seek(offset)
            for line in log:
                if b"orphan sweep" in line:
                    doc = orjson.loads(line)
                    if doc["msg"] != "orphan sweep finished":
                        raise RuntimeError(f"sweep failed: {doc}")
                    return int(doc["removed"])
        time.sleep(0.05)
    raise RuntimeError(f"no sweep logged: {server.log()}")


class CrashLoop:
    def __init__(
        self, data_dir: Path, *, seed: int, clients: int, database_url: str | None
    ) -> None:
        self.rng = random.Random(seed)
        self.clients = clients
        self.database_url = database_url or f"sqlite+aiosqlite:///{data_dir}/engram.db"
        self.server = EngramServer(
            data_dir, database_url=self.database_url, ENGRAM_LOG_REQUESTS="false"
        )
        self.result = Result()
        self.agents: list[Client] = []
        self.progress: Callable[[Result], None] | None = None
        self.ledger = self.result.ledger

    async def start(self) -> None:
        offset = self.server.log_path.stat().st_size if self.server.log_path.exists() else 0
        # Generous: on a loaded machine the interpreter alone can take half a minute to start.
        await asyncio.to_thread(self.server.start, timeout=180)
        self.result.orphans_swept += await asyncio.to_thread(sweep_removed, self.server, offset)

    async def round(self, http: httpx.AsyncClient) -> None:
        """Traffic, a kill at a random moment, the checks while down, restart, read-back."""
        if not self.agents:
            # The same clients every round: what they created before a kill, they change after.
            seeds = [self.rng.randrange(2**32) for _ in range(self.clients)]
            self.agents = [
                Client(http, self.ledger, random.Random(seed), f"c{i}")
                for i, seed in enumerate(seeds)
            ]
        tasks = [asyncio.create_task(c.run()) for c in self.agents]
        # Kill after a random number of acknowledged writes (so every round makes progress,
        # however loaded the machine), then a random delay: requests are in flight.
        target = sum(self.ledger.acked.values()) + self.rng.randint(1, 30)
        deadline = time.monotonic() + 120
        while sum(self.ledger.acked.values()) < target and time.monotonic() < deadline:
            if all(t.done() for t in tasks):
                break
            await asyncio.sleep(0.005)
        await asyncio.sleep(self.rng.uniform(0.0, 0.3))
        quiet = self.rng.random() < 0.2
        if quiet:
            # Stop the traffic and let the worker run the jobs it queued; kill mid-job.
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(self.rng.uniform(0.0, 2.0))
            self.result.quiet_kills += 1
        self.server.kill()
        self.result.kills += 1
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if not isinstance(outcome, (Lost, asyncio.CancelledError)):
                self.result.failures.append(f"client stopped by {outcome!r}")
        blob_dir = self.server.data_dir / "blobs"
        report = await check_down(self.database_url, blob_dir, self.ledger)
        self.result.add(report)
        self.result.orphans_found += report.orphans
        self.result.mid_job_kills += report.running_jobs > 0
        swept_before = self.result.orphans_swept
        await self.start()
        swept = self.result.orphans_swept - swept_before
        if swept != report.orphans:
            self.result.failures.append(f"{report.orphans} orphans found, {swept} swept")
        else:
            self.result.checks["orphans_swept"] += 1
        await self.read_back(http)

    async def read_back(self, http: httpx.AsyncClient) -> None:
        """Retry the keyed creates and rewards whose answer was lost; read episodes back."""
        client = Client(http, self.ledger, self.rng, f"retry{self.result.kills}")
        for key, body in list(self.ledger.keyed.items()):
            r = await client.call(
                "retry_keyed", "POST", "/v1/episodes", json=body, headers={"Idempotency-Key": key}
            )
            del self.ledger.keyed[key]
            self.ledger.episodes[r.json()["id"]] = EpisodeAck(
                body["steps"], outcome=body["outcome"], task_id=key
            )
            self.ledger.fresh.add(r.json()["id"])
            page = await client.call("read", "GET", "/v1/episodes", params={"task_id": key})
            count = len(page.json()["items"])
            self.expect("keyed_once", count == 1, f"{count} episodes for key {key}")
        for reward in self.ledger.rewards:
            if reward.id is None:
                r = await client.call("retry_reward", "POST", "/v1/rewards", json=reward.body)
                reward.id, reward.completed = r.json()["id"], r.json()["completed_recalls"]
        known = [e for e, a in self.ledger.episodes.items() if a.exists and not a.deleted]
        older = self.rng.sample(known, min(SAMPLE, len(known)))
        for eid in sorted(self.ledger.fresh | set(older)):
            ack = self.ledger.episodes.get(eid)
            if ack is None or not ack.exists or ack.deleted is not False:
                continue
            r = await client.call("read", "GET", f"/v1/episodes/{eid}")
            body = r.json()
            ok = same_steps(body["steps"], ack.steps) and body["outcome"] == ack.outcome
            self.expect("read_back", ok, f"episode {eid} read back differs")
        self.ledger.fresh.clear()

    def expect(self, name: str, ok: bool, detail: str) -> None:
        if ok:
            self.result.checks[name] += 1
        else:
            self.result.failures.append(f"{name}: {detail}")

    async def drain(self, http: httpx.AsyncClient, *, timeout: float = 600.0) -> None:
        """Wait until the job queue holds nothing queued, running or waiting to retry."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            counts: dict[str, Any] = (await http.get("/v1/jobs?limit=1")).json()["counts"]
            if not any(counts.get(s) for s in ("queued", "running", "failed")):
                return
            await asyncio.sleep(0.5)
        self.result.failures.append(f"job queue did not drain: {counts}")

    async def run(self, kills: int) -> Result:
        started = time.monotonic()
        if not self.database_url.startswith("sqlite"):
            await reset_database(self.database_url)
        await self.start()
        try:
            async with httpx.AsyncClient(base_url=self.server.url, timeout=60) as http:
                try:
                    while self.result.kills < kills:
                        await self.round(http)
                        if self.progress and self.result.kills % 10 == 0:
                            self.progress(self.result)
                    await self.drain(http)
                except Lost as exc:
                    self.result.failures.append(f"the server stopped answering ({exc})")
        finally:
            code = self.server.stop()
        # uvicorn shuts down, then re-raises the SIGTERM it caught.
        if code not in (0, -signal.SIGTERM) or "shutdown complete" not in self.server.log():
            self.result.failures.append(f"server exited with {code} on SIGTERM")
        blob_dir = self.server.data_dir / "blobs"
        self.result.add(await check_down(self.database_url, blob_dir, self.ledger, final=True))
        self.result.failures += self.ledger.failures
        self.result.seconds = time.monotonic() - started
        return self.result
