"""The database goes away under load and comes back: every connection cut at once (a
server restart, a network cut mid-transaction), new ones refused for a while, then let
through again, with episodes written and recalls made all along by a real `engram serve`
(PostgreSQL or a libSQL server, through tests/system/tcp_cut.py).

Meanwhile clients get 503 with Retry-After, never a 500; the service recovers by itself;
every acknowledged episode is there afterwards; the worker resumes and learns each
episode once. The deep version cuts three times under more load."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from app.core.config import Settings
from tests.conftest import DB_KIND, episode_body
from tests.server import EngramServer
from tests.system.tcp_cut import Cuttable

log = logging.getLogger(__name__)


class Load:
    """Writers and recallers going on until stopped, every answer counted."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.acked: list[str] = []
        self.statuses: Counter[int] = Counter()
        self.bad: list[str] = []
        self.last_ok = 0.0
        self.stop = asyncio.Event()

    def _answered(self, r: httpx.Response) -> bool:
        self.statuses[r.status_code] += 1
        if r.status_code in (200, 201):
            self.last_ok = time.monotonic()
            return True
        if r.status_code != 503 or "retry-after" not in r.headers:
            self.bad.append(f"{r.status_code} {r.headers.get('retry-after')} {r.text[:300]}")
        return False

    async def writer(self, n: int) -> None:
        i = 0
        while not self.stop.is_set():
            r = await self.client.post("/v1/episodes", json=episode_body(f"w{n}-{i}"))
            if self._answered(r):
                self.acked.append(r.json()["id"])
            i += 1
            await asyncio.sleep(0.01)

    async def recaller(self) -> None:
        while not self.stop.is_set():
            ask = {"task": "find where the config is loaded", "token_budget": 300}
            self._answered(await self.client.post("/v1/recall", json=ask))
            await asyncio.sleep(0.02)


async def _settled(client: httpx.AsyncClient, timeout: float = 120) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while True:
        counts: dict[str, int] = (await client.get("/v1/jobs", params={"limit": 1})).json()[
            "counts"
        ]
        if not counts.get("queued") and not counts.get("running") and not counts.get("failed"):
            return counts
        assert time.monotonic() < deadline, counts
        await asyncio.sleep(0.2)


async def _stored(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    found, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/episodes", params=params)).json()
        found += page["items"]
        if not (cursor := page.get("next_cursor")):
            return found


@pytest.mark.skipif(DB_KIND == "sqlite", reason="a database server to lose: PostgreSQL, libSQL")
@pytest.mark.parametrize(("writers", "cuts"), [(3, 1), pytest.param(6, 3, marks=pytest.mark.slow)])
async def test_the_database_lost_and_back_under_load(
    settings: Settings, tmp_path: Path, writers: int, cuts: int
) -> None:
    url = make_url(settings.database_url)
    relay = Cuttable((url.host or "127.0.0.1", int(url.port or 5432)))
    through = url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False)
    server = EngramServer(
        tmp_path / "srv",
        database_url=through,
        ENGRAM_LOG_REQUESTS="false",
        ENGRAM_DB_LOCK_TIMEOUT_MS="2000",
    ).start()
    recovered: list[float] = []
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            load = Load(client)
            tasks = [asyncio.create_task(load.writer(n)) for n in range(writers)]
            tasks.append(asyncio.create_task(load.recaller()))
            await asyncio.sleep(1.5)
            for _ in range(cuts):
                before = len(load.acked)
                relay.cut()
                await asyncio.sleep(3)
                refused = load.statuses[503]
                restored = time.monotonic()
                relay.restore()
                while load.last_ok < restored:
                    assert time.monotonic() - restored < 30, "no recovery within 30 s"
                    await asyncio.sleep(0.05)
                recovered.append(load.last_ok - restored)
                await asyncio.sleep(1.5)
                assert len(load.acked) > before, "no write went through after the cut"
                assert refused > 0, "the cut was not felt"
            load.stop.set()
            await asyncio.gather(*tasks)

            assert not load.bad, load.bad[:5]
            # Every acknowledged episode is there, whole.
            for eid in load.acked:
                r = await client.get(f"/v1/episodes/{eid}")
                assert r.status_code == 200, r.text
                assert len(r.json()["steps"]) == 3
            stored = await _stored(client)
            assert set(load.acked) <= {e["id"] for e in stored}
            # The worker went on, and learned each stored episode once (no job ran twice).
            counts = await _settled(client)
            assert not counts.get("dead"), counts
            patterns = (
                await client.get(
                    "/v1/patterns", params={"task_type": "code_search", "sort": "support"}
                )
            ).json()["items"]
            assert patterns
            assert patterns[0]["support"] == len(stored), (patterns[:1], len(stored))
    finally:
        server.stop()
        relay.close()
    log.info(  # the figures (pytest --log-cli-level=INFO)
        "outage: %d writes acknowledged, all found; %d answered 503; recovered in %s",
        len(load.acked),
        load.statuses[503],
        ", ".join(f"{s:.2f} s" for s in recovered),
    )
