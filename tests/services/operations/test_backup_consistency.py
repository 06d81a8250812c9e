"""The archive is one moment of both stores: writes after the snapshot opens stay out of
it, and deleting an episode then (row, then payload) does not take its payload away.
A damaged archive, or one of another schema, is refused before anything is written."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from alembic.script import ScriptDirectory

from app.db.migrate import alembic_config
from app.main import create_app
from app.services.operations import backup
from app.services.operations.backup_format import (
    HEADER,
    MANIFEST,
    ArchiveError,
    ArchiveWriter,
    members,
)
from app.services.operations.restore import check_compatible, restore, verify
from tests.conftest import DB_URL, auth, episode_body, reset_database, running
from tests.services.operations.test_backup import (
    _fresh,
    _key,
    _payloads,
    _restore,
    _rows,
    _settings,
)


async def test_writes_after_the_snapshot_opens_are_not_in_it(tmp_path: Path) -> None:
    source = await _fresh(tmp_path / "source")
    app = create_app(source)
    archive = tmp_path / "a.tar.gz"
    async with running(app) as client:
        client.headers.update(auth(await _key(app, "default", "operator")))
        ids = []
        for i in range(4):
            body = episode_body(f"t{i}", steps=5)
            if i == 1:  # left open, so that steps can be added
                del body["outcome"], body["verdict"]
            ids.append((await client.post("/v1/episodes", json=body)).json()["id"])
        state = app.state.engram
        snapshot = await backup.open_snapshot(
            state.engine, state.blobs.snapshot, run_paused=state.writer.run_paused
        )
        # After the snapshot: one episode deleted (its payload too), one appended, one new.
        assert (await client.delete(f"/v1/episodes/{ids[0]}")).status_code == 204
        more = {"steps": [{"action": "late", "output": "after"}]}
        assert (await client.post(f"/v1/episodes/{ids[1]}/steps", json=more)).status_code == 200
        assert (await client.post("/v1/episodes", json=episode_body("new"))).status_code == 201
        assert (await client.get(f"/v1/episodes/{ids[0]}")).status_code == 404
        with archive.open("wb") as out:
            async for block in backup.archive(snapshot):
                out.write(block)

    target = await _fresh(tmp_path / "target")
    await restore(archive, verify(archive), target)
    rows = await _rows(target)
    assert sorted(e["id"] for e in rows["episodes"]) == sorted(ids)
    assert {e["id"]: e["step_count"] for e in rows["episodes"]}[ids[1]] == 5
    app = create_app(target)
    async with running(app) as client:
        client.headers.update(auth(await _key(app, "default", "operator")))
        deleted = (await client.get(f"/v1/episodes/{ids[0]}")).json()
        assert [s["action"] for s in deleted["steps"]] == [f"step_{i}" for i in range(5)]
        appended = (await client.get(f"/v1/episodes/{ids[1]}")).json()
        assert len(appended["steps"]) == 5
    assert len(_payloads(target.blob_dir)) == 8  # a document and one chunk per episode


async def test_an_archive_of_another_schema_is_refused(tmp_path: Path) -> None:
    source = await _fresh(tmp_path / "source")
    app = create_app(source)
    async with running(app) as client:
        assert (await client.post("/v1/episodes", json=episode_body())).status_code == 201
        data = (await client.get("/v1/admin/backup")).content
    writer = ArchiveWriter(mtime=0)
    out = b""
    for name, content in members(io.BytesIO(data)):
        if name in (HEADER, MANIFEST):
            doc = orjson.loads(content)
            doc["revision"] = "0123456789ab"
            if name == MANIFEST:
                del doc["tables"]["episodes"]["columns"]["verdict"]
            content = orjson.dumps(doc)
        out += writer.add(name, content)
    archive = tmp_path / "other.tar.gz"
    archive.write_bytes(out + writer.close())
    contents = verify(archive)  # intact: its checksums hold
    with pytest.raises(ArchiveError, match="revision 0123456789ab"):
        check_compatible(contents)
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    contents.revision = str(head)
    with pytest.raises(ArchiveError, match="differ from this schema: episodes"):
        check_compatible(contents)
    target = await _fresh(tmp_path / "target")
    with pytest.raises(ArchiveError):
        await restore(archive, verify(archive), target)
    assert not target.blob_dir.exists()


def _corrupt(data: bytes) -> bytes:
    """The same archive with one byte of one table member changed (recompressed)."""
    from app.services.operations.backup_format import ArchiveWriter

    writer = ArchiveWriter(mtime=0)
    out = b""
    for name, content in members(io.BytesIO(data)):
        if name.startswith("tables/episodes/"):
            changed = content.replace(b"config", b"c0nfig", 1)
            assert changed != content
            content = changed
        out += writer.add(name, content)
    return out + writer.close()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda data: data[: len(data) // 2], "truncated or corrupt"),
        (lambda data: data[:-40], "truncated"),
        (_corrupt, "checksum"),
        (lambda data: b"not an archive", "truncated or corrupt"),
    ],
)
async def test_damaged_archive_is_refused_and_nothing_is_written(
    tmp_path: Path, damage: Callable[[bytes], bytes], message: str
) -> None:
    source = _settings(tmp_path / "source", DB_URL)
    if DB_URL:
        await reset_database(DB_URL)
    app = create_app(source)
    async with running(app) as client:
        for i in range(5):
            assert (
                await client.post("/v1/episodes", json=episode_body(f"t{i}"))
            ).status_code == 201
        data = (await client.get("/v1/admin/backup")).content
    archive = tmp_path / "bad.tar.gz"
    archive.write_bytes(damage(data))
    target = await _fresh(tmp_path / "target")
    with pytest.raises(ArchiveError, match=message):
        await _restore(archive, target)
    assert not target.blob_dir.exists()
    if DB_URL:
        assert not any((await _rows(target)).values())
    else:
        assert not (tmp_path / "target" / "engram.db").exists()
