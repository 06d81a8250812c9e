"""Backup and restore: a consistent archive of a running service, restored record by record."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from app.core.config import Learning, Settings
from app.core.ids import uuid7
from app.db.backends import create_engine
from app.main import create_app
from app.models import Skill, SkillEvent
from app.repositories.backup import tables
from app.services.operations import backup
from app.services.operations.restore import Contents, RestoreRefused, restore, verify
from app.storage.snapshot import LevelDBSnapshot, StoreInUse, open_exclusive
from app.worker.runner import Worker
from tests.conftest import DB_URL, auth, episode_body, reset_database, running

ACTIONS = ["git.clone", "pip.install", "pytest.run", "deploy.push"]


def _settings(tmp: Path, url: str | None = None) -> Settings:
    return Settings(
        database_url=url or f"sqlite+aiosqlite:///{tmp / 'engram.db'}",
        blob_dir=tmp / "blobs",
        log_requests=False,
        sweep_interval_s=0,
        auth_cache_ttl_s=0,
        learning=Learning(worker=False, min_support=3, skill_min_support=3),
    )


async def _key(app: Any, namespace: str, role: str) -> str:
    from app.services.access.auth import Role, create_key

    async with app.state.engram.transactions.write() as session:
        _, plaintext = await create_key(session, namespace=namespace, role=Role(role), name=role)
        await session.commit()
    return plaintext


def _steps(actions: list[str]) -> list[dict[str, Any]]:
    return [
        {"tool": a.split(".")[0], "action": a, "input": {"n": i}, "output": "ok " * i}
        for i, a in enumerate(actions)
    ]


async def _populate(app: Any, client: httpx.AsyncClient) -> str:
    """Every kind of record; returns an operator key."""
    operator = await _key(app, "default", "operator")
    client.headers.update(auth(operator))
    other = auth(await _key(app, "team-b", "agent"))
    await _key(app, "default", "reader")
    for i in range(8):
        body = {"task_id": f"deploy-{i}", "task_type": "deploy", "steps": _steps(ACTIONS)}
        r = await client.post("/v1/episodes", json={**body, "outcome": "success"})
        assert r.status_code == 201, r.text
    r = await client.post(
        "/v1/episodes", json=episode_body("other", outcome="failure"), headers=other
    )
    assert r.status_code == 201, r.text
    open_id = (await client.post("/v1/episodes", json={"task_id": "open"})).json()["id"]
    r = await client.post(f"/v1/episodes/{open_id}/steps", json={"steps": _steps(ACTIONS[:2])})
    assert r.status_code in (200, 201), r.text
    gone = (await client.post("/v1/episodes", json=episode_body("gone"))).json()["id"]
    assert (await client.delete(f"/v1/episodes/{gone}")).status_code == 204
    memory = await client.post("/v1/memories", json={"type": "fact", "content": "Port 8080."})
    mid = memory.json()["id"]
    for port in (9090, 9191):
        r = await client.post(f"/v1/memories/{mid}/supersede", json={"content": f"Port {port}."})
        assert r.status_code in (200, 201), r.text
        mid = r.json()["id"]
    recall = await client.post(
        "/v1/recall", json={"task": "which port", "task_id": "deploy-0", "token_budget": 500}
    )
    assert recall.status_code == 200, recall.text
    r = await client.post("/v1/rewards", json={"task_id": "deploy-0", "value": 10})
    assert r.status_code == 201, r.text
    state = app.state.engram
    await Worker(state.transactions, state.settings.learning).drain()
    await _skill(app)
    return operator


async def _skill(app: Any) -> None:
    """A skill with its history (evolving one takes more episodes than this test needs)."""
    now = datetime.now(UTC)
    skill_id = uuid7()
    trigger = {"task_type": "deploy", "context": {}, "keywords": ["ship"]}
    async with app.state.engram.transactions.write() as session:
        session.add(
            Skill(
                namespace="default",
                id=skill_id,
                name="deploy",
                task_type="deploy",
                trigger=trigger,
                steps=[{"action": a, "on_error": None} for a in ACTIONS],
                status="active",
                version=2,
                uses=3,
                successes=2,
                reward_sum=1.5,
                recent=[{"episode_id": "e1", "success": True, "reward": 0.5}],
                support=8,
                success_rate=0.75,
                lcb=0.41,
                evidence=["e1"],
                parent_ids=[],
                memory_id=None,
                created_at=now,
                updated_at=now,
                retired_at=None,
            )
        )
        session.add(
            SkillEvent(
                namespace="default",
                id=uuid7(),
                skill_id=skill_id,
                kind="refined",
                version=2,
                reason="a step was added",
                evidence=["e1"],
                details={"added": "deploy.push"},
                created_at=now,
            )
        )
        await session.commit()


async def _rows(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    engine = create_engine(settings)
    try:
        async with engine.connect() as conn:
            return {
                str(t.name): [
                    dict(r._mapping)
                    for r in await conn.execute(select(t).order_by(*t.primary_key.columns))
                ]
                for t in tables()
            }
    finally:
        await engine.dispose()


def _payloads(blob_dir: Path) -> list[tuple[bytes, bytes]]:
    db = open_exclusive(blob_dir)
    try:
        return list(db.iterator())
    finally:
        db.close()


async def _fresh(tmp: Path) -> Settings:
    """Empty stores on the backend under test (PostgreSQL: the same database, emptied)."""
    if DB_URL:
        await reset_database(DB_URL)
    return _settings(tmp, DB_URL)


async def _local_backup(settings: Settings, archive: Path) -> None:
    engine, db = create_engine(settings), open_exclusive(settings.blob_dir)
    try:
        snapshot = await backup.open_snapshot(engine, lambda conn: LevelDBSnapshot(db))
        with archive.open("wb") as out:
            async for block in backup.archive(snapshot):
                out.write(block)
    finally:
        db.close()
        await engine.dispose()


async def _restore(archive: Path, target: Settings, *, force: bool = False) -> None:
    await restore(archive, verify(archive), target, force=force)


async def test_round_trip_restores_every_record_and_payload(tmp_path: Path) -> None:
    source = _settings(tmp_path / "source", DB_URL)
    if DB_URL:
        await reset_database(DB_URL)
    app = create_app(source)
    async with running(app) as client:
        operator = await _populate(app, client)
        r = await client.get("/v1/admin/backup", headers=auth(operator))
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "application/gzip"
    archive = tmp_path / "engram.tar.gz"
    archive.write_bytes(r.content)
    rows, payloads = await _rows(source), _payloads(source.blob_dir)
    for name in ("api_keys", "episodes", "memories", "rewards", "rl_transitions", "jobs"):
        assert rows[name], name
    for name in ("patterns", "skills", "skill_events", "episode_learning"):
        assert rows[name], name
    assert [m["status"] for m in rows["memories"]].count("superseded") == 2
    assert len(payloads) > 10
    contents = verify(archive)
    assert contents.rows == {name: len(r) for name, r in rows.items()}
    assert contents.payloads == len(payloads)

    if DB_URL:
        # The format is portable: PostgreSQL's archive restores into SQLite, and an archive
        # of that SQLite copy (read directly, no server) restores into PostgreSQL.
        lite = _settings(tmp_path / "sqlite-target")
        await _restore(archive, lite)
        assert await _rows(lite) == rows
        assert _payloads(lite.blob_dir) == payloads
        archive = tmp_path / "from-sqlite.tar.gz"
        await _local_backup(lite, archive)
    target = await _fresh(tmp_path / "target")
    await _restore(archive, target)
    assert await _rows(target) == rows
    assert _payloads(target.blob_dir) == payloads

    # The restored service serves what was backed up, the keys included.
    restored = create_app(target)
    async with running(restored) as client:
        page = (await client.get("/v1/episodes", headers=auth(operator))).json()["items"]
        assert len(page) == len([e for e in rows["episodes"] if e["namespace"] == "default"])
        for item in page:
            episode = await client.get(f"/v1/episodes/{item['id']}", headers=auth(operator))
            assert len(episode.json()["steps"]) == item["step_count"]
        found = await client.post(
            "/v1/memories/search", json={"query": "port"}, headers=auth(operator)
        )
        assert found.status_code == 200, found.text
        assert [h["memory"]["content"] for h in found.json()["hits"]] == ["Port 9191."]


async def test_restore_refuses_stores_in_use_or_not_empty(tmp_path: Path) -> None:
    source = await _fresh(tmp_path / "source")
    app = create_app(source)
    archive = tmp_path / "a.tar.gz"
    async with running(app) as client:
        operator = await _key(app, "default", "operator")
        client.headers.update(auth(operator))
        for i in range(3):
            assert (
                await client.post("/v1/episodes", json=episode_body(f"t{i}"))
            ).status_code == 201
        archive.write_bytes((await client.get("/v1/admin/backup")).content)
        # The running service holds its payload store: restoring into it is refused.
        with pytest.raises(StoreInUse, match="in use"):
            await _restore(archive, source, force=True)
        assert (await client.post("/v1/episodes", json=episode_body("later"))).status_code == 201
    rows, payloads = await _rows(source), _payloads(source.blob_dir)
    with pytest.raises(RestoreRefused, match="not empty"):
        await _restore(archive, source)
    assert await _rows(source) == rows
    assert _payloads(source.blob_dir) == payloads
    # --force replaces the stores' contents with the archive's: "later" is gone.
    await _restore(archive, source, force=True)
    restored = await _rows(source)
    assert len(restored["episodes"]) == len(rows["episodes"]) - 1 == 3
    assert "later" not in {e["task_id"] for e in restored["episodes"]}
    assert len(_payloads(source.blob_dir)) < len(payloads)
    assert not list(tmp_path.glob("source/blobs.*"))


async def test_backup_needs_an_operator_key(tmp_path: Path) -> None:
    app = create_app(await _fresh(tmp_path))
    async with running(app) as client:
        operator = await _key(app, "default", "operator")
        for role in ("reader", "agent", "admin"):
            key = await _key(app, "default", role)
            r = await client.get("/v1/admin/backup", headers=auth(key))
            assert r.status_code == 403, role
            assert r.json()["error"] == "Forbidden"
            assert "operator" in r.json()["detail"]
        assert (await client.get("/v1/admin/backup")).status_code == 401
        r = await client.get("/v1/admin/backup", headers=auth(operator))
        assert r.status_code == 200
        assert verify_bytes(r.content, tmp_path).rows["api_keys"] == 4
        # The denials and the download are in the audit log, the download service-wide.
        events = (await client.get("/v1/audit", headers=auth(operator))).json()["items"]
        actions = [(e["action"], e["namespace"], e["outcome"]) for e in events]
        assert actions[0] == ("backup.download", "*", "ok")
        assert actions.count(("request.denied", "default", "denied")) == 3


def verify_bytes(data: bytes, tmp: Path) -> Contents:
    path = tmp / "check.tar.gz"
    path.write_bytes(data)
    return verify(path)
