"""`engram backup` over real HTTP while clients keep writing and deleting, then
`engram restore` into fresh stores and a restored server that serves every episode."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import httpx
import orjson
from sqlalchemy import select

from app.core.config import Settings
from app.db.backends import create_engine
from app.models import Episode
from app.services.operations.restore import verify
from app.storage.blobs import episode_doc_key, episode_prefix, parse_episode_key
from app.storage.snapshot import open_exclusive
from tests.cli.test_commands import engram
from tests.conftest import DB_URL, auth, reset_database
from tests.server import EngramServer
from tests.services.operations.test_backup import _payloads, _rows

OPERATOR = "egk_backup-test-operator-key-0123456789abcdef"


class Traffic:
    """Threads that create episodes (with steps appended later) and delete some."""

    def __init__(self, url: str, key: str) -> None:
        self.url, self.headers = url, auth(key)
        self.acked: list[str] = []
        self.deleted: set[str] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._write, args=(i,)) for i in range(3)]
        self._threads.append(threading.Thread(target=self._delete))

    def __enter__(self) -> Traffic:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _write(self, worker: int) -> None:
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=30) as client:
            i = 0
            while not self._stop.is_set():
                i += 1
                steps = [
                    {"action": f"step.{s}", "input": {"w": worker, "i": i}, "output": "x" * 200}
                    for s in range(3)
                ]
                r = client.post("/v1/episodes", json={"task_id": f"w{worker}-{i}", "steps": steps})
                if r.status_code != 201:
                    self.errors.append(r.text)
                    continue
                eid = r.json()["id"]
                more = client.post(f"/v1/episodes/{eid}/steps", json={"steps": steps[:1]})
                if more.status_code not in (200, 201):
                    self.errors.append(more.text)
                self.acked.append(eid)

    def _delete(self) -> None:
        rng = random.Random(7)
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=30) as client:
            while not self._stop.wait(0.01):
                if len(self.acked) > 10:
                    eid = rng.choice(self.acked[:-5])
                    if client.delete(f"/v1/episodes/{eid}").status_code == 204:
                        self.deleted.add(eid)


def _stores(root: Path) -> Settings:
    url = DB_URL or f"sqlite+aiosqlite:///{root}/engram.db"
    return Settings(database_url=url, blob_dir=root / "blobs")


async def test_backup_while_writing_restores_every_payload(tmp_path: Path) -> None:
    if DB_URL:
        await reset_database(DB_URL)
    source = _stores(tmp_path / "source")
    server = EngramServer(
        tmp_path / "source",
        database_url=source.database_url,
        ENGRAM_BOOTSTRAP_KEY=OPERATOR,
        ENGRAM_LOG_REQUESTS="false",
        # Four clients share one key and write as fast as they can.
        ENGRAM_RATE_LIMIT__PER_SECOND="0",
    ).start()
    archive = tmp_path / "live.tar.gz"
    try:
        with Traffic(server.url, OPERATOR) as traffic:
            while len(traffic.acked) < 60:
                threading.Event().wait(0.05)
            before = set(traffic.acked) - traffic.deleted
            written = len(traffic.acked)
            r = engram(source, "backup", str(archive), "--url", server.url, "--key", OPERATOR)
            assert r.returncode == 0, r.stderr
            assert len(traffic.acked) > written  # clients kept writing while it ran
        assert traffic.errors == []
    finally:
        server.stop()
    assert "backed up" in r.stderr

    # With no server running, the command reads the stores itself.
    local = tmp_path / "local.tar.gz"
    offline = engram(source, "backup", str(local))
    assert offline.returncode == 0, offline.stderr
    assert "directly" in offline.stderr
    source_rows = await _rows(source)
    assert verify(local).rows == {name: len(r) for name, r in source_rows.items()}
    assert verify(local).payloads == len(_payloads(source.blob_dir))

    if DB_URL:
        await reset_database(DB_URL)
    target = _stores(tmp_path / "target")
    restored = engram(target, "restore", str(archive))
    assert restored.returncode == 0, restored.stderr
    assert "restored" in restored.stderr
    contents = verify(archive)

    rows = await _payload_coverage(target)
    assert len(rows) == contents.rows["episodes"]
    # Everything acknowledged before the backup began is in it, unless deleted since.
    assert before - traffic.deleted <= {eid for _, eid in rows}

    server = EngramServer(tmp_path / "target", database_url=target.database_url).start()
    try:
        with httpx.Client(base_url=server.url, headers=auth(OPERATOR), timeout=30) as client:
            for _, eid in random.Random(1).sample(sorted(rows), 30):
                episode = client.get(f"/v1/episodes/{eid}")
                assert episode.status_code == 200, episode.text
                body = episode.json()
                assert len(body["steps"]) == body["step_count"] == rows[("default", eid)]
                assert body["steps"][0]["output"] == "x" * 200
    finally:
        server.stop()


async def _payload_coverage(settings: Settings) -> dict[tuple[str, str], int]:
    """Each episode row's step count, after checking its payload holds all of them."""
    engine = create_engine(settings)
    try:
        async with engine.connect() as conn:
            result = await conn.execute(select(Episode.namespace, Episode.id, Episode.step_count))
            counts = {(ns, eid): n for ns, eid, n in result}
    finally:
        await engine.dispose()
    db = open_exclusive(settings.blob_dir)
    try:
        for (ns, eid), n in counts.items():
            assert db.get(episode_doc_key(ns, eid)) is not None, eid
            chunks = db.iterator(prefix=episode_prefix(ns, eid) + b"c")
            seqs = [(parse_episode_key(k)[2], len(orjson.loads(v))) for k, v in chunks]
            covered = {first + i for first, size in seqs if first is not None for i in range(size)}
            assert set(range(n)) <= covered, eid
    finally:
        db.close()
    return counts
