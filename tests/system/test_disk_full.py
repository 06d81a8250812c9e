"""A full disk under the data directory, with writes going on: writes answer 503 with the
reason, reads of what is stored go on, nothing acknowledged is lost, and once room is made
the service takes writes again without a restart. A real filesystem that fills (a small
tmpfs, mounted for the test: it needs root) under a real `engram serve` (SQLite and
LevelDB on it); the deep version fills it with more writers and more rounds."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.api.test_store_failures import small_disk
from tests.server import EngramServer

SIZE_MB = 40
ROOM_MB = 6  # left free at the start of a round: some writes pass, then none


def episode(name: str, size: int) -> dict[str, object]:
    return {
        "task_id": name,
        "steps": [{"action": f"a{j}", "output": "x" * size} for j in range(4)],
        "outcome": "success",
    }


async def fill(client: httpx.AsyncClient, prefix: str, writers: int) -> tuple[list[str], int]:
    """Writers posting episodes until each has been refused three times: the episodes
    acknowledged, and the refusals (each a 503 naming the full disk)."""
    acked: list[str] = []
    refused = 0

    async def writer(n: int) -> None:
        nonlocal refused
        mine = 0
        for i in range(400):
            r = await client.post("/v1/episodes", json=episode(f"{prefix}-w{n}-{i}", 50_000))
            if r.status_code == 201:
                acked.append(r.json()["id"])
                continue
            assert r.status_code == 503, r.text
            assert "left on device" in r.text or "disk is full" in r.text, r.text
            assert r.headers["retry-after"] == "1"
            refused += 1
            mine += 1
            if mine == 3:
                return

    await asyncio.gather(*(writer(n) for n in range(writers)))
    return acked, refused


async def write_again(client: httpx.AsyncClient, name: str) -> str:
    """The first episode written once there is room (the store reopens within a second)."""
    for _ in range(50):
        r = await client.post("/v1/episodes", json=episode(name, 10))
        if r.status_code == 201:
            return str(r.json()["id"])
        await asyncio.sleep(0.1)
    raise AssertionError(f"writes did not resume: {r.status_code} {r.text}")


@pytest.mark.one_database  # the local disk's stores, on a SQLite file
@pytest.mark.parametrize(
    ("writers", "rounds"), [(4, 1), pytest.param(8, 3, marks=pytest.mark.slow)]
)
async def test_a_full_disk_refuses_writes_keeps_reads_and_recovers(
    tmp_path: Path, writers: int, rounds: int
) -> None:
    kept: list[str] = []
    with small_disk(tmp_path / "disk", f"{SIZE_MB}m") as disk:
        server = EngramServer(disk / "data", ENGRAM_LOG_REQUESTS="false").start()
        try:
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
                for round_ in range(rounds):
                    # Room for some writes, then none.
                    filler = disk / "filler"
                    leave = shutil.disk_usage(disk).free // 2**20 - ROOM_MB
                    subprocess.run(
                        ["dd", "if=/dev/zero", f"of={filler}", "bs=1M", f"count={leave}"],
                        capture_output=True,
                        check=False,
                    )
                    acked, refused = await fill(client, f"r{round_}", writers)
                    assert refused == 3 * writers
                    assert acked, "the disk filled before any write"
                    # Full: what was acknowledged reads back whole.
                    for eid in [*kept, *acked]:
                        r = await client.get(f"/v1/episodes/{eid}")
                        assert r.status_code == 200, r.text
                        assert len(r.json()["steps"]) == 4
                    assert (
                        await client.get("/v1/episodes", params={"limit": 1})
                    ).status_code == 200
                    # Room again: writes go through, without a restart.
                    filler.unlink()
                    kept.append(await write_again(client, f"back-{round_}"))
                    # The round's episodes go, so that the next round fills the disk again.
                    for eid in acked:
                        assert (await client.delete(f"/v1/episodes/{eid}")).status_code == 204
        finally:
            server.stop()
        # After a restart, every acknowledged episode kept is there.
        again = EngramServer(disk / "data", ENGRAM_LOG_REQUESTS="false").start()
        try:
            for eid in kept:
                assert httpx.get(f"{again.url}/v1/episodes/{eid}").status_code == 200
        finally:
            again.stop()
