"""Several `engram worker` processes on one database: one killed with SIGKILL in the middle
of a batch, another takes its jobs (on PostgreSQL once their lease passes; on a SQLite
file, a worker started after the kill at once, the killed process being gone), and every
episode is learned once: the same records, pattern counts and skills as one worker
learning the same episodes alone. 120 episodes by default, 1,500 under the `slow` marker."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.config import Settings
from app.db.backends import create_engine
from tests.conftest import DB_URL, ON_POSTGRES
from tests.server import EngramWorker, reset_database
from tests.system.shared_db import (
    WORKER_ENV,
    episodes,
    learned_alone,
    learning_state,
    logs,
    patterns_held,
    post_all,
    running_of,
    wait_claimed,
    wait_drained,
    wait_held,
)


@pytest.mark.skipif(not ON_POSTGRES, reason="the test holds a batch with a PostgreSQL lock")
@pytest.mark.parametrize("n", [120, pytest.param(1500, marks=pytest.mark.slow)])
async def test_a_worker_killed_mid_batch_loses_its_jobs_to_another_and_each_episode_is_learned_once(
    settings: Settings, tmp_path: Path, n: int
) -> None:
    bodies = episodes(n)
    alone = await learned_alone(settings, bodies)
    assert len(alone["records"]) == n
    assert alone["skills"], "the episodes make skills, so the comparison covers them"

    await reset_database(settings.database_url)
    await post_all(settings, bodies)
    url = settings.database_url
    env = {**WORKER_ENV, "ENGRAM_LEARNING__BATCH_SIZE": str(n * 2 // 3)}
    first = EngramWorker(tmp_path / "first.log", database_url=url, **env)
    second = EngramWorker(tmp_path / "second.log", database_url=url, **env)
    engine = create_engine(settings)
    try:
        async with patterns_held(engine):
            first.start()
            # The first worker claimed two thirds of the episodes and is learning them, in
            # its batch's transaction; the second claims the rest.
            taken_from_first = await wait_held(engine, first.id)
            second.start()
            await wait_held(engine, second.id)
            first.kill()
        found = await wait_drained(engine)
        assert second.stop() == 0, logs(second.log_path)
        state = await learning_state(engine)
    finally:
        first.kill()
        second.kill()
        await engine.dispose()
    context = logs(first.log_path, second.log_path)
    # The first worker's jobs came back when their lease passed, and the second ran them.
    retaken = [j for j in found if j.claimed_by == second.id and j.attempts == 2]
    assert len(retaken) == taken_from_first == n * 2 // 3, context
    assert {j.status for j in found} == {"done"}, context
    assert state == alone, context


@pytest.mark.skipif(DB_URL is not None, reason="a SQLite file")
async def test_a_worker_started_after_one_was_killed_on_a_sqlite_file_takes_its_jobs_at_once(
    settings: Settings, tmp_path: Path
) -> None:
    n = 150
    bodies = episodes(n)
    alone = await learned_alone(settings, bodies)
    await reset_database(settings.database_url)
    await post_all(settings, bodies)
    url = settings.database_url
    # A lease longer than the test: only knowing the first worker gone returns its jobs.
    env = {**WORKER_ENV, "ENGRAM_LEARNING__LEASE_S": "600", "ENGRAM_LEARNING__BATCH_SIZE": "100"}
    first = EngramWorker(tmp_path / "first.log", database_url=url, **env)
    second = EngramWorker(tmp_path / "second.log", database_url=url, **env)
    engine = create_engine(settings)
    try:
        first.start()
        await wait_claimed(engine, first.id)
        first.kill()
        left = await running_of(engine, first.id)  # what it had not finished
        second.start()
        found = await wait_drained(engine, timeout=60)
        assert second.stop() == 0, logs(second.log_path)
        state = await learning_state(engine)
    finally:
        first.kill()
        second.kill()
        await engine.dispose()
    context = logs(first.log_path, second.log_path)
    assert left, "killed before it finished a batch"
    by_id = {j.id: j for j in found}
    assert {(by_id[i].status, by_id[i].claimed_by, by_id[i].attempts) for i in left} == {
        ("done", second.id, 2)
    }, context
    assert state == alone, context
